//go:build promtool

package main

import (
	"os/exec"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// Run by `make test` (-tags promtool), which installs promtool.
func TestPromtoolAcceptsTheExposition(t *testing.T) {
	promtool, err := exec.LookPath("promtool")
	require.NoError(t, err, "promtool is needed (Debian package prometheus): run `make test-deps`")
	p := startExporter(t, "--demo")
	_, body := p.get(t, "/metrics")
	cmd := exec.Command(promtool, "check", "metrics")
	cmd.Stdin = strings.NewReader(body)
	out, err := cmd.CombinedOutput()
	assert.NoError(t, err, "promtool check metrics:\n%s", out)
	assert.Empty(t, strings.TrimSpace(string(out)))

	_, probe := p.get(t, "/probe?app=museum-guide")
	cmd = exec.Command(promtool, "check", "metrics")
	cmd.Stdin = strings.NewReader(probe)
	out, err = cmd.CombinedOutput()
	assert.NoError(t, err, "promtool check metrics on /probe:\n%s", out)
}
