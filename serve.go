package main

import (
	"context"
	"fmt"
	"log/slog"
	"net/http"
	"os"
	"os/signal"
	"runtime"
	"syscall"
	"time"

	"github.com/go-kit/log"
	"github.com/go-kit/log/level"
	"github.com/prometheus/client_golang/prometheus/collectors"
	versioncollector "github.com/prometheus/client_golang/prometheus/collectors/version"
	"github.com/prometheus/common/version"
	toolkit "github.com/prometheus/exporter-toolkit/web"
	"golang.org/x/sync/errgroup"

	"github.com/duix-exporter/duix_exporter/client"
	"github.com/duix-exporter/duix_exporter/collector"
	"github.com/duix-exporter/duix_exporter/config"
	"github.com/duix-exporter/duix_exporter/operator/janitor"
	"github.com/duix-exporter/duix_exporter/simulator"
	"github.com/duix-exporter/duix_exporter/web"
)

type serveOptions struct {
	configFile, logLevel, logFormat string
	web                             *toolkit.FlagConfig
	telemetryPath                   string
	maxRequests, maxProcs           int
	timeoutOffset                   time.Duration
	janitorAddress                  string
	checkOnly, demo                 bool
}

// runServe implements the serve command: the exporter.
func runServe(ctx context.Context, o serveOptions, logger log.Logger, slogger *slog.Logger) int {
	if o.checkOnly {
		return checkConfig(o.configFile)
	}
	hup := make(chan os.Signal, 1) // from the start: a SIGHUP while the first configuration loads reloads it after, not exits
	signal.Notify(hup, syscall.SIGHUP)
	// One CPU by default, as node_exporter; the GC at Go's defaults (and GOMEMLIMIT).
	if o.maxProcs > 0 {
		runtime.GOMAXPROCS(o.maxProcs)
	}
	if o.demo {
		path, cleanup, err := simulator.StartDemo(ctx, logger)
		if err != nil {
			level.Error(logger).Log("msg", "Cannot start the demo simulator", "err", err)
			return 1
		}
		defer cleanup()
		o.configFile = path
	}

	level.Info(logger).Log("msg", "Starting "+exporterName, "version", version.Info(), "gomaxprocs", runtime.GOMAXPROCS(0))
	level.Info(logger).Log("msg", "Build context", "build_context", version.BuildContext())

	// The process-wide metrics, served next to the apps' on /metrics.
	reg := web.NewRegistries()
	reg.MustRegister(versioncollector.NewCollector(exporterName), collectors.NewGoCollector(), collectors.NewProcessCollector(collectors.ProcessCollectorOpts{}))
	exp := collector.New(collector.Options{Logger: logger, Metrics: client.NewMetrics(reg), UserAgent: userAgent()})
	if err := exp.Register(reg); err != nil {
		level.Error(logger).Log("msg", "Cannot register metrics", "err", err)
		return 1
	}
	sc := config.NewSafeConfig(reg)
	sc.Subscribe(exp.Apply)
	var jan *janitor.Janitor // nil: off
	if o.janitorAddress != "" {
		var err error
		if jan, err = janitor.New(janitor.Options{Source: exp, Logger: log.With(logger, "component", "janitor"), Registerer: reg}); err != nil {
			level.Error(logger).Log("msg", "Cannot start the janitor", "err", err)
			return 1
		}
		sc.Subscribe(jan.Apply)
	}
	if err := sc.ReloadConfig(o.configFile, logger); err != nil {
		level.Error(logger).Log("msg", "Cannot start without a valid configuration", "file", o.configFile, "err", err)
		return 1
	}

	reload := func() error { return sc.ReloadConfig(o.configFile, logger) } // logs why it failed
	go func() {
		for range hup { // until the process ends
			_ = reload()
		}
	}()

	h, err := web.NewHandler(exp, reg, reload, web.Options{TelemetryPath: o.telemetryPath,
		MaxRequests: o.maxRequests, TimeoutOffset: o.timeoutOffset, Logger: logger, Janitor: jan})
	if err != nil {
		level.Error(logger).Log("msg", "Cannot build the HTTP handlers", "err", err)
		return 1
	}
	// The listeners run until the process stops or one fails, which stops the others.
	g, gctx := errgroup.WithContext(ctx)
	g.Go(func() error { return serveHTTP(gctx, web.NewServer(h, slogger), o.web, logger, slogger) })
	if jan != nil { // the janitor's webhook, on a listener of its own with the same web configuration
		flags := &toolkit.FlagConfig{WebListenAddresses: &[]string{o.janitorAddress}, WebSystemdSocket: new(bool), WebConfigFile: o.web.WebConfigFile}
		g.Go(func() error { return serveHTTP(gctx, jan.Server(slogger), flags, logger, slogger) })
	}
	if err := g.Wait(); err != nil {
		level.Error(logger).Log("msg", "HTTP server failed", "err", err)
		return 1
	}
	return 0
}

// serveHTTP serves srv on the addresses of flags, with TLS and basic auth from their web configuration file
// (exporter-toolkit), until ctx ends; then it shuts down gracefully within web.ShutdownTimeout and returns nil.
func serveHTTP(ctx context.Context, srv *http.Server, flags *toolkit.FlagConfig, logger log.Logger, slogger *slog.Logger) error {
	done := make(chan error, 1)
	go func() { done <- toolkit.ListenAndServe(srv, flags, slogger) }()
	select {
	case err := <-done: // not http.ErrServerClosed: only the shutdown below closes srv
		return err
	case <-ctx.Done():
	}
	level.Info(logger).Log("msg", "Shutting down")
	sctx, cancel := context.WithTimeout(context.Background(), web.ShutdownTimeout)
	defer cancel()
	if err := srv.Shutdown(sctx); err != nil {
		level.Warn(logger).Log("msg", "Graceful shutdown timed out", "err", err)
		_ = srv.Close()
	}
	return nil
}

// checkConfig implements --config.check.
func checkConfig(path string) int {
	cfg, err := config.Load(path)
	if err == nil { // the clients, as the exporter builds them (TLS files must parse); no request
		_, err = client.NewPool(cfg, client.PoolOptions{})
	}
	if limit, source := config.MemoryLimit(); err == nil && cfg.CheckMemory(limit) != nil {
		err = fmt.Errorf("%w (%s)", cfg.CheckMemory(limit), source)
	}
	if err != nil {
		fmt.Fprintf(os.Stderr, "FAILED: %s: %v\n", path, err)
		return 1
	}
	fmt.Printf("SUCCESS: %s is valid: %d app(s)\n", path, len(cfg.Apps))
	return 0
}
