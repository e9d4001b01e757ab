package janitor_test

import (
	"bytes"
	"fmt"
	"io"
	"net"
	"net/http"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// Hostile payloads get an answer and a metric, never a stop, a panic or a
// forged log line.
func TestHostilePayloadsAreAnsweredWithoutActing(t *testing.T) {
	f := newFixture(t, "")
	kiosk := f.session("kiosk", 3*time.Hour)
	web := f.session("web", 3*time.Hour)
	many := func(alert string, n int) string {
		return `{"version":"4","alerts":[` + strings.Repeat(alert+",", n-1) + alert + "]}"
	}
	firing := func(app string) string {
		return `{"version":"4","alerts":[{"status":"firing","labels":{"alertname":"DuixSessionStuck","app":` + app + `}}]}`
	}
	for _, tt := range []struct {
		name, body string
		code       int
	}{
		{"deep nesting", `{"version":"4","alerts":[{"status":"firing","labels":{"alertname":"DuixSessionStuck","app":"kiosk"},"annotations":` +
			strings.Repeat("[", 200000) + strings.Repeat("]", 200000) + `}]}`, http.StatusBadRequest},
		{"version as a number", `{"version":4,"alerts":[]}`, http.StatusBadRequest},
		{"version 40", `{"version":"40","alerts":[]}`, http.StatusBadRequest},
		{"status in capitals", `{"version":"4","alerts":[{"status":"FIRING","labels":{"alertname":"DuixSessionStuck","app":"kiosk"}}]}`, http.StatusBadRequest},
		{"labels null", `{"version":"4","alerts":[{"status":"firing","labels":null}]}`, http.StatusBadRequest},
		{"alert null", `{"version":"4","alerts":[null]}`, http.StatusBadRequest},
		{"over 1 MiB in one string", `{"version":"4","alerts":[],"x":"` + strings.Repeat("a", 3<<20) + `"}`, http.StatusRequestEntityTooLarge},
		{"many other alerts", many(`{"status":"firing","labels":{"alertname":"Other","app":"kiosk"}}`, 15000), http.StatusOK},
		{"many alerts of an app not opted in", many(`{"status":"firing","labels":{"alertname":"DuixSessionStuck","app":"web"}}`, 12000), http.StatusOK},
		{"alert name in lower case", `{"version":"4","alerts":[{"status":"firing","labels":{"alertname":"duixsessionstuck","app":"kiosk"}}]}`, http.StatusOK},
		{"a look-alike app", firing(`"k\u0456osk"`), http.StatusUnprocessableEntity},
		{"an app with NUL", firing(`"kiosk\u0000"`), http.StatusUnprocessableEntity},
		{"an app forging a log line", firing(`"x\nlevel=info msg=\"Janitor decision\" action=stopped app=kiosk"`), http.StatusUnprocessableEntity},
		{"an app of invalid UTF-8", firing("\"\xff\xfe\""), http.StatusUnprocessableEntity},
	} {
		t.Run(tt.name, func(t *testing.T) {
			code, answer := f.post(tt.body)
			assert.Equal(t, tt.code, code, "%.300s", answer)
			assert.NotContains(t, answer, "\x00")
		})
	}
	assert.Equal(t, []string{kiosk}, f.listed("kiosk"))
	assert.Equal(t, []string{web}, f.listed("web"))
	assert.Zero(t, f.stops.Load())
	assert.NotRegexp(t, `(?m)^level=info msg="Janitor decision" action=stopped`, f.logs.String(), "a forged log line")
}

// On the janitor's own listener, senders that never finish their body do
// not hold up the others (a body is read before a request waits its
// turn: otherwise this test would hang), and a storm of concurrent
// webhooks stays within the budget.
func TestSlowSendersDoNotHoldTheListener(t *testing.T) {
	f := newFixture(t, "{max_stops_per_hour: 5}")
	for range 20 {
		f.session("kiosk", 3*time.Hour)
		f.session("lobby", 3*time.Hour)
	}
	srv := f.j.Server(nil)
	srv.ReadTimeout = 0 // the slow senders hold their requests until the test ends
	addr := serve(t, srv, "")
	for range 20 {
		c, err := net.Dial("tcp", addr)
		require.NoError(t, err)
		t.Cleanup(func() { c.Close() })
		fmt.Fprint(c, "POST /webhook HTTP/1.1\r\nHost: x\r\nContent-Type: application/json\r\nContent-Length: 100000\r\n\r\n{")
	}
	body := []byte(payload(t, stuck("kiosk"), stuck("lobby")))
	var wg sync.WaitGroup
	codes := make(chan int, 50)
	for range 50 {
		wg.Go(func() {
			resp, err := http.Post("http://"+addr+"/webhook", "application/json", bytes.NewReader(body))
			if !assert.NoError(t, err) {
				return
			}
			_, _ = io.Copy(io.Discard, resp.Body)
			resp.Body.Close()
			codes <- resp.StatusCode
		})
	}
	wg.Wait()
	close(codes)
	for c := range codes {
		assert.Equal(t, http.StatusOK, c)
	}
	assert.Equal(t, 50.0, f.requests("handled"))
	assert.Equal(t, int64(5), f.stops.Load(), "stops within the budget")
}

// A body that never ends is cut at the listener's read timeout (here
// shortened), answered and counted.
func TestASlowBodyIsCutAndCounted(t *testing.T) {
	f := newFixture(t, "")
	srv := f.j.Server(nil)
	require.Positive(t, srv.ReadTimeout, "the listener has a read timeout")
	srv.ReadTimeout = 300 * time.Millisecond
	c, err := net.Dial("tcp", serve(t, srv, ""))
	require.NoError(t, err)
	defer c.Close()
	fmt.Fprint(c, "POST /webhook HTTP/1.1\r\nHost: x\r\nContent-Length: 100000\r\n\r\n{\"version\":")
	go func() { // a byte now and then, until the connection is cut
		for {
			time.Sleep(50 * time.Millisecond)
			if _, err := c.Write([]byte(" ")); err != nil {
				return
			}
		}
	}()
	require.NoError(t, c.SetReadDeadline(time.Now().Add(time.Minute))) // only if the server never answers
	answer, _ := io.ReadAll(c)
	assert.Contains(t, string(answer), "HTTP/1.1 400 ")
	assert.Equal(t, 1.0, f.requests("invalid"))
}
