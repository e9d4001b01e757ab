package client

import (
	"bytes"
	"encoding/json"
	"io"
	"reflect"
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
		if name := envelopeMember(m.key); name != "" {
			m.key = name
		}
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

func sameEnvelope(a, b envelope) bool {
	return a.Code == b.Code && a.Message == b.Message && a.Msg == b.Msg && a.HasData == b.HasData &&
		(a.Success == nil) == (b.Success == nil) && (a.Success == nil || *a.Success == *b.Success)
}

// envelopeOK tells whether decodeEnvelope must accept an object with these
// members, read whole: code a string, number or null; success a boolean or
// null; data, when decoded as a session list, of an accepted shape (the
// last data member: encoding/json keeps the last).
func envelopeOK(ms []member) (ok, known bool) {
	last := -1
	for i, m := range ms {
		if m.key == "data" {
			last = i
		}
	}
	for i, m := range ms {
		switch m.key {
		case "code":
			switch kind(m.val) {
			case '"', '0', 'n':
			default:
				return false, true
			}
		case "success":
			if k := kind(m.val); k != 't' && k != 'f' && k != 'n' {
				return false, true
			}
		case "data":
			if i != last {
				continue
			}
			_, good, decided := wantSessions(m.val)
			if !decided {
				return false, false
			}
			if !good {
				return false, true
			}
		}
	}
	return true, true
}

// dataNamed counts the top-level members of body named data (in any case),
// read with encoding/json.
func dataNamed(body []byte) int {
	ref, ok := firstValue(body)
	if !ok {
		return 0
	}
	ms, _ := members(ref)
	n := 0
	for _, m := range ms {
		if m.key == "data" {
			n++
		}
	}
	return n
}

// checkOnePass decodes body as EachSession does and as a stream, and
// compares the outcomes.
func checkOnePass(t *testing.T, body []byte) {
	var one, streamed []Session
	d, rest := sessionData(SessionOptions{}, func(s Session) error { one = append(one, s); return nil })
	env, _, err := decodeEnvelope(bytes.NewReader(body), d, nil)
	if err == nil {
		err = rest()
	}
	ref, _, refErr := decodeEnvelope(bytes.NewReader(body), data{stream: func(dec *json.Decoder) error {
		return DecodeSessionList(dec, SessionOptions{}, func(s Session) error { streamed = append(streamed, s); return nil })
	}}, nil)
	env.HasData, ref.HasData = false, false // not known in one pass
	if (err == nil) != (refErr == nil) || (err == nil && !sameEnvelope(env, ref)) {
		t.Fatalf("one pass: %+v, %v; streamed: %+v, %v\n%q", env, err, ref, refErr, body)
	}
	if err == nil && !reflect.DeepEqual(one, streamed) {
		t.Fatalf("one pass: %+v; streamed: %+v\n%q", one, streamed, body)
	}
}

func FuzzDecodeEnvelope(f *testing.F) {
	f.Fuzz(func(t *testing.T, body []byte) {
		n := 0
		env, _, err := decodeEnvelope(bytes.NewReader(body), data{stream: func(dec *json.Decoder) error {
			return DecodeSessionList(dec, SessionOptions{}, func(Session) error { n++; return nil })
		}}, nil)
		if err == io.EOF {
			t.Fatalf("io.EOF escaped: an empty or cut body must be an error of its own: %q", body)
		}
		// The same body with the data skipped: the envelope must read the
		// same whatever the data decoder.
		env2, _, err2 := decodeEnvelope(bytes.NewReader(body), data{}, nil)
		// Bodies over wholeBody stream: both ways read the same.
		env3, err3 := decodeStream(bytes.NewReader(body), func(dec *json.Decoder) error {
			return DecodeSessionList(dec, SessionOptions{}, func(Session) error { return nil })
		})
		// Except when data is named more than once: read whole, the last
		// member is decoded (as encoding/json does); streamed, each in turn.
		if dataNamed(body) <= 1 && ((err == nil) != (err3 == nil) || (err == nil && !sameEnvelope(env, env3))) {
			t.Fatalf("read whole: %+v, %v; streamed: %+v, %v\n%q", env, err, env3, err3, body)
		}
		// As EachSession decodes it (one pass for an array of records):
		// the same outcome and sessions as when streamed.
		checkOnePass(t, body)

		ref, valid := firstValue(body)
		if err == nil && !valid {
			t.Fatalf("accepted a body that is not well-formed JSON: %q", body)
		}
		if err2 == nil && !valid {
			t.Fatalf("accepted (data skipped) a body that is not well-formed JSON: %q", body)
		}
		if !valid {
			return
		}
		ms, isObject := members(ref)
		if !isObject {
			if err == nil || err2 == nil {
				t.Fatalf("accepted a body that is not an object: %q", body)
			}
			return
		}
		ok, known := envelopeOK(ms)
		if known && ok && err != nil {
			t.Fatalf("refused a well-formed envelope: %v\n%q", err, body)
		}
		if known && !ok && err == nil {
			t.Fatalf("accepted an envelope with fields of the wrong type: %q", body)
		}
		if err != nil {
			return
		}
		if err2 != nil {
			t.Fatalf("accepted with the session decoder, refused with data skipped: %v\n%q", err2, body)
		}
		if !sameEnvelope(env, env2) {
			t.Fatalf("envelope differs with data skipped: %+v vs %+v", env, env2)
		}
		// The last occurrence of a member wins, as with encoding/json.
		var want envelope
		for _, m := range ms {
			switch m.key {
			case "code":
				want.Code = ""
				switch kind(m.val) {
				case '"':
					var s string
					_ = json.Unmarshal(m.val, &s)
					want.Code = Code(s)
				case '0':
					want.Code = Code(m.val)
				}
			case "message", "msg":
				s := string(m.val)
				switch kind(m.val) {
				case '"':
					_ = json.Unmarshal(m.val, &s)
				case 'n':
					continue // null keeps what was there
				}
				if m.key == "message" {
					want.Message = s
				} else {
					want.Msg = s
				}
			case "success":
				// null decodes as false: not a success.
				b := kind(m.val) == 't'
				want.Success = &b
			case "data":
				want.HasData = true
			}
		}
		if !sameEnvelope(env, want) {
			t.Fatalf("envelope %+v, encoding/json reads %+v: %q", env, want, body)
		}
	})
}
