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
	for i := range n {
		id, key := fmt.Sprintf("fleet-%05d", i), fmt.Sprintf("fleet-key-%05d", i)
		sim.AddApp(simulator.App{ID: id, Key: key, Allowance: 5})
		fmt.Fprintf(&b, "  - name: %s\n    app_id: %q\n    app_key: %s\n", fleetName(i), id, key)
	}
	base, closeSim, err := sim.Listen("127.0.0.1:0")
	require.NoError(t, err)
	t.Cleanup(closeSim)
	path := filepath.Join(t.TempDir(), "duix.yml")
	require.NoError(t, os.WriteFile(path, []byte(fmt.Sprintf("api:\n  base_url: %q\n  max_concurrency: 64\napps:\n%s", base, b.String())), 0o600))
	return sim, path
}

// fleetName is the name of the i-th app of startFleet.
func fleetName(i int) string { return fmt.Sprintf("app-%05d-%s", i, strings.Repeat("x", 110)) }

// smallSendBuffers gives every connection the listener accepts a send
// buffer of 64 KiB (the kernel doubles it), instead of one that grows to
// several MiB: an answer of a MiB or more then fills the buffers of a
// client that does not read, whatever it holds.
func smallSendBuffers(t *testing.T) func(net.Listener) net.Listener {
	return func(l net.Listener) net.Listener { return smallSendListener{t, l} }
}

type smallSendListener struct {
	t *testing.T
	net.Listener
}

func (l smallSendListener) Accept() (net.Conn, error) {
	c, err := l.Listener.Accept()
	if err == nil {
		assert.NoError(l.t, c.(*net.TCPConn).SetWriteBuffer(64<<10))
	}
	return c, err
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

// A client that sends a scrape and never reads the answer holds the only
// scrape slot until the scrape's write deadline (its scrape timeout plus
// the write margin), then loses it. The margin is far beyond the time a
// busy machine takes to encode the answer, so that the answer is being
// written, and blocked by the client, when the deadline comes, whatever
// the speed; the test waits for it, in parallel with the others.
func TestAClientThatDoesNotReadLosesItsScrapeSlot(t *testing.T) {
	t.Parallel()
	// An exposition of 3 MiB (every app timed out) to 6 MiB (every app
	// answered), far more than the socket buffers hold (128 KiB on the
	// server's side, 512 KiB on the client's), however many apps answer
	// by the deadline.
	const apps = 7000
	sim, cfg := startFleet(t, apps)
	s := serveOn(t, cfg, Options{MaxRequests: 1, WriteMargin: 30 * time.Second}, smallSendBuffers(t))

	// A client sends a scrape and never reads the answer.
	stalled := dialSmall(t, s.url)
	t.Cleanup(func() { stalled.Close() }) // before the server closes
	_, err := fmt.Fprintf(stalled, "GET /metrics HTTP/1.1\r\nHost: exporter\r\nX-Prometheus-Scrape-Timeout-Seconds: 3\r\n\r\n")
	require.NoError(t, err)
	// It holds the only slot once its scrape calls the platform.
	require.Eventually(t, func() bool { return sim.Requests(simulator.EndpointConcurrency) > 0 }, hangTimeout, 5*time.Millisecond)

	// Once its answer could not be written by the deadline, the slot is
	// free again. A probe of one app tells: it is quick, and the stalled
	// client must read soon after the server closed its connection, which
	// the kernel gives up after some 50 s of a window that stays shut.
	var (
		code  int
		codes = map[int]int{}
	)
	probe := "/probe?app=" + fleetName(0)
	deadline := time.Now().Add(2 * hangTimeout)
	for time.Now().Before(deadline) {
		code, _ = s.get(t, probe)
		codes[code]++
		if code != http.StatusServiceUnavailable {
			break
		}
		time.Sleep(100 * time.Millisecond)
	}
	require.Equal(t, http.StatusOK, code, "a scrape after the stalled one was cut off; answers so far: %v", codes)
	t.Logf("answers while the stalled scrape held the slot: %v", codes)

	// The stalled client's connection was closed before the whole answer
	// (its end, the last chunk, never came).
	require.NoError(t, stalled.SetReadDeadline(time.Now().Add(hangTimeout)))
	raw, err := io.ReadAll(stalled)
	require.NoError(t, err, "the server closed the connection (after %d bytes)", len(raw))
	assert.NotEmpty(t, raw, "the answer was being written when the client stopped reading")
	assert.False(t, bytes.HasSuffix(raw, []byte("\r\n0\r\n\r\n")), "the answer is cut off")

	// A whole answer is larger than what the stalled client got.
	code, body := s.get(t, "/metrics")
	require.Equal(t, http.StatusOK, code)
	assert.Len(t, samples(t, body)["duix_up"], apps)
	require.Greater(t, len(body), 2<<20, "the answer is larger than the socket buffers")
	assert.Less(t, len(raw), len(body))
	t.Logf("the stalled client got %d bytes; a whole answer is %d bytes", len(raw), len(body))
	assert.Equal(t, 1, strings.Count(s.logs.String(), "error encoding and sending metric family"), "the failure is logged once")
}

// A scrape's write deadline (its scrape timeout plus the write margin)
// does not bind the next requests on its connection. The margin is far
// beyond the time a busy machine takes to write the scrape's answer, so
// that the answer is written in time whatever the speed; the test then
// waits until the deadline has passed, in parallel with the others.
func TestAScrapesWriteDeadlineEndsWithItsRequest(t *testing.T) {
	t.Parallel()
	const (
		timeout = MinScrapeTimeout
		margin  = 30 * time.Second
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

	// A scrape with a short timeout: its answer must be written within
	// the timeout and the margin of its start.
	code, body := roundTrip(fmt.Sprintf("GET /probe?app=museum-guide HTTP/1.1\r\nHost: exporter\r\nX-Prometheus-Scrape-Timeout-Seconds: %g\r\n\r\n", timeout.Seconds()))
	require.Equal(t, http.StatusOK, code)
	require.Contains(t, body, `duix_up{app="museum-guide"}`)
	// The scrape started before its answer came: its write deadline is
	// less than timeout+margin from now.
	time.Sleep(timeout + margin + 100*time.Millisecond)

	// The next requests on the connection are not bound by it.
	code, body = roundTrip("GET /-/healthy HTTP/1.1\r\nHost: exporter\r\n\r\n")
	assert.Equal(t, http.StatusOK, code)
	assert.Equal(t, "Healthy\n", body)
	code, body = roundTrip("GET /probe?app=museum-guide HTTP/1.1\r\nHost: exporter\r\n\r\n")
	assert.Equal(t, http.StatusOK, code)
	assert.Contains(t, body, `duix_up{app="museum-guide"} 1`)
}
