package main

import (
	"context"
	"encoding/json"
	"flag"
	"fmt"
	"io"
	"net"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"runtime"
	"sort"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/go-logfmt/logfmt"
	"github.com/prometheus/common/expfmt"
	"github.com/prometheus/common/model"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/duix-exporter/duix_exporter/internal/platformtest"
	"github.com/duix-exporter/duix_exporter/web"
)

// These tests drive the real binary, built once by TestMain.
var binary string

// hangTimeout bounds the waits of these tests. It only detects a hang: CI
// machines are shared and busy, so no test asserts how fast something
// happens, only that it does.
const hangTimeout = time.Minute

func TestMain(m *testing.M) {
	// These tests drive processes and mostly wait on them (on bounds of
	// 10 s, some of them): unless told otherwise, run more of them at once
	// than there are CPUs.
	flag.Parse()
	if f := flag.Lookup("test.parallel"); f != nil && f.Value.String() == strconv.Itoa(runtime.GOMAXPROCS(0)) {
		_ = f.Value.Set("8")
	}
	dir, err := os.MkdirTemp("", "duix-bin-")
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		os.Exit(1)
	}
	binary = filepath.Join(dir, exporterName)
	build := exec.Command("go", "build", "-o", binary, ".")
	build.Stdout, build.Stderr = os.Stderr, os.Stderr
	if err := build.Run(); err != nil {
		fmt.Fprintln(os.Stderr, "building the binary:", err)
		os.Exit(1)
	}
	code := m.Run()
	os.RemoveAll(dir)
	os.Exit(code)
}

// process is the exporter's binary, serving on url.
type process struct {
	*platformtest.Process
	url string
}

// startExporter runs the binary with args and waits until /-/ready answers.
func startExporter(t *testing.T, args ...string) *process {
	t.Helper()
	return launch(t, func(p *process) bool {
		resp, err := http.Get(p.url + "/-/ready")
		if err != nil {
			return false
		}
		resp.Body.Close()
		return resp.StatusCode == http.StatusOK
	}, args...)
}

// launch runs the binary on a free loopback port with args and waits until
// ready reports true.
func launch(t *testing.T, ready func(p *process) bool, args ...string) *process {
	t.Helper()
	addr := platformtest.FreeAddr(t)
	proc, err := platformtest.StartProcess("exporter", exec.Command(binary, append([]string{"--web.listen-address=" + addr}, args...)...))
	require.NoError(t, err)
	p := &process{Process: proc, url: "http://" + addr}
	t.Cleanup(func() { p.stop(t) })
	deadline := time.Now().Add(hangTimeout)
	for time.Now().Before(deadline) {
		select {
		case <-p.Done():
			t.Fatalf("exporter exited early: %v\n%s", p.Err(), p.Out.String())
		default:
		}
		if ready(p) {
			return p
		}
		time.Sleep(50 * time.Millisecond)
	}
	t.Fatalf("exporter not ready after %s:\n%s", hangTimeout, p.Out.String())
	return nil
}

// stop sends SIGTERM, unless the process has exited already, and asserts a
// clean exit (the wait for it is bounded by the shutdown bound and
// hangTimeout, to detect a hang only; then the process is killed).
func (p *process) stop(t *testing.T) {
	select {
	case <-p.Done():
		return
	default:
	}
	assert.NoError(t, p.Stop(web.ShutdownTimeout+hangTimeout), "exit status after SIGTERM:\n%s", p.Out.String())
}

func (p *process) get(t *testing.T, path string) (int, string) {
	t.Helper()
	resp, err := http.Get(p.url + path)
	require.NoError(t, err)
	defer resp.Body.Close()
	b, err := io.ReadAll(resp.Body)
	require.NoError(t, err)
	return resp.StatusCode, string(b)
}

func parseExposition(t *testing.T, body string) map[string]*dtoFamily {
	t.Helper()
	p := expfmt.NewTextParser(model.UTF8Validation)
	mfs, err := p.TextToMetricFamilies(strings.NewReader(body))
	require.NoError(t, err)
	out := map[string]*dtoFamily{}
	for name, mf := range mfs {
		f := &dtoFamily{values: map[string]float64{}}
		for _, m := range mf.GetMetric() {
			var labels []string
			for _, lp := range m.GetLabel() {
				labels = append(labels, lp.GetName()+"="+lp.GetValue())
			}
			v := m.GetGauge().GetValue() + m.GetCounter().GetValue() + m.GetUntyped().GetValue()
			f.values[strings.Join(labels, ",")] = v
		}
		out[name] = f
	}
	return out
}

type dtoFamily struct{ values map[string]float64 }

// documentedMetrics reads the metric names from README's metrics table.
func documentedMetrics(t *testing.T) []string {
	t.Helper()
	metrics, err := platformtest.ReadmeMetrics("README.md")
	require.NoError(t, err)
	names := make([]string, len(metrics))
	for i, m := range metrics {
		names[i] = m.Name
	}
	return names
}

// onEventOnly are the documented metrics whose series appear with an event
// the healthy demo does not have (a failed call, a session over the cap).
var onEventOnly = map[string]bool{"duix_scrape_errors_total": true, "duix_app_sessions_untracked_total": true}

func TestDemoServesTheDocumentedMetricsAndTheyMove(t *testing.T) {
	t.Parallel()
	p := startExporter(t, "--demo")
	documented := documentedMetrics(t)

	var (
		last    map[string]*dtoFamily
		samples []string
	)
	// The demo's calls start and end at random, a few times a minute:
	// wait for a change, for up to 90 s (at least 3 s).
	start := time.Now()
	for time.Since(start) < 90*time.Second {
		code, body := p.get(t, "/metrics")
		require.Equal(t, http.StatusOK, code)
		last = parseExposition(t, body)
		if f := last["duix_app_active_sessions"]; f != nil {
			samples = append(samples, fmt.Sprint(sortedValues(f.values)))
		}
		if len(samples) > 1 && samples[0] != samples[len(samples)-1] && time.Since(start) > 3*time.Second {
			break
		}
		time.Sleep(500 * time.Millisecond)
	}
	for _, name := range documented {
		if onEventOnly[name] {
			continue
		}
		assert.Contains(t, last, name, "documented metric %s is served by --demo", name)
	}
	for _, app := range []string{"support-desk", "sales-avatar", "museum-guide"} {
		assert.Equal(t, 1.0, last["duix_up"].values["app="+app], "duix_up for %s", app)
	}
	distinct := map[string]bool{}
	for _, s := range samples {
		distinct[s] = true
	}
	assert.Greater(t, len(distinct), 1, "active sessions change within a few seconds: %v", samples)
}

func sortedValues(m map[string]float64) []string {
	var out []string
	for k, v := range m {
		out = append(out, fmt.Sprintf("%s:%g", k, v))
	}
	sort.Strings(out)
	return out
}

func TestConfigCheck(t *testing.T) {
	t.Parallel()
	run := func(path string) (int, string) {
		cmd := exec.Command(binary, "--config.check", "--config.file="+path)
		out, err := cmd.CombinedOutput()
		if ee, ok := err.(*exec.ExitError); ok {
			return ee.ExitCode(), string(out)
		}
		require.NoError(t, err)
		return 0, string(out)
	}
	code, out := run("config/testdata/good.yml")
	assert.Equal(t, 0, code, out)
	assert.Contains(t, out, "SUCCESS")
	assert.NotContains(t, out, "SECRET-", "secrets are not printed")

	bad, err := filepath.Glob("config/testdata/invalid-*.yml")
	require.NoError(t, err)
	require.NotEmpty(t, bad)
	for _, path := range bad {
		code, out := run(path)
		assert.Equal(t, 1, code, "%s: %s", path, out)
		assert.Contains(t, out, "FAILED", path)
		assert.Contains(t, out, filepath.Base(path), "the message names the file")
		assert.NotContains(t, out, "SECRET-", path)
	}
	// A few messages that name the problem.
	for file, want := range map[string]string{
		"invalid-two-credentials.yml":   "exactly one of app_key, app_key_file, token, token_file",
		"invalid-duplicate-name.yml":    "duplicate name",
		"invalid-unknown-field-app.yml": "not found",
		"invalid-bad-auth-header.yml":   "api.auth_header",
	} {
		_, out := run("config/testdata/" + file)
		assert.Contains(t, out, want, file)
	}
	code, out = run("does-not-exist.yml")
	assert.Equal(t, 1, code)
	assert.Contains(t, out, "does-not-exist.yml")

	// What api.max_concurrency answers of api.max_response_bytes may need
	// once decoded must fit the memory limit in force (config.CheckMemory).
	dir := t.TempDir()
	for size, want := range map[int]int{16 << 20: 1, 512 << 10: 0} {
		path := filepath.Join(dir, fmt.Sprintf("duix-%d.yml", size))
		require.NoError(t, os.WriteFile(path, []byte(fmt.Sprintf(
			"api:\n  max_concurrency: 4\n  max_response_bytes: %d\napps:\n  - name: one\n    app_id: \"1\"\n    app_key: KEY-check-0001\n", size)), 0o600))
		cmd := exec.Command(binary, "--config.check", "--config.file="+path)
		cmd.Env = append(os.Environ(), "GOMEMLIMIT=256MiB")
		out, err := cmd.CombinedOutput()
		code := 0
		if ee, ok := err.(*exec.ExitError); ok {
			code = ee.ExitCode()
		}
		assert.Equal(t, want, code, "%d-byte answers, 4 at once: %s", size, out)
		if want == 1 {
			assert.Contains(t, string(out), "api.max_concurrency (4) × (api.max_response_bytes (16777216) × 7 + 576 KiB of headers)")
			assert.Contains(t, string(out), "over the memory limit of 256 MiB")
		}
		code, out2 := run(path) // no memory limit
		assert.Equal(t, 0, code, out2)
	}

	// TLS files are checked as the exporter uses them: a CA file that holds
	// no certificate fails the check, not the start.
	require.NoError(t, os.WriteFile(filepath.Join(dir, "ca.pem"), []byte("no certificate\n"), 0o600))
	path := filepath.Join(dir, "tls.yml")
	require.NoError(t, os.WriteFile(path, []byte("api: {http_client: {tls_config: {ca_file: ca.pem}}}\napps: [{name: one, app_id: '1', app_key: KEY-check-0001}]\n"), 0o600))
	code, out = run(path)
	assert.Equal(t, 1, code, out)
	assert.Contains(t, out, "CA cert")
}

func TestReloadKeepsTheRunningConfigWhenTheNewOneIsBad(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	cfgPath := filepath.Join(dir, "duix.yml")
	good := "apps:\n  - name: one\n    app_id: \"1\"\n    app_key: KEY-reload-test-0001\n"
	require.NoError(t, os.WriteFile(cfgPath, []byte(good), 0o600))
	p := startExporter(t, "--config.file="+cfgPath)

	reload := func() int {
		resp, err := http.Post(p.url+"/-/reload", "", nil)
		require.NoError(t, err)
		resp.Body.Close()
		return resp.StatusCode
	}
	gauge := func() float64 {
		_, body := p.get(t, "/metrics")
		return parseExposition(t, body)["duix_exporter_config_last_reload_successful"].values[""]
	}
	require.NoError(t, os.WriteFile(cfgPath, []byte("apps: [\n"), 0o600))
	assert.Equal(t, http.StatusInternalServerError, reload())
	assert.Equal(t, 0.0, gauge())
	_, body := p.get(t, "/metrics")
	assert.Contains(t, body, `duix_up{app="one"}`, "the old configuration keeps serving")

	two := good + "  - name: two\n    app_id: \"2\"\n    app_key: KEY-reload-test-0002\n"
	require.NoError(t, os.WriteFile(cfgPath, []byte(two), 0o600))
	require.NoError(t, p.Cmd.Process.Signal(syscall.SIGHUP))
	require.Eventually(t, func() bool { return gauge() == 1 }, hangTimeout, 50*time.Millisecond, "the reload by SIGHUP succeeds")
	_, body = p.get(t, "/metrics")
	assert.Contains(t, body, `duix_up{app="two"}`)

	code, _ := p.get(t, "/-/reload")
	assert.Equal(t, http.StatusMethodNotAllowed, code)
	assert.NotContains(t, p.Out.String(), "KEY-reload-test", "keys never reach the logs")
}

// Every flag of the exporter and of its simulator command is documented.
func TestEveryFlagIsDocumented(t *testing.T) {
	doc, err := os.ReadFile("docs/configuration.md")
	require.NoError(t, err)
	flagRE := regexp.MustCompile(`^ {2,6}(?:-h, )?--(?:\[no-\])?([a-z][a-z0-9.-]+)`)
	seen := 0
	for _, args := range [][]string{{"--help"}, {"simulator", "--help"}} {
		out, err := exec.Command(binary, args...).CombinedOutput()
		require.NoError(t, err, "%s", out)
		for _, line := range strings.Split(string(out), "\n") {
			if m := flagRE.FindStringSubmatch(line); m != nil && m[1] != "help" && m[1] != "version" {
				seen++
				assert.True(t, strings.Contains(string(doc), "`--"+m[1]), "docs/configuration.md documents --%s", m[1])
			}
		}
	}
	assert.Greater(t, seen, 15, "flags found in --help")
}

// The defaults in docs/configuration.md's flag table are the ones the
// binary has: a default in backquotes is the one --help shows, any other
// (off, empty) is a flag without one; --web.max-requests is 40 and
// --scrape.timeout-offset 500ms.
func TestTheDocumentedFlagDefaultsAreTheBinarys(t *testing.T) {
	out, err := exec.Command(binary, "--help").CombinedOutput()
	require.NoError(t, err, "%s", out)
	assert.Contains(t, string(out), "--web.max-requests=40 ")
	assert.Contains(t, string(out), "--scrape.timeout-offset=500ms ")
	helpRE := regexp.MustCompile(`(?m)^ {2,6}(?:-h, )?--(?:\[no-\])?([a-z][a-z0-9.-]+)(?:=(\S+))?`)
	defaults := map[string]string{} // by flag, "" when it has none
	for _, m := range helpRE.FindAllStringSubmatch(string(out), -1) {
		if v := strings.Trim(m[2], `"`); v != strings.ToUpper(m[1]) { // a placeholder is no default
			defaults[m[1]] = v
		} else {
			defaults[m[1]] = ""
		}
	}

	doc, err := os.ReadFile("docs/configuration.md")
	require.NoError(t, err)
	rowRE := regexp.MustCompile("(?m)^\\| `--([a-z][a-z0-9.-]+)` \\| ([^|]*) \\|")
	documented := map[string]string{}
	for _, m := range rowRE.FindAllStringSubmatch(string(doc), -1) {
		name, cell := m[1], strings.TrimSpace(m[2])
		documented[name] = cell
		want, ok := defaults[name]
		if !assert.True(t, ok, "--%s of the table is a flag of --help", name) {
			continue
		}
		if v, ok := strings.CutPrefix(cell, "`"); ok && strings.HasSuffix(v, "`") {
			assert.Equal(t, want, strings.TrimSuffix(v, "`"), "the documented default of --%s", name)
		} else {
			assert.Empty(t, want, "--%s is documented as %q", name, cell)
		}
	}
	assert.Equal(t, "`40`", documented["web.max-requests"])
	assert.Equal(t, "`500ms`", documented["scrape.timeout-offset"])
	assert.Greater(t, len(documented), 10, "rows found in the flag table")
}

func TestVersionWithoutLdflagsComesFromTheTree(t *testing.T) {
	want, err := os.ReadFile("VERSION")
	require.NoError(t, err)
	out, err := exec.Command(binary, "--version").CombinedOutput()
	require.NoError(t, err)
	assert.Contains(t, string(out), "version "+strings.TrimSpace(string(want))+" (", "the version as written in VERSION, with no line break")
}

// The exporter runs its Go code on one CPU unless told otherwise, by
// --runtime.gomaxprocs or the GOMAXPROCS variable, and its garbage
// collector at Go's default (GOGC 100) unless the GOGC variable is set;
// Go's own metrics show the settings in force.
func TestRuntimeSettingsUnlessToldOtherwise(t *testing.T) {
	// The unlabelled sample name of the exporter's /metrics.
	sample := func(name string, args ...string) float64 {
		code, body := startExporter(t, append([]string{"--demo"}, args...)...).get(t, "/metrics")
		require.Equal(t, http.StatusOK, code)
		f := parseExposition(t, body)[name]
		require.NotNil(t, f, "%s is served", name)
		return f.values[""]
	}
	t.Setenv("GOMAXPROCS", "")
	t.Setenv("GOGC", "")
	assert.Equal(t, 1.0, sample("go_sched_gomaxprocs_threads"), "GOMAXPROCS by default")
	assert.Equal(t, 3.0, sample("go_sched_gomaxprocs_threads", "--runtime.gomaxprocs=3"), "GOMAXPROCS from the flag")
	assert.Equal(t, 100.0, sample("go_gc_gogc_percent"), "Go's default GOGC")
	t.Setenv("GOMAXPROCS", "2")
	t.Setenv("GOGC", "120")
	assert.Equal(t, 2.0, sample("go_sched_gomaxprocs_threads"), "GOMAXPROCS from the variable")
	assert.Equal(t, 120.0, sample("go_gc_gogc_percent"), "GOGC from the variable")

	// refused runs the binary with a bad flag: it exits with 2 and says why; were the flag taken, the missing
	// configuration file would end it with 1.
	refused := func(flag, why string) {
		ctx, cancel := context.WithTimeout(context.Background(), hangTimeout)
		defer cancel()
		out, err := exec.CommandContext(ctx, binary, flag, "--config.file="+filepath.Join(t.TempDir(), "none.yml")).CombinedOutput()
		var ee *exec.ExitError
		require.ErrorAs(t, err, &ee, "%s is refused: %s", flag, out)
		assert.Equal(t, 2, ee.ExitCode(), flag)
		assert.Contains(t, string(out), why)
	}
	refused("--runtime.gomaxprocs=-1", "--runtime.gomaxprocs must be 0 or more, got -1")
	refused("--scrape.timeout-offset=-1s", "--scrape.timeout-offset must be 0 or more, got -1s")
	refused("--web.max-requests=-1", "--web.max-requests must be 0 or more, got -1")
	// Each of these would be registered but not served as written (a redirect, a 404, a pattern or a link to a host).
	for _, p := range []string{"GET /metrics", "/{x...}", "metrics", "", "/", "//metrics", "/./metrics", "/x/../metrics",
		"/metrics/", "/metrics?x", "/metrics#x", "/m%65trics", "/a b", "/m\\x", "/mé"} {
		refused("--web.telemetry-path="+p, fmt.Sprintf("--web.telemetry-path must be a clean path such as /metrics, got %q", p))
	}
	p := startExporter(t, "--demo", "--web.telemetry-path=/duix/m.e-t_r~i:c@s")
	code, body := p.get(t, "/duix/m.e-t_r~i:c@s")
	assert.Equal(t, http.StatusOK, code)
	assert.Contains(t, body, `duix_up{app="support-desk"} 1`)
	_, body = p.get(t, "/")
	assert.Contains(t, body, `href="/duix/m.e-t_r~i:c@s"`, "the landing page links to it")
}

// logLine is one log line: its keys in the order of the text, and values.
type logLine struct {
	keys   []string
	values map[string]string
}

// parseLines parses the log lines of out, in format.
func parseLines(t *testing.T, format, out string) []logLine {
	t.Helper()
	var lines []logLine
	if format == "logfmt" {
		d := logfmt.NewDecoder(strings.NewReader(out))
		for d.ScanRecord() {
			l := logLine{values: map[string]string{}}
			for d.ScanKeyval() {
				l.keys = append(l.keys, string(d.Key()))
				l.values[string(d.Key())] = string(d.Value())
			}
			lines = append(lines, l)
		}
		require.NoError(t, d.Err())
		return lines
	}
	for _, text := range strings.Split(strings.TrimSuffix(out, "\n"), "\n") {
		var m map[string]any
		require.NoError(t, json.Unmarshal([]byte(text), &m), "not JSON: %s", text)
		l := logLine{values: map[string]string{}}
		for k, v := range m {
			l.keys = append(l.keys, k)
			l.values[k] = fmt.Sprint(v)
		}
		lines = append(lines, l)
	}
	return lines
}

func TestEveryLogLineHasTheSameLeadingKeys(t *testing.T) {
	dir := t.TempDir()
	certFile, keyFile, _ := selfSigned(t, dir)
	webConfig := filepath.Join(dir, "web.yml")
	require.NoError(t, os.WriteFile(webConfig, []byte(fmt.Sprintf("tls_server_config:\n  cert_file: %s\n  key_file: %s\n", certFile, keyFile)), 0o600))

	for _, format := range []string{"logfmt", "json"} {
		t.Run(format, func(t *testing.T) {
			ready := func(p *process) bool {
				conn, err := net.Dial("tcp", strings.TrimPrefix(p.url, "http://"))
				if err != nil {
					return false
				}
				conn.Close()
				return true
			}
			p := launch(t, ready, "--demo", "--log.level=debug", "--log.format="+format, "--web.config.file="+webConfig)
			// A failed TLS handshake: the HTTP server's own log line.
			conn, err := net.Dial("tcp", strings.TrimPrefix(p.url, "http://"))
			require.NoError(t, err)
			_, err = conn.Write([]byte("not a TLS handshake\r\n\r\n"))
			require.NoError(t, err)
			// Wait for the server to give up on it (our deadline only
			// bounds a server that does not).
			_ = conn.SetReadDeadline(time.Now().Add(hangTimeout))
			_, _ = conn.Read(make([]byte, 64))
			conn.Close()
			require.Eventually(t, func() bool { return strings.Contains(p.Out.String(), "TLS handshake error") }, hangTimeout, 20*time.Millisecond)
			require.NoError(t, p.Stop(hangTimeout), "exit status after SIGTERM (killed if still running after %s):\n%s", hangTimeout, p.Out.String())

			out := p.Out.String()
			for _, want := range []string{"Starting duix_exporter", "Listening on", "TLS handshake error", "Shutting down"} {
				assert.Contains(t, out, want, "the exporter's, exporter-toolkit's and net/http's lines are all there")
			}
			lines := parseLines(t, format, out)
			require.GreaterOrEqual(t, len(lines), 6, out)
			callers := map[string]bool{}
			for i, l := range lines {
				require.GreaterOrEqual(t, len(l.keys), 4, "line %d:\n%s", i, out)
				if format == "logfmt" {
					assert.Equal(t, []string{"ts", "caller", "level", "msg"}, l.keys[:4], "line %d:\n%s", i, out)
				}
				assert.Subset(t, l.keys, []string{"ts", "caller", "level", "msg"}, "line %d:\n%s", i, out)
				assert.NotContains(t, l.keys, "time", "one timestamp, ts: line %d:\n%s", i, out)
				_, err := time.Parse(time.RFC3339Nano, l.values["ts"])
				assert.NoError(t, err, "line %d:\n%s", i, out)
				assert.Regexp(t, `^[a-z0-9_]+\.go:[0-9]+$`, l.values["caller"], "line %d", i)
				callers[strings.Split(l.values["caller"], ":")[0]] = true
			}
			// The call sites: the exporter's, exporter-toolkit's and
			// net/http's, never the loggers' own.
			assert.Contains(t, callers, "serve.go", callers)
			assert.Contains(t, callers, "tls_config.go", callers)
			for _, own := range []string{"log.go", "value.go", "level.go", "handler.go", "main.go"} {
				assert.NotContains(t, callers, own, callers)
			}
		})
	}
}

// With --janitor.listen-address, the janitor serves Alertmanager's webhook
// on its own listener, the metrics listener stays read-only, and the
// landing page says that the janitor is on and shows its decisions.
func TestJanitorListenerAndLandingPage(t *testing.T) {
	t.Parallel()
	addr := platformtest.FreeAddr(t)
	p := launch(t, func(p *process) bool { // both listeners up: the janitor's starts beside the main one
		resp, err := http.Get(p.url + "/-/ready")
		if err == nil {
			resp.Body.Close()
			var c net.Conn
			if c, err = net.Dial("tcp", addr); err == nil {
				c.Close()
			}
		}
		return err == nil
	}, "--demo", "--janitor.listen-address="+addr)

	_, page := p.get(t, "/")
	assert.Contains(t, page, `id="janitor"`, "the landing page says the janitor is on")
	assert.Contains(t, page, "No decision yet.")

	post := func(url string) (int, string) {
		t.Helper()
		payload := `{"version":"4","status":"firing","receiver":"duix-janitor","groupLabels":{},"commonLabels":{},` +
			`"commonAnnotations":{},"externalURL":"http://am:9093","groupKey":"{}","truncatedAlerts":0,"alerts":[{"status":"firing",` +
			`"labels":{"alertname":"DuixSessionStuck","app":"support-desk","severity":"warning"},"annotations":{},` +
			`"startsAt":"` + time.Now().Add(-time.Hour).UTC().Format(time.RFC3339) + `","endsAt":"0001-01-01T00:00:00Z","generatorURL":"","fingerprint":"f"}]}`
		resp, err := http.Post(url, "application/json", strings.NewReader(payload))
		require.NoError(t, err)
		defer resp.Body.Close()
		b, err := io.ReadAll(resp.Body)
		require.NoError(t, err)
		return resp.StatusCode, string(b)
	}
	code, _ := post(p.url + "/webhook")
	assert.Equal(t, http.StatusNotFound, code, "the metrics listener has no webhook")

	// The demo's apps do not opt in: nothing is stopped, and the answer,
	// the metrics and the landing page say why.
	code, answer := post("http://" + addr + "/webhook")
	require.Equal(t, http.StatusOK, code, answer)
	assert.Contains(t, answer, `app "support-desk" has not opted in`)
	_, metrics := p.get(t, "/metrics")
	assert.Regexp(t, `(?m)^duix_janitor_refusals_total\{reason="not_opted_in"\} 1$`, metrics)
	assert.Regexp(t, `(?m)^duix_janitor_webhook_requests_total\{outcome="handled"\} 1$`, metrics)
	_, page = p.get(t, "/")
	assert.NotContains(t, page, "No decision yet.")
	assert.Regexp(t, `<td>support-desk</td>.*not_opted_in`, page)
}

// Without the flag there is no janitor: no listener, no metrics, nothing on
// the landing page.
func TestJanitorOffByDefault(t *testing.T) {
	t.Parallel()
	p := startExporter(t, "--demo")
	_, page := p.get(t, "/")
	assert.NotContains(t, page, `id="janitor"`)
	_, metrics := p.get(t, "/metrics")
	assert.NotContains(t, metrics, "duix_janitor_")
}

// A SIGHUP that arrives while the first configuration loads (a
// configuration reloader racing the start) is a reload once it has loaded:
// it does not end the process. 5000 apps take a while to load.
func TestASIGHUPDuringTheStartIsAReload(t *testing.T) {
	t.Parallel()
	cfgPath := filepath.Join(t.TempDir(), "duix.yml")
	var b strings.Builder
	b.WriteString("apps:\n")
	for i := range 5000 {
		fmt.Fprintf(&b, "  - {name: app-%d, app_id: \"%d\", app_key: KEY-%d, conversations: [c%d]}\n", i, i, i, i)
	}
	require.NoError(t, os.WriteFile(cfgPath, []byte(b.String()), 0o600))
	proc, err := platformtest.StartProcess("exporter", exec.Command(binary, "--web.listen-address="+platformtest.FreeAddr(t), "--config.file="+cfgPath))
	require.NoError(t, err)
	t.Cleanup(func() { _ = proc.Stop(hangTimeout) })
	require.Eventually(t, func() bool { return strings.Contains(proc.Out.String(), "Starting duix_exporter") }, hangTimeout, time.Millisecond)
	require.NoError(t, proc.Cmd.Process.Signal(syscall.SIGHUP))
	listening := func() bool { return strings.Contains(proc.Out.String(), "Listening on") }
	select {
	case <-proc.Done():
		t.Fatalf("the exporter exited: %v\n%s", proc.Err(), proc.Out.String())
	case <-time.After(time.Second): // then it still runs, and serves
		require.Eventually(t, listening, hangTimeout, 10*time.Millisecond, "the exporter serves\n%s", proc.Out.String())
	}
}
