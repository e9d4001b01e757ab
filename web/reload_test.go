package web

import (
	"net/http"
	"os"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

func TestReload(t *testing.T) {
	p := startPlatform(t)
	s := serve(t, p.config, Options{})
	code, body := s.do(t, http.MethodPost, "/-/reload")
	assert.Equal(t, http.StatusOK, code)
	assert.Equal(t, "Configuration reloaded\n", body)
	code, _ = s.do(t, http.MethodPut, "/-/reload")
	assert.Equal(t, http.StatusOK, code)

	code, _ = s.get(t, "/-/reload")
	assert.Equal(t, http.StatusMethodNotAllowed, code)

	require.NoError(t, os.WriteFile(p.config, []byte("apps: [\n"), 0o600))
	code, _ = s.do(t, http.MethodPost, "/-/reload")
	assert.Equal(t, http.StatusInternalServerError, code)
	_, body = s.get(t, "/metrics")
	m := samples(t, body)
	assert.Equal(t, 0.0, m["duix_exporter_config_last_reload_successful"][""])
	assert.Equal(t, 1.0, m["duix_up"]["app=museum-guide"], "the previous configuration stays in use")
}

func TestFailedReloadSaysWhereToLookNotWhy(t *testing.T) {
	p := startPlatform(t)
	s := serve(t, p.config, Options{})
	good, err := os.ReadFile(p.config)
	require.NoError(t, err)
	for name, baseURL := range map[string]string{
		"a password and a bad escape": "http://user:SECRET-pass-4f1e@127.0.0.1:1/%zz",
		"a secret in the path":        "http://127.0.0.1:1/SECRET-path-9c2d?x=1",
	} {
		cfg := strings.Replace(string(good), p.base, baseURL, 1)
		require.NotEqual(t, string(good), cfg)
		require.NoError(t, os.WriteFile(p.config, []byte(cfg), 0o600))
		code, body := s.do(t, http.MethodPost, "/-/reload")
		assert.Equal(t, http.StatusInternalServerError, code, name)
		assert.Contains(t, body, "Reloading the configuration failed", name)
		assert.Contains(t, body, "log", name)
		assert.Contains(t, body, "duix_exporter_config_last_reload_successful", name)
		for _, never := range []string{"SECRET", "%zz", "invalid URL escape", "query", "base_url", p.config} {
			assert.NotContains(t, body, never, name)
		}
	}
	logs := s.logs.String()
	assert.Contains(t, logs, "api.base_url: not a valid absolute URL", "the log says why")
	assert.Contains(t, logs, "must not have a query")
	assert.NotContains(t, logs, "SECRET-pass", "a password in base_url is not logged either")
}

func TestABadTelemetryPathIsAnError(t *testing.T) {
	exp := newTestExporter(t, startPlatform(t))
	for _, path := range []string{"metrics", "", "/probe", "/-/reload", "/a b"} {
		_, err := NewHandler(exp, nil, func() error { return nil }, Options{TelemetryPath: path})
		assert.ErrorContains(t, err, "telemetry path", path)
	}
	_, err := NewHandler(exp, nil, func() error { return nil }, Options{TelemetryPath: "/custom/metrics"})
	assert.NoError(t, err)
}
