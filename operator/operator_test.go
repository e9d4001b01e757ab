package operator

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"regexp"
	"runtime"
	"slices"
	"strings"
	"sync"
	"sync/atomic"
	"syscall"
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

// platform is the demo platform of the operator's tests.
type platform struct{ *platformtest.Demo }

func startPlatform(t *testing.T) *platform { return &platform{platformtest.StartDemo(t, 0, nil)} }

// oneAppConfig writes a configuration of one app, a, on the API at base
// and returns its path.
func oneAppConfig(t testing.TB, base string) string {
	t.Helper()
	path := filepath.Join(t.TempDir(), "duix.yml")
	require.NoError(t, os.WriteFile(path, fmt.Appendf(nil, "api: {base_url: %q}\napps: [{name: a, app_id: x, app_key: SECRET-app-key}]\n", base), 0o600))
	return path
}

// cliResult is what a run of a command printed and its exit code.
type cliResult struct {
	code           int
	stdout, stderr string
}

// run runs a command with the platform's configuration and args; stdin is
// nil (not a terminal) unless given.
func (p *platform) run(t *testing.T, stdin *os.File, args ...string) cliResult {
	t.Helper()
	return runCommand(t, stdin, append([]string{"--config.file=" + p.Config}, args...)...)
}

// runCommand parses args as the binary does (its --config.file and
// --log.level flags, and the operator commands) and runs the command.
func runCommand(t *testing.T, stdin *os.File, args ...string) cliResult {
	t.Helper()
	return runCommandContext(t, context.Background(), stdin, args...)
}

// runCommandContext is runCommand under ctx, as a command interrupted
// (SIGINT) when ctx ends.
func runCommandContext(t *testing.T, ctx context.Context, stdin *os.File, args ...string) cliResult {
	t.Helper()
	ctx, cancel := context.WithTimeout(ctx, 30*time.Second)
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
		{[]string{"sessions", "stop", "--app=sales-avatar", "--session=a b", "--yes"}, "contains spaces, control"},
		{[]string{"sessions", "stop", "--app=sales-avatar", "--session=ab\u202ecd", "--yes"}, `"ab?cd" contains spaces, control or format characters`},
		{[]string{"sessions", "stop", "--app=sales-avatar", "--session=ab\xffcd", "--yes"}, "not UTF-8"},
		{[]string{"conversation", "show", "--app=sales-avatar", "--id=1\u200b2"}, "--id \"1?2\" contains"},
		{[]string{"conversation", "show", "--app=sales-avatar"}, "--id"},
		{[]string{"conversation", "show", "--app=sales-avatar", "--id="}, "--id is empty"},
	} {
		res := p.run(t, nil, tc.args...)
		assert.Equal(t, exitUsage, res.code, "%v", tc.args)
		assert.Contains(t, res.stderr, tc.want, "%v", tc.args)
		assert.Empty(t, res.stdout, "%v: nothing on stdout", tc.args)
	}
	assert.Zero(t, p.Sim.Requests(simulator.EndpointStop), "no call reaches the platform")
}

// An ID of 257 bytes is refused with exit 2 before any call
// (docs/operator.md, "Exit codes"); one of 256 bytes passes the check and
// is asked of the platform, which knows none of them (exit 3).
func TestOperatorCommandsRefuseIDsLongerThan256Bytes(t *testing.T) {
	p := startPlatform(t)
	for _, tc := range []struct {
		flag, endpoint string
		args           []string
	}{
		{"--session", simulator.EndpointStop, []string{"sessions", "stop", "--app=sales-avatar", "--yes"}},
		{"--id", simulator.EndpointConversation, []string{"conversation", "show", "--app=sales-avatar"}},
	} {
		res := p.run(t, nil, append(tc.args, tc.flag+"="+strings.Repeat("7", 257))...)
		assert.Equal(t, exitUsage, res.code, tc.flag)
		assert.Contains(t, res.stderr, tc.flag+" is longer than 256 bytes")
		assert.Empty(t, res.stdout)
		assert.Zero(t, p.Sim.Requests(tc.endpoint), "%s: no call is made", tc.flag)

		res = p.run(t, nil, append(tc.args, tc.flag+"="+strings.Repeat("7", 256))...)
		assert.Equal(t, exitNotFound, res.code, "%s: 256 bytes are asked of the platform", tc.flag)
		assert.NotContains(t, res.stderr, "longer than")
		assert.Equal(t, int64(1), p.Sim.Requests(tc.endpoint), tc.flag)
	}
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
	assert.Equal(t, "a b ?c", printable("a\tb \ufffdc", 100), "a tab is a space; U+FFFD (bytes not UTF-8) is no character of the platform's")
	assert.Equal(t, "unknown", name(0, "unknown", "", "male", "female"), "a value named by nothing")
	assert.Equal(t, "aaa?gnp.exe in?call a?b", printable("aaa\u202egnp.exe in\u2028call a\u200bb", 100), "shown as it is: no right-to-left override, separator or zero-width character")
}

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
	for _, a := range p.Apps {
		assert.Equal(t, int64(1), p.Sim.RequestsFor(a.AppID, simulator.EndpointConcurrency), "each app is called once")
		assert.Equal(t, int64(1), p.Sim.RequestsFor(a.AppID, simulator.EndpointSessions))
	}
}

func TestAppsCheckJSON(t *testing.T) {
	p := startPlatform(t)
	_, err := p.Sim.StartSession(p.ID("museum-guide"), "3081")
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
	p.Faults.SetFault(p.ID("museum-guide"), simulator.EndpointConcurrency, platformtest.Fault{Kind: platformtest.FaultHTTP500})
	p.Faults.SetFault(p.ID("support-desk"), simulator.EndpointSessions, platformtest.Fault{Kind: platformtest.FaultSuccessFalse})

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
		p.Base, p.ID("sales-avatar"), wrongKey, p.ID("support-desk"), tokenFile, p.ID("museum-guide"), p.Apps["museum-guide"].AppKey)
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
		assert.NotContains(t, out, p.Apps["museum-guide"].AppKey)
	}
}

func TestConversationShowText(t *testing.T) {
	p := startPlatform(t)
	res := p.run(t, nil, "conversation", "show", "--app=sales-avatar", "--id=2081")
	require.Equal(t, exitOK, res.code)
	assert.Empty(t, res.stderr)
	out := res.stdout

	// Sections in order, each with its figures.
	var last int
	for _, want := range []string{
		"Conversation 2081 of app sales-avatar\n",
		"  name               新品导购\n",
		"  maxConversation    12\n",
		"  language           zh\n",
		"  ASR provider       aliyun\n",
		"\nPersona\n", "  name               小安\n", "  nickname           安安\n", "  gender             female\n", "  age                26\n",
		"\nAvatar model\n", "  name               Lily\n", "  model ID           1722918530281359393\n",
		"  type               cloud (modelIdType 0)\n", "  proportion         9:16\n", "  video size         1080x1920\n",
		"\nBackground\n", "  name               明亮办公室\n", "  code               bg_office_01\n",
		"\nTTS\n", "  name               guina\n", "  speaker            guina\n", "  speed              50\n",
		"  volume             50\n", "  pitch              50\n",
		"\nLarge models (1)\n", "  chatbot_law\n", "    model ID         law-assistant-v2\n",
		"\nScripts (8)\n",
		"  wake-up word\n    - 你好小安  [emotion 0]\n",
		"  opening line\n    - 您好，我是小安，很高兴为您服务，请问有什么可以帮您？  [emotion 1, audio /duix/tts/2081/script_1.wav]\n",
		"  waiting phrase\n", "  unknown question\n", "  farewell\n", "  interruption\n", "  interruption sentence\n", "  guiding phrase\n",
	} {
		i := strings.Index(out[last:], want)
		if !assert.GreaterOrEqual(t, i, 0, "%q after offset %d in:\n%s", want, last, out) {
			continue
		}
		last += i + len(want)
	}
}

func TestConversationShowGroupsScriptsByType(t *testing.T) {
	p := startPlatform(t)
	app := p.ID("museum-guide")
	conv := simulator.NewConversation("3099", "groups", 4)
	conv.ScriptDtoList = []simulator.ScriptEntry{
		{ID: 1, ScriptType: simulator.ScriptFarewell, ScriptContent: "bye one"},
		{ID: 2, ScriptType: 42, ScriptContent: "from the future"},
		{ID: 3, ScriptType: simulator.ScriptWakeUpWord, ScriptContent: "hello"},
		{ID: 4, ScriptType: simulator.ScriptFarewell, ScriptContent: "bye two"},
	}
	conv.ConversationInfoDto.Gender = 1
	conv.DetailDto.ModelIDType = 1
	require.NoError(t, p.Sim.AddConversation(app, conv))

	res := p.run(t, nil, "conversation", "show", "--app=museum-guide", "--id=3099")
	require.Equal(t, exitOK, res.code)
	assert.Contains(t, res.stdout, "\nScripts (4)\n"+
		"  wake-up word\n    - hello  [emotion -]\n"+
		"  farewell\n    - bye one  [emotion -]\n    - bye two  [emotion -]\n"+
		"  script type 42\n    - from the future  [emotion -]\n")
	assert.Contains(t, res.stdout, "  gender             male\n")
	assert.Contains(t, res.stdout, "  type               local (modelIdType 1)\n")
}

func TestConversationShowJSON(t *testing.T) {
	p := startPlatform(t)
	res := p.run(t, nil, "conversation", "show", "--app=support-desk", "--id=1082", "--output=json")
	require.Equal(t, exitOK, res.code)
	var conv Conversation
	require.NoError(t, json.Unmarshal([]byte(res.stdout), &conv), res.stdout)
	assert.Equal(t, "1082", conv.ID)
	assert.Equal(t, "技术支持", conv.ConversationName)
	assert.Equal(t, 4, conv.MaxConversation)
	assert.Equal(t, "guina", conv.DetailDto.TtsName)
	assert.Equal(t, "chatbot_law", conv.ModelDtoList[0].LargeName)
	assert.Len(t, conv.ScriptDtoList, 8)
	assert.Equal(t, ScriptOpeningLine, conv.ScriptDtoList[1].ScriptType)
}

func TestConversationShowErrors(t *testing.T) {
	p := startPlatform(t)
	res := p.run(t, nil, "conversation", "show", "--app=support-desk", "--id=9999")
	assert.Equal(t, exitNotFound, res.code)
	assert.Contains(t, res.stderr, "conversation 9999 of app support-desk: not found")
	assert.Empty(t, res.stdout)

	// A conversation of another app is not found either.
	res = p.run(t, nil, "conversation", "show", "--app=support-desk", "--id=2081")
	assert.Equal(t, exitNotFound, res.code)

	p.Faults.SetFault(p.ID("support-desk"), simulator.EndpointConversation, platformtest.Fault{Kind: platformtest.FaultWrongTypes})
	res = p.run(t, nil, "conversation", "show", "--app=support-desk", "--id=1081", "--output=json")
	assert.Equal(t, exitFailed, res.code)
	assert.Contains(t, res.stderr, "fetching conversation 1081 of app support-desk: getConversationById (app support-desk): decode: ")
	assert.Empty(t, res.stdout)

	p.Faults.SetFault(p.ID("support-desk"), simulator.EndpointConversation, platformtest.Fault{Kind: platformtest.FaultRateLimit429})
	res = p.run(t, nil, "conversation", "show", "--app=support-desk", "--id=1081")
	assert.Equal(t, exitFailed, res.code)
	assert.Contains(t, res.stderr, "getConversationById (app support-desk): rate_limited: HTTP 429")
}

// startOld starts a session of app on conv that began ago before now, as a
// kiosk that never hung up leaves one.
func (p *platform) startOld(t *testing.T, app, conv string, ago time.Duration) string {
	t.Helper()
	id, err := p.Sim.StartSessionAt(p.ID(app), conv, time.Now().Add(-ago))
	require.NoError(t, err)
	return id
}

// activeIDs returns the IDs of the app's active sessions.
func (p *platform) activeIDs(app string) map[string]bool {
	ids := map[string]bool{}
	for _, s := range p.Sim.Sessions(p.ID(app)) {
		ids[s.ID] = true
	}
	return ids
}

// requests returns how many requests reached each endpoint.
func (p *platform) requests() map[string]int64 {
	out := map[string]int64{}
	for _, ep := range []string{simulator.EndpointConversation, simulator.EndpointConcurrency, simulator.EndpointSessions, simulator.EndpointStop, simulator.EndpointStopAll} {
		out[ep] = p.Sim.Requests(ep)
	}
	return out
}

func TestSessionsStopOlderThan(t *testing.T) {
	p := startPlatform(t)
	recent := p.activeIDs("support-desk") // the demo's 3 sessions, started just now
	old1 := p.startOld(t, "support-desk", "1081", 5*time.Hour)
	old2 := p.startOld(t, "support-desk", "1082", 3*time.Hour)
	young := p.startOld(t, "support-desk", "1081", 90*time.Minute)
	// A start time of 0 reads as none: such a session is not older than
	// anything.
	undated, err := p.Sim.StartSessionAt(p.ID("support-desk"), "1082", time.UnixMilli(0))
	require.NoError(t, err)

	res := p.run(t, nil, "sessions", "stop", "--app=support-desk", "--older-than=2h", "--yes")
	require.Equal(t, exitOK, res.code)
	assert.Empty(t, res.stderr)
	assert.Contains(t, res.stdout, "skipped 1 session(s) whose record has no start time: they are not older than anything")
	assert.Contains(t, res.stdout, "app support-desk has 7 active session(s); 2 started more than 2h ago (before ")
	rows := tableRows(t, res.stdout)
	assert.Equal(t, []string{"SESSION ID", "CONVERSATION", "STARTED (UTC)", "AGE"}, rows["SESSION ID"])
	require.Len(t, rows[old1], 4)
	assert.Equal(t, "1081", rows[old1][1])
	assert.True(t, strings.HasPrefix(rows[old1][3], "5h0m"), "age %q", rows[old1][3])
	assert.Contains(t, rows, old2)
	for _, id := range []string{young, undated} {
		assert.NotContains(t, res.stdout, id)
	}
	assert.Contains(t, res.stdout, "session "+old1+": stopped\nsession "+old2+": stopped\n")
	assert.True(t, strings.HasSuffix(res.stdout, "app support-desk: 2 stopped, 0 already gone, 0 failed\n"), res.stdout)

	left := p.activeIDs("support-desk")
	assert.Len(t, left, 5)
	for id := range recent {
		assert.True(t, left[id], "recent session %s is kept", id)
	}
	assert.True(t, left[young], "a session younger than the limit is kept")
	assert.True(t, left[undated], "a session without a start time is kept")
	assert.EqualValues(t, 2, p.Sim.Requests(simulator.EndpointStop), "one sessionStop per old session")
	assert.Zero(t, p.Sim.Requests(simulator.EndpointStopAll))

	// Prometheus-style durations are accepted too.
	res = p.run(t, nil, "sessions", "stop", "--app=support-desk", "--older-than=1d", "--yes")
	assert.Equal(t, exitOK, res.code)
}

func TestSessionsStopOlderThanWithNothingToStop(t *testing.T) {
	p := startPlatform(t)
	// No --yes and no terminal: with nothing to stop there is nothing to
	// confirm either.
	res := p.run(t, nil, "sessions", "stop", "--app=sales-avatar", "--older-than=2h")
	require.Equal(t, exitOK, res.code)
	assert.Equal(t, "app sales-avatar has 8 active session(s), none started more than 2h ago: nothing to stop\n", res.stdout)
	assert.Empty(t, res.stderr)
	assert.Zero(t, p.Sim.Requests(simulator.EndpointStop))
	assert.Equal(t, 8, p.Sim.InUse(p.ID("sales-avatar")))
}

func TestSessionsStopOlderThanDryRun(t *testing.T) {
	p := startPlatform(t)
	old := p.startOld(t, "museum-guide", "3081", 4*time.Hour)
	res := p.run(t, nil, "sessions", "stop", "--app=museum-guide", "--older-than=2h", "--dry-run")
	require.Equal(t, exitOK, res.code)
	assert.Empty(t, res.stderr)
	assert.Contains(t, tableRows(t, res.stdout), old)
	assert.True(t, strings.HasSuffix(res.stdout, "dry run: 1 session(s) of app museum-guide would be stopped; nothing was stopped\n"), res.stdout)
	assert.Zero(t, p.Sim.Requests(simulator.EndpointStop))
	assert.Zero(t, p.Sim.Requests(simulator.EndpointStopAll))
	assert.True(t, p.activeIDs("museum-guide")[old])
	assert.Equal(t, 3, p.Sim.InUse(p.ID("museum-guide")))
}

// TestSessionsStopOlderThanReportsEachOutcome stops three old sessions: the
// platform fails the first stop, the second session ends on its own just
// before it is stopped, the third is stopped. Exit 1, one line each.
func TestSessionsStopOlderThanReportsEachOutcome(t *testing.T) {
	type target struct{ app, id string }
	var goneID atomic.Pointer[target] // ended just before its sessionStop arrives
	p := &platform{platformtest.StartDemo(t, 0, func(sim *simulator.Simulator, next http.Handler) http.Handler {
		return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
			if g := goneID.Load(); g != nil && strings.HasSuffix(r.URL.Path, "/"+simulator.EndpointStop) && r.URL.Query().Get("uuid") == g.id {
				sim.EndSession(g.app, g.id) // the caller hung up meanwhile
			}
			next.ServeHTTP(w, r)
		})
	})}
	app := p.ID("support-desk")
	failing := p.startOld(t, "support-desk", "1081", 5*time.Hour)
	gone := p.startOld(t, "support-desk", "1082", 4*time.Hour)
	goneID.Store(&target{app, gone})
	stopped := p.startOld(t, "support-desk", "1081", 3*time.Hour)
	p.Faults.SetFault(app, simulator.EndpointStop, platformtest.Fault{Kind: platformtest.FaultHTML502, Times: 1})

	res := p.run(t, nil, "sessions", "stop", "--app=support-desk", "--older-than=2h", "--yes")
	assert.Equal(t, exitFailed, res.code)
	assert.Contains(t, res.stdout, "session "+failing+": failed: sessionStop (app support-desk): http: HTTP 502")
	assert.Contains(t, res.stdout, "session "+gone+`: already gone (sessionStop (app support-desk): api, code 404: success is false)`+"\n")
	assert.Contains(t, res.stdout, "session "+stopped+": stopped\n")
	assert.True(t, strings.HasSuffix(res.stdout, "app support-desk: 1 stopped, 1 already gone, 1 failed\n"), res.stdout)
	assert.Equal(t, "duix_exporter sessions stop: 1 of 3 session(s) of app support-desk could not be stopped\n", res.stderr)
	left := p.activeIDs("support-desk")
	assert.True(t, left[failing], "the failed stop left its session active")
	assert.False(t, left[gone])
	assert.False(t, left[stopped])
	assert.EqualValues(t, 3, p.Sim.Requests(simulator.EndpointStop), "every session was tried once")

	// Already gone is not a failure: what was asked for is done.
	gone = p.startOld(t, "support-desk", "1082", 4*time.Hour)
	goneID.Store(&target{app, gone})
	res = p.run(t, nil, "sessions", "stop", "--app=support-desk", "--older-than=2h", "--yes")
	assert.Equal(t, exitOK, res.code)
	assert.True(t, strings.HasSuffix(res.stdout, "app support-desk: 1 stopped, 1 already gone, 0 failed\n"), res.stdout)
	assert.Empty(t, res.stderr)
	assert.Len(t, p.activeIDs("support-desk"), 3, "only the demo's recent sessions are left")
}

func TestSessionsStopOlderThanOfAFailingList(t *testing.T) {
	p := startPlatform(t)
	p.startOld(t, "support-desk", "1081", 5*time.Hour)
	p.Faults.SetFault(p.ID("support-desk"), simulator.EndpointSessions, platformtest.Fault{Kind: platformtest.FaultTruncatedJSON})
	res := p.run(t, nil, "sessions", "stop", "--app=support-desk", "--older-than=2h", "--yes")
	assert.Equal(t, exitFailed, res.code)
	assert.Contains(t, res.stderr, "listing the sessions of app support-desk: getconcurrentList (app support-desk): decode: ")
	assert.Empty(t, res.stdout)
	assert.Zero(t, p.Sim.Requests(simulator.EndpointStop))
}

func TestSessionsStopAll(t *testing.T) {
	p := startPlatform(t)
	p.startOld(t, "support-desk", "1081", 5*time.Hour)
	res := p.run(t, nil, "sessions", "stop", "--app=support-desk", "--all", "--yes")
	require.Equal(t, exitOK, res.code)
	assert.Empty(t, res.stderr)
	lines := strings.Split(strings.TrimSuffix(res.stdout, "\n"), "\n")
	require.Len(t, lines, 2, res.stdout)
	assert.Regexp(t, `^app support-desk has 4 active session\(s\), the oldest started \d{4}-\d\d-\d\d \d\d:\d\d:\d\d UTC \(5h0m\d+s ago\)$`, lines[0])
	assert.Equal(t, `closed every session of app support-desk: the platform answered code "200"`, lines[1])
	assert.Zero(t, p.Sim.InUse(p.ID("support-desk")))
	assert.Equal(t, 8, p.Sim.InUse(p.ID("sales-avatar")), "other apps keep their sessions")
	assert.EqualValues(t, 1, p.Sim.RequestsFor(p.ID("support-desk"), simulator.EndpointStopAll))
	assert.Zero(t, p.Sim.Requests(simulator.EndpointStop), "one call closes them all")

	// An app that lists no session: the platform is asked all the same.
	res = p.run(t, nil, "sessions", "stop", "--app=support-desk", "--all", "--yes")
	require.Equal(t, exitOK, res.code)
	assert.Equal(t, "app support-desk has 0 active session(s)\n"+
		`closed every session of app support-desk: the platform answered code "200"`+"\n", res.stdout)
	assert.EqualValues(t, 2, p.Sim.Requests(simulator.EndpointStopAll))
}

func TestSessionsStopAllDryRun(t *testing.T) {
	p := startPlatform(t)
	res := p.run(t, nil, "sessions", "stop", "--app=museum-guide", "--all", "--dry-run")
	require.Equal(t, exitOK, res.code)
	assert.Empty(t, res.stderr)
	assert.Contains(t, res.stdout, "app museum-guide has 2 active session(s), the oldest started ")
	assert.True(t, strings.HasSuffix(res.stdout, "dry run: every session of app museum-guide would be closed (distroyCallSessionsByAppId); nothing was stopped\n"), res.stdout)
	assert.Zero(t, p.Sim.Requests(simulator.EndpointStopAll))
	assert.Equal(t, 2, p.Sim.InUse(p.ID("museum-guide")))
}

func TestSessionsStopAllFailures(t *testing.T) {
	p := startPlatform(t)
	app := p.ID("museum-guide")

	p.Faults.SetFault(app, simulator.EndpointStopAll, platformtest.Fault{Kind: platformtest.FaultSuccessFalse, Times: 1})
	res := p.run(t, nil, "sessions", "stop", "--app=museum-guide", "--all", "--yes")
	assert.Equal(t, exitFailed, res.code)
	assert.Equal(t, "duix_exporter sessions stop: closing every session of app museum-guide: distroyCallSessionsByAppId (app museum-guide): api, code 500: success is false\n", res.stderr)
	assert.NotContains(t, res.stdout, "closed")
	assert.Equal(t, 2, p.Sim.InUse(app))

	// Without the list there is no count to show: the platform is not
	// asked to close anything.
	p.Faults.SetFault(app, simulator.EndpointSessions, platformtest.Fault{Kind: platformtest.FaultHTML502, Times: 1})
	res = p.run(t, nil, "sessions", "stop", "--app=museum-guide", "--all", "--yes")
	assert.Equal(t, exitFailed, res.code)
	assert.Contains(t, res.stderr, "listing the sessions of app museum-guide: getconcurrentList (app museum-guide): http: HTTP 502")
	assert.EqualValues(t, 1, p.Sim.Requests(simulator.EndpointStopAll), "only the first, faulted, call")
	assert.Equal(t, 2, p.Sim.InUse(app))
}

func TestSessionsStopManyRefusesWithoutATerminalOrYes(t *testing.T) {
	p := startPlatform(t)
	old := p.startOld(t, "support-desk", "1081", 5*time.Hour)
	for _, tc := range []struct {
		mode, want string
	}{
		{"--older-than=2h", "not stopping 1 session(s) of app support-desk: stdin is not a terminal, so there is no one to confirm; pass --yes to stop them without asking"},
		{"--all", "not closing the sessions of app support-desk: stdin is not a terminal, so there is no one to confirm; pass --yes to close them without asking"},
	} {
		res := p.run(t, nil, "sessions", "stop", "--app=support-desk", tc.mode)
		assert.Equal(t, exitDeclined, res.code, tc.mode)
		assert.Equal(t, "duix_exporter sessions stop: "+tc.want+"\n", res.stderr, tc.mode)
	}
	assert.Zero(t, p.Sim.Requests(simulator.EndpointStop), "the platform is not asked to stop anything")
	assert.Zero(t, p.Sim.Requests(simulator.EndpointStopAll))
	assert.True(t, p.activeIDs("support-desk")[old])
	assert.Equal(t, 4, p.Sim.InUse(p.ID("support-desk")))
}

func TestSessionsStopNeedsExactlyOneOfSessionOlderThanAll(t *testing.T) {
	p := startPlatform(t)
	for _, tc := range []struct {
		args []string
		want string
	}{
		{nil, "give exactly one of --session ID, --older-than DURATION or --all: none was given"},
		{[]string{"--session=abc", "--all"}, "--session and --all were given"},
		{[]string{"--session=abc", "--older-than=2h"}, "--session and --older-than were given"},
		{[]string{"--older-than=2h", "--all"}, "--older-than and --all were given"},
		{[]string{"--session=abc", "--older-than=2h", "--all"}, "--session and --older-than and --all were given"},
		{[]string{"--session=", "--all"}, "--session and --all were given"},
		{[]string{"--older-than=", "--all"}, "--older-than and --all were given"},
		{[]string{"--no-all"}, "none was given"},
		{[]string{"--session=abc", "--dry-run"}, "--dry-run goes with --older-than or --all, not with --session"},
		{[]string{"--older-than="}, "--older-than is not a duration such as 90m, 2h or 1d"},
		{[]string{"--older-than=two-hours-SECRETISH"}, "--older-than is not a duration such as 90m, 2h or 1d"},
		{[]string{"--older-than=0s"}, "--older-than must be longer than zero (to close every session, use --all)"},
		{[]string{"--older-than=-1h"}, "--older-than must be longer than zero"},
	} {
		args := append([]string{"sessions", "stop", "--app=support-desk", "--yes"}, tc.args...)
		res := p.run(t, nil, args...)
		assert.Equal(t, exitUsage, res.code, "%v", tc.args)
		assert.Contains(t, res.stderr, tc.want, "%v", tc.args)
		assert.NotContains(t, res.stderr, "SECRETISH", "a value that failed to parse is not repeated")
		assert.Empty(t, res.stdout, "%v", tc.args)
	}
	for ep, n := range p.requests() {
		assert.Zero(t, n, "no call reaches the platform: %s", ep)
	}
	assert.Equal(t, 3, p.Sim.InUse(p.ID("support-desk")))
}

func TestParseAge(t *testing.T) {
	for in, want := range map[string]time.Duration{
		"90m": 90 * time.Minute, "2h": 2 * time.Hour, "1h30m": 90 * time.Minute, "1.5h": 90 * time.Minute,
		"1d": 24 * time.Hour, "1w": 7 * 24 * time.Hour, "1s": time.Second,
	} {
		got, err := parseAge(in)
		require.NoError(t, err, in)
		assert.Equal(t, want, got, in)
	}
	for _, in := range []string{"", "0", "0s", "0d", "-5m", "2", "h", "2 h", "1y2", "9999999999999999999h"} {
		_, err := parseAge(in)
		assert.Error(t, err, in)
	}
}

func TestSessionsListTable(t *testing.T) {
	p := startPlatform(t)
	res := p.run(t, nil, "sessions", "list", "--app=sales-avatar")
	require.Equal(t, exitOK, res.code)
	assert.Empty(t, res.stderr)
	rows := tableRows(t, res.stdout)
	assert.Equal(t, []string{"SESSION ID", "CONVERSATION", "STARTED (UTC)", "AGE", "appId", "status"}, rows["SESSION ID"],
		"the record's other fields get a column each")
	want := p.Sim.Sessions(p.ID("sales-avatar"))
	require.Len(t, want, 8)
	for _, s := range want {
		row := rows[s.ID]
		require.Len(t, row, 6, "row of %s", s.ID)
		assert.Equal(t, s.ConversationID, row[1])
		assert.Equal(t, s.Start.UTC().Format(time.DateTime), row[2])
		assert.Equal(t, p.ID("sales-avatar"), row[4])
		assert.Equal(t, "in_call", row[5])
	}
	assert.Contains(t, res.stdout, "8 active session(s)")
}

func TestSessionsListJSON(t *testing.T) {
	p := startPlatform(t)
	res := p.run(t, nil, "sessions", "list", "--app=museum-guide", "--output=json")
	require.Equal(t, exitOK, res.code)
	var out struct {
		App      string `json:"app"`
		Count    int    `json:"count"`
		Sessions []struct {
			ID             string          `json:"id"`
			ConversationID string          `json:"conversationId"`
			Start          time.Time       `json:"start"`
			Record         json.RawMessage `json:"record"`
		} `json:"sessions"`
	}
	require.NoError(t, json.Unmarshal([]byte(res.stdout), &out), res.stdout)
	want := p.Sim.Sessions(p.ID("museum-guide"))
	assert.Equal(t, "museum-guide", out.App)
	assert.Equal(t, len(want), out.Count)
	require.Len(t, out.Sessions, len(want))
	for i, s := range want {
		assert.Equal(t, s.ID, out.Sessions[i].ID)
		assert.Equal(t, s.ConversationID, out.Sessions[i].ConversationID)
		assert.True(t, s.Start.Truncate(time.Millisecond).Equal(out.Sessions[i].Start))
		var rec map[string]any
		require.NoError(t, json.Unmarshal(out.Sessions[i].Record, &rec))
		assert.Equal(t, "in_call", rec["status"], "the whole record is kept")
		assert.Equal(t, s.ID, rec["uuid"])
	}
}

func TestSessionsListWithoutSessions(t *testing.T) {
	p := startPlatform(t)
	for _, s := range p.Sim.Sessions(p.ID("museum-guide")) {
		require.True(t, p.Sim.EndSession(p.ID("museum-guide"), s.ID))
	}
	res := p.run(t, nil, "sessions", "list", "--app=museum-guide")
	require.Equal(t, exitOK, res.code)
	assert.Equal(t, "app museum-guide has no active sessions\n", res.stdout)

	res = p.run(t, nil, "sessions", "list", "--app=museum-guide", "--output=json")
	require.Equal(t, exitOK, res.code)
	assert.JSONEq(t, `{"app":"museum-guide","count":0,"sessions":[]}`, res.stdout)
}

func TestSessionsListOfAFailingApp(t *testing.T) {
	p := startPlatform(t)
	p.Faults.SetFault(p.ID("sales-avatar"), simulator.EndpointSessions, platformtest.Fault{Kind: platformtest.FaultTruncatedJSON})
	res := p.run(t, nil, "sessions", "list", "--app=sales-avatar", "--output=json")
	assert.Equal(t, exitFailed, res.code)
	assert.False(t, json.Valid([]byte(res.stdout)), "a list cut short is not a JSON document")
	assert.Contains(t, res.stderr, "listing the sessions of app sales-avatar: getconcurrentList (app sales-avatar): decode: ")
}

func TestSessionsStop(t *testing.T) {
	p := startPlatform(t)
	app := p.ID("sales-avatar")
	victim := p.Sim.Sessions(app)[3]
	res := p.run(t, nil, "sessions", "stop", "--app=sales-avatar", "--session="+victim.ID, "--yes")
	require.Equal(t, exitOK, res.code)
	assert.Equal(t, "stopped session "+victim.ID+` of app sales-avatar: the platform answered code "200"`+"\n", res.stdout)
	assert.Equal(t, 7, p.Sim.InUse(app), "the slot is free")
	for _, s := range p.Sim.Sessions(app) {
		assert.NotEqual(t, victim.ID, s.ID)
	}

	// Stopping it again: the platform no longer knows it as active.
	res = p.run(t, nil, "sessions", "stop", "--app=sales-avatar", "--session="+victim.ID, "--yes")
	assert.Equal(t, exitNotFound, res.code)
	assert.Contains(t, res.stderr, "is unknown or no longer active")
	assert.Contains(t, res.stderr, "api, code 404")
	assert.Empty(t, res.stdout)
}

func TestSessionsStopOfAnEndedOrUnknownSession(t *testing.T) {
	p := startPlatform(t)
	app := p.ID("support-desk")
	ended := p.Sim.Sessions(app)[0]
	require.True(t, p.Sim.EndSession(app, ended.ID))
	for _, id := range []string{ended.ID, "00000000-0000-4000-8000-000000000000"} {
		res := p.run(t, nil, "sessions", "stop", "--app=support-desk", "--session="+id, "--yes")
		assert.Equal(t, exitNotFound, res.code, id)
		assert.Contains(t, res.stderr, "session "+id+" of app support-desk is unknown or no longer active")
	}
	assert.Equal(t, 2, p.Sim.InUse(app), "nothing else was stopped")
}

func TestSessionsStopRefusesWithoutATerminalOrYes(t *testing.T) {
	p := startPlatform(t)
	app := p.ID("museum-guide")
	s := p.Sim.Sessions(app)[0]
	res := p.run(t, nil, "sessions", "stop", "--app=museum-guide", "--session="+s.ID)
	assert.Equal(t, exitDeclined, res.code)
	assert.Contains(t, res.stderr, "stdin is not a terminal")
	assert.Contains(t, res.stderr, "--yes")
	assert.Empty(t, res.stdout)
	assert.Zero(t, p.Sim.Requests(simulator.EndpointStop), "the platform is not asked")
	assert.Equal(t, 2, p.Sim.InUse(app))
}

func TestSessionsStopOfAFailingApp(t *testing.T) {
	p := startPlatform(t)
	app := p.ID("museum-guide")
	s := p.Sim.Sessions(app)[0]
	p.Faults.SetFault(app, simulator.EndpointStop, platformtest.Fault{Kind: platformtest.FaultHTML502})
	res := p.run(t, nil, "sessions", "stop", "--app=museum-guide", "--session="+s.ID, "--yes")
	assert.Equal(t, exitFailed, res.code)
	assert.Contains(t, res.stderr, "stopping session "+s.ID+" of app museum-guide: sessionStop (app museum-guide): http: HTTP 502")
	assert.False(t, strings.Contains(res.stdout, "stopped"))
	assert.Equal(t, 2, p.Sim.InUse(app))
}

// firstRow is stdout for a streaming test: it tells when a session row
// has been written.
type firstRow struct {
	mu      sync.Mutex
	buf     bytes.Buffer
	printed chan struct{}
	once    sync.Once
}

func (w *firstRow) Write(p []byte) (int, error) {
	w.mu.Lock()
	defer w.mu.Unlock()
	if bytes.Contains(p, []byte("session-0")) {
		w.once.Do(func() { close(w.printed) })
	}
	return w.buf.Write(p)
}

// sessions list prints each session as it arrives: the first rows are out
// while the platform is still sending the list, which is never held whole
// (a list of a million sessions needs no more memory than one of ten).
func TestSessionsListStreams(t *testing.T) {
	for _, output := range []string{"table", "json"} {
		t.Run(output, func(t *testing.T) {
			out := &firstRow{printed: make(chan struct{})}
			streamed := make(chan bool, 1)
			srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
				_, _ = io.WriteString(w, `{"success":true,"code":"0","data":{"total":2001,"list":[`)
				for i := range 2000 {
					fmt.Fprintf(w, `{"uuid":"session-%d","conversationId":"c","startTime":1700000000000,"status":"in_call"},`, i)
				}
				w.(http.Flusher).Flush()
				select {
				case <-out.printed: // the end of the list comes after its start was printed
					streamed <- true
				case <-time.After(10 * time.Second): // only when the list is held
					streamed <- false
				}
				_, _ = io.WriteString(w, `{"uuid":"last"}]}}`)
			}))
			t.Cleanup(srv.Close)
			path := oneAppConfig(t, srv.URL)
			app := kingpin.New("duix_exporter", "")
			cmds := Register(app)
			cmd, err := app.Parse([]string{"sessions", "list", "--app=a", "--output=" + output})
			require.NoError(t, err)
			var stderr bytes.Buffer
			code, _ := cmds.Run(context.Background(), cmd, Env{Program: "duix_exporter", ConfigFile: path, Stdout: out, Stderr: &stderr})
			require.Equal(t, exitOK, code, stderr.String())
			require.True(t, <-streamed, "the first sessions were printed before the list ended")
			text := out.buf.String()
			if output == "json" {
				var got struct {
					Count    int              `json:"count"`
					Sessions []map[string]any `json:"sessions"`
				}
				require.NoError(t, json.Unmarshal([]byte(text), &got))
				assert.Equal(t, 2001, got.Count)
				assert.Len(t, got.Sessions, 2001)
				return
			}
			assert.Contains(t, text, "2001 active session(s)")
			assert.Equal(t, 2001+2, strings.Count(text, "\n"), "a header per block of 1000 rows is not repeated: header, rows, footer")
		})
	}
}

// A table shows at most eight other fields of the first record, so that
// its rows stay small whatever the platform sends: here a first record of
// 5000 fields, then 2000 bare session IDs, an answer of 64 KB.
func TestSessionsListTableMemoryIsBoundedByTheAnswer(t *testing.T) {
	var body bytes.Buffer
	body.WriteString(`{"success":true,"code":"0","data":[{"uuid":"s0","startTime":1700000000000`)
	for i := range 5000 {
		fmt.Fprintf(&body, `,"k%04d":%d`, i, i)
	}
	body.WriteString(`}`)
	for i := range 2000 {
		fmt.Fprintf(&body, `,"s%d"`, i+1)
	}
	body.WriteString(`]}`)
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) { _, _ = w.Write(body.Bytes()) }))
	t.Cleanup(srv.Close)
	config := oneAppConfig(t, srv.URL)

	var ms runtime.MemStats
	runtime.GC()
	runtime.ReadMemStats(&ms)
	before := ms.TotalAlloc
	res := runCommand(t, nil, "--config.file="+config, "sessions", "list", "--app=a")
	runtime.ReadMemStats(&ms)
	require.Equal(t, exitOK, res.code, res.stderr)
	rows := tableRows(t, res.stdout)
	assert.Equal(t, []string{"SESSION ID", "CONVERSATION", "STARTED (UTC)", "AGE", "k0000", "k0001", "k0002", "k0003", "k0004", "k0005", "k0006", "k0007"}, rows["SESSION ID"])
	assert.Equal(t, "7", rows["s0"][11])
	assert.Len(t, rows["s2000"], 12, "the fields a bare ID lacks are shown as -")
	assert.Contains(t, res.stdout, "2001 active session(s)\n(4992 more field(s) of the first record not shown: --output json shows the records whole)\n")
	allocated := ms.TotalAlloc - before
	t.Logf("%d bytes of answer: %d MiB allocated", body.Len(), allocated>>20)
	assert.LessOrEqual(t, allocated, uint64(32<<20), "bytes allocated, garbage included")
}

// fullWriter is a stdout that cannot be written, as /dev/full.
type fullWriter struct{}

func (fullWriter) Write([]byte) (int, error) { return 0, syscall.ENOSPC }

// Output that cannot be written (a full disk, a closed pipe) makes every
// command fail, in every format: a script that redirects it is not told
// that an empty file is the answer. A stop with --older-than stops nothing
// when its list could not be shown.
func TestAnOutputThatCannotBeWrittenFails(t *testing.T) {
	p := startPlatform(t)
	stops := p.Sim.Requests(simulator.EndpointStop)
	for _, args := range [][]string{
		{"apps", "check"},
		{"apps", "check", "--output=json"},
		{"sessions", "list", "--app=support-desk"},
		{"sessions", "list", "--app=support-desk", "--output=json"},
		{"conversation", "show", "--app=sales-avatar", "--id=2081"},
		{"conversation", "show", "--app=sales-avatar", "--id=2081", "--output=json"},
		{"sessions", "stop", "--app=support-desk", "--older-than=1ns", "--dry-run"},
		{"sessions", "stop", "--app=support-desk", "--older-than=1ns", "--yes"},
		{"sessions", "stop", "--app=support-desk", "--all", "--dry-run"},
	} {
		app := kingpin.New("duix_exporter", "")
		cmds := Register(app)
		cmd, err := app.Parse(args)
		require.NoError(t, err)
		var stderr bytes.Buffer
		code, _ := cmds.Run(context.Background(), cmd, Env{Program: "duix_exporter", ConfigFile: p.Config, Stdout: fullWriter{}, Stderr: &stderr})
		assert.Equal(t, exitFailed, code, "%v: %s", args, stderr.String())
		assert.Contains(t, stderr.String(), "no space left on device", args)
	}
	assert.Equal(t, stops, p.Sim.Requests(simulator.EndpointStop), "no session was stopped")
	assert.NotEmpty(t, p.Sim.Sessions(p.Apps["support-desk"].AppID), "the demo's sessions are all there")
}

// listing serves a platform of one app that lists its sessions with the
// data list (JSON) and acknowledges every stop, after calling onStop (when
// set); stopped returns the IDs it was asked to stop.
func listing(t *testing.T, list string, onStop func()) (config string, stopped func() []string) {
	var ids []string
	var mu sync.Mutex
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if strings.Contains(r.URL.Path, simulator.EndpointStop) {
			mu.Lock()
			ids = append(ids, r.URL.Query().Get("uuid"))
			mu.Unlock()
			if onStop != nil {
				onStop()
			}
			_, _ = io.WriteString(w, `{"success":true,"code":"0","data":null}`)
			return
		}
		_, _ = io.WriteString(w, `{"success":true,"code":"0","data":`+list+`}`)
	}))
	t.Cleanup(srv.Close)
	return oneAppConfig(t, srv.URL), func() []string { mu.Lock(); defer mu.Unlock(); return slices.Clone(ids) }
}

// A session ID that is not valid UTF-8 (raw bytes, or a lone surrogate
// escaped) decodes as U+FFFD: sent back, it is no session's ID, and two of
// them would look like one. --older-than skips them, says so, and exits 1,
// as old sessions are left; the others are stopped.
func TestOlderThanSkipsIDsThatAreNotUTF8(t *testing.T) {
	start := time.Now().Add(-3 * time.Hour).UnixMilli()
	cfg, stopped := listing(t, fmt.Sprintf(`[{"uuid":"sess-%s","startTime":%d},{"uuid":"sess-\ud800","startTime":%d},{"uuid":"good","startTime":%d}]`,
		"\xff", start, start, start), nil)
	res := runCommand(t, nil, "--config.file="+cfg, "sessions", "stop", "--app=a", "--older-than=1h", "--yes")
	assert.Equal(t, exitFailed, res.code, res.stderr)
	assert.Equal(t, []string{"good"}, stopped(), "only the session whose ID is the platform's is stopped")
	assert.Contains(t, res.stdout, "1 started more than 1h ago")
	assert.Contains(t, res.stdout, "skipped 2 old session(s) whose ID is not valid UTF-8")
	assert.Contains(t, res.stderr, "2 old session(s) of app a were not stopped: their IDs are not valid UTF-8")
}

// A session listed twice is stopped once; a young one whose ID is not
// valid UTF-8 is no old session left behind.
func TestOlderThanStopsADuplicateOnceAndLeavesYoungOnesBe(t *testing.T) {
	old, young := time.Now().Add(-3*time.Hour).UnixMilli(), time.Now().UnixMilli()
	cfg, stopped := listing(t, fmt.Sprintf(`[{"uuid":"good","startTime":%d},{"uuid":"good","startTime":%d},{"uuid":"young-%s","startTime":%d}]`,
		old, old, "\xff", young), nil)
	res := runCommand(t, nil, "--config.file="+cfg, "sessions", "stop", "--app=a", "--older-than=1h", "--yes")
	assert.Equal(t, exitOK, res.code, res.stderr)
	assert.Equal(t, []string{"good"}, stopped())
	assert.Contains(t, res.stdout, "app a has 3 active session(s); 1 started more than 1h ago")
	assert.NotContains(t, res.stdout+res.stderr, "UTF-8")
}

// Interrupted (SIGINT) during its stops, --older-than sends no more and
// says how many were not attempted.
func TestOlderThanInterruptedStopsNoMore(t *testing.T) {
	ctx, interrupt := context.WithCancel(context.Background())
	defer interrupt()
	start := time.Now().Add(-3 * time.Hour).UnixMilli()
	cfg, stopped := listing(t, fmt.Sprintf(`[{"uuid":"s1","startTime":%d},{"uuid":"s2","startTime":%d},{"uuid":"s3","startTime":%d}]`, start, start, start),
		interrupt) // the operator presses Ctrl-C as the first stop goes out
	res := runCommandContext(t, ctx, nil, "--config.file="+cfg, "sessions", "stop", "--app=a", "--older-than=1h", "--yes")
	assert.Equal(t, exitFailed, res.code)
	assert.Equal(t, []string{"s1"}, stopped(), "no stop after the interruption")
	assert.Contains(t, res.stdout, "interrupted before the other 2\n")
	assert.Contains(t, res.stderr, "interrupted: 2 of 3 session(s) of app a were not attempted")
}
