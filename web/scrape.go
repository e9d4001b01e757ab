package web

import (
	"bytes"
	"cmp"
	"compress/gzip"
	"context"
	"errors"
	"fmt"
	"io"
	"math"
	"net/http"
	"net/url"
	"strconv"
	"strings"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/promhttp"
	"golang.org/x/sync/semaphore"

	"github.com/duix-exporter/duix_exporter/collector"
)

// Bounds on the time a scrape may take.
const (
	DefaultScrapeTimeout = 120 * time.Second      // without X-Prometheus-Scrape-Timeout-Seconds
	MaxScrapeTimeout     = time.Hour              // the most a request may ask for
	MinScrapeTimeout     = 100 * time.Millisecond // the least left after the offset: less cannot make a call
	DefaultWriteMargin   = 10 * time.Second       // to write an answer once it is ready
	timeoutHeader        = "X-Prometheus-Scrape-Timeout-Seconds"
)

// scrapeTimeout returns Prometheus' scrape timeout less offset, so that a slow platform yields duix_up 0 before
// Prometheus gives up; DefaultScrapeTimeout without the header.
func scrapeTimeout(h http.Header, offset time.Duration) (time.Duration, error) {
	vs := h.Values(timeoutHeader)
	if len(vs) == 0 || (len(vs) == 1 && vs[0] == "") {
		return DefaultScrapeTimeout, nil
	}
	secs, err := strconv.ParseFloat(vs[0], 64)
	timeout := time.Duration(math.Round(secs*float64(time.Second))) - offset
	switch {
	case len(vs) > 1:
		return 0, fmt.Errorf("invalid %s: give it once", timeoutHeader)
	case err != nil || !(secs > 0 && secs <= MaxScrapeTimeout.Seconds()): // not NaN
		return 0, fmt.Errorf("invalid %s %s: want a number of seconds greater than 0 and at most %g",
			timeoutHeader, strconv.Quote(vs[0][:min(len(vs[0]), 32)]), MaxScrapeTimeout.Seconds())
	case timeout < MinScrapeTimeout:
		return 0, errors.New("scrape timeout too short: at least 100ms after --scrape.timeout-offset")
	}
	return timeout, nil
}

// scraper serves scrapes, each with its own collector and deadline; /probe builds a registry per request (as
// blackbox_exporter per probe). The telemetry path makes one gathering of every app at a time: a scrape that arrives
// meanwhile has its apps fetched while it waits its turn (calls are shared, gatherings are not), and one whose deadline
// passes first is gathered at once, one such late gathering at a time: at most two gatherings, whatever the clients do.
type scraper struct {
	exp        *collector.Exporter
	o          Options
	opts       promhttp.HandlerOpts
	slots      *semaphore.Weighted // scrapes in flight, /metrics and /probe together
	turn, late *gathering
}

// gathering is a registry of the process-wide metrics and of the apps of the scrape that holds it.
type gathering struct {
	*semaphore.Weighted
	http.Handler
	col *collector.Scrape
}

// Describe implements prometheus.Collector: unchecked, /probe's registries check the same series.
func (g *gathering) Describe(chan<- *prometheus.Desc) {}

// Collect implements prometheus.Collector: the apps of the scrape that holds g.
func (g *gathering) Collect(ch chan<- prometheus.Metric) { g.col.Collect(ch) }

// handler serves the telemetry path (every app) or /probe (one).
func (s *scraper) handler(all bool) http.HandlerFunc {
	return func(w http.ResponseWriter, r *http.Request) {
		timeout, terr := scrapeTimeout(r.Header, s.o.TimeoutOffset)
		ctx, cancel := context.WithTimeout(r.Context(), timeout)
		defer cancel()
		col, err := s.collector(ctx, r, all)
		if err = cmp.Or(err, terr); err != nil {
			http.Error(w, err.Error(), http.StatusBadRequest)
			return
		}
		if !s.slots.TryAcquire(1) {
			http.Error(w, fmt.Sprintf("Limit of concurrent scrapes reached (%d), try again later.", s.o.MaxRequests), http.StatusServiceUnavailable)
			return
		}
		defer s.slots.Release(1)
		g := s.turn
		if !all {
			reg := prometheus.NewRegistry()
			reg.MustRegister(col)
			g = &gathering{Weighted: semaphore.NewWeighted(1), Handler: promhttp.HandlerFor(reg, s.opts)}
		}
		if !g.TryAcquire(1) {
			col.Fetch() // its apps are fetched while another gathers
			if !g.TryAcquire(1) && g.Acquire(ctx, 1) != nil {
				if g = s.late; g.Acquire(r.Context(), 1) != nil {
					http.Error(w, "The client left before its scrape was gathered.", http.StatusServiceUnavailable)
					return
				}
			}
		}
		g.col = col
		// Answers are made in memory, gzipped, so that a client that reads slowly holds no other scrape's turn.
		a, req := &answer{header: w.Header(), code: http.StatusOK}, r.Clone(r.Context())
		req.Header.Set("Accept-Encoding", "gzip")
		func() {
			defer g.Release(1) // before the answer is sent, even should promhttp panic
			g.ServeHTTP(a, req)
		}()
		body := io.Reader(&a.Buffer)
		if !acceptsGzip(r.Header) && a.header.Get("Content-Encoding") == "gzip" {
			if zr, err := gzip.NewReader(&a.Buffer); err == nil {
				a.header.Del("Content-Encoding")
				body = zr
			}
		}
		// The answer is ready: a client that does not read it is cut off the write margin later, which frees its slot.
		_ = http.NewResponseController(w).SetWriteDeadline(time.Now().Add(s.o.WriteMargin))
		w.WriteHeader(a.code)
		_, _ = io.Copy(w, body)
	}
}

// collector returns the collector of the request: of every app, or of the one app of /probe?app=NAME. Only configured
// names are accepted, checked in the configuration the scrape reports; the request never chooses a URL or a credential.
func (s *scraper) collector(ctx context.Context, r *http.Request, all bool) (*collector.Scrape, error) {
	if all {
		return s.exp.Collector(ctx), nil
	}
	q, err := url.ParseQuery(r.URL.RawQuery) // URL.Query drops what does not parse: it could hide a second app
	names := q["app"]
	col := s.exp.Collector(ctx, names[:min(len(names), 1)]...) // one looked up, however many were sent
	switch {
	case err != nil:
		return nil, errors.New("the query does not parse (a bad %-escape or a semicolon): use /probe?app=NAME")
	case len(names) == 0 || names[0] == "":
		return nil, errors.New("the app parameter is missing: use /probe?app=NAME with a name from the configuration")
	case len(names) > 1:
		return nil, errors.New("give exactly one app parameter")
	case col.Apps() == 0:
		return nil, fmt.Errorf("unknown app %s: not in the configuration", strconv.Quote(names[0][:min(len(names[0]), 64)]))
	}
	return col, nil
}

// acceptsGzip reports whether Accept-Encoding names gzip, with no q-value of 0.
func acceptsGzip(h http.Header) bool {
	for _, e := range strings.Split(strings.ToLower(strings.Join(h.Values("Accept-Encoding"), ",")), ",") {
		if name, q, _ := strings.Cut(strings.ReplaceAll(e, " ", ""), ";q="); name == "gzip" || name == "x-gzip" {
			return q == "" || strings.Trim(strings.Split(q, ";")[0], "0.") != "" // a parameter may follow q
		}
	}
	return false
}

// answer is an answer made in memory: its body is the buffer.
type answer struct {
	bytes.Buffer
	header http.Header
	code   int
}

func (a *answer) Header() http.Header  { return a.header }
func (a *answer) WriteHeader(code int) { a.code = code }
