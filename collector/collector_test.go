package collector_test

import (
	"context"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"runtime"
	"strings"
	"sync"
	"sync/atomic"
	"syscall"
	"testing"
	"time"
	"weak"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/testutil"
	promconfig "github.com/prometheus/common/config"
	"github.com/prometheus/common/expfmt"
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

type env struct {
	sim    *simulator.Simulator
	faults *platformtest.Faults
	gate   *gate
	srv    *httptest.Server
	cfg    *config.Config
	exp    *collector.Exporter
	reg    *prometheus.Registry
	clk    *simulator.Clock
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
	clk := simulator.NewClock(fixedNow)
	sim := simulator.New(simulator.WithClock(clk.Now))
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
	exp := collector.New(collector.Options{Metrics: client.NewMetrics(reg), Now: clk.Now})
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

// A slow conversation refresh does not hold back the app's result: a
// request that leaves at its deadline, once getconcurrentNumber and
// getconcurrentList have answered, reports the app up with its figures
// while the refresh goes on; so does one that arrives during the refresh,
// with calls of its own; a later scrape has the details.
func TestASlowConversationRefreshDoesNotTakeTheAppDown(t *testing.T) {
	e := newGatedEnv(t, appDef{"a", "1790000000000000001", "KEY-a", 3, []string{"c1"}})
	conversations := func(r *http.Request) bool { return strings.HasSuffix(r.URL.Path, "/"+client.EndpointConversation) }
	e.gate.holds.Store(&conversations)

	for limit := int64(3); limit <= 4; limit++ {
		e.sim.AddApp(simulator.App{ID: "1790000000000000001", Key: "KEY-a", CorpID: "corp-a", Allowance: int(limit)})
		ctx, leave := context.WithCancel(context.Background())
		rec := httptest.NewRecorder()
		done := make(chan struct{})
		go func() {
			defer close(done)
			handlerFor(e.exp, nil, 0).ServeHTTP(rec, httptest.NewRequest(http.MethodGet, "/metrics", nil).WithContext(ctx))
		}()
		require.Eventually(t, func() bool { s := e.exp.Statuses(); return len(s) == 1 && s[0].Up && s[0].Limit == limit }, time.Minute, time.Millisecond,
			"the result is recorded while the refresh is held")
		require.Eventually(t, func() bool { return e.gate.arrived.Load() == 1 }, time.Minute, time.Millisecond, "one refresh under way")
		leave() // the request's deadline
		<-done
		assert.Contains(t, rec.Body.String(), `duix_up{app="a"} 1`)
		assert.Contains(t, rec.Body.String(), fmt.Sprintf(`duix_app_concurrency_limit{app="a"} %d`, limit))
		assert.NotContains(t, rec.Body.String(), "duix_conversation_info", "not known yet")
	}

	e.gate.release() // the refresh lands, in its own time: a scrape after it has the details
	assert.Eventually(t, func() bool {
		return strings.Contains(e.scrapeText(t, context.Background()), `duix_conversation_max_concurrent{app="a",conversation_id="c1"} 2`)
	}, time.Minute, time.Millisecond)
}

// api.max_concurrency bounds the calls in flight across reloads: a reload
// that keeps the bound keeps the slots that the calls under way hold.
func TestAReloadKeepsTheSlotsOfTheCallsUnderWay(t *testing.T) {
	e := newGatedEnv(t, appDef{name: "a", id: "1790000000000000001", key: "KEY-a", allowance: 3},
		appDef{name: "b", id: "1790000000000000002", key: "KEY-b", allowance: 3})
	cfg := *e.cfg
	cfg.API.MaxConcurrency = 2
	require.NoError(t, e.exp.Apply(&cfg))
	scrape := func(names ...string) chan struct{} {
		done := make(chan struct{})
		go func() {
			defer close(done)
			handlerFor(e.exp, nil, 0, names...).ServeHTTP(httptest.NewRecorder(), httptest.NewRequest(http.MethodGet, "/metrics", nil))
		}()
		return done
	}
	first := scrape("a")
	require.Eventually(t, func() bool { return e.gate.arrived.Load() == 2 }, time.Minute, time.Millisecond, "a's two calls hold both slots")
	for range 3 {
		require.NoError(t, e.exp.Apply(&cfg))
	}
	second := scrape("b")
	require.Never(t, func() bool { return e.gate.arrived.Load() > 2 }, 300*time.Millisecond, 5*time.Millisecond, "b's calls wait for a slot")
	e.gate.release()
	<-first
	<-second
	assert.EqualValues(t, 4, e.gate.arrived.Load())
}

// duix_app_errors_total is 0 in the app's first scrape even when its
// first calls fail, so that increase() sees those failures; and corp_id is
// the last cropId seen, kept when an answer has none.
func TestAppErrorsStartAtZeroAndCorpIDIsTheLastSeen(t *testing.T) {
	e := newEnv(t, appDef{name: "a", id: "1790000000000000001", key: "KEY-a", allowance: 3})
	e.faults.SetFault("1790000000000000001", client.EndpointConcurrency, platformtest.Fault{Kind: platformtest.FaultHTTP500, Times: 1})
	body := e.scrapeText(t, context.Background())
	assert.Contains(t, body, `duix_up{app="a"} 0`)
	assert.Contains(t, body, `duix_app_errors_total{app="a"} 0`)
	e.clk.Add(time.Minute)
	body = e.scrapeText(t, context.Background())
	assert.Contains(t, body, `duix_app_errors_total{app="a"} 1`, "the first failure, seen by increase()")
	assert.Contains(t, body, `corp_id="corp-a"`)

	e.sim.AddApp(simulator.App{ID: "1790000000000000001", Key: "KEY-a", Allowance: 3}) // no cropId any more
	e.clk.Add(time.Minute)
	body = e.scrapeText(t, context.Background())
	assert.Contains(t, body, `duix_up{app="a"} 1`)
	assert.Contains(t, body, `corp_id="corp-a"`, "the last value seen")
}

// Platform text in a label is at most 256 bytes, cut where a
// character begins.
func TestCorpIDIsBoundedValidUTF8(t *testing.T) {
	for corp, want := range map[string]string{
		strings.Repeat("c", 256):       strings.Repeat("c", 256),
		strings.Repeat("c", 257):       strings.Repeat("c", 256),
		strings.Repeat("c", 255) + "é": strings.Repeat("c", 255),
	} {
		e := newEnv(t, appDef{name: "a", id: "1", key: "KEY-a", allowance: 3})
		e.sim.AddApp(simulator.App{ID: "1", Key: "KEY-a", Allowance: 3, CorpID: corp})
		body := e.scrapeText(t, context.Background())
		assert.Contains(t, body, `duix_app_info{app="a",app_id="1",corp_id="`+want+`"} 1`, "cropId %q", corp)
	}
}

// TestSeriesDependOnTheConfigurationAlone: a healthy app costs 8 series,
// each configured conversation 4 more, and the session lifecycle 16 more
// per app when it is on, whatever the platform names in its records and
// however many of them the lifecycle leaves untracked.
func TestSeriesDependOnTheConfigurationAlone(t *testing.T) {
	for _, lifecycle := range []bool{false, true} {
		t.Run(fmt.Sprintf("lifecycle=%v", lifecycle), func(t *testing.T) {
			e := newEnv(t,
				appDef{"alpha", "app-alpha", "key-alpha", 5000, []string{"a1", "a2"}},
				appDef{"beta", "app-beta", "key-beta", 5000, nil},
			)
			cfg := *e.cfg
			cfg.Sessions.Lifecycle, cfg.Sessions.MaxTracked = lifecycle, 100
			require.NoError(t, e.exp.Apply(&cfg))
			want := 2*8 + 2*4
			if lifecycle {
				want += 2 * 16
			}
			assert.Equal(t, want, seriesIn(e.scrapeText(t, context.Background())), "nothing untracked yet")
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
			for range 2 {
				e.clk.Add(time.Minute)
				body := e.scrapeText(t, context.Background())
				assert.Equal(t, want, seriesIn(body), body)
				assert.Contains(t, body, `duix_conversation_active_sessions{app="alpha",conversation_id="a1"} 1`)
				assert.Contains(t, body, `duix_app_active_sessions{app="alpha"} 2001`)
				assert.Contains(t, body, `duix_app_sessions_without_conversation{app="beta"} 1`)
				assert.NotContains(t, body, "unconfigured-")
				assert.NotContains(t, body, "other-")
				if lifecycle {
					assert.Regexp(t, `duix_app_sessions_untracked_total\{app="beta"\} [1-9]`, body) // over max_tracked
				}
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
	assert.Nil(t, e.exp.AppClient("three"))
	assert.NotNil(t, e.exp.AppClient("one"))
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
	e.clk.Add(time.Hour)
	e.scrapeText(t, context.Background())
	assert.Equal(t, int64(2), e.sim.Requests(simulator.EndpointConcurrency))
}

func TestConversationDetailsAreCachedAndKeptOnFailure(t *testing.T) {
	e := newEnv(t, appDef{"a", "app-a", "key-a", 5, []string{"c1"}})
	scrape := func() string { return e.scrapeText(t, context.Background(), "a") }
	body := scrape()
	assert.Contains(t, body, `duix_conversation_max_concurrent{app="a",conversation_id="c1"} 2`)
	e.clk.Add(4 * time.Minute)
	scrape()
	assert.Equal(t, int64(1), e.sim.Requests(simulator.EndpointConversation), "refreshed at most every conversation_refresh (5m)")

	// The refresh is due and fails: the last good values stay, with their
	// refresh time.
	e.clk.Add(2 * time.Minute)
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
	e.clk.Add(time.Minute)
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

	e.clk.Add(30 * time.Minute)
	body = e.scrapeText(t, context.Background())
	assert.Contains(t, body, `duix_up{app="a"} 0`)
	assert.Contains(t, body, `duix_scrape_errors_total{app="a",reason="rate_limited"} 4`, "skipped calls count")
	assert.Contains(t, body, `duix_app_errors_total{app="a"} 4`)
	assert.Equal(t, calls, e.sim.RequestsFor("app-a", simulator.EndpointConcurrency)+e.sim.RequestsFor("app-a", simulator.EndpointSessions),
		"no call while Retry-After applies")
	assert.Contains(t, body, `duix_up{app="b"} 1`, "other apps are called")

	e.faults.ClearFaults()
	e.clk.Add(31 * time.Minute)
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
	e.clk.Add(30 * time.Minute)
	body := e.scrapeText(t, context.Background())
	assert.Contains(t, body, `duix_app_rate_limited_until_timestamp_seconds{app="a"} 1.8000036e+09`)
	assert.Equal(t, calls, e.sim.RequestsFor("app-a", simulator.EndpointConcurrency)+e.sim.RequestsFor("app-a", simulator.EndpointSessions),
		"no call while Retry-After applies, reload or not")

	e.faults.ClearFaults()
	e.clk.Add(31 * time.Minute)
	assert.Contains(t, e.scrapeText(t, context.Background()), `duix_up{app="a"} 1`, "called again once it has passed")
}

// A scrape that waits for its turn has its apps fetched (Fetch); its
// Collect sends what Fetch found. A scrape reports the apps configured when
// its request arrived, whatever a reload does before its Collect: an app
// removed meanwhile is still reported (a /probe of it is never empty), one
// added meanwhile is not.
func TestAScrapeReportsTheAppsConfiguredWhenItArrived(t *testing.T) {
	e := newEnv(t, appDef{"a", "app-a", "key-a", 5, nil}, appDef{"b", "app-b", "key-b", 5, nil})
	onlyA := *e.cfg
	onlyA.Apps = e.cfg.Apps[:1]
	all, probe := e.exp.Collector(context.Background()), e.exp.Collector(context.Background(), "b")
	all.Fetch()
	require.Equal(t, int64(1), e.sim.RequestsFor("app-b", simulator.EndpointConcurrency))
	require.NoError(t, e.exp.Apply(&onlyA))
	for _, s := range []prometheus.Collector{all, probe} {
		body, err := testutil.CollectAndFormat(s, expfmt.TypeTextPlain, "duix_up")
		require.NoError(t, err)
		assert.Contains(t, string(body), `duix_up{app="b"} 1`, "removed by the reload after the scrape arrived")
	}
	assert.Equal(t, int64(1), e.sim.RequestsFor("app-a", simulator.EndpointConcurrency), "Fetch's result sent")
	assert.Equal(t, int64(1), e.sim.RequestsFor("app-b", simulator.EndpointConcurrency), "the probe reuses what landed since it arrived")

	// Each named app once, an unknown name none.
	assert.Equal(t, 1, e.exp.Collector(context.Background(), "a", "a", "b").Apps(), "b is gone since the reload")

	added := e.exp.Collector(context.Background())
	require.NoError(t, e.exp.Apply(e.cfg))
	body, err := testutil.CollectAndFormat(added, expfmt.TypeTextPlain, "duix_up")
	require.NoError(t, err)
	assert.Contains(t, string(body), `duix_up{app="a"} 1`)
	assert.NotContains(t, string(body), `app="b"`, "added by the reload after the scrape arrived")
}

// An app that Fetch could not get by the scrape's deadline is down for that
// scrape, even when its call lands before the scrape is gathered (a late
// gathering), and the fetch it joined is counted as shared once.
func TestAnAppFetchMissedIsDownAndCountedOnce(t *testing.T) {
	e := newGatedEnv(t, appDef{"a", "app-a", "key-a", 5, nil})
	first := e.scrapeAsync(t, context.Background())
	waitFor(t, "the first scrape's calls are under way", func() bool { return e.gate.arrived.Load() >= 2 })
	ctx, cancel := context.WithCancel(context.Background())
	late := e.exp.Collector(ctx)
	fetched := make(chan struct{})
	go func() { late.Fetch(); close(fetched) }()
	waitFor(t, "the late scrape joined the fetch", func() bool { return e.shared("in_flight") == 1 })
	cancel() // its deadline
	<-fetched
	e.gate.release()
	assert.Contains(t, <-first, `duix_up{app="a"} 1`)
	body, err := testutil.CollectAndFormat(late, expfmt.TypeTextPlain, "duix_up")
	require.NoError(t, err)
	assert.Contains(t, string(body), `duix_up{app="a"} 0`, "not fetched by its deadline")
	assert.Equal(t, 1.0, e.shared("in_flight"), "the join is counted once")
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
	assert.Nil(t, e.exp.AppClient("a"))
	assert.NotContains(t, e.scrapeText(t, context.Background()), `app="a"`)
	require.NoError(t, e.exp.Apply(e.cfg))
	assert.NotContains(t, e.scrapeText(t, context.Background()), `reason="http"`, "a returning app starts afresh")
}

// An app whose app_id a reload changes, or that a reload drops and adds back, starts afresh even while its old
// fetch is held: a scrape after the reload makes the new app's own calls, never joins the old one's.
func TestAnAppReplacedByAReloadDoesNotJoinItsOldFetch(t *testing.T) {
	for _, tc := range []struct {
		name, limit string // the new app's duix_app_concurrency_limit
		reload      func(t *testing.T, e *env)
	}{
		{"app_id changed", "7", func(t *testing.T, e *env) {
			cfg := *e.cfg
			cfg.Apps = []config.App{e.cfg.Apps[0]}
			cfg.Apps[0].AppID, cfg.Apps[0].AppKey = "app-z", configSecret("key-z")
			require.NoError(t, e.exp.Apply(&cfg))
		}},
		{"dropped and added back", "5", func(t *testing.T, e *env) {
			cfg := *e.cfg
			cfg.Apps = nil
			require.NoError(t, e.exp.Apply(&cfg))
			require.NoError(t, e.exp.Apply(e.cfg))
			none := func(*http.Request) bool { return false } // the app's new calls pass; the old stay held
			e.gate.holds.Store(&none)
		}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			e := newGatedEnv(t, appDef{"a", "app-a", "key-a", 5, nil})
			e.sim.AddApp(simulator.App{ID: "app-z", Key: "key-z", CorpID: "corp-z", Allowance: 7})
			oldApp := func(r *http.Request) bool { return r.URL.Query().Get("appId") == "app-a" }
			e.gate.holds.Store(&oldApp)
			first := e.scrapeAsync(t, context.Background())
			waitFor(t, "the old app's calls are held", func() bool { return e.gate.arrived.Load() == 2 })
			tc.reload(t, e)
			assert.Equal(t, tc.limit, sample(receive(t, e.scrapeAsync(t, context.Background())), `duix_app_concurrency_limit{app="a"}`))
			e.gate.release()
			assert.Equal(t, "5", sample(receive(t, first), `duix_app_concurrency_limit{app="a"}`), "the scrape under way reports the old app")
		})
	}
}

// A reload that reorders an app's conversations and drops one, while its
// list is being fetched: the scrape under way reports each conversation's
// own count, and the details of those that stay are kept, not fetched again.
func TestAReloadThatReordersConversationsKeepsEachOnesCountAndDetails(t *testing.T) {
	e := newGatedEnv(t, appDef{"a", "app-a", "key-a", 10, []string{"c1", "c2", "c3"}})
	lists := func(r *http.Request) bool { return strings.HasSuffix(r.URL.Path, "/"+simulator.EndpointSessions) }
	e.gate.holds.Store(&lists)
	for _, c := range []string{"c1", "c1", "c2"} {
		_, err := e.sim.StartSession("app-a", c)
		require.NoError(t, err)
	}
	first := e.scrapeAsync(t, context.Background())
	waitFor(t, "the list is held", func() bool { return e.gate.arrived.Load() == 1 })
	cfg := *e.cfg
	cfg.Apps = []config.App{e.cfg.Apps[0]}
	cfg.Apps[0].Conversations = []string{"c2", "c1"}
	require.NoError(t, e.exp.Apply(&cfg))
	e.gate.release()

	for _, body := range []string{receive(t, first), e.scrapeText(t, context.Background())} {
		assert.Equal(t, "2", sample(body, `duix_conversation_active_sessions{app="a",conversation_id="c1"}`), body)
		assert.Equal(t, "1", sample(body, `duix_conversation_active_sessions{app="a",conversation_id="c2"}`), body)
		assert.NotContains(t, body, `conversation_id="c3"`, "no longer configured")
		assert.Equal(t, "2", sample(body, `duix_conversation_max_concurrent{app="a",conversation_id="c1"}`), body)
		assert.Equal(t, "3", sample(body, `duix_conversation_max_concurrent{app="a",conversation_id="c2"}`), body)
	}
	assert.Equal(t, int64(3), e.sim.Requests(simulator.EndpointConversation), "fetched once each, before the reload")
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

// An app's calls are made side by side when max_concurrency allows, its
// conversation refreshes one at a time: the platform holds every answer
// until getconcurrentNumber, getconcurrentList and the first of the four
// conversations due at the first scrape have arrived, and no other comes.
func TestTheCallsOfOneAppAreMadeSideBySide(t *testing.T) {
	e := newGatedEnv(t, appDef{"a", "app-a", "key-a", 5, []string{"c1", "c2", "c3", "c4"}})
	scrape := e.scrapeAsync(t, context.Background())
	waitFor(t, "three calls reach the platform", func() bool { return e.gate.arrived.Load() == 3 })
	time.Sleep(50 * time.Millisecond)
	assert.EqualValues(t, 3, e.gate.arrived.Load(), "one conversation at a time")
	e.gate.release()
	lines := strings.Split(receive(t, scrape), "\n")
	assert.Contains(t, lines, `duix_up{app="a"} 1`)
	assert.Contains(t, lines, `duix_conversation_max_concurrent{app="a",conversation_id="c4"} 5`)
}

// Every test here holds the platform's answers at a gate, so that the calls
// are under way for as long as the test needs, whatever the speed of the
// machine. Waits for a state are bounded generously (waitFor): they fail a
// test that hangs, never one that is slow.

const patience = 30 * time.Second

func waitFor(t *testing.T, what string, cond func() bool) {
	t.Helper()
	require.Eventually(t, cond, patience, time.Millisecond, what)
}

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

// scrapeAsync starts a scrape of the named apps on ctx and returns once
// the request has arrived (its collector exists); its body arrives on the
// channel.
func (e *env) scrapeAsync(t *testing.T, ctx context.Context, names ...string) <-chan string {
	out := make(chan string, 1)
	arrived := make(chan struct{})
	go func() {
		rec := httptest.NewRecorder()
		h := scrapeHandler{exp: e.exp, names: names, arrived: func() { close(arrived) }}
		h.ServeHTTP(rec, httptest.NewRequest(http.MethodGet, "/metrics", nil).WithContext(ctx))
		out <- rec.Body.String()
	}()
	<-arrived
	return out
}

func receive(t *testing.T, ch <-chan string) string {
	t.Helper()
	select {
	case s := <-ch:
		return s
	case <-time.After(patience):
		t.Fatal("the scrape did not end")
		return ""
	}
}

func TestConcurrentScrapesShareUpstreamCalls(t *testing.T) {
	e := newGatedEnv(t, appDef{"a", "app-a", "key-a", 5, nil})
	first := e.scrapeAsync(t, context.Background())
	waitFor(t, "the first scrape's calls reach the platform", func() bool { return e.gate.arrived.Load() == 2 })
	second := e.scrapeAsync(t, context.Background())
	waitFor(t, "the second scrape joins them", func() bool { return e.shared("in_flight") == 1 })
	e.gate.release()
	for _, body := range []string{receive(t, first), receive(t, second)} {
		assert.Contains(t, body, `duix_up{app="a"} 1`)
	}
	assert.Equal(t, 1.0, e.shared("in_flight"), "the second scrape shared the first one's calls")
	assert.Equal(t, int64(1), e.sim.Requests(simulator.EndpointConcurrency))
	assert.Equal(t, int64(1), e.sim.Requests(simulator.EndpointSessions))
}

// leaving is the context of a requester that leaves the way named:
// "disconnect" (cancelled by the test) or "deadline" (after d).
func leaving(leave string, d time.Duration) (context.Context, context.CancelFunc) {
	if leave == "disconnect" {
		return context.WithCancel(context.Background())
	}
	return context.WithTimeout(context.Background(), d)
}

// A requester that goes away (its client disconnected) leaves the shared
// calls to the requesters still waiting, and counts no error.
func TestRequesterThatLeavesDoesNotCancelSharedCalls(t *testing.T) {
	for _, leave := range []string{"disconnect", "deadline"} {
		t.Run(leave, func(t *testing.T) {
			e := newGatedEnv(t, appDef{"a", "app-a", "key-a", 5, nil}, appDef{"b", "app-b", "key-b", 5, nil})
			// The platform holds every answer: a deadline passes first.
			shortCtx, stop := leaving(leave, 300*time.Millisecond)
			defer stop()
			short := e.scrapeAsync(t, shortCtx, "a")
			waitFor(t, "the short request's calls reach the platform", func() bool { return e.gate.arrived.Load() == 2 })
			long := e.scrapeAsync(t, context.Background())
			stop()
			shortBody := receive(t, short)
			assert.Contains(t, shortBody, `duix_up{app="a"} 0`, "the short request gives up on its own")
			assert.NotContains(t, shortBody, "duix_scrape_errors_total", "and counts nothing: the calls go on")

			e.gate.release()
			body := receive(t, long)
			assert.Contains(t, body, `duix_up{app="a"} 1`)
			assert.Contains(t, body, `duix_up{app="b"} 1`)
			assert.NotContains(t, body, "duix_scrape_errors_total")
			assert.Contains(t, body, `duix_app_errors_total{app="a"} 0`)
			assert.Equal(t, int64(1), e.sim.RequestsFor("app-a", simulator.EndpointConcurrency), "one call, shared")
			assert.Equal(t, 1.0, e.shared("in_flight"))
		})
	}
}

// When the last requester of a flight leaves (its client went away, or its
// deadline passed), the calls go on and what they record is the platform's
// own outcome: a short deadline can neither count an error nor hand a later
// request an outcome that was not the platform's.
func TestLastRequesterLeavingCountsNothing(t *testing.T) {
	for _, leave := range []string{"disconnect", "deadline"} {
		t.Run(leave, func(t *testing.T) {
			e := newGatedEnv(t, appDef{"a", "app-a", "key-a", 5, nil})
			ctx, cancel := leaving(leave, 200*time.Millisecond)
			defer cancel()
			short := e.scrapeAsync(t, ctx)
			waitFor(t, "the calls reach the platform", func() bool { return e.gate.arrived.Load() == 2 })
			cancel()
			assert.Contains(t, receive(t, short), `duix_up{app="a"} 0`)
			e.gate.release()
			waitFor(t, "the calls to land", func() bool { return e.exp.Statuses()[0].Up })
			body := e.scrapeText(t, context.Background())
			assert.Contains(t, body, `duix_up{app="a"} 1`)
			assert.NotContains(t, body, "duix_scrape_errors_total")
			assert.Contains(t, body, `duix_app_errors_total{app="a"} 0`)
		})
	}
}

// A request already out of time when it reaches an app starts no calls for
// it: the next request finds no fetch under way and starts its own.
func TestARequestOutOfTimeStartsNoCalls(t *testing.T) {
	e := newGatedEnv(t, appDef{"a", "app-a", "key-a", 5, nil})
	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	assert.Contains(t, receive(t, e.scrapeAsync(t, ctx)), `duix_up{app="a"} 0`)
	next := e.scrapeAsync(t, context.Background())
	waitFor(t, "the next request's calls reach the platform", func() bool { return e.gate.arrived.Load() == 2 })
	e.gate.release()
	assert.Contains(t, receive(t, next), `duix_up{app="a"} 1`)
	assert.Zero(t, e.shared("in_flight"), "the next request joined no fetch")
	assert.Equal(t, int64(1), e.sim.Requests(simulator.EndpointConcurrency))
	assert.NotContains(t, e.scrapeText(t, context.Background()), "duix_scrape_errors_total")
}

// Two probes of one app, the first with a shorter deadline: the second
// gets the shared result.
func TestProbesOfOneAppWithDifferentDeadlines(t *testing.T) {
	e := newGatedEnv(t, appDef{"a", "app-a", "key-a", 5, nil})
	ctx, cancel := context.WithTimeout(context.Background(), 300*time.Millisecond)
	defer cancel()
	first := e.scrapeAsync(t, ctx, "a")
	waitFor(t, "the calls reach the platform", func() bool { return e.gate.arrived.Load() == 2 })
	second := e.scrapeAsync(t, context.Background(), "a")
	assert.Contains(t, receive(t, first), `duix_up{app="a"} 0`)
	e.gate.release()
	body := receive(t, second)
	assert.Contains(t, body, `duix_up{app="a"} 1`)
	assert.NotContains(t, body, "duix_scrape_errors_total")
}

func TestConcurrentScrapesOfManyAppsMakeOneCallPerEndpointPerApp(t *testing.T) {
	const n = 60
	apps := manyApps(n)
	e := newGatedEnv(t, apps...)
	setMaxConcurrency(t, e, 4) // 4 calls at a time: the others wait their turn
	first := e.scrapeAsync(t, context.Background())
	waitFor(t, "4 calls reach the platform", func() bool { return e.gate.arrived.Load() == 4 })
	second := e.scrapeAsync(t, context.Background())
	e.gate.release()
	bodies := []string{receive(t, first), receive(t, second)}

	for _, a := range apps {
		for _, ep := range []string{simulator.EndpointConcurrency, simulator.EndpointSessions} {
			assert.Equal(t, int64(1), e.sim.RequestsFor(a.id, ep), "%s %s", a.name, ep)
		}
	}
	assert.Equal(t, int64(2*n), e.sim.Requests(simulator.EndpointConversation), "each conversation fetched once")
	assert.Equal(t, float64(n), e.shared("in_flight"), "each app fetched by one scrape, shared with the other")
	for i, body := range bodies {
		assert.Equal(t, n, strings.Count(body, "duix_up{"), "scrape %d", i)
		assert.Equal(t, n, countValue(body, "duix_up", "1"), "every app up in scrape %d", i)
	}
}

// countValue counts the samples of name with that value.
func countValue(body, name, value string) int {
	n := 0
	for line := range strings.SplitSeq(body, "\n") {
		if strings.HasPrefix(line, name+"{") && strings.HasSuffix(line, "} "+value) {
			n++
		}
	}
	return n
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

	var wg sync.WaitGroup
	for i := range 6 {
		wg.Add(1)
		go func() {
			defer wg.Done()
			if i%2 == 0 {
				e.scrapeText(t, context.Background())
			} else {
				e.scrapeText(t, context.Background(), apps[i].name)
			}
		}()
	}
	wg.Wait()
	assert.LessOrEqual(t, counted.max.Load(), int64(3))
	assert.Positive(t, counted.max.Load())
	assert.GreaterOrEqual(t, e.sim.Requests(simulator.EndpointConcurrency), int64(len(apps)))
}

// A scrape out of time answers with every app down, even when its calls
// wait for a share of max_concurrency behind calls that never end.
func TestOutOfTimeScrapeOfManyQueuedAppsAnswers(t *testing.T) {
	apps := manyApps(40)
	e := newGatedEnv(t, apps...)
	setMaxConcurrency(t, e, 2)
	ctx, cancel := context.WithTimeout(context.Background(), 300*time.Millisecond)
	defer cancel()
	body := receive(t, e.scrapeAsync(t, ctx))
	assert.Equal(t, len(apps), strings.Count(body, "duix_up{"))
	assert.Equal(t, len(apps), countValue(body, "duix_up", "0"))
}

// setMaxConcurrency applies the environment's configuration with another
// api.max_concurrency.
func setMaxConcurrency(t *testing.T, e *env, n int) {
	t.Helper()
	cfg := *e.cfg
	cfg.API.MaxConcurrency = n
	require.NoError(t, e.exp.Apply(&cfg))
}

// A scrape that runs out of time waiting for one app still reports every
// app whose calls were done, whatever the order it waits in.
func TestOutOfTimeScrapeReportsTheAppsThatAnswered(t *testing.T) {
	e := newEnv(t, appDef{"a-slow", "app-a", "key-a", 5, nil}, appDef{"b", "app-b", "key-b", 5, nil}, appDef{"c", "app-c", "key-c", 5, nil})
	cfg := *e.cfg
	cfg.API.Timeout = model.Duration(time.Second) // the held calls end with the test
	require.NoError(t, e.exp.Apply(&cfg))
	e.sim.SetLatency("app-a", "", time.Hour)
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	scrape := e.scrapeAsync(t, ctx)
	waitFor(t, "b and c to answer", func() bool {
		st := e.exp.Statuses()
		return st[1].Up && st[2].Up
	})
	cancel() // out of time
	body := receive(t, scrape)
	assert.Equal(t, 1, countValue(body, "duix_up", "0"), body)
	assert.Contains(t, body, `duix_up{app="a-slow"} 0`)
	assert.Contains(t, body, `duix_up{app="b"} 1`)
	assert.Contains(t, body, `duix_up{app="c"} 1`)
}

// One app's platform stalls (every call runs out of api.timeout) and the
// app watches 14 conversations: its refreshes are made one at a time, so
// its calls hold at most three slots of api.max_concurrency and a healthy
// app is still fetched within a scrape timeout above api.timeout.
func TestAStalledAppWithManyConversationsLeavesSlotsToTheOthers(t *testing.T) {
	const slowID, okID = "1790000000000000900", "1790000000000000901"
	sim := simulator.New()
	sim.AddApp(simulator.App{ID: slowID, Key: "slow-key", Allowance: 5})
	sim.AddApp(simulator.App{ID: okID, Key: "ok-key", Allowance: 7})
	var convs []string
	for i := range 14 {
		id := fmt.Sprintf("slow-%d", i)
		convs = append(convs, id)
		require.NoError(t, sim.AddConversation(slowID, simulator.NewConversation(id, id, 2)))
	}
	var stalled atomic.Int64
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		q := r.URL.Query()
		if q.Get("appId") == slowID || strings.HasPrefix(q.Get("conversationId"), "slow-") {
			stalled.Add(1)
			<-r.Context().Done() // the stalled platform: no answer
			return
		}
		sim.ServeHTTP(w, r)
	}))
	t.Cleanup(srv.Close)

	cfg := &config.Config{API: config.DefaultAPI, Sessions: config.DefaultSessions}
	cfg.API.BaseURL = srv.URL + simulator.BasePath
	cfg.API.Timeout = model.Duration(time.Second) // scrape timeout (3s) above it, as advised
	cfg.API.MaxConcurrency = 4
	cfg.Apps = []config.App{
		{Name: "slow", AppID: slowID, AppKey: "slow-key", TokenTTL: config.DefaultTokenTTL, Conversations: convs},
		{Name: "ok", AppID: okID, AppKey: "ok-key", TokenTTL: config.DefaultTokenTTL},
	}
	exp := collector.New(collector.Options{Metrics: client.NewMetrics(prometheus.NewRegistry())})
	require.NoError(t, exp.Apply(cfg))

	// A /probe of the slow app is under way (its calls hold every slot)...
	go func() {
		ctx, cancel := context.WithTimeout(context.Background(), 3*time.Second)
		defer cancel()
		reg := prometheus.NewRegistry()
		reg.MustRegister(exp.Collector(ctx, "slow"))
		_, _ = reg.Gather()
	}()
	require.Eventually(t, func() bool { return stalled.Load() >= 4 }, 5*time.Second, 5*time.Millisecond)

	// ... when /metrics is scraped with a scrape timeout of 3s.
	ctx, cancel := context.WithTimeout(context.Background(), 3*time.Second)
	defer cancel()
	rec := httptest.NewRecorder()
	handlerFor(exp, nil, 0).ServeHTTP(rec, httptest.NewRequest(http.MethodGet, "/metrics", nil).WithContext(ctx))
	require.Equal(t, http.StatusOK, rec.Code)
	body := rec.Body.String()
	assert.True(t, strings.Contains(body, `duix_up{app="ok"} 1`), "the healthy app lost its scrape to the stalled one:\n%s", grepLines(body, "duix_up{", "duix_scrape_errors_total{"))
	assert.Contains(t, body, `duix_up{app="slow"} 0`)
}

func grepLines(body string, prefixes ...string) string {
	var out []string
	for _, l := range strings.Split(body, "\n") {
		for _, p := range prefixes {
			if strings.HasPrefix(l, p) {
				out = append(out, l)
			}
		}
	}
	return strings.Join(out, "\n")
}

// A reload while an app's key file is being rewritten (empty for now) is
// refused, as any reload of a file that is not good: the configuration in
// force, and the last good key with it, stay in use.
func TestAReloadWhileAKeyFileIsEmptyKeepsTheLastGoodKey(t *testing.T) {
	const id, key = "1790000000000000902", "adv-key-0123456789"
	sim := simulator.New()
	sim.AddApp(simulator.App{ID: id, Key: key, Allowance: 5})
	srv := httptest.NewServer(sim)
	t.Cleanup(srv.Close)
	dir := t.TempDir()
	keyFile := filepath.Join(dir, "a.key")
	require.NoError(t, os.WriteFile(keyFile, []byte(key+"\n"), 0o600))
	yml := fmt.Sprintf("api: {base_url: %q}\napps: [{name: a, app_id: %q, app_key_file: a.key}]\n", srv.URL+simulator.BasePath, id)
	require.NoError(t, os.WriteFile(filepath.Join(dir, "duix.yml"), []byte(yml), 0o600))

	reg := prometheus.NewRegistry()
	exp := collector.New(collector.Options{Metrics: client.NewMetrics(reg)})
	sc := config.NewSafeConfig(prometheus.NewRegistry())
	sc.Subscribe(exp.Apply)
	require.NoError(t, sc.ReloadConfig(filepath.Join(dir, "duix.yml"), nil))
	scrape := func() string {
		rec := httptest.NewRecorder()
		handlerFor(exp, nil, 0).ServeHTTP(rec, httptest.NewRequest(http.MethodGet, "/metrics", nil))
		return rec.Body.String()
	}
	require.Contains(t, scrape(), `duix_up{app="a"} 1`)

	require.NoError(t, os.WriteFile(keyFile, nil, 0o600)) // being rewritten
	require.Contains(t, scrape(), `duix_up{app="a"} 1`, "the last good key stays in use")
	err := sc.ReloadConfig(filepath.Join(dir, "duix.yml"), nil)
	require.Error(t, err)
	assert.Contains(t, err.Error(), "a.key is empty")
	assert.Contains(t, scrape(), `duix_up{app="a"} 1`, "the last good key stays in use after the refused reload")
}

// As the daemon does (SafeConfig, Apply subscribed): with or without a
// successful reload before it, a key file being rewritten (empty) at the
// next scrape leaves the last good key in use.
func TestASuccessfulReloadKeepsTheLastGoodKey(t *testing.T) {
	for _, reload := range []bool{false, true} {
		t.Run(fmt.Sprintf("reload=%v", reload), func(t *testing.T) {
			sim := simulator.New()
			sim.AddApp(simulator.App{ID: "1790000000000000001", Key: "KEY-adv2", Allowance: 3})
			srv := httptest.NewServer(sim)
			t.Cleanup(srv.Close)
			dir := t.TempDir()
			key := filepath.Join(dir, "a.key")
			require.NoError(t, os.WriteFile(key, []byte("KEY-adv2\n"), 0o600))
			cfgPath := filepath.Join(dir, "duix.yml")
			require.NoError(t, os.WriteFile(cfgPath, []byte(fmt.Sprintf("api: {base_url: %q}\napps: [{name: a, app_id: '1790000000000000001', app_key_file: a.key}]\n", srv.URL+simulator.BasePath)), 0o600))

			reg := prometheus.NewRegistry()
			exp := collector.New(collector.Options{Metrics: client.NewMetrics(reg)})
			sc := config.NewSafeConfig(reg)
			sc.Subscribe(exp.Apply)
			require.NoError(t, sc.ReloadConfig(cfgPath, nil))
			e := &env{exp: exp}
			require.Contains(t, e.scrapeText(t, context.Background()), `duix_up{app="a"} 1`)

			if reload {
				require.NoError(t, sc.ReloadConfig(cfgPath, nil), "SIGHUP, the key file good")
			}
			require.NoError(t, os.WriteFile(key, nil, 0o600)) // being rewritten
			assert.Contains(t, e.scrapeText(t, context.Background()), `duix_up{app="a"} 1`, "the last good key stays in use")
		})
	}
}

// A reload whose tls_config.ca_file is a FIFO nobody writes is refused at
// once (prometheus/common would block reading it while the pool is built),
// and the configuration in force goes on.
func TestAReloadWithAFIFOForCAFileIsRefusedAtOnce(t *testing.T) {
	e := newEnv(t, appDef{name: "a", id: "1790000000000000001", key: "KEY-a", allowance: 3})
	require.Contains(t, e.scrapeText(t, context.Background()), `duix_up{app="a"} 1`)

	fifo := filepath.Join(t.TempDir(), "ca.pem")
	require.NoError(t, syscall.Mkfifo(fifo, 0o600))
	cfg := *e.cfg
	cfg.API.HTTPClientConfig.TLSConfig.CAFile = fifo
	applied := make(chan error, 1)
	go func() { applied <- e.exp.Apply(&cfg) }()
	select {
	case err := <-applied:
		require.Error(t, err)
		assert.Contains(t, err.Error(), "not a regular file")
	case <-time.After(time.Minute):
		t.Fatal("the reload blocks on the FIFO")
	}
	assert.Contains(t, e.scrapeText(t, context.Background()), `duix_up{app="a"} 1`)
}

// A conversation's details without maxConversation (or with null) are a
// decode error: the last good value stays and its refresh time too, never
// a 0 that would look like no capacity.
func TestAConversationWithoutMaxConversationKeepsItsLastGoodValue(t *testing.T) {
	e := newEnv(t, appDef{"a", "app-a", "key-a", 5, []string{"c1"}})
	body := e.scrapeText(t, context.Background())
	require.Contains(t, body, `duix_conversation_max_concurrent{app="a",conversation_id="c1"} 2`)
	refreshed := sample(body, `duix_conversation_last_refresh_timestamp_seconds{app="a",conversation_id="c1"}`)
	prefix, suffix := simulator.SuccessParts(simulator.EndpointConversation)
	next := e.gate.next
	for i, max := range []string{``, `"maxConversation":null,`, `"maxConversation":-7,`} {
		e.gate.next = http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
			if !strings.HasSuffix(r.URL.Path, "/"+simulator.EndpointConversation) {
				next.ServeHTTP(w, r)
				return
			}
			_, _ = io.WriteString(w, prefix+`{"id":"c1",`+max+`"conversationName":"c","language":"en"}`+suffix)
		})
		e.clk.Add(6 * time.Minute) // past conversation_refresh
		body = e.scrapeText(t, context.Background())
		assert.Contains(t, body, `duix_conversation_max_concurrent{app="a",conversation_id="c1"} 2`, "%q", max)
		assert.Equal(t, refreshed, sample(body, `duix_conversation_last_refresh_timestamp_seconds{app="a",conversation_id="c1"}`))
		assert.Equal(t, fmt.Sprint(i+1), sample(body, `duix_scrape_errors_total{app="a",reason="decode"}`))
	}
}

// Reloads keep no pool they replaced: after many reloads of 1000 apps, with
// key files, header files or inline keys, the first pool is collected and
// the heap stays where one pool puts it.
func TestReloadsKeepNoOldPool(t *testing.T) {
	dir := t.TempDir()
	keyFile, headerFile := filepath.Join(dir, "a.key"), filepath.Join(dir, "h")
	require.NoError(t, os.WriteFile(keyFile, []byte("key-a\n"), 0o600))
	require.NoError(t, os.WriteFile(headerFile, []byte("v\n"), 0o600))
	for _, tc := range []struct {
		name string
		set  func(*config.Config, *config.App)
	}{
		{"app_key_file", func(_ *config.Config, a *config.App) { a.AppKeyFile = keyFile }},
		{"app_key", func(_ *config.Config, a *config.App) { a.AppKey = "key-a" }},
		{"http_headers file", func(c *config.Config, a *config.App) {
			a.AppKey = "key-a"
			c.API.HTTPClientConfig.HTTPHeaders = &promconfig.Headers{Headers: map[string]promconfig.Header{"X-H": {Files: []string{headerFile}}}}
		}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			cfg := &config.Config{API: config.DefaultAPI, Sessions: config.DefaultSessions}
			cfg.API.BaseURL = "http://127.0.0.1:1" + simulator.BasePath // no call is made
			for i := range 1000 {
				cfg.Apps = append(cfg.Apps, config.App{Name: fmt.Sprintf("a%d", i), AppID: fmt.Sprintf("app-%d", i)})
				tc.set(cfg, &cfg.Apps[i])
			}
			exp := collector.New(collector.Options{Metrics: client.NewMetrics(prometheus.NewRegistry())})
			require.NoError(t, exp.Apply(cfg))
			first := weak.Make(exp.AppClient("a0"))
			heap := func() uint64 {
				runtime.GC()
				var ms runtime.MemStats
				runtime.ReadMemStats(&ms)
				return ms.HeapAlloc
			}
			before := heap()
			for range 50 {
				require.NoError(t, exp.Apply(cfg))
			}
			after := heap()
			assert.Nil(t, first.Value(), "the first pool is kept")
			assert.Less(t, int64(after)-int64(before), int64(8<<20), "the heap grew by %d bytes", int64(after)-int64(before))
			require.NotNil(t, exp.AppClient("a0"))
		})
	}
}
