// Command generate writes the PrometheusRule and the dashboard ConfigMap
// of the kustomize base from deploy/prometheus/rules.yml and
// dashboards/duix-overview.json. Run it from deploy/kubernetes/validate
// (`go generate` there, or `make manifests` at the repository root).
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
	for _, g := range []struct {
		src, dst string
		gen      func([]byte) []byte
	}{
		{validate.RulesFile, validate.PrometheusRuleFile, validate.PrometheusRule},
		{validate.DashboardFile, validate.DashboardCMFile, validate.DashboardConfigMap},
	} {
		src, err := os.ReadFile(filepath.Join(validate.RepoRoot, g.src))
		if err != nil {
			return err
		}
		if err := os.WriteFile(filepath.Join(validate.RepoRoot, g.dst), g.gen(src), 0o644); err != nil {
			return err
		}
		fmt.Println("wrote", g.dst)
	}
	return nil
}
