package web

import (
	"log/slog"
	"net/http"
	"testing"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

func TestServerBounds(t *testing.T) {
	srv := NewServer(http.NotFoundHandler(), slog.New(slog.DiscardHandler))
	assert.Equal(t, ReadHeaderTimeout, srv.ReadHeaderTimeout)
	assert.Equal(t, IdleTimeout, srv.IdleTimeout)
	assert.Equal(t, MaxHeaderBytes, srv.MaxHeaderBytes)
	// As docs/configuration.md says.
	assert.Equal(t, 10*time.Second, ReadHeaderTimeout)
	assert.Equal(t, 2*time.Minute, IdleTimeout)
	assert.Equal(t, 64<<10, MaxHeaderBytes)
	assert.Equal(t, 10*time.Second, ShutdownTimeout)
	assert.Equal(t, 10*time.Second, DefaultWriteMargin)
}

// A collector registered with both registries is unregistered from both.
func TestRegistriesUnregisterFromBoth(t *testing.T) {
	r, c := NewRegistries(), prometheus.NewCounter(prometheus.CounterOpts{Name: "x_total", Help: "x"})
	r.MustRegister(c)
	require.True(t, r.Unregister(c))
	for i := range r {
		assert.NoError(t, r[i].Register(c), "registry %d", i)
	}
	assert.False(t, NewRegistries().Unregister(c), "registered in neither")
}

// Options out of range are the defaults: a negative write margin is not a
// deadline in the past, a negative limit not a limit of nothing.
func TestNegativeOptionsAreTheDefaults(t *testing.T) {
	s := serve(t, startPlatform(t).Config, Options{WriteMargin: -time.Second, MaxRequests: -1})
	for _, path := range []string{"/metrics", "/probe?app=museum-guide", "/"} {
		code, body := s.get(t, path)
		assert.Equal(t, http.StatusOK, code, path)
		assert.Contains(t, body, "museum-guide", path)
	}
}
