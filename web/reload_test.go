package web

import (
	"net/http"
	"os"
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
