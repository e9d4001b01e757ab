package collector

import (
	"context"
	"slices"
	"sync"
	"time"

	"github.com/go-kit/log/level"
	"golang.org/x/sync/errgroup"

	"github.com/duix-exporter/duix_exporter/client"
)

// Fetching is shared between the requests (/metrics, /probe) that want an
// app at the same time. For each app a request, in order:
//   - reuses the last result when it is younger than api.min_interval, or
//     when its calls began after the request arrived (it is as fresh as a
//     call the request would make);
//   - else joins the app's flight, the calls under way for another request;
//   - else waits for a share of api.max_concurrency and starts a flight.
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

// flight is one fetch of an app. Its fields are guarded by flights.mu.
type flight struct {
	st   *appState
	res  *result
	done chan struct{} // closed when landed
	// Calls not yet returned.
	concPending, sessPending bool
	convPending              int
}

// fetchAll returns the result of each app, in the order of apps.
func (e *Exporter) fetchAll(ctx context.Context, apps []*appState, s settings) []*result {
	arrived := time.Now()
	results := make([]*result, len(apps))
	joined := make([]*flight, len(apps))
	for i, st := range apps {
		if results[i], joined[i] = e.join(st, arrived, s, 0); results[i] != nil || joined[i] != nil {
			continue
		}
		// Wait for a share of max_concurrency (a slot per call, as far as
		// the limit allows), then look again: another request may have
		// fetched the app meanwhile.
		slots := min(int64(2+len(e.due(st, s, false))), s.limit)
		if err := s.sem.Acquire(ctx, slots); err != nil {
			break // out of time: the apps left are not fetched for this request
		}
		results[i], joined[i] = e.join(st, arrived, s, slots)
	}
	// Wait in order; out of time, leave the flights not done.
	for i, f := range joined {
		if f == nil {
			continue
		}
		select {
		case <-f.done:
			results[i] = f.res
		case <-ctx.Done():
			// Out of time: a flight already done is still used (select
			// picks at random among ready cases); one still under way is
			// left, and the app reported down below, for this request only.
			select {
			case <-f.done:
				results[i] = f.res
			default:
			}
		}
	}
	for i, r := range results {
		if r == nil {
			// Not fetched in time, or left: down for this request only.
			err := &client.TimeoutError{Endpoint: "scrape", Err: ctx.Err()}
			results[i] = &result{started: e.now(), duration: time.Since(arrived), concErr: err, sessErr: err}
		}
	}
	return results
}

// join returns a result the request can use as it is, or the flight under
// way that it joined. Failing both, with slots (the caller holds that many
// of s.sem) it starts a flight, which releases them when its calls are
// done; without, it returns neither.
func (e *Exporter) join(st *appState, arrived time.Time, s settings, slots int64) (*result, *flight) {
	e.flights.mu.Lock()
	defer e.flights.mu.Unlock()
	r, f := e.reuse(st, arrived, s)
	switch {
	case r != nil || f != nil:
		if slots > 0 {
			s.sem.Release(slots)
		}
		return r, f
	case slots > 0:
		return nil, e.start(st, s, slots)
	}
	return nil, nil
}

// due returns the conversations of st due for a refresh, claiming them
// with claim.
func (e *Exporter) due(st *appState, s settings, claim bool) []string {
	return st.due(e.now(), time.Duration(s.api.ConversationRefresh), conversationRetry, claim)
}

// reuse returns a result the request can use as it is, or the flight it
// joined; callers hold flights.mu.
func (e *Exporter) reuse(st *appState, arrived time.Time, s settings) (*result, *flight) {
	if r := st.lastResult(); r != nil {
		if mi := time.Duration(s.api.MinInterval); mi > 0 && e.now().Sub(r.started) < mi {
			e.shared.WithLabelValues("cached").Inc()
			return r, nil
		}
		if !r.begun.Before(arrived) {
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

// start starts a flight for st, which runs at most slots calls at once
// and releases them from s.sem when its calls are done; the caller, its
// first requester, holds flights.mu.
func (e *Exporter) start(st *appState, s settings, slots int64) *flight {
	ctx, cancel := context.WithCancel(context.Background()) // every call is bounded by api.timeout
	due := e.due(st, s, true)
	f := &flight{
		st: st, res: &result{started: e.now(), begun: time.Now()}, done: make(chan struct{}),
		concPending: true, sessPending: true, convPending: len(due),
	}
	e.flights.m[st] = f

	c, ids, life, maxTracked := st.fetchSettings()
	go func() {
		defer s.sem.Release(slots)
		defer cancel()
		var g errgroup.Group
		g.SetLimit(int(slots))
		g.Go(func() error {
			conc, err := c.Concurrency(ctx)
			e.complete(f, func(r *result) { r.conc, r.concErr, f.concPending = conc, err, false }, client.EndpointConcurrency, err)
			return nil
		})
		g.Go(func() error {
			n, noConv, perConv := 0, 0, map[string]int{}
			var list []seenSession
			if life {
				list = []seenSession{}
			}
			err := c.EachSession(ctx, client.SessionOptions{}, func(ss client.Session) error {
				n++
				if ss.ConversationID == "" {
					noConv++
				} else if _, ok := slices.BinarySearch(ids, ss.ConversationID); ok {
					perConv[ss.ConversationID]++
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
			listedAt := e.now()
			e.complete(f, func(r *result) {
				r.sessErr, f.sessPending = err, false
				if err == nil {
					r.sessions, r.noConv, r.perConv, r.list, r.listedAt = n, noConv, perConv, list, listedAt
				}
			}, client.EndpointSessions, err)
			return nil
		})
		for _, id := range due {
			g.Go(func() error {
				conv, err := c.Conversation(ctx, id)
				e.complete(f, func(*result) {
					f.convPending--
					st.recordConversation(id, conv, err, e.now())
				}, client.EndpointConversation, err)
				return nil
			})
		}
		_ = g.Wait()
	}()
	return f
}

// complete keeps the outcome of one call of f, and lands f after its last
// call.
func (e *Exporter) complete(f *flight, keep func(*result), endpoint string, err error) {
	e.flights.mu.Lock()
	defer e.flights.mu.Unlock()
	if err != nil {
		level.Debug(e.logger).Log("msg", "platform call failed", "app", f.st.name, "endpoint", endpoint, "reason", client.Reason(err), "err", err)
	}
	keep(f.res)
	if f.concPending || f.sessPending || f.convPending > 0 {
		return
	}
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
