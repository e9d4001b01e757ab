package collector_test

import (
	"context"
	"net"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/prometheus/client_golang/prometheus/testutil"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/duix-exporter/duix_exporter/internal/platformtest"
	"github.com/duix-exporter/duix_exporter/simulator"
)

// A healthy app without conversations, the lifecycle off, costs at most 8
// series.
func TestHealthyAppSeriesBudget(t *testing.T) {
	e := newEnv(t, appDef{"a", "app-a", "key-a", 5, nil})
	cfg := *e.cfg
	cfg.Sessions.Lifecycle = false
	require.NoError(t, e.exp.Apply(&cfg))
	_, err := e.sim.StartSession("app-a", "")
	require.NoError(t, err)
	for range 2 {
		e.clk.Add(time.Minute)
		assert.Equal(t, 8, testutil.CollectAndCount(e.collector()))
	}
}

const helpAppErrors = "# HELP duix_app_errors_total Failed calls to the platform for the app (any endpoint), every reason together; present at 0 from the app's first scrape.\n# TYPE duix_app_errors_total counter\n"

// duix_app_errors_total is there at 0 before the first failure, so that
// increase() sees that failure; the breakdown by reason appears with it.
func TestAppErrorsCounterIsPresentBeforeTheFirstFailure(t *testing.T) {
	e := newEnv(t, appDef{"a", "app-a", "key-a", 5, nil})
	names := []string{"duix_app_errors_total", "duix_scrape_errors_total"}
	require.NoError(t, testutil.CollectAndCompare(e.collector(),
		strings.NewReader(helpAppErrors+`duix_app_errors_total{app="a"} 0`+"\n"), names...))

	e.faults.SetFault("app-a", simulator.EndpointSessions, platformtest.Fault{Kind: platformtest.FaultHTTP500, Times: 1})
	e.faults.SetFault("app-a", simulator.EndpointConcurrency, platformtest.Fault{Kind: platformtest.FaultTruncatedJSON, Times: 1})
	require.NoError(t, testutil.CollectAndCompare(e.collector(), strings.NewReader(helpAppErrors+`duix_app_errors_total{app="a"} 2
`+helpErrors+`duix_scrape_errors_total{app="a",reason="decode"} 1
duix_scrape_errors_total{app="a",reason="http"} 1
`), names...))
}

func TestJanitorHooks(t *testing.T) {
	e := newEnv(t, appDef{"a", "app-a", "key-a", 5, nil})
	assert.NotNil(t, e.exp.AppClient("a"))
	assert.Nil(t, e.exp.AppClient("nope"))

	id, err := e.sim.StartSession("app-a", "")
	require.NoError(t, err)
	_, ok := e.exp.FirstSeen("a", id)
	assert.False(t, ok, "not listed yet")
	e.scrapeText(t, context.Background())
	first := e.clk.Now()
	e.clk.Add(time.Minute)
	e.scrapeText(t, context.Background())
	seen, ok := e.exp.FirstSeen("a", id)
	require.True(t, ok)
	assert.Equal(t, first, seen, "when first listed, not when last listed")
	_, ok = e.exp.FirstSeen("nope", id)
	assert.False(t, ok)

	require.True(t, e.sim.EndSession("app-a", id))
	e.scrapeText(t, context.Background())
	_, ok = e.exp.FirstSeen("a", id)
	assert.False(t, ok, "no longer listed")

	cfg := *e.cfg
	cfg.Sessions.Lifecycle = false
	require.NoError(t, e.exp.Apply(&cfg))
	id, err = e.sim.StartSession("app-a", "")
	require.NoError(t, err)
	e.scrapeText(t, context.Background())
	_, ok = e.exp.FirstSeen("a", id)
	assert.False(t, ok, "lifecycle off")
}

// An app whose app_id changes is another app: its state starts afresh.
func TestReloadWithAnotherAppIDStartsAfresh(t *testing.T) {
	e := newEnv(t, appDef{"a", "app-a", "key-a", 5, nil}, appDef{"b", "app-b", "key-b", 5, nil})
	e.faults.SetFault("", "", platformtest.Fault{Kind: platformtest.FaultHTTP500, Times: 4})
	e.scrapeText(t, context.Background())
	e.sim.AddApp(simulator.App{ID: "app-a2", Key: "key-a", CorpID: "corp-a2", Allowance: 5})
	cfg := *e.cfg
	cfg.Apps = append(cfg.Apps[:0:0], cfg.Apps...)
	cfg.Apps[0].AppID = "app-a2"
	require.NoError(t, e.exp.Apply(&cfg))
	body := e.scrapeText(t, context.Background())
	assert.Contains(t, body, `duix_app_errors_total{app="a"} 0`)
	assert.Contains(t, body, `duix_app_info{app="a",app_id="app-a2",corp_id="corp-a2"} 1`)
	assert.Contains(t, body, `duix_app_errors_total{app="b"} 2`, "b is unchanged: kept")
}

// A fetch under way when a configuration is applied lands in the state
// of its app, kept by the reload.
func TestReloadDuringAFetchKeepsItsOutcome(t *testing.T) {
	e := newGatedEnv(t, appDef{"a", "app-a", "key-a", 5, nil})
	e.faults.SetFault("app-a", simulator.EndpointSessions, platformtest.Fault{Kind: platformtest.FaultHTTP500, Times: 1})
	first := e.scrapeAsync(t, context.Background())
	waitFor(t, "the calls reach the platform", func() bool { return e.gate.arrived.Load() == 2 })
	require.NoError(t, e.exp.Apply(e.cfg))
	e.gate.release()
	assert.Contains(t, receive(t, first), `duix_up{app="a"} 0`)
	body := e.scrapeText(t, context.Background())
	assert.Contains(t, body, `duix_up{app="a"} 1`)
	assert.Contains(t, body, `duix_app_errors_total{app="a"} 1`)
}

// A reload closes the old clients' idle connections to the platform.
func TestReloadClosesTheOldConnections(t *testing.T) {
	e := newEnv(t, appDef{"a", "app-a", "key-a", 5, []string{"c1"}}, appDef{"b", "app-b", "key-b", 5, nil})
	var open atomic.Int64
	srv := httptest.NewUnstartedServer(e.sim)
	srv.Config.ConnState = func(_ net.Conn, s http.ConnState) {
		switch s {
		case http.StateNew:
			open.Add(1)
		case http.StateClosed, http.StateHijacked:
			open.Add(-1)
		}
	}
	srv.Start()
	t.Cleanup(srv.Close)
	cfg := *e.cfg
	cfg.API.BaseURL = srv.URL + simulator.BasePath
	require.NoError(t, e.exp.Apply(&cfg))
	assert.Contains(t, e.scrapeText(t, context.Background()), `duix_up{app="b"} 1`)
	require.Positive(t, open.Load(), "the scrape left connections open for the next one")
	require.NoError(t, e.exp.Apply(&cfg))
	waitFor(t, "the old connections to close", func() bool { return open.Load() == 0 })
}
