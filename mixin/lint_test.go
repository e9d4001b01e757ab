package mixin

// The conventions of monitoring mixins, as the ecosystem's linters check
// them, applied to the rendered rules and dashboards: mixtool lint's alert
// rules (monitoring-mixins/mixtool, pkg/mixer/lint.go) and the rules of
// Grafana's dashboard-linter (grafana/dashboard-linter, lint/rule_*.go),
// each test named after the rule it mirrors. Neither tool can be
// installed here; these tests stand in for them, with no exclusions.

import (
	"encoding/json"
	"fmt"
	"regexp"
	"strings"
	"testing"
	"time"

	"github.com/prometheus/prometheus/model/labels"
	"github.com/prometheus/prometheus/promql/parser"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"go.yaml.in/yaml/v3"
)

// mixtool lint's patterns.
var (
	camelCaseRE  = regexp.MustCompile(`^([A-Z]+[a-z0-9]+)+$`)
	goTemplateRE = regexp.MustCompile(`\{\{.+}\}`)
	sentenceRE   = regexp.MustCompile(`^[A-Z].+\.$`)
)

// mixtool lint: alert-group-rule-count, alert-group-name-length,
// alert-name-camelcase, alert-name-length, alert-severity-rule,
// alert-description-missing-rule, alert-description-templating,
// alert-summary-missing-rule, alert-summary-templating and
// alert-summary-style; and every expression is valid PromQL.
func TestLintAlertsAsMixtool(t *testing.T) {
	r, err := Render("")
	require.NoError(t, err)
	var rf struct {
		Groups []struct {
			Name  string `yaml:"name"`
			Rules []rule `yaml:"rules"`
		} `yaml:"groups"`
	}
	require.NoError(t, yaml.Unmarshal(r.Rules, &rf))
	require.NotEmpty(t, rf.Groups)
	p := parser.NewParser(parser.Options{})
	for _, g := range rf.Groups {
		assert.LessOrEqual(t, len(g.Rules), 20, "[alert-group-rule-count] group %s", g.Name)
		assert.LessOrEqual(t, len(g.Name), 40, "[alert-group-name-length] group %s", g.Name)
		for _, ru := range g.Rules {
			_, err := p.ParseExpr(ru.Expr)
			assert.NoError(t, err, "%s%s: %s", ru.Alert, ru.Record, ru.Expr)
			if ru.Alert == "" {
				continue
			}
			a := ru.Alert
			assert.Regexp(t, camelCaseRE, a, "[alert-name-camelcase]")
			assert.LessOrEqual(t, len(a), 40, "[alert-name-length] %s", a)
			assert.Contains(t, []string{"warning", "critical", "info"}, ru.Labels["severity"], "[alert-severity-rule] %s", a)
			desc, ok := ru.Annotations["description"]
			if assert.True(t, ok, "[alert-description-missing-rule] %s", a) {
				assert.Regexp(t, goTemplateRE, desc, "[alert-description-templating] %s: the description carries the details", a)
			}
			sum, ok := ru.Annotations["summary"]
			if assert.True(t, ok, "[alert-summary-missing-rule] %s", a) {
				assert.NotRegexp(t, goTemplateRE, sum, "[alert-summary-templating] %s", a)
				assert.Regexp(t, sentenceRE, sum, "[alert-summary-style] %s: a capital letter first, a period last", a)
			}
		}
	}
}

// Grafana's global variables as dashboard-linter expands them: sample
// durations no query would write, so that a fixed window is told apart
// from $__rate_interval.
const (
	rateIntervalSample = "8869990787ms"
	intervalSample     = "4867856611ms"
	rangeSample        = "6069770749ms"
)

var rateInterval = 8869990787 * time.Millisecond

var variableRE = regexp.MustCompile(`\$([[:word:]]+)|\$\{([^}]+)\}|\[\[([^\[\]]+)\]\]`)

// expandVariables replaces the variables of a query outside its
// double-quoted strings as dashboard-linter does: the global interval
// variables by their samples, any other by its own name. Inside quotes
// they stay, so that a matcher reads job=~"$job".
func expandVariables(expr string) string {
	parts := strings.Split(expr, `"`)
	for i := 0; i < len(parts); i += 2 {
		parts[i] = variableRE.ReplaceAllStringFunc(parts[i], func(v string) string {
			m := variableRE.FindStringSubmatch(v)
			name := m[1] + m[2] + m[3]
			name, _, _ = strings.Cut(name, ":")
			switch name {
			case "__rate_interval":
				return rateIntervalSample
			case "__interval":
				return intervalSample
			case "__range":
				return rangeSample
			}
			return name
		})
	}
	return strings.Join(parts, `"`)
}

// The units Grafana knows that these dashboards may use (a subset of
// dashboard-linter's list).
var validUnits = map[string]bool{
	"none": true, "short": true, "percent": true, "percentunit": true,
	"s": true, "ms": true, "m": true, "h": true, "d": true, "dtdurations": true,
	"reqps": true, "ops": true, "rps": true, "cps": true,
	"bytes": true, "decbytes": true, "bool": true, "bool_yes_no": true,
}

func renderedDashboards(t *testing.T) map[string]*dashboard {
	t.Helper()
	r, err := Render("")
	require.NoError(t, err)
	out := map[string]*dashboard{}
	for name, raw := range r.Dashboards {
		out[name] = loadDashboard(t, raw)
	}
	require.Len(t, out, len(Dashboards))
	return out
}

// mixtool lint: a title and a uid; and tags, so that the dashboards find
// each other (their links are by tag). dashboard-linter:
// uneditable-dashboard.
func TestLintDashboardMetadata(t *testing.T) {
	for name, d := range renderedDashboards(t) {
		assert.NotEmpty(t, d.Title, "%s: title", name)
		assert.NotEmpty(t, d.UID, "%s: uid", name)
		assert.NotEmpty(t, d.Tags, "%s: tags", name)
		assert.False(t, d.Editable, "[uneditable-dashboard] %s: provisioned dashboards are not editable", name)
	}
}

// dashboard-linter: template-datasource-rule, template-job-rule,
// template-instance-rule, template-label-promql-rule and
// template-on-time-change-reload-rule.
func TestLintDashboardTemplates(t *testing.T) {
	p := parser.NewParser(parser.Options{})
	labelValuesRE := regexp.MustCompile(`^(label_names|label_values|metrics|query_result)\((.+?)(, *[a-zA-Z_][a-zA-Z0-9_]*)?\)$`)
	for name, d := range renderedDashboards(t) {
		var datasources []variable
		for _, v := range d.Templating.List {
			if v.Type == "datasource" {
				datasources = append(datasources, v)
			}
		}
		if assert.Len(t, datasources, 1, "[template-datasource-rule] %s", name) {
			ds := datasources[0]
			assert.Equal(t, "datasource", ds.Name, "[template-datasource-rule] %s", name)
			assert.Equal(t, "Data source", ds.Label, "[template-datasource-rule] %s", name)
			assert.JSONEq(t, `"prometheus"`, string(ds.Query), "[template-datasource-rule] %s", name)
		}
		for _, want := range []struct{ rule, name, label string }{
			{"template-job-rule", "job", "Job"},
			{"template-instance-rule", "instance", "Instance"},
		} {
			v := d.template(want.name)
			if !assert.NotNil(t, v, "[%s] %s: no %s variable", want.rule, name, want.name) {
				continue
			}
			if assert.NotNil(t, v.Datasource, "[%s] %s", want.rule, name) {
				assert.Contains(t, []string{"$datasource", "${datasource}"}, v.Datasource.UID, "[%s] %s", want.rule, name)
			}
			assert.Equal(t, "query", v.Type, "[%s] %s", want.rule, name)
			assert.Equal(t, want.label, v.Label, "[%s] %s", want.rule, name)
			assert.True(t, v.Multi, "[%s] %s: multi-select", want.rule, name)
			assert.Equal(t, ".+", v.AllValue, "[%s] %s", want.rule, name)
		}
		for _, v := range d.Templating.List {
			if v.Type != "query" {
				continue
			}
			assert.Equal(t, 2, v.Refresh, "[template-on-time-change-reload-rule] %s: variable %s", name, v.Name)
			var q struct {
				Query string `json:"query"`
			}
			require.NoError(t, json.Unmarshal(v.Query, &q), "%s: variable %s", name, v.Name)
			m := labelValuesRE.FindStringSubmatch(q.Query)
			if assert.NotNil(t, m, "[template-label-promql-rule] %s: variable %s: %s", name, v.Name, q.Query) {
				_, err := p.ParseExpr(expandVariables(m[2]))
				assert.NoError(t, err, "[template-label-promql-rule] %s: variable %s", name, v.Name)
			}
		}
	}
}

// dashboard-linter: panel-datasource-rule, panel-title-description-rule,
// panel-units-rule (on every panel, value mappings or not) and
// panel-no-targets-rule.
func TestLintDashboardPanels(t *testing.T) {
	for name, d := range renderedDashboards(t) {
		for _, pn := range d.panels(false) {
			where := fmt.Sprintf("%s: panel %q", name, pn.Title)
			var ds struct {
				UID string `json:"uid"`
			}
			if assert.NoError(t, json.Unmarshal(pn.Datasource, &ds), "[panel-datasource-rule] %s", where) {
				assert.Contains(t, []string{"$datasource", "${datasource}"}, ds.UID, "[panel-datasource-rule] %s", where)
			}
			assert.NotEmpty(t, pn.Title, "[panel-title-description-rule] %s", where)
			assert.NotEmpty(t, pn.Description, "[panel-title-description-rule] %s", where)
			unit := pn.FieldConfig.Defaults.Unit
			for _, o := range pn.FieldConfig.Overrides {
				for _, p := range o.Properties {
					if s, ok := p.Value.(string); ok && p.ID == "unit" && !validUnits[s] {
						t.Errorf("[panel-units-rule] %s: override unit %q", where, s)
					}
				}
			}
			assert.True(t, validUnits[unit], "[panel-units-rule] %s: unit %q", where, unit)
			assert.NotEmpty(t, pn.Targets, "[panel-no-targets-rule] %s", where)
		}
	}
}

// dashboard-linter: target-promql-rule, target-rate-interval-rule,
// target-job-rule, target-instance-rule and target-counter-agg-rule. And
// the mixin's own: the job of a query is the job variable's, never one of
// _config's selectors beside it.
func TestLintDashboardTargets(t *testing.T) {
	p := parser.NewParser(parser.Options{})
	for name, d := range renderedDashboards(t) {
		for _, pn := range d.panels(false) {
			for _, tg := range pn.Targets {
				where := fmt.Sprintf("%s: panel %q query %s", name, pn.Title, tg.RefID)
				expr, err := p.ParseExpr(expandVariables(tg.Expr))
				if !assert.NoError(t, err, "[target-promql-rule] %s: %s", where, tg.Expr) {
					continue
				}
				for _, sel := range parser.ExtractSelectors(expr) {
					assert.NoError(t, onlyMatcher(sel, "job", "$job"), "[target-job-rule] %s: %s", where, tg.Expr)
					assert.NoError(t, onlyMatcher(sel, "instance", "$instance"), "[target-instance-rule] %s: %s", where, tg.Expr)
				}
				parser.Inspect(expr, func(n parser.Node, path []parser.Node) error {
					if ms, ok := n.(*parser.MatrixSelector); ok && len(path) > 0 {
						if call, ok := path[len(path)-1].(*parser.Call); ok && (call.Func.Name == "rate" || call.Func.Name == "irate") {
							assert.Equal(t, rateInterval, ms.Range,
								"[target-rate-interval-rule] %s: %s uses a fixed window", where, n)
						}
					}
					if vs, ok := n.(*parser.VectorSelector); ok && strings.HasSuffix(vs.Name, "_total") {
						assert.True(t, counterAggregated(path), "[target-counter-agg-rule] %s: %s is not in rate, irate or increase", where, vs)
					}
					return nil
				})
			}
		}
	}
}

// onlyMatcher reports an error unless sel has exactly one matcher of the
// label, and it is name=~"value".
func onlyMatcher(sel []*labels.Matcher, name, value string) error {
	var found []*labels.Matcher
	for _, m := range sel {
		if m.Name == name {
			found = append(found, m)
		}
	}
	switch {
	case len(found) == 0:
		return fmt.Errorf("%s selector not found", name)
	case len(found) > 1:
		return fmt.Errorf("%d %s selectors: %v", len(found), name, found)
	case found[0].Type != labels.MatchRegexp || found[0].Value != value:
		return fmt.Errorf("%s selector is %s, not %s=~%q", name, found[0], name, value)
	}
	return nil
}

// counterAggregated reports whether the selector whose ancestors are path
// is the range of a rate, irate or increase.
func counterAggregated(path []parser.Node) bool {
	if len(path) < 2 {
		return false
	}
	if _, ok := path[len(path)-1].(*parser.MatrixSelector); !ok {
		return false
	}
	call, ok := path[len(path)-2].(*parser.Call)
	return ok && (call.Func.Name == "rate" || call.Func.Name == "irate" || call.Func.Name == "increase")
}

// The test's own expansion is dashboard-linter's.
func TestExpandVariables(t *testing.T) {
	assert.Equal(t, `rate(x{job=~"$job"}[8869990787ms]) / app`, expandVariables(`rate(x{job=~"$job"}[$__rate_interval]) / $app`))
	assert.Equal(t, `increase(x[6069770749ms])`, expandVariables(`increase(x[${__range}])`))
}
