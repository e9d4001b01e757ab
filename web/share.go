package web

import (
	"context"
	"slices"
	"sync"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	dto "github.com/prometheus/client_model/go"
)

// sharedGathering lets overlapping /metrics requests share one gathering.
// A request that arrives while another's gathering is under way, and whose
// deadline is no earlier than that one's, answers with its families rather
// than gathering its own: the calls behind them would have been shared
// anyway (collector), and what a gathering adds on top, a registry holding
// every sample until it is encoded, is the largest part of a scrape's
// memory. In make load at 5000 apps, whose peak is two simultaneous
// scrapes, peak RSS went from 72.6-73.3 to 63.7-63.8 MiB
// (docs/performance.md).
//
// It is promhttp's CoalesceGather with a scrape's deadline: that option
// shares one gathering between whatever requests overlap it, but the
// collector needs each request's deadline, and a request must not wait
// past its own. So a request gathers on its own when its deadline is
// earlier, when a configuration was applied since the gathering began, and
// when its wait ends without a whole answer: its own deadline passed
// first, or the gathering's own deadline passed or its client left while
// it ran (its families may then lack apps it gave up on). Gathering on its
// own, it still reuses the calls that were under way when it arrived
// (collector).
type sharedGathering struct {
	mu  sync.Mutex
	cur *gathering // under way; nil when none is
}

// gathering is one gathering and its outcome.
type gathering struct {
	deadline time.Time
	config   uint64        // the configurations applied when it began
	joined   int           // requests waiting for it; guarded by sharedGathering.mu
	done     chan struct{} // closed once the outcome is set
	mfs      []*dto.MetricFamily
	err      error
	whole    bool // not cut short by its deadline or its client
}

// gather returns the families of own, or those of the gathering under way
// when it began under the same configuration (config, see
// collector.Exporter.Generation) and ends no later than ctx's deadline.
// The families may be shared with other requests: they are only read.
func (s *sharedGathering) gather(ctx context.Context, config uint64, own prometheus.Gatherer) ([]*dto.MetricFamily, error) {
	deadline, ok := ctx.Deadline()
	if !ok {
		return own.Gather()
	}
	s.mu.Lock()
	cur := s.cur
	if cur == nil {
		g := &gathering{deadline: deadline, config: config, done: make(chan struct{})}
		s.cur = g
		s.mu.Unlock()
		defer func() { // even if own panics: no one waits for ever
			s.mu.Lock()
			s.cur = nil
			s.mu.Unlock()
			close(g.done)
		}()
		g.mfs, g.err = own.Gather()
		g.whole = ctx.Err() == nil
		return slices.Clone(g.mfs), g.err
	}
	if cur.deadline.After(deadline) || cur.config != config {
		s.mu.Unlock()
		return own.Gather()
	}
	cur.joined++
	s.mu.Unlock()
	select {
	case <-cur.done:
		if cur.whole {
			return slices.Clone(cur.mfs), cur.err
		}
	case <-ctx.Done():
	}
	return own.Gather()
}

// shared is the Gatherer of one request that may share a gathering.
type shared struct {
	s      *sharedGathering
	ctx    context.Context
	config uint64
	own    prometheus.Gatherer
}

// Gather implements prometheus.Gatherer.
func (g shared) Gather() ([]*dto.MetricFamily, error) { return g.s.gather(g.ctx, g.config, g.own) }
