package client

import (
	"strconv"
	"strings"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/promauto"
)

// Metrics instruments the calls to the platform, once per process.
type Metrics struct {
	requests, secretFileErrors *prometheus.CounterVec
	duration                   *prometheus.HistogramVec
}

// NewMetrics creates the client metrics and registers them with reg (if not nil).
func NewMetrics(reg prometheus.Registerer) *Metrics {
	f := promauto.With(reg)
	m := &Metrics{
		requests: f.NewCounterVec(prometheus.CounterOpts{Name: "duix_api_requests_total",
			Help: "Requests made to the platform API, by endpoint and HTTP status code (\"error\" when no response arrived; a status outside the common ones as its class, such as \"5xx\", or \"other\")."}, []string{"endpoint", "code"}),
		duration: f.NewHistogramVec(prometheus.HistogramOpts{Name: "duix_api_request_duration_seconds",
			Help:    "Time from sending a request to the platform API until its body was read, by endpoint.",
			Buckets: []float64{.005, .01, .025, .05, .1, .25, .5, 1, 2.5, 5, 10, 30}}, []string{"endpoint"}),
		secretFileErrors: f.NewCounterVec(prometheus.CounterOpts{Name: "duix_exporter_secret_file_errors_total",
			Help: "Times a changed app key file (kind=\"key\"), token file (\"token\"), file of http_headers (\"header\") or of tls_config (\"tls\") was refused (not a regular file, too large, empty, more than one line, unreadable or gone); the last good one stays in use."}, []string{"kind"}),
	}
	for _, kind := range []string{SecretKey, SecretToken, SecretHeader, SecretTLS} { // every series from the start
		m.secretFileErrors.WithLabelValues(kind)
	}
	return m
}

// observe counts a request; status is 0 when no answer arrived.
func (m *Metrics) observe(endpoint string, status int, d time.Duration) {
	m.requests.WithLabelValues(endpoint, statusLabel(status)).Inc()
	m.duration.WithLabelValues(endpoint).Observe(d.Seconds())
}

// commonStatuses are counted as they are, any other by its class: odd statuses cannot create series without bound.
const commonStatuses = " 200 204 301 302 304 307 308 400 401 403 404 405 408 413 429 500 501 502 503 504 "

func statusLabel(status int) string {
	switch s := strconv.Itoa(status); {
	case status == 0:
		return "error"
	case strings.Contains(commonStatuses, " "+s+" "):
		return s
	case status >= 100 && status < 600:
		return s[:1] + "xx"
	}
	return "other"
}
