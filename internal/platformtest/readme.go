package platformtest

// Reading the facts README.md documents, so that tests can hold the code
// to them.

import (
	"bufio"
	"errors"
	"os"
	"regexp"
	"strings"
)

// ReadmeMetric is one row of the README's metrics table.
type ReadmeMetric struct {
	Name string // e.g. duix_up
	Type string // gauge, counter, histogram
}

var metricRow = regexp.MustCompile("^\\| `([a-z_:]+)` \\| ([a-z]+) \\|")

// ReadmeMetrics returns the rows of the table under the "## Metrics" heading of
// the README at path.
func ReadmeMetrics(path string) ([]ReadmeMetric, error) {
	f, err := os.Open(path) // #nosec G304 -- tests name the README to read
	if err != nil {
		return nil, err
	}
	defer f.Close()
	var out []ReadmeMetric
	inSection := false
	sc := bufio.NewScanner(f)
	for sc.Scan() {
		line := sc.Text()
		if strings.HasPrefix(line, "## ") {
			inSection = line == "## Metrics"
		}
		if m := metricRow.FindStringSubmatch(line); inSection && m != nil {
			out = append(out, ReadmeMetric{Name: m[1], Type: m[2]})
		}
	}
	if err := sc.Err(); err != nil {
		return nil, err
	}
	if len(out) == 0 {
		return nil, errors.New(path + ": no metrics table under '## Metrics'")
	}
	return out, nil
}
