// Package web serves the exporter's HTTP endpoints: the metrics of every
// app (the telemetry path, /metrics by default), one app's metrics
// (/probe?app=NAME), the landing page, /-/healthy, /-/ready and
// /-/reload, on a server with bounds on what a client can hold or send.
package web

import (
	"fmt"
	"net/http"
	"time"

	"github.com/go-kit/log"
	"github.com/prometheus/client_golang/prometheus"

	"github.com/duix-exporter/duix_exporter/collector"
)

// Options configure the endpoints.
type Options struct {
	// Name is the exporter's name, the title of the landing page.
	Name string
	// TelemetryPath serves every app's metrics with the process-wide ones.
	TelemetryPath string
	// MaxRequests bounds the scrapes in flight, /metrics and /probe
	// together; more get 503 (0: unbounded).
	MaxRequests int
	// TimeoutOffset is subtracted from the scrape timeout Prometheus sends.
	TimeoutOffset time.Duration
	// WriteMargin is how long past its scrape's deadline an answer may
	// take to be written (0: DefaultWriteMargin).
	WriteMargin time.Duration
	Logger      log.Logger
}

// reloadFailed answers a failed reload. The reason may quote the file,
// which can hold credentials: it goes to the log only.
const reloadFailed = "Reloading the configuration failed: the previous configuration stays in use. " +
	"The exporter's log says why; duix_exporter_config_last_reload_successful stays 0 until a reload succeeds."

// NewHandler returns the exporter's endpoints. process holds the
// process-wide metrics (build info, Go and process collectors, client,
// exporter and reload metrics) served next to every app's; reload reloads
// the configuration (and logs why it failed).
func NewHandler(exp *collector.Exporter, process prometheus.Gatherer, reload func() error, o Options) (http.Handler, error) {
	logger := o.Logger
	if logger == nil {
		logger = log.NewNopLogger()
	}
	margin := o.WriteMargin
	if margin <= 0 {
		margin = DefaultWriteMargin
	}
	var slots scrapeSlots
	if o.MaxRequests > 0 {
		slots = make(scrapeSlots, o.MaxRequests)
	}
	scrape := func(process prometheus.Gatherer, shared *sharedGathering, apps func(*http.Request) ([]string, error)) http.Handler {
		return &scrapeHandler{exp: exp, process: process, shared: shared, slots: slots, offset: o.TimeoutOffset, margin: margin, logger: logger, apps: apps}
	}

	mux := http.NewServeMux()
	// Requests of /metrics ask for the same apps, and may share a gathering;
	// a probe gathers its app alone.
	mux.Handle(o.TelemetryPath, scrape(process, &sharedGathering{}, metricsApps))
	mux.Handle("/probe", scrape(nil, nil, probeApps(exp)))
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
			http.Error(w, reloadFailed, http.StatusInternalServerError)
			return
		}
		fmt.Fprintln(w, "Configuration reloaded")
	})
	if o.TelemetryPath != "/" && o.TelemetryPath != "" {
		landing, err := newLandingPage(o.Name, o.TelemetryPath, exp.Statuses)
		if err != nil {
			return nil, err
		}
		mux.Handle("/", landing)
	}
	return mux, nil
}
