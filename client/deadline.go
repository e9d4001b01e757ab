package client

import (
	"context"
	"sync"
	"sync/atomic"
	"time"
)

// Each call of the platform is bounded by Transport.Timeout. A call made
// for a caller whose context can end (an operator command) gets a deadline
// of its own. A call made on context.Background() (every call of a scrape:
// see the collector's flights) gets a shared one: the calls that begin
// within the same window, 1/deadlineSlack of the timeout, share one
// context, which ends the timeout after the last of them may begin. So
// each such call ends between Timeout and Timeout plus 1% after it
// begins, never sooner.
//
// A context of its own per call was, at every call, a context, a runtime
// timer, a channel and a map of its children, made and torn down again:
// at 1000 apps in `make load`, 1.2 MB of the 20.6 MB the exporter
// allocated per scrape. In three alternating runs, the exporter CPU per
// scrape was 1.37, 1.31 and 1.35 times the direct calls' with it, and
// 1.29, 1.24 and 1.25 times without (docs/performance.md).

// deadlineSlack is the share of the timeout by which a call's deadline may
// be later than its own.
const deadlineSlack = 100

// sharedDeadline is a context that ends at end, shared by the calls that
// began at most Timeout before end.
type sharedDeadline struct {
	ctx     context.Context
	end     time.Time
	timeout time.Duration // of the calls that share it
}

// deadlines hands out the shared contexts of a transport.
type deadlines struct {
	mu      sync.Mutex
	current atomic.Pointer[sharedDeadline]
}

// within returns a context that ends no sooner than timeout from now and
// at most timeout/deadlineSlack later. It is never cancelled before its
// deadline: calls still under way may hold it.
func (d *deadlines) within(timeout time.Duration) context.Context {
	need := time.Now().Add(timeout)
	fits := func(s *sharedDeadline) bool { return s != nil && s.timeout == timeout && !s.end.Before(need) }
	if s := d.current.Load(); fits(s) {
		return s.ctx
	}
	d.mu.Lock()
	defer d.mu.Unlock()
	if s := d.current.Load(); fits(s) {
		return s.ctx // made meanwhile
	}
	end := need.Add(timeout / deadlineSlack)
	ctx, cancel := context.WithDeadline(context.Background(), end)
	// The context's own timer releases it at its deadline; cancel is
	// called then too, for the linters' sake.
	context.AfterFunc(ctx, cancel)
	d.current.Store(&sharedDeadline{ctx: ctx, end: end, timeout: timeout})
	return ctx
}

// callContext returns the context of one call begun on ctx, and the
// function to call once it is over.
func (t *Transport) callContext(ctx context.Context) (context.Context, context.CancelFunc) {
	switch {
	case t.Timeout <= 0:
		return ctx, func() {}
	case ctx == context.Background(): // never ends, carries nothing
		return t.deadlines.within(t.Timeout), func() {}
	}
	return context.WithTimeout(ctx, t.Timeout)
}
