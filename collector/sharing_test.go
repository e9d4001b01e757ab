package collector_test

import (
	"context"
	"fmt"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/prometheus/common/model"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/duix-exporter/duix_exporter/simulator"
)

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

// A requester that goes away (its client disconnected) leaves the shared
// calls to the requesters still waiting, and counts no error.
func TestRequesterThatLeavesDoesNotCancelSharedCalls(t *testing.T) {
	for _, leave := range []string{"disconnect", "deadline"} {
		t.Run(leave, func(t *testing.T) {
			e := newGatedEnv(t, appDef{"a", "app-a", "key-a", 5, nil}, appDef{"b", "app-b", "key-b", 5, nil})
			var (
				shortCtx context.Context
				stop     context.CancelFunc
			)
			if leave == "disconnect" {
				shortCtx, stop = context.WithCancel(context.Background())
			} else {
				// The platform holds every answer: this deadline passes first.
				shortCtx, stop = context.WithTimeout(context.Background(), 300*time.Millisecond)
			}
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
			var (
				ctx    context.Context
				cancel context.CancelFunc
			)
			if leave == "disconnect" {
				ctx, cancel = context.WithCancel(context.Background())
			} else {
				ctx, cancel = context.WithTimeout(context.Background(), 200*time.Millisecond)
			}
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
