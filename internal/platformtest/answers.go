package platformtest

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"net"
	"net/http"
	"net/http/httptest"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/duix-exporter/duix_exporter/simulator"
)

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
func serveFault(w http.ResponseWriter, r *http.Request, appID, ep string, f Fault, normal func(http.ResponseWriter)) {
	switch f.Kind {
	case FaultHTTP500:
		writeError(w, http.StatusInternalServerError, "500", "internal server error")
	case FaultHTML502:
		w.Header().Set("Content-Type", "text/html")
		w.Header().Set("Server", "nginx")
		writeBody(w, http.StatusBadGateway, []byte(html502))
	case FaultRateLimit429:
		ra := f.RetryAfter
		if ra <= 0 {
			ra = DefaultRetryAfter
		}
		secs := max(int64((ra+time.Second-1)/time.Second), 1)
		w.Header().Set("Retry-After", strconv.FormatInt(secs, 10))
		writeError(w, http.StatusTooManyRequests, "429", "too many requests")
	case FaultUnauthorized401:
		writeError(w, http.StatusUnauthorized, "401", "token invalid or expired")
	case FaultForbidden403:
		writeError(w, http.StatusForbidden, "403", "token not valid for this app")
	case FaultSuccessFalse:
		writeError(w, http.StatusOK, "500", "internal error")
	case FaultNullData:
		writeSuccess(w, ep, "null")
	case FaultWrongTypes:
		writeSuccess(w, ep, wrongTypesData(ep))
	case FaultOversizedBody:
		serveOversized(w, ep, f.Bytes)
	case FaultTruncatedJSON:
		rec := record(normal)
		body := rec.buf.Bytes()
		writeBody(w, http.StatusOK, body[:len(body)/2])
	case FaultCodeAsNumber:
		rec := record(normal)
		copyHeader(w.Header(), rec.header)
		writeBody(w, rec.status, codeAsNumber(rec.buf.Bytes()))
	case FaultSlowBody:
		serveSlow(w, r, record(normal), f.Delay)
	case FaultResetConnection:
		serveReset(w, record(normal))
	case FaultEchoRequest:
		w.Header().Set("Content-Type", "text/plain; charset=utf-8")
		writeBody(w, statusOr(f.Status, http.StatusBadGateway), echoRequest(r, f.Bytes))
	case FaultEchoRequestJSON:
		status := statusOr(f.Status, http.StatusOK)
		msg, _ := json.Marshal(string(echoRequest(r, f.Bytes)))
		msg = bytes.ReplaceAll(msg, []byte("/"), []byte(`\/`))
		b := []byte(`{"code":"` + strconv.Itoa(status) + `","message":`)
		b = append(b, msg...)
		b = append(b, `,"success":false,"data":null}`...)
		writeBody(w, status, b)
	case FaultEcho:
		serveEcho(w, r, appID, ep, statusOr(f.Status, http.StatusOK))
	case FaultEndlessString, FaultEndlessList:
		serveEndless(w, r, appID, ep, f)
	case FaultUnsolicitedEcho:
		serveUnsolicitedEcho(w, r, normal)
	default:
		normal(w)
	}
}

func statusOr(status, def int) int {
	if status == 0 {
		return def
	}
	return status
}

// writeBody writes a whole answer (as JSON unless a Content-Type is set).
func writeBody(w http.ResponseWriter, status int, b []byte) {
	if w.Header().Get("Content-Type") == "" {
		w.Header().Set("Content-Type", "application/json")
	}
	w.Header().Set("Content-Length", strconv.Itoa(len(b)))
	w.WriteHeader(status)
	_, _ = w.Write(b)
}

// writeError writes an envelope of success false; code and message are
// plain ASCII.
func writeError(w http.ResponseWriter, status int, code, message string) {
	writeBody(w, status, []byte(`{"code":"`+code+`","message":"`+message+`","success":false,"data":null}`))
}

// writeSuccess writes a successful envelope of an endpoint; data must be
// valid JSON.
func writeSuccess(w http.ResponseWriter, ep, data string) {
	prefix, suffix := simulator.SuccessParts(ep)
	writeBody(w, http.StatusOK, []byte(prefix+data+suffix))
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

// serveUnsolicitedEcho answers FaultUnsolicitedEcho.
func serveUnsolicitedEcho(w http.ResponseWriter, r *http.Request, normal func(http.ResponseWriter)) {
	rec := httptest.NewRecorder()
	normal(rec)
	conn, buf, err := http.NewResponseController(w).Hijack()
	if err != nil {
		return
	}
	defer conn.Close()
	body, echo := rec.Body.Bytes(), bytes.ReplaceAll(echoRequest(r, 0), []byte("\r\n"), []byte(" | "))
	fmt.Fprintf(buf, "HTTP/1.1 %d %s\r\nContent-Type: application/json\r\nContent-Length: %d\r\n\r\n%s", rec.Code, http.StatusText(rec.Code), len(body), body)
	fmt.Fprintf(buf, "HTTP/1.1 200 OK\r\nX-Echo: %s\r\nContent-Length: 0\r\n\r\n", echo)
	_ = buf.Flush()
	time.Sleep(300 * time.Millisecond) // the client has the connection back, idle
}

// serveEcho answers FaultEcho. The status line is written by hand on the
// hijacked connection: net/http writes only the standard reason phrases.
func serveEcho(w http.ResponseWriter, r *http.Request, appID, ep string, status int) {
	text := strings.TrimSuffix(string(echoRequest(r, 0)), "\r\n")
	echo, _ := json.Marshal(text)
	reason := strings.ReplaceAll(text, "\r\n", " | ")
	code := `"` + strconv.Itoa(status) + `"`
	var body string
	if ep == simulator.EndpointSessions {
		app, _ := json.Marshal(appID)
		rec := fmt.Sprintf(`{"uuid":%s,"sessionId":%[1]s,"conversationId":%[1]s,"appId":%s,"startTime":%d,"status":%[1]s}`,
			echo, app, time.Now().UnixMilli())
		body = `{"code":` + code + `,"data":[` + rec + `],"message":` + string(echo) + `,"msg":` + string(echo) + `,"success":false}`
	} else {
		body = `{"code":` + code + `,"message":` + string(echo) + `,"msg":` + string(echo) + `,"success":false,"data":null}`
	}
	conn, _, err := http.NewResponseController(w).Hijack()
	if err != nil { // not HTTP/1: the standard status line
		writeBody(w, status, []byte(body))
		return
	}
	defer conn.Close()
	_ = conn.SetWriteDeadline(time.Now().Add(5 * time.Second))
	_, _ = fmt.Fprintf(conn, "HTTP/1.1 %d %s\r\nContent-Type: application/json\r\nContent-Length: %d\r\nConnection: close\r\n\r\n%s",
		status, reason, len(body), body)
}

// endless holds, per endpoint, the start of a data string that never
// ends, and what closes it when the body is bounded.
var endless = map[string][2]string{
	simulator.EndpointConcurrency:  {`{"cropId":"`, `"}`},
	simulator.EndpointSessions:     {`[{"uuid":"`, `"}]`},
	simulator.EndpointConversation: {`{"id":"`, `"}`},
	simulator.EndpointStopAll:      {`{"count":"`, `"}`},
}

// serveEndless answers FaultEndlessString and FaultEndlessList: a
// successful envelope whose data streams until the client goes away, or
// until the body holds f.Bytes > 0 bytes.
func serveEndless(w http.ResponseWriter, r *http.Request, appID, ep string, f Fault) {
	prefix, suffix := simulator.SuccessParts(ep)
	open, closing := `"`, `"`
	if p, ok := endless[ep]; ok {
		open, closing = p[0], p[1]
	}
	list := f.Kind == FaultEndlessList && ep == simulator.EndpointSessions
	if list {
		open, closing = "[", "]"
	}
	w.Header().Set("Content-Type", "application/json")
	w.WriteHeader(http.StatusOK)
	sent := int64(len(prefix) + len(open) + len(closing) + len(suffix))
	if !write(r.Context(), w, prefix+open) {
		return
	}
	chunk := padding
	for n := 0; f.Bytes <= 0 || sent < f.Bytes; n++ {
		if list {
			chunk = sessionRecords(appID, n)
		}
		if f.Bytes > 0 {
			chunk = chunk[:min(int64(len(chunk)), f.Bytes-sent)]
			if list { // whole records only
				chunk = chunk[:bytes.LastIndexByte(chunk, '}')+1]
				if len(chunk) == 0 {
					break
				}
			}
		}
		if !write(r.Context(), w, string(chunk)) {
			return
		}
		sent += int64(len(chunk))
	}
	_ = write(r.Context(), w, closing+suffix)
}

// sessionRecords returns about 32 KiB of session records, the nth batch
// of a list: a comma before each record but the very first.
func sessionRecords(appID string, n int) []byte {
	app, _ := json.Marshal(appID)
	b := make([]byte, 0, 33<<10)
	for i := 0; len(b) < 32<<10; i++ {
		if n > 0 || i > 0 {
			b = append(b, ',')
		}
		b = fmt.Appendf(b, `{"uuid":"%08x-0000-4000-8000-%012x","sessionId":"%08[1]x-0000-4000-8000-%012[2]x","conversationId":"1","appId":%s,"startTime":1700000000000,"status":"in_call"}`,
			n, i, app)
	}
	return b
}

func write(ctx context.Context, w http.ResponseWriter, s string) bool {
	if ctx.Err() != nil {
		return false
	}
	_, err := w.Write([]byte(s))
	return err == nil
}

func wrongTypesData(ep string) string {
	switch ep {
	case simulator.EndpointConcurrency:
		return `{"cropId":12345,"totalConcurrentNumber":"ten","userConcurrentNumber":"three"}`
	case simulator.EndpointSessions:
		return `"no sessions"`
	case simulator.EndpointStop:
		return `"yes"`
	case simulator.EndpointStopAll:
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
	rest, ok := bytes.CutPrefix(body, []byte(prefix))
	end := bytes.IndexByte(rest, '"')
	if !ok || end <= 0 {
		return body
	}
	if _, err := strconv.Atoi(string(rest[:end])); err != nil {
		return body
	}
	out := append([]byte(`{"code":`), rest[:end]...)
	return append(out, rest[end+1:]...)
}

var padding = bytes.Repeat([]byte("x"), 32<<10)

func serveOversized(w http.ResponseWriter, ep string, size int64) {
	if size <= 0 {
		size = DefaultOversizedBytes
	}
	prefix, suffix := simulator.SuccessParts(ep)
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
		t := time.NewTimer(delay)
		select {
		case <-r.Context().Done():
			t.Stop()
			return
		case <-t.C:
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
