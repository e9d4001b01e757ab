package client_test

import (
	"context"
	"fmt"
	"net/http/httptest"
	"net/url"
	"os"
	"path/filepath"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/duix-exporter/duix_exporter/client"
	"github.com/duix-exporter/duix_exporter/config"
	"github.com/duix-exporter/duix_exporter/simulator"
)

// A client's requests share their header values; a header that
// api.http_client.http_headers adds to one of them (prometheus/common
// appends it) must not pile up from one request to the next, nor reach
// the next request of another client.
func TestHeadersAddedToEveryRequestDoNotPileUp(t *testing.T) {
	sim := simulator.New()
	sim.AddApp(simulator.App{ID: appID, Key: appKey, Allowance: 3})
	sim.AddApp(simulator.App{ID: appID + "2", Key: appKey, Allowance: 3})
	rec := &recorder{sim: sim}
	srv := httptest.NewServer(rec)
	t.Cleanup(srv.Close)

	for _, style := range []string{config.AuthHeaderAuthorization, config.AuthHeaderToken} {
		t.Run(style, func(t *testing.T) {
			cfg, err := config.Parse([]byte(fmt.Sprintf(`
api:
  base_url: %s%s
  auth_header: %s
  http_client:
    http_headers:
      Accept: {values: [text/plain]}
apps:
  - {name: a, app_id: %q, app_key: %q}
  - {name: b, app_id: %q, app_key: %q}
`, srv.URL, simulator.BasePath, style, appID, appKey, appID+"2", appKey)), "")
			require.NoError(t, err)
			pool, err := client.NewPool(cfg, client.PoolOptions{UserAgent: "duix_exporter/test"})
			require.NoError(t, err)
			t.Cleanup(pool.Close)

			credential := "Authorization"
			if style == config.AuthHeaderToken {
				credential = "token"
			}
			seen := map[string]string{}
			for i := range 3 {
				for _, name := range []string{"a", "b"} {
					_, err := pool.Client(name).Concurrency(context.Background())
					require.NoError(t, err)
					h := rec.headers()
					assert.Equal(t, []string{"application/json", "text/plain"}, h.Values("Accept"), "call %d of %s", i, name)
					assert.Equal(t, []string{"duix_exporter/test"}, h.Values("User-Agent"), "call %d of %s", i, name)
					require.Len(t, h.Values(credential), 1, "call %d of %s", i, name)
					if i == 0 {
						seen[name] = h.Get(credential)
					}
					assert.Equal(t, seen[name], h.Get(credential), "call %d of %s: the app's own credential", i, name)
				}
			}
			assert.NotEqual(t, seen["a"], seen["b"], "each app sends its own token")
		})
	}
}

// A header of http_headers with values, secrets and files at once is sent
// with them in that order, as prometheus/common sends a header: the client
// sends those with a secret or a file itself, and keeps its order.
func TestConfiguredHeaderValuesKeepTheirOrder(t *testing.T) {
	rec, srv := recordedApp(t)
	dir := t.TempDir()
	for _, f := range []string{"one", "two"} {
		require.NoError(t, os.WriteFile(filepath.Join(dir, f), []byte(" from-file-"+f+"\n"), 0o600))
	}
	pool := headerPool(t, srv.URL, fmt.Sprintf(`      X-Mixed: {files: [%q, %q], secrets: [secret-1, secret-2], values: [value-1, value-2]}
      X-Public: {values: [public]}
      X-Secret: {secrets: [only-secret]}`, filepath.Join(dir, "one"), filepath.Join(dir, "two")))

	for i := range 2 {
		_, err := pool.Client("a").Concurrency(context.Background())
		require.NoError(t, err)
		h := rec.headers()
		assert.Equal(t, []string{"value-1", "value-2", "secret-1", "secret-2", "from-file-one", "from-file-two"}, h.Values("X-Mixed"), "call %d", i)
		assert.Equal(t, []string{"public"}, h.Values("X-Public"), "call %d", i)
		assert.Equal(t, []string{"only-secret"}, h.Values("X-Secret"), "call %d", i)
	}
}

// A Transport built by hand (not by NewPool) with a header read from a
// file sends it.
func TestHandBuiltTransportSendsHeaderFiles(t *testing.T) {
	rec, srv := recordedApp(t)
	base, err := url.Parse(srv.URL + simulator.BasePath)
	require.NoError(t, err)
	file := filepath.Join(t.TempDir(), "h")
	require.NoError(t, os.WriteFile(file, []byte("FILE-SECRET-0123456789"), 0o600))
	tr := &client.Transport{HTTP: srv.Client(), BaseURL: base, Headers: []client.Header{{Name: "X-Fixed", Value: "fixed"}, {Name: "X-File", Path: file}}}
	c := client.New(tr, appID, client.NewJWTSource(appID, client.StaticKey(appKey), 0, nil))
	_, err = c.Concurrency(context.Background())
	require.NoError(t, err)
	assert.Equal(t, []string{"FILE-SECRET-0123456789"}, rec.headers().Values("X-File"))
	assert.Equal(t, []string{"fixed"}, rec.headers().Values("X-Fixed"))
}

// recordedApp is a simulator with one app behind a recorder, and its
// server.
func recordedApp(t *testing.T) (*recorder, *httptest.Server) {
	t.Helper()
	sim := simulator.New()
	sim.AddApp(simulator.App{ID: appID, Key: appKey, Allowance: 3})
	rec := &recorder{sim: sim}
	srv := httptest.NewServer(rec)
	t.Cleanup(srv.Close)
	return rec, srv
}
