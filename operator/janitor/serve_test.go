package janitor_test

import (
	"context"
	"log/slog"
	"net"
	"net/http"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/go-kit/log"
	toolkit "github.com/prometheus/exporter-toolkit/web"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"golang.org/x/crypto/bcrypt"

	"github.com/duix-exporter/duix_exporter/web"
)

// The janitor's listener applies the web configuration (here basic auth)
// as the metrics listener does.
func TestServeWithBasicAuth(t *testing.T) {
	f := newFixture(t, "")
	f.session("kiosk", 3*time.Hour)

	hash, err := bcrypt.GenerateFromPassword([]byte("s3cret"), bcrypt.MinCost)
	require.NoError(t, err)
	webConfig := filepath.Join(t.TempDir(), "web.yml")
	require.NoError(t, os.WriteFile(webConfig, []byte("basic_auth_users:\n  alertmanager: "+string(hash)+"\n"), 0o600))

	l, err := net.Listen("tcp", "127.0.0.1:0")
	require.NoError(t, err)
	addr := l.Addr().String()
	require.NoError(t, l.Close())
	systemd := false
	flags := &toolkit.FlagConfig{WebListenAddresses: &[]string{addr}, WebSystemdSocket: &systemd, WebConfigFile: &webConfig}

	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error, 1)
	go func() {
		done <- web.Serve(ctx, f.j.Server(nil), flags, log.NewNopLogger(), slog.New(slog.DiscardHandler))
	}()

	post := func(user, password string) int {
		req, err := http.NewRequest(http.MethodPost, "http://"+addr+"/webhook", strings.NewReader(payload(t, stuck("kiosk"))))
		require.NoError(t, err)
		if user != "" {
			req.SetBasicAuth(user, password)
		}
		resp, err := http.DefaultClient.Do(req)
		if err != nil {
			return 0
		}
		resp.Body.Close()
		return resp.StatusCode
	}
	require.Eventually(t, func() bool { return post("", "") != 0 }, 5*time.Second, 10*time.Millisecond, "the listener is up")

	assert.Equal(t, http.StatusUnauthorized, post("", ""))
	assert.Equal(t, http.StatusUnauthorized, post("alertmanager", "wrong"))
	assert.Len(t, f.listed("kiosk"), 1, "nothing stopped without the credentials")
	assert.Zero(t, f.lists.Load())

	assert.Equal(t, http.StatusOK, post("alertmanager", "s3cret"))
	assert.Empty(t, f.listed("kiosk"))

	cancel()
	select {
	case err := <-done:
		assert.NoError(t, err)
	case <-time.After(10 * time.Second):
		t.Fatal("Serve did not return after its context ended")
	}
}
