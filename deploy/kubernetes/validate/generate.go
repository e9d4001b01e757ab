// Package validate generates the Kubernetes manifests that carry files kept
// elsewhere in the repository (the Prometheus rules and the Grafana
// dashboard), and its tests decode every manifest of the kustomize base,
// and of the Helm chart as `helm template` renders it, strictly into the
// Kubernetes and Prometheus Operator API types. It is a module of its own,
// so that those types never enter the exporter's build.
package validate

//go:generate go run ./cmd/generate

import (
	"bytes"
	"path/filepath"
	"strings"
)

// Paths of the sources and of the generated manifests, relative to the
// repository root.
const (
	RulesFile          = "deploy/prometheus/rules.yml"
	DashboardFile      = "dashboards/duix-overview.json"
	PrometheusRuleFile = "deploy/kubernetes/prometheusrule.yaml"
	DashboardCMFile    = "deploy/kubernetes/grafana-dashboard.yaml"
	// DashboardKey is the key of the dashboard in the ConfigMap's data.
	DashboardKey = "duix-overview.json"
)

// RepoRoot is the repository root seen from this package's directory.
var RepoRoot = filepath.Join("..", "..", "..")

// PrometheusRule returns the PrometheusRule manifest whose spec is rules,
// the content of rules.yml, as it stands (leading comments aside).
func PrometheusRule(rules []byte) []byte {
	var b bytes.Buffer
	b.WriteString("# Generated from " + RulesFile + " by `make manifests`: do not edit.\n")
	b.WriteString(`apiVersion: monitoring.coreos.com/v1
kind: PrometheusRule
metadata:
  name: duix-exporter
  labels:
    app.kubernetes.io/name: duix-exporter
spec:
`)
	lines := strings.Split(strings.TrimRight(string(rules), "\n"), "\n")
	i := 0
	for i < len(lines) && (strings.HasPrefix(lines[i], "#") || strings.TrimSpace(lines[i]) == "") {
		i++ // the file's header comment is about the file, not the rules
	}
	indent(&b, lines[i:], "  ")
	return b.Bytes()
}

// DashboardConfigMap returns the ConfigMap manifest holding the dashboard,
// labelled for Grafana's dashboard sidecar. Its name has no hash suffix,
// so that a changed dashboard replaces the old one instead of adding one.
func DashboardConfigMap(dashboard []byte) []byte {
	var b bytes.Buffer
	b.WriteString("# Generated from " + DashboardFile + " by `make manifests`: do not edit.\n")
	b.WriteString(`apiVersion: v1
kind: ConfigMap
metadata:
  name: duix-exporter-dashboard
  labels:
    app.kubernetes.io/name: duix-exporter
    # Picked up by Grafana's dashboard sidecar (kube-prometheus-stack's default label).
    grafana_dashboard: "1"
data:
  ` + DashboardKey + `: |
`)
	indent(&b, strings.Split(strings.TrimRight(string(dashboard), "\n"), "\n"), "    ")
	return b.Bytes()
}

// indent writes lines to b, each non-blank one preceded by prefix.
func indent(b *bytes.Buffer, lines []string, prefix string) {
	for _, l := range lines {
		if strings.TrimSpace(l) != "" {
			b.WriteString(prefix)
			b.WriteString(l)
		}
		b.WriteByte('\n')
	}
}
