package simulator

import (
	"bytes"
	"context"
	"encoding/json"
	"net"
	"net/http"
	"slices"
	"strconv"
	"time"
)

// FaultKind selects the misbehaviour injected by a Fault.
type FaultKind int

// Fault kinds.
const (
	// FaultNone answers normally. Set explicitly, it overrides a less
	// specific fault.
	FaultNone FaultKind = iota
	// FaultHTTP500 answers HTTP 500 with a short JSON envelope, code "500".
	FaultHTTP500
	// FaultHTML502 answers HTTP 502 with an nginx-style text/html page.
	FaultHTML502
	// FaultRateLimit429 answers HTTP 429 with a Retry-After header (whole
	// seconds, rounded up, at least 1) and an envelope with code "429".
	FaultRateLimit429
	// FaultUnauthorized401 answers as for an invalid or expired token.
	FaultUnauthorized401
	// FaultForbidden403 answers as for a token of another app.
	FaultForbidden403
	// FaultTruncatedJSON answers HTTP 200 with the first half of the
	// normal body.
	FaultTruncatedJSON
	// FaultSuccessFalse answers HTTP 200 with success false, code "500".
	FaultSuccessFalse
	// FaultNullData answers a successful envelope whose data is null.
	FaultNullData
	// FaultCodeAsNumber answers the normal body with code as a JSON number.
	FaultCodeAsNumber
	// FaultWrongTypes answers a successful envelope whose data fields have
	// the wrong JSON types.
	FaultWrongTypes
	// FaultSlowBody sends the headers at once, then the normal body in
	// SlowBodyChunks chunks with Fault.Delay before each.
	FaultSlowBody
	// FaultOversizedBody answers HTTP 200 with a valid JSON envelope of
	// Fault.Bytes bytes (DefaultOversizedBytes when 0), streamed.
	FaultOversizedBody
	// FaultResetConnection sends the headers and half of the normal body,
	// then resets the TCP connection.
	FaultResetConnection
	// FaultEchoRequest answers HTTP Fault.Status (502 when 0) with a
	// text/plain page that echoes the request, as a misconfigured proxy or
	// debugging gateway does: Fault.Bytes bytes of padding, the request
	// line, then every request header as "Name: value" lines, the
	// credential headers (Proxy-Authorization, Authorization, Token) first
	// in that order.
	FaultEchoRequest
	// FaultEchoRequestJSON answers HTTP Fault.Status (200 when 0) with an
	// envelope of success false whose code is the status and whose message
	// is the text of FaultEchoRequest, encoded with every "/" escaped as
	// "\/" (as some JSON encoders do).
	FaultEchoRequestJSON
)

var faultNames = [...]string{
	FaultNone:            "none",
	FaultHTTP500:         "http500",
	FaultHTML502:         "html502",
	FaultRateLimit429:    "ratelimit429",
	FaultUnauthorized401: "unauthorized401",
	FaultForbidden403:    "forbidden403",
	FaultTruncatedJSON:   "truncatedjson",
	FaultSuccessFalse:    "successfalse",
	FaultNullData:        "nulldata",
	FaultCodeAsNumber:    "codeasnumber",
	FaultWrongTypes:      "wrongtypes",
	FaultSlowBody:        "slowbody",
	FaultOversizedBody:   "oversizedbody",
	FaultResetConnection: "resetconnection",
	FaultEchoRequest:     "echorequest",
	FaultEchoRequestJSON: "echorequestjson",
}

// String returns a short name of the fault kind.
func (k FaultKind) String() string {
	if k >= 0 && int(k) < len(faultNames) {
		return faultNames[k]
	}
	return "fault(" + strconv.Itoa(int(k)) + ")"
}

// Defaults used when the corresponding Fault field is zero.
const (
	SlowBodyChunks        = 10 // a slow body is sent in this many chunks (fewer if shorter)
	DefaultSlowBodyDelay  = 100 * time.Millisecond
	DefaultOversizedBytes = 32 << 20 // 32 MiB
	DefaultRetryAfter     = time.Second
)

// Fault describes an injected misbehaviour.
type Fault struct {
	Kind       FaultKind
	RetryAfter time.Duration // FaultRateLimit429: Retry-After value
	Bytes      int64         // FaultOversizedBody: total body size; FaultEchoRequest(JSON): padding before the echo
	Status     int           // FaultEchoRequest(JSON): HTTP status
	Delay      time.Duration // FaultSlowBody: pause before each chunk; total ≈ Delay × chunks
	Times      int           // 0: until cleared; n > 0: only the next n matching requests
}

type ruleKey struct{ app, ep string }

type faultRule struct {
	f         Fault
	remaining int // 0 = unlimited
}

// SetFault injects a fault for an app and an endpoint; appID "" means every
// app and endpoint "" every endpoint. For a request, the most specific
// setting wins, in this order: (app, endpoint), (app, any endpoint),
// (any app, endpoint), (any app, any endpoint). A fault with Times n > 0
// applies to the next n requests it matches, then disappears.
func (s *Simulator) SetFault(appID, endpoint string, f Fault) {
	s.rulesMu.Lock()
	defer s.rulesMu.Unlock()
	s.faults[ruleKey{appID, endpoint}] = &faultRule{f: f, remaining: max(f.Times, 0)}
	s.hasRules.Store(true)
}

// SetLatency delays the answers for an app and an endpoint by d, with the
// same wildcards and precedence as SetFault. The wait stops, and nothing is
// answered, when the request's context ends first.
func (s *Simulator) SetLatency(appID, endpoint string, d time.Duration) {
	s.rulesMu.Lock()
	defer s.rulesMu.Unlock()
	s.latencies[ruleKey{appID, endpoint}] = d
	s.hasRules.Store(true)
}

// ClearFaults removes all faults and latencies.
func (s *Simulator) ClearFaults() {
	s.rulesMu.Lock()
	defer s.rulesMu.Unlock()
	clear(s.faults)
	clear(s.latencies)
	s.hasRules.Store(false)
}

// rules returns the fault and latency applying to one request, consuming
// one use of a counted fault.
func (s *Simulator) rules(appID, ep string) (Fault, time.Duration) {
	if !s.hasRules.Load() {
		return Fault{}, 0
	}
	keys := [4]ruleKey{{appID, ep}, {appID, ""}, {"", ep}, {"", ""}}
	s.rulesMu.Lock()
	defer s.rulesMu.Unlock()
	var f Fault
	for _, k := range keys {
		if r, ok := s.faults[k]; ok {
			f = r.f
			if r.remaining > 0 {
				r.remaining--
				if r.remaining == 0 {
					delete(s.faults, k)
				}
			}
			break
		}
	}
	var d time.Duration
	for _, k := range keys {
		if v, ok := s.latencies[k]; ok {
			d = v
			break
		}
	}
	s.hasRules.Store(len(s.faults)+len(s.latencies) > 0)
	return f, d
}

// wait sleeps for d unless ctx ends first; it reports whether the full
// delay elapsed.
func wait(ctx context.Context, d time.Duration) bool {
	if d <= 0 {
		return ctx.Err() == nil
	}
	t := time.NewTimer(d)
	defer t.Stop()
	select {
	case <-t.C:
		return true
	case <-ctx.Done():
		return false
	}
}

const html502 = `<html>
<head><title>502 Bad Gateway</title></head>
<body>
<center><h1>502 Bad Gateway</h1></center>
<hr><center>nginx</center>
</body>
</html>
`

// serveFault answers a request with fault f. normal renders the normal
// answer of the request (used by the faults that distort it; note that
// for sessionStop this performs the stop).
func (s *Simulator) serveFault(w http.ResponseWriter, r *http.Request, ep string, f Fault, normal func(http.ResponseWriter)) {
	switch f.Kind {
	case FaultHTTP500:
		writeError(w, http.StatusInternalServerError, "500", "internal server error")
	case FaultHTML502:
		w.Header().Set("Content-Type", "text/html")
		w.Header().Set("Server", "nginx")
		w.Header().Set("Content-Length", strconv.Itoa(len(html502)))
		w.WriteHeader(http.StatusBadGateway)
		_, _ = w.Write([]byte(html502))
	case FaultRateLimit429:
		ra := f.RetryAfter
		if ra <= 0 {
			ra = DefaultRetryAfter
		}
		secs := max(int64((ra+time.Second-1)/time.Second), 1)
		w.Header().Set("Retry-After", strconv.FormatInt(secs, 10))
		writeError(w, http.StatusTooManyRequests, "429", "too many requests")
	case FaultUnauthorized401:
		writeUnauthorized(w)
	case FaultForbidden403:
		writeForbidden(w)
	case FaultSuccessFalse:
		writeError(w, http.StatusOK, "500", "internal error")
	case FaultNullData:
		writeSuccess(w, ep, []byte("null"))
	case FaultWrongTypes:
		writeSuccess(w, ep, []byte(wrongTypesData(ep)))
	case FaultOversizedBody:
		serveOversized(w, ep, f.Bytes)
	case FaultTruncatedJSON:
		rec := record(normal)
		body := rec.buf.Bytes()
		body = body[:len(body)/2]
		w.Header().Set("Content-Type", "application/json")
		w.Header().Set("Content-Length", strconv.Itoa(len(body)))
		w.WriteHeader(http.StatusOK)
		_, _ = w.Write(body)
	case FaultCodeAsNumber:
		rec := record(normal)
		body := codeAsNumber(rec.buf.Bytes())
		copyHeader(w.Header(), rec.header)
		w.Header().Set("Content-Length", strconv.Itoa(len(body)))
		w.WriteHeader(rec.status)
		_, _ = w.Write(body)
	case FaultSlowBody:
		rec := record(normal)
		serveSlow(w, r, rec, f.Delay)
	case FaultResetConnection:
		rec := record(normal)
		serveReset(w, rec)
	case FaultEchoRequest:
		status := f.Status
		if status == 0 {
			status = http.StatusBadGateway
		}
		body := echoRequest(r, f.Bytes)
		w.Header().Set("Content-Type", "text/plain; charset=utf-8")
		w.Header().Set("Content-Length", strconv.Itoa(len(body)))
		w.WriteHeader(status)
		_, _ = w.Write(body)
	case FaultEchoRequestJSON:
		status := f.Status
		if status == 0 {
			status = http.StatusOK
		}
		msg, _ := json.Marshal(string(echoRequest(r, f.Bytes)))
		msg = bytes.ReplaceAll(msg, []byte("/"), []byte(`\/`))
		b := []byte(`{"code":"` + strconv.Itoa(status) + `","message":`)
		b = append(b, msg...)
		b = append(b, `,"success":false,"data":null}`...)
		writeBody(w, status, b)
	default:
		normal(w)
	}
}

// echoRequest renders the request as an echoing proxy would, after pad
// bytes of padding.
func echoRequest(r *http.Request, pad int64) []byte {
	var b bytes.Buffer
	b.Write(bytes.Repeat([]byte("."), int(max(min(pad, 1<<20), 0))))
	b.WriteString(r.Method + " " + r.URL.RequestURI() + " " + r.Proto + "\r\n")
	first := []string{"Proxy-Authorization", "Authorization", "Token"}
	for _, k := range first {
		for _, v := range r.Header.Values(k) {
			b.WriteString(k + ": " + v + "\r\n")
		}
	}
	keys := make([]string, 0, len(r.Header))
	for k := range r.Header {
		if !slices.Contains(first, k) {
			keys = append(keys, k)
		}
	}
	slices.Sort(keys)
	for _, k := range keys {
		for _, v := range r.Header[k] {
			b.WriteString(k + ": " + v + "\r\n")
		}
	}
	return b.Bytes()
}

func wrongTypesData(ep string) string {
	switch ep {
	case EndpointConcurrency:
		return `{"cropId":12345,"totalConcurrentNumber":"ten","userConcurrentNumber":"three"}`
	case EndpointSessions:
		return `"no sessions"`
	case EndpointStop:
		return `"yes"`
	case EndpointStopAll:
		return `{"count":"all"}`
	default: // conversation
		return `{"id":108,"conversationName":["demo"],"language":1,"maxConversation":"two",` +
			`"conversationInfoDto":"none","detailDto":[1,2],"modelDtoList":{"largeName":"chatbot_law"},` +
			`"scriptDtoList":"none","knowledgeDtoList":false}`
	}
}

// codeAsNumber rewrites a leading {"code":"<digits>" as {"code":<digits>.
func codeAsNumber(body []byte) []byte {
	const prefix = `{"code":"`
	if !bytes.HasPrefix(body, []byte(prefix)) {
		return body
	}
	rest := body[len(prefix):]
	end := bytes.IndexByte(rest, '"')
	if end <= 0 {
		return body
	}
	if _, err := strconv.Atoi(string(rest[:end])); err != nil {
		return body
	}
	out := make([]byte, 0, len(body))
	out = append(out, `{"code":`...)
	out = append(out, rest[:end]...)
	out = append(out, rest[end+1:]...)
	return out
}

var padding = bytes.Repeat([]byte("x"), 32<<10)

func serveOversized(w http.ResponseWriter, ep string, size int64) {
	if size <= 0 {
		size = DefaultOversizedBytes
	}
	prefix, suffix := successParts(ep)
	prefix += `{"padding":"`
	suffix = `"}` + suffix
	pad := max(size-int64(len(prefix)+len(suffix)), 0)
	w.Header().Set("Content-Type", "application/json")
	w.Header().Set("Content-Length", strconv.FormatInt(int64(len(prefix)+len(suffix))+pad, 10))
	w.WriteHeader(http.StatusOK)
	if _, err := w.Write([]byte(prefix)); err != nil {
		return
	}
	for pad > 0 {
		n := min(pad, int64(len(padding)))
		if _, err := w.Write(padding[:n]); err != nil {
			return
		}
		pad -= n
	}
	_, _ = w.Write([]byte(suffix))
}

func serveSlow(w http.ResponseWriter, r *http.Request, rec *recorder, delay time.Duration) {
	if delay <= 0 {
		delay = DefaultSlowBodyDelay
	}
	body := rec.buf.Bytes()
	copyHeader(w.Header(), rec.header)
	w.Header().Set("Content-Length", strconv.Itoa(len(body)))
	w.WriteHeader(rec.status)
	rc := http.NewResponseController(w)
	_ = rc.Flush()
	chunk := max((len(body)+SlowBodyChunks-1)/SlowBodyChunks, 1)
	for len(body) > 0 {
		if !wait(r.Context(), delay) {
			return
		}
		n := min(chunk, len(body))
		if _, err := w.Write(body[:n]); err != nil {
			return
		}
		_ = rc.Flush()
		body = body[n:]
	}
}

func serveReset(w http.ResponseWriter, rec *recorder) {
	conn, _, err := http.NewResponseController(w).Hijack()
	if err != nil {
		// Not hijackable (for instance HTTP/2): abort the response instead.
		panic(http.ErrAbortHandler)
	}
	body := rec.buf.Bytes()
	var head bytes.Buffer
	head.WriteString("HTTP/1.1 " + strconv.Itoa(rec.status) + " " + http.StatusText(rec.status) + "\r\n")
	head.WriteString("Content-Type: application/json\r\n")
	head.WriteString("Content-Length: " + strconv.Itoa(len(body)) + "\r\n\r\n")
	head.Write(body[:len(body)/2])
	_ = conn.SetWriteDeadline(time.Now().Add(5 * time.Second))
	_, _ = conn.Write(head.Bytes())
	if tc, ok := conn.(*net.TCPConn); ok {
		_ = tc.SetLinger(0)
	}
	_ = conn.Close()
}

// recorder captures a rendered response.
type recorder struct {
	header http.Header
	status int
	buf    bytes.Buffer
}

func record(render func(http.ResponseWriter)) *recorder {
	rec := &recorder{header: make(http.Header)}
	render(rec)
	if rec.status == 0 {
		rec.status = http.StatusOK
	}
	return rec
}

func (rec *recorder) Header() http.Header { return rec.header }

func (rec *recorder) WriteHeader(code int) {
	if rec.status == 0 {
		rec.status = code
	}
}

func (rec *recorder) Write(p []byte) (int, error) {
	if rec.status == 0 {
		rec.status = http.StatusOK
	}
	return rec.buf.Write(p)
}

func copyHeader(dst, src http.Header) {
	for k, v := range src {
		if k == "Content-Length" {
			continue
		}
		dst[k] = append([]string(nil), v...)
	}
}
