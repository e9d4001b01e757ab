package simulator

import (
	"fmt"
	"net/http"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/promhttp"
)

// Fleet describes a generated platform for load tests: Apps apps, each
// with Sessions active sessions and Conversations conversations.
type Fleet struct {
	Apps, Sessions, Conversations int
}

// Limits of a Fleet.
const (
	MaxFleetApps          = 100000
	MaxFleetSessions      = 1000
	MaxFleetConversations = 100
)

// FleetApp returns app i of a fleet with the given conversations per app.
// Its name, ID, key and conversation IDs derive from i alone, so that a
// load generator can compute them: app-00000, 1790000000000000000, …
func FleetApp(i, conversations int) DemoApp {
	a := DemoApp{
		Name:   fmt.Sprintf("app-%05d", i),
		AppID:  fmt.Sprintf("17900000%011d", i),
		AppKey: fmt.Sprintf("load-key-%06d-0f3c9b2e7a51d8", i),
	}
	for c := range conversations {
		a.Conversations = append(a.Conversations, fmt.Sprintf("%d%02d", 1000+i, c))
	}
	return a
}

// NewFleet returns a Simulator holding the apps of f (see FleetApp), and
// their description. Each app has an allowance of Sessions+8, its
// conversations, and Sessions active sessions spread over them. The
// latency and faults are left to the caller.
func NewFleet(f Fleet) (*Simulator, []DemoApp, error) {
	if f.Apps < 1 || f.Apps > MaxFleetApps || f.Sessions < 0 || f.Sessions > MaxFleetSessions ||
		f.Conversations < 0 || f.Conversations > MaxFleetConversations {
		return nil, nil, fmt.Errorf("simulator: a fleet has 1 to %d apps, 0 to %d sessions and 0 to %d conversations per app",
			MaxFleetApps, MaxFleetSessions, MaxFleetConversations)
	}
	s := New()
	apps := make([]DemoApp, f.Apps)
	for i := range apps {
		a := FleetApp(i, f.Conversations)
		s.AddApp(App{ID: a.AppID, Key: a.AppKey, CorpID: fmt.Sprintf("corp-%d", i%50), Allowance: f.Sessions + 8})
		for c, id := range a.Conversations {
			if err := s.AddConversation(a.AppID, NewConversation(id, fmt.Sprintf("desk %d", c), 5)); err != nil {
				return nil, nil, err
			}
		}
		for j := range f.Sessions {
			conv := ""
			if len(a.Conversations) > 0 {
				conv = a.Conversations[j%len(a.Conversations)]
			}
			if _, err := s.StartSession(a.AppID, conv); err != nil {
				return nil, nil, err
			}
		}
		apps[i] = a
	}
	return s, apps, nil
}

// MetricsHandler serves the simulator's own metrics in the Prometheus
// format: duix_simulator_requests_total{endpoint}, the requests that
// reached each endpoint (Requests; ResetCounts sets it back to zero).
func (s *Simulator) MetricsHandler() http.Handler {
	reg := prometheus.NewRegistry()
	for _, ep := range knownEndpoints {
		reg.MustRegister(prometheus.NewCounterFunc(prometheus.CounterOpts{
			Name:        "duix_simulator_requests_total",
			Help:        "Requests that reached an endpoint of the simulator, refused or faulted ones included.",
			ConstLabels: prometheus.Labels{"endpoint": ep},
		}, func() float64 { return float64(s.Requests(ep)) }))
	}
	return promhttp.HandlerFor(reg, promhttp.HandlerOpts{})
}

// ListenWithMetrics is Listen, with MetricsHandler at /metrics beside the
// API.
func (s *Simulator) ListenWithMetrics(addr string) (baseURL string, closeFn func(), err error) {
	metrics := s.MetricsHandler()
	return ListenHandler(addr, http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.URL.Path == "/metrics" {
			metrics.ServeHTTP(w, r)
			return
		}
		s.ServeHTTP(w, r)
	}))
}
