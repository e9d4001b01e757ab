package client

import (
	"strconv"
	"time"

	"github.com/prometheus/client_golang/prometheus"
)

// Metrics instruments the requests made to the platform. Create it once per
// process and share it between every app's client.
type Metrics struct {
	requests         *prometheus.CounterVec
	duration         *prometheus.HistogramVec
	secretFileErrors *prometheus.CounterVec
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
	if reg != nil {
		reg.MustRegister(m.requests, m.duration, m.secretFileErrors)
	}
	return m
}

func (m *Metrics) secretFileRefused(kind string) {
	if m != nil {
		m.secretFileErrors.WithLabelValues(kind).Inc()
	}
}

// observe counts a request; status is 0 when no answer arrived.
func (m *Metrics) observe(endpoint string, status int, d time.Duration) {
	if m == nil {
		return
	}
	m.requests.WithLabelValues(endpoint, statusLabel(status)).Inc()
	m.duration.WithLabelValues(endpoint).Observe(d.Seconds())
}

// commonStatuses are kept as they are in duix_api_requests_total; any other
// is counted by its class, so that odd statuses cannot create series
// without bound.
var commonStatuses = map[int]bool{
	200: true, 204: true, 301: true, 302: true, 304: true, 307: true, 308: true,
	400: true, 401: true, 403: true, 404: true, 405: true, 408: true, 413: true, 429: true,
	500: true, 501: true, 502: true, 503: true, 504: true,
}

func statusLabel(status int) string {
	switch {
	case status == 0:
		return "error"
	case commonStatuses[status]:
		return strconv.Itoa(status)
	case status >= 100 && status < 600:
		return strconv.Itoa(status/100) + "xx"
	}
	return "other"
}
