package operator

import (
	"bytes"
	"context"
	"fmt"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"testing"
	"time"

	"github.com/alecthomas/kingpin/v2"
	"github.com/go-kit/log"
	"github.com/go-kit/log/level"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/duix-exporter/duix_exporter/internal/platformtest"
	"github.com/duix-exporter/duix_exporter/simulator"
)

// platform is a demo simulator on loopback (no churn: sessions change only
// when a test changes them) with an exporter configuration for it.
type platform struct {
	sim    *simulator.Simulator
	faults *platformtest.Faults
	apps   map[string]simulator.DemoApp
	base   string // base URL of the API
	config string
}

func startPlatform(t *testing.T) *platform {
	t.Helper()
	return startPlatformBehind(t, nil)
}

// startPlatformBehind is startPlatform with every request going through
// wrap(sim) first (nil: straight to the simulator), so that a test can
// change the platform's state at a precise request.
func startPlatformBehind(t *testing.T, wrap func(sim *simulator.Simulator, next http.Handler) http.Handler) *platform {
	t.Helper()
	sim, apps := simulator.NewDemo()
	faults := platformtest.New(sim)
	var h http.Handler = faults
	if wrap != nil {
		h = wrap(sim, faults)
	}
	srv := httptest.NewServer(h)
	t.Cleanup(srv.Close)
	base := srv.URL + simulator.BasePath
	p := &platform{sim: sim, faults: faults, apps: map[string]simulator.DemoApp{}, base: base, config: filepath.Join(t.TempDir(), "duix.yml")}
	require.NoError(t, simulator.WriteConfig(p.config, base, apps))
	for _, a := range apps {
		p.apps[a.Name] = a
	}
	return p
}

func (p *platform) id(app string) string { return p.apps[app].AppID }

// cliResult is what a run of a command printed and its exit code.
type cliResult struct {
	code           int
	stdout, stderr string
}

// run runs a command with the platform's configuration and args; stdin is
// nil (not a terminal) unless given.
func (p *platform) run(t *testing.T, stdin *os.File, args ...string) cliResult {
	t.Helper()
	return runCommand(t, stdin, append([]string{"--config.file=" + p.config}, args...)...)
}

// runCommand parses args as the binary does (its --config.file and
// --log.level flags, and the operator commands) and runs the command.
func runCommand(t *testing.T, stdin *os.File, args ...string) cliResult {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	var stdout, stderr bytes.Buffer
	app := kingpin.New("duix_exporter", "")
	app.Terminate(nil)
	app.UsageWriter(&stderr)
	app.ErrorWriter(&stderr)
	configFile := app.Flag("config.file", "").Default("duix.yml").String()
	logLevel := app.Flag("log.level", "").Default("info").Enum("debug", "info", "warn", "error")
	cmds := Register(app)
	res := cliResult{code: exitUsage}
	cmd, err := app.Parse(args)
	if err != nil {
		fmt.Fprintf(&stderr, "duix_exporter: %v, try --help\n", err)
	} else {
		logger := level.NewFilter(log.NewLogfmtLogger(log.NewSyncWriter(&stderr)), level.Allow(level.ParseDefault(*logLevel, level.InfoValue())))
		code, ok := cmds.Run(ctx, cmd, Env{
			Program: "duix_exporter", UserAgent: "duix_exporter/test", ConfigFile: *configFile,
			Logger: logger, Stdin: stdin, Stdout: &stdout, Stderr: &stderr,
		})
		require.True(t, ok, "%s is an operator command", cmd)
		res.code = code
	}
	res.stdout, res.stderr = stdout.String(), stderr.String()
	t.Logf("%v: exit %d\nstdout:\n%s\nstderr:\n%s", args, res.code, res.stdout, res.stderr)
	return res
}

func TestOperatorCommandsValidateTheirArguments(t *testing.T) {
	p := startPlatform(t)
	for _, tc := range []struct {
		args []string
		want string
	}{
		{[]string{"apps"}, "must select a subcommand of 'apps'"},
		{[]string{"apps", "check", "--output=xml"}, "xml"},
		{[]string{"sessions", "list"}, "--app"},
		{[]string{"sessions", "list", "--app=sales-avatar", "--output=yaml"}, "yaml"},
		{[]string{"sessions", "stop", "--app=sales-avatar"}, "--session"},
		{[]string{"sessions", "stop", "--app=sales-avatar", "--session= ", "--yes"}, "--session is empty"},
		{[]string{"sessions", "stop", "--app=sales-avatar", "--session=a b", "--yes"}, "contains spaces or control characters"},
		{[]string{"conversation", "show", "--app=sales-avatar"}, "--id"},
		{[]string{"conversation", "show", "--app=sales-avatar", "--id="}, "--id is empty"},
	} {
		res := p.run(t, nil, tc.args...)
		assert.Equal(t, exitUsage, res.code, "%v", tc.args)
		assert.Contains(t, res.stderr, tc.want, "%v", tc.args)
		assert.Empty(t, res.stdout, "%v: nothing on stdout", tc.args)
	}
	assert.Zero(t, p.sim.Requests(simulator.EndpointStop), "no call reaches the platform")
}

func TestOperatorCommandsNameTheConfiguredAppsForAnUnknownOne(t *testing.T) {
	p := startPlatform(t)
	for _, args := range [][]string{
		{"sessions", "list", "--app=nope"},
		{"sessions", "stop", "--app=nope", "--session=abc", "--yes"},
		{"conversation", "show", "--app=nope", "--id=2081"},
	} {
		res := p.run(t, nil, args...)
		assert.Equal(t, exitUsage, res.code, "%v", args)
		assert.Contains(t, res.stderr, `unknown app "nope"`, "%v", args)
		assert.Contains(t, res.stderr, "support-desk, sales-avatar, museum-guide", "%v", args)
	}
}

func TestOperatorCommandsNeedAUsableConfiguration(t *testing.T) {
	missing := filepath.Join(t.TempDir(), "missing.yml")
	for _, args := range [][]string{
		{"apps", "check"},
		{"sessions", "list", "--app=a"},
		{"sessions", "stop", "--app=a", "--session=s", "--yes"},
		{"conversation", "show", "--app=a", "--id=1"},
	} {
		res := runCommand(t, nil, append([]string{"--config.file=" + missing}, args...)...)
		assert.Equal(t, exitUsage, res.code, "%v", args)
		assert.Contains(t, res.stderr, "missing.yml", "%v: the message names the file", args)
	}
	res := runCommand(t, nil, "--config.file=../config/testdata/invalid-two-credentials.yml", "apps", "check")
	assert.Equal(t, exitUsage, res.code)
	assert.Contains(t, res.stderr, "exactly one of")
	assert.NotContains(t, res.stderr, "SECRET-")
}

func TestPrintable(t *testing.T) {
	assert.Equal(t, "a b?[31mred", printable("a\nb\x1b[31mred", 100))
	assert.Equal(t, "展厅...", printable("展厅讲解", 7), "cut on a rune boundary")
	assert.Equal(t, "abc", printable("abc", 3))
}
