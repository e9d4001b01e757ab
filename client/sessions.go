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
		var id string
		err := json.Unmarshal(raw, &id)
		s.ID = id
		return s, err
	case len(raw) > 0 && raw[0] == '{':
	default:
		return s, errors.New("session record is neither an object nor a string")
	}
	var rec sessionRecord
	if !scanRecord(raw, &rec) {
		var slow sessionRecord
		if err := json.Unmarshal(raw, &slow); err != nil {
			return s, err
		}
		rec = slow
	}
	for _, v := range []json.RawMessage{rec.UUID, rec.SessionID, rec.ID} {
		if id := scalarString(v); id != "" {
			s.ID = id
			break
		}
	}
	s.ConversationID = scalarString(rec.ConversationID)
	if ms, ok := startMillis(rec.StartTime); ok {
		t := time.UnixMilli(ms)
		s.Start = &t
	}
	return s, nil
}

// startMillis reads a start time in milliseconds, a JSON number or string
// of an integer, as strconv.ParseInt(scalarString(v)) would; it reports
// whether it is one and positive.
func startMillis(v json.RawMessage) (int64, bool) {
	v = bytes.TrimSpace(v)
	var text []byte
	switch {
	case len(v) >= 2 && v[0] == '"' && v[len(v)-1] == '"' && plainASCII(v[1:len(v)-1]):
		text = v[1 : len(v)-1]
	case len(v) > 0 && v[0] != '"':
		text = v // scalarString keeps numbers as they are and drops the rest
		if (v[0] < '0' || v[0] > '9') && v[0] != '-' {
			return 0, false
		}
	default:
		ms, err := strconv.ParseInt(scalarString(v), 10, 64)
		return ms, err == nil && ms > 0
	}
	ms, err := strconv.ParseInt(string(text), 10, 64)
	return ms, err == nil && ms > 0
}

// scanRecord fills rec from raw, a JSON object as json.Decoder returns it
// (whole and well-formed), the way json.Unmarshal would but without
// reflection or copies: keys match the field names case-insensitively and
// a later duplicate wins. The fields alias raw. It reports false, leaving
// rec for json.Unmarshal to redo, when raw is not what it expects.
func scanRecord(raw []byte, rec *sessionRecord) bool {
	i := skipSpace(raw, 1)
	if i < len(raw) && raw[i] == '}' {
		return true
	}
	for i < len(raw) && raw[i] == '"' {
		end := endOfString(raw, i)
		if end < 0 {
			return false
		}
		key := raw[i+1 : end-1]
		if bytes.IndexByte(key, '\\') >= 0 {
			var k string
			if json.Unmarshal(raw[i:end], &k) != nil {
				return false
			}
			key = []byte(k)
		}
		i = skipSpace(raw, end)
		if i >= len(raw) || raw[i] != ':' {
			return false
		}
		i = skipSpace(raw, i+1)
		end = endOfValue(raw, i)
		if end < 0 {
			return false
		}
		if f := rec.field(key); f != nil {
			*f = raw[i:end]
		}
		i = skipSpace(raw, end)
		if i >= len(raw) {
			return false
		}
		switch raw[i] {
		case '}':
			return true
		case ',':
			i = skipSpace(raw, i+1)
		default:
			return false
		}
	}
	return false
}

// field returns the field a record key names, or nil.
func (rec *sessionRecord) field(key []byte) *json.RawMessage {
	fields := [...]struct {
		name string
		p    *json.RawMessage
	}{{"uuid", &rec.UUID}, {"sessionId", &rec.SessionID}, {"id", &rec.ID}, {"conversationId", &rec.ConversationID}, {"startTime", &rec.StartTime}}
	ascii := true
	for _, c := range key {
		if c >= utf8.RuneSelf {
			ascii = false
			break
		}
	}
	for _, f := range fields {
		// An ASCII key can only fold onto a name of its length; other
		// letters fold onto ASCII ones too (the Kelvin sign onto k).
		if (!ascii || len(key) == len(f.name)) && bytes.EqualFold(key, []byte(f.name)) {
			return f.p
		}
	}
	return nil
}

func skipSpace(b []byte, i int) int {
	for i < len(b) && (b[i] == ' ' || b[i] == '\t' || b[i] == '\n' || b[i] == '\r') {
		i++
	}
	return i
}

// endOfString returns the index after the string starting at b[i], or -1.
func endOfString(b []byte, i int) int {
	for j := i + 1; j < len(b); j++ {
		switch b[j] {
		case '\\':
			j++
		case '"':
			return j + 1
		}
	}
	return -1
}

// endOfValue returns the index after the value starting at b[i], or -1.
func endOfValue(b []byte, i int) int {
	if i >= len(b) {
		return -1
	}
	switch b[i] {
	case '"':
		return endOfString(b, i)
	case '{', '[':
		depth := 0
		for j := i; j < len(b); j++ {
			switch b[j] {
			case '"':
				end := endOfString(b, j)
				if end < 0 {
					return -1
				}
				j = end - 1
			case '{', '[':
				depth++
			case '}', ']':
				depth--
				if depth == 0 {
					return j + 1
				}
			}
		}
		return -1
	}
	j := i
	for j < len(b) && b[j] != ',' && b[j] != '}' && b[j] != ']' && b[j] != ' ' && b[j] != '\t' && b[j] != '\n' && b[j] != '\r' {
		j++
	}
	if j == i {
		return -1
	}
	return j
}

// scalarString renders a JSON string or number as text; anything else is "".
func scalarString(v json.RawMessage) string {
	v = bytes.TrimSpace(v)
	if len(v) == 0 {
		return ""
	}
	if v[0] == '"' {
		// Plain ASCII without escapes is its own text.
		if len(v) >= 2 && v[len(v)-1] == '"' && plainASCII(v[1:len(v)-1]) {
			return string(v[1 : len(v)-1])
		}
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

func plainASCII(b []byte) bool {
	for _, c := range b {
		if c < 0x20 || c >= utf8.RuneSelf || c == '\\' || c == '"' {
			return false
		}
	}
	return true
}

// isCallbackError reports whether err came from an EachSession callback.
func isCallbackError(err error) (error, bool) {
	var ce *callbackError
	if errors.As(err, &ce) {
		return ce.err, true
	}
	return nil, false
}
