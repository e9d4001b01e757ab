package collector

import (
	"context"
	"fmt"
	"net/http"
	"strconv"
	"time"

	"github.com/go-kit/log"
	"github.com/go-kit/log/level"
	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/promhttp"
	dto "github.com/prometheus/client_model/go"
)

// DefaultScrapeTimeout bounds a scrape whose request does not carry
// X-Prometheus-Scrape-Timeout-Seconds.
const DefaultScrapeTimeout = 120 * time.Second

// ScrapeContext derives a scrape's deadline from the
// X-Prometheus-Scrape-Timeout-Seconds header, less offset, so that a slow
// platform yields duix_up 0 before Prometheus gives up on the scrape.
func ScrapeContext(r *http.Request, offset time.Duration) (context.Context, context.CancelFunc, error) {
	timeout := DefaultScrapeTimeout
	if v := r.Header.Get("X-Prometheus-Scrape-Timeout-Seconds"); v != "" {
		secs, err := strconv.ParseFloat(v, 64)
		if err != nil || secs <= 0 || secs > 3600 {
			return nil, nil, fmt.Errorf("invalid X-Prometheus-Scrape-Timeout-Seconds %q", v)
		}
		timeout = time.Duration(secs * float64(time.Second))
		if timeout-offset > 0 {
			timeout -= offset
		}
	}
	ctx, cancel := context.WithTimeout(r.Context(), timeout)
	return ctx, cancel, nil
}

// HandlerOpts configure the /metrics and /probe handlers.
type HandlerOpts struct {
	// Gatherer holds the process-wide metrics (build info, client, reload,
	// Go and process collectors) served next to the apps' metrics.
	Gatherer prometheus.Gatherer
	// TimeoutOffset is subtracted from the scrape timeout Prometheus sends.
	TimeoutOffset time.Duration
	Logger        log.Logger
	// MaxRequestsInFlight bounds concurrent scrapes (0: unbounded).
	MaxRequestsInFlight int
}

// MetricsHandler serves every app's metrics with the process-wide ones.
func (e *Exporter) MetricsHandler(o HandlerOpts) http.Handler {
	return e.handler(o, func(r *http.Request) ([]string, int, string) { return nil, 0, "" }, true)
}

// ProbeHandler serves one app's metrics: /probe?app=NAME. Only configured
// names are accepted; the request never chooses a URL or a credential.
func (e *Exporter) ProbeHandler(o HandlerOpts) http.Handler {
	return e.handler(o, func(r *http.Request) ([]string, int, string) {
		q := r.URL.Query()
		names := q["app"]
		switch {
		case len(names) == 0 || names[0] == "":
			return nil, http.StatusBadRequest, "the app parameter is missing: use /probe?app=NAME with a name from the configuration"
		case len(names) > 1:
			return nil, http.StatusBadRequest, "give exactly one app parameter"
		case !e.HasApp(names[0]):
			return nil, http.StatusBadRequest, fmt.Sprintf("unknown app %q: not in the configuration", truncateName(names[0]))
		}
		return names[:1], 0, ""
	}, false)
}

func truncateName(s string) string {
	if len(s) > 64 {
		return s[:64] + "..."
	}
	return s
}

func (e *Exporter) handler(o HandlerOpts, pick func(*http.Request) ([]string, int, string), withProcess bool) http.Handler {
	logger := o.Logger
	if logger == nil {
		logger = log.NewNopLogger()
	}
	// The limit is shared by every request to this handler (a promhttp
	// handler is made per request, so its own limit would not be).
	var inFlight chan struct{}
	if o.MaxRequestsInFlight > 0 {
		inFlight = make(chan struct{}, o.MaxRequestsInFlight)
	}
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		names, status, msg := pick(r)
		if status != 0 {
			http.Error(w, msg, status)
			return
		}
		if inFlight != nil {
			select {
			case inFlight <- struct{}{}:
				defer func() { <-inFlight }()
			default:
				http.Error(w, fmt.Sprintf("Limit of concurrent scrapes reached (%d), try again later.", o.MaxRequestsInFlight), http.StatusServiceUnavailable)
				return
			}
		}
		ctx, cancel, err := ScrapeContext(r, o.TimeoutOffset)
		if err != nil {
			http.Error(w, err.Error(), http.StatusBadRequest)
			return
		}
		defer cancel()
		g := &scrapeGatherer{e: e, ctx: ctx, names: names}
		if withProcess {
			g.process = o.Gatherer
		}
		promhttp.HandlerForTransactional(g, promhttp.HandlerOpts{
			ErrorLog:      promhttpLogger{logger},
			ErrorHandling: promhttp.ContinueOnError,
		}).ServeHTTP(w, r)
	})
}

// scrapeGatherer gathers one scrape: the apps' metrics from a registry
// made for the request, then the process-wide ones.
type scrapeGatherer struct {
	e       *Exporter
	ctx     context.Context
	names   []string
	process prometheus.Gatherer
}

// Gather implements prometheus.TransactionalGatherer.
func (g *scrapeGatherer) Gather() ([]*dto.MetricFamily, func(), error) {
	reg := prometheus.NewRegistry()
	if err := reg.Register(g.e.Collector(g.ctx, g.names...)); err != nil {
		return nil, func() {}, err
	}
	gs := prometheus.Gatherers{reg}
	if g.process != nil {
		gs = append(gs, g.process)
	}
	mfs, err := gs.Gather()
	return mfs, func() {}, err
}

type promhttpLogger struct{ l log.Logger }

func (p promhttpLogger) Println(v ...any) { level.Error(p.l).Log("msg", fmt.Sprint(v...)) }
