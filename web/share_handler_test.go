package web

import (
	"context"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"sync"
	"testing"
	"time"

	"github.com/go-kit/log"
	"github.com/prometheus/client_golang/prometheus"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/duix-exporter/duix_exporter/client"
	"github.com/duix-exporter/duix_exporter/collector"
	"github.com/duix-exporter/duix_exporter/config"
	"github.com/duix-exporter/duix_exporter/simulator"
)

// callGate holds the platform's answers for an app until the test opens it.
type callGate struct {
	sim     *simulator.Simulator
	mu      sync.Mutex
	held    map[string]chan struct{}
	arrived map[string]int
}

func (g *callGate) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	id := r.URL.Query().Get("appId")
	g.mu.Lock()
	ch := g.held[id]
	g.arrived[id]++
	g.mu.Unlock()
	if ch != nil {
		select {
		case <-ch:
		case <-r.Context().Done():
			return
		}
	}
	g.sim.ServeHTTP(w, r)
}

func (g *callGate) hold(id string) {
	g.mu.Lock()
	defer g.mu.Unlock()
	if g.held[id] == nil {
		g.held[id] = make(chan struct{})
	}
}

func (g *callGate) open(id string) {
	g.mu.Lock()
	defer g.mu.Unlock()
	if ch := g.held[id]; ch != nil {
		close(ch)
		delete(g.held, id)
	}
}

func (g *callGate) arrivals(id string) int {
	g.mu.Lock()
	defer g.mu.Unlock()
	return g.arrived[id]
}

// holdAtEnd is a process-wide collector whose first Collect signals
// reached and waits for release: it holds the first gathering at its end.
type holdAtEnd struct {
	once    sync.Once
	reached chan struct{}
	release chan struct{}
}

var heldDesc = prometheus.NewDesc("held_process_metric", "A process metric.", nil, nil)

func (b *holdAtEnd) Describe(ch chan<- *prometheus.Desc) { ch <- heldDesc }
func (b *holdAtEnd) Collect(ch chan<- prometheus.Metric) {
	b.once.Do(func() {
		close(b.reached)
		<-b.release
	})
	ch <- prometheus.MustNewConstMetric(heldDesc, prometheus.GaugeValue, 1)
}

type sharingEnv struct {
	gate  *callGate
	sim   *simulator.Simulator
	block *holdAtEnd
	h     *scrapeHandler
	reg   *prometheus.Registry // the exporter's own counters
	url   string               // the gate's base URL
}

// inFlight is duix_exporter_shared_fetches_total{how="in_flight"}.
func (e *sharingEnv) inFlight(t *testing.T) float64 {
	mfs, err := e.reg.Gather()
	require.NoError(t, err)
	for _, mf := range mfs {
		for _, m := range mf.GetMetric() {
			for _, l := range m.GetLabel() {
				if l.GetValue() == "in_flight" {
					return m.GetCounter().GetValue()
				}
			}
		}
	}
	return 0
}

// newSharingEnv serves one app "a" (ID id-a) behind a gate, with an exporter
// whose process registry holds the first gathering at its end.
func newSharingEnv(t *testing.T, share bool) *sharingEnv {
	sim := simulator.New()
	sim.AddApp(simulator.App{ID: "id-a", Key: "key-a", Allowance: 5})
	g := &callGate{sim: sim, held: map[string]chan struct{}{}, arrived: map[string]int{}}
	srv := httptest.NewServer(g)
	t.Cleanup(srv.Close)
	t.Cleanup(func() { // before srv.Close: nothing stays held
		g.mu.Lock()
		for id, ch := range g.held {
			close(ch)
			delete(g.held, id)
		}
		g.mu.Unlock()
	})
	path := filepath.Join(t.TempDir(), "duix.yml")
	require.NoError(t, os.WriteFile(path, []byte("api:\n  base_url: \""+srv.URL+simulator.BasePath+"\"\n  timeout: 1m\napps:\n  - name: a\n    app_id: id-a\n    app_key: key-a\n"), 0o600))
	cfg, err := config.Load(path)
	require.NoError(t, err)
	reg := prometheus.NewRegistry()
	exp := collector.New(collector.Options{Metrics: client.NewMetrics(reg)})
	require.NoError(t, exp.Apply(cfg))
	b := &holdAtEnd{reached: make(chan struct{}), release: make(chan struct{})}
	reg.MustRegister(b)
	t.Cleanup(func() {
		select {
		case <-b.release:
		default:
			close(b.release)
		}
	})
	h := &scrapeHandler{exp: exp, process: reg, margin: DefaultWriteMargin, logger: log.NewNopLogger(), apps: metricsApps}
	if share {
		h.shared = &sharedGathering{}
	}
	own := prometheus.NewRegistry()
	require.NoError(t, exp.Register(own))
	return &sharingEnv{gate: g, sim: sim, block: b, h: h, reg: own, url: srv.URL + simulator.BasePath}
}

// scrape serves /metrics on ctx with the scrape timeout given (seconds).
func (e *sharingEnv) scrape(ctx context.Context, timeout string) <-chan string {
	out := make(chan string, 1)
	go func() {
		req := httptest.NewRequest(http.MethodGet, "/metrics", nil).WithContext(ctx)
		req.Header.Set(timeoutHeader, timeout)
		rec := httptest.NewRecorder()
		e.h.ServeHTTP(rec, req)
		out <- rec.Body.String()
	}()
	return out
}

// receive returns the body of a scrape started by scrape.
func receive(t *testing.T, ch <-chan string) string {
	t.Helper()
	return within(t, ch, "the scrape did not end")
}

// A first request with a short scrape timeout runs out of time while the
// platform is slow: it reports app a down, for itself. A second request,
// with a timeout of a minute, arrives while the first one's gathering is
// still under way and waits for it; the first one's families are cut short
// by its deadline, so the second request gathers on its own and reports
// app a up, as it does when nothing is shared (sharing off). A client with
// a tiny timeout cannot make apps look down to Prometheus.
//
// No timing assumption: the first gathering is held at its end (process
// collector) until the second request has joined, after the first
// request's deadline has passed.
func TestLeadersDeadlineDoesNotCutShortAJoinersAnswer(t *testing.T) {
	for _, share := range []bool{false, true} {
		t.Run(map[bool]string{false: "sharing off", true: "sharing on"}[share], func(t *testing.T) {
			e := newSharingEnv(t, share)
			e.gate.hold("id-a")
			a := e.scrape(t.Context(), "0.2") // a hostile or impatient client
			// The first gathering reaches the process metrics once app a
			// was given up at its deadline.
			within(t, e.block.reached, "the first gathering did not end its apps")
			b := e.scrape(t.Context(), "60") // Prometheus
			if share {
				joined(t, e.h.shared, 1)
			} else {
				require.Eventually(t, func() bool { return e.inFlight(t) == 1 }, hangTimeout, time.Millisecond, "b joins a's flight")
			}
			close(e.block.release)
			assert.Equal(t, 0.0, samples(t, receive(t, a))["duix_up"]["app=a"], "the first request ran out of time")
			e.gate.open("id-a")
			assert.Equal(t, 1.0, samples(t, receive(t, b))["duix_up"]["app=a"],
				"the second request had a minute; the platform answered at once")
		})
	}
}

// A first request's client leaves after app a's calls landed; a second
// request that waited for its gathering then gathers on its own. The calls
// under way when it arrived have landed since: it reuses them, as it would
// have joined them alone, rather than call the platform again.
func TestRequestGatheringOnItsOwnReusesTheCallsUnderWayWhenItArrived(t *testing.T) {
	for _, share := range []bool{false, true} {
		t.Run(map[bool]string{false: "sharing off", true: "sharing on"}[share], func(t *testing.T) {
			e := newSharingEnv(t, share)
			e.gate.hold("id-a")
			ctxA, leave := context.WithCancel(t.Context())
			a := e.scrape(ctxA, "60")
			require.Eventually(t, func() bool { return e.gate.arrivals("id-a") >= 2 }, hangTimeout, time.Millisecond, "a's calls reach the platform")
			b := e.scrape(t.Context(), "60")
			if share {
				joined(t, e.h.shared, 1)
			} else {
				require.Eventually(t, func() bool { return e.inFlight(t) == 1 }, hangTimeout, time.Millisecond, "b joins a's flight")
			}
			e.gate.open("id-a")
			within(t, e.block.reached, "the first gathering did not end its apps")
			leave() // a's client leaves at the end of its gathering
			close(e.block.release)
			receive(t, a)
			body := receive(t, b)
			assert.Equal(t, 1.0, samples(t, body)["duix_up"]["app=a"])
			assert.Equal(t, int64(1), e.sim.RequestsFor("id-a", simulator.EndpointSessions),
				"b's app was listed once: b arrived while the call was under way")
		})
	}
}

// A request that arrives after a reload has returned is answered with the
// apps of the new configuration, although a gathering begun before the
// reload is under way.
func TestRequestAfterAReloadIsAnsweredWithTheNewConfiguration(t *testing.T) {
	for _, share := range []bool{false, true} {
		t.Run(map[bool]string{false: "sharing off", true: "sharing on"}[share], func(t *testing.T) {
			e := newSharingEnv(t, share)
			e.sim.AddApp(simulator.App{ID: "id-b", Key: "key-b", Allowance: 5})
			a := e.scrape(t.Context(), "60")
			within(t, e.block.reached, "the first gathering did not end its apps")
			// Reload: app a is gone, app b is new.
			path := filepath.Join(t.TempDir(), "duix.yml")
			require.NoError(t, os.WriteFile(path, []byte("api:\n  base_url: \""+e.url+"\"\n  timeout: 1m\napps:\n  - name: b\n    app_id: id-b\n    app_key: key-b\n"), 0o600))
			cfg, err := config.Load(path)
			require.NoError(t, err)
			require.NoError(t, e.h.exp.Apply(cfg))
			b := e.scrape(t.Context(), "60")
			// The second request gathers on its own while the first one's
			// gathering is under way: it calls app b.
			require.Eventually(t, func() bool { return e.gate.arrivals("id-b") > 0 }, hangTimeout, time.Millisecond, "the second request calls app b")
			close(e.block.release)
			receive(t, a)
			assert.Equal(t, map[string]float64{"app=b": 1}, samples(t, receive(t, b))["duix_up"], "the configuration in force when b arrived")
		})
	}
}
