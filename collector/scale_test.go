package collector_test

import (
	"bytes"
	"context"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/testutil"
	dto "github.com/prometheus/client_model/go"
	"github.com/prometheus/common/expfmt"
	"github.com/prometheus/common/model"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/duix-exporter/duix_exporter/collector"
	"github.com/duix-exporter/duix_exporter/simulator"
)

// manyApps returns app definitions named so that their name order differs
// from their configuration order, each with two conversations listed out
// of order.
func manyApps(n int) []appDef {
	apps := make([]appDef, n)
	for i := range apps {
		apps[i] = appDef{
			name: fmt.Sprintf("app-%03d", (i*37)%n), id: fmt.Sprintf("id-%03d", i), key: fmt.Sprintf("key-%03d", i),
			allowance: 5, convs: []string{fmt.Sprintf("c%03d-b", i), fmt.Sprintf("c%03d-a", i)},
		}
	}
	return apps
}

// scrapeHandler serves one request to h and returns the status and body.
func scrapeHandler(h http.Handler, target string) (int, string) {
	rec := httptest.NewRecorder()
	h.ServeHTTP(rec, httptest.NewRequest(http.MethodGet, target, nil))
	return rec.Code, rec.Body.String()
}

func TestConcurrentScrapesOfManyAppsMakeOneCallPerEndpointPerApp(t *testing.T) {
	const n = 60
	apps := manyApps(n)
	e := newEnv(t, apps...)
	setMaxConcurrency(t, e, 4) // the calls queue: the second scrape finds most of them not even started
	e.sim.SetLatency("", "", 20*time.Millisecond)
	h := e.exp.MetricsHandler(collector.HandlerOpts{Gatherer: e.reg})

	var (
		wg     sync.WaitGroup
		bodies [2]string
	)
	wg.Add(2)
	go func() {
		defer wg.Done()
		_, bodies[0] = scrapeHandler(h, "/metrics")
	}()
	// The second scrape starts once the first one's calls are under way.
	require.Eventually(t, func() bool { return e.sim.Requests(simulator.EndpointConcurrency) > 0 }, 10*time.Second, time.Millisecond)
	go func() {
		defer wg.Done()
		_, bodies[1] = scrapeHandler(h, "/metrics")
	}()
	wg.Wait()

	for _, a := range apps {
		for _, ep := range []string{simulator.EndpointConcurrency, simulator.EndpointSessions} {
			assert.Equal(t, int64(1), e.sim.RequestsFor(a.id, ep), "%s %s", a.name, ep)
		}
	}
	assert.Equal(t, int64(2*n), e.sim.Requests(simulator.EndpointConversation), "each conversation fetched once")
	assert.Equal(t, float64(n), testutil.ToFloat64(sharedCounter(t, e.reg, "in_flight")), "the second scrape joined every app")
	for i, body := range bodies {
		up := upValues(t, strings.NewReader(body))
		assert.Len(t, up, n, "scrape %d", i)
		for app, v := range up {
			assert.Equal(t, "1", v, "scrape %d, %s", i, app)
		}
	}
}

func TestProbeAndMetricsShareCalls(t *testing.T) {
	apps := manyApps(10)
	e := newEnv(t, apps...)
	e.sim.SetLatency("", "", 100*time.Millisecond)
	metrics := e.exp.MetricsHandler(collector.HandlerOpts{Gatherer: e.reg})
	probe := e.exp.ProbeHandler(collector.HandlerOpts{Gatherer: e.reg})
	target := apps[3]

	var (
		wg                     sync.WaitGroup
		probeCode, metricsCode int
		probeBody, mBody       string
	)
	wg.Add(2)
	go func() {
		defer wg.Done()
		metricsCode, mBody = scrapeHandler(metrics, "/metrics")
	}()
	require.Eventually(t, func() bool { return e.sim.Requests(simulator.EndpointConcurrency) > 0 }, 10*time.Second, time.Millisecond)
	go func() {
		defer wg.Done()
		probeCode, probeBody = scrapeHandler(probe, "/probe?app="+target.name)
	}()
	wg.Wait()

	require.Equal(t, http.StatusOK, metricsCode)
	require.Equal(t, http.StatusOK, probeCode)
	assert.Len(t, upValues(t, strings.NewReader(mBody)), len(apps))
	assert.Equal(t, map[string]string{target.name: "1"}, upValues(t, strings.NewReader(probeBody)))
	for _, ep := range []string{simulator.EndpointConcurrency, simulator.EndpointSessions} {
		assert.Equal(t, int64(1), e.sim.RequestsFor(target.id, ep), ep)
	}
	assert.Equal(t, 1.0, testutil.ToFloat64(sharedCounter(t, e.reg, "in_flight")), "the probe joined the scrape's calls")
}

// TestHandlerExpositionMatchesTheRegistry checks that the handler, which
// builds the samples already in order, serves exactly what a pedantic
// registry makes of the same samples after its own checks and sorting.
func TestHandlerExpositionMatchesTheRegistry(t *testing.T) {
	apps := manyApps(12)
	e := newEnv(t, apps...)
	cfg := *e.cfg
	cfg.API.MinInterval = model.Duration(time.Hour) // both expositions show the same fetch
	require.NoError(t, e.exp.Apply(&cfg))
	for i, a := range apps {
		// Sessions on configured conversations and on others that sort
		// before, between and after them.
		for _, conv := range []string{a.convs[0], a.convs[1], a.convs[1], "a-before", "c" + a.id[3:] + "-ab", "z-after", ""} {
			_, err := e.sim.ForceSession(a.id, conv)
			require.NoError(t, err)
		}
		switch i % 4 {
		case 1:
			e.sim.SetFault(a.id, simulator.EndpointConcurrency, simulator.Fault{Kind: simulator.FaultHTTP500})
		case 2:
			e.sim.SetFault(a.id, simulator.EndpointSessions, simulator.Fault{Kind: simulator.FaultRateLimit429, RetryAfter: time.Hour})
		case 3:
			e.sim.SetFault(a.id, simulator.EndpointConversation, simulator.Fault{Kind: simulator.FaultTruncatedJSON})
		}
	}
	require.NoError(t, e.sim.AddConversation(apps[0].id, simulator.Conversation{
		ID: apps[0].convs[1], ConversationName: "quote \" backslash \\ newline \n end", Language: "zh", MaxConversation: 3,
	}))

	code, served := scrapeHandler(e.exp.ProbeHandler(collector.HandlerOpts{}), "/probe?app="+apps[0].name)
	require.Equal(t, http.StatusOK, code)
	assert.Contains(t, served, `name="quote \" backslash \\ newline \n end"`)

	req := httptest.NewRequest(http.MethodGet, "/metrics", nil)
	rec := httptest.NewRecorder()
	e.exp.MetricsHandler(collector.HandlerOpts{}).ServeHTTP(rec, req)
	require.Equal(t, http.StatusOK, rec.Code)
	served = rec.Body.String()

	reg := prometheus.NewPedanticRegistry()
	require.NoError(t, reg.Register(e.exp.Collector(context.Background())))
	mfs, err := reg.Gather()
	require.NoError(t, err)
	var want bytes.Buffer
	enc := expfmt.NewEncoder(&want, expfmt.NegotiateAccept(req.Header, expfmt.DefaultAcceptedFormats()...))
	for _, mf := range mfs {
		require.NoError(t, enc.Encode(mf))
	}
	assert.True(t, want.String() == served, "the handler and the registry disagree:\n%s", lineDiff(want.String(), served))
	for _, must := range []string{
		"duix_app_rate_limited_until_timestamp_seconds{", `reason="rate_limited"} 1`, `reason="http"} 1`,
		`reason="decode"} 2`, `conversation_id="z-after"} 1`, `conversation_id="a-before"} 1`,
	} {
		assert.True(t, strings.Contains(served, must), "the exposition shows %s", must)
	}
}

// inFlight counts the requests a handler is serving at once.
type inFlight struct {
	h        http.Handler
	now, max atomic.Int64
}

func (f *inFlight) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	n := f.now.Add(1)
	defer f.now.Add(-1)
	for {
		m := f.max.Load()
		if n <= m || f.max.CompareAndSwap(m, n) {
			break
		}
	}
	f.h.ServeHTTP(w, r)
}

func TestMaxConcurrencyBoundsCallsAcrossScrapes(t *testing.T) {
	apps := manyApps(20)
	e := newEnv(t, apps...)
	counted := &inFlight{h: e.sim}
	srv := httptest.NewServer(counted)
	t.Cleanup(srv.Close)
	cfg := *e.cfg
	cfg.API.BaseURL = srv.URL + simulator.BasePath
	cfg.API.MaxConcurrency = 3
	require.NoError(t, e.exp.Apply(&cfg))
	e.sim.SetLatency("", "", 10*time.Millisecond)

	metrics := e.exp.MetricsHandler(collector.HandlerOpts{})
	probe := e.exp.ProbeHandler(collector.HandlerOpts{})
	var wg sync.WaitGroup
	for i := range 6 {
		wg.Add(1)
		go func() {
			defer wg.Done()
			var code int
			if i%2 == 0 {
				code, _ = scrapeHandler(metrics, "/metrics")
			} else {
				code, _ = scrapeHandler(probe, "/probe?app="+apps[i].name)
			}
			assert.Equal(t, http.StatusOK, code)
		}()
	}
	wg.Wait()
	assert.LessOrEqual(t, counted.max.Load(), int64(3))
	assert.Positive(t, counted.max.Load())
	assert.GreaterOrEqual(t, e.sim.Requests(simulator.EndpointConcurrency), int64(len(apps)))
}

func TestOutOfTimeScrapeOfManyQueuedAppsAnswersPromptly(t *testing.T) {
	apps := manyApps(40)
	e := newEnv(t, apps...)
	setMaxConcurrency(t, e, 2)
	e.sim.SetLatency("", "", 3*time.Second)
	h := e.exp.MetricsHandler(collector.HandlerOpts{TimeoutOffset: 500 * time.Millisecond})

	req := httptest.NewRequest(http.MethodGet, "/metrics", nil)
	req.Header.Set("X-Prometheus-Scrape-Timeout-Seconds", "1")
	rec := httptest.NewRecorder()
	start := time.Now()
	h.ServeHTTP(rec, req)
	// 40 apps waiting in turn for a grace period each would take 4 s more.
	assert.Less(t, time.Since(start), 3*time.Second)
	require.Equal(t, http.StatusOK, rec.Code)
	up := upValues(t, rec.Body)
	assert.Len(t, up, len(apps))
	for app, v := range up {
		assert.Equal(t, "0", v, app)
	}
}

// upValues reads the duix_up samples of an exposition: app -> value.
func upValues(t *testing.T, r io.Reader) map[string]string {
	t.Helper()
	b, err := io.ReadAll(r)
	require.NoError(t, err)
	out := map[string]string{}
	for line := range strings.SplitSeq(string(b), "\n") {
		rest, ok := strings.CutPrefix(line, `duix_up{app="`)
		if !ok {
			continue
		}
		app, v, ok := strings.Cut(rest, `"} `)
		require.True(t, ok, line)
		out[app] = v
	}
	return out
}

// lineDiff lists the first lines where two expositions differ.
func lineDiff(want, got string) string {
	w, g := strings.Split(want, "\n"), strings.Split(got, "\n")
	var b strings.Builder
	for i := 0; i < max(len(w), len(g)) && b.Len() < 2000; i++ {
		var wl, gl string
		if i < len(w) {
			wl = w[i]
		}
		if i < len(g) {
			gl = g[i]
		}
		if wl != gl {
			fmt.Fprintf(&b, "line %d:\n  registry: %s\n  handler:  %s\n", i+1, wl, gl)
		}
	}
	return b.String()
}

// TestConcurrentProtobufScrapes encodes the label pairs shared by every
// scrape (built once per app) from several scrapes at once, in the format
// that writes protobuf size caches: the race detector watches.
func TestConcurrentProtobufScrapes(t *testing.T) {
	apps := manyApps(5)
	e := newEnv(t, apps...)
	metrics := e.exp.MetricsHandler(collector.HandlerOpts{Gatherer: e.reg})
	probe := e.exp.ProbeHandler(collector.HandlerOpts{})
	var wg sync.WaitGroup
	for i := range 6 {
		wg.Add(1)
		go func() {
			defer wg.Done()
			h, target := metrics, "/metrics"
			if i%2 == 1 {
				h, target = probe, "/probe?app="+apps[i%len(apps)].name
			}
			req := httptest.NewRequest(http.MethodGet, target, nil)
			req.Header.Set("Accept", string(expfmt.NewFormat(expfmt.TypeProtoDelim)))
			rec := httptest.NewRecorder()
			h.ServeHTTP(rec, req)
			assert.Equal(t, http.StatusOK, rec.Code)
			assert.Contains(t, rec.Header().Get("Content-Type"), "application/vnd.google.protobuf")
			n := 0
			dec := expfmt.NewDecoder(rec.Body, expfmt.NewFormat(expfmt.TypeProtoDelim))
			for {
				var mf dto.MetricFamily
				if err := dec.Decode(&mf); err != nil {
					assert.ErrorIs(t, err, io.EOF)
					break
				}
				if mf.GetName() == "duix_up" {
					n += len(mf.GetMetric())
				}
			}
			assert.Positive(t, n)
		}()
	}
	wg.Wait()
}

func TestOutOfTimeScrapeDoesNotWaitForCallsOfALongerScrape(t *testing.T) {
	apps := manyApps(3)
	e := newEnv(t, apps...)
	setMaxConcurrency(t, e, 1)
	e.sim.SetLatency("", "", 2*time.Second)
	h := e.exp.MetricsHandler(collector.HandlerOpts{TimeoutOffset: 500 * time.Millisecond})

	// A scrape without a deadline of its own leads every call: 6 calls of
	// 2 s, one at a time.
	ctx, cancel := context.WithCancel(context.Background())
	long := make(chan struct{})
	go func() {
		defer close(long)
		rec := httptest.NewRecorder()
		h.ServeHTTP(rec, httptest.NewRequest(http.MethodGet, "/metrics", nil).WithContext(ctx))
	}()
	t.Cleanup(func() { cancel(); <-long })
	require.Eventually(t, func() bool { return e.sim.Requests(simulator.EndpointConcurrency) > 0 }, 10*time.Second, time.Millisecond)

	// A scrape with half a second joins them all, and gives up on them.
	req := httptest.NewRequest(http.MethodGet, "/metrics", nil)
	req.Header.Set("X-Prometheus-Scrape-Timeout-Seconds", "1")
	rec := httptest.NewRecorder()
	start := time.Now()
	h.ServeHTTP(rec, req)
	assert.Less(t, time.Since(start), 3*time.Second, "answers before the first joined app (two 2 s calls) is done")
	require.Equal(t, http.StatusOK, rec.Code)
	up := upValues(t, rec.Body)
	assert.Len(t, up, len(apps))
	for app, v := range up {
		assert.Equal(t, "0", v, app)
	}
}

// setMaxConcurrency applies the environment's configuration with another
// api.max_concurrency.
func setMaxConcurrency(t *testing.T, e *env, n int) {
	t.Helper()
	cfg := *e.cfg
	cfg.API.MaxConcurrency = n
	require.NoError(t, e.exp.Apply(&cfg))
}
