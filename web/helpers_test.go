package web

import (
	"bytes"
	"compress/gzip"
	"io"
	"log/slog"
	"net"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"
	"time"

	"github.com/go-kit/log"
	"github.com/prometheus/client_golang/prometheus/collectors"
	dto "github.com/prometheus/client_model/go"
	"github.com/prometheus/common/expfmt"
	"github.com/prometheus/common/model"
	"github.com/stretchr/testify/require"
	sloggokit "github.com/tjhop/slog-gokit"

	"github.com/duix-exporter/duix_exporter/client"
	"github.com/duix-exporter/duix_exporter/collector"
	"github.com/duix-exporter/duix_exporter/config"
	"github.com/duix-exporter/duix_exporter/internal/platformtest"
)

// hangTimeout bounds the waits of these tests. It only detects a hang: CI
// machines are shared and busy, so no test asserts how fast something
// happens, only that it does.
const hangTimeout = time.Minute

// platform is the demo platform, whose configuration's api.timeout is
// hangTimeout: a call to a healthy platform never runs out of time, however
// busy the machine.
type platform struct{ *platformtest.Demo }

func startPlatform(t testing.TB) *platform {
	return &platform{platformtest.StartDemo(t, hangTimeout, nil)}
}

// server is the exporter's endpoints, served on loopback as the binary
// serves them, for the configuration file given.
type server struct {
	url    string
	exp    *collector.Exporter
	logger log.Logger
	logs   *platformtest.Buffer
}

// serve starts the endpoints with o (Name, TelemetryPath and Logger filled
// in when unset) for the configuration at configFile.
func serve(t testing.TB, configFile string, o Options) *server {
	t.Helper()
	return serveOn(t, configFile, o, nil)
}

// serveOn is serve with the server's listener wrapped by wrap (nil: as it
// is).
func serveOn(t testing.TB, configFile string, o Options, wrap func(net.Listener) net.Listener) *server {
	t.Helper()
	logs := &platformtest.Buffer{}
	logger := log.NewLogfmtLogger(logs)
	slogger := slog.New(sloggokit.NewGoKitHandler(logger, slog.LevelDebug))
	reg := NewRegistries()
	reg.MustRegister(collectors.NewGoCollector())
	exp := collector.New(collector.Options{Logger: logger, Metrics: client.NewMetrics(reg), UserAgent: "duix_exporter/test"})
	require.NoError(t, exp.Register(reg))
	sc := config.NewSafeConfig(reg)
	sc.Subscribe(exp.Apply)
	require.NoError(t, sc.ReloadConfig(configFile, logger))
	if o.TelemetryPath == "" {
		o.TelemetryPath = "/metrics"
	}
	if o.Logger == nil {
		o.Logger = logger
	}
	h, err := NewHandler(exp, reg, func() error { return sc.ReloadConfig(configFile, logger) }, o)
	require.NoError(t, err)
	srv := httptest.NewUnstartedServer(h)
	srv.Config = NewServer(h, slogger)
	if wrap != nil {
		srv.Listener = wrap(srv.Listener)
	}
	srv.Start()
	t.Cleanup(srv.Close)
	return &server{url: srv.URL, exp: exp, logger: logger, logs: logs}
}

// do sends a request with the headers given as name, value pairs and
// returns the status and the body.
func (s *server) do(t *testing.T, method, path string, header ...string) (int, string) {
	t.Helper()
	req, err := http.NewRequest(method, s.url+path, nil)
	require.NoError(t, err)
	for i := 0; i+1 < len(header); i += 2 {
		req.Header.Add(header[i], header[i+1])
	}
	resp, err := http.DefaultClient.Do(req)
	require.NoError(t, err)
	defer resp.Body.Close()
	b, err := io.ReadAll(resp.Body)
	require.NoError(t, err)
	return resp.StatusCode, string(b)
}

func (s *server) get(t *testing.T, path string, header ...string) (int, string) {
	t.Helper()
	return s.do(t, http.MethodGet, path, header...)
}

// scrape gets path, requires a 200 and returns its samples.
func (s *server) scrape(t *testing.T, path string, header ...string) map[string]map[string]float64 {
	t.Helper()
	code, body := s.get(t, path, header...)
	require.Equal(t, http.StatusOK, code)
	return samples(t, body)
}

// gunzip returns body uncompressed.
func gunzip(t testing.TB, body []byte) []byte {
	t.Helper()
	zr, err := gzip.NewReader(bytes.NewReader(body))
	require.NoError(t, err)
	out, err := io.ReadAll(zr)
	require.NoError(t, err)
	return out
}

// samples parses an exposition into family name -> labels -> value, the
// labels written as name=value joined by commas.
func samples(t *testing.T, body string) map[string]map[string]float64 {
	t.Helper()
	parser := expfmt.NewTextParser(model.UTF8Validation)
	mfs, err := parser.TextToMetricFamilies(strings.NewReader(body))
	require.NoError(t, err)
	out := map[string]map[string]float64{}
	for name, mf := range mfs {
		out[name] = values(mf)
	}
	return out
}

// values maps the labels of each sample of mf, written as name=value
// joined by commas, to its value.
func values(mf *dto.MetricFamily) map[string]float64 {
	out := map[string]float64{}
	for _, m := range mf.GetMetric() {
		var labels []string
		for _, lp := range m.GetLabel() {
			labels = append(labels, lp.GetName()+"="+lp.GetValue())
		}
		out[strings.Join(labels, ",")] = m.GetGauge().GetValue() + m.GetCounter().GetValue() + m.GetUntyped().GetValue()
	}
	return out
}
