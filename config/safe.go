package config

import (
	"cmp"
	"fmt"
	"sync"
	"time"

	"github.com/go-kit/log"
	"github.com/go-kit/log/level"
	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/promauto"
)

// SafeConfig reloads the configuration: a new one goes to the subscribers only when the file is valid, and replaces the
// one in force only when every subscriber accepts it.
type SafeConfig struct {
	mu          sync.Mutex // serialises reloads and guards subscribers
	subscribers []func(*Config) error

	reloadSuccess, reloadTimestamp prometheus.Gauge
	now                            func() time.Time
}

// NewSafeConfig returns an empty SafeConfig and registers its reload metrics
// with reg (nothing is registered when reg is nil).
func NewSafeConfig(reg prometheus.Registerer) *SafeConfig {
	f := promauto.With(reg)
	return &SafeConfig{
		reloadSuccess: f.NewGauge(prometheus.GaugeOpts{Name: "duix_exporter_config_last_reload_successful",
			Help: "Whether the last configuration reload attempt was successful."}),
		reloadTimestamp: f.NewGauge(prometheus.GaugeOpts{Name: "duix_exporter_config_last_reload_success_timestamp_seconds",
			Help: "Timestamp of the last successful configuration reload."}),
		now: time.Now,
	}
}

// ReloadConfig loads the file at path. When it is valid and every subscriber accepts it, it replaces the current
// configuration and the reload gauges record the success. Otherwise the current configuration is kept, the success
// gauge is set to 0 and the error is logged and returned.
func (sc *SafeConfig) ReloadConfig(path string, logger log.Logger) error {
	logger = cmp.Or(logger, log.NewNopLogger())
	sc.mu.Lock()
	defer sc.mu.Unlock()

	fail := func(what string, err error) error {
		sc.reloadSuccess.Set(0)
		level.Error(logger).Log("msg", "Error "+what+" config, keeping the previous one", "err", err)
		return fmt.Errorf("error %s config: %w", what, err)
	}
	cfg, err := Load(path)
	if err != nil {
		return fail("loading", err)
	}
	if limit, source := MemoryLimit(); cfg.CheckMemory(limit) != nil { // --config.check refuses it
		level.Warn(logger).Log("msg", "The configuration may not fit in the memory limit", "limit_from", source, "err", cfg.CheckMemory(limit))
	}
	for _, fn := range sc.subscribers {
		if err := fn(cfg); err != nil {
			return fail("applying", err)
		}
	}

	sc.reloadSuccess.Set(1)
	sc.reloadTimestamp.Set(float64(sc.now().UnixNano()) / 1e9)
	level.Info(logger).Log("msg", "Loaded config file", "file", path, "apps", len(cfg.Apps))
	return nil
}

// Subscribe registers fn to be called with each new, valid configuration before it replaces the current one,
// synchronously, in the order of registration. When fn returns an error the reload fails and the current configuration
// is kept (subscribers called before it have seen the new one). It is not called for the configuration already loaded.
// fn must not call ReloadConfig or Subscribe.
func (sc *SafeConfig) Subscribe(fn func(*Config) error) {
	sc.mu.Lock()
	defer sc.mu.Unlock()
	sc.subscribers = append(sc.subscribers, fn)
}
