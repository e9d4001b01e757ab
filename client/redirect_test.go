package client_test

import (
	"context"
	"fmt"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/duix-exporter/duix_exporter/client"
	"github.com/duix-exporter/duix_exporter/config"
	"github.com/duix-exporter/duix_exporter/simulator"
)

// recorder serves the simulator, under /moved when asked to, and keeps the
// headers of the last request.
type recorder struct {
	sim  *simulator.Simulator
	mu   sync.Mutex
	last http.Header
}

func (r *recorder) ServeHTTP(w http.ResponseWriter, req *http.Request) {
	r.mu.Lock()
	r.last = req.Header.Clone()
	r.mu.Unlock()
	req.URL.Path = strings.TrimPrefix(req.URL.Path, "/moved")
	r.sim.ServeHTTP(w, req)
}

func (r *recorder) reset() {
	r.mu.Lock()
	defer r.mu.Unlock()
	r.last = nil
}

func (r *recorder) headers() http.Header {
	r.mu.Lock()
	defer r.mu.Unlock()
	return r.last
}

// redirectTo answers every request with a 302 to the same path and query
// under target.
func redirectTo(target func() string) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, req *http.Request) {
		http.Redirect(w, req, target()+req.URL.RequestURI(), http.StatusFound)
	})
}

// poolFor builds a client the way the daemon does, from a configuration.
func poolFor(t *testing.T, base, header, credential, extraHTTP string) *client.Client {
	t.Helper()
	cfg, err := config.Parse([]byte(fmt.Sprintf(`
api:
  base_url: %s%s
  auth_header: %s
  http_client:
    follow_redirects: true
%s
apps:
  - {name: a, app_id: %q, %s}
`, base, simulator.BasePath, header, extraHTTP, appID, credential)), "")
	require.NoError(t, err)
	pool, err := client.NewPool(cfg, client.PoolOptions{})
	require.NoError(t, err)
	t.Cleanup(pool.Close)
	return pool.Client("a")
}

func TestTokensNeverFollowARedirectElsewhere(t *testing.T) {
	sim := simulator.New()
	sim.AddApp(simulator.App{ID: appID, Key: appKey, Allowance: 3})
	static, err := simulator.MintToken(appID, appKey, time.Now(), time.Now().Add(time.Hour))
	require.NoError(t, err)
	credentials := map[string]string{
		"minted": fmt.Sprintf("app_key: %q", appKey),
		"static": fmt.Sprintf("token: %q", static),
	}

	other := &recorder{sim: sim}
	plain := httptest.NewServer(other)
	t.Cleanup(plain.Close)
	tlsSrv := httptest.NewTLSServer(other)
	t.Cleanup(tlsSrv.Close)
	targets := map[string]string{
		"port":   plain.URL,                                               // same host, another port
		"host":   strings.Replace(plain.URL, "127.0.0.1", "localhost", 1), // another host name
		"scheme": tlsSrv.URL,                                              // https
	}
	const trustAny = "    tls_config: {insecure_skip_verify: true}"

	for credName, cred := range credentials {
		for _, header := range []string{config.AuthHeaderAuthorization, config.AuthHeaderToken} {
			for targetName, target := range targets {
				t.Run(credName+"/"+header+"/"+targetName, func(t *testing.T) {
					other.reset()
					redirector := httptest.NewServer(redirectTo(func() string { return target }))
					t.Cleanup(redirector.Close)
					c := poolFor(t, redirector.URL, header, cred, trustAny)

					_, err := c.Concurrency(context.Background())
					assert.Equal(t, client.ReasonAuth, client.Reason(err), "the other server got no credential: %v", err)
					got := other.headers()
					require.NotNil(t, got, "the redirect was followed")
					assert.Empty(t, got.Values("Authorization"))
					assert.Empty(t, got.Values("Token"))
				})
			}
		}
	}

	// A redirect on the same origin keeps the credential: the call works.
	for credName, cred := range credentials {
		for _, header := range []string{config.AuthHeaderAuthorization, config.AuthHeaderToken} {
			t.Run("same origin/"+credName+"/"+header, func(t *testing.T) {
				rec := &recorder{sim: sim}
				c := poolFor(t, movedHome(t, rec), header, cred, "")
				got, err := c.Concurrency(context.Background())
				require.NoError(t, err)
				assert.EqualValues(t, 3, got.TotalConcurrentNumber)
				assert.NotNil(t, rec.headers())
			})
		}
	}
}

// A chain that leaves the origin and comes back still carries no
// credential on the way back.
func TestTokensAreNotRestoredWhenARedirectComesBack(t *testing.T) {
	sim := simulator.New()
	sim.AddApp(simulator.App{ID: appID, Key: appKey, Allowance: 3})
	home := &recorder{sim: sim}
	var first, away *httptest.Server
	first = httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, req *http.Request) {
		if strings.HasPrefix(req.URL.Path, "/moved/") {
			home.ServeHTTP(w, req)
			return
		}
		http.Redirect(w, req, away.URL+req.URL.RequestURI(), http.StatusFound)
	}))
	t.Cleanup(first.Close)
	away = httptest.NewServer(redirectTo(func() string { return first.URL + "/moved" }))
	t.Cleanup(away.Close)

	c := poolFor(t, first.URL, config.AuthHeaderToken, fmt.Sprintf("app_key: %q", appKey), "")
	_, err := c.Concurrency(context.Background())
	assert.Equal(t, client.ReasonAuth, client.Reason(err))
	require.NotNil(t, home.headers())
	assert.Empty(t, home.headers().Values("Token"))
}

// With follow_redirects false, the redirect is not followed at all.
func TestRedirectsNotFollowedWhenTurnedOff(t *testing.T) {
	sim := simulator.New()
	sim.AddApp(simulator.App{ID: appID, Key: appKey})
	other := &recorder{sim: sim}
	srv := httptest.NewServer(other)
	t.Cleanup(srv.Close)
	redirector := httptest.NewServer(redirectTo(func() string { return srv.URL }))
	t.Cleanup(redirector.Close)
	cfg, err := config.Parse([]byte(fmt.Sprintf("api: {base_url: %q, http_client: {follow_redirects: false}}\napps: [{name: a, app_id: %q, app_key: %q}]\n",
		redirector.URL+simulator.BasePath, appID, appKey)), "")
	require.NoError(t, err)
	pool, err := client.NewPool(cfg, client.PoolOptions{})
	require.NoError(t, err)
	_, err = pool.Client("a").Concurrency(context.Background())
	var e *client.Error
	require.ErrorAs(t, err, &e)
	assert.Equal(t, http.StatusFound, e.Status)
	assert.Nil(t, other.headers())
}

// The headers of api.http_client.http_headers are prometheus/common's:
// sent with every request, and on a redirect on the same origin.
func TestConfiguredHeadersAreSent(t *testing.T) {
	sim := simulator.New()
	sim.AddApp(simulator.App{ID: appID, Key: appKey, Allowance: 3})
	file := filepath.Join(t.TempDir(), "header")
	require.NoError(t, os.WriteFile(file, []byte("FILE-SECRET-0123456789"), 0o600))
	headers := fmt.Sprintf(`    http_headers:
      X-File: {files: [%q]}
      X-Mixed: {values: [public-part], secrets: [MIXED-SECRET-0123456789]}
      X-Public: {values: [public]}`, file)
	home := &recorder{sim: sim}
	c := poolFor(t, movedHome(t, home), config.AuthHeaderToken, fmt.Sprintf("app_key: %q", appKey), headers)
	_, err := c.Concurrency(context.Background())
	require.NoError(t, err)
	got := home.headers()
	require.NotNil(t, got)
	assert.Equal(t, []string{"FILE-SECRET-0123456789"}, got.Values("X-File"))
	assert.Equal(t, []string{"public-part", "MIXED-SECRET-0123456789"}, got.Values("X-Mixed"))
	assert.Equal(t, []string{"public"}, got.Values("X-Public"))
	assert.NotEmpty(t, got.Values("Token"))
}

// movedHome is the address of a server that redirects every request to
// the same path under /moved on itself, where rec answers it.
func movedHome(t *testing.T, rec *recorder) string {
	t.Helper()
	var srv *httptest.Server
	srv = httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, req *http.Request) {
		if strings.HasPrefix(req.URL.Path, "/moved/") {
			rec.ServeHTTP(w, req)
			return
		}
		http.Redirect(w, req, srv.URL+"/moved"+req.URL.RequestURI(), http.StatusFound)
	}))
	t.Cleanup(srv.Close)
	return srv.URL
}
