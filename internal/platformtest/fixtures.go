package platformtest

import (
	"fmt"
	"math/rand/v2"
	"net"
	"testing"

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
