package platformtest

import (
	"os"
	"path/filepath"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

func TestReadmeMetrics(t *testing.T) {
	path := filepath.Join(t.TempDir(), "README.md")
	require.NoError(t, os.WriteFile(path, []byte("# x\n| `not_me` | gauge | | |\n## Metrics\n\n| metric | type |\n|---|---|\n"+
		"| `duix_up` | gauge | `app` | up |\n| `duix_x_total` | counter | | x |\n## Next\n| `after` | gauge | | |\n"), 0o600))
	got, err := ReadmeMetrics(path)
	require.NoError(t, err)
	assert.Equal(t, []ReadmeMetric{{"duix_up", "gauge"}, {"duix_x_total", "counter"}}, got)

	require.NoError(t, os.WriteFile(path, []byte("# nothing\n"), 0o600))
	_, err = ReadmeMetrics(path)
	assert.Error(t, err)
}

func TestTheProjectREADMEHasTheTable(t *testing.T) {
	got, err := ReadmeMetrics("../../README.md")
	require.NoError(t, err)
	assert.Contains(t, got, ReadmeMetric{"duix_up", "gauge"})
}
