package platformtest

import (
	"fmt"
	"math/rand/v2"
	"net"
	"net/http"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/prometheus/common/model"

	"github.com/duix-exporter/duix_exporter/simulator"
)

// Start serves sim, with faults, on a loopback port until the test ends
// (then the server and its connections close at once, whatever the faults
// still send). It returns the base URL of the API (http://127.0.0.1:port
// + simulator.BasePath) and the faults to set.
func Start(tb testing.TB, sim *simulator.Simulator) (baseURL string, f *Faults) {
	tb.Helper()
	f = New(sim)
	baseURL, closeFn, err := f.Listen("127.0.0.1:0")
	if err != nil {
		tb.Fatalf("serving the simulator: %v", err)
	}
	tb.Cleanup(closeFn)
	return baseURL, f
}

// FreeAddr returns a loopback address ("127.0.0.1:port") on which nothing
// listens at the moment: for a process the test starts, or for a
// connection that must be refused. The port is below Linux's ephemeral
// range (32768-60999 by default), so that no socket bound to port 0 (the
// demo's own simulator in the process under test, say) takes it before the
// process listens on it; a port from the kernel if none is found there.
func FreeAddr(tb testing.TB) string {
	tb.Helper()
	const tries = 100
	for i := 0; ; i++ {
		addr := "127.0.0.1:0"
		if i < tries {
			addr = fmt.Sprintf("127.0.0.1:%d", 10000+rand.IntN(32768-10000)) // #nosec G404 -- a port to try, not a secret
		}
		l, err := net.Listen("tcp", addr)
		if err != nil && i < tries {
			continue // taken
		}
		if err == nil {
			addr, err = l.Addr().String(), l.Close()
		}
		if err != nil {
			tb.Fatalf("finding a free port: %v", err)
		}
		return addr
	}
}

// Demo is the demo simulator on loopback (no churn: sessions change only
// when a test changes them), behind Faults, with an exporter configuration
// for it.
type Demo struct {
	Sim    *simulator.Simulator
	Faults *Faults
	Apps   map[string]simulator.DemoApp // by name
	Base   string                       // base URL of the API
	Config string                       // the configuration file
}

// StartDemo serves a Demo until the test ends, its configuration's
// api.timeout set to timeout (0: the demo's). Every request goes through
// wrap(sim, faults) first when wrap is not nil, so that a test can change
// the platform's state at a precise request.
func StartDemo(tb testing.TB, timeout time.Duration, wrap func(sim *simulator.Simulator, next http.Handler) http.Handler) *Demo {
	tb.Helper()
	sim, apps := simulator.NewDemo()
	d := &Demo{Sim: sim, Faults: New(sim), Apps: map[string]simulator.DemoApp{}, Config: filepath.Join(tb.TempDir(), "duix.yml")}
	var h http.Handler = d.Faults
	if wrap != nil {
		h = wrap(sim, d.Faults)
	}
	base, closeFn, err := simulator.ListenHandler("127.0.0.1:0", h)
	if err != nil {
		tb.Fatalf("serving the simulator: %v", err)
	}
	tb.Cleanup(closeFn)
	if d.Base = base; simulator.WriteConfig(d.Config, base, apps) != nil {
		tb.Fatalf("writing the configuration %s", d.Config)
	}
	if cfg, err := os.ReadFile(d.Config); timeout > 0 {
		const demo = "\n  timeout: 5s\n"
		if err != nil || !strings.Contains(string(cfg), demo) || os.WriteFile(d.Config, // #nosec G703 -- the test's own temporary directory
			[]byte(strings.Replace(string(cfg), demo, "\n  timeout: "+model.Duration(timeout).String()+"\n", 1)), 0o600) != nil {
			tb.Fatalf("setting api.timeout in %s", d.Config)
		}
	}
	for _, a := range apps {
		d.Apps[a.Name] = a
	}
	return d
}

// ID is the platform's ID of the named app.
func (d *Demo) ID(app string) string { return d.Apps[app].AppID }
