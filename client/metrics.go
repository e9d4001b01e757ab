package client

import (
	"sync"
	"time"

	"github.com/prometheus/client_golang/prometheus"
)

// Metrics instruments the requests made to the platform. Create it once per
// process and share it between every app's client.
type Metrics struct {
	requests         *prometheus.CounterVec
	duration         *prometheus.HistogramVec
	secretFileErrors *prometheus.CounterVec
	// succeeded holds, per endpoint, the series of a call answered with
	// 200, looked up once: looking them up by label values (and
	// formatting the status) at every call cost about 3% of the
	// exporter's CPU per scrape in `make load` (1000 apps, 64 calls at a
	// time on 2 cores).
	succeeded map[string]*endpointSeries
}

// endpointSeries are the series of an endpoint's successful calls, made
// by the first one (none exists before).
type endpointSeries struct {
	once     sync.Once
	requests prometheus.Counter
	duration prometheus.Observer
}

// NewMetrics creates the client metrics and registers them with reg (if not
// nil).
func NewMetrics(reg prometheus.Registerer) *Metrics {
	m := &Metrics{
		requests: prometheus.NewCounterVec(prometheus.CounterOpts{
			Name: "duix_api_requests_total",
			Help: "Requests made to the platform API, by endpoint and HTTP status code (\"error\" when no response arrived; a status outside the common ones as its class, such as \"5xx\", or \"other\").",
		}, []string{"endpoint", "code"}),
		duration: prometheus.NewHistogramVec(prometheus.HistogramOpts{
			Name:    "duix_api_request_duration_seconds",
			Help:    "Time from sending a request to the platform API until its body was read, by endpoint.",
			Buckets: []float64{.005, .01, .025, .05, .1, .25, .5, 1, 2.5, 5, 10, 30},
		}, []string{"endpoint"}),
		secretFileErrors: prometheus.NewCounterVec(prometheus.CounterOpts{
			Name: "duix_exporter_secret_file_errors_total",
			Help: "Times a changed app key file (kind=\"key\") or token file (kind=\"token\") was refused (not a regular file, larger than 64 KiB, empty, unreadable or gone); the last good secret stays in use.",
		}, []string{"kind"}),
	}
	for _, kind := range []string{SecretKey, SecretToken} {
		m.secretFileErrors.WithLabelValues(kind)
	}
	m.succeeded = make(map[string]*endpointSeries, len(Endpoints))
	for _, ep := range Endpoints {
		m.succeeded[ep] = &endpointSeries{}
	}
	if reg != nil {
		reg.MustRegister(m.requests, m.duration, m.secretFileErrors)
	}
	return m
}

func (m *Metrics) secretFileRefused(kind string) {
	if m == nil {
		return
	}
	m.secretFileErrors.WithLabelValues(kind).Inc()
}

func (m *Metrics) observe(endpoint, code string, d time.Duration) {
	if m == nil {
		return
	}
	if s := m.succeeded[endpoint]; s != nil && code == "200" {
		s.once.Do(func() {
			s.requests, s.duration = m.requests.WithLabelValues(endpoint, code), m.duration.WithLabelValues(endpoint)
		})
		s.requests.Inc()
		s.duration.Observe(d.Seconds())
		return
	}
	m.requests.WithLabelValues(endpoint, boundedCode(code)).Inc()
	m.duration.WithLabelValues(endpoint).Observe(d.Seconds())
}

// commonCodes are the statuses kept as they are in duix_api_requests_total;
// any other is counted by its class, so that an upstream sending odd
// statuses cannot create series without bound.
var commonCodes = map[string]bool{
	"200": true, "204": true, "301": true, "302": true, "304": true, "307": true, "308": true,
	"400": true, "401": true, "403": true, "404": true, "405": true, "408": true, "413": true, "429": true,
	"500": true, "501": true, "502": true, "503": true, "504": true,
}

// boundedCode is the code label of a request: the status when common,
// else its class (1xx to 5xx), else "other".
func boundedCode(code string) string {
	switch {
	case code == "error" || commonCodes[code]:
		return code
	case len(code) == 3 && code[0] >= '1' && code[0] <= '5':
		return code[:1] + "xx"
	}
	return "other"
}
