package client

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"slices"
	"strconv"
	"time"
	"unicode/utf8"
)

// SessionOptions controls how session records are decoded.
type SessionOptions struct {
	// KeepRaw keeps each record's JSON in Session.Raw. Counting does not
	// need it, and leaving it out keeps memory flat for long lists.
	KeepRaw bool
}

// Sessions returns the app's active sessions (GET /getconcurrentList?appId=).
func (c *Client) Sessions(ctx context.Context) ([]Session, error) {
	var out []Session
	err := c.EachSession(ctx, SessionOptions{KeepRaw: true}, func(s Session) error {
		out = append(out, s)
		return nil
	})
	return out, err
}

// EachSession streams the app's active sessions to fn as they are decoded,
// without holding the list in memory. The platform does not document the
// shape of the list: data may be an array, an object wrapping an array
// (list, records, rows, ...) or null (no sessions).
//
// An answer read whole whose data is an array of records (the shape the
// platform documents) is decoded in one pass with the envelope; any other
// shape, and a long answer, is streamed by DecodeSessionList.
func (c *Client) EachSession(ctx context.Context, opts SessionOptions, fn func(Session) error) error {
	d, rest := sessionData(opts, fn)
	if _, err := c.do(ctx, EndpointSessions, c.t.scrapeURL(EndpointSessions, c.appQuery), d); err != nil {
		return err
	}
	return rest()
}

// sessionData is how a session list reaches fn: streamed by
// DecodeSessionList, or, when the answer is read whole and its data is an
// array of records, decoded in one pass with the envelope and handed to fn
// by rest once the answer is decoded (KeepRaw always streams).
func sessionData(opts SessionOptions, fn func(Session) error) (d data, rest func() error) {
	var (
		list     []*sessionFields
		streamed bool
		forms    [][]byte
	)
	d.forms = &forms
	d.stream = func(dec *json.Decoder) error {
		streamed = true
		return DecodeSessionList(dec, opts, func(s Session) error {
			redactDecoded(&s, forms) // a stream is not redacted before it is decoded
			return fn(s)
		})
	}
	if !opts.KeepRaw {
		d.into = &list
		// null is no record: DecodeSessionList refuses it. A second data
		// member would be decoded into the records of the first, leaving
		// what only the first had; streamed, the last one wins whole.
		d.fits = func(body []byte) bool { return !slices.Contains(list, nil) && namesDataOnce(body) }
	}
	return d, func() error {
		if streamed {
			return nil
		}
		for _, f := range list {
			if err := fn(f.session()); err != nil {
				return err
			}
		}
		return nil
	}
}

// namesDataOnce reports whether body, a JSON object, has at most one member
// that encoding/json would take for data: a name equal to "data" in any
// case (no other letters fold to these four), written without \u escapes.
// It may count a string value "data" too, never miss a member.
func namesDataOnce(body []byte) bool {
	if bytes.Contains(body, []byte(`\u`)) {
		return false
	}
	n := 0
	for i := bytes.IndexByte(body, '"'); i >= 0 && i+5 < len(body); {
		if body[i+5] == '"' && bytes.EqualFold(body[i+1:i+5], []byte("data")) {
			n++
		}
		next := bytes.IndexByte(body[i+1:], '"')
		if next < 0 {
			break
		}
		i += 1 + next
	}
	return n <= 1
}

// callbackError carries the error of an EachSession callback, so that it
// is returned as it is instead of as a decode error.
type callbackError struct{ err error }

func (e *callbackError) Error() string { return e.err.Error() }
func (e *callbackError) Unwrap() error { return e.err }

// DecodeSessionList decodes the data member of a session-list response from
// dec, positioned at its value, calling fn for each session as it is
// decoded: an array, an object whose first array member holds the list
// (list, records, rows, ...; other members such as total are skipped), or
// null for none (docs/platform-api.md#session-list).
func DecodeSessionList(dec *json.Decoder, opts SessionOptions, fn func(Session) error) error {
	tok, err := dec.Token()
	if err != nil {
		return err
	}
	switch tok {
	case nil:
		return nil
	case json.Delim('['):
		return decodeSessionArray(dec, opts, fn)
	case json.Delim('{'):
		found := false
		for dec.More() {
			if _, err := dec.Token(); err != nil { // the key
				return err
			}
			vt, err := dec.Token()
			if err != nil {
				return err
			}
			switch {
			case vt == json.Delim('[') && !found:
				found = true
				err = decodeSessionArray(dec, opts, fn)
			case vt == json.Delim('[') || vt == json.Delim('{'):
				err = skipRest(dec)
			}
			if err != nil {
				return err
			}
		}
		_, err := dec.Token() // '}'
		return err
	}
	return fmt.Errorf("session list is %s, not an array or an object", describeToken(tok))
}

func decodeSessionArray(dec *json.Decoder, opts SessionOptions, fn func(Session) error) error {
	for dec.More() {
		// One element at a time: a long list is never held.
		rec := sessionRecord{keepRaw: opts.KeepRaw}
		if err := dec.Decode(&rec); err != nil {
			return err
		}
		if err := fn(rec.s); err != nil {
			return &callbackError{err: err}
		}
	}
	_, err := dec.Token() // ']'
	return err
}

// sessionRecord is one element of a session list: a bare session ID, or an
// object from which the session ID (uuid, sessionId or id, the first that
// is set), conversationId and startTime (milliseconds) are read; names
// match case-insensitively, as encoding/json matches struct fields, and
// other fields are ignored (docs/platform-api.md#session-list).
type sessionRecord struct {
	keepRaw bool
	s       Session
}

// UnmarshalJSON implements json.Unmarshaler.
func (r *sessionRecord) UnmarshalJSON(b []byte) error {
	switch {
	case len(b) > 0 && b[0] == '"':
		if err := unquote(b, &r.s.ID); err != nil {
			return err
		}
	case len(b) > 0 && b[0] == '{':
		var f sessionFields
		if err := json.Unmarshal(b, &f); err != nil {
			return err
		}
		r.s = f.session()
	default:
		return errors.New("session record is neither an object nor a string")
	}
	if r.keepRaw {
		r.s.Raw = append(json.RawMessage(nil), b...)
	}
	return nil
}

// sessionFields are the fields read from a session record that is an
// object.
type sessionFields struct {
	UUID           scalar `json:"uuid"`
	SessionID      scalar `json:"sessionId"`
	ID             scalar `json:"id"`
	ConversationID scalar `json:"conversationId"`
	StartTime      millis `json:"startTime"`
}

// millis is a startTime as it is written. It is read as a time, never
// shown, so redactDecoded leaves it alone (its field is unexported): a
// short credential such as "10" is a piece of many a number.
type millis struct{ v scalar }

// UnmarshalJSON implements json.Unmarshaler.
func (m *millis) UnmarshalJSON(b []byte) error { return m.v.UnmarshalJSON(b) }

// session is the session the fields describe.
func (f *sessionFields) session() Session {
	var s Session
	for _, id := range []scalar{f.UUID, f.SessionID, f.ID} {
		if id != "" {
			s.ID = string(id)
			break
		}
	}
	s.ConversationID = string(f.ConversationID)
	if ms, err := strconv.ParseInt(string(f.StartTime.v), 10, 64); err == nil && ms > 0 {
		t := time.UnixMilli(ms)
		s.Start = &t
	}
	return s
}

// scalar is a JSON string, or a number as it is written; any other value
// reads as "".
type scalar string

// UnmarshalJSON implements json.Unmarshaler.
func (s *scalar) UnmarshalJSON(b []byte) error {
	switch {
	case len(b) > 0 && b[0] == '"':
		return unquote(b, (*string)(s))
	case len(b) > 0 && (b[0] == '-' || (b[0] >= '0' && b[0] <= '9')):
		*s = scalar(b)
	default:
		*s = ""
	}
	return nil
}

// unquote decodes the JSON string literal b, which encoding/json has
// already checked, into s. A literal without escapes and in valid UTF-8 is
// its own content: it is copied without a second parse (a session list
// holds a few of them per record).
func unquote(b []byte, s *string) error {
	if len(b) >= 2 && bytes.IndexByte(b, '\\') < 0 && utf8.Valid(b) {
		*s = string(b[1 : len(b)-1])
		return nil
	}
	return json.Unmarshal(b, s)
}

// isCallbackError reports whether err came from an EachSession callback.
func isCallbackError(err error) (error, bool) {
	var ce *callbackError
	if errors.As(err, &ce) {
		return ce.err, true
	}
	return nil, false
}
