// Package web serves the exporter's HTTP endpoints: every app's metrics (the telemetry path), one app's
// (/probe?app=NAME), the landing page, /-/healthy, /-/ready and /-/reload, on a server with bounds on what a client can
// hold or send.
package web

import (
	"cmp"
	_ "embed"
	"fmt"
	"html/template"
	stdlog "log"
	"log/slog"
	"math"
	"net/http"
	"time"

	"github.com/go-kit/log"
	"github.com/go-kit/log/level"
	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/promhttp"
	"github.com/prometheus/common/version"
	"golang.org/x/sync/semaphore"

	"github.com/duix-exporter/duix_exporter/collector"
)

// Bounds on what a client can hold or send; request bodies are never read, and a scrape's answer has a write deadline.
const (
	ReadHeaderTimeout = 10 * time.Second // a client that never finishes its headers is cut off
	IdleTimeout       = 2 * time.Minute  // an idle keep-alive connection is closed
	MaxHeaderBytes    = 64 << 10         // larger request headers get 431
	ShutdownTimeout   = 10 * time.Second // bounds a graceful shutdown
)

// Options configure the endpoints.
type Options struct {
	TelemetryPath string        // every app's metrics and the process-wide ones: a path other than / (main checks it)
	MaxRequests   int           // scrapes in flight, /metrics and /probe together; more get 503 (0 or less: unbounded)
	TimeoutOffset time.Duration // subtracted from the scrape timeout Prometheus sends
	WriteMargin   time.Duration // to write an answer once it is ready (0 or less: DefaultWriteMargin)
	Logger        log.Logger
	Janitor       interface{ Enabled() bool } // the landing page shows Enabled and Recent, its last decisions (nil: off)
}

// Registries hold the process-wide metrics, each collector registered with both (a prometheus.Registerer): the
// telemetry path gathers them and every app with the first, or the second for a scrape whose deadline passed first.
type Registries [2]*prometheus.Registry

func NewRegistries() Registries {
	return Registries{prometheus.NewRegistry(), prometheus.NewRegistry()}
}

func (r Registries) Register(c prometheus.Collector) error {
	return cmp.Or(r[0].Register(c), r[1].Register(c))
}

func (r Registries) MustRegister(cs ...prometheus.Collector) {
	r[0].MustRegister(cs...)
	r[1].MustRegister(cs...)
}

func (r Registries) Unregister(c prometheus.Collector) bool {
	first := r[0].Unregister(c)
	return r[1].Unregister(c) && first
}

// NewHandler returns the exporter's endpoints. The telemetry path serves reg (its alone), the process-wide metrics,
// which gets every app's collector and promhttp's metrics; reload reloads the configuration (and logs why it failed).
func NewHandler(exp *collector.Exporter, reg Registries, reload func() error, o Options) (_ http.Handler, err error) {
	defer func() { // the mux refuses a bad or taken telemetry path
		if r := recover(); r != nil {
			err = fmt.Errorf("telemetry path %q: %v", o.TelemetryPath, r)
		}
	}()
	o.Logger = cmp.Or(o.Logger, log.NewNopLogger())
	o.WriteMargin = cmp.Or(max(o.WriteMargin, 0), DefaultWriteMargin)
	s := &scraper{exp: exp, o: o, slots: semaphore.NewWeighted(cmp.Or(int64(max(o.MaxRequests, 0)), math.MaxInt64)),
		opts: promhttp.HandlerOpts{ErrorLog: stdlog.New(log.NewStdlibAdapter(level.Error(o.Logger)), "", 0), ErrorHandling: promhttp.ContinueOnError, Registry: reg}}
	s.turn, s.late = &gathering{Weighted: semaphore.NewWeighted(1)}, &gathering{Weighted: semaphore.NewWeighted(1)}
	mux := http.NewServeMux()
	mux.Handle(o.TelemetryPath, s.handler(true))
	mux.Handle("/probe", s.handler(false))
	mux.HandleFunc("/-/healthy", func(w http.ResponseWriter, _ *http.Request) { fmt.Fprintln(w, "Healthy") })
	mux.HandleFunc("/-/ready", func(w http.ResponseWriter, _ *http.Request) { fmt.Fprintln(w, "Ready") })
	mux.HandleFunc("/-/reload", func(w http.ResponseWriter, r *http.Request) {
		switch {
		case r.Method != http.MethodPost && r.Method != http.MethodPut:
			w.Header().Set("Allow", "POST, PUT")
			http.Error(w, "This endpoint requires a POST or PUT request.", http.StatusMethodNotAllowed)
		case reload() != nil: // the reason may quote the file, which can hold credentials: it goes to the log only
			http.Error(w, "Reloading the configuration failed: the previous configuration stays in use. The exporter's log says why; "+
				"duix_exporter_config_last_reload_successful stays 0 until a reload succeeds.", http.StatusInternalServerError)
		default:
			fmt.Fprintln(w, "Configuration reloaded")
		}
	})
	// The landing page lists the apps with what the last scrape found; it calls nothing itself.
	mux.HandleFunc("/{$}", func(w http.ResponseWriter, _ *http.Request) { landingPage(w, o, exp.Statuses()) })
	for i, g := range []*gathering{s.turn, s.late} { // once the mux is built: a handler that fails registers nothing
		reg[i].MustRegister(g)
		g.Handler = promhttp.HandlerFor(reg[i], s.opts)
	}
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.ContentLength != 0 { // a body, never read: net/http reads it before the answer and after, unless it cannot
			_ = http.NewResponseController(w).SetReadDeadline(time.Now()) // then the connection ends with the answer
		}
		mux.ServeHTTP(w, r)
	}), nil
}

// NewServer returns the HTTP server of h; its own errors (a failed TLS handshake, say) go to errorLog.
func NewServer(h http.Handler, errorLog *slog.Logger) *http.Server {
	return &http.Server{Handler: h, ReadHeaderTimeout: ReadHeaderTimeout, IdleTimeout: IdleTimeout, MaxHeaderBytes: MaxHeaderBytes,
		ErrorLog: slog.NewLogLogger(errorLog.Handler(), slog.LevelError)}
}

//go:embed landing.html
var landingHTML string
var landingTemplate = template.Must(template.New("landing").Parse(landingHTML))

func landingPage(w http.ResponseWriter, o Options, apps []collector.Status) {
	w.Header().Set("Content-Type", "text/html; charset=UTF-8")
	w.Header().Set("Cache-Control", "no-store")
	_ = http.NewResponseController(w).SetWriteDeadline(time.Now().Add(o.WriteMargin)) // a client that does not read is cut off
	_ = landingTemplate.Execute(w, map[string]any{"Version": version.Info(), "TelemetryPath": o.TelemetryPath,
		"Now": time.Now(), "Apps": apps, "Janitor": o.Janitor}) // fails only when the client has left
}
