package client

import (
	"context"
	"encoding/json"
	"errors"
	"strconv"
	"time"
)

// SessionOptions controls how session records are decoded.
type SessionOptions struct {
	// KeepRaw keeps each record's JSON in Session.Raw. Counting does not
	// need it.
	KeepRaw bool
}

// Sessions returns the app's active sessions (GET /getconcurrentList?appId=),
// each with its record in Raw. It holds the whole list: EachSession does not.
func (c *Client) Sessions(ctx context.Context) ([]Session, error) {
	var out []Session
	err := c.EachSession(ctx, SessionOptions{KeepRaw: true}, func(s Session) error {
		out = append(out, s)
		return nil
	})
	return out, err
}

// EachSession hands the app's active sessions to fn one at a time, as they
// are decoded from the answer, which is never held whole. An error of fn
// ends the call and is returned as it is.
func (c *Client) EachSession(ctx context.Context, opts SessionOptions, fn func(Session) error) error {
	var fnErr error
	_, err := c.call(ctx, EndpointSessions, c.appQuery, func(dec *json.Decoder) error {
		return DecodeSessionList(dec, opts, func(s Session) error {
			fnErr = fn(s)
			return fnErr
		})
	})
	if fnErr != nil {
		return fnErr
	}
	return err
}

// errShape is the cause of an answer that is JSON but not of the shape its
// endpoint documents.
var errShape = errors.New("unexpected shape")

// DecodeSessionList decodes the data member of a session list from dec,
// positioned at its value, calling fn for each session as it is decoded: an
// array, an object whose first array member holds the list (list, records,
// rows, ...; its other members are skipped), or null for none
// (docs/platform-api.md#session-list). An element is a session ID or an
// object.
func DecodeSessionList(dec *json.Decoder, opts SessionOptions, fn func(Session) error) error {
	tok, err := dec.Token()
	if err != nil || tok == nil {
		return err
	}
	if tok == json.Delim('[') {
		return decodeSessionArray(dec, opts, fn)
	}
	if tok != json.Delim('{') {
		return errShape
	}
	found := false
	for dec.More() {
		if _, err := dec.Token(); err != nil { // the member's name
			return err
		}
		vt, err := dec.Token()
		switch {
		case err != nil:
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
	_, err = dec.Token() // '}'
	return err
}

// skipRest consumes the rest of an array or object whose opening has been
// read.
func skipRest(dec *json.Decoder) error {
	for depth := 1; depth > 0; {
		tok, err := dec.Token()
		if err != nil {
			return err
		}
		switch tok {
		case json.Delim('{'), json.Delim('['):
			depth++
		case json.Delim('}'), json.Delim(']'):
			depth--
		}
	}
	return nil
}

func decodeSessionArray(dec *json.Decoder, opts SessionOptions, fn func(Session) error) error {
	for dec.More() {
		rec := sessionRecord{keepRaw: opts.KeepRaw}
		if err := dec.Decode(&rec); err != nil {
			return err
		}
		if err := fn(rec.s); err != nil {
			return err
		}
	}
	_, err := dec.Token() // ']'
	return err
}

// sessionRecord is one element of a session list: a bare session ID, or an
// object from which the session ID (uuid, sessionId or id, the first that
// is set), conversationId and startTime (milliseconds) are read; other
// fields are ignored.
type sessionRecord struct {
	keepRaw bool
	s       Session
}

func (r *sessionRecord) UnmarshalJSON(b []byte) error {
	if r.keepRaw {
		r.s.Raw = append(json.RawMessage(nil), b...)
	}
	if len(b) > 0 && b[0] == '"' {
		return json.Unmarshal(b, &r.s.ID)
	}
	var f struct {
		UUID, SessionID, ID, ConversationID, StartTime scalar
	}
	if len(b) == 0 || b[0] != '{' {
		return errShape
	}
	if err := json.Unmarshal(b, &f); err != nil {
		return err
	}
	for _, id := range []scalar{f.UUID, f.SessionID, f.ID} {
		if id != "" {
			r.s.ID = string(id)
			break
		}
	}
	r.s.ConversationID = string(f.ConversationID)
	if ms, err := strconv.ParseInt(string(f.StartTime), 10, 64); err == nil && ms > 0 {
		t := time.UnixMilli(ms)
		r.s.Start = &t
	}
	return nil
}

// scalar is a JSON string, or a number as it is written; any other value
// reads as "".
type scalar string

func (s *scalar) UnmarshalJSON(b []byte) error {
	switch {
	case len(b) > 0 && b[0] == '"':
		return json.Unmarshal(b, (*string)(s))
	case len(b) > 0 && (b[0] == '-' || b[0] >= '0' && b[0] <= '9'):
		*s = scalar(b)
	default:
		*s = ""
	}
	return nil
}
