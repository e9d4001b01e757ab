// Package collector turns the platform's answers into Prometheus metrics. An Exporter holds the per-app state that
// outlives a scrape; Collector returns the prometheus.Collector of one scrape, bounded by its deadline.
package collector

import (
	"cmp"
	"context"
	"slices"
	"strconv"
	"sync"
	"time"

	"github.com/go-kit/log"
	"github.com/go-kit/log/level"
	"github.com/prometheus/client_golang/prometheus"
	"golang.org/x/sync/semaphore"
	"golang.org/x/sync/singleflight"

	"github.com/duix-exporter/duix_exporter/client"
	"github.com/duix-exporter/duix_exporter/config"
)

// Options configure an Exporter.
type Options struct {
	Logger    log.Logger
	Metrics   *client.Metrics  // instruments the platform client, across reloads
	UserAgent string           // sent with every request to the platform
	Now       func() time.Time // the clock of timestamps and api.min_interval (nil: time.Now)
}

// Exporter collects the metrics of the configured apps.
type Exporter struct {
	opts    Options
	shared  *prometheus.CounterVec
	flights singleflight.Group // the apps' fetches under way by appState.key, their conversation refreshes by key+"r"

	mu     sync.RWMutex
	set    settings
	apps   []*appState // in configuration order
	byName map[string]*appState
	made   uint64 // appStates made, for their keys
}

// settings are the configuration in force; sem bounds the calls in flight.
type settings struct {
	api  config.API
	sem  *semaphore.Weighted
	pool *client.Pool
}

// New returns an Exporter with no apps; call Apply with a configuration.
func New(opts Options) *Exporter {
	opts.Logger = cmp.Or(opts.Logger, log.NewNopLogger())
	if opts.Now == nil {
		opts.Now = time.Now
	}
	e := &Exporter{opts: opts, shared: prometheus.NewCounterVec(prometheus.CounterOpts{
		Name: "duix_exporter_shared_fetches_total",
		Help: "Per-app fetches that reused another request's work instead of calling the platform: how=\"in_flight\" joined calls under way, or reused calls that were under way or begun when the request arrived, how=\"cached\" reused a result younger than api.min_interval.",
	}, []string{"how"})}
	e.shared.WithLabelValues("in_flight") // both series from the start
	e.shared.WithLabelValues("cached")
	return e
}

// Register registers the exporter's own process-wide metrics.
func (e *Exporter) Register(reg prometheus.Registerer) error { return reg.Register(e.shared) }

// Apply switches to cfg, keeping the state of the apps whose name and app_id are unchanged and the last good secret
// files; other apps start afresh. The old clients' idle connections are closed once their last call has ended.
func (e *Exporter) Apply(cfg *config.Config) error {
	_, prev := e.snapshot(nil) // reloads come one at a time (config.SafeConfig); scrapes go on while a pool is built
	pool, err := client.NewPool(cfg, client.PoolOptions{Metrics: e.opts.Metrics, UserAgent: e.opts.UserAgent, Now: e.opts.Now, Previous: prev.pool,
		OnSecretFileError: func(kind, path string, err error) {
			level.Warn(e.opts.Logger).Log("msg", "Refused a changed "+kind+" file, keeping the last good one", "file", path, "err", err)
		}})
	if err != nil {
		return err
	}
	e.mu.Lock()
	defer e.mu.Unlock()
	apps, byName := make([]*appState, 0, len(cfg.Apps)), make(map[string]*appState, len(cfg.Apps))
	for _, a := range cfg.Apps {
		st := e.byName[a.Name]
		if st == nil || st.appID != a.AppID {
			st, e.made = &appState{name: a.Name, appID: a.AppID, errs: map[string]uint64{}, key: strconv.FormatUint(e.made, 10)}, e.made+1
		}
		st.configure(pool.Client(a.Name), a.Conversations, cfg.Sessions.Lifecycle, cfg.Sessions.MaxTracked)
		apps, byName[a.Name] = append(apps, st), st
	}
	if e.set.pool != nil {
		e.set.pool.Close()
	}
	sem := e.set.sem // calls under way hold its slots: a new one only for a new bound
	if sem == nil || cfg.API.MaxConcurrency != e.set.api.MaxConcurrency {
		sem = semaphore.NewWeighted(int64(max(cfg.API.MaxConcurrency, 1)))
	}
	e.set = settings{api: cfg.API, sem: sem, pool: pool}
	e.apps, e.byName = apps, byName
	return nil
}

// AppClient returns the platform client of the named app (nil: unknown).
func (e *Exporter) AppClient(name string) *client.Client {
	if _, set := e.snapshot(nil); set.pool != nil {
		return set.pool.Client(name)
	}
	return nil
}

// FirstSeen returns when the session lifecycle first listed the session;
// ok is false when it does not follow it (or the lifecycle is off).
func (e *Exporter) FirstSeen(app, sessionID string) (_ time.Time, ok bool) {
	apps, _ := e.snapshot([]string{app})
	for _, st := range apps {
		st.mu.Lock()
		defer st.mu.Unlock()
		if st.life != nil {
			t, ok := st.life.active[sessionID]
			return t.firstSeen, ok
		}
	}
	return time.Time{}, false
}

// Statuses returns the last result of every app, in configuration order.
func (e *Exporter) Statuses() []Status {
	apps, _ := e.snapshot(nil)
	out := make([]Status, len(apps))
	for i, st := range apps {
		out[i] = st.status()
	}
	return out
}

// snapshot returns the named apps (all when none), each once, and the settings in force.
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

// Collector returns the collector of one scrape of the named apps (all when none) as configured now, whatever a
// reload does meanwhile: an app not fetched when ctx ends has duix_up 0. It reuses what lands from now on.
func (e *Exporter) Collector(ctx context.Context, names ...string) *Scrape {
	apps, set := e.snapshot(names)
	return &Scrape{e: e, ctx: ctx, apps: apps, set: set, arrived: time.Now()}
}
