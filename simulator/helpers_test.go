package simulator

import (
	"context"
	"encoding/json"
	"io"
	"net/http"
	"net/http/httptest"
	"net/url"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
)

const (
	appA = "app-a"
	keyA = "key-a-secret"
	appB = "app-b"
	keyB = "key-b-secret"
)

func newFakeClock() *Clock { return NewClock(time.Date(2025, 3, 1, 12, 0, 0, 0, time.UTC)) }

type env struct {
	t     *testing.T
	sim   *Simulator
	srv   *httptest.Server
	clock *Clock
}

// newEnv starts a simulator with apps A (allowance 3) and B (allowance 2)
// behind a real HTTP server.
func newEnv(t *testing.T) *env {
	t.Helper()
	clock := newFakeClock()
	sim := New(WithClock(clock.Now))
	sim.AddApp(App{ID: appA, Key: keyA, CorpID: "corp-a", Allowance: 3})
	sim.AddApp(App{ID: appB, Key: keyB, CorpID: "corp-b", Allowance: 2})
	srv := httptest.NewServer(sim)
	t.Cleanup(srv.Close)
	return &env{t: t, sim: sim, srv: srv, clock: clock}
}

func (e *env) token(appID, key string) string {
	e.t.Helper()
	now := e.clock.Now()
	tok, err := MintToken(appID, key, now, now.Add(30*time.Minute))
	require.NoError(e.t, err)
	return tok
}

func (e *env) url(endpoint string, params ...string) string {
	q := url.Values{}
	for i := 0; i+1 < len(params); i += 2 {
		q.Set(params[i], params[i+1])
	}
	u := e.srv.URL + BasePath + "/" + endpoint
	if len(q) > 0 {
		u += "?" + q.Encode()
	}
	return u
}

type response struct {
	status int
	header http.Header
	body   []byte
}

// do sends a request with the given headers and reads the whole answer.
func (e *env) do(method, u string, hdr map[string]string) response {
	e.t.Helper()
	resp, err := e.send(context.Background(), method, u, hdr)
	require.NoError(e.t, err)
	defer resp.Body.Close()
	body, err := io.ReadAll(resp.Body)
	require.NoError(e.t, err)
	return response{status: resp.StatusCode, header: resp.Header, body: body}
}

func (e *env) send(ctx context.Context, method, u string, hdr map[string]string) (*http.Response, error) {
	req, err := http.NewRequestWithContext(ctx, method, u, nil)
	if err != nil {
		return nil, err
	}
	for k, v := range hdr {
		req.Header.Set(k, v)
	}
	return http.DefaultClient.Do(req)
}

// get sends an authenticated GET as app A (Bearer form).
func (e *env) get(endpoint string, params ...string) response {
	e.t.Helper()
	return e.getAs(appA, keyA, endpoint, params...)
}

func (e *env) getAs(appID, key, endpoint string, params ...string) response {
	e.t.Helper()
	return e.do(http.MethodGet, e.url(endpoint, params...), bearer(e.token(appID, key)))
}

func bearer(tok string) map[string]string {
	return map[string]string{"Authorization": "Bearer " + tok}
}

// decode unmarshals a body into a generic map, failing the test on
// invalid JSON.
func decode(t *testing.T, body []byte) map[string]any {
	t.Helper()
	var m map[string]any
	require.NoError(t, json.Unmarshal(body, &m), "body: %s", body)
	return m
}
