// Package collector turns the platform's answers into Prometheus metrics. An
// Exporter holds the per-app state that outlives a scrape (conversation
// details, error counts, the last result); each scrape gets its own
// prometheus.Collector bound to the scrape's deadline.
package collector

import (
	"context"
	"fmt"
	"slices"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/go-kit/log"
	"github.com/go-kit/log/level"
	"github.com/prometheus/client_golang/prometheus"
	dto "github.com/prometheus/client_model/go"

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

	shared                       *prometheus.CounterVec
	sharedInFlight, sharedCached prometheus.Counter

	work     workQueue
	flightMu sync.Mutex
	flights  map[*appState]*flight

	mu     sync.RWMutex
	cfg    *config.Config
	pool   *client.Pool
	apps   []*appState          // in configuration order
	sorted []*appState          // in name order
	byKey  map[string]*appState // by name
}

// New returns an Exporter with no apps; call Apply with a configuration.
func New(opts Options) *Exporter {
	if opts.Logger == nil {
		opts.Logger = log.NewNopLogger()
	}
	if opts.Now == nil {
		opts.Now = time.Now
	}
	e := &Exporter{
		logger:    opts.Logger,
		metrics:   opts.Metrics,
		userAgent: opts.UserAgent,
		now:       opts.Now,
		shared: prometheus.NewCounterVec(prometheus.CounterOpts{
			Name: "duix_exporter_shared_fetches_total",
			Help: "Per-app fetches that reused another scrape's work instead of calling the platform: how=\"in_flight\" joined a concurrent scrape's calls, how=\"cached\" reused a result younger than api.min_interval.",
		}, []string{"how"}),
		flights: map[*appState]*flight{},
		byKey:   map[string]*appState{},
	}
	e.sharedInFlight = e.shared.WithLabelValues("in_flight")
	e.sharedCached = e.shared.WithLabelValues("cached")
	e.work.setLimit(config.DefaultMaxConcurrency)
	return e
}

// Register registers the exporter's own process-wide metrics.
func (e *Exporter) Register(reg prometheus.Registerer) error {
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
	sorted := slices.Clone(apps)
	slices.SortFunc(sorted, func(a, b *appState) int { return strings.Compare(a.name, b.name) })
	e.work.setLimit(cfg.API.MaxConcurrency)
	old := e.pool
	e.cfg, e.pool, e.apps, e.sorted, e.byKey = cfg, pool, apps, sorted, byKey
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

// snapshot returns the apps to scrape (all when names is empty), in name
// order and without duplicates, and the settings in force. The slice
// returned for all apps is shared: read only.
func (e *Exporter) snapshot(names []string) ([]*appState, config.API) {
	e.mu.RLock()
	defer e.mu.RUnlock()
	if e.cfg == nil {
		return nil, config.API{}
	}
	if len(names) == 0 {
		return e.sorted, e.cfg.API
	}
	out := make([]*appState, 0, len(names))
	for _, n := range names {
		if st := e.byKey[n]; st != nil {
			out = append(out, st)
		}
	}
	slices.SortFunc(out, func(a, b *appState) int { return strings.Compare(a.name, b.name) })
	return slices.Compact(out), e.cfg.API
}

// gather fetches the named apps (all when names is empty) and returns
// their metric families, in name order.
func (e *Exporter) gather(ctx context.Context, names []string) []*dto.MetricFamily {
	apps, api := e.snapshot(names)
	b := newBuilder(len(apps))
	e.fetchAll(ctx, apps, api, b.add)
	return b.families()
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

// Statuses returns the last result of every configured app, in
// configuration order.
func (e *Exporter) Statuses() []Status {
	e.mu.RLock()
	apps := e.apps
	e.mu.RUnlock()
	out := make([]Status, 0, len(apps))
	for _, st := range apps {
		out = append(out, st.status())
	}
	return out
}

// fetchAll fetches the apps (in name order) and hands each result to emit
// in that order, as soon as it and those before it are in. An app whose
// calls are in flight for another scrape joins them; an app with a result
// younger than min_interval reuses it. The calls themselves are queued, in
// order, for at most max_concurrency workers: a scrape costs no goroutine
// per app, and a second scrape arriving while the first one's calls are
// still queued or running shares every one of them.
func (e *Exporter) fetchAll(ctx context.Context, apps []*appState, api config.API, emit func(*appState, *result)) {
	results := make([]*result, len(apps))
	flights := make([]*flight, len(apps))
	var tasks []func()
	mi := time.Duration(api.MinInterval)
	e.flightMu.Lock()
	for i, st := range apps {
		if mi > 0 {
			if r := st.lastResult(); r != nil && e.now().Sub(r.at) < mi {
				e.sharedCached.Inc()
				results[i] = r
				continue
			}
		}
		if f := e.flights[st]; f != nil {
			e.sharedInFlight.Inc()
			flights[i] = f
			continue
		}
		f := &flight{done: make(chan struct{}), res: &result{at: e.now()}}
		e.flights[st] = f
		flights[i] = f
		tasks = e.flightTasks(ctx, st, api, f, tasks)
	}
	e.flightMu.Unlock()
	e.work.push(tasks)

	// Wait in order. Out of time, a scrape still waits a little for the
	// calls it leads to report their timeouts; past that, or for calls it
	// joined that run on a later deadline, it stops waiting.
	var (
		grace   *time.Timer
		expired bool
	)
	defer func() {
		if grace != nil {
			grace.Stop()
		}
	}()
	for i, f := range flights {
		if f == nil {
			emit(apps[i], results[i])
			continue
		}
		var r *result
		if grace == nil {
			select {
			case <-f.done:
				r = f.res
			case <-ctx.Done():
				grace = time.NewTimer(flightGrace)
			}
		}
		if r == nil && !expired {
			select {
			case <-f.done:
				r = f.res
			case <-grace.C:
				expired = true
			}
		}
		if r == nil {
			select {
			case <-f.done:
				r = f.res
			default:
				err := &client.TimeoutError{Endpoint: "scrape", Err: ctx.Err()}
				r = &result{at: e.now(), concErr: err, sessErr: err}
			}
		}
		emit(apps[i], r)
	}
}

// flightGrace is how long a scrape that ran out of time still waits for
// the calls it leads to report their timeouts.
const flightGrace = 100 * time.Millisecond

// flight is one fetch of an app, shared by the scrapes that want the app
// while it runs.
type flight struct {
	done    chan struct{} // closed when res is complete
	res     *result
	pending atomic.Int64
	started atomic.Int64 // monotonic nanoseconds since epoch of the first call
}

// epoch anchors flight start times on the monotonic clock.
var epoch = time.Now()

func (f *flight) begin() { f.started.CompareAndSwap(0, int64(time.Since(epoch))) }

// flightTasks appends the calls of one fetch of an app: concurrency and
// sessions, and the conversations due for a refresh.
func (e *Exporter) flightTasks(ctx context.Context, st *appState, api config.API, f *flight, tasks []func()) []func() {
	c := st.client()
	due := st.dueConversations(e.now(), time.Duration(api.ConversationRefresh), conversationRetry)
	f.pending.Store(int64(2 + len(due)))
	finish := func() {
		if f.pending.Add(-1) == 0 {
			e.land(st, f)
		}
	}
	r := f.res
	tasks = append(tasks,
		func() {
			f.begin()
			r.conc, r.concErr = c.Concurrency(ctx)
			finish()
		},
		func() {
			f.begin()
			var perConv map[string]int
			n := 0
			r.sessErr = c.EachSession(ctx, client.SessionOptions{}, func(s client.Session) error {
				n++
				if s.ConversationID != "" {
					if perConv == nil {
						perConv = map[string]int{}
					}
					perConv[s.ConversationID]++
				}
				return nil
			})
			if r.sessErr == nil {
				r.sessions, r.perConv = n, perConv
			}
			finish()
		})
	for _, id := range due {
		tasks = append(tasks, func() {
			f.begin()
			conv, err := c.Conversation(ctx, id)
			if err != nil {
				level.Debug(e.logger).Log("msg", "conversation refresh failed", "app", st.name, "conversation_id", id, "reason", client.Reason(err), "err", err)
			}
			st.recordConversation(id, conv, err, e.now())
			finish()
		})
	}
	return tasks
}

// land completes a flight once its calls are done.
func (e *Exporter) land(st *appState, f *flight) {
	r := f.res
	r.duration = time.Duration(int64(time.Since(epoch)) - f.started.Load())
	st.record(r)
	for _, c := range []struct {
		endpoint string
		err      error
	}{{client.EndpointConcurrency, r.concErr}, {client.EndpointSessions, r.sessErr}} {
		if c.err != nil {
			level.Debug(e.logger).Log("msg", "platform call failed", "app", st.name, "endpoint", c.endpoint, "reason", client.Reason(c.err), "err", c.err)
		}
	}
	e.flightMu.Lock()
	if e.flights[st] == f {
		delete(e.flights, st)
	}
	e.flightMu.Unlock()
	close(f.done)
}

// conversationRetry bounds how soon a failed conversation refresh is retried.
const conversationRetry = time.Minute

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
	idPair      *dto.LabelPair
	known       bool              // details were fetched once
	maxConv     int               // maxConversation
	info        [4]*dto.LabelPair // language, model_name, name, tts_name
	refreshed   time.Time         // last success
	lastAttempt time.Time
	lastErr     error
}

type errKey struct{ endpoint, reason string }

// errCount is one series of duix_scrape_errors_total.
type errCount struct {
	key              errKey
	endpoint, reason *dto.LabelPair
	n                uint64
}

// appState is what outlives a scrape for one app. The label pairs of its
// series are built once and shared by every scrape.
type appState struct {
	name, appID string
	appPair     *dto.LabelPair
	appIDPair   *dto.LabelPair

	mu            sync.Mutex
	c             *client.Client
	conversations []*conversation // sorted by ID
	errs          []*errCount     // sorted by endpoint, then reason
	last          *result
	corpID        string
	corpPair      *dto.LabelPair
}

func newAppState(name, appID string) *appState {
	return &appState{
		name: name, appID: appID,
		appPair:   labelPair(&labelApp, name),
		appIDPair: labelPair(&labelAppID, appID),
		corpPair:  labelPair(&labelCorpID, ""),
	}
}

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
			st.errCounter(errKey{ep, reason})
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
			cv = &conversation{id: id, idPair: labelPair(&labelConversationID, id)}
		}
		st.conversations = append(st.conversations, cv)
	}
	slices.SortFunc(st.conversations, func(a, b *conversation) int { return strings.Compare(a.id, b.id) })
}

// errCounter returns the error series of k, adding it at its place.
// Callers hold st.mu.
func (st *appState) errCounter(k errKey) *errCount {
	i, found := slices.BinarySearchFunc(st.errs, k, func(ec *errCount, k errKey) int {
		if c := strings.Compare(ec.key.endpoint, k.endpoint); c != 0 {
			return c
		}
		return strings.Compare(ec.key.reason, k.reason)
	})
	if found {
		return st.errs[i]
	}
	ec := &errCount{key: k, endpoint: endpointPair(k.endpoint), reason: reasonPair(k.reason)}
	st.errs = slices.Insert(st.errs, i, ec)
	return ec
}

// conversation returns the configured conversation with that ID, or nil.
// Callers hold st.mu.
func (st *appState) conversation(id string) *conversation {
	i, found := slices.BinarySearchFunc(st.conversations, id, func(cv *conversation, id string) int { return strings.Compare(cv.id, id) })
	if !found {
		return nil
	}
	return st.conversations[i]
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
		st.errCounter(errKey{client.EndpointConversation, client.Reason(err)}).n++
	}
	cv := st.conversation(id)
	if cv == nil {
		return // no longer configured
	}
	cv.lastErr = err
	if err == nil {
		// Only what is exported is kept: the whole record is large.
		cv.known, cv.maxConv, cv.refreshed = true, details.MaxConversation, now
		cv.info = [4]*dto.LabelPair{
			labelPair(&labelLanguage, details.Language),
			labelPair(&labelModelName, details.DetailDto.ModelName),
			labelPair(&labelName, details.ConversationName),
			labelPair(&labelTTSName, details.DetailDto.TtsName),
		}
	}
}

func (st *appState) record(r *result) {
	st.mu.Lock()
	defer st.mu.Unlock()
	st.last = r
	if r.concErr != nil {
		st.errCounter(errKey{client.EndpointConcurrency, client.Reason(r.concErr)}).n++
	} else if r.conc != nil && r.conc.CropID != st.corpID {
		st.corpID = r.conc.CropID
		st.corpPair = labelPair(&labelCorpID, st.corpID)
	}
	if r.sessErr != nil {
		st.errCounter(errKey{client.EndpointSessions, client.Reason(r.sessErr)}).n++
	}
}

func (st *appState) lastResult() *result {
	st.mu.Lock()
	defer st.mu.Unlock()
	return st.last
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
