package web

import (
	"context"
	"errors"
	"fmt"
	"math"
	"net/http"
	"regexp"
	"slices"
	"strconv"
	"strings"
	"sync"
	"time"

	"github.com/go-kit/log"
	"github.com/go-kit/log/level"
	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/promhttp"
	dto "github.com/prometheus/client_model/go"

	"github.com/duix-exporter/duix_exporter/collector"
)

// Bounds on the time a scrape may take.
const (
	// DefaultScrapeTimeout bounds a scrape whose request does not carry
	// X-Prometheus-Scrape-Timeout-Seconds.
	DefaultScrapeTimeout = 120 * time.Second
	// MaxScrapeTimeout is the largest scrape timeout a request may ask for.
	MaxScrapeTimeout = time.Hour
	// MinScrapeTimeout is the least time a scrape must have once
	// --scrape.timeout-offset is subtracted: less cannot make a call, and
	// would only count errors against the platform.
	MinScrapeTimeout = 100 * time.Millisecond
	// DefaultWriteMargin is how long past its scrape's deadline an answer
	// may take to be written; a client that reads slower is cut off.
	DefaultWriteMargin = 10 * time.Second
)

const timeoutHeader = "X-Prometheus-Scrape-Timeout-Seconds"

// errTooShort answers a scrape timeout that leaves no time for a call.
var errTooShort = errors.New("scrape timeout too short: at least 100ms after --scrape.timeout-offset")

// scrapeTimeout returns how long a scrape may take: Prometheus' scrape
// timeout (X-Prometheus-Scrape-Timeout-Seconds) less offset, so that a slow
// platform yields duix_up 0 before Prometheus gives up on the scrape (the
// offset is not subtracted from a timeout it would use up), or
// DefaultScrapeTimeout without the header. A value that is not a finite
// number of seconds in (0, 3600], or that leaves less than
// MinScrapeTimeout, is refused.
func scrapeTimeout(h http.Header, offset time.Duration) (time.Duration, error) {
	vs := h.Values(timeoutHeader)
	if len(vs) == 0 || (len(vs) == 1 && vs[0] == "") {
		return DefaultScrapeTimeout, nil
	}
	v := vs[0]
	if len(vs) > 1 {
		return 0, fmt.Errorf("invalid %s: give it once", timeoutHeader)
	}
	// Decimal seconds only: ParseFloat alone also takes "NaN", "Inf",
	// "0x1p3" and "1_0".
	secs, err := strconv.ParseFloat(v, 64)
	if !decimalSeconds.MatchString(v) || err != nil || math.IsNaN(secs) || math.IsInf(secs, 0) || secs <= 0 || secs > MaxScrapeTimeout.Seconds() {
		return 0, fmt.Errorf("invalid %s %s: want a number of seconds greater than 0 and at most %g",
			timeoutHeader, quoteBounded(v, 32), MaxScrapeTimeout.Seconds())
	}
	timeout := time.Duration(math.Round(secs * float64(time.Second)))
	if timeout-offset > 0 {
		timeout -= offset
	}
	if timeout < MinScrapeTimeout {
		return 0, errTooShort
	}
	return timeout, nil
}

// decimalSeconds is the syntax of the scrape-timeout header's value.
var decimalSeconds = regexp.MustCompile(`^([0-9]+\.?[0-9]*|\.[0-9]+)([eE][-+]?[0-9]+)?$`)

// quoteBounded quotes at most n bytes of s, escaping anything unprintable.
func quoteBounded(s string, n int) string {
	if len(s) > n {
		return strconv.Quote(s[:n]) + "..."
	}
	return strconv.Quote(s)
}

// scrapeSlots bounds the scrapes in flight across /metrics and /probe
// (nil: unbounded).
type scrapeSlots chan struct{}

// scrapeHandler serves one scrape per request: a registry holding the
// exporter's collector for the apps the request names, bounded by the
// scrape's deadline, and (for /metrics) the process-wide metrics.
type scrapeHandler struct {
	exp     *collector.Exporter
	process prometheus.Gatherer // nil: the apps' metrics only
	shared  *sharedGathering    // nil: every request gathers on its own
	slots   scrapeSlots
	offset  time.Duration
	margin  time.Duration // past the scrape's deadline, to write the answer
	logger  log.Logger
	// apps returns the apps to scrape (nil: all), or why the request is
	// refused.
	apps func(*http.Request) ([]string, error)
}

func (h *scrapeHandler) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	names, err := h.apps(r)
	if err != nil {
		http.Error(w, err.Error(), http.StatusBadRequest)
		return
	}
	timeout, err := scrapeTimeout(r.Header, h.offset)
	if err != nil {
		http.Error(w, err.Error(), http.StatusBadRequest)
		return
	}
	if h.slots != nil {
		select {
		case h.slots <- struct{}{}:
			defer func() { <-h.slots }()
		default:
			http.Error(w, fmt.Sprintf("Limit of concurrent scrapes reached (%d), try again later.", cap(h.slots)), http.StatusServiceUnavailable)
			return
		}
	}
	ctx, cancel := context.WithTimeout(r.Context(), timeout)
	defer cancel()
	// A client that does not read the answer has the margin from the end of
	// the gathering (not from its own deadline, which it chooses); then
	// writes fail, this handler returns and its slot and buffers are freed,
	// and the connection is closed.
	rc := http.NewResponseController(w)
	boundWrite := func() {
		if err := rc.SetWriteDeadline(time.Now().Add(h.margin)); err != nil && !errors.Is(err, http.ErrNotSupported) {
			level.Warn(h.logger).Log("msg", "Cannot bound the time to write a scrape's answer", "err", err)
		}
	}

	config := h.exp.Generation() // before the collector takes its apps
	reg := prometheus.NewRegistry()
	if err := reg.Register(h.exp.Collector(ctx, names...)); err != nil {
		level.Error(h.logger).Log("msg", "Cannot register the scrape's collector", "err", err)
		http.Error(w, "internal error: the scrape's collector cannot be registered", http.StatusInternalServerError)
		return
	}
	var g prometheus.Gatherer = reg
	if h.process != nil {
		// The apps first: their calls update the client metrics of the
		// process registry, which then include this scrape's calls.
		g = merged{reg, h.process}
	}
	if h.shared != nil {
		g = shared{h.shared, ctx, config, g}
	}
	gzipped(promhttp.HandlerFor(writeBound{g, boundWrite}, promhttp.HandlerOpts{
		ErrorLog:           &promhttpLogger{l: h.logger},
		ErrorHandling:      promhttp.ContinueOnError,
		DisableCompression: true,
	})).ServeHTTP(w, r)
}

// merged gathers two registries whose metric families have different
// names, and lists the families of both by name, as one registry would.
// prometheus.Gatherers, which can also merge families of the same name,
// checks every sample again for that: at 1000 apps, 15% of the CPU of a
// scrape's exposition (docs/performance.md).
type merged struct{ first, second prometheus.Gatherer }

// Gather implements prometheus.Gatherer. A family whose name is in both
// is an error and only the first one's is kept.
func (m merged) Gather() ([]*dto.MetricFamily, error) {
	a, errA := m.first.Gather()
	b, errB := m.second.Gather()
	mfs := append(a, b...)
	slices.SortStableFunc(mfs, func(x, y *dto.MetricFamily) int { return strings.Compare(x.GetName(), y.GetName()) })
	var dup error
	mfs = slices.CompactFunc(mfs, func(x, y *dto.MetricFamily) bool {
		if x.GetName() != y.GetName() {
			return false
		}
		dup = errors.Join(dup, fmt.Errorf("metric family %q gathered twice", x.GetName()))
		return true
	})
	return mfs, errors.Join(errA, errB, dup)
}

// writeBound is a Gatherer that bounds the time to write the answer once
// it has gathered.
type writeBound struct {
	prometheus.Gatherer
	bound func()
}

// Gather implements prometheus.Gatherer.
func (w writeBound) Gather() ([]*dto.MetricFamily, error) {
	mfs, err := w.Gatherer.Gather()
	w.bound()
	return mfs, err
}

// metricsApps picks every app.
func metricsApps(*http.Request) ([]string, error) { return nil, nil }

// probeApps picks the one app of /probe?app=NAME. Only configured names are
// accepted; the request never chooses a URL or a credential.
func probeApps(exp *collector.Exporter) func(*http.Request) ([]string, error) {
	return func(r *http.Request) ([]string, error) {
		names := r.URL.Query()["app"]
		switch {
		case len(names) == 0 || names[0] == "":
			return nil, errors.New("the app parameter is missing: use /probe?app=NAME with a name from the configuration")
		case len(names) > 1:
			return nil, errors.New("give exactly one app parameter")
		case !exp.HasApp(names[0]):
			return nil, fmt.Errorf("unknown app %s: not in the configuration", quoteBounded(names[0], 64))
		}
		return names[:1], nil
	}
}

// promhttpLogger logs promhttp's errors for one request. An answer that
// cannot be sent (the client left or stopped reading) fails once for each
// metric family; only the first failure is logged.
type promhttpLogger struct {
	l         log.Logger
	mu        sync.Mutex
	sendError bool
}

func (p *promhttpLogger) Println(v ...any) {
	msg := strings.TrimSuffix(fmt.Sprintln(v...), "\n")
	if strings.HasPrefix(msg, "error encoding and sending metric family") {
		p.mu.Lock()
		logged := p.sendError
		p.sendError = true
		p.mu.Unlock()
		if logged {
			return
		}
	}
	level.Error(p.l).Log("msg", msg)
}
