package simulator

import (
	"context"
	"net/http"
	"time"
)

type ruleKey struct{ app, ep string }

// SetLatency delays the answers for an app and an endpoint by d; appID ""
// means every app and endpoint "" every endpoint. For a request, the most
// specific setting wins, in this order: (app, endpoint), (app, any
// endpoint), (any app, endpoint), (any app, any endpoint). The wait stops,
// and nothing is answered, when the request's context ends first.
func (s *Simulator) SetLatency(appID, endpoint string, d time.Duration) {
	s.latencyMu.Lock()
	defer s.latencyMu.Unlock()
	s.latencies[ruleKey{appID, endpoint}] = d
	s.hasLatency.Store(true)
}

// ClearLatency removes every latency set with SetLatency.
func (s *Simulator) ClearLatency() {
	s.latencyMu.Lock()
	defer s.latencyMu.Unlock()
	clear(s.latencies)
	s.hasLatency.Store(false)
}

// latency returns the latency applying to one request.
func (s *Simulator) latency(appID, ep string) time.Duration {
	if !s.hasLatency.Load() {
		return 0
	}
	s.latencyMu.Lock()
	defer s.latencyMu.Unlock()
	for _, k := range [4]ruleKey{{appID, ep}, {appID, ""}, {"", ep}, {"", ""}} {
		if d, ok := s.latencies[k]; ok {
			return d
		}
	}
	return 0
}

// wait sleeps for d unless ctx ends first; it reports whether the full
// delay elapsed.
func wait(ctx context.Context, d time.Duration) bool {
	if d <= 0 {
		return ctx.Err() == nil
	}
	t := time.NewTimer(d)
	defer t.Stop()
	select {
	case <-t.C:
		return true
	case <-ctx.Done():
		return false
	}
}

// A Responder answers a request in place of the simulator (see
// WithResponder). appID and endpoint are what the request is counted under
// (RequestsFor); normal writes the answer the simulator would give, and
// for sessionStop and distroyCallSessionsByAppId calling it performs the
// stop.
type Responder func(w http.ResponseWriter, r *http.Request, appID, endpoint string, normal func(http.ResponseWriter))

type responderKey struct{}

// WithResponder returns r carrying fn: the simulator counts the request,
// checks its method and waits its latency as usual, then lets fn answer it
// (only for the endpoints it serves). A test's middleware injects faults
// this way; the simulator has none of its own.
func WithResponder(r *http.Request, fn Responder) *http.Request {
	return r.WithContext(context.WithValue(r.Context(), responderKey{}, fn))
}
