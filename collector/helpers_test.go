package collector_test

import (
	"context"
	"net/http"
	"strconv"
	"sync"
	"sync/atomic"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/promhttp"
	promconfig "github.com/prometheus/common/config"

	"github.com/duix-exporter/duix_exporter/collector"
)

func configSecret(s string) promconfig.Secret { return promconfig.Secret(s) }

// handlerFor serves the exporter as the daemon does: a registry per request
// holding the collector of the named apps (all when none), bounded by
// Prometheus' scrape-timeout header less offset, then the process-wide
// metrics of process (if any).
func handlerFor(exp *collector.Exporter, process prometheus.Gatherer, offset time.Duration, names ...string) http.Handler {
	return scrapeHandler{exp: exp, process: process, offset: offset, names: names}
}

type scrapeHandler struct {
	exp     *collector.Exporter
	process prometheus.Gatherer
	offset  time.Duration
	names   []string
	// arrived, when set, is called once the request's collector exists:
	// from then on, the request shares what is fetched for others.
	arrived func()
}

func (h scrapeHandler) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	ctx := r.Context()
	if v := r.Header.Get("X-Prometheus-Scrape-Timeout-Seconds"); v != "" {
		secs, err := strconv.ParseFloat(v, 64)
		if err != nil {
			http.Error(w, "bad timeout", http.StatusBadRequest)
			return
		}
		var cancel context.CancelFunc
		ctx, cancel = context.WithTimeout(ctx, time.Duration(secs*float64(time.Second))-h.offset)
		defer cancel()
	}
	// Pedantic: every sample is checked against its descriptor.
	reg := prometheus.NewPedanticRegistry()
	reg.MustRegister(h.exp.Collector(ctx, h.names...))
	if h.arrived != nil {
		h.arrived()
	}
	g := prometheus.Gatherers{reg}
	if h.process != nil {
		g = append(g, h.process)
	}
	promhttp.HandlerFor(g, promhttp.HandlerOpts{ErrorHandling: promhttp.ContinueOnError}).ServeHTTP(w, r)
}

// gate holds every request to next until the test opens it (or the
// request's client goes away), so that calls are "under way" for exactly as
// long as a test needs, whatever the speed of the machine.
type gate struct {
	next    http.Handler
	arrived atomic.Int64
	open    chan struct{}
	once    sync.Once
	holds   atomic.Pointer[func(*http.Request) bool] // the requests it holds (nil: all)
}

func newGate(next http.Handler) *gate { return &gate{next: next, open: make(chan struct{})} }

func (g *gate) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	if holds := g.holds.Load(); holds != nil && !(*holds)(r) {
		g.next.ServeHTTP(w, r)
		return
	}
	g.arrived.Add(1)
	select {
	case <-g.open:
		g.next.ServeHTTP(w, r)
	case <-r.Context().Done():
	}
}

func (g *gate) release() { g.once.Do(func() { close(g.open) }) }
