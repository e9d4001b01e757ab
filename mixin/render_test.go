package mixin

import (
	"encoding/json"
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
	// The Helm chart's directory holds that file and the copies of the
	// dashboards `make manifests` makes, nothing else.
	entries, err := os.ReadDir(filepath.Join(repoRoot, filepath.Dir(HelmRulesFile)))
	require.NoError(t, err)
	var got []string
	for _, e := range entries {
		got = append(got, e.Name())
	}
	assert.ElementsMatch(t, []string{filepath.Base(HelmRulesFile), "dashboards"}, got)
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
	assert.Equal(t, 8, records)
	assert.Equal(t, 11, alerts)
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
	// The dashboards name a configured selector in their variables only:
	// the job variable lists the jobs of appSelector, the cluster variable
	// the clusters of exporterSelector's targets. Their queries narrow by
	// the variables (TestLintDashboardTargets checks the job and instance
	// matchers of every selector).
	for name, raw := range r.Dashboards {
		d := loadDashboard(t, raw)
		assert.Equal(t, `label_values(up{job="exp-x"}, region)`, d.variable(t, "cluster").Definition, "%s: the cluster variable reads the configured label", name)
		assert.Equal(t, `label_values(duix_up{job="apps-y", region=~"$cluster"}, job)`, d.variable(t, "job").Definition, name)
		for _, v := range d.Templating.List {
			if v.Name != "cluster" && v.Name != "job" {
				assert.NotContains(t, v.Definition, "-x", "%s: variable %s", name, v.Name)
				assert.NotContains(t, v.Definition, "-y", "%s: variable %s", name, v.Name)
			}
		}
		for _, a := range d.Annotations.List {
			if a.Expr != "" {
				assert.Contains(t, a.Expr, `region=~"$cluster"`)
				for _, sel := range allowed {
					assert.NotContains(t, a.Expr, sel)
				}
			}
		}
		for _, p := range d.panels(true) {
			for _, tg := range p.Targets {
				for _, sel := range allowed {
					assert.NotContains(t, tg.Expr, sel, "%s: panel %q: a configured selector beside the variables", name, p.Title)
				}
				assert.NotContains(t, tg.Expr, "duix-", "%s: panel %q", name, p.Title)
				assert.NotContains(t, tg.Expr, `cluster=~`, "%s: the cluster label is the configured one", p.Title)
				for _, m := range selectorRE.FindAllStringSubmatch(tg.Expr, -1) {
					assert.Contains(t, m[2], `region=~"$cluster"`, "%s: panel %q: %s", name, p.Title, m[0])
				}
				for _, m := range bareRE.FindAllStringSubmatch(tg.Expr, -1) {
					t.Errorf("%s: panel %q: %s without a selector in %s", name, p.Title, m[1], tg.Expr)
				}
			}
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

// dashboard is what the tests, and dashboard-linter, read of a dashboard.
type dashboard struct {
	UID        string   `json:"uid"`
	Title      string   `json:"title"`
	Tags       []string `json:"tags"`
	Editable   bool     `json:"editable"`
	Templating struct {
		List []variable `json:"list"`
	} `json:"templating"`
	Annotations struct {
		List []struct {
			Name string `json:"name"`
			Expr string `json:"expr"`
		} `json:"list"`
	} `json:"annotations"`
	Panels []panel `json:"panels"`
}

type variable struct {
	Name       string          `json:"name"`
	Label      string          `json:"label"`
	Type       string          `json:"type"`
	Definition string          `json:"definition"`
	Query      json.RawMessage `json:"query"`
	Datasource *struct {
		UID string `json:"uid"`
	} `json:"datasource"`
	Multi      bool   `json:"multi"`
	IncludeAll bool   `json:"includeAll"`
	AllValue   string `json:"allValue"`
	Hide       int    `json:"hide"`
	Refresh    int    `json:"refresh"`
}

type panel struct {
	ID          int             `json:"id"`
	Type        string          `json:"type"`
	Title       string          `json:"title"`
	Description string          `json:"description"`
	Datasource  json.RawMessage `json:"datasource"`
	GridPos     struct{ X, Y, W, H int }
	Targets     []struct {
		RefID string `json:"refId"`
		Expr  string `json:"expr"`
	} `json:"targets"`
	FieldConfig struct {
		Defaults struct {
			Unit     string          `json:"unit"`
			Mappings json.RawMessage `json:"mappings"`
		} `json:"defaults"`
		Overrides []struct {
			Properties []struct {
				ID    string `json:"id"`
				Value any    `json:"value"`
			} `json:"properties"`
		} `json:"overrides"`
	} `json:"fieldConfig"`
	Panels []panel `json:"panels"`
}

func loadDashboard(t *testing.T, raw []byte) *dashboard {
	t.Helper()
	var d dashboard
	require.NoError(t, json.Unmarshal(raw, &d))
	return &d
}

// panels returns every panel, those nested in rows too, and the rows
// themselves if rows.
func (d *dashboard) panels(rows bool) []panel {
	var out []panel
	var walk func([]panel)
	walk = func(ps []panel) {
		for _, p := range ps {
			if rows || p.Type != "row" {
				out = append(out, p)
			}
			walk(p.Panels)
		}
	}
	walk(d.Panels)
	return out
}

// template returns the variable named name, nil if there is none.
func (d *dashboard) template(name string) *variable {
	for i := range d.Templating.List {
		if d.Templating.List[i].Name == name {
			return &d.Templating.List[i]
		}
	}
	return nil
}

// variable returns the variable named name, which must exist.
func (d *dashboard) variable(t *testing.T, name string) variable {
	t.Helper()
	v := d.template(name)
	require.NotNil(t, v, "%s: no variable %s", d.UID, name)
	return *v
}

// The dashboards are well formed: stable uids, the variables the fleet
// needs, every panel on the grid and reading the chosen data source.
func TestDashboardsAreWellFormed(t *testing.T) {
	r, err := Render("")
	require.NoError(t, err)
	require.Len(t, r.Dashboards, len(Dashboards))
	uids := map[string]string{"duix-fleet.json": "duix-fleet", "duix-app.json": "duix-app"}
	for name, raw := range r.Dashboards {
		d := loadDashboard(t, raw)
		assert.Equal(t, uids[name], d.UID, name)

		var names []string
		for _, v := range d.Templating.List {
			names = append(names, v.Name)
		}
		assert.Equal(t, []string{"datasource", "cluster", "job", "instance", "app"}, names, "%s: variables, each narrowing the next", name)
		cluster := d.variable(t, "cluster")
		assert.True(t, cluster.IncludeAll, "cluster has All")
		assert.Equal(t, ".*", cluster.AllValue, "cluster's All matches series without the label")
		assert.Equal(t, `label_values(up{job="duix-exporter"}, cluster)`, cluster.Definition)
		for _, v := range []string{"job", "instance"} {
			vv := d.variable(t, v)
			assert.True(t, vv.Multi && vv.IncludeAll, "%s: %s is multi-value with All", name, v)
			assert.Equal(t, ".+", vv.AllValue, "%s: %s", name, v)
		}
		app := d.variable(t, "app")
		assert.True(t, app.Multi)
		if name == "duix-fleet.json" {
			assert.True(t, app.IncludeAll, "the fleet's app variable has All")
			assert.Equal(t, ".+", app.AllValue)
		} else {
			assert.False(t, app.IncludeAll, "the drill-down opens on one app, not the whole fleet")
		}

		var alerts bool
		for _, a := range d.Annotations.List {
			alerts = alerts || strings.HasPrefix(a.Expr, `ALERTS{alertname=~"Duix.*", alertstate="firing"`)
		}
		assert.True(t, alerts, "%s: Duix alerts as annotations", name)

		ids := map[int]bool{}
		for _, p := range d.panels(true) {
			assert.False(t, ids[p.ID], "%s: panel id %d twice", name, p.ID)
			ids[p.ID] = true
			assert.True(t, p.GridPos.W > 0 && p.GridPos.H > 0 && p.GridPos.X+p.GridPos.W <= 24, "%s: panel %q on the grid: %+v", name, p.Title, p.GridPos)
			if p.Type == "row" {
				continue
			}
			assert.JSONEq(t, `{"type":"prometheus","uid":"${datasource}"}`, string(p.Datasource), "%s: panel %q", name, p.Title)
			require.NotEmpty(t, p.Targets, "%s: panel %q", name, p.Title)
			for _, tg := range p.Targets {
				assert.NotEmpty(t, tg.Expr, "%s: panel %q query %s", name, p.Title, tg.RefID)
			}
		}
	}
}

// aggregationRE matches a query that aggregates at its top: sum(...),
// count(...) or vector(0), ...
var aggregationRE = regexp.MustCompile(`^(sum|count|min|max|avg)\s*(by\s*\(([^)]*)\))?\s*\(`)

// The fleet overview draws no panel with a series per app for the whole
// fleet: every query aggregates the apps away or keeps the top 10.
func TestFleetDashboardScales(t *testing.T) {
	r, err := Render("")
	require.NoError(t, err)
	d := loadDashboard(t, r.Dashboards["duix-fleet.json"])
	for _, p := range d.panels(true) {
		for _, tg := range p.Targets {
			expr := strings.TrimSpace(tg.Expr)
			if strings.Contains(expr, "topk(10,") {
				continue
			}
			m := aggregationRE.FindStringSubmatch(expr)
			if assert.NotNil(t, m, "panel %q: %s neither aggregates nor keeps the top 10", p.Title, expr) {
				assert.NotContains(t, m[3], "app", "panel %q: %s keeps a series per app", p.Title, expr)
			}
		}
	}
}

// The worst apps link to the drill-down, carrying the app, its job and
// instance, the data source, the cluster and the time range.
func TestFleetLinksToTheDrillDown(t *testing.T) {
	r, err := Render("")
	require.NoError(t, err)
	raw := string(r.Dashboards["duix-fleet.json"])
	assert.Contains(t, raw, `"url": "/d/duix-app/duix-app?${datasource:queryparam}&${cluster:queryparam}&var-job=${__data.fields.job}&var-instance=${__data.fields.instance}&var-app=${__data.fields.app}&${__url_time_range}"`)
	assert.Contains(t, raw, `var-app=${__field.labels.app}`)
}
