// Package collector turns the platform's answers into Prometheus metrics.
// An Exporter holds the per-app state that outlives a scrape (the last
// result, conversation details, error counts); Collector returns the
// prometheus.Collector of one scrape, bounded by the scrape's deadline.
package collector

import (
	"context"
	"slices"
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

	mu      sync.RWMutex
	applied uint64 // configurations applied
	set     settings
	pool    *client.Pool
	apps    []*appState // in configuration order
	byName  map[string]*appState
}

// settings are what a scrape needs of the configuration in force.
type settings struct {
	api config.API
	// sem bounds the calls to the platform in flight, across apps and
	// requests, to api.max_concurrency; a request fetches as many apps at
	// once (workers).
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
		byName: map[string]*appState{},
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
// counts, conversation details, last result, session lifecycle) of apps
// whose name and app_id are unchanged. Apps no longer configured are
// dropped with their state. The old clients' idle connections are closed
// once their last call has ended.
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
	byName := make(map[string]*appState, len(cfg.Apps))
	for _, a := range cfg.Apps {
		st := e.byName[a.Name]
		if st == nil || st.appID != a.AppID {
			st = &appState{name: a.Name, appID: a.AppID}
		}
		st.configure(pool.Client(a.Name), a.Conversations, cfg.Sessions.Lifecycle, cfg.Sessions.MaxTracked)
		apps = append(apps, st)
		byName[a.Name] = st
	}
	workers := max(cfg.API.MaxConcurrency, 1)
	old := e.pool
	e.set = settings{api: cfg.API, sem: semaphore.NewWeighted(int64(workers)), workers: workers}
	e.pool, e.apps, e.byName = pool, apps, byName
	e.applied++
	if old != nil {
		old.Close()
	}
	return nil
}

// HasApp reports whether name is a configured app.
func (e *Exporter) HasApp(name string) bool {
	return e.app(name) != nil
}

func (e *Exporter) app(name string) *appState {
	e.mu.RLock()
	defer e.mu.RUnlock()
	return e.byName[name]
}

// AppClient returns the platform client of the named app, nil when it is
// not configured.
func (e *Exporter) AppClient(name string) *client.Client {
	if st := e.app(name); st != nil {
		return st.client()
	}
	return nil
}

// FirstSeen returns when the session lifecycle first listed the session
// sessionID of the named app; ok is false when it does not follow it (an
// unknown app or session, or the lifecycle off).
func (e *Exporter) FirstSeen(app, sessionID string) (_ time.Time, ok bool) {
	st := e.app(app)
	if st == nil {
		return time.Time{}, false
	}
	st.mu.Lock()
	defer st.mu.Unlock()
	if st.life == nil {
		return time.Time{}, false
	}
	t, ok := st.life.active[sessionID]
	return t.firstSeen, ok
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

// snapshot returns the apps to scrape (all when names is empty), without
// duplicates, and the settings in force.
func (e *Exporter) snapshot(names []string) ([]*appState, settings) {
	e.mu.RLock()
	defer e.mu.RUnlock()
	if len(names) == 0 {
		return e.apps, e.set
	}
	var out []*appState
	for _, n := range names {
		if st := e.byName[n]; st != nil && !slices.Contains(out, st) {
			out = append(out, st)
		}
	}
	return out, e.set
}

// Collector returns the collector of one scrape of the named apps (all
// when names is empty), bounded by ctx: an app whose calls are not done
// when ctx ends is reported with duix_up 0. The scrape's request arrived
// now: it reuses what other requests fetch from now on, and the calls
// under way now.
func (e *Exporter) Collector(ctx context.Context, names ...string) prometheus.Collector {
	return &scrape{e: e, ctx: ctx, names: names, arrived: time.Now(), id: scrapeIDs.Add(1)}
}

// Generation counts the configurations applied: a scrape begun under one
// reports its apps.
func (e *Exporter) Generation() uint64 {
	e.mu.RLock()
	defer e.mu.RUnlock()
	return e.applied
}
