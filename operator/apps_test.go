package operator

import (
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/duix-exporter/duix_exporter/internal/platformtest"
	"github.com/duix-exporter/duix_exporter/simulator"
)

// tableRows splits a table printed by a command into rows of cells
// (columns are separated by two spaces or more), keyed by the first cell.
func tableRows(t *testing.T, out string) map[string][]string {
	t.Helper()
	rows := map[string][]string{}
	sep := regexp.MustCompile(`\s{2,}`)
	for _, line := range strings.Split(strings.TrimRight(out, "\n"), "\n") {
		cells := sep.Split(strings.TrimRight(line, " "), -1)
		rows[cells[0]] = cells
	}
	return rows
}

func TestAppsCheckPrintsEveryApp(t *testing.T) {
	p := startPlatform(t)
	res := p.run(t, nil, "apps", "check")
	require.Equal(t, exitOK, res.code)
	assert.Empty(t, res.stderr)
	rows := tableRows(t, res.stdout)
	assert.Equal(t, []string{"APP", "UP", "IN USE / LIMIT", "ACTIVE SESSIONS", "LATENCY", "ERROR"}, rows["APP"])
	for app, want := range map[string][]string{
		"support-desk": {"1", "3 / 10", "3"},
		"sales-avatar": {"1", "8 / 20", "8"},
		"museum-guide": {"1", "2 / 5", "2"},
	} {
		require.Len(t, rows[app], 5, "%s: no error column when up", app)
		assert.Equal(t, want, rows[app][1:4], app)
		assert.Regexp(t, `^\d+\.\dms$`, rows[app][4], app)
	}
	for _, a := range p.apps {
		assert.Equal(t, int64(1), p.sim.RequestsFor(a.AppID, simulator.EndpointConcurrency), "each app is called once")
		assert.Equal(t, int64(1), p.sim.RequestsFor(a.AppID, simulator.EndpointSessions))
	}
}

func TestAppsCheckJSON(t *testing.T) {
	p := startPlatform(t)
	_, err := p.sim.StartSession(p.id("museum-guide"), "3081")
	require.NoError(t, err)
	res := p.run(t, nil, "apps", "check", "--output=json")
	require.Equal(t, exitOK, res.code)
	var out []appCheck
	require.NoError(t, json.Unmarshal([]byte(res.stdout), &out), res.stdout)
	require.Len(t, out, 3)
	assert.Equal(t, "museum-guide", out[2].App, "configuration order")
	assert.True(t, out[2].Up)
	require.NotNil(t, out[2].InUse)
	assert.Equal(t, int64(3), *out[2].InUse)
	assert.Equal(t, int64(5), *out[2].Limit)
	assert.Equal(t, 3, *out[2].ActiveSessions)
	assert.Empty(t, out[2].Error)
}

func TestAppsCheckFailsWhenAnAppFails(t *testing.T) {
	p := startPlatform(t)
	p.faults.SetFault(p.id("museum-guide"), simulator.EndpointConcurrency, platformtest.Fault{Kind: platformtest.FaultHTTP500})
	p.faults.SetFault(p.id("support-desk"), simulator.EndpointSessions, platformtest.Fault{Kind: platformtest.FaultSuccessFalse})

	res := p.run(t, nil, "apps", "check")
	assert.Equal(t, exitFailed, res.code)
	assert.Contains(t, res.stderr, "2 of 3 app(s) failed")
	rows := tableRows(t, res.stdout)
	assert.Equal(t, []string{"museum-guide", "0", "-", "2"}, rows["museum-guide"][:4], "sessions still counted")
	assert.Contains(t, rows["museum-guide"][5], "getconcurrentNumber (app museum-guide): http: HTTP 500")
	assert.Equal(t, []string{"support-desk", "0", "3 / 10", "-"}, rows["support-desk"][:4])
	assert.Contains(t, rows["support-desk"][5], "getconcurrentList (app support-desk): api, code 500")
	assert.Equal(t, []string{"sales-avatar", "1", "8 / 20", "8"}, rows["sales-avatar"][:4], "the other apps are unaffected")

	res = p.run(t, nil, "apps", "check", "--output=json")
	assert.Equal(t, exitFailed, res.code)
	var out []appCheck
	require.NoError(t, json.Unmarshal([]byte(res.stdout), &out), res.stdout)
	assert.Equal(t, "http", out[2].ErrorReason)
	assert.Nil(t, out[2].InUse)
	assert.False(t, out[2].Up)
}

func TestAppsCheckNeverPrintsASecret(t *testing.T) {
	p := startPlatform(t)
	const wrongKey = "SECRET-wrong-key-0123456789"
	dir := t.TempDir()
	tokenFile := filepath.Join(dir, "token")
	require.NoError(t, os.WriteFile(tokenFile, []byte("SECRET-token-abcdef\n"), 0o600))
	cfg := fmt.Sprintf("api:\n  base_url: %q\napps:\n"+
		"  - name: wrong-key\n    app_id: %q\n    app_key: %s\n"+
		"  - name: bad-token\n    app_id: %q\n    token_file: %s\n"+
		"  - name: good\n    app_id: %q\n    app_key: %s\n",
		p.base, p.id("sales-avatar"), wrongKey, p.id("support-desk"), tokenFile, p.id("museum-guide"), p.apps["museum-guide"].AppKey)
	path := filepath.Join(dir, "duix.yml")
	require.NoError(t, os.WriteFile(path, []byte(cfg), 0o600))

	res := runCommand(t, nil, "--config.file="+path, "--log.level=debug", "apps", "check")
	assert.Equal(t, exitFailed, res.code)
	rows := tableRows(t, res.stdout)
	assert.Contains(t, rows["wrong-key"][5], "auth: ")
	assert.Contains(t, rows["bad-token"][5], "auth: ")
	assert.Equal(t, "1", rows["good"][1])
	for _, out := range []string{res.stdout, res.stderr} {
		assert.NotContains(t, out, "SECRET-")
		assert.NotContains(t, out, p.apps["museum-guide"].AppKey)
	}
}
