package client

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"net/url"
	"strconv"
	"time"
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
func (c *Client) EachSession(ctx context.Context, opts SessionOptions, fn func(Session) error) error {
	_, err := c.do(ctx, EndpointSessions, url.Values{"appId": {c.appID}}, func(dec *json.Decoder) error {
		return DecodeSessionList(dec, opts, fn)
	})
	return err
}

// errStop ends decoding early on a callback's request; kept distinct so a
// callback error is not reported as a decode error.
type callbackError struct{ err error }

func (e *callbackError) Error() string { return e.err.Error() }
func (e *callbackError) Unwrap() error { return e.err }

// DecodeSessionList decodes the data member of a session-list response from
// dec, positioned at its value, calling fn for each session.
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
		// An object wrapping the list: the first member that is an array
		// holds the sessions; other members (total, page, ...) are skipped.
		found := false
		for dec.More() {
			if _, err := dec.Token(); err != nil { // key
				return err
			}
			if found {
				if err := skipValue(dec); err != nil {
					return err
				}
				continue
			}
			vt, err := dec.Token()
			if err != nil {
				return err
			}
			switch vt {
			case json.Delim('['):
				found = true
				if err := decodeSessionArray(dec, opts, fn); err != nil {
					return err
				}
			case json.Delim('{'):
				if err := skipRest(dec); err != nil {
					return err
				}
			}
		}
		_, err := dec.Token() // '}'
		return err
	}
	return fmt.Errorf("session list is %s, not an array or an object", describeToken(tok))
}

// skipRest consumes the remainder of an object or array whose opening
// delimiter has already been read.
func skipRest(dec *json.Decoder) error {
	depth := 1
	for depth > 0 {
		tok, err := dec.Token()
		if err != nil {
			return err
		}
		if d, ok := tok.(json.Delim); ok {
			if d == '{' || d == '[' {
				depth++
			} else {
				depth--
			}
		}
	}
	return nil
}

// sessionRecord holds the fields interpreted in a session record.
type sessionRecord struct {
	UUID           json.RawMessage `json:"uuid"`
	SessionID      json.RawMessage `json:"sessionId"`
	ID             json.RawMessage `json:"id"`
	ConversationID json.RawMessage `json:"conversationId"`
	StartTime      json.RawMessage `json:"startTime"`
}

func decodeSessionArray(dec *json.Decoder, opts SessionOptions, fn func(Session) error) error {
	var raw json.RawMessage
	for dec.More() {
		raw = raw[:0]
		if err := dec.Decode(&raw); err != nil {
			return err
		}
		s, err := parseSession(raw)
		if err != nil {
			return err
		}
		if opts.KeepRaw {
			s.Raw = append(json.RawMessage(nil), raw...)
		}
		if err := fn(s); err != nil {
			return &callbackError{err: err}
		}
	}
	_, err := dec.Token() // ']'
	return err
}

func parseSession(raw json.RawMessage) (Session, error) {
	var s Session
	switch {
	case len(raw) > 0 && raw[0] == '"':
		// A bare session ID.
		err := json.Unmarshal(raw, &s.ID)
		return s, err
	case len(raw) > 0 && raw[0] == '{':
	default:
		return s, fmt.Errorf("session record is not an object: %s", snippet(raw))
	}
	var rec sessionRecord
	if err := json.Unmarshal(raw, &rec); err != nil {
		return s, err
	}
	for _, v := range []json.RawMessage{rec.UUID, rec.SessionID, rec.ID} {
		if id := scalarString(v); id != "" {
			s.ID = id
			break
		}
	}
	s.ConversationID = scalarString(rec.ConversationID)
	if ms, err := strconv.ParseInt(scalarString(rec.StartTime), 10, 64); err == nil && ms > 0 {
		t := time.UnixMilli(ms)
		s.Start = &t
	}
	return s, nil
}

// scalarString renders a JSON string or number as text; anything else is "".
func scalarString(v json.RawMessage) string {
	v = bytes.TrimSpace(v)
	if len(v) == 0 {
		return ""
	}
	if v[0] == '"' {
		var s string
		if json.Unmarshal(v, &s) == nil {
			return s
		}
		return ""
	}
	if (v[0] >= '0' && v[0] <= '9') || v[0] == '-' {
		return string(v)
	}
	return ""
}

// isCallbackError reports whether err came from an EachSession callback.
func isCallbackError(err error) (error, bool) {
	var ce *callbackError
	if errors.As(err, &ce) {
		return ce.err, true
	}
	return nil, false
}
