package collector_test

import (
	"context"
	"fmt"
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
	"github.com/duix-exporter/duix_exporter/internal/platformtest"
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
	sim    *simulator.Simulator
	faults *platformtest.Faults
	gate   *gate
	srv    *httptest.Server
	cfg    *config.Config
	exp    *collector.Exporter
	reg    *prometheus.Registry
	clk    *testClock
}

type appDef struct {
	name, id, key string
	allowance     int
	convs         []string
}

// newEnv serves apps from a simulator, behind a gate that is open.
func newEnv(t *testing.T, apps ...appDef) *env {
	e := newGatedEnv(t, apps...)
	e.gate.release()
	return e
}

// newGatedEnv is newEnv with the gate closed: no call is answered until
// the test releases it.
func newGatedEnv(t *testing.T, apps ...appDef) *env {
	t.Helper()
	clk := &testClock{t: fixedNow}
	sim := simulator.New(simulator.WithClock(clk.now))
	faults := platformtest.New(sim)
	g := newGate(faults)
	srv := httptest.NewServer(g)
	t.Cleanup(srv.Close)
	t.Cleanup(g.release)
	cfg := &config.Config{API: config.DefaultAPI, Sessions: config.DefaultSessions}
	cfg.API.BaseURL = srv.URL + simulator.BasePath
	cfg.API.Timeout = model.Duration(time.Minute)
	for _, a := range apps {
		sim.AddApp(simulator.App{ID: a.id, Key: a.key, CorpID: "corp-" + a.name, Allowance: a.allowance})
		for i, c := range a.convs {
			require.NoError(t, sim.AddConversation(a.id, simulator.NewConversation(c, "conv "+c, i+2)))
		}
		cfg.Apps = append(cfg.Apps, config.App{Name: a.name, AppID: a.id, AppKey: configSecret(a.key),
			TokenTTL: model.Duration(30 * time.Minute), Conversations: a.convs})
	}
	reg := prometheus.NewRegistry()
	exp := collector.New(collector.Options{Metrics: client.NewMetrics(reg), Now: clk.now})
	require.NoError(t, exp.Register(reg))
	require.NoError(t, exp.Apply(cfg))
	return &env{sim: sim, faults: faults, gate: g, srv: srv, cfg: cfg, exp: exp, reg: reg, clk: clk}
}

func (e *env) collector(names ...string) prometheus.Collector {
	return e.exp.Collector(context.Background(), names...)
}

// scrapeText serves one scrape of the named apps (all when none) and
// returns its text exposition.
func (e *env) scrapeText(t *testing.T, ctx context.Context, names ...string) string {
	t.Helper()
	rec := httptest.NewRecorder()
	handlerFor(e.exp, nil, 0, names...).ServeHTTP(rec, httptest.NewRequest(http.MethodGet, "/metrics", nil).WithContext(ctx))
	require.Equal(t, http.StatusOK, rec.Code, rec.Body.String())
	return rec.Body.String()
}

// shared returns duix_exporter_shared_fetches_total{how}.
func (e *env) shared(how string) float64 {
	mfs, err := e.reg.Gather()
	if err != nil {
		return -1
	}
	for _, mf := range mfs {
		if mf.GetName() != "duix_exporter_shared_fetches_total" {
			continue
		}
		for _, m := range mf.GetMetric() {
			if m.GetLabel()[0].GetValue() == how {
				return m.GetCounter().GetValue()
			}
		}
	}
	return 0
}

const (
	helpUp       = "# HELP duix_up 1 when both getconcurrentNumber and getconcurrentList answered successfully for the app in this scrape, else 0.\n# TYPE duix_up gauge\n"
	helpInUse    = "# HELP duix_app_concurrency_in_use Concurrency in use by the app: userConcurrentNumber of getconcurrentNumber.\n# TYPE duix_app_concurrency_in_use gauge\n"
	helpSessions = "# HELP duix_app_active_sessions Active (in-call) sessions of the app: the number of entries in the data of getconcurrentList.\n# TYPE duix_app_active_sessions gauge\n"
	helpErrors   = "# HELP duix_scrape_errors_total Failed calls to the platform for the app (any endpoint), by reason: timeout, http, api, decode, auth, network, rate_limited. A series appears with the first failure of its reason.\n# TYPE duix_scrape_errors_total counter\n"
)

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
# HELP duix_app_errors_total Failed calls to the platform for the app (any endpoint), every reason together; present at 0 from the app's first scrape.
# TYPE duix_app_errors_total counter
duix_app_errors_total{app="alpha"} 0
duix_app_errors_total{app="beta"} 0
# HELP duix_app_info Facts about the app, value 1: app_id from the configuration, corp_id from cropId of getconcurrentNumber (last value seen).
# TYPE duix_app_info gauge
duix_app_info{app="alpha",app_id="app-alpha",corp_id="corp-alpha"} 1
duix_app_info{app="beta",app_id="app-beta",corp_id="corp-beta"} 1
# HELP duix_app_sessions_without_conversation Entries of getconcurrentList whose record names no conversation (no conversationId). While it is above 0 the per-conversation counts are unknown and left out.
# TYPE duix_app_sessions_without_conversation gauge
duix_app_sessions_without_conversation{app="alpha"} 0
duix_app_sessions_without_conversation{app="beta"} 1
# HELP duix_conversation_active_sessions Active sessions of a configured conversation: entries of getconcurrentList whose record names it (conversationId). Absent while any entry of the app names no conversation: the count is then unknown.
# TYPE duix_conversation_active_sessions gauge
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
	names := []string{"duix_up", "duix_app_concurrency_limit", "duix_app_concurrency_in_use", "duix_app_active_sessions",
		"duix_app_info", "duix_conversation_max_concurrent", "duix_conversation_info",
		"duix_conversation_active_sessions", "duix_conversation_last_refresh_timestamp_seconds",
		"duix_scrape_errors_total", "duix_app_errors_total", "duix_app_rate_limited_until_timestamp_seconds", "duix_app_sessions_without_conversation"}
	require.NoError(t, testutil.CollectAndCompare(e.collector(), strings.NewReader(expected), names...))
	n, err := testutil.GatherAndCount(gathererOf(e.collector()), "duix_scrape_duration_seconds")
	require.NoError(t, err)
	assert.Equal(t, 2, n, "scrape duration of each app")
}

func gathererOf(c prometheus.Collector) prometheus.Gatherer {
	reg := prometheus.NewRegistry()
	reg.MustRegister(c)
	return reg
}

// TestSeriesDependOnTheConfigurationAlone: a healthy app costs 8 series,
// each configured conversation 4 more, and the session lifecycle 15 more
// per app when it is on, whatever the platform names in its records.
func TestSeriesDependOnTheConfigurationAlone(t *testing.T) {
	for _, lifecycle := range []bool{false, true} {
		t.Run(fmt.Sprintf("lifecycle=%v", lifecycle), func(t *testing.T) {
			e := newEnv(t,
				appDef{"alpha", "app-alpha", "key-alpha", 5000, []string{"a1", "a2"}},
				appDef{"beta", "app-beta", "key-beta", 5000, nil},
			)
			cfg := *e.cfg
			cfg.Sessions.Lifecycle = lifecycle
			require.NoError(t, e.exp.Apply(&cfg))
			for i := range 2000 {
				_, err := e.sim.ForceSession("app-alpha", fmt.Sprintf("unconfigured-%d", i))
				require.NoError(t, err)
				_, err = e.sim.ForceSession("app-beta", fmt.Sprintf("other-%d", i))
				require.NoError(t, err)
			}
			_, err := e.sim.ForceSession("app-alpha", "a1")
			require.NoError(t, err)
			_, err = e.sim.ForceSession("app-beta", "")
			require.NoError(t, err)
			want := 2*8 + 2*4
			if lifecycle {
				want += 2 * 15
			}
			for range 2 {
				e.clk.advance(time.Minute)
				body := e.scrapeText(t, context.Background())
				assert.Equal(t, want, seriesIn(body), body)
				assert.Contains(t, body, `duix_conversation_active_sessions{app="alpha",conversation_id="a1"} 1`)
				assert.Contains(t, body, `duix_app_active_sessions{app="alpha"} 2001`)
				assert.Contains(t, body, `duix_app_sessions_without_conversation{app="beta"} 1`)
				assert.NotContains(t, body, "unconfigured-")
				assert.NotContains(t, body, "other-")
			}
		})
	}
}

// seriesIn counts the samples of a text exposition.
func seriesIn(body string) int {
	n := 0
	for line := range strings.SplitSeq(body, "\n") {
		if line != "" && !strings.HasPrefix(line, "#") {
			n++
		}
	}
	return n
}

// TestCountsPerConversationOnlyWhenKnown: records that name no
// conversation leave every count of the app's conversations unknown, never
// 0; the app says how many named none.
func TestCountsPerConversationOnlyWhenKnown(t *testing.T) {
	e := newEnv(t, appDef{"a", "app-a", "key-a", 10, []string{"c1"}})
	e.sim.SetSessionConversationIDs(false)
	body := e.scrapeText(t, context.Background())
	assert.Equal(t, "0", sample(body, `duix_conversation_active_sessions{app="a",conversation_id="c1"}`), "no sessions at all: 0 is known")
	assert.Equal(t, "0", sample(body, `duix_app_sessions_without_conversation{app="a"}`))

	for range 2 {
		_, err := e.sim.StartSession("app-a", "c1")
		require.NoError(t, err)
	}
	body = e.scrapeText(t, context.Background())
	assert.Equal(t, "", sample(body, `duix_conversation_active_sessions{app="a",conversation_id="c1"}`), "unknown, not 0")
	assert.Equal(t, "2", sample(body, `duix_app_sessions_without_conversation{app="a"}`))
	assert.Equal(t, "2", sample(body, `duix_app_concurrency_in_use{app="a"}`))
	assert.Equal(t, "2", sample(body, `duix_conversation_max_concurrent{app="a",conversation_id="c1"}`))

	// Records that name their conversation: counted, as before.
	e.sim.SetSessionConversationIDs(true)
	body = e.scrapeText(t, context.Background())
	assert.Equal(t, "2", sample(body, `duix_conversation_active_sessions{app="a",conversation_id="c1"}`))
	assert.Equal(t, "0", sample(body, `duix_app_sessions_without_conversation{app="a"}`))
}

func TestOneFaultyAppDoesNotTouchTheOthers(t *testing.T) {
	e := newEnv(t,
		appDef{"good", "app-good", "key-good", 5, nil},
		appDef{"bad", "app-bad", "key-bad", 5, nil},
	)
	_, err := e.sim.StartSession("app-good", "")
	require.NoError(t, err)
	e.faults.SetFault("app-bad", simulator.EndpointConcurrency, platformtest.Fault{Kind: platformtest.FaultHTML502})

	expected := helpUp + `duix_up{app="bad"} 0
duix_up{app="good"} 1
` + helpInUse + `duix_app_concurrency_in_use{app="good"} 1
` + helpSessions + `duix_app_active_sessions{app="bad"} 0
duix_app_active_sessions{app="good"} 1
`
	for scrape := 1; scrape <= 2; scrape++ {
		// The counter keeps counting across scrapes; nothing else changes.
		errs := helpErrors + fmt.Sprintf("duix_scrape_errors_total{app=\"bad\",reason=\"http\"} %d\n", scrape)
		require.NoError(t, testutil.CollectAndCompare(e.collector(), strings.NewReader(expected+errs),
			"duix_up", "duix_app_concurrency_in_use", "duix_app_active_sessions", "duix_scrape_errors_total"), "scrape %d", scrape)
	}
}

func TestDeadlineGivesUpZeroWithReasonTimeout(t *testing.T) {
	e := newGatedEnv(t,
		appDef{"a", "app-a", "key-a", 5, nil},
		appDef{"b", "app-b", "key-b", 5, nil},
	)
	cfg := *e.cfg
	cfg.API.Timeout = model.Duration(300 * time.Millisecond)
	require.NoError(t, e.exp.Apply(&cfg))
	// The platform never answers: the scrape gives up on its own deadline,
	// for itself, and counts nothing.
	ctx, cancel := context.WithTimeout(context.Background(), 100*time.Millisecond)
	defer cancel()
	body := e.scrapeText(t, ctx)
	assert.Contains(t, body, `duix_up{app="a"} 0`)
	assert.Contains(t, body, `duix_up{app="b"} 0`)
	assert.NotContains(t, body, "duix_scrape_errors_total")
	// The calls go on until api.timeout, and count as timeouts then.
	waitFor(t, "the calls to time out", func() bool {
		st := e.exp.Statuses()
		return strings.HasPrefix(st[0].LastError, "timeout") && strings.HasPrefix(st[1].LastError, "timeout")
	})
	done, stop := context.WithCancel(context.Background())
	stop() // a scrape that calls nothing: what is known
	body = e.scrapeText(t, done)
	assert.Contains(t, body, `duix_scrape_errors_total{app="a",reason="timeout"} 2`)
	assert.Contains(t, body, `duix_scrape_errors_total{app="b",reason="timeout"} 2`)
}

func TestProbeFetchesOnlyItsApp(t *testing.T) {
	e := newEnv(t,
		appDef{"one", "app-one", "key-one", 5, nil},
		appDef{"two", "app-two", "key-two", 5, nil},
	)
	body := e.scrapeText(t, context.Background(), "two")
	assert.Contains(t, body, `duix_up{app="two"} 1`)
	assert.NotContains(t, body, `app="one"`)
	assert.Equal(t, int64(0), e.sim.RequestsFor("app-one", simulator.EndpointConcurrency))
	assert.False(t, e.exp.HasApp("three"))
	assert.True(t, e.exp.HasApp("one"))
}

func TestMinIntervalReusesResults(t *testing.T) {
	e := newEnv(t, appDef{"a", "app-a", "key-a", 5, nil})
	cfg := *e.cfg
	cfg.API.MinInterval = model.Duration(time.Hour)
	require.NoError(t, e.exp.Apply(&cfg))
	for range 3 {
		e.scrapeText(t, context.Background())
	}
	assert.Equal(t, int64(1), e.sim.Requests(simulator.EndpointConcurrency))
	assert.Equal(t, 2.0, e.shared("cached"))
	e.clk.advance(time.Hour)
	e.scrapeText(t, context.Background())
	assert.Equal(t, int64(2), e.sim.Requests(simulator.EndpointConcurrency))
}

func TestConversationDetailsAreCachedAndKeptOnFailure(t *testing.T) {
	e := newEnv(t, appDef{"a", "app-a", "key-a", 5, []string{"c1"}})
	scrape := func() string { return e.scrapeText(t, context.Background(), "a") }
	body := scrape()
	assert.Contains(t, body, `duix_conversation_max_concurrent{app="a",conversation_id="c1"} 2`)
	e.clk.advance(4 * time.Minute)
	scrape()
	assert.Equal(t, int64(1), e.sim.Requests(simulator.EndpointConversation), "refreshed at most every conversation_refresh (5m)")

	// The refresh is due and fails: the last good values stay, with their
	// refresh time.
	e.clk.advance(2 * time.Minute)
	e.faults.SetFault("app-a", simulator.EndpointConversation, platformtest.Fault{Kind: platformtest.FaultHTTP500})
	body = scrape()
	assert.Equal(t, int64(2), e.sim.Requests(simulator.EndpointConversation))
	assert.Contains(t, body, `duix_conversation_max_concurrent{app="a",conversation_id="c1"} 2`)
	assert.Contains(t, body, `duix_conversation_last_refresh_timestamp_seconds{app="a",conversation_id="c1"} 1.8e+09`)
	assert.Contains(t, body, `duix_scrape_errors_total{app="a",reason="http"} 1`)
	assert.Contains(t, body, `duix_up{app="a"} 1`, "a conversation failure does not mark the app down")

	// A failed refresh is retried after a minute, not after the full period.
	e.faults.ClearFaults()
	scrape()
	assert.Equal(t, int64(2), e.sim.Requests(simulator.EndpointConversation))
	e.clk.advance(time.Minute)
	body = scrape()
	assert.Equal(t, int64(3), e.sim.Requests(simulator.EndpointConversation))
	assert.Contains(t, body, `duix_conversation_last_refresh_timestamp_seconds{app="a",conversation_id="c1"} 1.80000042e+09`)
}

func TestRetryAfterMarksAppRateLimited(t *testing.T) {
	e := newEnv(t, appDef{"a", "app-a", "key-a", 5, nil}, appDef{"b", "app-b", "key-b", 5, nil})
	e.faults.SetFault("app-a", "", platformtest.Fault{Kind: platformtest.FaultRateLimit429, RetryAfter: time.Hour})
	body := e.scrapeText(t, context.Background())
	// Each of the two calls got a 429, or was not made after the other's.
	assert.Contains(t, body, `duix_scrape_errors_total{app="a",reason="rate_limited"} 2`)
	assert.Contains(t, body, `duix_app_rate_limited_until_timestamp_seconds{app="a"} 1.8000036e+09`)
	calls := e.sim.RequestsFor("app-a", simulator.EndpointConcurrency) + e.sim.RequestsFor("app-a", simulator.EndpointSessions)
	require.Positive(t, calls)

	e.clk.advance(30 * time.Minute)
	body = e.scrapeText(t, context.Background())
	assert.Contains(t, body, `duix_up{app="a"} 0`)
	assert.Contains(t, body, `duix_scrape_errors_total{app="a",reason="rate_limited"} 4`, "skipped calls count")
	assert.Contains(t, body, `duix_app_errors_total{app="a"} 4`)
	assert.Equal(t, calls, e.sim.RequestsFor("app-a", simulator.EndpointConcurrency)+e.sim.RequestsFor("app-a", simulator.EndpointSessions),
		"no call while Retry-After applies")
	assert.Contains(t, body, `duix_up{app="b"} 1`, "other apps are called")

	e.faults.ClearFaults()
	e.clk.advance(31 * time.Minute)
	body = e.scrapeText(t, context.Background())
	assert.Contains(t, body, `duix_up{app="a"} 1`, "called again once it has passed")
	assert.NotContains(t, body, "duix_app_rate_limited_until_timestamp_seconds")
}

// A reload (SIGHUP, a configuration management tool's) does not end the
// platform's Retry-After: an app whose name and app_id stay is not called
// before it has passed.
func TestRetryAfterOutlivesAReload(t *testing.T) {
	e := newEnv(t, appDef{"a", "app-a", "key-a", 5, nil})
	e.faults.SetFault("app-a", "", platformtest.Fault{Kind: platformtest.FaultRateLimit429, RetryAfter: time.Hour})
	e.scrapeText(t, context.Background())
	calls := e.sim.RequestsFor("app-a", simulator.EndpointConcurrency) + e.sim.RequestsFor("app-a", simulator.EndpointSessions)
	require.Positive(t, calls)

	require.NoError(t, e.exp.Apply(e.cfg))
	e.clk.advance(30 * time.Minute)
	body := e.scrapeText(t, context.Background())
	assert.Contains(t, body, `duix_app_rate_limited_until_timestamp_seconds{app="a"} 1.8000036e+09`)
	assert.Equal(t, calls, e.sim.RequestsFor("app-a", simulator.EndpointConcurrency)+e.sim.RequestsFor("app-a", simulator.EndpointSessions),
		"no call while Retry-After applies, reload or not")

	e.faults.ClearFaults()
	e.clk.advance(31 * time.Minute)
	assert.Contains(t, e.scrapeText(t, context.Background()), `duix_up{app="a"} 1`, "called again once it has passed")
}

func TestReloadKeepsStateOfUnchangedApps(t *testing.T) {
	e := newEnv(t, appDef{"a", "app-a", "key-a", 5, []string{"c1"}}, appDef{"b", "app-b", "key-b", 5, nil})
	e.faults.SetFault("app-a", simulator.EndpointSessions, platformtest.Fault{Kind: platformtest.FaultHTTP500, Times: 1})
	e.scrapeText(t, context.Background())
	require.NoError(t, e.exp.Apply(e.cfg))
	body := e.scrapeText(t, context.Background())
	assert.Equal(t, int64(1), e.sim.Requests(simulator.EndpointConversation), "conversation details survive a reload")
	assert.Contains(t, body, `duix_scrape_errors_total{app="a",reason="http"} 1`, "error counts survive a reload")

	// An app that leaves the configuration leaves with its state.
	cfg := *e.cfg
	cfg.Apps = cfg.Apps[1:]
	require.NoError(t, e.exp.Apply(&cfg))
	assert.False(t, e.exp.HasApp("a"))
	assert.NotContains(t, e.scrapeText(t, context.Background()), `app="a"`)
	require.NoError(t, e.exp.Apply(e.cfg))
	assert.NotContains(t, e.scrapeText(t, context.Background()), `reason="http"`, "a returning app starts afresh")
}

func TestStatuses(t *testing.T) {
	e := newEnv(t, appDef{"a", "app-a", "key-a", 5, nil}, appDef{"b", "app-b", "key-b", 7, nil})
	e.faults.SetFault("app-b", simulator.EndpointSessions, platformtest.Fault{Kind: platformtest.FaultHTTP500})
	st := e.exp.Statuses()
	require.Len(t, st, 2)
	assert.Equal(t, collector.Status{Name: "a", AppID: "app-a"}, st[0], "nothing known before a scrape")
	e.scrapeText(t, context.Background())
	st = e.exp.Statuses()
	assert.True(t, st[0].Up)
	assert.Equal(t, int64(5), st[0].Limit)
	assert.True(t, st[0].HasSessions)
	assert.False(t, st[1].Up)
	assert.Equal(t, int64(7), st[1].Limit)
	assert.False(t, st[1].HasSessions)
	assert.True(t, strings.HasPrefix(st[1].LastError, "http: "), st[1].LastError)
}

// An app's calls are made at once when max_concurrency allows: the
// platform holds every answer until all six calls of the app (two, and
// four conversations due at the first scrape) have arrived.
func TestTheCallsOfOneAppAreMadeAtOnce(t *testing.T) {
	e := newGatedEnv(t, appDef{"a", "app-a", "key-a", 5, []string{"c1", "c2", "c3", "c4"}})
	scrape := e.scrapeAsync(t, context.Background())
	waitFor(t, "all six calls reach the platform", func() bool { return e.gate.arrived.Load() == 6 })
	e.gate.release()
	lines := strings.Split(receive(t, scrape), "\n")
	assert.Contains(t, lines, `duix_up{app="a"} 1`)
	assert.Contains(t, lines, `duix_conversation_max_concurrent{app="a",conversation_id="c4"} 5`)
}
