//go:build e2e

package e2e

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"go.yaml.in/yaml/v2"

	"github.com/duix-exporter/duix_exporter/internal/platformtest"
	"github.com/duix-exporter/duix_exporter/simulator"
)

const amFile = "../deploy/alertmanager/alertmanager.yml"

// lookTool finds a binary the test drives: the file named by the
// environment variable env, else the first of names on PATH.
func lookTool(t *testing.T, env string, names ...string) string {
	t.Helper()
	if p := os.Getenv(env); p != "" {
		return p
	}
	for _, n := range names {
		if p, err := exec.LookPath(n); err == nil {
			return p
		}
	}
	t.Fatalf("none of %v on PATH and %s not set: run `make test-deps`", names, env)
	return ""
}

// The closed loop: the simulator holds a session that never ends on kiosk
// (opted in to the janitor) and one on lobby (not opted in); Prometheus
// fires DuixSessionStuck for both; the shipped Alertmanager routing posts
// to the janitor, which stops kiosk's session (after a dry run that stops
// nothing), and kiosk's alert resolves while lobby's goes on.
func TestJanitorClosedLoop(t *testing.T) {
	promBin := lookTool(t, "PROMETHEUS", "prometheus")
	amBin := lookTool(t, "ALERTMANAGER", "alertmanager", "prometheus-alertmanager")
	deadline, cancel := context.WithTimeout(context.Background(), 240*time.Second)
	defer cancel()
	dir := t.TempDir()

	// The platform: a stuck session on each app, and a young one on kiosk.
	sim := simulator.New()
	for _, id := range []string{"2001", "2002"} {
		sim.AddApp(simulator.App{ID: id, Key: "key-" + id, Allowance: 5})
	}
	baseURL, closeSim, err := sim.Listen("127.0.0.1:0")
	require.NoError(t, err)
	t.Cleanup(closeSim)
	kioskStuck, err := sim.StartSessionAt("2001", "conv-1", time.Now().Add(-3*time.Hour))
	require.NoError(t, err)
	kioskYoung, err := sim.StartSession("2001", "conv-1")
	require.NoError(t, err)
	lobbyStuck, err := sim.StartSessionAt("2002", "conv-1", time.Now().Add(-3*time.Hour))
	require.NoError(t, err)

	configFile := filepath.Join(dir, "duix.yml")
	writeConfig := func(dryRun bool) {
		doc := fmt.Sprintf(`api: {base_url: %q, timeout: 5s}
janitor: {dry_run: %t, max_stops_per_hour: 5}
apps:
  - {name: kiosk, app_id: "2001", app_key: key-2001, janitor: {max_session_age: 1h}}
  - {name: lobby, app_id: "2002", app_key: key-2002}
`, baseURL, dryRun)
		require.NoError(t, os.WriteFile(configFile, []byte(doc), 0o600))
	}
	writeConfig(true)

	bin := buildExporter(t, dir)
	exporterAddr, janitorAddr := platformtest.FreeAddr(t), platformtest.FreeAddr(t)
	exporter := platformtest.StartTestProcess(t, "exporter", "http://"+exporterAddr+"/-/ready", bin,
		"--config.file="+configFile, "--web.listen-address="+exporterAddr, "--janitor.listen-address="+janitorAddr)

	// The janitor's metrics, and how to reload its configuration.
	janitorMetrics := "http://" + exporterAddr + "/metrics"
	reload := func() { require.NoError(t, exporter.Cmd.Process.Signal(syscall.SIGHUP)) }

	// Alertmanager with the shipped routing, the janitor's receiver
	// pointed at it, and short intervals.
	amAddr := platformtest.FreeAddr(t)
	am := platformtest.StartTestProcess(t, "alertmanager", "http://"+amAddr+"/-/ready", amBin,
		"--config.file="+writeAlertmanagerConfig(t, dir, janitorAddr),
		"--storage.path="+filepath.Join(dir, "am"),
		"--web.listen-address="+amAddr,
		"--cluster.listen-address=",
		"--log.level=warn")

	// Prometheus with a test copy of DuixSessionStuck: 10 minutes, for 1s.
	prom, promURL := platformtest.StartPrometheus(t, promBin, writeJanitorPrometheusConfig(t, dir, exporterAddr, amAddr))
	p := &promAPI{t: t, ctx: deadline, base: promURL, logs: []*platformtest.Process{exporter, am, prom}}

	sessions := func(appID string) []string {
		var ids []string
		for _, s := range sim.Sessions(appID) {
			ids = append(ids, s.ID)
		}
		return ids
	}

	t.Run("dry run stops nothing and counts what it would stop", func(t *testing.T) {
		p.t = t
		p.waitForAlert("DuixSessionStuck", "kiosk", "firing")
		p.waitForAlert("DuixSessionStuck", "lobby", "firing")
		p.waitFor("the janitor to count the session it would stop", func() (bool, string) {
			v := scrapeValue(t, janitorMetrics, `duix_janitor_sessions_would_stop_total{app="kiosk"}`)
			return v == 1, fmt.Sprint(v)
		})
		// Alertmanager repeats (repeat_interval 2s in the test copy): the
		// session is counted once and nothing is stopped.
		p.waitFor("Alertmanager to repeat the notification", func() (bool, string) {
			v := scrapeValue(t, janitorMetrics, `duix_janitor_refusals_total{reason="not_opted_in"}`)
			return v >= 2, fmt.Sprint(v, " refusals of lobby")
		})
		assert.Equal(t, 1.0, scrapeValue(t, janitorMetrics, `duix_janitor_sessions_would_stop_total{app="kiosk"}`))
		assert.Equal(t, 0.0, scrapeValue(t, janitorMetrics, `duix_janitor_sessions_stopped_total{app="kiosk"}`))
		assert.Equal(t, int64(0), sim.Requests(simulator.EndpointStop), "no stop reached the platform")
		assert.ElementsMatch(t, []string{kioskStuck, kioskYoung}, sessions("2001"))
	})

	t.Run("the janitor stops the stuck session and the alert resolves", func(t *testing.T) {
		p.t = t
		writeConfig(false)
		reload()
		p.waitFor("the janitor to stop kiosk's stuck session", func() (bool, string) {
			ids := sessions("2001")
			return len(ids) == 1 && ids[0] == kioskYoung, fmt.Sprint(ids)
		})
		p.waitForNoAlert("DuixSessionStuck", "kiosk")
		p.waitFor("Alertmanager to tell the janitor that kiosk's alert resolved", func() (bool, string) {
			v := scrapeValue(t, janitorMetrics, `duix_janitor_refusals_total{reason="resolved"}`)
			return v >= 1, fmt.Sprint(v)
		})
		assert.Equal(t, 1.0, scrapeValue(t, janitorMetrics, `duix_janitor_sessions_stopped_total{app="kiosk"}`))
		assert.Equal(t, int64(1), sim.Requests(simulator.EndpointStop), "stopped once, whatever Alertmanager repeated")

		// lobby has not opted in: its session and its alert go on.
		assert.Equal(t, []string{lobbyStuck}, sessions("2002"))
		assert.Equal(t, "firing", p.waitForAlert("DuixSessionStuck", "lobby", "firing").State)
		assert.Positive(t, scrapeValue(t, janitorMetrics, `duix_janitor_webhook_requests_total{outcome="handled"}`))
		assert.Equal(t, 0.0, scrapeValue(t, janitorMetrics, `duix_janitor_webhook_requests_total{outcome="invalid"}`))
	})

	t.Run("the shipped inhibition pages once for an exhausted allowance", func(t *testing.T) {
		p.t = t
		postAlerts(t, "http://"+amAddr,
			map[string]string{"alertname": "DuixConcurrencyExhausted", "severity": "critical", "app": "kiosk"},
			map[string]string{"alertname": "DuixConcurrencyNearLimit", "severity": "warning", "app": "kiosk"},
			map[string]string{"alertname": "DuixConcurrencyNearLimit", "severity": "warning", "app": "lobby"})
		p.waitFor("kiosk's NearLimit to be inhibited, lobby's not", func() (bool, string) {
			states := amAlertStates(t, "http://"+amAddr, "DuixConcurrencyNearLimit")
			return states["kiosk"] == "suppressed" && states["lobby"] == "active", fmt.Sprint(states)
		})
	})
}

// writeJanitorPrometheusConfig writes a Prometheus configuration that
// scrapes the exporter, evaluates a copy of the shipped DuixSessionStuck
// with a 10-minute threshold and `for: 1s`, and sends to Alertmanager.
func writeJanitorPrometheusConfig(t *testing.T, dir, exporterAddr, amAddr string) string {
	t.Helper()
	raw, err := os.ReadFile(rulesFile)
	require.NoError(t, err)
	var rf struct {
		Groups []struct {
			Rules []map[string]any `yaml:"rules"`
		} `yaml:"groups"`
	}
	require.NoError(t, yaml.Unmarshal(raw, &rf))
	var rule map[string]any
	for _, g := range rf.Groups {
		for _, r := range g.Rules {
			if r["alert"] == "DuixSessionStuck" {
				rule = r
			}
		}
	}
	require.NotNil(t, rule, "%s has DuixSessionStuck", rulesFile)
	expr := fmt.Sprint(rule["expr"])
	require.Contains(t, expr, "> 7200", "the shipped threshold")
	rule["expr"] = strings.Replace(expr, "> 7200", "> 600", 1)
	rule["for"] = shortFor
	rules, err := yaml.Marshal(map[string]any{"groups": []any{map[string]any{"name": "janitor", "rules": []any{rule}}}})
	require.NoError(t, err)
	rulesPath := filepath.Join(dir, "janitor-rules.yml")
	require.NoError(t, os.WriteFile(rulesPath, rules, 0o600))

	cfg := map[string]any{
		"global":     map[string]any{"scrape_interval": scrapeInterval, "scrape_timeout": scrapeInterval, "evaluation_interval": evalInterval},
		"rule_files": []string{rulesPath},
		"alerting": map[string]any{"alertmanagers": []any{
			map[string]any{"static_configs": []any{map[string]any{"targets": []string{amAddr}}}},
		}},
		"scrape_configs": []any{map[string]any{
			"job_name":       jobName,
			"static_configs": []any{map[string]any{"targets": []string{exporterAddr}}},
		}},
	}
	out, err := yaml.Marshal(cfg)
	require.NoError(t, err)
	path := filepath.Join(dir, "prometheus-janitor.yml")
	require.NoError(t, os.WriteFile(path, out, 0o600))
	return path
}

// writeAlertmanagerConfig writes the shipped Alertmanager configuration
// with the janitor's receiver pointed at addr and the intervals of every
// route shortened: it is the shipped routing and inhibition that run.
func writeAlertmanagerConfig(t *testing.T, dir, janitorAddr string) string {
	t.Helper()
	raw, err := os.ReadFile(amFile)
	require.NoError(t, err)
	var cfg map[string]any
	require.NoError(t, yaml.Unmarshal(raw, &cfg))
	shorten := func(r map[any]any) {
		r["group_wait"], r["group_interval"], r["repeat_interval"] = "0s", "1s", "2s"
	}
	root := cfg["route"].(map[any]any)
	shorten(root)
	for _, r := range root["routes"].([]any) {
		shorten(r.(map[any]any))
	}
	found := false
	for _, r := range cfg["receivers"].([]any) {
		rcv := r.(map[any]any)
		if rcv["name"] != "duix-janitor" {
			continue
		}
		hooks := rcv["webhook_configs"].([]any)
		require.Len(t, hooks, 1)
		hook := hooks[0].(map[any]any)
		assert.Equal(t, true, hook["send_resolved"], "the janitor hears of resolved alerts")
		hook["url"] = "http://" + janitorAddr + "/webhook"
		found = true
	}
	require.True(t, found, "%s has the duix-janitor receiver", amFile)
	out, err := yaml.Marshal(cfg)
	require.NoError(t, err)
	path := filepath.Join(dir, "alertmanager.yml")
	require.NoError(t, os.WriteFile(path, out, 0o600))
	return path
}

// scrapeValue returns the value of one series of the text exposition at
// url (-1 when absent).
func scrapeValue(t *testing.T, url, series string) float64 {
	t.Helper()
	resp, err := http.Get(url)
	require.NoError(t, err)
	defer resp.Body.Close()
	var b bytes.Buffer
	_, err = b.ReadFrom(resp.Body)
	require.NoError(t, err)
	m := regexp.MustCompile(`(?m)^` + regexp.QuoteMeta(series) + ` (\S+)$`).FindSubmatch(b.Bytes())
	if m == nil {
		return -1
	}
	v, err := strconv.ParseFloat(string(m[1]), 64)
	require.NoError(t, err)
	return v
}

// postAlerts sends firing alerts to Alertmanager's API.
func postAlerts(t *testing.T, amURL string, labels ...map[string]string) {
	t.Helper()
	var alerts []any
	for _, l := range labels {
		alerts = append(alerts, map[string]any{"labels": l, "startsAt": time.Now().Format(time.RFC3339)})
	}
	body, err := json.Marshal(alerts)
	require.NoError(t, err)
	resp, err := http.Post(amURL+"/api/v2/alerts", "application/json", bytes.NewReader(body))
	require.NoError(t, err)
	resp.Body.Close()
	require.Equal(t, http.StatusOK, resp.StatusCode)
}

// amAlertStates returns the state (active, suppressed) of Alertmanager's
// alerts of that name, by app.
func amAlertStates(t *testing.T, amURL, name string) map[string]string {
	t.Helper()
	resp, err := http.Get(amURL + "/api/v2/alerts?filter=" + `alertname="` + name + `"`)
	require.NoError(t, err)
	defer resp.Body.Close()
	var alerts []struct {
		Labels map[string]string `json:"labels"`
		Status struct {
			State string `json:"state"`
		} `json:"status"`
	}
	require.NoError(t, json.NewDecoder(resp.Body).Decode(&alerts))
	out := map[string]string{}
	for _, a := range alerts {
		out[a.Labels["app"]] = a.Status.State
	}
	return out
}
