package client_test

import (
	"bytes"
	"context"
	"fmt"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"syscall"
	"testing"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/duix-exporter/duix_exporter/client"
	"github.com/duix-exporter/duix_exporter/config"
	"github.com/duix-exporter/duix_exporter/simulator"
)

// Secret http_headers (secrets and files) go to base_url's origin only;
// plain values go everywhere, as prometheus/common sends them.
func TestSecretHTTPHeadersStayOnBaseURLsOrigin(t *testing.T) {
	sim := simulator.New()
	sim.AddApp(simulator.App{ID: appID, Key: appKey, Allowance: 3})
	other := &recorder{sim: sim}
	otherSrv := httptest.NewServer(other)
	t.Cleanup(otherSrv.Close)
	home := &recorder{sim: simulator.New()}
	homeSrv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		home.ServeHTTP(httptest.NewRecorder(), r.Clone(r.Context()))
		http.Redirect(w, r, otherSrv.URL+r.URL.RequestURI(), http.StatusFound)
	}))
	t.Cleanup(homeSrv.Close)

	file := filepath.Join(t.TempDir(), "header")
	require.NoError(t, os.WriteFile(file, []byte("FILE-SECRET-0123456789\n"), 0o600))
	c := poolFor(t, homeSrv.URL, config.AuthHeaderToken, fmt.Sprintf("app_key: %q", appKey), fmt.Sprintf(`    http_headers:
      X-Secret: {secrets: [INLINE-SECRET-0123456789]}
      X-File: {files: [%q]}
      X-Plain: {values: [plain]}`, file))
	_, err := c.Concurrency(context.Background())
	assert.Equal(t, client.ReasonAuth, client.Reason(err), "the other origin had no token")

	sent := home.headers()
	require.NotNil(t, sent)
	assert.Equal(t, []string{"INLINE-SECRET-0123456789"}, sent.Values("X-Secret"))
	assert.Equal(t, []string{"FILE-SECRET-0123456789"}, sent.Values("X-File"), "read and trimmed")
	assert.Equal(t, []string{"plain"}, sent.Values("X-Plain"))
	assert.NotEmpty(t, sent.Values("Token"))

	got := other.headers()
	require.NotNil(t, got)
	assert.Empty(t, got.Values("Token"), "the token stays home")
	assert.Empty(t, got.Values("X-Secret"), "a secret header went to another origin")
	assert.Empty(t, got.Values("X-File"), "a header file's secret went to another origin")
	assert.Equal(t, []string{"plain"}, got.Values("X-Plain"))
}

// A file of http_headers is read as a key file is: swapped for what is not
// a regular file of at most 64 KiB, not empty, it is refused when next
// looked at (a minute later), counted, and its last good value stays in
// use; a FIFO cannot block the call. (The configuration refuses such a
// file at load and reload: TestHeaderFilesAreCheckedAtLoad, config.)
func TestHTTPHeaderFilesAreReadAsKeyFilesAre(t *testing.T) {
	sim := simulator.New()
	sim.AddApp(simulator.App{ID: appID, Key: appKey, Allowance: 3})
	home := &recorder{sim: sim}
	srv := httptest.NewServer(home)
	t.Cleanup(srv.Close)

	for name, mk := range map[string]func(p string) error{
		"over 64 KiB": func(p string) error { return os.WriteFile(p, bytes.Repeat([]byte("h"), 100<<10), 0o600) },
		"empty":       func(p string) error { return os.WriteFile(p, []byte(" \n"), 0o600) },
		"/dev/null":   func(p string) error { return os.Symlink("/dev/null", p) },
		"/dev/zero":   func(p string) error { return os.Symlink("/dev/zero", p) },
		"fifo":        func(p string) error { return syscall.Mkfifo(p, 0o600) },
		"gone":        func(string) error { return nil },
	} {
		t.Run(name, func(t *testing.T) {
			file := filepath.Join(t.TempDir(), "header")
			require.NoError(t, os.WriteFile(file, []byte("good-0123456789\n"), 0o600))
			cfg, err := config.Parse([]byte(fmt.Sprintf("api:\n  base_url: %s%s\n  http_client:\n    http_headers:\n      X-File: {files: [%q]}\napps: [{name: a, app_id: %q, app_key: %q}]\n",
				srv.URL, simulator.BasePath, file, appID, appKey)), "")
			require.NoError(t, err)
			reg, clock := prometheus.NewRegistry(), simulator.NewClock(time.Now())
			pool, err := client.NewPool(cfg, client.PoolOptions{Metrics: client.NewMetrics(reg), Now: clock.Now})
			require.NoError(t, err)
			t.Cleanup(pool.Close)
			_, err = pool.Client("a").Concurrency(context.Background())
			require.NoError(t, err)

			require.NoError(t, os.Remove(file))
			require.NoError(t, mk(file))
			clock.Add(time.Minute)
			for range 2 {
				home.reset()
				returnsWithin(t, func() {
					_, err = pool.Client("a").Concurrency(context.Background())
				})
				require.NoError(t, err)
				assert.Equal(t, []string{"good-0123456789"}, home.headers().Values("X-File"), "the last good value")
			}
			assert.Equal(t, 1.0, counterValue(t, reg, "duix_exporter_secret_file_errors_total", map[string]string{"kind": client.SecretHeader}))
		})
	}
}
