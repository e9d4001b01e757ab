// Command generate writes the PrometheusRule and the dashboard ConfigMap
// of the kustomize base from deploy/prometheus/rules.yml and the
// dashboards of dashboards/, which the mixin renders, and copies those
// dashboards into the Helm chart. Run it from
// deploy/kubernetes/validate (`go generate` there, or `make manifests` at
// the repository root; `make mixin` renders the mixin, then runs it).
package main

import (
	"fmt"
	"os"
	"path/filepath"

	"github.com/duix-exporter/duix_exporter/deploy/kubernetes/validate"
)

func main() {
	if err := run(); err != nil {
		fmt.Fprintln(os.Stderr, "generate:", err)
		os.Exit(1)
	}
}

func run() error {
	rules, err := os.ReadFile(filepath.Join(validate.RepoRoot, validate.RulesFile))
	if err != nil {
		return err
	}
	if err := write(validate.PrometheusRuleFile, validate.PrometheusRule(rules)); err != nil {
		return err
	}
	dashboards := make([][]byte, len(validate.Dashboards))
	for i, name := range validate.Dashboards {
		if dashboards[i], err = os.ReadFile(filepath.Join(validate.RepoRoot, validate.DashboardsDir, name)); err != nil {
			return err
		}
	}
	if err := write(validate.DashboardCMFile, validate.DashboardConfigMap(validate.Dashboards, dashboards)); err != nil {
		return err
	}
	if err := os.MkdirAll(filepath.Join(validate.RepoRoot, validate.ChartDashboardsDir), 0o755); err != nil {
		return err
	}
	for i, name := range validate.Dashboards {
		if err := write(validate.ChartDashboardsDir+"/"+name, dashboards[i]); err != nil {
			return err
		}
	}
	return nil
}

func write(name string, data []byte) error {
	if err := os.WriteFile(filepath.Join(validate.RepoRoot, name), data, 0o644); err != nil {
		return err
	}
	fmt.Println("wrote", name)
	return nil
}
