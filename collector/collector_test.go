package collector_test

import (
	"context"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/testutil"
	"github.com/prometheus/common/model"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/duix-exporter/duix_exporter/client"
	"github.com/duix-exporter/duix_exporter/collector"
	"github.com/duix-exporter/duix_exporter/config"
	"github.com/duix-exporter/duix_exporter/simulator"
)

var fixedNow = time.Unix(1_800_000_000, 0)

// testClock is the exporter's clock in tests: fixed until advanced.
type testClock struct {
	mu sync.Mutex
	t  time.Time
}

func (c *testClock) now() time.Time { c.mu.Lock(); defer c.mu.Unlock(); return c.t }

func (c *testClock) advance(d time.Duration) {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.t = c.t.Add(d)
}

type env struct {
	sim *simulator.Simulator
	srv *httptest.Server
	cfg *config.Config
	exp *collector.Exporter
	reg *prometheus.Registry
	clk *testClock
}

type appDef struct {
	name, id, key string
	allowance     int
	convs         []string
}

func newEnv(t *testing.T, apps ...appDef) *env {
	t.Helper()
	sim := simulator.New()
	srv := httptest.NewServer(sim)
	t.Cleanup(srv.Close)
	cfg := &config.Config{API: config.DefaultAPI}
	cfg.API.BaseURL = srv.URL + simulator.BasePath
	cfg.API.Timeout = model.Duration(2 * time.Second)
	for _, a := range apps {
		sim.AddApp(simulator.App{ID: a.id, Key: a.key, CorpID: "corp-" + a.name, Allowance: a.allowance})
		for i, c := range a.convs {
			require.NoError(t, sim.AddConversation(a.id, simulator.NewConversation(c, "conv "+c, i+2)))
		}
		cfg.Apps = append(cfg.Apps, config.App{Name: a.name, AppID: a.id, AppKey: "",
			TokenTTL: model.Duration(30 * time.Minute), Conversations: a.convs})
		cfg.Apps[len(cfg.Apps)-1].AppKey = configSecret(a.key)
	}
	reg := prometheus.NewRegistry()
	clk := &testClock{t: fixedNow}
	exp := collector.New(collector.Options{Metrics: client.NewMetrics(reg), Now: clk.now})
	require.NoError(t, exp.Register(reg))
	require.NoError(t, exp.Apply(cfg))
	return &env{sim: sim, srv: srv, cfg: cfg, exp: exp, reg: reg, clk: clk}
}

func (e *env) collector(names ...string) prometheus.Collector {
	return e.exp.Collector(context.Background(), names...)
}

var appMetrics = []string{
	"duix_up", "duix_app_concurrency_limit", "duix_app_concurrency_in_use", "duix_app_active_sessions",
	"duix_app_info", "duix_conversation_max_concurrent", "duix_conversation_info",
	"duix_conversation_active_sessions", "duix_conversation_last_refresh_timestamp_seconds",
}

func TestExpositionForAKnownState(t *testing.T) {
	e := newEnv(t,
		appDef{"alpha", "app-alpha", "key-alpha", 10, []string{"a1", "a2"}},
		appDef{"beta", "app-beta", "key-beta", 3, nil},
	)
	for _, c := range []string{"a1", "a1", "a2", "a-unlisted"} {
		_, err := e.sim.ForceSession("app-alpha", c)
		require.NoError(t, err)
	}
	_, err := e.sim.StartSession("app-beta", "")
	require.NoError(t, err)

	expected := `
# HELP duix_app_active_sessions Active (in-call) sessions of the app: the number of entries in the data of getconcurrentList.
# TYPE duix_app_active_sessions gauge
duix_app_active_sessions{app="alpha"} 4
duix_app_active_sessions{app="beta"} 1
# HELP duix_app_concurrency_in_use Concurrency in use by the app: userConcurrentNumber of getconcurrentNumber.
# TYPE duix_app_concurrency_in_use gauge
duix_app_concurrency_in_use{app="alpha"} 4
duix_app_concurrency_in_use{app="beta"} 1
# HELP duix_app_concurrency_limit Concurrency allowance of the app: totalConcurrentNumber of getconcurrentNumber.
# TYPE duix_app_concurrency_limit gauge
duix_app_concurrency_limit{app="alpha"} 10
duix_app_concurrency_limit{app="beta"} 3
# HELP duix_app_info Facts about the app, value 1: app_id from the configuration, corp_id from cropId of getconcurrentNumber (last value seen).
# TYPE duix_app_info gauge
duix_app_info{app="alpha",app_id="app-alpha",corp_id="corp-alpha"} 1
duix_app_info{app="beta",app_id="app-beta",corp_id="corp-beta"} 1
# HELP duix_conversation_active_sessions Active sessions per conversation: entries of getconcurrentList whose record names the conversation (conversationId); 0 for configured conversations without any.
# TYPE duix_conversation_active_sessions gauge
duix_conversation_active_sessions{app="alpha",conversation_id="a-unlisted"} 1
duix_conversation_active_sessions{app="alpha",conversation_id="a1"} 2
duix_conversation_active_sessions{app="alpha",conversation_id="a2"} 1
# HELP duix_conversation_info Facts about a configured conversation, value 1: conversationName, language, detailDto.modelName and detailDto.ttsName of getConversationById.
# TYPE duix_conversation_info gauge
duix_conversation_info{app="alpha",conversation_id="a1",language="zh",model_name="Lily",name="conv a1",tts_name="guina"} 1
duix_conversation_info{app="alpha",conversation_id="a2",language="zh",model_name="Lily",name="conv a2",tts_name="guina"} 1
# HELP duix_conversation_last_refresh_timestamp_seconds When the details of a configured conversation were last fetched successfully from getConversationById.
# TYPE duix_conversation_last_refresh_timestamp_seconds gauge
duix_conversation_last_refresh_timestamp_seconds{app="alpha",conversation_id="a1"} 1.8e+09
duix_conversation_last_refresh_timestamp_seconds{app="alpha",conversation_id="a2"} 1.8e+09
# HELP duix_conversation_max_concurrent Maximum concurrent conversations of a configured conversation: maxConversation of getConversationById (last good value).
# TYPE duix_conversation_max_concurrent gauge
duix_conversation_max_concurrent{app="alpha",conversation_id="a1"} 2
duix_conversation_max_concurrent{app="alpha",conversation_id="a2"} 3
# HELP duix_up 1 when both getconcurrentNumber and getconcurrentList answered successfully for the app in this scrape, else 0.
# TYPE duix_up gauge
duix_up{app="alpha"} 1
duix_up{app="beta"} 1
`
	require.NoError(t, testutil.CollectAndCompare(e.collector(), strings.NewReader(expected), appMetrics...))
	// Scrape duration is present for each app.
	n, err := testutil.GatherAndCount(gathererOf(e.collector()), "duix_scrape_duration_seconds")
	require.NoError(t, err)
	assert.Equal(t, 2, n)
	// Error counters start at zero for every endpoint the app uses.
	require.NoError(t, testutil.CollectAndCompare(e.collector(), strings.NewReader(
		errorsExposition(map[string][]string{
			"alpha": {client.EndpointConversation, client.EndpointConcurrency, client.EndpointSessions},
			"beta":  {client.EndpointConcurrency, client.EndpointSessions},
		}, nil)), "duix_scrape_errors_total"))
}

// errorsExposition renders duix_scrape_errors_total for the apps' endpoints
// and every reason: 0, except the series named in counts
// ("app/endpoint/reason").
func errorsExposition(apps map[string][]string, counts map[string]int) string {
	var b strings.Builder
	b.WriteString("# HELP duix_scrape_errors_total Failed calls to the platform, by app, endpoint and reason (timeout, http, api, decode, auth, network, rate_limited).\n")
	b.WriteString("# TYPE duix_scrape_errors_total counter\n")
	for app, endpoints := range apps {
		for _, ep := range endpoints {
			for _, r := range client.Reasons {
				fmt.Fprintf(&b, "duix_scrape_errors_total{app=%q,endpoint=%q,reason=%q} %d\n", app, ep, r, counts[app+"/"+ep+"/"+r])
			}
		}
	}
	return b.String()
}

func gathererOf(c prometheus.Collector) prometheus.Gatherer {
	reg := prometheus.NewRegistry()
	reg.MustRegister(c)
	return reg
}

func TestOneFaultyAppDoesNotTouchTheOthers(t *testing.T) {
	e := newEnv(t,
		appDef{"good", "app-good", "key-good", 5, nil},
		appDef{"bad", "app-bad", "key-bad", 5, nil},
	)
	_, err := e.sim.StartSession("app-good", "")
	require.NoError(t, err)
	e.sim.SetFault("app-bad", simulator.EndpointConcurrency, simulator.Fault{Kind: simulator.FaultHTML502})

	expected := `
# HELP duix_up 1 when both getconcurrentNumber and getconcurrentList answered successfully for the app in this scrape, else 0.
# TYPE duix_up gauge
duix_up{app="bad"} 0
duix_up{app="good"} 1
# HELP duix_app_concurrency_in_use Concurrency in use by the app: userConcurrentNumber of getconcurrentNumber.
# TYPE duix_app_concurrency_in_use gauge
duix_app_concurrency_in_use{app="good"} 1
# HELP duix_app_active_sessions Active (in-call) sessions of the app: the number of entries in the data of getconcurrentList.
# TYPE duix_app_active_sessions gauge
duix_app_active_sessions{app="bad"} 0
duix_app_active_sessions{app="good"} 1
`
	endpoints := []string{client.EndpointConcurrency, client.EndpointSessions}
	apps := map[string][]string{"good": endpoints, "bad": endpoints}
	for scrape := 1; scrape <= 2; scrape++ {
		// The counter keeps counting across scrapes; nothing else changes.
		errs := errorsExposition(apps, map[string]int{"bad/getconcurrentNumber/http": scrape})
		require.NoError(t, testutil.CollectAndCompare(e.collector(), strings.NewReader(expected+errs),
			"duix_up", "duix_app_concurrency_in_use", "duix_app_active_sessions", "duix_scrape_errors_total"), "scrape %d", scrape)
	}
}

func TestScrapeTimeoutGivesUpZeroWithReasonTimeout(t *testing.T) {
	e := newEnv(t,
		appDef{"fast", "app-fast", "key-fast", 5, nil},
		appDef{"slow", "app-slow", "key-slow", 5, nil},
	)
	e.sim.SetLatency("app-slow", "", 5*time.Second)
	h := e.exp.MetricsHandler(collector.HandlerOpts{Gatherer: e.reg, TimeoutOffset: 500 * time.Millisecond})
	req := httptest.NewRequest(http.MethodGet, "/metrics", nil)
	req.Header.Set("X-Prometheus-Scrape-Timeout-Seconds", "1")
	rec := httptest.NewRecorder()
	start := time.Now()
	h.ServeHTTP(rec, req)
	elapsed := time.Since(start)
	assert.Less(t, elapsed, time.Second, "answers before Prometheus' own timeout")
	assert.Equal(t, http.StatusOK, rec.Code)
	body := rec.Body.String()
	assert.Contains(t, body, `duix_up{app="fast"} 1`)
	assert.Contains(t, body, `duix_up{app="slow"} 0`)
	assert.Contains(t, body, `duix_scrape_errors_total{app="slow",endpoint="getconcurrentNumber",reason="timeout"} 1`)
	assert.Contains(t, body, `duix_api_requests_total`, "process-wide metrics are served alongside")
}

func TestBadScrapeTimeoutHeaderIsRefused(t *testing.T) {
	e := newEnv(t, appDef{"a", "app-a", "key-a", 5, nil})
	h := e.exp.MetricsHandler(collector.HandlerOpts{})
	req := httptest.NewRequest(http.MethodGet, "/metrics", nil)
	req.Header.Set("X-Prometheus-Scrape-Timeout-Seconds", "soon")
	rec := httptest.NewRecorder()
	h.ServeHTTP(rec, req)
	assert.Equal(t, http.StatusBadRequest, rec.Code)
}

func TestProbe(t *testing.T) {
	e := newEnv(t,
		appDef{"one", "app-one", "key-one", 5, nil},
		appDef{"two", "app-two", "key-two", 5, nil},
	)
	h := e.exp.ProbeHandler(collector.HandlerOpts{Gatherer: e.reg})
	get := func(q string) *httptest.ResponseRecorder {
		rec := httptest.NewRecorder()
		h.ServeHTTP(rec, httptest.NewRequest(http.MethodGet, "/probe"+q, nil))
		return rec
	}
	rec := get("?app=two")
	require.Equal(t, http.StatusOK, rec.Code)
	assert.Contains(t, rec.Body.String(), `duix_up{app="two"} 1`)
	assert.NotContains(t, rec.Body.String(), `app="one"`)
	assert.NotContains(t, rec.Body.String(), "go_goroutines", "only the app's metrics")
	assert.Equal(t, int64(0), e.sim.RequestsFor("app-one", simulator.EndpointConcurrency))

	for _, q := range []string{"", "?app=", "?app=three", "?app=one&app=two", "?target=http://evil.example"} {
		rec := get(q)
		assert.Equal(t, http.StatusBadRequest, rec.Code, q)
		body, _ := io.ReadAll(rec.Body)
		assert.Contains(t, string(body), "app", q)
	}
}

func TestConcurrentScrapesShareUpstreamCalls(t *testing.T) {
	e := newEnv(t, appDef{"a", "app-a", "key-a", 5, nil})
	e.sim.SetLatency("", "", 200*time.Millisecond)
	var wg sync.WaitGroup
	for range 2 {
		wg.Add(1)
		go func() {
			defer wg.Done()
			_, err := testutil.GatherAndCount(gathererOf(e.collector()), "duix_up")
			assert.NoError(t, err)
		}()
	}
	wg.Wait()
	assert.Equal(t, int64(1), e.sim.Requests(simulator.EndpointConcurrency))
	assert.Equal(t, int64(1), e.sim.Requests(simulator.EndpointSessions))
	assert.Equal(t, 1.0, testutil.ToFloat64(sharedCounter(t, e.reg, "in_flight")))
}

func sharedCounter(t *testing.T, g prometheus.Gatherer, how string) prometheus.Collector {
	t.Helper()
	mfs, err := g.Gather()
	require.NoError(t, err)
	for _, mf := range mfs {
		if mf.GetName() != "duix_exporter_shared_fetches_total" {
			continue
		}
		for _, m := range mf.GetMetric() {
			for _, lp := range m.GetLabel() {
				if lp.GetName() == "how" && lp.GetValue() == how {
					return prometheus.NewCounterFunc(prometheus.CounterOpts{Name: "x", Help: "x"}, func() float64 { return m.GetCounter().GetValue() })
				}
			}
		}
	}
	t.Fatalf("no shared fetches counter for %s", how)
	return nil
}

func TestMinIntervalReusesResults(t *testing.T) {
	e := newEnv(t, appDef{"a", "app-a", "key-a", 5, nil})
	cfg := *e.cfg
	cfg.API.MinInterval = model.Duration(time.Hour)
	require.NoError(t, e.exp.Apply(&cfg))
	for range 3 {
		_, err := testutil.GatherAndCount(gathererOf(e.collector()), "duix_up")
		require.NoError(t, err)
	}
	assert.Equal(t, int64(1), e.sim.Requests(simulator.EndpointConcurrency))
	assert.Equal(t, 2.0, testutil.ToFloat64(sharedCounter(t, e.reg, "cached")))
}

func TestConversationDetailsAreCachedAndKeptOnFailure(t *testing.T) {
	e := newEnv(t, appDef{"a", "app-a", "key-a", 5, []string{"c1"}})
	scrape := func() string {
		rec := httptest.NewRecorder()
		e.exp.ProbeHandler(collector.HandlerOpts{}).ServeHTTP(rec, httptest.NewRequest(http.MethodGet, "/probe?app=a", nil))
		return rec.Body.String()
	}
	body := scrape()
	assert.Contains(t, body, `duix_conversation_max_concurrent{app="a",conversation_id="c1"} 2`)
	e.clk.advance(4 * time.Minute)
	scrape()
	assert.Equal(t, int64(1), e.sim.Requests(simulator.EndpointConversation), "refreshed at most every conversation_refresh (5m)")

	// The refresh is due and fails: the last good values stay, with their
	// refresh time.
	e.clk.advance(2 * time.Minute)
	e.sim.SetFault("app-a", simulator.EndpointConversation, simulator.Fault{Kind: simulator.FaultHTTP500})
	body = scrape()
	assert.Equal(t, int64(2), e.sim.Requests(simulator.EndpointConversation))
	assert.Contains(t, body, `duix_conversation_max_concurrent{app="a",conversation_id="c1"} 2`)
	assert.Contains(t, body, `duix_conversation_last_refresh_timestamp_seconds{app="a",conversation_id="c1"} 1.8e+09`)
	assert.Contains(t, body, `duix_scrape_errors_total{app="a",endpoint="getConversationById",reason="http"} 1`)
	assert.Contains(t, body, `duix_up{app="a"} 1`, "a conversation failure does not mark the app down")

	// A failed refresh is retried after a minute, not after the full period.
	e.sim.ClearFaults()
	scrape()
	assert.Equal(t, int64(2), e.sim.Requests(simulator.EndpointConversation))
	e.clk.advance(time.Minute)
	body = scrape()
	assert.Equal(t, int64(3), e.sim.Requests(simulator.EndpointConversation))
	assert.Contains(t, body, `duix_conversation_last_refresh_timestamp_seconds{app="a",conversation_id="c1"} 1.80000042e+09`)
}

func TestRetryAfterMarksAppRateLimited(t *testing.T) {
	e := newEnv(t, appDef{"a", "app-a", "key-a", 5, nil})
	e.sim.SetFault("app-a", simulator.EndpointConcurrency, simulator.Fault{Kind: simulator.FaultRateLimit429, RetryAfter: time.Hour, Times: 1})
	for range 2 {
		_, err := testutil.GatherAndCount(gathererOf(e.collector()), "duix_up")
		require.NoError(t, err)
	}
	expected := `
# HELP duix_up 1 when both getconcurrentNumber and getconcurrentList answered successfully for the app in this scrape, else 0.
# TYPE duix_up gauge
duix_up{app="a"} 0
`
	require.NoError(t, testutil.CollectAndCompare(e.collector(), strings.NewReader(expected), "duix_up"))
	assert.Equal(t, int64(1), e.sim.Requests(simulator.EndpointConcurrency), "no call while Retry-After applies")
	body := scrapeText(t, e.collector())
	// One 429 and three refusals without a call (two scrapes, the compare
	// and this one).
	assert.Contains(t, body, `duix_scrape_errors_total{app="a",endpoint="getconcurrentNumber",reason="rate_limited"} 4`)
	assert.Contains(t, body, `duix_app_rate_limited_until_timestamp_seconds{app="a"}`)
}

func scrapeText(t *testing.T, c prometheus.Collector) string {
	t.Helper()
	srv := httptest.NewServer(promhttpFor(c))
	defer srv.Close()
	resp, err := http.Get(srv.URL)
	require.NoError(t, err)
	defer resp.Body.Close()
	b, err := io.ReadAll(resp.Body)
	require.NoError(t, err)
	return string(b)
}

func TestReloadKeepsStateOfUnchangedApps(t *testing.T) {
	e := newEnv(t, appDef{"a", "app-a", "key-a", 5, []string{"c1"}})
	_, err := testutil.GatherAndCount(gathererOf(e.collector()), "duix_up")
	require.NoError(t, err)
	require.NoError(t, e.exp.Apply(e.cfg))
	_, err = testutil.GatherAndCount(gathererOf(e.collector()), "duix_up")
	require.NoError(t, err)
	assert.Equal(t, int64(1), e.sim.Requests(simulator.EndpointConversation), "conversation details survive a reload")
	assert.Equal(t, []string{"a"}, e.exp.AppNames())
}

func TestConcurrentScrapeLimitIsShared(t *testing.T) {
	e := newEnv(t, appDef{"a", "app-a", "key-a", 5, nil})
	e.sim.SetLatency("", "", 300*time.Millisecond)
	h := e.exp.MetricsHandler(collector.HandlerOpts{MaxRequestsInFlight: 1})
	first := make(chan int)
	go func() {
		rec := httptest.NewRecorder()
		h.ServeHTTP(rec, httptest.NewRequest(http.MethodGet, "/metrics", nil))
		first <- rec.Code
	}()
	require.Eventually(t, func() bool { return e.sim.Requests(simulator.EndpointConcurrency) == 1 }, 5*time.Second, 5*time.Millisecond)
	rec := httptest.NewRecorder()
	h.ServeHTTP(rec, httptest.NewRequest(http.MethodGet, "/metrics", nil))
	assert.Equal(t, http.StatusServiceUnavailable, rec.Code, "a second scrape while the first is in flight")
	assert.Equal(t, http.StatusOK, <-first)
}
