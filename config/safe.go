package config

import (
	"fmt"
	"slices"
	"sync"
	"time"

	"github.com/go-kit/log"
	"github.com/go-kit/log/level"
	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/promauto"
)

// SafeConfig holds the current configuration and replaces it on reload only
// when the new file is valid.
type SafeConfig struct {
	mu sync.RWMutex
	c  *Config

	// reloadMu serialises reloads, so that swaps and subscriber calls happen
	// in the same order.
	reloadMu    sync.Mutex
	subMu       sync.Mutex
	subscribers []func(*Config) error

	reloadSuccess   prometheus.Gauge
	reloadTimestamp prometheus.Gauge
	now             func() time.Time
}

// NewSafeConfig returns an empty SafeConfig and registers its reload metrics
// with reg (nothing is registered when reg is nil).
func NewSafeConfig(reg prometheus.Registerer) *SafeConfig {
	f := promauto.With(reg)
	return &SafeConfig{
		reloadSuccess: f.NewGauge(prometheus.GaugeOpts{
			Name: "duix_exporter_config_last_reload_successful",
			Help: "Whether the last configuration reload attempt was successful.",
		}),
		reloadTimestamp: f.NewGauge(prometheus.GaugeOpts{
			Name: "duix_exporter_config_last_reload_success_timestamp_seconds",
			Help: "Timestamp of the last successful configuration reload.",
		}),
		now: time.Now,
	}
}

// ReloadConfig loads the file at path. When it is valid and every
// subscriber accepts it, it replaces the current configuration and sets the
// success gauge to 1 and the timestamp gauge to now. Otherwise the current
// configuration is kept, the success gauge is set to 0, the error is logged
// and returned.
func (sc *SafeConfig) ReloadConfig(path string, logger log.Logger) error {
	if logger == nil {
		logger = log.NewNopLogger()
	}
	sc.reloadMu.Lock()
	defer sc.reloadMu.Unlock()

	cfg, err := Load(path)
	if err != nil {
		sc.reloadSuccess.Set(0)
		level.Error(logger).Log("msg", "Error loading config, keeping the previous one", "err", err)
		return fmt.Errorf("error loading config: %w", err)
	}

	sc.subMu.Lock()
	subs := slices.Clone(sc.subscribers)
	sc.subMu.Unlock()
	for _, fn := range subs {
		if err := fn(cfg); err != nil {
			sc.reloadSuccess.Set(0)
			level.Error(logger).Log("msg", "Error applying config, keeping the previous one", "err", err)
			return fmt.Errorf("error applying config: %w", err)
		}
	}

	sc.mu.Lock()
	sc.c = cfg
	sc.mu.Unlock()

	sc.reloadSuccess.Set(1)
	sc.reloadTimestamp.Set(float64(sc.now().UnixNano()) / 1e9)
	level.Info(logger).Log("msg", "Loaded config file", "file", path, "apps", len(cfg.Apps))
	return nil
}

// Get returns the current configuration, nil before the first successful
// load. The result is shared and must not be modified.
func (sc *SafeConfig) Get() *Config {
	sc.mu.RLock()
	defer sc.mu.RUnlock()
	return sc.c
}

// Subscribe registers fn to be called with each new, valid configuration
// before it replaces the current one, synchronously, in the order of
// registration. When fn returns an error the reload fails: the current
// configuration is kept (subscribers called before it have seen the new
// one and must tolerate being called again with a later one). It is not
// called for the configuration already loaded; use Get for that. fn must
// not call ReloadConfig.
func (sc *SafeConfig) Subscribe(fn func(*Config) error) {
	if fn == nil {
		return
	}
	sc.subMu.Lock()
	defer sc.subMu.Unlock()
	sc.subscribers = append(sc.subscribers, fn)
}
