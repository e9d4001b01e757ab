package collector

import (
	"context"
	"slices"
	"sync"
	"time"

	"github.com/go-kit/log/level"

	"github.com/duix-exporter/duix_exporter/client"
)

// Requests (/metrics, /probe) that want an app at the same time share its fetch: a request reuses the app's last result
// when it is younger than api.min_interval (how="cached") or landed after the request arrived (how="in_flight"), else
// joins the fetch under way, or starts one, through the exporter's singleflight.Group (how="in_flight" when it joined). A
// fetch runs to its end, each call bounded by api.timeout and holding a slot of api.max_concurrency; a request leaves
// at its own deadline and reports the app down for itself alone, while the fetch goes on for the others and records the
// platform's own outcome: no client can make the exporter count an error.

// fetch returns the result of st for s, nil when s.ctx ended first.
func (s *Scrape) fetch(st *appState, set settings) *result {
	r, flying := st.lastResult()
	switch {
	case s.fetched: // found by Fetch, and counted then
		return s.got[st]
	case r != nil && set.api.MinInterval > 0 && s.e.opts.Now().Sub(r.started) < time.Duration(set.api.MinInterval):
		s.e.shared.WithLabelValues("cached").Inc()
		return r
	case r != nil && !r.landed.Before(s.arrived):
		s.e.shared.WithLabelValues("in_flight").Inc()
		return r
	case s.ctx.Err() != nil:
		return nil
	case flying: // joins it (or reuses it, landed since)
		s.e.shared.WithLabelValues("in_flight").Inc()
	}
	mine := false // this request's function makes the calls
	ch := s.e.flights.DoChan(st.key, func() (any, error) { mine = true; return s.e.fly(st, set, s.arrived), nil })
	select {
	case res := <-ch:
		if !mine && !flying { // joined a fetch that had not begun its calls
			s.e.shared.WithLabelValues("in_flight").Inc()
		}
		return res.Val.(*result)
	case <-s.ctx.Done(): // left: the fetch goes on for the others
		if r, _ := st.lastResult(); r != nil && !r.landed.Before(s.arrived) {
			return r // landed as the request left
		}
		return nil
	}
}

// fly makes the calls of a fetch of st, each on a slot: getconcurrentNumber and getconcurrentList,
// whose outcome it records, and a refresh of the conversations due (unless one is under way), then waited for.
func (e *Exporter) fly(st *appState, set settings, arrived time.Time) *result {
	st.mu.Lock()
	if r := st.last; r != nil && !r.landed.Before(arrived) {
		st.mu.Unlock()
		return r // landed after the request looked, before this fetch began
	}
	st.flying = true
	c, life, maxTracked, convIDs, perConv := st.c, st.life != nil, st.maxTracked, st.convIDs, make([]int, len(st.convIDs))
	st.mu.Unlock()
	r, begun := &result{started: e.opts.Now()}, time.Now()
	var wg, refresh sync.WaitGroup
	if due := st.due(r.started, time.Duration(set.api.ConversationRefresh), time.Minute); len(due) > 0 {
		refresh.Go(func() { // a flight of its own, one at a time: an app's calls hold at most three slots
			<-e.flights.DoChan(st.key+"r", func() (any, error) {
				for _, id := range due {
					var conv *conversationDetails
					err := e.call(st, set, client.EndpointConversation, func(ctx context.Context) (err error) {
						if conv, err = client.GetConversation[conversationDetails](ctx, c, id); err == nil && (conv.MaxConversation == nil || *conv.MaxConversation < 0) {
							err = &client.Error{Endpoint: client.EndpointConversation, App: st.name, Reason: client.ReasonDecode} // never a made-up 0, nor one below 0
						}
						return err
					})
					st.recordConversation(id, conv, err, e.opts.Now())
				}
				return nil, nil
			})
		})
	}
	wg.Go(func() {
		r.concErr = e.call(st, set, client.EndpointConcurrency, func(ctx context.Context) (err error) {
			r.conc, err = c.Concurrency(ctx)
			return err
		})
	})
	var list []seenSession // the start of the list, for the lifecycle
	if life {
		list = []seenSession{}
	}
	n, noConv, cut := 0, 0, false // cut: a session the lifecycle would follow was left out, over max_tracked
	r.sessErr = e.call(st, set, client.EndpointSessions, func(ctx context.Context) error {
		return c.EachSession(ctx, client.SessionOptions{}, func(ss client.Session) error {
			n++
			if i := slices.Index(convIDs, ss.ConversationID); i >= 0 {
				perConv[i]++
			} else if ss.ConversationID == "" {
				noConv++
			}
			if life && ss.ID != "" && len(ss.ID) <= 256 { // without one, or a longer one, it is counted, not kept
				if cut = len(list) >= maxTracked; !cut {
					list = append(list, seenSession{id: ss.ID})
					if ss.Start != nil {
						list[len(list)-1].start = *ss.Start
					}
				}
			}
			return nil
		})
	})
	if r.sessErr == nil {
		r.sessions, r.noConv, r.convIDs, r.perConv = n, noConv, convIDs, perConv
	}
	wg.Wait()
	r.duration = time.Since(begun)
	st.record(&e.flights, r, list, cut, e.opts.Now()) // a request leaving at its deadline takes r, however long the refresh
	refresh.Wait()
	return r
}

// call makes one call to the platform on a slot of set.sem (the client makes none while the platform's Retry-After
// applies, across reloads, and bounds each by api.timeout).
func (e *Exporter) call(st *appState, set settings, endpoint string, do func(context.Context) error) error {
	_ = set.sem.Acquire(context.Background(), 1) // fails only when its context ends
	defer set.sem.Release(1)
	err := do(context.Background())
	if err != nil {
		level.Debug(e.opts.Logger).Log("msg", "platform call failed", "app", st.name, "endpoint", endpoint, "reason", client.Reason(err), "err", err)
	}
	return err
}
