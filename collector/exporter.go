// Package collector turns the platform's answers into Prometheus metrics. An
// Exporter holds the per-app state that outlives a scrape (conversation
// details, error counts, the last result); each scrape gets its own
// prometheus.Collector bound to the scrape's deadline.
package collector

import (
	"context"
	"fmt"
	"sort"
	"sync"
	"time"

	"github.com/go-kit/log"
	"github.com/go-kit/log/level"
	"github.com/prometheus/client_golang/prometheus"
	"golang.org/x/sync/singleflight"

	"github.com/duix-exporter/duix_exporter/client"
	"github.com/duix-exporter/duix_exporter/config"
)

// Options configure an Exporter.
type Options struct {
	Logger log.Logger
	// Metrics instruments the platform client (shared across reloads).
	Metrics *client.Metrics
	// UserAgent is sent with every upstream request.
	UserAgent string
	// Now is the clock (nil: time.Now).
	Now func() time.Time
}

// Exporter collects the metrics of the configured apps.
type Exporter struct {
	logger    log.Logger
	metrics   *client.Metrics
	userAgent string
	now       func() time.Time

	flights singleflight.Group
	shared  *prometheus.CounterVec

	mu    sync.RWMutex
	cfg   *config.Config
	pool  *client.Pool
	apps  []*appState          // in configuration order
	byKey map[string]*appState // by name
}

// New returns an Exporter with no apps; call Apply with a configuration.
func New(opts Options) *Exporter {
	if opts.Logger == nil {
		opts.Logger = log.NewNopLogger()
	}
	if opts.Now == nil {
		opts.Now = time.Now
	}
	return &Exporter{
		logger:    opts.Logger,
		metrics:   opts.Metrics,
		userAgent: opts.UserAgent,
		now:       opts.Now,
		shared: prometheus.NewCounterVec(prometheus.CounterOpts{
			Name: "duix_exporter_shared_fetches_total",
			Help: "Per-app fetches that reused another scrape's work instead of calling the platform: how=\"in_flight\" joined a concurrent scrape's calls, how=\"cached\" reused a result younger than api.min_interval.",
		}, []string{"how"}),
		byKey: map[string]*appState{},
	}
}

// Register registers the exporter's own process-wide metrics.
func (e *Exporter) Register(reg prometheus.Registerer) error {
	for _, how := range []string{"in_flight", "cached"} {
		e.shared.WithLabelValues(how)
	}
	return reg.Register(e.shared)
}

// Apply switches to cfg: it builds new clients and keeps the state (error
// counts, conversation details) of apps whose name and app_id are unchanged.
func (e *Exporter) Apply(cfg *config.Config) error {
	pool, err := client.NewPool(cfg, client.PoolOptions{Metrics: e.metrics, UserAgent: e.userAgent, Now: e.now})
	if err != nil {
		return err
	}
	e.mu.Lock()
	defer e.mu.Unlock()
	apps := make([]*appState, 0, len(cfg.Apps))
	byKey := make(map[string]*appState, len(cfg.Apps))
	for _, a := range cfg.Apps {
		st := e.byKey[a.Name]
		if st == nil || st.appID != a.AppID {
			st = newAppState(a.Name, a.AppID)
		}
		st.configure(pool.Client(a.Name), a.Conversations)
		apps = append(apps, st)
		byKey[a.Name] = st
	}
	old := e.pool
	e.cfg, e.pool, e.apps, e.byKey = cfg, pool, apps, byKey
	if old != nil {
		old.Close()
	}
	return nil
}

// AppNames lists the configured apps in configuration order.
func (e *Exporter) AppNames() []string {
	e.mu.RLock()
	defer e.mu.RUnlock()
	names := make([]string, len(e.apps))
	for i, a := range e.apps {
		names[i] = a.name
	}
	return names
}

// HasApp reports whether name is a configured app.
func (e *Exporter) HasApp(name string) bool {
	e.mu.RLock()
	defer e.mu.RUnlock()
	return e.byKey[name] != nil
}

// Client returns the platform client of a configured app, or nil.
func (e *Exporter) Client(name string) *client.Client {
	e.mu.RLock()
	defer e.mu.RUnlock()
	if st := e.byKey[name]; st != nil {
		return st.client()
	}
	return nil
}

// snapshot returns the apps to scrape (all when names is empty) and the
// settings in force.
func (e *Exporter) snapshot(names []string) ([]*appState, config.API) {
	e.mu.RLock()
	defer e.mu.RUnlock()
	if e.cfg == nil {
		return nil, config.API{}
	}
	if len(names) == 0 {
		return append([]*appState(nil), e.apps...), e.cfg.API
	}
	out := make([]*appState, 0, len(names))
	for _, n := range names {
		if st := e.byKey[n]; st != nil {
			out = append(out, st)
		}
	}
	return out, e.cfg.API
}

// Collector returns a collector for one scrape of the named apps (all when
// names is empty), bounded by ctx.
func (e *Exporter) Collector(ctx context.Context, names ...string) prometheus.Collector {
	return &scrape{e: e, ctx: ctx, names: names}
}

// Status is what the exporter last learnt about an app, for people.
type Status struct {
	Name           string
	AppID          string
	LastScrape     time.Time
	Duration       time.Duration
	Up             bool
	InUse, Limit   int64
	HasConcurrency bool
	ActiveSessions int
	HasSessions    bool
	LastError      string
}

// Statuses returns the last result of every configured app.
func (e *Exporter) Statuses() []Status {
	apps, _ := e.snapshot(nil)
	out := make([]Status, 0, len(apps))
	for _, st := range apps {
		out = append(out, st.status())
	}
	return out
}

// fetch returns a fresh result for an app, sharing a call in flight for the
// same app and reusing a result younger than min_interval.
func (e *Exporter) fetch(ctx context.Context, st *appState, api config.API) *result {
	if mi := time.Duration(api.MinInterval); mi > 0 {
		if r := st.lastResult(); r != nil && e.now().Sub(r.at) < mi {
			e.shared.WithLabelValues("cached").Inc()
			return r
		}
	}
	leader := false
	ch := e.flights.DoChan(st.key(), func() (any, error) {
		leader = true
		return e.fetchNow(ctx, st, api), nil
	})
	select {
	case res := <-ch:
		return e.joined(res, leader)
	case <-ctx.Done():
	}
	// Out of time. When this scrape leads the flight, its calls end now too
	// and their outcome (timeouts) arrives at once; when it joined a
	// flight with a later deadline, it stops waiting.
	select {
	case res := <-ch:
		return e.joined(res, leader)
	case <-time.After(flightGrace):
		err := &client.TimeoutError{Endpoint: "scrape", Err: ctx.Err()}
		return &result{at: e.now(), concErr: err, sessErr: err}
	}
}

// flightGrace is how long a scrape that ran out of time still waits for
// the calls it leads to report their timeouts.
const flightGrace = 100 * time.Millisecond

func (e *Exporter) joined(res singleflight.Result, leader bool) *result {
	if !leader {
		e.shared.WithLabelValues("in_flight").Inc()
	}
	return res.Val.(*result)
}

// fetchNow calls the platform for one app: concurrency and sessions at once,
// and the conversations that are due for a refresh.
func (e *Exporter) fetchNow(ctx context.Context, st *appState, api config.API) *result {
	c := st.client()
	start := time.Now()
	r := &result{at: e.now()}
	var wg sync.WaitGroup
	wg.Add(2)
	go func() {
		defer wg.Done()
		r.conc, r.concErr = c.Concurrency(ctx)
	}()
	go func() {
		defer wg.Done()
		perConv := map[string]int{}
		n := 0
		r.sessErr = c.EachSession(ctx, client.SessionOptions{}, func(s client.Session) error {
			n++
			if s.ConversationID != "" {
				perConv[s.ConversationID]++
			}
			return nil
		})
		if r.sessErr == nil {
			r.sessions, r.perConv = n, perConv
		}
	}()
	e.refreshConversations(ctx, st, api, c)
	wg.Wait()
	r.duration = time.Since(start)

	st.record(r, e.now())
	for _, f := range []struct {
		endpoint string
		err      error
	}{{client.EndpointConcurrency, r.concErr}, {client.EndpointSessions, r.sessErr}} {
		if f.err != nil {
			level.Debug(e.logger).Log("msg", "platform call failed", "app", st.name, "endpoint", f.endpoint, "reason", client.Reason(f.err), "err", f.err)
		}
	}
	return r
}

// conversationRetry bounds how soon a failed conversation refresh is retried.
const conversationRetry = time.Minute

func (e *Exporter) refreshConversations(ctx context.Context, st *appState, api config.API, c *client.Client) {
	due := st.dueConversations(e.now(), time.Duration(api.ConversationRefresh), conversationRetry)
	if len(due) == 0 {
		return
	}
	var wg sync.WaitGroup
	for _, id := range due {
		wg.Add(1)
		go func() {
			defer wg.Done()
			conv, err := c.Conversation(ctx, id)
			if err != nil {
				level.Debug(e.logger).Log("msg", "conversation refresh failed", "app", st.name, "conversation_id", id, "reason", client.Reason(err), "err", err)
			}
			st.recordConversation(id, conv, err, e.now())
		}()
	}
	wg.Wait()
}

// result is one fetch of an app.
type result struct {
	at       time.Time
	duration time.Duration
	conc     *client.Concurrency
	concErr  error
	sessions int
	perConv  map[string]int
	sessErr  error
}

func (r *result) up() bool { return r.concErr == nil && r.sessErr == nil }

func (r *result) firstErr() error {
	if r.concErr != nil {
		return r.concErr
	}
	return r.sessErr
}

// conversation is the last known details of a configured conversation.
type conversation struct {
	id          string
	details     *client.Conversation
	refreshed   time.Time // last success
	lastAttempt time.Time
	lastErr     error
}

type errKey struct{ endpoint, reason string }

// appState is what outlives a scrape for one app.
type appState struct {
	name, appID string

	mu            sync.Mutex
	c             *client.Client
	conversations []*conversation
	errors        map[errKey]uint64
	last          *result
	corpID        string
}

func newAppState(name, appID string) *appState {
	return &appState{name: name, appID: appID, errors: map[errKey]uint64{}}
}

func (st *appState) key() string { return st.name + "\x00" + st.appID }

func (st *appState) client() *client.Client {
	st.mu.Lock()
	defer st.mu.Unlock()
	return st.c
}

// configure sets the client and the watched conversations, keeping the
// details already known for conversations that stay.
func (st *appState) configure(c *client.Client, ids []string) {
	st.mu.Lock()
	defer st.mu.Unlock()
	st.c = c
	// Every error series starts at 0, so that the first failure is seen
	// by rate() and increase().
	endpoints := []string{client.EndpointConcurrency, client.EndpointSessions}
	if len(ids) > 0 {
		endpoints = append(endpoints, client.EndpointConversation)
	}
	for _, ep := range endpoints {
		for _, reason := range client.Reasons {
			k := errKey{ep, reason}
			st.errors[k] = st.errors[k]
		}
	}
	known := map[string]*conversation{}
	for _, cv := range st.conversations {
		known[cv.id] = cv
	}
	st.conversations = st.conversations[:0:0]
	for _, id := range ids {
		cv := known[id]
		if cv == nil {
			cv = &conversation{id: id}
		}
		st.conversations = append(st.conversations, cv)
	}
}

func (st *appState) dueConversations(now time.Time, refresh, retry time.Duration) []string {
	st.mu.Lock()
	defer st.mu.Unlock()
	var due []string
	for _, cv := range st.conversations {
		switch {
		case cv.lastAttempt.IsZero():
		case cv.lastErr != nil && now.Sub(cv.lastAttempt) >= min(retry, refresh):
		case now.Sub(cv.refreshed) >= refresh && now.Sub(cv.lastAttempt) >= min(retry, refresh):
		default:
			continue
		}
		cv.lastAttempt = now // claim it, so concurrent fetches do not repeat it
		due = append(due, cv.id)
	}
	return due
}

func (st *appState) recordConversation(id string, details *client.Conversation, err error, now time.Time) {
	st.mu.Lock()
	defer st.mu.Unlock()
	if err != nil {
		st.errors[errKey{client.EndpointConversation, client.Reason(err)}]++
	}
	for _, cv := range st.conversations {
		if cv.id != id {
			continue
		}
		cv.lastErr = err
		if err == nil {
			cv.details, cv.refreshed = details, now
		}
	}
}

func (st *appState) record(r *result, now time.Time) {
	st.mu.Lock()
	defer st.mu.Unlock()
	st.last = r
	if r.concErr != nil {
		st.errors[errKey{client.EndpointConcurrency, client.Reason(r.concErr)}]++
	} else if r.conc != nil {
		st.corpID = r.conc.CropID
	}
	if r.sessErr != nil {
		st.errors[errKey{client.EndpointSessions, client.Reason(r.sessErr)}]++
	}
}

func (st *appState) lastResult() *result {
	st.mu.Lock()
	defer st.mu.Unlock()
	return st.last
}

// view is a consistent copy of an app's state for one collection.
type view struct {
	corpID        string
	errors        []errCount
	conversations []conversation
}

type errCount struct {
	errKey
	n uint64
}

func (st *appState) view() view {
	st.mu.Lock()
	defer st.mu.Unlock()
	v := view{corpID: st.corpID}
	for k, n := range st.errors {
		v.errors = append(v.errors, errCount{k, n})
	}
	sort.Slice(v.errors, func(i, j int) bool {
		if v.errors[i].endpoint != v.errors[j].endpoint {
			return v.errors[i].endpoint < v.errors[j].endpoint
		}
		return v.errors[i].reason < v.errors[j].reason
	})
	for _, cv := range st.conversations {
		v.conversations = append(v.conversations, *cv)
	}
	return v
}

func (st *appState) status() Status {
	st.mu.Lock()
	defer st.mu.Unlock()
	s := Status{Name: st.name, AppID: st.appID}
	r := st.last
	if r == nil {
		return s
	}
	s.LastScrape, s.Duration, s.Up = r.at, r.duration, r.up()
	if r.conc != nil {
		s.InUse, s.Limit, s.HasConcurrency = r.conc.UserConcurrentNumber, r.conc.TotalConcurrentNumber, true
	}
	if r.sessErr == nil {
		s.ActiveSessions, s.HasSessions = r.sessions, true
	}
	if err := r.firstErr(); err != nil {
		s.LastError = fmt.Sprintf("%s: %v", client.Reason(err), err)
	}
	return s
}
