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

// lineKeys returns the keys of each log line, in the order of the text.
func lineKeys(t *testing.T, format, out string) [][]string {
	t.Helper()
	var lines [][]string
	if format == "logfmt" {
		d := logfmt.NewDecoder(strings.NewReader(out))
		for d.ScanRecord() {
			var keys []string
			for d.ScanKeyval() {
				keys = append(keys, string(d.Key()))
			}
			lines = append(lines, keys)
		}
		require.NoError(t, d.Err())
		return lines
	}
	for _, text := range strings.Split(strings.TrimSuffix(out, "\n"), "\n") {
		d := json.NewDecoder(strings.NewReader(text))
		tok, err := d.Token()
		require.NoError(t, err, "not JSON: %s", text)
		require.Equal(t, json.Delim('{'), tok, text)
		var keys []string
		for d.More() {
			k, err := d.Token()
			require.NoError(t, err, text)
			keys = append(keys, k.(string))
			var v any
			require.NoError(t, d.Decode(&v), text)
		}
		lines = append(lines, keys)
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
			lines := lineKeys(t, format, out)
			require.GreaterOrEqual(t, len(lines), 6, out)
			for i, keys := range lines {
				require.GreaterOrEqual(t, len(keys), 4, "line %d:\n%s", i, out)
				assert.Equal(t, []string{"ts", "caller", "level", "msg"}, keys[:4], "line %d:\n%s", i, out)
			}
		})
	}
}
