package web

import (
	"bufio"
	"bytes"
	"context"
	"io"
	"net"
	"net/http"
	"net/http/httptest"
	"os"
	"slices"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"
	"unicode"

	dto "github.com/prometheus/client_model/go"
	"github.com/prometheus/common/expfmt"
	"github.com/prometheus/common/model"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/duix-exporter/duix_exporter/config"
	"github.com/duix-exporter/duix_exporter/simulator"
)

func TestMetricsServesEveryAppWithTheProcessMetrics(t *testing.T) {
	p := startPlatform(t)
	s := serve(t, p.Config, Options{})
	m := s.scrape(t, "/metrics")
	for _, app := range []string{"support-desk", "sales-avatar", "museum-guide"} {
		assert.Equal(t, 1.0, m["duix_up"]["app="+app], app)
	}
	assert.Contains(t, m, "go_goroutines", "the process registry is served alongside")
	assert.Equal(t, 1.0, m["duix_exporter_config_last_reload_successful"][""])
	// One registry, whose collectors are collected side by side: a
	// scrape's calls are counted by the time the next scrape reads them.
	var calls float64
	for _, v := range s.scrape(t, "/metrics")["duix_api_requests_total"] {
		calls += v
	}
	assert.GreaterOrEqual(t, calls, 6.0, "the client metrics count the first scrape's calls")
}

func TestProbeServesOneApp(t *testing.T) {
	p := startPlatform(t)
	s := serve(t, p.Config, Options{})
	m := s.scrape(t, "/probe?app=museum-guide")
	assert.Equal(t, map[string]float64{"app=museum-guide": 1}, m["duix_up"])
	assert.NotContains(t, m, "go_goroutines", "only the app's metrics")
	assert.NotContains(t, m, "duix_api_requests_total")
	assert.Zero(t, p.Sim.RequestsFor(p.ID("support-desk"), simulator.EndpointConcurrency), "no other app is called")
}

func TestProbeAcceptsOneConfiguredNameOnly(t *testing.T) {
	p := startPlatform(t)
	s := serve(t, p.Config, Options{})
	long := strings.Repeat("\x1b[31m<script>", 1000)
	for q, want := range map[string]string{
		"":                                     "the app parameter is missing",
		"?app=":                                "the app parameter is missing",
		"?target=https://example.com":          "the app parameter is missing",
		"?app=museum-guide&app=sales-avatar":   "give exactly one app parameter",
		"?app=no-such-app":                     `unknown app "no-such-app": not in the configuration`,
		"?app=%zz":                             "the query does not parse",
		"?app=museum-guide&app=%zz":            "the query does not parse",
		"?app=%zz&app=museum-guide":            "the query does not parse",
		"?app=museum-guide&app=sales-avatar;x": "the query does not parse",
		"?app=museum-guide%00":                 `unknown app "museum-guide\x00"`,
		"?app=museum-guide&app=":               "give exactly one app parameter",
		"?app=museum-guide;app=sales-avatar":   "the query does not parse",
		"?app=MUSEUM-GUIDE":                    `unknown app "MUSEUM-GUIDE"`,
		"?app=" + strings.ReplaceAll(long, "\x1b", "%1b"): `unknown app "\x1b[31m<script>`,
	} {
		code, body := s.get(t, "/probe"+q)
		assert.Equal(t, http.StatusBadRequest, code, q)
		assert.Contains(t, body, want, q)
		assert.NotContains(t, body, "duix_up", q)
		assert.Less(t, len(body), 256, "%.40s: the answer echoes a bounded part of the name", q)
		assert.False(t, strings.ContainsFunc(strings.TrimSuffix(body, "\n"), unicode.IsControl), "%.40s: no control characters", q)
	}
	assert.Zero(t, p.Sim.Requests(simulator.EndpointConcurrency), "a refused probe calls nothing")
}

// One app's platform answers in an hour: at the scrape's deadline it gives
// up, with duix_up 0 for it and nothing counted (its calls go on, bounded
// by api.timeout), and the healthy apps are exact. The deadline (2 s less
// the offset) is far beyond what three calls on loopback take.
func TestScrapeTimeoutGivesUpZeroWithReasonTimeout(t *testing.T) {
	t.Parallel()
	p := startPlatform(t)
	s := serve(t, p.Config, Options{TimeoutOffset: 500 * time.Millisecond})
	p.Sim.SetLatency(p.ID("museum-guide"), "", time.Hour)
	m := s.scrape(t, "/metrics", "X-Prometheus-Scrape-Timeout-Seconds", "2.5")
	assert.Equal(t, 1.0, m["duix_up"]["app=support-desk"])
	assert.Equal(t, 1.0, m["duix_up"]["app=sales-avatar"])
	assert.Equal(t, 0.0, m["duix_up"]["app=museum-guide"])
	// The scrape gave up on its own deadline: its calls go on, bounded by
	// api.timeout, and only their own outcome will count.
	assert.Zero(t, m["duix_scrape_errors_total"]["app=museum-guide,reason=timeout"])
	for _, app := range []string{"support-desk", "sales-avatar"} {
		for labels, v := range m["duix_scrape_errors_total"] {
			if strings.HasPrefix(labels, "app="+app+",") {
				assert.Zero(t, v, labels)
			}
		}
	}
}

func TestBadScrapeTimeoutHeaderIsRefused(t *testing.T) {
	p := startPlatform(t)
	s := serve(t, p.Config, Options{TimeoutOffset: 500 * time.Millisecond})
	for _, v := range []string{"soon", "NaN", "nan", "+Inf", "-Inf", "Infinity", "-1", "0", "-0", "3600.5", "1e309", "0x10", "1 0", strings.Repeat("9", 10000)} {
		for _, path := range []string{"/metrics", "/probe?app=museum-guide"} {
			code, body := s.get(t, path, "X-Prometheus-Scrape-Timeout-Seconds", v)
			assert.Equal(t, http.StatusBadRequest, code, "%.20s", v)
			assert.Contains(t, body, "invalid X-Prometheus-Scrape-Timeout-Seconds", "%.20s", v)
			assert.Less(t, len(body), 256, "%.20s: the answer echoes a bounded part of the header", v)
		}
	}
	// Given twice, even once well: refused.
	code, body := s.get(t, "/metrics", "X-Prometheus-Scrape-Timeout-Seconds", "10", "X-Prometheus-Scrape-Timeout-Seconds", "NaN")
	assert.Equal(t, http.StatusBadRequest, code)
	assert.Contains(t, body, "give it once")
	// Too short to make a call once the offset is subtracted, however
	// much shorter than the offset (a scrape never outlasts Prometheus'
	// timeout less the offset).
	for _, v := range []string{"1e-9", "0.000000001", "0.05", "0.099", "0.3", "0.5", "0.55", "0.599", "0.599999999"} {
		code, body := s.get(t, "/metrics", "X-Prometheus-Scrape-Timeout-Seconds", v)
		assert.Equal(t, http.StatusBadRequest, code, v)
		assert.Equal(t, "scrape timeout too short: at least 100ms after --scrape.timeout-offset\n", body, v)
	}
	assert.Zero(t, p.Sim.Requests(simulator.EndpointConcurrency), "a refused scrape calls nothing")
	assert.Zero(t, p.Sim.Requests(simulator.EndpointSessions))

	// Nothing was counted against the platform.
	m := s.scrape(t, "/metrics")
	for labels, v := range m["duix_scrape_errors_total"] {
		assert.Zero(t, v, labels)
	}
	for app, v := range m["duix_up"] {
		assert.Equal(t, 1.0, v, app)
	}

	for _, v := range []string{"0.6", "3600"} {
		code, _ := s.get(t, "/probe?app=museum-guide", "X-Prometheus-Scrape-Timeout-Seconds", v)
		assert.Equal(t, http.StatusOK, code, v)
	}
}

func TestScrapeTimeout(t *testing.T) {
	for _, tc := range []struct {
		header string
		offset time.Duration
		want   time.Duration
	}{
		{"", 500 * time.Millisecond, DefaultScrapeTimeout},
		{"10", 500 * time.Millisecond, 9500 * time.Millisecond},
		{"0.2", 0, 200 * time.Millisecond},
		{"0.6", 500 * time.Millisecond, 100 * time.Millisecond},
		{"3600", 0, time.Hour},
		{"+5", 0, 5 * time.Second}, // what strconv.ParseFloat reads, as blackbox_exporter
		{"1e1", 0, 10 * time.Second},
	} {
		h := http.Header{}
		if tc.header != "" {
			h.Set("X-Prometheus-Scrape-Timeout-Seconds", tc.header)
		}
		got, err := scrapeTimeout(h, tc.offset)
		require.NoError(t, err, tc.header)
		assert.Equal(t, tc.want, got, tc.header)
	}
}

func TestScrapeLimitIsSharedByMetricsAndProbe(t *testing.T) {
	p := startPlatform(t)
	s := serve(t, p.Config, Options{MaxRequests: 1})
	p.Sim.SetLatency("", "", time.Hour)

	// A scrape holds the only slot until the test cancels it.
	first, cancel := s.scrapeUntilCancelled()
	defer cancel()
	require.Eventually(t, func() bool { return p.Sim.Requests(simulator.EndpointConcurrency) > 0 }, hangTimeout, 5*time.Millisecond)
	for _, path := range []string{"/metrics", "/probe?app=museum-guide"} {
		code, body := s.get(t, path)
		assert.Equal(t, http.StatusServiceUnavailable, code, path)
		assert.Contains(t, body, "Limit of concurrent scrapes reached (1)", path)
	}
	code, _ := s.get(t, "/-/healthy")
	assert.Equal(t, http.StatusOK, code, "the limit is for scrapes only")

	cancel()
	require.Error(t, <-first)
	p.Faults.ClearFaults()
	// The calls of the first scrape go on (a shared call runs to its end):
	// a scrape with a deadline of its own is answered, rather than 503.
	require.Eventually(t, func() bool {
		code, _ := s.get(t, "/probe?app=museum-guide", "X-Prometheus-Scrape-Timeout-Seconds", "2")
		return code == http.StatusOK
	}, hangTimeout, 20*time.Millisecond, "the slot is freed when the scrape ends")
}

// Simultaneous scrapes, in the text and the protobuf formats, read and
// encode the label pairs and values that samples share (the race detector
// is on in make test) and agree on every app's series.
func TestSimultaneousScrapesInBothFormatsAgree(t *testing.T) {
	p := startPlatform(t)
	s := serve(t, p.Config, Options{})
	const protobuf = "application/vnd.google.protobuf;proto=io.prometheus.client.MetricFamily;encoding=delimited"
	type answer struct {
		format expfmt.Format
		body   []byte
		err    error
	}
	answers := make(chan answer, 8)
	for i := range cap(answers) {
		go func() {
			accept := "text/plain;version=0.0.4"
			if i%2 == 1 {
				accept = protobuf
			}
			req, err := http.NewRequest(http.MethodGet, s.url+"/metrics", nil)
			if err != nil {
				answers <- answer{err: err}
				return
			}
			req.Header.Set("Accept", accept)
			resp, err := http.DefaultClient.Do(req)
			if err != nil {
				answers <- answer{err: err}
				return
			}
			defer resp.Body.Close()
			b, err := io.ReadAll(resp.Body)
			answers <- answer{expfmt.ResponseFormat(resp.Header), b, err}
		}()
	}
	formats := map[expfmt.FormatType]int{}
	var limits, info map[string]float64
	for range cap(answers) {
		a := <-answers
		require.NoError(t, a.err)
		formats[a.format.FormatType()]++
		dec := expfmt.NewDecoder(bytes.NewReader(a.body), a.format)
		apps := map[string]map[string]float64{}
		for {
			var mf dto.MetricFamily
			if err := dec.Decode(&mf); err == io.EOF {
				break
			} else {
				require.NoError(t, err)
			}
			apps[mf.GetName()] = values(&mf)
		}
		for _, app := range []string{"support-desk", "sales-avatar", "museum-guide"} {
			assert.Equal(t, 1.0, apps["duix_up"]["app="+app], app)
			assert.Positive(t, apps["duix_app_concurrency_limit"]["app="+app], app)
		}
		if limits == nil {
			limits, info = apps["duix_app_concurrency_limit"], apps["duix_app_info"]
		}
		assert.Equal(t, limits, apps["duix_app_concurrency_limit"], "every answer has the same allowances")
		assert.Equal(t, info, apps["duix_app_info"], "and the same info labels")
	}
	assert.Len(t, info, 3)
	assert.Equal(t, map[expfmt.FormatType]int{expfmt.TypeTextPlain: 4, expfmt.TypeProtoDelim: 4}, formats)
}

// Two Prometheus servers scraping at once cost one set of platform calls:
// the second scrape arrives while the first one's calls are under way (the
// platform answers in an hour), waits its turn and shares them.
func TestSimultaneousScrapesCostOneSetOfCalls(t *testing.T) {
	t.Parallel()
	p := startPlatform(t)
	s := serve(t, p.Config, Options{})
	p.Sim.SetLatency("", "", time.Hour)
	done := make(chan string, 2)
	scrape := func() {
		_, body := s.get(t, "/metrics", "X-Prometheus-Scrape-Timeout-Seconds", "1")
		done <- body
	}
	go scrape()
	require.Eventually(t, func() bool { return p.Sim.Requests(simulator.EndpointConcurrency) == 3 }, hangTimeout, 5*time.Millisecond)
	go scrape()
	bodies := []string{<-done, <-done}
	for _, body := range bodies {
		m := samples(t, body)
		assert.Equal(t, map[string]float64{"app=support-desk": 0, "app=sales-avatar": 0, "app=museum-guide": 0}, m["duix_up"])
	}
	assert.Equal(t, int64(3), p.Sim.Requests(simulator.EndpointConcurrency), "one call per app for both scrapes")
	assert.LessOrEqual(t, p.Sim.Requests(simulator.EndpointSessions), int64(3))
}

// A gathering ends when its scrape's client leaves: a scrape that arrives
// after the client of a scrape with a far deadline (no header: 120 s) left
// is answered by its own deadline, not the other's.
func TestAGatheringEndsWhenItsScrapesLeave(t *testing.T) {
	t.Parallel()
	p := startPlatform(t)
	s := serve(t, p.Config, Options{})
	p.Sim.SetLatency("", "", time.Hour)
	first, cancel := s.scrapeUntilCancelled()
	require.Eventually(t, func() bool { return p.Sim.Requests(simulator.EndpointConcurrency) == 3 }, hangTimeout, 5*time.Millisecond)
	cancel()
	require.Error(t, <-first)
	require.Eventually(t, func() bool {
		code, body := s.get(t, "/metrics", "X-Prometheus-Scrape-Timeout-Seconds", "1")
		return code == http.StatusOK && strings.Contains(body, `duix_up{app="museum-guide"} 0`)
	}, hangTimeout, 20*time.Millisecond, "answered by its own deadline")
}

// A scrape that waits on a slow app (an hour per answer) with a far
// deadline (no header: 120 s) holds no other past its own: scrapes with a
// short timeout, at once, are answered by theirs, with the apps that
// answered up and the slow one down.
func TestALongScrapeHoldsNoShorterOnePastItsDeadline(t *testing.T) {
	t.Parallel()
	s := behindASlowGathering(t)
	bodies := make(chan string, 3)
	for range 3 {
		go func() {
			client := &http.Client{Timeout: hangTimeout / 2} // api.timeout is hangTimeout: the long scrape holds its turn that long
			req, _ := http.NewRequest(http.MethodGet, s.url+"/metrics", nil)
			req.Header.Set("X-Prometheus-Scrape-Timeout-Seconds", "1")
			resp, err := client.Do(req)
			if err != nil {
				bodies <- err.Error()
				return
			}
			defer resp.Body.Close()
			body, _ := io.ReadAll(resp.Body)
			bodies <- strconv.Itoa(resp.StatusCode) + "\n" + string(body)
		}()
	}
	for range 3 {
		code, body, _ := strings.Cut(<-bodies, "\n")
		require.Equal(t, "200", code, "answered by its own deadline")
		assert.Equal(t, map[string]float64{"app=support-desk": 1, "app=sales-avatar": 1, "app=museum-guide": 0}, samples(t, body)["duix_up"])
		assert.Contains(t, body, "go_goroutines", "with the process metrics")
	}
}

// behindASlowGathering serves a platform whose museum-guide answers in an
// hour, with a scrape without a timeout holding the turn, waiting on it,
// until the test ends.
func behindASlowGathering(t *testing.T) *server {
	t.Helper()
	p := startPlatform(t)
	s := serve(t, p.Config, Options{})
	p.Sim.SetLatency(p.ID("museum-guide"), "", time.Hour)
	long, cancel := s.scrapeUntilCancelled()
	t.Cleanup(func() { cancel(); <-long })
	require.Eventually(t, func() bool { return p.Sim.Requests(simulator.EndpointSessions) == 3 }, hangTimeout, 5*time.Millisecond)
	return s
}

// A client that leaves (here: half-closes its request) while another
// scrape holds the turn gets an error, not an empty 200.
func TestAClientThatLeavesWhileItWaitsGetsNoEmptyAnswer(t *testing.T) {
	t.Parallel()
	s := behindASlowGathering(t)
	c, err := net.Dial("tcp", strings.TrimPrefix(s.url, "http://"))
	require.NoError(t, err)
	defer c.Close()
	require.NoError(t, c.SetDeadline(time.Now().Add(hangTimeout)))
	_, err = io.WriteString(c, "GET /metrics HTTP/1.1\r\nHost: x\r\nX-Prometheus-Scrape-Timeout-Seconds: 5\r\n\r\n")
	require.NoError(t, err)
	require.NoError(t, c.(*net.TCPConn).CloseWrite())
	resp, err := http.ReadResponse(bufio.NewReader(c), nil)
	require.NoError(t, err)
	defer resp.Body.Close()
	assert.Equal(t, http.StatusServiceUnavailable, resp.StatusCode)
}

// A client that keeps asking for the shortest scrape timeout the exporter
// accepts cuts short its own gatherings only: scrapes that give the
// platform (400 ms per answer) time see every app up.
func TestAShortScrapeTimeoutDoesNotCutOthersShort(t *testing.T) {
	t.Parallel()
	p := startPlatform(t)
	s := serve(t, p.Config, Options{TimeoutOffset: 500 * time.Millisecond})
	p.Sim.SetLatency("", "", 400*time.Millisecond)
	stop := make(chan struct{})
	var wg sync.WaitGroup
	for range 4 {
		wg.Go(func() {
			for {
				select {
				case <-stop:
					return
				default:
				}
				req, _ := http.NewRequest(http.MethodGet, s.url+"/metrics", nil)
				req.Header.Set("X-Prometheus-Scrape-Timeout-Seconds", "0.6") // 100 ms after the offset
				if resp, err := http.DefaultClient.Do(req); err == nil {
					_, _ = io.Copy(io.Discard, resp.Body)
					resp.Body.Close()
				}
			}
		})
	}
	defer wg.Wait()
	defer close(stop)
	require.Eventually(t, func() bool { return p.Sim.Requests(simulator.EndpointConcurrency) > 0 }, hangTimeout, 5*time.Millisecond)
	for range 5 {
		m := s.scrape(t, "/metrics", "X-Prometheus-Scrape-Timeout-Seconds", "30")
		assert.Equal(t, map[string]float64{"app=support-desk": 1, "app=sales-avatar": 1, "app=museum-guide": 1}, m["duix_up"])
	}
}

// /metrics answers are made gzipped in memory; a client that does not
// accept gzip gets them plain.
func TestMetricsAnswersInTheEncodingAsked(t *testing.T) {
	p := startPlatform(t)
	s := serve(t, p.Config, Options{})
	for _, encoding := range []string{"gzip", "x-gzip", "identity", "", "gzip;q=0", "identity, gzip;q=0", "deflate, GZIP;q=0.5", "gzip;q=0;x=1", "gzip;q=0.5;x=1"} {
		req, err := http.NewRequest(http.MethodGet, s.url+"/metrics", nil)
		require.NoError(t, err)
		req.Header.Set("Accept-Encoding", encoding)
		resp, err := (&http.Transport{DisableCompression: true}).RoundTrip(req)
		require.NoError(t, err)
		body, err := io.ReadAll(resp.Body)
		resp.Body.Close()
		require.NoError(t, err)
		require.Equal(t, http.StatusOK, resp.StatusCode, encoding)
		if strings.HasSuffix(encoding, "gzip") || strings.Contains(encoding, "0.5") {
			assert.Equal(t, "gzip", resp.Header.Get("Content-Encoding"))
			body = gunzip(t, body)
		} else {
			assert.Empty(t, resp.Header.Get("Content-Encoding"), encoding)
		}
		assert.Equal(t, 1.0, samples(t, string(body))["duix_up"]["app=museum-guide"], encoding)
		assert.Contains(t, resp.Header.Get("Content-Type"), "text/plain", encoding)
	}
}

// A client whose scrape has ended before its gathering begins (a request
// half-closed at once) gets every app not yet fetched down; no other
// scrape gets its gathering.
func TestAHalfClosedRequestDoesNotTakeAppsDownForOthers(t *testing.T) {
	t.Parallel()
	p := startPlatform(t)
	p.Sim.SetLatency("", "", 50*time.Millisecond)
	s := serve(t, p.Config, Options{})
	inBackground(t, func() {
		c, err := net.Dial("tcp", strings.TrimPrefix(s.url, "http://"))
		if err != nil {
			return
		}
		_ = c.SetDeadline(time.Now().Add(5 * time.Second))
		_, _ = io.WriteString(c, "GET /metrics HTTP/1.1\r\nHost: x\r\nX-Prometheus-Scrape-Timeout-Seconds: 5\r\n\r\n")
		_ = c.(*net.TCPConn).CloseWrite()
		_, _ = io.Copy(io.Discard, c)
		c.Close()
	})
	for range 20 {
		m := s.scrape(t, "/metrics", "X-Prometheus-Scrape-Timeout-Seconds", "10")
		assert.Equal(t, map[string]float64{"app=support-desk": 1, "app=sales-avatar": 1, "app=museum-guide": 1}, m["duix_up"])
		time.Sleep(20 * time.Millisecond)
	}
}

func TestReload(t *testing.T) {
	p := startPlatform(t)
	s := serve(t, p.Config, Options{})
	code, body := s.do(t, http.MethodPost, "/-/reload")
	assert.Equal(t, http.StatusOK, code)
	assert.Equal(t, "Configuration reloaded\n", body)
	code, _ = s.do(t, http.MethodPut, "/-/reload")
	assert.Equal(t, http.StatusOK, code)

	resp, err := http.Get(s.url + "/-/reload")
	require.NoError(t, err)
	resp.Body.Close()
	assert.Equal(t, http.StatusMethodNotAllowed, resp.StatusCode)
	assert.Equal(t, "POST, PUT", resp.Header.Get("Allow"))

	require.NoError(t, os.WriteFile(p.Config, []byte("apps: [\n"), 0o600))
	code, _ = s.do(t, http.MethodPost, "/-/reload")
	assert.Equal(t, http.StatusInternalServerError, code)
	_, body = s.get(t, "/metrics")
	m := samples(t, body)
	assert.Equal(t, 0.0, m["duix_exporter_config_last_reload_successful"][""])
	assert.Equal(t, 1.0, m["duix_up"]["app=museum-guide"], "the previous configuration stays in use")
}

func TestFailedReloadSaysWhereToLookNotWhy(t *testing.T) {
	p := startPlatform(t)
	s := serve(t, p.Config, Options{})
	good, err := os.ReadFile(p.Config)
	require.NoError(t, err)
	for name, baseURL := range map[string]string{
		"a password and a bad escape": "http://user:SECRET-pass-4f1e@127.0.0.1:1/%zz",
		"a secret in the path":        "http://127.0.0.1:1/SECRET-path-9c2d?x=1",
	} {
		cfg := strings.Replace(string(good), p.Base, baseURL, 1)
		require.NotEqual(t, string(good), cfg)
		require.NoError(t, os.WriteFile(p.Config, []byte(cfg), 0o600))
		code, body := s.do(t, http.MethodPost, "/-/reload")
		assert.Equal(t, http.StatusInternalServerError, code, name)
		assert.Contains(t, body, "Reloading the configuration failed", name)
		assert.Contains(t, body, "log", name)
		assert.Contains(t, body, "duix_exporter_config_last_reload_successful", name)
		for _, never := range []string{"SECRET", "%zz", "invalid URL escape", "query", "base_url", p.Config} {
			assert.NotContains(t, body, never, name)
		}
	}
	logs := s.logs.String()
	assert.Contains(t, logs, "api.base_url: not a valid absolute URL", "the log says why")
	assert.Contains(t, logs, "must not have a query")
	assert.NotContains(t, logs, "SECRET-pass", "a password in base_url is not logged either")
}

func TestABadTelemetryPathIsAnError(t *testing.T) {
	exp := newTestExporter(t, startPlatform(t))
	for _, path := range []string{"metrics", "", "/probe", "/-/reload", "/a b"} {
		_, err := NewHandler(exp, NewRegistries(), func() error { return nil }, Options{TelemetryPath: path})
		assert.ErrorContains(t, err, "telemetry path", path)
	}
	_, err := NewHandler(exp, NewRegistries(), func() error { return nil }, Options{TelemetryPath: "/custom/metrics"})
	assert.NoError(t, err)
}

// A /probe is checked against the configuration its scrape reports: with
// reloads removing and restoring its app all the while, every answer is
// the app's series or 400, never an empty 200.
func TestAProbeRacingAReloadIsNeverEmpty(t *testing.T) {
	t.Parallel()
	p := startPlatform(t)
	s := serve(t, p.Config, Options{})
	full, err := config.Load(p.Config)
	require.NoError(t, err)
	full.API.MinInterval = model.Duration(time.Hour) // the probes reuse one result: only the reloads race
	without := *full
	without.Apps = slices.DeleteFunc(slices.Clone(full.Apps), func(a config.App) bool { return a.Name == "museum-guide" })
	require.NoError(t, s.exp.Apply(full))
	inBackground(t, func() { _, _ = s.exp.Apply(&without), s.exp.Apply(full) })
	codes := map[int]int{}
	for range 300 {
		code, body := s.get(t, "/probe?app=museum-guide")
		codes[code]++
		if code == http.StatusOK {
			require.Contains(t, body, `duix_up{app="museum-guide"}`)
		}
	}
	t.Logf("answers by status: %v", codes)
}

// A handler that fails leaves nothing in the registries it was given: the
// retry that succeeds gathers without error.
func TestAFailedHandlerLeavesTheRegistriesAsTheyWere(t *testing.T) {
	exp := newTestExporter(t, startPlatform(t))
	reg := NewRegistries()
	_, err := NewHandler(exp, reg, func() error { return nil }, Options{TelemetryPath: "metrics"})
	require.Error(t, err)
	h, err := NewHandler(exp, reg, func() error { return nil }, Options{TelemetryPath: "/metrics"})
	require.NoError(t, err)
	for range 2 { // an error of the first gathering is counted in the second's answer
		rec := httptest.NewRecorder()
		h.ServeHTTP(rec, httptest.NewRequest(http.MethodGet, "/metrics", nil))
		require.Equal(t, http.StatusOK, rec.Code)
		m := samples(t, rec.Body.String())
		assert.Equal(t, 1.0, m["duix_up"]["app=support-desk"])
		assert.Zero(t, m["promhttp_metric_handler_errors_total"]["cause=gathering"])
	}
}

// inBackground calls do again and again, beside the test, until it ends.
func inBackground(t *testing.T, do func()) {
	stop, done := make(chan struct{}), make(chan struct{})
	go func() {
		defer close(done)
		for {
			select {
			case <-stop:
				return
			default:
				do()
			}
		}
	}()
	t.Cleanup(func() { close(stop); <-done })
}

// scrapeUntilCancelled scrapes /metrics without a scrape timeout until
// cancel is called; the channel gets the error of reading the answer.
func (s *server) scrapeUntilCancelled() (<-chan error, context.CancelFunc) {
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error, 1)
	go func() {
		req, err := http.NewRequestWithContext(ctx, http.MethodGet, s.url+"/metrics", nil)
		if err == nil {
			var resp *http.Response
			if resp, err = http.DefaultClient.Do(req); err == nil {
				_, err = io.Copy(io.Discard, resp.Body)
				resp.Body.Close()
			}
		}
		done <- err
	}()
	return done, cancel
}
