package client

import (
	"bytes"
	"encoding/json"
	"io"
	"strings"
	"testing"
)

// Fuzz tests of the decoders of the platform's answers. Their seed corpora
// are in testdata/fuzz/<FuzzName>/ (answers of the simulator for every
// endpoint, session-list shape and fault, and a few hand-written edge
// cases); `go test` runs the seeds, `make fuzz` fuzzes each target briefly.
//
// Beyond "never panics", each target compares the decoder with a plain
// encoding/json reading of the same bytes: what it accepts is well-formed
// JSON and means the same, and what is well-formed and of the documented
// shape is accepted.

// member is one top-level member of a JSON object, in document order.
type member struct {
	key string
	val json.RawMessage
}

// firstValue reads the first JSON value of b with encoding/json.
func firstValue(b []byte) (json.RawMessage, bool) {
	var raw json.RawMessage
	if err := json.NewDecoder(bytes.NewReader(b)).Decode(&raw); err != nil {
		return nil, false
	}
	return raw, true
}

// members lists the members of a JSON object in document order.
func members(obj json.RawMessage) ([]member, bool) {
	dec := json.NewDecoder(bytes.NewReader(obj))
	if tok, err := dec.Token(); err != nil || tok != json.Delim('{') {
		return nil, false
	}
	var out []member
	for dec.More() {
		tok, err := dec.Token()
		if err != nil {
			return nil, false
		}
		var m member
		m.key, _ = tok.(string)
		// Members are matched case-insensitively, as encoding/json
		// matches struct fields.
		m.key = strings.ToLower(m.key)
		if err := dec.Decode(&m.val); err != nil {
			return nil, false
		}
		out = append(out, m)
	}
	return out, true
}

func kind(v json.RawMessage) byte {
	if len(v) == 0 {
		return 0
	}
	switch c := v[0]; c {
	case '{', '[', '"', 't', 'f', 'n':
		return c
	}
	return '0' // a number
}

// wantSessions is the reference reading of a session list: whether it is of
// a shape DecodeSessionList must accept, and then its records in order.
// ok is false for shapes it must refuse; known is false when the reference
// does not decide (an object without any array member is read as an empty
// list, which is not checked here).
func wantSessions(data json.RawMessage) (recs []json.RawMessage, ok, known bool) {
	var arr json.RawMessage
	switch kind(data) {
	case 'n':
		return nil, true, true
	case '[':
		arr = data
	case '{':
		ms, good := members(data)
		if !good {
			return nil, false, false
		}
		for _, m := range ms {
			if kind(m.val) == '[' {
				arr = m.val
				break
			}
		}
		if arr == nil {
			return nil, true, false
		}
	default:
		return nil, false, true
	}
	if err := json.Unmarshal(arr, &recs); err != nil {
		return nil, false, false
	}
	for _, r := range recs {
		if k := kind(r); k != '{' && k != '"' {
			return nil, false, true
		}
	}
	return recs, true, true
}

// checkSessionList decodes data with DecodeSessionList and compares it with
// the reference reading.
func checkSessionList(t *testing.T, data []byte) {
	var got []Session
	err := DecodeSessionList(json.NewDecoder(bytes.NewReader(data)), SessionOptions{KeepRaw: true}, func(s Session) error {
		got = append(got, s)
		return nil
	})
	ref, valid := firstValue(data)
	if err == nil && !valid {
		t.Fatalf("accepted a list that is not well-formed JSON: %q", data)
	}
	if !valid {
		return
	}
	recs, ok, known := wantSessions(ref)
	switch {
	case !known:
		return
	case !ok && err == nil:
		t.Fatalf("accepted a session list of the wrong shape: %q", data)
	case ok && err != nil:
		t.Fatalf("refused a well-formed session list: %v\n%q", err, data)
	case err != nil:
		return
	}
	if len(got) != len(recs) {
		t.Fatalf("decoded %d sessions, the list has %d: %q", len(got), len(recs), data)
	}
	for i, s := range got {
		if !bytes.Equal(s.Raw, recs[i]) {
			t.Fatalf("session %d: Raw %q, the record is %q", i, s.Raw, recs[i])
		}
		if kind(recs[i]) == '"' {
			var id string
			if err := json.Unmarshal(recs[i], &id); err != nil || s.ID != id {
				t.Fatalf("session %d: ID %q, the record is %q", i, s.ID, recs[i])
			}
		}
	}
}

func FuzzDecodeSessionList(f *testing.F) {
	f.Fuzz(func(t *testing.T, data []byte) {
		checkSessionList(t, data)
	})
}

// refEnvelope is what encoding/json reads of a well-formed envelope, or
// ok false when decodeEnvelope must refuse it (not an object, no success
// flag, code or success of the wrong type, data twice, or data not a
// session list unless success is false: a refusal is one whatever its
// data); known is false when the reference does not decide.
func refEnvelope(ms []member) (want envelope, ok, known bool) {
	var hasSuccess, hasData, badData bool
	for _, m := range ms {
		switch m.key {
		case "code":
			switch kind(m.val) {
			case '"':
				_ = json.Unmarshal(m.val, &want.code)
			case '0':
				want.code = string(m.val)
			case '{', '[':
				return want, false, true
			}
		case "success":
			switch kind(m.val) {
			case 't', 'f', 'n':
				want.success, hasSuccess = kind(m.val) == 't', true
			case '{', '[':
				return want, false, true
			}
		case "data":
			if hasData {
				return want, false, true
			}
			hasData = true
			_, good, decided := wantSessions(m.val)
			if !decided {
				return want, false, false
			}
			badData = !good
		}
	}
	return want, hasSuccess && !(badData && want.success), true
}

func FuzzDecodeEnvelope(f *testing.F) {
	f.Fuzz(func(t *testing.T, body []byte) {
		dec := json.NewDecoder(bytes.NewReader(body))
		env, err := decodeEnvelope(dec, func(dec *json.Decoder) error {
			return DecodeSessionList(dec, SessionOptions{}, func(Session) error { return nil })
		})
		if err == nil {
			err = endOf(dec) // as a call does
		}
		if err == io.EOF {
			t.Fatalf("io.EOF escaped: an empty or cut body must be an error of its own: %q", body)
		}
		if err != nil && !isDecodeError(err) {
			t.Fatalf("not classified as a decode error: %v\n%q", err, body)
		}
		ref, valid := json.RawMessage(body), json.Valid(body) // one value, white space around it
		if err == nil && !valid {
			t.Fatalf("accepted a body that is not one well-formed JSON value: %q", body)
		}
		ms, isObject := members(ref)
		if !valid || !isObject {
			if valid && err == nil {
				t.Fatalf("accepted a body that is not an object: %q", body)
			}
			return
		}
		want, ok, known := refEnvelope(ms)
		switch {
		case !known:
		case ok && err != nil:
			t.Fatalf("refused a well-formed envelope: %v\n%q", err, body)
		case !ok && err == nil:
			t.Fatalf("accepted an envelope of the wrong shape: %q", body)
		case ok && (env.code != want.code || env.success != want.success):
			t.Fatalf("envelope %+v, encoding/json reads %+v: %q", env, want, body)
		}
	})
}
