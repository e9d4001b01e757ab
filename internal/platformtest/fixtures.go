package platformtest

import (
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
// connection that must be refused.
func FreeAddr(tb testing.TB) string {
	tb.Helper()
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		tb.Fatalf("finding a free port: %v", err)
	}
	addr := l.Addr().String()
	if err := l.Close(); err != nil {
		tb.Fatalf("finding a free port: %v", err)
	}
	return addr
}
