package main

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"net/http"
	"os"
	"os/signal"
	"syscall"
	"time"

	"github.com/go-kit/log"
	"github.com/go-kit/log/level"
	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/collectors"
	versioncollector "github.com/prometheus/client_golang/prometheus/collectors/version"
	"github.com/prometheus/common/version"
	"github.com/prometheus/exporter-toolkit/web"

	"github.com/duix-exporter/duix_exporter/client"
	"github.com/duix-exporter/duix_exporter/collector"
	"github.com/duix-exporter/duix_exporter/config"
)

type serveOptions struct {
	configFile, logLevel, logFormat string
	web                             *web.FlagConfig
	telemetryPath                   string
	maxRequests                     int
	timeoutOffset                   time.Duration
	checkOnly, demo                 bool
}

// shutdownTimeout bounds a graceful shutdown.
const shutdownTimeout = 10 * time.Second

func runServe(o serveOptions, logger log.Logger, slogger *slog.Logger) int {
	if o.checkOnly {
		return checkConfig(o.configFile)
	}
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	defer stop()

	if o.demo {
		path, cleanup, err := startDemo(ctx, logger)
		if err != nil {
			level.Error(logger).Log("msg", "Cannot start the demo simulator", "err", err)
			return 1
		}
		defer cleanup()
		o.configFile = path
	}

	level.Info(logger).Log("msg", "Starting "+exporterName, "version", version.Info())
	level.Info(logger).Log("msg", "Build context", "build_context", version.BuildContext())

	reg := prometheus.NewRegistry()
	reg.MustRegister(
		versioncollector.NewCollector(exporterName),
		collectors.NewGoCollector(),
		collectors.NewProcessCollector(collectors.ProcessCollectorOpts{}),
	)
	exp := collector.New(collector.Options{
		Logger:    logger,
		Metrics:   client.NewMetrics(reg),
		UserAgent: exporterName + "/" + version.Version,
	})
	if err := exp.Register(reg); err != nil {
		level.Error(logger).Log("msg", "Cannot register metrics", "err", err)
		return 1
	}
	sc := config.NewSafeConfig(reg)
	sc.Subscribe(exp.Apply)
	if err := sc.ReloadConfig(o.configFile, logger); err != nil {
		level.Error(logger).Log("msg", "Cannot start without a valid configuration", "file", o.configFile, "err", err)
		return 1
	}

	reload := func() error { return sc.ReloadConfig(o.configFile, logger) }
	hup := make(chan os.Signal, 1)
	signal.Notify(hup, syscall.SIGHUP)
	defer signal.Stop(hup)
	go func() {
		for {
			select {
			case <-hup:
				_ = reload() // logged by ReloadConfig
			case <-ctx.Done():
				return
			}
		}
	}()

	mux, err := newMux(o, exp, reg, reload, logger)
	if err != nil {
		level.Error(logger).Log("msg", "Cannot build the HTTP handlers", "err", err)
		return 1
	}
	srv := newServer(mux, slogger)
	done := make(chan error, 1)
	go func() { done <- web.ListenAndServe(srv, o.web, slogger) }()
	select {
	case err := <-done:
		if err != nil && !errors.Is(err, http.ErrServerClosed) {
			level.Error(logger).Log("msg", "HTTP server failed", "err", err)
			return 1
		}
		return 0
	case <-ctx.Done():
	}
	level.Info(logger).Log("msg", "Shutting down")
	sctx, cancel := context.WithTimeout(context.Background(), shutdownTimeout)
	defer cancel()
	if err := srv.Shutdown(sctx); err != nil {
		level.Warn(logger).Log("msg", "Graceful shutdown timed out", "err", err)
		_ = srv.Close()
	}
	return 0
}

// Bounds on what a client of the exporter's endpoints can hold or send.
// There is no read or write timeout: a scrape may take as long as
// Prometheus' scrape timeout (or DefaultScrapeTimeout), and request bodies
// are never read (the server discards at most 256 KiB of one, then closes
// the connection).
const (
	readHeaderTimeout = 10 * time.Second // a client that never finishes its headers is cut off
	idleTimeout       = 2 * time.Minute  // an idle keep-alive connection is closed
	maxHeaderBytes    = 64 << 10         // larger request headers get 431
)

// newServer returns the HTTP server of the exporter's endpoints; its own
// errors (a failed TLS handshake, say) go to errorLog.
func newServer(h http.Handler, errorLog *slog.Logger) *http.Server {
	srv := &http.Server{
		Handler:           h,
		ReadHeaderTimeout: readHeaderTimeout,
		IdleTimeout:       idleTimeout,
		MaxHeaderBytes:    maxHeaderBytes,
	}
	if errorLog != nil {
		srv.ErrorLog = slog.NewLogLogger(errorLog.Handler(), slog.LevelError)
	}
	return srv
}

// checkConfig implements --config.check.
func checkConfig(path string) int {
	cfg, err := config.Load(path)
	if err != nil {
		fmt.Fprintf(os.Stderr, "FAILED: %s: %v\n", path, err)
		return 1
	}
	fmt.Printf("SUCCESS: %s is valid: %d app(s)\n", path, len(cfg.Apps))
	return 0
}

func newMux(o serveOptions, exp *collector.Exporter, reg prometheus.Gatherer, reload func() error, logger log.Logger) (*http.ServeMux, error) {
	hopts := collector.HandlerOpts{
		Gatherer:            reg,
		TimeoutOffset:       o.timeoutOffset,
		Logger:              logger,
		MaxRequestsInFlight: o.maxRequests,
	}
	mux := http.NewServeMux()
	mux.Handle(o.telemetryPath, exp.MetricsHandler(hopts))
	mux.Handle("/probe", exp.ProbeHandler(hopts))
	mux.HandleFunc("/-/healthy", func(w http.ResponseWriter, _ *http.Request) {
		fmt.Fprintln(w, "Healthy")
	})
	mux.HandleFunc("/-/ready", func(w http.ResponseWriter, _ *http.Request) {
		fmt.Fprintln(w, "Ready")
	})
	mux.HandleFunc("/-/reload", func(w http.ResponseWriter, r *http.Request) {
		if r.Method != http.MethodPost && r.Method != http.MethodPut {
			w.Header().Set("Allow", "POST, PUT")
			http.Error(w, "This endpoint requires a POST or PUT request.", http.StatusMethodNotAllowed)
			return
		}
		if err := reload(); err != nil {
			http.Error(w, fmt.Sprintf("failed to reload config: %s", err), http.StatusInternalServerError)
			return
		}
		fmt.Fprintln(w, "Configuration reloaded")
	})
	if o.telemetryPath != "/" && o.telemetryPath != "" {
		landing, err := newLandingPage(o.telemetryPath, exp)
		if err != nil {
			return nil, err
		}
		mux.Handle("/", landing)
	}
	return mux, nil
}
