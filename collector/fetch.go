package collector

import (
	"context"
	"slices"
	"sync"
	"sync/atomic"
	"time"

	"github.com/go-kit/log/level"
	"golang.org/x/sync/semaphore"

	"github.com/duix-exporter/duix_exporter/client"
)

// Fetching is shared between the requests (/metrics, /probe) that want an
// app at the same time. For each app a request, in order:
//   - reuses the last result when it is younger than api.min_interval, or
//     when its calls began after the request arrived (it is as fresh as a
//     call the request would make);
//   - else joins the app's flight, the calls under way for another request;
//   - else waits for a slot of api.max_concurrency and starts a flight.
//
// A flight makes the app's calls (getconcurrentNumber, getconcurrentList,
// any conversation due for a refresh) on the slot its requester waited
// for, one after the other, and beside each other on the slots that are
// free: a fleet keeps every slot busy, and its apps' calls follow each
// other without a goroutine per call, while a probe and a small fleet have
// theirs made at once. The last apps of a request (as many as its workers)
// have their other calls made on the next slots to free up (see beside).
// A requester gives its slot back once its own calls are made.
//
// A flight runs on a context of its own, not on the context of the request
// that started it, and always runs to its end, each call bounded by
// api.timeout. A requester that gives up (its deadline passed, or its
// client went away) leaves it and reports the app down for itself alone;
// the flight goes on for the others and for the requests after it, and
// what it records and counts is the platform's own outcome. So no client,
// however short its deadline, can make the exporter count an error, cancel
// a call others wait for, or hand them an outcome that was not the
// platform's. The cost: the calls of a flight nobody waits for any more
// still finish, within api.max_concurrency.

// conversationRetry bounds how soon a failed conversation refresh is retried.
const conversationRetry = time.Minute

// flights are the fetches under way, by app.
type flights struct {
	mu sync.Mutex
	m  map[*appState]*flight
}

// flight is one fetch of an app. Its result is written by the flight's
// calls (see fly) and read once done is closed.
type flight struct {
	st      *appState
	due     []string // the conversations to refresh
	res     *result
	done    chan struct{}  // closed when landed
	calls   sync.WaitGroup // those made beside the first
	waiting []*waiting     // those of them that wait for a slot
}

// fetchAll hands each app's result to each, in the order of apps, as soon
// as it is there: a scrape's series are gathered while the calls of the
// apps after it are still under way. Workers, as many as
// api.max_concurrency, take the apps in order and run the flights they
// start themselves, as the direct calls of `make load` do. With a goroutine
// started per flight once its slot was free, the exporter CPU per scrape
// was 1.56x the direct calls' instead of 1.47x (`make load`, 1000 apps,
// mean of three runs; docs/performance.md).
func (e *Exporter) fetchAll(ctx context.Context, arrived time.Time, apps []*appState, s settings, each func(*appState, *result)) {
	picks := make([]pick, len(apps))
	for i := range picks {
		picks[i].ready = make(chan struct{})
	}
	var next atomic.Int64
	for range min(s.workers, len(apps)) {
		// Nobody waits for a worker: out of time, it finishes the flight
		// it runs (others may wait for it) and takes no other app.
		go func() {
			for i := next.Add(1) - 1; i < int64(len(apps)) && ctx.Err() == nil; i = next.Add(1) - 1 {
				e.pick(ctx, apps[i], arrived, s, &picks[i], i >= int64(len(apps)-s.workers))
			}
		}()
	}
	// Wait in order; out of time, leave the apps not done.
	for i := range picks {
		r := picks[i].wait(ctx)
		if r == nil {
			// Not fetched in time, or left: down for this request only.
			err := &client.Error{Endpoint: "scrape", Reason: client.ReasonTimeout}
			r = &result{started: e.now(), duration: time.Since(arrived), concErr: err, sessErr: err}
		}
		each(apps[i], r)
		picks[i].drop()
	}
}

// pick is what a request found for an app: a result it can use as it is,
// or a flight to wait for. ready is closed once either is set.
type pick struct {
	ready chan struct{}
	res   *result
	f     *flight
}

// drop lets go of p's flight and channel once its worker is done with it,
// so that what a scrape holds while its later apps are fetched is its
// samples, not the flights of the apps it has gathered. At 5000 apps, the
// flights, their channels and the picks' were about 1.4 MB at the end of
// a scrape, where the heap peaks (docs/performance.md).
func (p *pick) drop() {
	select {
	case <-p.ready:
		*p = pick{}
	default: // its worker may still set it
	}
}

// pick finds a result or a flight for st; failing both, it waits for a
// slot of max_concurrency, starts a flight and runs it. Out of time, it
// leaves p not ready.
func (e *Exporter) pick(ctx context.Context, st *appState, arrived time.Time, s settings, p *pick, last bool) {
	r, f, _ := e.join(st, arrived, s, false)
	if r == nil && f == nil {
		// Wait for a slot, then look again: another request may have
		// fetched the app meanwhile.
		if err := s.sem.Acquire(ctx, 1); err != nil {
			return
		}
		var started bool
		r, f, started = e.join(st, arrived, s, true)
		if started {
			p.res, p.f = r, f
			close(p.ready)
			e.fly(f, s.sem, last)
			return
		}
	}
	p.res, p.f = r, f
	close(p.ready)
}

// wait returns the result of p, or nil when it is not there by the end of
// ctx. A result already there is used even when ctx has ended (select
// picks at random among ready cases).
func (p *pick) wait(ctx context.Context) *result {
	select {
	case <-p.ready:
	case <-ctx.Done():
		select {
		case <-p.ready:
		default:
			return nil
		}
	}
	if p.res != nil {
		return p.res
	}
	select {
	case <-p.f.done:
	case <-ctx.Done():
		select {
		case <-p.f.done:
		default:
			return nil // left: it goes on for the others
		}
	}
	return p.f.res
}

// join returns a result the request can use as it is, or the flight under
// way that it joined. Failing both, when the caller holds a slot of s.sem
// it starts a flight (started), which the caller runs with fly; else it
// returns neither. A slot it does not use for a flight it releases.
func (e *Exporter) join(st *appState, arrived time.Time, s settings, slot bool) (_ *result, _ *flight, started bool) {
	e.flights.mu.Lock()
	defer e.flights.mu.Unlock()
	r, f := e.reuse(st, arrived, s)
	switch {
	case r != nil || f != nil:
		if slot {
			s.sem.Release(1)
		}
		return r, f, false
	case slot:
		return nil, e.start(st, s), true
	}
	return nil, nil, false
}

// due returns the conversations of st due for a refresh, claiming them.
func (e *Exporter) due(st *appState, s settings) []string {
	return st.due(e.now(), time.Duration(s.api.ConversationRefresh), conversationRetry)
}

// reuse returns a result the request can use as it is, or the flight it
// joined; callers hold flights.mu.
func (e *Exporter) reuse(st *appState, arrived time.Time, s settings) (*result, *flight) {
	if r := st.lastResult(); r != nil {
		if mi := time.Duration(s.api.MinInterval); mi > 0 && e.now().Sub(r.started) < mi {
			e.shared.WithLabelValues("cached").Inc()
			return r, nil
		}
		// Begun since the request arrived, or under way then (and landed
		// since): what it would have joined.
		if !r.begun.Add(r.duration).Before(arrived) {
			e.shared.WithLabelValues("in_flight").Inc()
			return r, nil
		}
	}
	if f := e.flights.m[st]; f != nil {
		e.shared.WithLabelValues("in_flight").Inc()
		return nil, f
	}
	return nil, nil
}

// start registers a flight for st, for its caller to run with fly; the
// caller, its first requester, holds flights.mu.
func (e *Exporter) start(st *appState, s settings) *flight {
	f := &flight{st: st, res: &result{started: e.now(), begun: time.Now()}, done: make(chan struct{}), due: e.due(st, s)}
	e.flights.m[st] = f
	return f
}

// fly makes the calls of f, releases the caller's slot of sem and lands
// f. getconcurrentList is called on the slot the caller holds;
// getconcurrentNumber and each due conversation beside it, on a slot of
// their own when one is free, else one after the other; for one of the
// last apps of a request (last), on the next slot to free up or after the
// caller's own call, whichever comes first.
func (e *Exporter) fly(f *flight, sem *semaphore.Weighted, last bool) {
	st := f.st
	c, ids, life, maxTracked := st.fetchSettings()
	for _, id := range f.due {
		f.beside(sem, last, func() {
			conv, err := c.Conversation(context.Background(), id)
			e.logFailure(st, client.EndpointConversation, err)
			st.recordConversation(id, conv, err, e.now())
		})
	}
	f.beside(sem, last, func() { e.concurrency(f, c) })
	e.listSessions(context.Background(), st, c, f.res, ids, life, maxTracked) // every call is bounded by api.timeout
	f.claimWaiting()
	sem.Release(1) // the caller's calls are made
	f.calls.Wait()
	e.land(f)
}

// beside runs call on a slot of sem of its own when one is free, and
// otherwise on the caller's slot, after the caller's own call: at once
// (before it), or, with wait, after it (see claimWaiting), unless a slot
// frees up first.
//
// In a fleet, every slot is busy and an app's calls follow each other, as
// the direct calls of `make load` do. The last apps of a request are
// different: their flights begin while the slots are still busy, and each
// one's calls following each other kept a few slots busy for a whole call
// after the others had finished (at 1000 apps, about 30 ms with 4 to 12
// calls under way, against 20 ms for the direct calls' last ones). Their
// other calls take the next slot to free up instead; when other requests
// keep the slots busy, they do not wait longer than they did.
//
// The closures of fly capture pointers only: capturing the request's
// settings made every flight allocate about 330 bytes more (the 1000 apps
// of `make load`: 0.4 of the 19.4 MB allocated per scrape).
func (f *flight) beside(sem *semaphore.Weighted, wait bool, call func()) {
	switch {
	case sem.TryAcquire(1):
		f.calls.Go(func() {
			defer sem.Release(1)
			call()
		})
	case wait:
		w := &waiting{call: call}
		var ctx context.Context
		ctx, w.stop = context.WithCancel(context.Background())
		f.waiting = append(f.waiting, w)
		f.calls.Go(func() {
			if sem.Acquire(ctx, 1) != nil {
				return // the caller makes it
			}
			defer sem.Release(1)
			if w.claimed.CompareAndSwap(false, true) {
				call()
			}
		})
	default:
		call()
	}
}

// waiting is a call beside that waits for a slot; whoever claims it first,
// its goroutine on a slot of its own or the caller on its slot, makes it.
type waiting struct {
	call    func()
	stop    context.CancelFunc // stops the wait for a slot
	claimed atomic.Bool
}

// claimWaiting makes, on the caller's slot, each call beside that has not
// got a slot of its own yet.
func (f *flight) claimWaiting() {
	for _, w := range f.waiting {
		w.stop()
		if w.claimed.CompareAndSwap(false, true) {
			w.call()
		}
	}
}

// concurrency calls getconcurrentNumber for f.
func (e *Exporter) concurrency(f *flight, c *client.Client) {
	r := f.res
	r.conc, r.concErr = c.Concurrency(context.Background())
	e.logFailure(f.st, client.EndpointConcurrency, r.concErr)
}

// listSessions counts the app's sessions into r: in all, without a
// conversation, and per configured conversation (ids, in order); with
// life, it keeps the start of the list for the lifecycle.
func (e *Exporter) listSessions(ctx context.Context, st *appState, c *client.Client, r *result, ids []string, life bool, maxTracked int) {
	n, noConv, perConv := 0, 0, make([]int, len(ids))
	var list []seenSession
	if life {
		list = []seenSession{}
	}
	err := c.EachSession(ctx, client.SessionOptions{}, func(ss client.Session) error {
		n++
		if ss.ConversationID == "" {
			noConv++
		} else if i, ok := slices.BinarySearch(ids, ss.ConversationID); ok {
			perConv[i]++
		}
		if life && len(list) < maxTracked {
			seen := seenSession{id: ss.ID}
			if ss.Start != nil {
				seen.start = *ss.Start
			}
			list = append(list, seen)
		}
		return nil
	})
	r.listedAt = e.now()
	r.sessErr = err
	e.logFailure(st, client.EndpointSessions, err)
	if err == nil {
		r.sessions, r.noConv, r.convIDs, r.perConv, r.list = n, noConv, ids, perConv, list
	}
}

// logFailure logs a failed call at debug level.
func (e *Exporter) logFailure(st *appState, endpoint string, err error) {
	if err != nil {
		level.Debug(e.logger).Log("msg", "platform call failed", "app", st.name, "endpoint", endpoint, "reason", client.Reason(err), "err", err)
	}
}

// land records the result of f and ends it.
func (e *Exporter) land(f *flight) {
	e.flights.mu.Lock()
	defer e.flights.mu.Unlock()
	f.res.duration = time.Since(f.res.begun)
	f.st.record(f.res)
	e.end(f)
}

// end removes f from the flights under way; callers hold flights.mu.
func (e *Exporter) end(f *flight) {
	if e.flights.m[f.st] == f {
		delete(e.flights.m, f.st)
	}
	close(f.done)
}
