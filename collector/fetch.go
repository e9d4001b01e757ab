package collector

import (
	"context"
	"sync"
	"sync/atomic"
	"time"

	"github.com/go-kit/log/level"
	"golang.org/x/sync/singleflight"

	"github.com/duix-exporter/duix_exporter/client"
)

// Fetching is shared between the requests (/metrics, /probe) that want an
// app at the same time. For each app, a request:
//   - reuses the last result when it is younger than api.min_interval
//     (counted how="cached"), or when it landed after the request arrived:
//     those calls were under way or begun since, as fresh as a call the
//     request would make (how="in_flight");
//   - else joins the app's fetch under way or starts one, through the app's
//     singleflight.Group (how="in_flight" when another request started it).
//
// A fetch runs on a context of its own, not on that of the request that
// started it, and always runs to its end, each call bounded by api.timeout:
// a request leaves at its own deadline (or when its client goes away) and
// reports the app down for itself alone, while the fetch goes on for the
// others and records the platform's own outcome. So no client, however
// short its deadline, can make the exporter count an error, cancel a call
// others wait for, or hand them an outcome that was not the platform's.
//
// Every call to the platform holds a slot of the semaphore of
// api.max_concurrency, across apps and requests. A request fetches as many
// apps at once as it has slots; so a fetch nobody waits for any more still
// finishes, but a request out of time starts no other.

// conversationRetry bounds how soon a failed conversation refresh is retried.
const conversationRetry = time.Minute

// scrapeIDs numbers the scrapes, to tell which one made a fetch's calls.
var scrapeIDs atomic.Uint64

// fetchAll fetches apps, as many at once as there are slots, and hands
// each app's result to each as soon as it is there, nil for an app the
// request left or never started because its ctx ended.
func (e *Exporter) fetchAll(ctx context.Context, s *scrape, apps []*appState, set settings, each func(*appState, *result)) {
	type fetched struct {
		st *appState
		r  *result
	}
	out := make(chan fetched, len(apps)) // the workers never wait for each
	var next atomic.Int64
	for range min(set.workers, len(apps)) {
		go func() {
			for i := next.Add(1) - 1; i < int64(len(apps)); i = next.Add(1) - 1 {
				out <- fetched{apps[i], e.fetch(ctx, s, apps[i], set)}
			}
		}()
	}
	for range apps {
		f := <-out
		each(f.st, f.r)
	}
}

// fetch returns the result of st for the scrape s, or nil when ctx ended
// first.
func (e *Exporter) fetch(ctx context.Context, s *scrape, st *appState, set settings) *result {
	if r := e.reuse(st, s.arrived, set); r != nil {
		return r
	}
	if ctx.Err() != nil {
		return nil
	}
	ch := st.flights.DoChan("", func() (any, error) { return e.fly(st, set, s), nil })
	var res singleflight.Result
	select {
	case res = <-ch:
	case <-ctx.Done():
		select { // a result already there is used
		case res = <-ch:
		default:
			return nil // left: the fetch goes on for the others
		}
	}
	r := res.Val.(*result)
	if r.by != s.id {
		e.shared.WithLabelValues("in_flight").Inc()
	}
	return r
}

// reuse returns the last result of st when the scrape arrived at arrived
// may use it as it is.
func (e *Exporter) reuse(st *appState, arrived time.Time, set settings) *result {
	r := st.lastResult()
	switch {
	case r == nil:
		return nil
	case set.api.MinInterval > 0 && e.now().Sub(r.started) < time.Duration(set.api.MinInterval):
		e.shared.WithLabelValues("cached").Inc()
	case !r.landed.Before(arrived):
		e.shared.WithLabelValues("in_flight").Inc()
	default:
		return nil
	}
	return r
}

// fly makes the calls of one fetch of st for the scrape s, which started
// it, and records the outcome: getconcurrentNumber, any conversation due
// for a refresh and getconcurrentList, each on a slot of its own.
func (e *Exporter) fly(st *appState, set settings, s *scrape) *result {
	if r := st.lastResult(); r != nil && !r.landed.Before(s.arrived) {
		return r // landed since s looked, before this fetch began
	}
	st.mu.Lock()
	c, convs, life, maxTracked := st.c, make(map[string]int, len(st.conversations)), st.life != nil, st.maxTracked
	for _, cv := range st.conversations {
		convs[cv.id] = 0
	}
	st.mu.Unlock()
	r := &result{by: s.id, started: e.now()}
	begun := time.Now()
	var wg sync.WaitGroup
	for _, id := range st.due(r.started, time.Duration(set.api.ConversationRefresh), conversationRetry) {
		wg.Go(func() {
			var conv *client.Conversation
			err := e.call(st, c, set, client.EndpointConversation, func(ctx context.Context) (err error) {
				conv, err = c.Conversation(ctx, id)
				return err
			})
			st.recordConversation(id, conv, err, e.now())
		})
	}
	wg.Go(func() {
		r.concErr = e.call(st, c, set, client.EndpointConcurrency, func(ctx context.Context) (err error) {
			r.conc, err = c.Concurrency(ctx)
			return err
		})
	})
	var list []seenSession
	if life {
		list = []seenSession{}
	}
	n, noConv := 0, 0
	err := e.call(st, c, set, client.EndpointSessions, func(ctx context.Context) error {
		return c.EachSession(ctx, client.SessionOptions{}, func(ss client.Session) error {
			n++
			if _, ok := convs[ss.ConversationID]; ok {
				convs[ss.ConversationID]++
			} else if ss.ConversationID == "" {
				noConv++
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
	})
	listedAt := e.now()
	if r.sessErr = err; err == nil {
		r.sessions, r.noConv, r.perConv = n, noConv, convs
	} else {
		list = nil
	}
	wg.Wait()
	r.duration, r.landed = time.Since(begun), time.Now()
	st.record(r, list, listedAt)
	return r
}

// call makes one call to the platform on a slot of set's semaphore, bounded
// by api.timeout; not while a Retry-After of the platform applies.
func (e *Exporter) call(st *appState, c *client.Client, set settings, endpoint string, do func(context.Context) error) error {
	_ = set.sem.Acquire(context.Background(), 1) // only fails when its context ends
	defer set.sem.Release(1)
	err := error(nil)
	if until := c.RetryAfter(); !until.IsZero() {
		err = &skipped{endpoint: endpoint, until: until}
	} else {
		ctx, cancel := context.WithTimeout(context.Background(), time.Duration(set.api.Timeout))
		err = do(ctx)
		cancel()
	}
	if err != nil {
		level.Debug(e.logger).Log("msg", "platform call failed", "app", st.name, "endpoint", endpoint, "reason", reason(err), "err", err)
	}
	return err
}
