package web

import (
	"bufio"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"net/http/httptest"
	"os"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// deadlineRecorder is a ResponseWriter that records the write deadlines
// set through http.ResponseController (when, and how much had been written),
// and whose writes fail once failAfter bytes are written (0: never). With
// stalled set, it is a client that never reads: the first write is told on
// stalled and waits for the deadline, then fails.
type deadlineRecorder struct {
	*httptest.ResponseRecorder
	deadlines, setAt []time.Time
	writtenAt        []int
	failAfter        int
	written          int
	stalled          chan struct{}
	release          chan struct{} // when set, a stalled write waits for it rather than for the deadline
}

func (d *deadlineRecorder) SetWriteDeadline(t time.Time) error {
	d.deadlines, d.setAt, d.writtenAt = append(d.deadlines, t), append(d.setAt, time.Now()), append(d.writtenAt, d.written)
	return nil
}

func (d *deadlineRecorder) Write(p []byte) (int, error) {
	if d.stalled != nil && len(d.deadlines) > 0 {
		if d.written >= 0 { // the first write
			close(d.stalled)
			if d.release != nil {
				<-d.release
			} else {
				time.Sleep(time.Until(d.deadlines[len(d.deadlines)-1]))
			}
			d.written = -1
		}
		return 0, os.ErrDeadlineExceeded
	}
	if d.failAfter > 0 && d.written+len(p) > d.failAfter {
		return 0, errors.New("write: broken pipe")
	}
	d.written += len(p)
	return d.ResponseRecorder.Write(p)
}

// A scrape's answer, made in memory, must be written within the write
// margin once it is ready, whatever scrape timeout the request asks for: a
// client that does not read is cut off then, which frees its slot. So must
// the landing page, which holds every app's status while it is written.
func TestAnAnswerMustBeWrittenWithinTheMarginOnceReady(t *testing.T) {
	p := startPlatform(t)
	const margin = 3 * time.Second
	h, err := NewHandler(newTestExporter(t, p), NewRegistries(), func() error { return nil },
		Options{TelemetryPath: "/metrics", TimeoutOffset: 500 * time.Millisecond, WriteMargin: margin})
	require.NoError(t, err)
	for _, path := range []string{"/metrics", "/probe?app=museum-guide", "/"} {
		for _, timeout := range []string{"5", "3600", ""} {
			rec := &deadlineRecorder{ResponseRecorder: httptest.NewRecorder()}
			req := httptest.NewRequest(http.MethodGet, path, nil)
			req.Header.Set("X-Prometheus-Scrape-Timeout-Seconds", timeout)
			h.ServeHTTP(rec, req)
			require.Equal(t, http.StatusOK, rec.Code, path)
			require.Len(t, rec.deadlines, 1, path)
			assert.Zero(t, rec.writtenAt[0], "%s %s: set before the first byte is written", path, timeout)
			assert.False(t, rec.deadlines[0].After(rec.setAt[0].Add(margin)), "%s %s", path, timeout)
			assert.True(t, rec.deadlines[0].After(rec.setAt[0].Add(margin/2)), "%s %s", path, timeout)
		}
	}
	// The default margin.
	h, err = NewHandler(newTestExporter(t, p), NewRegistries(), func() error { return nil }, Options{TelemetryPath: "/metrics"})
	require.NoError(t, err)
	rec := &deadlineRecorder{ResponseRecorder: httptest.NewRecorder()}
	h.ServeHTTP(rec, httptest.NewRequest(http.MethodGet, "/probe?app=museum-guide", nil))
	require.Len(t, rec.deadlines, 1)
	assert.False(t, rec.deadlines[0].After(rec.setAt[0].Add(DefaultWriteMargin)))
	assert.True(t, rec.deadlines[0].After(rec.setAt[0].Add(DefaultWriteMargin/2)))
	// A refused scrape sets none.
	rec = &deadlineRecorder{ResponseRecorder: httptest.NewRecorder()}
	h.ServeHTTP(rec, httptest.NewRequest(http.MethodGet, "/probe?app=nope", nil))
	assert.Equal(t, http.StatusBadRequest, rec.Code)
	assert.Empty(t, rec.deadlines)
}

// A client that does not read its answer must not hold what the other
// scrapes see, nor their turn: neither after a gathering cut short by its
// own deadline (every app down here), nor after one with the longest
// scrape timeout; answers are made in memory first.
func TestAClientThatDoesNotReadHoldsNoGathering(t *testing.T) {
	p := startPlatform(t)
	h, err := NewHandler(newTestExporter(t, p), NewRegistries(), func() error { return nil },
		Options{TelemetryPath: "/metrics", TimeoutOffset: 500 * time.Millisecond, WriteMargin: 5 * time.Second})
	require.NoError(t, err)
	scrape := func() map[string]map[string]float64 {
		rec, answered := httptest.NewRecorder(), make(chan struct{})
		go func() {
			defer close(answered)
			req := httptest.NewRequest(http.MethodGet, "/metrics", nil)
			req.Header.Set("X-Prometheus-Scrape-Timeout-Seconds", "3600") // late only after an hour
			h.ServeHTTP(rec, req)
		}()
		select {
		case <-answered:
		case <-time.After(hangTimeout):
			t.Fatal("a scrape waited for the turn of a client that does not read")
		}
		require.Equal(t, http.StatusOK, rec.Code)
		return samples(t, rec.Body.String())
	}
	limit := scrape()["duix_app_concurrency_limit"]["app=museum-guide"]
	p.Sim.SetLatency("", "", 400*time.Millisecond)
	for i, timeout := range []string{"0.6", "3600"} { // 100 ms after the offset: every app down for it
		stalled := &deadlineRecorder{ResponseRecorder: httptest.NewRecorder(), stalled: make(chan struct{}), release: make(chan struct{})}
		done := make(chan struct{})
		go func() {
			defer close(done)
			req := httptest.NewRequest(http.MethodGet, "/metrics", nil)
			req.Header.Set("X-Prometheus-Scrape-Timeout-Seconds", timeout)
			h.ServeHTTP(stalled, req)
		}()
		select {
		case <-stalled.stalled:
		case <-time.After(hangTimeout):
			t.Fatal("the answer to the client that does not read was never written")
		}
		require.NoError(t, p.Sim.SetAllowance(p.ID("museum-guide"), int(limit)+i+1))
		m := scrape()
		assert.Equal(t, map[string]float64{"app=support-desk": 1, "app=sales-avatar": 1, "app=museum-guide": 1}, m["duix_up"], timeout)
		assert.Equal(t, limit+float64(i+1), m["duix_app_concurrency_limit"]["app=museum-guide"], "%s: the platform as it is", timeout)
		close(stalled.release) // its write margin passes
		select {
		case <-done:
		case <-time.After(hangTimeout):
			t.Fatal("a client that does not read held its slot past its write deadline")
		}
	}
}

// An answer that cannot be sent (the client left) is no error of the
// exporter's: answers are made in memory, so promhttp logs nothing (it
// used to log the failed write of every metric family).
func TestAnAnswerThatCannotBeSentLogsNothing(t *testing.T) {
	p := startPlatform(t)
	s := serve(t, p.Config, Options{})
	h, err := NewHandler(s.exp, NewRegistries(), func() error { return nil }, Options{TelemetryPath: "/metrics", Logger: s.logger})
	require.NoError(t, err)
	for _, path := range []string{"/metrics", "/probe?app=museum-guide"} {
		rec := &deadlineRecorder{ResponseRecorder: httptest.NewRecorder(), failAfter: 1}
		h.ServeHTTP(rec, httptest.NewRequest(http.MethodGet, path, nil))
	}
	assert.NotContains(t, s.logs.String(), "level=error", s.logs.String())
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
	s := serve(t, p.Config, Options{WriteMargin: margin})
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
