package mixin

import (
	"os"
	"path/filepath"
	"regexp"
	"sort"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"go.yaml.in/yaml/v3"
)

// repoRoot is the repository root seen from this directory.
const repoRoot = ".."

// The committed files are the mixin's rendering, byte for byte.
func TestCommittedFilesAreRendered(t *testing.T) {
	r, err := Render("")
	require.NoError(t, err)
	dir := t.TempDir()
	names, err := r.Write(dir)
	require.NoError(t, err)
	want := []string{HelmRulesFile, RulesFile}
	for _, d := range Dashboards {
		want = append(want, "dashboards/"+d)
	}
	sort.Strings(want)
	require.Equal(t, want, names, "the rendered files")
	for _, name := range names {
		rendered, err := os.ReadFile(filepath.Join(dir, name))
		require.NoError(t, err)
		committed, err := os.ReadFile(filepath.Join(repoRoot, name))
		if !assert.NoError(t, err, "%s is missing: run `make mixin`", name) {
			continue
		}
		assert.Equal(t, string(rendered), string(committed), "%s differs from its rendering: run `make mixin`", name)
	}
	// The Helm chart's directory holds that file only.
	entries, err := os.ReadDir(filepath.Join(repoRoot, filepath.Dir(HelmRulesFile)))
	require.NoError(t, err)
	require.Len(t, entries, 1)
	assert.Equal(t, filepath.Base(HelmRulesFile), entries[0].Name())
}

// rule is a rule of the rendered groups.
type rule struct {
	Record      string            `yaml:"record"`
	Alert       string            `yaml:"alert"`
	Expr        string            `yaml:"expr"`
	For         string            `yaml:"for"`
	Labels      map[string]string `yaml:"labels"`
	Annotations map[string]string `yaml:"annotations"`
}

func rulesOf(t *testing.T, r *Rendering) []rule {
	t.Helper()
	var rf struct {
		Groups []struct {
			Name     string `yaml:"name"`
			Interval string `yaml:"interval"`
			Rules    []rule `yaml:"rules"`
		} `yaml:"groups"`
	}
	dec := yaml.NewDecoder(strings.NewReader(string(r.Rules)))
	dec.KnownFields(true)
	require.NoError(t, dec.Decode(&rf))
	var out []rule
	for _, g := range rf.Groups {
		require.NotEmpty(t, g.Rules, "group %s", g.Name)
		out = append(out, g.Rules...)
	}
	return out
}

// Every alert carries what routing and the runbooks need; the recording
// rules are named level:metric:operations.
func TestRulesFollowTheConventions(t *testing.T) {
	r, err := Render("")
	require.NoError(t, err)
	alerts, records := 0, 0
	for _, ru := range rulesOf(t, r) {
		if ru.Record != "" {
			records++
			assert.Regexp(t, `^[a-z][a-z_]*:duix_[a-z_]+:[a-z][a-z0-9_]*$`, ru.Record, "level:metric:operations")
			continue
		}
		alerts++
		assert.Regexp(t, `^Duix[A-Za-z]+$`, ru.Alert)
		assert.Contains(t, []string{"info", "warning", "critical"}, ru.Labels["severity"], "%s: severity", ru.Alert)
		assert.NotEmpty(t, ru.Annotations["summary"], "%s: summary", ru.Alert)
		assert.NotEmpty(t, ru.Annotations["description"], "%s: description", ru.Alert)
		assert.Equal(t, "https://github.com/duix-exporter/duix_exporter/blob/main/docs/runbooks.md#"+strings.ToLower(ru.Alert),
			ru.Annotations["runbook_url"], "%s: runbook_url", ru.Alert)
	}
	assert.Equal(t, 7, records)
	assert.Equal(t, 10, alerts)
}

// selectorRE finds the selectors of metric names (a name followed by
// braces) in PromQL.
var selectorRE = regexp.MustCompile(`([a-zA-Z_:][a-zA-Z0-9_:]*)\{([^{}]*)\}`)

// bareRE finds metric names not followed by braces.
var bareRE = regexp.MustCompile(`\b(duix_[a-z_]+|app:[a-z0-9_:]+|app_conversation_id:[a-z0-9_:]+|up|ALERTS)\b([^{a-z0-9_:]|$)`)

// Every selector comes from _config: rendered with other selectors, no
// rule, dashboard query or variable names the default jobs, and every
// metric is selected by one of the configured selectors.
func TestSelectorsComeFromConfig(t *testing.T) {
	r, err := Render(`{
		exporterSelector: 'job="exp-x"',
		appSelector: 'job="apps-y"',
		probeSelector: 'job="probe-z", tier="p"',
		probeAppLabel: 'target_app',
		clusterLabel: 'region',
		runbookURLBase: 'https://runbooks.example/duix',
	}`)
	require.NoError(t, err)

	allowed := []string{`job="exp-x"`, `job="apps-y"`, `job="probe-z", tier="p"`}
	check := func(where, expr string) {
		t.Helper()
		assert.NotContains(t, expr, "duix-exporter", "%s: %s", where, expr)
		assert.NotContains(t, expr, "duix-apps", "%s: %s", where, expr)
		for _, m := range bareRE.FindAllStringSubmatch(expr, -1) {
			t.Errorf("%s: %s without a selector in %s", where, m[1], expr)
		}
		for _, m := range selectorRE.FindAllStringSubmatch(expr, -1) {
			if m[1] == "ALERTS" {
				continue
			}
			ok := false
			for _, a := range allowed {
				ok = ok || strings.HasPrefix(m[2], a)
			}
			assert.True(t, ok, "%s: %s{%s} is not selected by the configuration", where, m[1], m[2])
		}
	}
	for _, ru := range rulesOf(t, r) {
		check(ru.Record+ru.Alert, ru.Expr)
		if ru.Alert != "" {
			assert.Equal(t, "https://runbooks.example/duix#"+strings.ToLower(ru.Alert), ru.Annotations["runbook_url"])
		}
		if ru.Alert == "DuixProbeFailed" {
			assert.Contains(t, ru.Expr, `"target_app"`, "the app comes from the configured target label")
		}
	}
}

// The default selectors name the jobs of the shipped scrape
// configurations.
func TestDefaultSelectorsMatchTheScrapeConfigs(t *testing.T) {
	r, err := Render("")
	require.NoError(t, err)
	job := func(key string) string {
		s, _ := r.Config[key].(string)
		m := regexp.MustCompile(`^job="([^"]+)"$`).FindStringSubmatch(s)
		require.NotNil(t, m, "%s: %s", key, s)
		return m[1]
	}
	read := func(p string) string {
		b, err := os.ReadFile(filepath.Join(repoRoot, p))
		require.NoError(t, err)
		return string(b)
	}
	assert.Contains(t, read("deploy/prometheus/prometheus.yml"), "job_name: "+job("exporterSelector"))
	probe := read("deploy/prometheus/probe-targets.yml")
	assert.Contains(t, probe, "job_name: "+job("probeSelector"))
	assert.Contains(t, probe, "job_name: "+job("exporterSelector"))
	assert.Equal(t, "instance", r.Config["probeAppLabel"])
	assert.Regexp(t, `source_labels: \[__param_app\]\s+target_label: instance`, probe, "the app name becomes the instance label")
}
