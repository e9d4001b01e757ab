package client

import (
	"bytes"
	"cmp"
	"context"
	"encoding/json"
	"errors"
	"strconv"
	"time"
	"unicode/utf8"
)

// SessionOptions controls how session records are decoded.
type SessionOptions struct {
	KeepRaw bool // keep each record's JSON in Session.Raw
}

// EachSession hands fn the app's sessions (GET /getconcurrentList?appId=) as they are decoded; fn's error is returned as is.
func (c *Client) EachSession(ctx context.Context, opts SessionOptions, fn func(Session) error) error {
	var fnErr error
	_, err := c.call(ctx, EndpointSessions, c.appQuery, func(dec *json.Decoder) error {
		return DecodeSessionList(dec, opts, func(s Session) error { fnErr = fn(s); return fnErr })
	})
	return cmp.Or(fnErr, err)
}

// errShape is the cause of JSON of another shape than documented; errDepth of JSON nested deeper than encoding/json reads.
var errShape, errDepth = errors.New("unexpected shape"), errors.New("nested too deep")

// DecodeSessionList decodes a session list from dec, calling fn for each session as it is decoded: an array, an object
// whose first array member holds it (list, records, rows), or null (docs/platform-api.md#session-list).
func DecodeSessionList(dec *json.Decoder, opts SessionOptions, fn func(Session) error) error {
	tok, err := dec.Token()
	switch {
	case err != nil || tok == nil:
		return err
	case tok == json.Delim('['):
		return decodeSessionArray(dec, opts, fn)
	case tok != json.Delim('{'):
		return errShape
	}
	found := false
	for err == nil && dec.More() {
		if _, err = dec.Token(); err != nil { // the member's name
			break
		}
		switch tok, err = dec.Token(); {
		case err != nil:
		case tok == json.Delim('[') && !found:
			if found, err = true, decodeSessionArray(dec, opts, fn); readPast(err) {
				return cmp.Or(skipRest(dec), err) // the rest of the object too: the envelope is read on
			}
		case tok == json.Delim('[') || tok == json.Delim('{'):
			err = skipRest(dec)
		}
	}
	if err == nil {
		_, err = dec.Token() // '}'
	}
	return err
}

// skipRest consumes the rest of an array or object, at most as deep as encoding/json reads.
func skipRest(dec *json.Decoder) error {
	for depth := 1; depth > 0; {
		switch tok, err := dec.Token(); {
		case err != nil:
			return err
		case tok == json.Delim('{') || tok == json.Delim('['):
			if depth++; depth > 10000 {
				return errDepth
			}
		case tok == json.Delim('}') || tok == json.Delim(']'):
			depth--
		}
	}
	return nil
}

func decodeSessionArray(dec *json.Decoder, opts SessionOptions, fn func(Session) error) error {
	for dec.More() {
		rec := sessionRecord{keepRaw: opts.KeepRaw}
		if err := dec.Decode(&rec); readPast(err) {
			return cmp.Or(skipRest(dec), err) // the rest of the array: the envelope is read on
		} else if err != nil {
			return err
		}
		if err := fn(rec.s); err != nil {
			return err
		}
	}
	_, err := dec.Token() // ']'
	return err
}

// sessionRecord is a session ID, or an object with uuid, sessionId or id (the first set), conversationId and startTime (ms).
type sessionRecord struct {
	keepRaw bool
	s       Session
}

func (r *sessionRecord) UnmarshalJSON(b []byte) error {
	if r.keepRaw {
		r.s.Raw = append(json.RawMessage(nil), b...)
	}
	if b[0] == '"' {
		return json.Unmarshal(b, &r.s.ID)
	}
	var f struct{ UUID, SessionID, ID, ConversationID, StartTime scalar }
	if b[0] != '{' {
		return errShape
	} else if err := json.Unmarshal(b, &f); err != nil {
		return err
	}
	r.s.ID = string(cmp.Or(f.UUID, f.SessionID, f.ID))
	r.s.ConversationID = string(f.ConversationID)
	if ms, err := strconv.ParseInt(string(f.StartTime), 10, 64); err == nil && ms >= 946684800000 { // before 2000: seconds, or no start
		t := time.UnixMilli(ms)
		r.s.Start = &t
	}
	return nil
}

// scalar is a JSON string, or a number as written; anything else is "".
type scalar string

func (s *scalar) UnmarshalJSON(b []byte) error {
	switch {
	case b[0] == '"' && bytes.IndexByte(b, '\\') < 0 && utf8.Valid(b): // as written
		*s = scalar(b[1 : len(b)-1])
	case b[0] == '"':
		return json.Unmarshal(b, (*string)(s))
	case b[0] == '-' || b[0] >= '0' && b[0] <= '9':
		*s = scalar(b)
	default:
		*s = ""
	}
	return nil
}
