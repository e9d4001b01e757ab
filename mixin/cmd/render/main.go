// Command render writes the files rendered from the duix_exporter mixin
// into the repository: the Prometheus rules (deploy/prometheus/rules.yml
// and the Helm chart's copy) and the Grafana dashboards. `make mixin` runs
// it from the mixin directory, then regenerates the Kubernetes manifests.
package main

import (
	"flag"
	"fmt"
	"os"

	"github.com/duix-exporter/duix_exporter/mixin"
)

func main() {
	root := flag.String("root", "..", "the repository root")
	flag.Parse()
	if err := run(*root); err != nil {
		fmt.Fprintln(os.Stderr, "render:", err)
		os.Exit(1)
	}
}

func run(root string) error {
	r, err := mixin.Render("")
	if err != nil {
		return err
	}
	names, err := r.Write(root)
	if err != nil {
		return err
	}
	for _, n := range names {
		fmt.Println("wrote", n)
	}
	return nil
}
