package web

import (
	"bufio"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// deadlineRecorder is a ResponseWriter that records the write deadlines
// set through http.ResponseController, and whose writes fail once failAfter
// bytes are written (0: never).
type deadlineRecorder struct {
	*httptest.ResponseRecorder
	deadlines []time.Time
	failAfter int
	written   int
}

func (d *deadlineRecorder) SetWriteDeadline(t time.Time) error {
	d.deadlines = append(d.deadlines, t)
	return nil
}

func (d *deadlineRecorder) Write(p []byte) (int, error) {
	if d.failAfter > 0 && d.written+len(p) > d.failAfter {
		return 0, errors.New("write: broken pipe")
	}
	d.written += len(p)
	return d.ResponseRecorder.Write(p)
}

// A scrape's answer must be written by its scrape timeout (less the
// offset) plus the write margin: a client that does not read is cut off
// then, and its slot freed.
func TestAScrapesWriteDeadlineIsItsTimeoutPlusTheMargin(t *testing.T) {
	p := startPlatform(t)
	h, err := NewHandler(newTestExporter(t, p), nil, func() error { return nil },
		Options{TelemetryPath: "/metrics", TimeoutOffset: 500 * time.Millisecond, WriteMargin: 3 * time.Second})
	require.NoError(t, err)
	for path, want := range map[string]time.Duration{
		"/metrics":                4500*time.Millisecond + 3*time.Second,
		"/probe?app=museum-guide": 4500*time.Millisecond + 3*time.Second,
	} {
		rec := &deadlineRecorder{ResponseRecorder: httptest.NewRecorder()}
		req := httptest.NewRequest(http.MethodGet, path, nil)
		req.Header.Set("X-Prometheus-Scrape-Timeout-Seconds", "5")
		before := time.Now()
		h.ServeHTTP(rec, req)
		after := time.Now()
		require.Equal(t, http.StatusOK, rec.Code, path)
		require.Len(t, rec.deadlines, 1, path)
		assert.False(t, rec.deadlines[0].Before(before.Add(want)), path)
		assert.False(t, rec.deadlines[0].After(after.Add(want)), path)
	}
	// Without the header: the default scrape timeout, and the default margin.
	h, err = NewHandler(newTestExporter(t, p), nil, func() error { return nil }, Options{TelemetryPath: "/metrics"})
	require.NoError(t, err)
	rec := &deadlineRecorder{ResponseRecorder: httptest.NewRecorder()}
	before := time.Now()
	h.ServeHTTP(rec, httptest.NewRequest(http.MethodGet, "/probe?app=museum-guide", nil))
	require.Len(t, rec.deadlines, 1)
	assert.False(t, rec.deadlines[0].Before(before.Add(DefaultScrapeTimeout+DefaultWriteMargin)))
	// A refused scrape sets none.
	rec = &deadlineRecorder{ResponseRecorder: httptest.NewRecorder()}
	h.ServeHTTP(rec, httptest.NewRequest(http.MethodGet, "/probe?app=nope", nil))
	assert.Equal(t, http.StatusBadRequest, rec.Code)
	assert.Empty(t, rec.deadlines)
}

// An answer that cannot be written (the client left) fails for every
// metric family; the failure is logged once.
func TestAnAnswerThatCannotBeSentIsLoggedOnce(t *testing.T) {
	p := startPlatform(t)
	s := serve(t, p.config, Options{})
	h, err := NewHandler(s.exp, nil, func() error { return nil }, Options{TelemetryPath: "/metrics", Logger: s.logger})
	require.NoError(t, err)
	rec := &deadlineRecorder{ResponseRecorder: httptest.NewRecorder(), failAfter: 1}
	h.ServeHTTP(rec, httptest.NewRequest(http.MethodGet, "/metrics", nil))
	assert.Equal(t, 1, strings.Count(s.logs.String(), "error encoding and sending metric family"), s.logs.String())
}

// A scrape's write deadline does not bind the next requests on its
// connection. The margin (1 s) is far beyond the time to write a probe's
// answer on loopback; the test then waits until the deadline has passed.
func TestAScrapesWriteDeadlineEndsWithItsRequest(t *testing.T) {
	t.Parallel()
	const (
		timeout = MinScrapeTimeout
		margin  = time.Second
	)
	p := startPlatform(t)
	s := serve(t, p.config, Options{WriteMargin: margin})
	conn, err := net.Dial("tcp", strings.TrimPrefix(s.url, "http://"))
	require.NoError(t, err)
	defer conn.Close()
	require.NoError(t, conn.SetDeadline(time.Now().Add(margin+hangTimeout)))
	r := bufio.NewReader(conn)
	roundTrip := func(request string) (int, string) {
		t.Helper()
		_, err := io.WriteString(conn, request)
		require.NoError(t, err)
		resp, err := http.ReadResponse(r, nil)
		require.NoError(t, err, "an answer on the same connection")
		defer resp.Body.Close()
		b, err := io.ReadAll(resp.Body)
		require.NoError(t, err)
		return resp.StatusCode, string(b)
	}
	code, body := roundTrip(fmt.Sprintf("GET /probe?app=museum-guide HTTP/1.1\r\nHost: exporter\r\nX-Prometheus-Scrape-Timeout-Seconds: %g\r\n\r\n", timeout.Seconds()))
	require.Equal(t, http.StatusOK, code)
	require.Contains(t, body, `duix_up{app="museum-guide"}`)
	time.Sleep(timeout + margin + 100*time.Millisecond)

	code, body = roundTrip("GET /-/healthy HTTP/1.1\r\nHost: exporter\r\n\r\n")
	assert.Equal(t, http.StatusOK, code)
	assert.Equal(t, "Healthy\n", body)
	code, body = roundTrip("GET /probe?app=museum-guide HTTP/1.1\r\nHost: exporter\r\n\r\n")
	assert.Equal(t, http.StatusOK, code)
	assert.Contains(t, body, `duix_up{app="museum-guide"} 1`)
}
