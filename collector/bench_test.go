package collector_test

import (
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"testing"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/common/model"
	"github.com/stretchr/testify/require"

	"github.com/duix-exporter/duix_exporter/client"
	"github.com/duix-exporter/duix_exporter/collector"
	"github.com/duix-exporter/duix_exporter/config"
	"github.com/duix-exporter/duix_exporter/simulator"
)

// benchFleet is a simulated platform with n apps, each with two active
// sessions on one configured conversation, and an exporter for it.
func benchFleet(b *testing.B, n int) (*simulator.Simulator, http.Handler) {
	b.Helper()
	sim := simulator.New()
	srv := httptest.NewServer(sim)
	b.Cleanup(srv.Close)
	cfg := &config.Config{API: config.DefaultAPI}
	cfg.API.BaseURL = srv.URL + simulator.BasePath
	cfg.API.Timeout = model.Duration(10 * time.Second)
	cfg.API.MaxConcurrency = 64
	for i := range n {
		id, key, conv := fmt.Sprintf("app-%05d", i), fmt.Sprintf("key-%05d", i), fmt.Sprintf("conv-%05d", i)
		sim.AddApp(simulator.App{ID: id, Key: key, CorpID: "corp", Allowance: 10})
		require.NoError(b, sim.AddConversation(id, simulator.NewConversation(conv, "conversation", 5)))
		for range 2 {
			_, err := sim.StartSession(id, conv)
			require.NoError(b, err)
		}
		cfg.Apps = append(cfg.Apps, config.App{Name: fmt.Sprintf("app%d", i), AppID: id, AppKey: configSecret(key),
			TokenTTL: model.Duration(30 * time.Minute), Conversations: []string{conv}})
	}
	reg := prometheus.NewRegistry()
	exp := collector.New(collector.Options{Metrics: client.NewMetrics(reg)})
	require.NoError(b, exp.Register(reg))
	require.NoError(b, exp.Apply(cfg))
	return sim, handlerFor(exp, reg, 0)
}

// BenchmarkScrape measures whole /metrics scrapes (upstream calls, decoding
// and exposition) against the simulator on loopback without latency.
func BenchmarkScrape(b *testing.B) {
	for _, n := range []int{1, 100, 1000} {
		b.Run(fmt.Sprintf("apps=%d", n), func(b *testing.B) {
			sim, h := benchFleet(b, n)
			scrape := func() {
				rec := &discardWriter{h: http.Header{}}
				h.ServeHTTP(rec, httptest.NewRequest(http.MethodGet, "/metrics", nil))
				if rec.code != 0 && rec.code != http.StatusOK {
					b.Fatalf("status %d", rec.code)
				}
			}
			scrape() // warm up: tokens, connections, conversation details
			sim.ResetCounts()
			b.ReportAllocs()
			b.ResetTimer()
			for b.Loop() {
				scrape()
			}
			b.StopTimer()
			b.ReportMetric(float64(sim.Requests(simulator.EndpointConcurrency)+sim.Requests(simulator.EndpointSessions))/float64(b.N), "calls/op")
		})
	}
}

type discardWriter struct {
	h    http.Header
	code int
}

func (w *discardWriter) Header() http.Header         { return w.h }
func (w *discardWriter) WriteHeader(code int)        { w.code = code }
func (w *discardWriter) Write(p []byte) (int, error) { return io.Discard.Write(p) }
