package main

import (
	"encoding/json"
	"fmt"
	"net"
	"os"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/go-logfmt/logfmt"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

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
			require.Eventually(t, func() bool { return strings.Contains(p.logs.String(), "TLS handshake error") }, hangTimeout, 20*time.Millisecond)
			require.NoError(t, p.cmd.Process.Signal(syscall.SIGTERM))
			select {
			case err := <-p.done:
				p.done <- err
				require.NoError(t, err)
			case <-time.After(hangTimeout):
				_ = p.cmd.Process.Kill()
				t.Fatalf("still running %s after SIGTERM:\n%s", hangTimeout, p.logs)
			}

			out := p.logs.String()
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
