//go:build e2e

// Package prometheus_test runs the per-app target and sharding examples of
// this directory (probe-targets.yml, sharding.yml) in a real Prometheus
// (the Prometheus 3 that `make test-deps` builds into .tools/, first on
// PATH in `make probe-config-test`) against the exporter's /probe, serving a
// simulator of the platform. Run it with `make probe-config-test`.
package prometheus_test

import (
	"context"
	"fmt"
	"net/http/httptest"
	"net/url"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	promconfig "github.com/prometheus/common/config"
	"github.com/prometheus/common/model"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"go.yaml.in/yaml/v2"

	"github.com/duix-exporter/duix_exporter/client"
	"github.com/duix-exporter/duix_exporter/collector"
	"github.com/duix-exporter/duix_exporter/config"
	"github.com/duix-exporter/duix_exporter/internal/platformtest"
	"github.com/duix-exporter/duix_exporter/simulator"
	"github.com/duix-exporter/duix_exporter/web"
)

// waitLong bounds each wait for Prometheus, far above what its 1 s
// intervals need, for a loaded machine. It only detects a hang: on a busy
// machine a scrape may miss Prometheus' 1 s timeout now and then, so the
// test waits for what must happen (every target up, every app's duix_up
// 1), not for the first scrape's outcome.
const waitLong = 60 * time.Second

func TestProbeTargetsAndShardingWithPrometheus(t *testing.T) {
	promBin, err := exec.LookPath("prometheus")
	require.NoError(t, err, "the prometheus binary is needed: run `make probe-config-test`, which builds Prometheus 3 into .tools/ and puts it on PATH")
	if promtool, err := exec.LookPath("promtool"); err == nil {
		for _, f := range []string{"probe-targets.yml", "sharding.yml"} {
			out, err := exec.Command(promtool, "check", "config", f).CombinedOutput()
			require.NoError(t, err, "promtool check config %s:\n%s", f, out)
		}
	}

	probeTargets := readFile(t, "probe-targets.yml")
	sharding := readFile(t, "sharding.yml")
	fleet := appTargets(t, sharding)
	exporterAddr := startExporter(t, fleet)

	t.Run("per-app targets", func(t *testing.T) {
		names := appTargets(t, probeTargets)
		cfg := strings.ReplaceAll(probeTargets, "localhost:9866", exporterAddr)
		p := startPrometheus(t, promBin, shortIntervals(t, cfg))
		active := p.waitForTargets(t, "duix-apps", len(names))
		require.Len(t, active, len(names))
		var instances []string
		for _, tg := range active {
			instances = append(instances, tg.Labels["instance"])
			assert.Equal(t, "up", tg.Health, "%s: %s", tg.ScrapeURL, tg.LastError)
			u, err := url.Parse(tg.ScrapeURL)
			require.NoError(t, err)
			assert.Equal(t, "/probe", u.Path)
			assert.Equal(t, url.Values{"app": {tg.Labels["instance"]}}, u.Query())
			assert.Equal(t, exporterAddr, u.Host)
		}
		assert.ElementsMatch(t, names, instances, "one target per app, named by the app")
		// Each app's samples keep their own app label, equal to the
		// target's instance: no exported_app.
		samples := p.waitForQuery(t, `duix_up{job="duix-apps"}`, len(names), func(s promSample) bool { return fmt.Sprint(s.Value[1]) == "1" })
		for _, s := range samples {
			assert.Equal(t, s.Metric["instance"], s.Metric["app"], "%v", s.Metric)
			assert.NotContains(t, s.Metric, "exported_app")
			assert.Equal(t, "1", fmt.Sprint(s.Value[1]))
		}
		// The exporter's own job still scrapes /metrics, without its copy
		// of the per-app metrics.
		p.waitForQuery(t, `duix_exporter_shared_fetches_total{job="duix-exporter"}`, 2, nil)
		p.waitForQuery(t, `count({job="duix-exporter", __name__=~"duix_(up|app_.+|conversation_.+|scrape_.+)"}) or vector(0)`, 1,
			func(s promSample) bool { return fmt.Sprint(s.Value[1]) == "0" })
		p.waitForQuery(t, `count(duix_up{job="duix-apps"})`, 1,
			func(s promSample) bool { return fmt.Sprint(s.Value[1]) == fmt.Sprint(len(names)) })
	})

	t.Run("sharding", func(t *testing.T) {
		const shards = 4
		require.Contains(t, sharding, "modulus: 4")
		owner := map[string]int{}
		for k := range shards {
			cfg := strings.ReplaceAll(sharding, "duix-exporter:9866", exporterAddr)
			cfg = strings.ReplaceAll(cfg, `"0" # this server`, fmt.Sprintf(`"%d" # this server`, k))
			p := startPrometheus(t, promBin, shortIntervals(t, cfg))
			active := p.waitForTargets(t, "duix-apps", len(fleet))
			for _, tg := range active {
				app := tg.Labels["instance"]
				assert.Equal(t, "up", tg.Health, "shard %d, %s: %s", k, app, tg.LastError)
				prev, seen := owner[app]
				assert.False(t, seen, "%s kept by shards %d and %d", app, prev, k)
				owner[app] = k
			}
			_ = p.Stop(10 * time.Second)
		}
		var kept []string
		for app := range owner {
			kept = append(kept, app)
		}
		assert.ElementsMatch(t, fleet, kept, "every app is kept by exactly one shard")
		t.Logf("shards: %v", owner)
	})
}

func readFile(t *testing.T, name string) string {
	t.Helper()
	b, err := os.ReadFile(name)
	require.NoError(t, err)
	return string(b)
}

// appTargets returns the targets (app names) of the duix-apps job.
func appTargets(t *testing.T, cfg string) []string {
	t.Helper()
	var c struct {
		ScrapeConfigs []struct {
			JobName       string `yaml:"job_name"`
			StaticConfigs []struct {
				Targets []string `yaml:"targets"`
			} `yaml:"static_configs"`
		} `yaml:"scrape_configs"`
	}
	require.NoError(t, yaml.Unmarshal([]byte(cfg), &c))
	for _, sc := range c.ScrapeConfigs {
		if sc.JobName != "duix-apps" {
			continue
		}
		var out []string
		for _, s := range sc.StaticConfigs {
			out = append(out, s.Targets...)
		}
		require.NotEmpty(t, out)
		return out
	}
	t.Fatal("no duix-apps job")
	return nil
}

// shortIntervals makes every scrape interval and timeout 1 s.
func shortIntervals(t *testing.T, cfg string) string {
	t.Helper()
	var lines []string
	for line := range strings.SplitSeq(cfg, "\n") {
		trimmed := strings.TrimSpace(line)
		for _, key := range []string{"scrape_interval:", "scrape_timeout:", "evaluation_interval:"} {
			if strings.HasPrefix(trimmed, key) {
				line = line[:strings.Index(line, key)] + key + " 1s"
			}
		}
		lines = append(lines, line)
	}
	out := strings.Join(lines, "\n")
	require.Contains(t, out, "scrape_interval: 1s")
	return out
}

// startExporter serves /probe and /metrics for the apps, against a
// simulator, and returns its address.
func startExporter(t *testing.T, names []string) string {
	t.Helper()
	sim := simulator.New()
	base, _ := platformtest.Start(t, sim)
	cfg := &config.Config{API: config.DefaultAPI}
	cfg.API.BaseURL = base
	cfg.API.Timeout = model.Duration(5 * time.Second)
	for i, name := range names {
		id, key := fmt.Sprintf("17900000000000%05d", i), fmt.Sprintf("probe-key-%d", i)
		sim.AddApp(simulator.App{ID: id, Key: key, CorpID: "corp", Allowance: 5})
		cfg.Apps = append(cfg.Apps, config.App{Name: name, AppID: id, AppKey: promconfig.Secret(key), TokenTTL: model.Duration(30 * time.Minute)})
	}
	reg := web.NewRegistries()
	exp := collector.New(collector.Options{Metrics: client.NewMetrics(reg)})
	require.NoError(t, exp.Register(reg))
	require.NoError(t, exp.Apply(cfg))
	h, err := web.NewHandler(exp, reg, func() error { return nil }, web.Options{TelemetryPath: "/metrics"})
	require.NoError(t, err)
	srv := httptest.NewServer(h)
	t.Cleanup(srv.Close)
	return strings.TrimPrefix(srv.URL, "http://")
}

// promProcess is a Prometheus the test started, and its API's base URL.
type promProcess struct {
	*platformtest.Process
	base string
}

// startPrometheus starts Prometheus with the configuration cfg.
func startPrometheus(t *testing.T, bin, cfg string) *promProcess {
	t.Helper()
	path := filepath.Join(t.TempDir(), "prometheus.yml")
	require.NoError(t, os.WriteFile(path, []byte(cfg), 0o600))
	p, base := platformtest.StartPrometheus(t, bin, path)
	return &promProcess{p, base}
}

func (p *promProcess) get(path string, params url.Values, data any) error {
	return platformtest.PrometheusGet(context.Background(), p.base, path, params, data)
}

type target struct {
	Labels             map[string]string `json:"labels"`
	ScrapeURL          string            `json:"scrapeUrl"`
	Health             string            `json:"health"`
	LastError          string            `json:"lastError"`
	Pool               string            `json:"scrapePool"`
	LastScrapeDuration float64           `json:"lastScrapeDuration"`
}

// waitForTargets waits until Prometheus has discovered the job's total
// targets (kept or dropped by relabelling) and its last scrape of every
// kept one succeeded, and returns the kept ones.
func (p *promProcess) waitForTargets(t *testing.T, job string, total int) []target {
	t.Helper()
	var (
		active []target
		last   string
	)
	ok := assert.Eventually(t, func() bool {
		var data struct {
			Active  []target `json:"activeTargets"`
			Dropped []struct {
				Labels map[string]string `json:"discoveredLabels"`
			} `json:"droppedTargets"`
		}
		if err := p.get("/api/v1/targets", url.Values{"state": {"any"}}, &data); err != nil {
			last = err.Error()
			return false
		}
		active = slices.DeleteFunc(data.Active, func(tg target) bool { return tg.Pool != job })
		dropped := 0
		for _, d := range data.Dropped {
			if d.Labels["job"] == job {
				dropped++
			}
		}
		last = fmt.Sprintf("%d kept, %d dropped", len(active), dropped)
		if len(active)+dropped != total {
			return false
		}
		up := true
		for _, tg := range active {
			if tg.Health != "up" {
				last += fmt.Sprintf("; %s %s: %s", tg.ScrapeURL, tg.Health, tg.LastError)
				up = false
			}
		}
		return up
	}, waitLong, 100*time.Millisecond)
	require.True(t, ok, "targets of %s: %s\n%s", job, last, p.Out.String())
	slowest := 0.0
	for _, tg := range active {
		slowest = max(slowest, tg.LastScrapeDuration)
	}
	t.Logf("%s: %d targets up, the slowest last scrape took %.3fs", job, len(active), slowest)
	return active
}

type promSample struct {
	Metric map[string]string `json:"metric"`
	Value  [2]any            `json:"value"`
}

// waitForQuery waits until an instant query returns n series, each
// accepted by accept (nil: any).
func (p *promProcess) waitForQuery(t *testing.T, q string, n int, accept func(promSample) bool) []promSample {
	t.Helper()
	var res struct {
		Result []promSample `json:"result"`
	}
	var last string
	ok := assert.Eventually(t, func() bool {
		res.Result = nil
		if err := p.get("/api/v1/query", url.Values{"query": {q}}, &res); err != nil {
			last = err.Error()
			return false
		}
		last = fmt.Sprint(res.Result)
		if len(res.Result) != n {
			return false
		}
		for _, s := range res.Result {
			if accept != nil && !accept(s) {
				return false
			}
		}
		return true
	}, waitLong, 100*time.Millisecond)
	require.True(t, ok, "%s: want %d series (each accepted), have %s\n%s", q, n, last, p.Out.String())
	return res.Result
}
