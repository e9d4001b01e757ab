//go:build e2e

package e2e

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"net/http"
	"net/url"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"slices"
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

// Files of the bundle, relative to this directory.
const (
	repoRoot   = ".."
	readmeFile = "../README.md"
	rulesFile  = "../deploy/prometheus/rules.yml"
	promFile   = "../deploy/prometheus/prometheus.yml"
	probeFile  = "../deploy/prometheus/probe-targets.yml"
	pintConfig = "../.pint.hcl"
	amFile     = "../deploy/alertmanager/alertmanager.yml"
)

// dashboardFiles are the dashboards the mixin renders.
var dashboardFiles = []string{"../dashboards/duix-fleet.json", "../dashboards/duix-app.json"}

// jobName is the exporter's scrape job in the shipped configuration.
const jobName = "duix-exporter"

// Timing of the test Prometheus: short intervals, and every `for:` of the
// shipped rules shortened to shortFor in the test copy.
const (
	scrapeInterval = "1s"
	evalInterval   = "1s"
	shortFor       = "1s"
	// errorsWindow replaces DuixAPIErrorsHigh's window (10m) in the test
	// copy, so that its ratio of failed calls per scrape moves in seconds.
	errorsWindow = "20s"
	// waitLong bounds each wait for Prometheus to see a change; it is far
	// above what the intervals need, for a loaded machine.
	waitLong = 30 * time.Second
)

func TestPrometheusEndToEnd(t *testing.T) {
	promBin, err := exec.LookPath("prometheus")
	require.NoError(t, err, "the prometheus binary is needed: run `make e2e-test`, which builds Prometheus 3 into .tools/ and puts it on PATH")
	deadline, cancel := context.WithTimeout(context.Background(), 240*time.Second)
	defer cancel()

	dir := t.TempDir()

	// The platform: the demo apps, without churn, so that the test alone
	// decides the sessions.
	sim, apps := simulator.NewDemo()
	baseURL, faults := platformtest.Start(t, sim)

	// The exporter binary, pointed at the simulator, with the janitor's
	// listener on (no app opts in), so that the series DuixJanitorFailing
	// reads exist for pint's online checks.
	bin := buildExporter(t, dir)
	exporterAddr := platformtest.FreeAddr(t)
	exporter := platformtest.StartTestProcess(t, "exporter", "http://"+exporterAddr+"/-/ready", bin,
		"--config.file="+writeExporterConfig(t, dir, baseURL, apps),
		"--web.listen-address="+exporterAddr, "--janitor.listen-address="+platformtest.FreeAddr(t))

	// Prometheus with the shipped configuration and rules.
	prom, promURL := platformtest.StartPrometheus(t, promBin, writePrometheusConfig(t, dir, exporterAddr, apps))

	p := &promAPI{t: t, ctx: deadline, base: promURL, logs: []*platformtest.Process{exporter, prom}}
	var build struct {
		Version string `json:"version"`
	}
	require.NoError(t, p.get("/api/v1/status/buildinfo", nil, &build))
	t.Logf("Prometheus %s (%s)", build.Version, promBin)

	t.Run("target up and rules loaded", func(t *testing.T) {
		p.t = t
		p.waitFor("the exporter's target to be up", func() (bool, string) {
			v := p.query(`up{job="` + jobName + `"}`)
			return len(v) == 1 && v[0].Value == 1, fmt.Sprint(v)
		})
		p.waitFor("every shipped rule to be evaluated without error", func() (bool, string) {
			return p.rulesHealthy(shippedRuleNames(t))
		})
		p.waitFor("the utilization of every app to be recorded", func() (bool, string) {
			v := p.query(`app:duix_app_concurrency_in_use_per_limit:ratio`)
			return len(v) == len(apps), fmt.Sprint(v)
		})
	})

	t.Run("every documented metric has series", func(t *testing.T) {
		p.t = t
		for _, m := range documentedMetrics(t) {
			if onEventOnly[m.Name] {
				continue // checked where the event happens
			}
			name := m.Name
			if m.Type == "histogram" {
				name += "_bucket"
			}
			p.waitFor("series of "+name, func() (bool, string) {
				v := p.query(`{__name__="` + name + `"}`)
				return len(v) > 0, fmt.Sprint(len(v), " series")
			})
		}
	})

	t.Run("every dashboard query returns data", func(t *testing.T) {
		p.t = t
		want := make([]string, len(apps))
		for i, a := range apps {
			want[i] = a.Name
		}
		slices.Sort(want)
		for _, file := range dashboardFiles {
			d := loadDashboard(t, file)
			// The variables in order, each query with the ones before it
			// resolved, as Grafana does. The test's Prometheus has no
			// cluster label: the cluster variable is left at All.
			vars := map[string]string{}
			for _, v := range d.variables {
				match := substitute(v.match, vars)
				require.NotContains(t, match, "$", "%s: variable %s: unresolved variable in %s", file, v.name, match)
				var values []string
				if v.name == "cluster" {
					values = p.labelValuesNow(v.label, match)
				} else {
					values = p.labelValues(v.label, match)
				}
				switch v.name {
				case "cluster":
					require.Empty(t, values, "%s: no cluster label", file)
					require.True(t, v.includeAll, "%s: cluster has All", file)
					require.Equal(t, ".*", v.allValue, "%s: cluster's All matches series without the label", file)
					vars[v.name] = v.allValue
					continue
				case "job":
					require.Equal(t, []string{jobName}, values, "%s: the job variable (%s)", file, match)
				case "instance":
					require.Equal(t, []string{exporterAddr}, values, "%s: the instance variable (%s)", file, match)
				case "app":
					require.Equal(t, want, values, "%s: the app variable (%s) lists every app", file, match)
				}
				if v.multi {
					vars[v.name] = allValuesRegex(values)
				} else {
					vars[v.name] = values[0]
				}
			}
			require.NotEmpty(t, d.queries)
			for _, q := range d.queries {
				expr := substitute(q.expr, vars)
				require.NotContains(t, expr, "$", "%s: panel %q: unresolved variable in %s", file, q.panel, expr)
				if readsEventMetricsOnly(expr) {
					// No data until the event: a valid query is all
					// that can be asked of it now.
					_, err := p.tryQuery(expr)
					require.NoError(t, err, "%s: panel %q query %s", file, q.panel, q.ref)
					continue
				}
				p.waitFor(fmt.Sprintf("%s: panel %q query %s to return data", file, q.panel, q.ref), func() (bool, string) {
					v, err := p.tryQuery(expr)
					if err != nil {
						return false, err.Error()
					}
					return len(v) > 0, expr + ": no data"
				})
			}
			// Annotations have data only while alerts fire: they must be
			// valid queries.
			require.NotEmpty(t, d.annotations, "%s: alert annotations", file)
			for _, a := range d.annotations {
				expr := substitute(a, vars)
				require.NotContains(t, expr, "$", "%s: annotation: unresolved variable in %s", file, expr)
				_, err := p.tryQuery(expr)
				require.NoError(t, err, "%s: annotation %s", file, expr)
			}
		}
	})

	t.Run("near-limit alert fires at 95% and clears", func(t *testing.T) {
		p.t = t
		app := apps[1] // sales-avatar, allowance 20
		require.Equal(t, "sales-avatar", app.Name)
		conv := app.Conversations[0] // maxConversation 12
		require.Nil(t, p.findAlert("DuixConcurrencyNearLimit", app.Name), "at %d of 20", sim.InUse(app.AppID))
		var started []string
		for sim.InUse(app.AppID) < 19 {
			id, err := sim.StartSession(app.AppID, conv)
			require.NoError(t, err)
			started = append(started, id)
		}
		a := p.waitForAlert("DuixConcurrencyNearLimit", app.Name, "firing")
		assert.Equal(t, "warning", a.Labels["severity"])
		assert.Equal(t, jobName, a.Labels["job"])
		assert.Equal(t, exporterAddr, a.Labels["instance"])
		assert.Contains(t, a.Annotations["description"], "sales-avatar uses 95% of its concurrency allowance (19 of 20 sessions)")
		assert.Equal(t, "https://github.com/duix-exporter/duix_exporter/blob/main/docs/runbooks.md#duixconcurrencynearlimit", a.Annotations["runbook_url"])
		// 95% is not exhausted, and the other apps are far from their limits.
		for _, other := range p.alerts() {
			name := other.Labels["alertname"]
			assert.NotEqual(t, "DuixConcurrencyExhausted", name, "at 95%%: %v", other.Labels)
			if name == "DuixConcurrencyNearLimit" {
				assert.Equal(t, app.Name, other.Labels["app"], "only %s is near its limit", app.Name)
			}
		}
		// Its conversation holds more sessions than its maxConversation,
		// counted from the records that name it.
		ca := p.waitForAlert("DuixConversationNearLimit", app.Name, "firing")
		assert.Equal(t, conv, ca.Labels["conversation_id"])
		assert.Equal(t, "sessions", ca.Labels["basis"])

		for _, id := range started {
			require.True(t, sim.EndSession(app.AppID, id))
		}
		p.waitForNoAlert("DuixConcurrencyNearLimit", app.Name)
		p.waitForNoAlert("DuixConversationNearLimit", app.Name)
	})

	t.Run("conversation near-limit fires when records name no conversation", func(t *testing.T) {
		p.t = t
		app := apps[2] // museum-guide: one configured conversation, maxConversation 3
		require.Equal(t, oneConversationApp, app.Name)
		conv := app.Conversations[0]
		require.Nil(t, p.findAlert("DuixConversationNearLimit", app.Name), "with conversation IDs: 1 of 3")
		sim.SetSessionConversationIDs(false)
		defer sim.SetSessionConversationIDs(true)
		for sim.InUse(app.AppID) < 3 {
			_, err := sim.StartSession(app.AppID, conv)
			require.NoError(t, err)
		}
		p.waitFor("the unknown per-conversation count to be absent, not 0", func() (bool, string) {
			v := p.query(`duix_conversation_active_sessions{job="` + jobName + `",app="` + app.Name + `"}`)
			w := p.query(`duix_app_sessions_without_conversation{job="` + jobName + `",app="` + app.Name + `"} == 3`)
			return len(v) == 0 && len(w) == 1, fmt.Sprint(v, w)
		})
		a := p.waitForAlert("DuixConversationNearLimit", app.Name, "firing")
		assert.Equal(t, conv, a.Labels["conversation_id"])
		assert.Equal(t, "app_in_use", a.Labels["basis"])
		assert.Contains(t, a.Annotations["description"], "its 3 sessions in use are compared with the conversation's maxConversation of 3 (100%")

		for _, s := range sim.Sessions(app.AppID) {
			require.True(t, sim.EndSession(app.AppID, s.ID))
		}
		p.waitForNoAlert("DuixConversationNearLimit", app.Name)
	})

	t.Run("the first failure after a healthy start counts and alerts", func(t *testing.T) {
		p.t = t
		app := apps[0] // support-desk
		sel := `duix_app_errors_total{job="` + jobName + `",app="` + app.Name + `"}`
		// Scraped healthy, at 0, several times: the counter is there before
		// the first failure.
		p.waitFor("the app's error counter at 0 over several scrapes", func() (bool, string) {
			v := p.query(`count_over_time(` + sel + `[1m]) >= 3 and max_over_time(` + sel + `[1m]) == 0`)
			return len(v) == 1, fmt.Sprint(v)
		})
		require.Nil(t, p.findAlert("DuixAPIErrorsHigh", app.Name))
		faults.SetFault(app.AppID, "", platformtest.Fault{Kind: platformtest.FaultHTTP500})
		defer faults.ClearFaults()
		p.waitFor("increase() to see the first failures", func() (bool, string) {
			v := p.query(`increase(` + sel + `[` + errorsWindow + `]) > 0`)
			return len(v) == 1, fmt.Sprint(v)
		})
		a := p.waitForAlert("DuixAPIErrorsHigh", app.Name, "firing")
		assert.Equal(t, "warning", a.Labels["severity"])
		assert.Equal(t, exporterAddr, a.Labels["instance"])
		assert.Contains(t, a.Annotations["description"], app.Name+" had ")
		p.waitForDescription("DuixAPIErrorsHigh", app.Name, "Most frequent error: http.")
		assert.Equal(t, "Calls to the Duix platform for an app often fail.", a.Annotations["summary"])
		faults.ClearFaults()
		p.waitForNoAlert("DuixAppDown", app.Name)
	})

	t.Run("app-down alert fires while the platform fails", func(t *testing.T) {
		p.t = t
		app := apps[2] // museum-guide
		faults.SetFault(app.AppID, "", platformtest.Fault{Kind: platformtest.FaultHTTP500})
		p.waitForAlert("DuixAppDown", app.Name, "firing")
		p.waitForDescription("DuixAppDown", app.Name, "Most frequent error: http.")
		v := p.query(`duix_scrape_errors_total{job="` + jobName + `",app="` + app.Name + `",reason="http"}`)
		assert.Len(t, v, 1, "the failed calls are counted by reason")
		faults.ClearFaults()
		p.waitForNoAlert("DuixAppDown", app.Name)
	})

	t.Run("stuck-session alert fires and clears", func(t *testing.T) {
		p.t = t
		app := apps[0] // support-desk
		require.Nil(t, p.findAlert("DuixSessionStuck", app.Name))
		// A kiosk that connected three hours ago and never hung up.
		id, err := sim.StartSessionAt(app.AppID, app.Conversations[0], time.Now().Add(-3*time.Hour))
		require.NoError(t, err)
		a := p.waitForAlert("DuixSessionStuck", app.Name, "firing")
		assert.Equal(t, "warning", a.Labels["severity"])
		assert.Contains(t, a.Annotations["description"], "The oldest active session of support-desk has been going for 3h")
		assert.Equal(t, "https://github.com/duix-exporter/duix_exporter/blob/main/docs/runbooks.md#duixsessionstuck", a.Annotations["runbook_url"])
		// Stopped, as the runbook says.
		require.True(t, sim.EndSession(app.AppID, id))
		p.waitForNoAlert("DuixSessionStuck", app.Name)
		p.waitFor("the ended session to be counted", func() (bool, string) {
			v := p.query(`duix_app_sessions_ended_total{job="` + jobName + `",app="` + app.Name + `"} > 0`)
			return len(v) == 1, fmt.Sprint(v)
		})
	})

	// By now every series a rule reads has existed, the per-conversation
	// counts and the estimate for records that name no conversation alike:
	// pint's online checks (do the series and labels a rule reads exist?)
	// have all they need.
	t.Run("pint finds nothing against this Prometheus", func(t *testing.T) {
		p.t = t
		runPint(t, promURL)
	})

	t.Run("exporter-down alert fires when the exporter stops", func(t *testing.T) {
		p.t = t
		for _, a := range p.alerts() {
			assert.NotEqual(t, "DuixExporterDown", a.Labels["alertname"], "while the exporter runs")
		}
		require.NoError(t, exporter.Stop(15*time.Second), "the exporter's exit status")
		a := p.waitForAlert("DuixExporterDown", "", "firing")
		assert.Equal(t, "critical", a.Labels["severity"])
		assert.Equal(t, exporterAddr, a.Labels["instance"])
	})
}

// oneConversationApp is configured with its first conversation only.
const oneConversationApp = "museum-guide"

// onEventOnly are the documented metrics whose series appear with an event
// (a failed call, a session over the cap), not in a healthy steady state.
var onEventOnly = map[string]bool{"duix_scrape_errors_total": true, "duix_app_sessions_untracked_total": true}

var duixMetricRE = regexp.MustCompile(`\bduix_[a-z_]+`)

// readsEventMetricsOnly reports whether every metric a query reads is one
// of onEventOnly.
func readsEventMetricsOnly(expr string) bool {
	names := duixMetricRE.FindAllString(expr, -1)
	for _, n := range names {
		if !onEventOnly[n] {
			return false
		}
	}
	return len(names) > 0
}

// runPint lints the shipped rules with the project's .pint.hcl and a
// prometheus block for the test's Prometheus, so that pint's online checks
// run too (series and labels the rules read, rule dependencies), and
// requires no finding of any severity. The Makefile names pint's binary in
// $PINT.
func runPint(t *testing.T, promURL string) {
	t.Helper()
	bin := os.Getenv("PINT")
	require.NotEmpty(t, bin, "$PINT names pint's binary: run `make e2e-test`, which builds it into .tools/")
	base, err := os.ReadFile(pintConfig)
	require.NoError(t, err)
	cfg := filepath.Join(t.TempDir(), "pint.hcl")
	// The test's Prometheus is minutes old and scrapes every second; some
	// series exist only in some states of the test (the per-conversation
	// counts while session records name their conversation, the estimate
	// while they do not): pint looks back over the test's life, second by
	// second, rather than over a week in 5-minute steps.
	require.NoError(t, os.WriteFile(cfg, fmt.Appendf(base, `
prometheus "e2e" {
  uri      = %q
  timeout  = "30s"
  required = true
}

check "promql/series" {
  lookbackRange = "15m"
  lookbackStep  = "1s"
}
`, promURL), 0o600))
	rules, err := filepath.Abs(rulesFile)
	require.NoError(t, err)
	cmd := exec.Command(bin, "--no-color", "--config", cfg, "lint", "--min-severity=info", "--fail-on=info", rules)
	out, err := cmd.CombinedOutput()
	t.Logf("pint lint %s:\n%s", rulesFile, out)
	require.NoError(t, err, "pint found problems (above)")
	require.Contains(t, string(out), "online=true", "pint ran its online checks")
}

// readYAML decodes the YAML file into v.
func readYAML(t *testing.T, file string, v any) {
	t.Helper()
	raw, err := os.ReadFile(file)
	require.NoError(t, err)
	require.NoError(t, yaml.Unmarshal(raw, v), file)
}

// writeYAML writes v as YAML to the file name in dir, and returns its
// path.
func writeYAML(t *testing.T, dir, name string, v any) string {
	t.Helper()
	out, err := yaml.Marshal(v)
	require.NoError(t, err)
	path := filepath.Join(dir, name)
	require.NoError(t, os.WriteFile(path, out, 0o600))
	return path
}

// buildExporter builds the exporter's binary into dir.
func buildExporter(t *testing.T, dir string) string {
	t.Helper()
	bin := filepath.Join(dir, "duix_exporter")
	cmd := exec.Command("go", "build", "-o", bin, ".")
	cmd.Dir = repoRoot
	out, err := cmd.CombinedOutput()
	require.NoError(t, err, "go build:\n%s", out)
	return bin
}

// writeExporterConfig writes a configuration for the simulator's apps, with
// every app's conversations, and each key in its own file.
func writeExporterConfig(t *testing.T, dir, baseURL string, apps []simulator.DemoApp) string {
	t.Helper()
	var b strings.Builder
	fmt.Fprintf(&b, "api:\n  base_url: %q\n  timeout: 5s\napps:\n", baseURL)
	for _, a := range apps {
		key := filepath.Join(dir, a.Name+".key")
		require.NoError(t, os.WriteFile(key, []byte(a.AppKey), 0o600))
		fmt.Fprintf(&b, "  - name: %q\n    app_id: %q\n    app_key_file: %q\n    conversations:\n", a.Name, a.AppID, key)
		convs := a.Conversations
		if a.Name == oneConversationApp {
			convs = convs[:1] // an app with exactly one configured conversation
		}
		for _, c := range convs {
			fmt.Fprintf(&b, "      - %q\n", c)
		}
	}
	path := filepath.Join(dir, "duix.yml")
	require.NoError(t, os.WriteFile(path, []byte(b.String()), 0o600))
	return path
}

// writePrometheusConfig derives the test's Prometheus configuration from
// the shipped prometheus.yml: the exporter's job as shipped, with the
// test's target and short intervals, and a copy of the shipped rules whose
// `for:` durations are short. The per-app /probe job of probe-targets.yml
// runs beside it, one target per app, so that every series the rules read
// exists (DuixProbeFailed reads its `up`), as pint's online checks ask.
func writePrometheusConfig(t *testing.T, dir, exporterAddr string, apps []simulator.DemoApp) string {
	t.Helper()
	rules := writeYAML(t, dir, "rules.yml", shortenFor(t))

	var cfg map[string]any
	readYAML(t, promFile, &cfg)
	cfg["global"] = map[string]any{
		"scrape_interval":     scrapeInterval,
		"scrape_timeout":      scrapeInterval,
		"evaluation_interval": evalInterval,
	}
	cfg["rule_files"] = []string{rules}
	delete(cfg, "alerting") // nothing to send to
	var job map[any]any
	jobs, _ := cfg["scrape_configs"].([]any)
	for _, j := range jobs {
		if m, ok := j.(map[any]any); ok && m["job_name"] == jobName {
			job = m
		}
	}
	require.NotNil(t, job, "%s has a job %q", promFile, jobName)
	job["scrape_interval"] = scrapeInterval
	job["scrape_timeout"] = scrapeInterval
	job["static_configs"] = []any{map[string]any{"targets": []string{exporterAddr}}}
	cfg["scrape_configs"] = []any{job, probeJob(t, exporterAddr, apps)}
	return writeYAML(t, dir, "prometheus.yml", cfg)
}

// probeJob returns the duix-apps job of probe-targets.yml for the apps,
// scraping the test's exporter at short intervals.
func probeJob(t *testing.T, exporterAddr string, apps []simulator.DemoApp) map[any]any {
	t.Helper()
	var cfg struct {
		ScrapeConfigs []map[any]any `yaml:"scrape_configs"`
	}
	readYAML(t, probeFile, &cfg)
	for _, job := range cfg.ScrapeConfigs {
		if job["job_name"] != "duix-apps" {
			continue
		}
		names := make([]string, len(apps))
		for i, a := range apps {
			names[i] = a.Name
		}
		job["scrape_interval"] = scrapeInterval
		job["scrape_timeout"] = scrapeInterval
		job["static_configs"] = []any{map[string]any{"targets": names}}
		relabels, _ := job["relabel_configs"].([]any)
		replaced := false
		for _, r := range relabels {
			if m, ok := r.(map[any]any); ok && m["target_label"] == "__address__" {
				m["replacement"] = exporterAddr
				replaced = true
			}
		}
		require.True(t, replaced, "%s: the duix-apps job sets the exporter's address", probeFile)
		return job
	}
	t.Fatalf("%s has no duix-apps job", probeFile)
	return nil
}

// shortenFor returns the shipped rules with every `for:` set to shortFor,
// DuixAPIErrorsHigh's window set to errorsWindow, and every group
// evaluated at evalInterval.
func shortenFor(t *testing.T) any {
	t.Helper()
	raw, err := os.ReadFile(rulesFile)
	require.NoError(t, err)
	var rf struct {
		Groups []map[string]any `yaml:"groups"`
	}
	require.NoError(t, yaml.UnmarshalStrict(raw, &rf))
	changed, windowed := 0, false
	for _, g := range rf.Groups {
		if _, ok := g["interval"]; ok {
			g["interval"] = evalInterval
		}
		rules, _ := g["rules"].([]any)
		for _, r := range rules {
			m := r.(map[any]any)
			if _, ok := m["for"]; ok {
				m["for"] = shortFor
				changed++
			}
			if m["alert"] == "DuixAPIErrorsHigh" {
				expr, _ := m["expr"].(string)
				require.Contains(t, expr, "[10m]", "DuixAPIErrorsHigh's window")
				m["expr"] = strings.ReplaceAll(expr, "[10m]", "["+errorsWindow+"]")
				windowed = true
			}
		}
	}
	require.NotZero(t, changed, "the shipped alerts have for: durations")
	require.True(t, windowed, "the shipped rules have DuixAPIErrorsHigh")
	return rf
}

// shippedRuleNames returns the alert and record names of the shipped rules.
func shippedRuleNames(t *testing.T) []string {
	t.Helper()
	var rf struct {
		Groups []struct {
			Rules []struct {
				Alert  string `yaml:"alert"`
				Record string `yaml:"record"`
			} `yaml:"rules"`
		} `yaml:"groups"`
	}
	readYAML(t, rulesFile, &rf)
	var names []string
	for _, g := range rf.Groups {
		for _, r := range g.Rules {
			names = append(names, r.Alert+r.Record)
		}
	}
	require.NotEmpty(t, names)
	return names
}

// documentedMetrics reads the metric names and types from README's
// metrics table.
func documentedMetrics(t *testing.T) []platformtest.ReadmeMetric {
	t.Helper()
	metrics, err := platformtest.ReadmeMetrics(readmeFile)
	require.NoError(t, err)
	return metrics
}

// dashboard is what the test needs of a Grafana dashboard.
type dashboard struct {
	variables   []variable // the query variables, in order
	queries     []panelQuery
	annotations []string // Prometheus annotation queries
}

// variable is a query variable: label_values(match, label).
type variable struct {
	name, label, match string
	multi, includeAll  bool
	allValue           string
}

type panelQuery struct{ panel, ref, expr string }

type grafanaPanel struct {
	Title      string          `json:"title"`
	Type       string          `json:"type"`
	Datasource json.RawMessage `json:"datasource"`
	Targets    []struct {
		RefID      string          `json:"refId"`
		Expr       string          `json:"expr"`
		Datasource json.RawMessage `json:"datasource"`
	} `json:"targets"`
	Panels []grafanaPanel `json:"panels"`
}

// loadDashboard reads a dashboard, checks its variables and that every
// query uses the datasource variable, and returns its variables and
// queries.
func loadDashboard(t *testing.T, file string) dashboard {
	t.Helper()
	raw, err := os.ReadFile(file)
	require.NoError(t, err)
	var d struct {
		UID        string `json:"uid"`
		Templating struct {
			List []struct {
				Name       string          `json:"name"`
				Type       string          `json:"type"`
				Query      json.RawMessage `json:"query"`
				Definition string          `json:"definition"`
				Multi      bool            `json:"multi"`
				IncludeAll bool            `json:"includeAll"`
				AllValue   string          `json:"allValue"`
				Datasource json.RawMessage `json:"datasource"`
			} `json:"list"`
		} `json:"templating"`
		Annotations struct {
			List []struct {
				Expr       string          `json:"expr"`
				Datasource json.RawMessage `json:"datasource"`
			} `json:"list"`
		} `json:"annotations"`
		Panels []grafanaPanel `json:"panels"`
	}
	require.NoError(t, json.Unmarshal(raw, &d))
	require.NotEmpty(t, d.UID, "%s: a stable uid", file)

	const wantDS = `{"type":"prometheus","uid":"${datasource}"}`
	compact := func(m json.RawMessage) string {
		var b bytes.Buffer
		if len(m) == 0 || json.Compact(&b, m) != nil {
			return string(m)
		}
		return b.String()
	}
	var out dashboard
	var names []string
	labelValues := regexp.MustCompile(`^label_values\((.+), *([a-zA-Z_][a-zA-Z0-9_]*)\)$`)
	for _, v := range d.Templating.List {
		names = append(names, v.Name)
		if v.Name == "datasource" {
			assert.Equal(t, "datasource", v.Type)
			assert.Equal(t, `"prometheus"`, string(v.Query))
			continue
		}
		assert.Equal(t, "query", v.Type, "%s: variable %s", file, v.Name)
		assert.Equal(t, wantDS, compact(v.Datasource), "%s: variable %s", file, v.Name)
		m := labelValues.FindStringSubmatch(v.Definition)
		require.NotNil(t, m, "%s: variable %s: %s", file, v.Name, v.Definition)
		out.variables = append(out.variables, variable{
			name: v.Name, label: m[2], match: m[1],
			multi: v.Multi, includeAll: v.IncludeAll, allValue: v.AllValue,
		})
	}
	require.Equal(t, []string{"datasource", "cluster", "job", "instance", "app"}, names, "%s: variables", file)
	app := out.variables[len(out.variables)-1]
	assert.True(t, app.multi, "%s: app is multi-value", file)
	for _, a := range d.Annotations.List {
		if a.Expr != "" {
			assert.Equal(t, wantDS, compact(a.Datasource), "%s: annotation datasource", file)
			out.annotations = append(out.annotations, a.Expr)
		}
	}

	var walk func([]grafanaPanel)
	walk = func(ps []grafanaPanel) {
		for _, p := range ps {
			walk(p.Panels)
			if p.Type == "row" {
				continue
			}
			assert.Equal(t, wantDS, compact(p.Datasource), "%s: panel %q datasource", file, p.Title)
			assert.NotEmpty(t, p.Targets, "%s: panel %q has queries", file, p.Title)
			for _, tg := range p.Targets {
				assert.Equal(t, wantDS, compact(tg.Datasource), "%s: panel %q query %s datasource", file, p.Title, tg.RefID)
				require.NotEmpty(t, tg.Expr, "%s: panel %q query %s", file, p.Title, tg.RefID)
				out.queries = append(out.queries, panelQuery{p.Title, tg.RefID, tg.Expr})
			}
		}
	}
	walk(d.Panels)
	return out
}

// allValuesRegex is what Grafana puts for a multi-value variable set to
// All: the values, regex-escaped, as alternatives.
func allValuesRegex(values []string) string {
	q := make([]string, len(values))
	for i, v := range values {
		q[i] = regexp.QuoteMeta(v)
	}
	// Inside a PromQL double-quoted string, a backslash is written twice.
	return strings.ReplaceAll("("+strings.Join(q, "|")+")", `\`, `\\`)
}

// substitute resolves the dashboard's variables (vars by name) and
// Grafana's built-in ones as Grafana would.
func substitute(expr string, vars map[string]string) string {
	for name, value := range vars {
		re := regexp.MustCompile(`\$\{` + name + `(:[a-z]+)?\}|\$` + name + `\b`)
		expr = re.ReplaceAllLiteralString(expr, value)
	}
	return strings.NewReplacer(
		"${__rate_interval}", "10s", "$__rate_interval", "10s",
		"${__interval}", "2s", "$__interval", "2s",
		"${__range}", "1m", "$__range", "1m",
	).Replace(expr)
}

// promAPI queries the test's Prometheus through its HTTP API.
type promAPI struct {
	t    *testing.T
	ctx  context.Context
	base string
	logs []*platformtest.Process
}

// get calls an API path and decodes the data of a successful answer.
func (p *promAPI) get(path string, params url.Values, data any) error {
	return platformtest.PrometheusGet(p.ctx, p.base, path, params, data)
}

// sample is one element of an instant vector.
type sample struct {
	Metric map[string]string `json:"metric"`
	Value  float64
}

func (s sample) String() string { return fmt.Sprintf("%v=%g", s.Metric, s.Value) }

func (p *promAPI) tryQuery(q string) ([]sample, error) {
	var res struct {
		ResultType string          `json:"resultType"`
		Result     json.RawMessage `json:"result"`
	}
	if err := p.get("/api/v1/query", url.Values{"query": {q}}, &res); err != nil {
		return nil, fmt.Errorf("%s: %w", q, err)
	}
	parse := func(pair [2]any) float64 {
		s, _ := pair[1].(string)
		f, _ := strconv.ParseFloat(s, 64)
		return f
	}
	switch res.ResultType {
	case "vector":
		var raw []struct {
			Metric map[string]string `json:"metric"`
			Value  [2]any            `json:"value"`
		}
		if err := json.Unmarshal(res.Result, &raw); err != nil {
			return nil, err
		}
		out := make([]sample, len(raw))
		for i, r := range raw {
			out[i] = sample{r.Metric, parse(r.Value)}
		}
		return out, nil
	case "scalar":
		var v [2]any
		if err := json.Unmarshal(res.Result, &v); err != nil {
			return nil, err
		}
		return []sample{{Value: parse(v)}}, nil
	}
	return nil, fmt.Errorf("%s: unexpected result type %s", q, res.ResultType)
}

func (p *promAPI) query(q string) []sample {
	p.t.Helper()
	v, err := p.tryQuery(q)
	require.NoError(p.t, err)
	return v
}

// labelValues waits for the values of label on the series of match, as a
// label_values() variable lists them, and returns them sorted.
func (p *promAPI) labelValues(label, match string) []string {
	p.t.Helper()
	var out []string
	p.waitFor("values of the "+label+" label of "+match, func() (bool, string) {
		var err error
		if out, err = p.tryLabelValues(label, match); err != nil {
			return false, err.Error()
		}
		return len(out) > 0, "none"
	})
	return out
}

// labelValuesNow returns the values of label on the series of match now,
// possibly none.
func (p *promAPI) labelValuesNow(label, match string) []string {
	p.t.Helper()
	out, err := p.tryLabelValues(label, match)
	require.NoError(p.t, err)
	return out
}

func (p *promAPI) tryLabelValues(label, match string) ([]string, error) {
	var out []string
	if err := p.get("/api/v1/label/"+label+"/values", url.Values{"match[]": {match}}, &out); err != nil {
		return nil, err
	}
	slices.Sort(out)
	return out, nil
}

// alert is an active (pending or firing) alert.
type alert struct {
	Labels      map[string]string `json:"labels"`
	Annotations map[string]string `json:"annotations"`
	State       string            `json:"state"`
}

func (p *promAPI) alerts() []alert {
	p.t.Helper()
	var res struct {
		Alerts []alert `json:"alerts"`
	}
	require.NoError(p.t, p.get("/api/v1/alerts", nil, &res))
	return res.Alerts
}

// findAlert returns the active alert with that name (and app, if not
// empty).
func (p *promAPI) findAlert(name, app string) *alert {
	for _, a := range p.alerts() {
		if a.Labels["alertname"] == name && (app == "" || a.Labels["app"] == app) {
			return &a
		}
	}
	return nil
}

func (p *promAPI) waitForAlert(name, app, state string) alert {
	p.t.Helper()
	var found alert
	p.waitFor(fmt.Sprintf("alert %s{app=%q} to be %s", name, app, state), func() (bool, string) {
		a := p.findAlert(name, app)
		if a == nil {
			return false, "not active"
		}
		found = *a
		return a.State == state, a.State
	})
	return found
}

// waitForDescription waits for the firing alert's description to contain
// want. The most frequent error is named from duix_scrape_errors_total,
// whose series of a reason begins with its first failure: increase() sees
// it from its second sample, which may come after the alert fires when the
// rules' for: is shortened, as here (with the shipped 10m and 15m it has
// long been there).
func (p *promAPI) waitForDescription(name, app, want string) {
	p.t.Helper()
	p.waitFor(fmt.Sprintf("alert %s{app=%q} to say %q", name, app, want), func() (bool, string) {
		if a := p.findAlert(name, app); a != nil {
			return strings.Contains(a.Annotations["description"], want), a.Annotations["description"]
		}
		return false, "not active"
	})
}

func (p *promAPI) waitForNoAlert(name, app string) {
	p.t.Helper()
	p.waitFor(fmt.Sprintf("alert %s{app=%q} to clear", name, app), func() (bool, string) {
		a := p.findAlert(name, app)
		if a == nil {
			return true, ""
		}
		return false, a.State
	})
}

// rulesHealthy reports whether every named rule is loaded and was last
// evaluated without error.
func (p *promAPI) rulesHealthy(names []string) (bool, string) {
	var res struct {
		Groups []struct {
			Rules []struct {
				Name      string `json:"name"`
				Health    string `json:"health"`
				LastError string `json:"lastError"`
			} `json:"rules"`
		} `json:"groups"`
	}
	if err := p.get("/api/v1/rules", nil, &res); err != nil {
		return false, err.Error()
	}
	health := map[string]string{}
	for _, g := range res.Groups {
		for _, r := range g.Rules {
			health[r.Name] = r.Health
			if r.LastError != "" {
				return false, r.Name + ": " + r.LastError
			}
		}
	}
	for _, n := range names {
		if health[n] != "ok" {
			return false, fmt.Sprintf("%s: health %q", n, health[n])
		}
	}
	return len(health) == len(names), fmt.Sprintf("%d rules loaded, %d shipped", len(health), len(names))
}

// waitFor polls check until it reports true, failing the test after
// waitLong with the last detail and the processes' logs.
func (p *promAPI) waitFor(what string, check func() (bool, string)) {
	p.t.Helper()
	limit := time.Now().Add(waitLong)
	var detail string
	for {
		var ok bool
		ok, detail = check()
		if ok {
			return
		}
		if time.Now().After(limit) || p.ctx.Err() != nil {
			break
		}
		time.Sleep(200 * time.Millisecond)
	}
	for _, l := range p.logs {
		p.t.Logf("%s output:\n%s", l.Name, l.Out.String())
	}
	p.t.Fatalf("waited %s for %s: %s", waitLong, what, detail)
}

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
		// As the rules label them: job, the exporter's instance, app. The
		// same app name on another exporter (another account or shard) is
		// another allowance.
		alert := func(name, severity, instance, app string) map[string]string {
			return map[string]string{"alertname": name, "severity": severity, "job": "duix-exporter", "instance": instance, "app": app}
		}
		postAlerts(t, "http://"+amAddr,
			alert("DuixConcurrencyExhausted", "critical", "prod:9866", "kiosk"),
			alert("DuixConcurrencyNearLimit", "warning", "prod:9866", "kiosk"),
			alert("DuixConcurrencyNearLimit", "warning", "prod:9866", "lobby"),
			alert("DuixConcurrencyNearLimit", "warning", "staging:9866", "kiosk"))
		p.waitFor("prod kiosk's NearLimit to be inhibited, lobby's and staging kiosk's not", func() (bool, string) {
			states := amAlertStates(t, "http://"+amAddr, "DuixConcurrencyNearLimit")
			return states["kiosk@prod:9866"] == "suppressed" && states["lobby@prod:9866"] == "active" &&
				states["kiosk@staging:9866"] == "active", fmt.Sprint(states)
		})
	})

	t.Run("a down exporter mutes the probes of its own cluster only", func(t *testing.T) {
		p.t = t
		postAlerts(t, "http://"+amAddr,
			map[string]string{"alertname": "DuixExporterDown", "severity": "critical", "job": "duix-exporter", "instance": "exporter:9866", "cluster": "eu"},
			map[string]string{"alertname": "DuixProbeFailed", "severity": "warning", "job": "duix-apps", "instance": "kiosk", "app": "kiosk", "cluster": "eu"},
			map[string]string{"alertname": "DuixProbeFailed", "severity": "warning", "job": "duix-apps", "instance": "lobby", "app": "lobby", "cluster": "us"})
		p.waitFor("eu's probe to be inhibited, us' not", func() (bool, string) {
			states := amAlertStates(t, "http://"+amAddr, "DuixProbeFailed")
			return states["kiosk@kiosk"] == "suppressed" && states["lobby@lobby"] == "active", fmt.Sprint(states)
		})
	})
}

// writeJanitorPrometheusConfig writes a Prometheus configuration that
// scrapes the exporter, evaluates a copy of the shipped DuixSessionStuck
// with a 10-minute threshold and `for: 1s`, and sends to Alertmanager.
func writeJanitorPrometheusConfig(t *testing.T, dir, exporterAddr, amAddr string) string {
	t.Helper()
	var rf struct {
		Groups []struct {
			Rules []map[string]any `yaml:"rules"`
		} `yaml:"groups"`
	}
	readYAML(t, rulesFile, &rf)
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
	rulesPath := writeYAML(t, dir, "janitor-rules.yml", map[string]any{"groups": []any{map[string]any{"name": "janitor", "rules": []any{rule}}}})

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
	return writeYAML(t, dir, "prometheus-janitor.yml", cfg)
}

// writeAlertmanagerConfig writes the shipped Alertmanager configuration
// with the janitor's receiver pointed at addr and the intervals of every
// route shortened: it is the shipped routing and inhibition that run.
func writeAlertmanagerConfig(t *testing.T, dir, janitorAddr string) string {
	t.Helper()
	var cfg map[string]any
	readYAML(t, amFile, &cfg)
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
	return writeYAML(t, dir, "alertmanager.yml", cfg)
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
// alerts of that name, by app@instance.
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
		out[a.Labels["app"]+"@"+a.Labels["instance"]] = a.Status.State
	}
	return out
}
