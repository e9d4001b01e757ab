// Package collector turns the platform's answers into Prometheus metrics.
// An Exporter holds the per-app state that outlives a scrape (the last
// result, conversation details, error counts); Collector returns the
// prometheus.Collector of one scrape, bounded by the scrape's deadline.
package collector

import (
	"context"
	"slices"
	"strings"
	"sync"
	"time"

	"github.com/go-kit/log"
	"github.com/go-kit/log/level"
	"github.com/prometheus/client_golang/prometheus"
	"golang.org/x/sync/semaphore"

	"github.com/duix-exporter/duix_exporter/client"
	"github.com/duix-exporter/duix_exporter/config"
)

// Options configure an Exporter.
type Options struct {
	Logger log.Logger
	// Metrics instruments the platform client (shared across reloads).
	Metrics *client.Metrics
	// UserAgent is sent with every upstream request.
	UserAgent string
	// Now is the clock of timestamps and of api.min_interval (nil: time.Now).
	Now func() time.Time
}

// Exporter collects the metrics of the configured apps.
type Exporter struct {
	logger    log.Logger
	metrics   *client.Metrics
	userAgent string
	now       func() time.Time
	shared    *prometheus.CounterVec
	durations *prometheus.HistogramVec

	flights flights

	mu      sync.RWMutex
	applied uint64 // configurations applied
	set     settings
	pool    *client.Pool
	apps    []*appState          // in configuration order
	byKey   map[string]*appState // by name
}

// settings are what a scrape needs of the configuration in force.
type settings struct {
	api config.API
	// sem bounds the calls to the platform in flight, across requests, to
	// api.max_concurrency: a flight makes its calls on one slot. A request
	// has as many workers.
	sem     *semaphore.Weighted
	workers int
}

// New returns an Exporter with no apps; call Apply with a configuration.
func New(opts Options) *Exporter {
	if opts.Logger == nil {
		opts.Logger = log.NewNopLogger()
	}
	if opts.Now == nil {
		opts.Now = time.Now
	}
	e := &Exporter{
		logger:    opts.Logger,
		metrics:   opts.Metrics,
		userAgent: opts.UserAgent,
		now:       opts.Now,
		shared: prometheus.NewCounterVec(prometheus.CounterOpts{
			Name: "duix_exporter_shared_fetches_total",
			Help: "Per-app fetches that reused another request's work instead of calling the platform: how=\"in_flight\" joined calls under way, or reused calls that were under way or begun when the request arrived, how=\"cached\" reused a result younger than api.min_interval.",
		}, []string{"how"}),
		durations: newSessionDurations(),
		flights:   flights{m: map[*appState]*flight{}},
		byKey:     map[string]*appState{},
	}
	for _, how := range []string{"in_flight", "cached"} {
		e.shared.WithLabelValues(how) // both series from the start
	}
	return e
}

// Register registers the exporter's own process-wide metrics.
func (e *Exporter) Register(reg prometheus.Registerer) error {
	return reg.Register(e.shared)
}

// Apply switches to cfg: it builds new clients and keeps the state (error
// counts, conversation details, last result) of apps whose name and app_id
// are unchanged. Apps no longer configured are dropped with their state.
func (e *Exporter) Apply(cfg *config.Config) error {
	pool, err := client.NewPool(cfg, client.PoolOptions{Metrics: e.metrics, UserAgent: e.userAgent, Now: e.now,
		OnSecretFileError: func(kind, path string, err error) {
			level.Warn(e.logger).Log("msg", "Refused a changed "+kind+" file, keeping the last good one", "file", path, "err", err)
		}})
	if err != nil {
		return err
	}
	e.mu.Lock()
	defer e.mu.Unlock()
	apps := make([]*appState, 0, len(cfg.Apps))
	byKey := make(map[string]*appState, len(cfg.Apps))
	lifeOn, maxTracked := cfg.Sessions.Lifecycle, cfg.Sessions.MaxTracked
	for _, a := range cfg.Apps {
		st := e.byKey[a.Name]
		if st == nil || st.appID != a.AppID {
			st = newAppState(a.Name, a.AppID)
			e.durations.DeleteLabelValues(a.Name) // a new app starts afresh
		}
		ls := lifeSettings{maxTracked: maxTracked}
		if lifeOn {
			ls.durations = e.durations.WithLabelValues(a.Name).(prometheus.Histogram)
		} else {
			e.durations.DeleteLabelValues(a.Name)
		}
		st.configure(pool.Client(a.Name), a.Conversations, ls)
		apps = append(apps, st)
		byKey[a.Name] = st
	}
	for name := range e.byKey {
		if byKey[name] == nil {
			e.durations.DeleteLabelValues(name)
		}
	}
	old := e.pool
	workers := max(cfg.API.MaxConcurrency, 1)
	e.set = settings{api: cfg.API, sem: semaphore.NewWeighted(int64(workers)), workers: workers}
	e.pool, e.apps, e.byKey = pool, apps, byKey
	e.applied++
	if old != nil {
		old.Close()
	}
	return nil
}

// HasApp reports whether name is a configured app.
func (e *Exporter) HasApp(name string) bool {
	e.mu.RLock()
	defer e.mu.RUnlock()
	return e.byKey[name] != nil
}

// Statuses returns the last result of every configured app, in
// configuration order.
func (e *Exporter) Statuses() []Status {
	e.mu.RLock()
	apps := e.apps
	e.mu.RUnlock()
	out := make([]Status, 0, len(apps))
	for _, st := range apps {
		out = append(out, st.status())
	}
	return out
}

// snapshot returns the apps to scrape (all when names is empty), in name
// order and without duplicates, and the settings in force.
func (e *Exporter) snapshot(names []string) ([]*appState, settings) {
	e.mu.RLock()
	defer e.mu.RUnlock()
	var out []*appState
	if len(names) == 0 {
		out = slices.Clone(e.apps)
	} else {
		for _, n := range names {
			if st := e.byKey[n]; st != nil {
				out = append(out, st)
			}
		}
	}
	slices.SortFunc(out, func(a, b *appState) int { return strings.Compare(a.name, b.name) })
	return slices.Compact(out), e.set
}

// Collector returns the collector of one scrape of the named apps (all
// when names is empty), bounded by ctx: an app whose calls are not done
// when ctx ends is reported with duix_up 0. The scrape's request arrived
// now: it reuses what other requests fetch from now on, and the calls
// under way now.
func (e *Exporter) Collector(ctx context.Context, names ...string) prometheus.Collector {
	return &scrape{e: e, ctx: ctx, names: names, arrived: time.Now()}
}

// Generation counts the configurations applied: a scrape begun under one
// reports its apps.
func (e *Exporter) Generation() uint64 {
	e.mu.RLock()
	defer e.mu.RUnlock()
	return e.applied
}
