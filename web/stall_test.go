package web

import (
	"bufio"
	"bytes"
	"fmt"
	"io"
	"net"
	"net/http"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/duix-exporter/duix_exporter/simulator"
)

// startFleet starts a simulator with n apps and writes a configuration
// for them. The apps' names are long (120 bytes), so that the answer is
// large whatever the number of series per app.
func startFleet(t *testing.T, n int) (*simulator.Simulator, string) {
	t.Helper()
	sim := simulator.New()
	var b strings.Builder
	pad := strings.Repeat("x", 110)
	for i := range n {
		id, key := fmt.Sprintf("fleet-%05d", i), fmt.Sprintf("fleet-key-%05d", i)
		sim.AddApp(simulator.App{ID: id, Key: key, Allowance: 5})
		fmt.Fprintf(&b, "  - name: app-%05d-%s\n    app_id: %q\n    app_key: %s\n", i, pad, id, key)
	}
	base, closeSim, err := sim.Listen("127.0.0.1:0")
	require.NoError(t, err)
	t.Cleanup(closeSim)
	path := filepath.Join(t.TempDir(), "duix.yml")
	require.NoError(t, os.WriteFile(path, []byte(fmt.Sprintf("api:\n  base_url: %q\n  max_concurrency: 64\napps:\n%s", base, b.String())), 0o600))
	return sim, path
}

// dialSmall connects to the server with a receive buffer of 256 KiB:
// larger than a loopback segment, so that the window opens as the client
// reads, and far smaller than the answers of a big fleet, which then fill
// the server's buffers when the client does not read.
func dialSmall(t *testing.T, url string) net.Conn {
	t.Helper()
	conn, err := net.Dial("tcp", strings.TrimPrefix(url, "http://"))
	require.NoError(t, err)
	require.NoError(t, conn.(*net.TCPConn).SetReadBuffer(256<<10))
	return conn
}

func TestAClientThatDoesNotReadLosesItsScrapeSlot(t *testing.T) {
	const apps = 7000 // an exposition of several MiB, more than the socket buffers hold
	// (up to 4 MiB on the server's side, 256 KiB on the client's)
	sim, cfg := startFleet(t, apps)
	s := serve(t, cfg, Options{MaxRequests: 1, WriteMargin: 500 * time.Millisecond})

	// A client sends a scrape and never reads the answer.
	stalled := dialSmall(t, s.url)
	t.Cleanup(func() { stalled.Close() }) // before the server closes
	_, err := fmt.Fprintf(stalled, "GET /metrics HTTP/1.1\r\nHost: exporter\r\nX-Prometheus-Scrape-Timeout-Seconds: 3\r\n\r\n")
	require.NoError(t, err)
	// It holds the only slot once its scrape calls the platform.
	require.Eventually(t, func() bool { return sim.Requests(simulator.EndpointConcurrency) > 0 }, 30*time.Second, 5*time.Millisecond)

	// Once its answer could not be written by the deadline, the slot is
	// free again.
	var (
		code  int
		body  string
		codes = map[int]int{}
	)
	deadline := time.Now().Add(2 * time.Minute)
	for time.Now().Before(deadline) {
		code, body = s.get(t, "/metrics")
		codes[code]++
		if code != http.StatusServiceUnavailable {
			break
		}
		time.Sleep(50 * time.Millisecond)
	}
	require.Equal(t, http.StatusOK, code, "a scrape after the stalled one was cut off; answers so far: %v", codes)
	assert.Len(t, samples(t, body)["duix_up"], apps)
	t.Logf("answers while the stalled scrape held the slot: %v; a whole answer is %d bytes", codes, len(body))
	require.Greater(t, len(body), 6<<20, "the answer is larger than the socket buffers")

	// The stalled client's connection was closed before the whole answer
	// (its end, the last chunk, never came).
	require.NoError(t, stalled.SetReadDeadline(time.Now().Add(time.Minute)))
	raw, err := io.ReadAll(stalled)
	require.NoError(t, err, "the server closed the connection")
	assert.Less(t, len(raw), len(body))
	assert.False(t, bytes.HasSuffix(raw, []byte("\r\n0\r\n\r\n")), "the answer is cut off")
	t.Logf("the stalled client got %d bytes", len(raw))
	assert.Equal(t, 1, strings.Count(s.logs.String(), "error encoding and sending metric family"), "the failure is logged once")
}

func TestAScrapesWriteDeadlineEndsWithItsRequest(t *testing.T) {
	p := startPlatform(t)
	s := serve(t, p.config, Options{WriteMargin: 100 * time.Millisecond})
	conn, err := net.Dial("tcp", strings.TrimPrefix(s.url, "http://"))
	require.NoError(t, err)
	defer conn.Close()
	require.NoError(t, conn.SetDeadline(time.Now().Add(time.Minute)))
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

	// A scrape with a short deadline: its answer must be written within
	// 0.2 s + 0.1 s of its start.
	code, body := roundTrip("GET /probe?app=museum-guide HTTP/1.1\r\nHost: exporter\r\nX-Prometheus-Scrape-Timeout-Seconds: 0.2\r\n\r\n")
	require.Equal(t, http.StatusOK, code)
	require.Contains(t, body, `duix_up{app="museum-guide"}`)
	time.Sleep(400 * time.Millisecond) // past that deadline, whenever the scrape started

	// The next requests on the connection are not bound by it.
	code, body = roundTrip("GET /-/healthy HTTP/1.1\r\nHost: exporter\r\n\r\n")
	assert.Equal(t, http.StatusOK, code)
	assert.Equal(t, "Healthy\n", body)
	code, body = roundTrip("GET /probe?app=museum-guide HTTP/1.1\r\nHost: exporter\r\n\r\n")
	assert.Equal(t, http.StatusOK, code)
	assert.Contains(t, body, `duix_up{app="museum-guide"} 1`)
}
