package client_test

import (
	"context"
	"net"
	"net/http"
	"net/http/httptest"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/duix-exporter/duix_exporter/config"
)

// A pool replaced while a call is in flight closes its connection once the
// call has ended: reloads leave no connection open behind them.
func TestCloseClosesTheConnectionsOnceTheLastCallHasEnded(t *testing.T) {
	f := newFixture(t, config.AuthHeaderAuthorization)
	entered, release := make(chan struct{}), make(chan struct{})
	closed := make(chan net.Conn, 10)
	srv := httptest.NewUnstartedServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.URL.Query().Get("conversationId") == "slow" {
			close(entered)
			<-release
		}
		f.sim.ServeHTTP(w, r)
	}))
	srv.Config.ConnState = func(c net.Conn, s http.ConnState) {
		if s == http.StateClosed {
			closed <- c
		}
	}
	srv.Start()
	t.Cleanup(srv.Close)
	f.cfg.API.BaseURL = srv.URL + "/duix-openapi-v2/sdk/v2"
	p := f.pool(t)
	c := p.Client("a")

	done := make(chan error)
	go func() {
		_, err := c.Conversation(context.Background(), "slow")
		done <- err
	}()
	<-entered
	p.Close()
	select {
	case <-closed:
		t.Fatal("a connection in use was closed")
	default:
	}
	close(release)
	assert.Error(t, <-done, "the call ended (an unknown conversation)")
	select {
	case <-closed:
	case <-time.After(10 * time.Second): // only ever reached when the connection stays open
		t.Fatal("the connection is still open after the last call ended")
	}

	// Calls after Close still work, and leave nothing open either.
	_, err := c.Concurrency(context.Background())
	require.NoError(t, err)
	select {
	case <-closed:
	case <-time.After(10 * time.Second):
		t.Fatal("the connection of a call after Close is still open")
	}
}
