// Package janitor stops the sessions of an app that have gone on for too
// long when Alertmanager says so: it serves Alertmanager's webhook (payload
// version 4) on a listener of its own and, for a firing alert of the
// configured name (DuixSessionStuck) about an app that opted in, stops
// that app's sessions older than the app's janitor.max_session_age.
//
// Which sessions are old is decided by the exporter alone, from each
// record's start time or, for a record without one, from when the
// exporter first listed the session: never from a threshold or a session
// ID in the alert. Stops are bounded by janitor.max_stops_per_hour over
// every app together, each decision is logged and counted, and the last
// ones are kept for the landing page (docs/janitor.md).
package janitor

import (
	"context"
	"errors"
	"fmt"
	"net/http"
	"slices"
	"strings"
	"sync"
	"time"
	"unicode"
	"unicode/utf8"

	"github.com/go-kit/log"
	"github.com/go-kit/log/level"
	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/common/model"
	"golang.org/x/sync/semaphore"

	"github.com/duix-exporter/duix_exporter/client"
	"github.com/duix-exporter/duix_exporter/config"
)

// Source is what the janitor needs of the exporter (collector.Exporter
// provides both).
type Source interface {
	// AppClient returns the platform client of a configured app, nil for
	// an unknown one.
	AppClient(name string) *client.Client
	// FirstSeen returns when the session lifecycle first listed a session
	// of the app (ok false when it does not follow the session).
	FirstSeen(app, sessionID string) (time.Time, bool)
}

// Options configure a Janitor.
type Options struct {
	Source Source
	Logger log.Logger
	// Registerer gets the janitor's metrics (nil: not registered).
	Registerer prometheus.Registerer
	// Now is the clock of session ages and of the hourly budget (nil:
	// time.Now).
	Now func() time.Time
}

// Reasons of duix_janitor_refusals_total: why a session, or every session
// of an alert, was not stopped.
const (
	ReasonResolved       = "resolved"        // the alert is resolved
	ReasonOtherAlert     = "other_alert"     // the alert is not janitor.alert_name
	ReasonNoApp          = "no_app_label"    // the alert has no app label
	ReasonUnknownApp     = "unknown_app"     // the app label names no configured app
	ReasonNotOptedIn     = "not_opted_in"    // the app has no janitor section
	ReasonBudget         = "budget"          // janitor.max_stops_per_hour reached
	ReasonAlreadyStopped = "already_stopped" // stopped within the hour, or gone when stopped
	ReasonIDNotUTF8      = "id_not_utf8"     // its ID is not valid UTF-8: it cannot be sent back as the platform has it
)

// Reasons lists every refusal reason.
var Reasons = []string{ReasonResolved, ReasonOtherAlert, ReasonNoApp, ReasonUnknownApp, ReasonNotOptedIn, ReasonBudget, ReasonAlreadyStopped, ReasonIDNotUTF8}

// Outcomes of duix_janitor_webhook_requests_total.
const (
	OutcomeHandled          = "handled"            // 200: every alert decided (acted on or refused)
	OutcomeInvalid          = "invalid"            // 400: not a version 4 webhook payload
	OutcomeTooLarge         = "too_large"          // 413: over MaxPayloadBytes
	OutcomeUnknownApp       = "unknown_app"        // 422: a firing alert names no configured app; nothing done
	OutcomeMethodNotAllowed = "method_not_allowed" // 405: not a POST
	OutcomeFailed           = "failed"             // 502: listing or stopping failed; Alertmanager retries
	OutcomeAbandoned        = "abandoned"          // 503: the sender left while another webhook was handled; nothing done
	OutcomeBusy             = "busy"               // 503: MaxWaiting requests, or MaxHeldBytes, were already in; nothing done, Alertmanager retries
)

// Outcomes lists every outcome.
var Outcomes = []string{OutcomeHandled, OutcomeInvalid, OutcomeTooLarge, OutcomeUnknownApp, OutcomeMethodNotAllowed, OutcomeFailed, OutcomeAbandoned, OutcomeBusy}

// Actions of an Action.
const (
	ActionStopped   = "stopped"
	ActionWouldStop = "would_stop" // dry run
	ActionRefused   = "refused"
	ActionFailed    = "failed"
)

// Action is one decision of the janitor, as Recent returns it.
type Action struct {
	Time time.Time
	App  string
	// SessionID is empty for a decision about a whole alert.
	SessionID string
	// Age is the session's age by the exporter's knowledge (0 without a
	// session).
	Age    time.Duration
	Action string // ActionStopped, ActionWouldStop, ActionRefused or ActionFailed
	// Reason is a refusal reason (Reasons), or the client's reason class
	// of a failure.
	Reason string
	// Count is how many sessions the decision is about: 1, or more for a
	// refusal by the budget; for a refusal of alerts, how many alerts of
	// the request it refused.
	Count  int
	DryRun bool
}

const (
	// MaxPayloadBytes bounds a webhook request body.
	MaxPayloadBytes = 1 << 20
	// MaxWaiting bounds the webhook requests in (read, waiting for their
	// turn, or handled); more are answered 503 (busy).
	MaxWaiting = 64
	// MaxHeldBytes bounds the payloads the requests in read or hold, by
	// their Content-Length (MaxPayloadBytes without one); a request without
	// room is answered 503 (busy) before its body is read.
	MaxHeldBytes = 8 << 20
	// recentSize is how many actions Recent keeps.
	recentSize = 32
	// window is the span of the budget, and how long a stopped session
	// is remembered as stopped.
	window = time.Hour
	// maxLabelLog bounds a label value taken from a payload in logs and
	// answers.
	maxLabelLog = 128
)

// settings are what the janitor needs of the configuration in force.
type settings struct {
	config.Janitor
	known map[string]bool          // configured apps
	ages  map[string]time.Duration // apps opted in
}

// Janitor acts on Alertmanager's webhook. The methods of a nil *Janitor
// (the janitor off) are safe: Enabled is false and Recent empty.
type Janitor struct {
	src    Source
	logger log.Logger
	now    func() time.Time

	stopped, wouldStop *prometheus.CounterVec
	refusals, requests *prometheus.CounterVec
	turn               chan struct{}       // one webhook handled at a time
	waiting            chan struct{}       // the requests in, at most MaxWaiting
	budget             *semaphore.Weighted // of MaxHeldBytes
	mu                 sync.Mutex          // guards what follows
	set                settings
	// The stops of the last hour and the sessions stopped in it, of real
	// stops ([0]) and of the dry run's would-stops ([1]) apart: each mode
	// has its budget, kept while the other is on.
	stops   [2][]time.Time
	acted   [2]map[string]time.Time // app + "\x00" + session ID -> when stopped
	recent  []Action                // ring of the last recentSize
	next    int                     // where the ring writes next
	counted map[string]bool         // apps whose per-app series exist
}

// mode is the index of stops and acted for dry run or real stops.
func mode(dryRun bool) int {
	if dryRun {
		return 1
	}
	return 0
}

// New returns a Janitor with no app opted in: call Apply with a
// configuration (or subscribe it to config.SafeConfig). Its metrics are
// registered with o.Registerer.
func New(o Options) (*Janitor, error) {
	if o.Source == nil {
		return nil, errors.New("janitor: a Source is required")
	}
	if o.Logger == nil {
		o.Logger = log.NewNopLogger()
	}
	if o.Now == nil {
		o.Now = time.Now
	}
	j := &Janitor{
		src:    o.Source,
		logger: o.Logger,
		now:    o.Now,
		stopped: prometheus.NewCounterVec(prometheus.CounterOpts{
			Name: "duix_janitor_sessions_stopped_total",
			Help: "Sessions the janitor stopped (sessionStop succeeded), by app.",
		}, []string{"app"}),
		wouldStop: prometheus.NewCounterVec(prometheus.CounterOpts{
			Name: "duix_janitor_sessions_would_stop_total",
			Help: "Sessions the janitor would have stopped with janitor.dry_run on, by app: each counted once an hour.",
		}, []string{"app"}),
		refusals: prometheus.NewCounterVec(prometheus.CounterOpts{
			Name: "duix_janitor_refusals_total",
			Help: "Alerts or sessions the janitor did not act on, by reason: resolved, other_alert, no_app_label, unknown_app, not_opted_in, budget (janitor.max_stops_per_hour reached), already_stopped.",
		}, []string{"reason"}),
		requests: prometheus.NewCounterVec(prometheus.CounterOpts{
			Name: "duix_janitor_webhook_requests_total",
			Help: "Requests to the janitor's webhook, by outcome: handled, invalid, too_large, unknown_app, method_not_allowed, failed (a call to the platform failed), abandoned (the sender left before its turn), busy (too many requests waiting, or too many bytes held).",
		}, []string{"outcome"}),
		turn:    make(chan struct{}, 1),
		waiting: make(chan struct{}, MaxWaiting),
		budget:  semaphore.NewWeighted(MaxHeldBytes),
		acted:   [2]map[string]time.Time{{}, {}},
		counted: map[string]bool{},
	}
	for _, r := range Reasons {
		j.refusals.WithLabelValues(r)
	}
	for _, o := range Outcomes {
		j.requests.WithLabelValues(o)
	}
	if o.Registerer != nil {
		for _, c := range []prometheus.Collector{j.stopped, j.wouldStop, j.refusals, j.requests} {
			if err := o.Registerer.Register(c); err != nil {
				return nil, fmt.Errorf("janitor: registering metrics: %w", err)
			}
		}
	}
	return j, nil
}

// Apply switches to cfg: the apps opted in, their ages and the janitor
// section. The per-app counters of the apps opted in exist from here on,
// at 0; those of apps no longer opted in are dropped. A decision under
// way takes it from its next session on.
func (j *Janitor) Apply(cfg *config.Config) error {
	set := settings{Janitor: cfg.Janitor, known: map[string]bool{}, ages: map[string]time.Duration{}}
	for _, a := range cfg.Apps {
		if set.known[a.Name] = true; a.Janitor != nil {
			set.ages[a.Name] = time.Duration(a.Janitor.MaxSessionAge)
		}
	}
	j.mu.Lock()
	defer j.mu.Unlock()
	for app := range j.counted {
		if _, ok := set.ages[app]; !ok {
			j.stopped.DeleteLabelValues(app)
			j.wouldStop.DeleteLabelValues(app)
			delete(j.counted, app)
		}
	}
	for app := range set.ages {
		j.stopped.WithLabelValues(app)
		j.wouldStop.WithLabelValues(app)
		j.counted[app] = true
	}
	j.set = set
	return nil
}

// Enabled reports whether the janitor is on (j is not nil).
func (j *Janitor) Enabled() bool { return j != nil }

// Recent returns the last decisions about apps (at most 32), newest
// first. Refusals of resolved alerts and of other alerts are left out.
func (j *Janitor) Recent() []Action {
	if j == nil {
		return nil
	}
	j.mu.Lock()
	defer j.mu.Unlock()
	out := make([]Action, 0, len(j.recent))
	for i := range j.recent {
		out = append(out, j.recent[(j.next-1-i+2*len(j.recent))%len(j.recent)])
	}
	return out
}

// record logs a decision, counts it and keeps it for Recent.
func (j *Janitor) record(a Action) {
	a.Time, a.SessionID = j.now(), bounded(a.SessionID) // the platform's: cut for the log and the landing page
	if a.Count == 0 {
		a.Count = 1
	}
	kv := []any{"msg", "Janitor decision", "action", a.Action, "app", a.App}
	if a.SessionID != "" {
		kv = append(kv, "session", a.SessionID, "age", a.Age.Truncate(time.Second).String())
	}
	if a.Reason != "" {
		kv = append(kv, "reason", a.Reason)
	}
	if a.Count > 1 && a.SessionID == "" { // a refusal of alerts
		kv = append(kv, "alerts", a.Count)
	} else if a.Count > 1 {
		kv = append(kv, "sessions", a.Count)
	}
	kv = append(kv, "dry_run", a.DryRun)
	lg := level.Info(j.logger)
	if a.Action == ActionFailed || a.Reason == ReasonBudget || a.Reason == ReasonUnknownApp || a.Reason == ReasonNoApp {
		lg = level.Warn(j.logger)
	}
	lg.Log(kv...)

	j.mu.Lock()
	defer j.mu.Unlock()
	switch {
	case a.Action == ActionRefused:
		j.refusals.WithLabelValues(a.Reason).Add(float64(a.Count))
	case !j.counted[a.App]: // a reload took the app out: its series stay dropped
	case a.Action == ActionStopped:
		j.stopped.WithLabelValues(a.App).Inc()
	case a.Action == ActionWouldStop:
		j.wouldStop.WithLabelValues(a.App).Inc()
	}
	if a.Reason == ReasonResolved || a.Reason == ReasonOtherAlert {
		return // routine: not worth a place on the landing page
	}
	if len(j.recent) < recentSize {
		j.recent = append(j.recent, a)
		j.next = len(j.recent) % recentSize
		return
	}
	j.recent[j.next] = a
	j.next = (j.next + 1) % recentSize
}

// abandoned answers a request whose sender left before its turn.
func (j *Janitor) abandoned(w http.ResponseWriter) {
	level.Warn(j.logger).Log("msg", "Janitor dropped a webhook request: its sender left while another was handled")
	j.answer(w, http.StatusServiceUnavailable, OutcomeAbandoned, []string{"the sender left before its turn: nothing done"})
}

// ServeHTTP serves POST /webhook and, on /, a line saying what this is.
func (j *Janitor) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	switch r.URL.Path {
	case "/webhook":
		j.webhook(w, r)
	case "/":
		w.Header().Set("Content-Type", "text/plain; charset=utf-8")
		fmt.Fprintln(w, "duix_exporter janitor: Alertmanager posts its webhook (version 4) to /webhook")
	default:
		http.NotFound(w, r)
	}
}

// answer writes the one-line (or one line per alert) answer and counts
// the request.
func (j *Janitor) answer(w http.ResponseWriter, status int, outcome string, lines []string) {
	j.requests.WithLabelValues(outcome).Inc()
	// A sender that does not read is cut off, rather than hold the turn.
	_ = http.NewResponseController(w).SetWriteDeadline(time.Now().Add(writeTimeout))
	w.Header().Set("Content-Type", "text/plain; charset=utf-8")
	w.Header().Set("X-Content-Type-Options", "nosniff")
	w.WriteHeader(status)
	fmt.Fprintln(w, strings.Join(lines, "\n"))
}

func (j *Janitor) webhook(w http.ResponseWriter, r *http.Request) {
	if r.Method != http.MethodPost {
		w.Header().Set("Allow", http.MethodPost)
		j.answer(w, http.StatusMethodNotAllowed, OutcomeMethodNotAllowed, []string{"only POST: Alertmanager's webhook"})
		return
	}
	// The body is read before the request waits its turn (so that a slow
	// sender holds no turn, and a sender that leaves while it waits is
	// seen), within a budget of bytes for the payloads read or held. Beyond
	// either bound the request is answered busy at once, not queued behind
	// bodies that may never end: Alertmanager retries.
	size := int64(MaxPayloadBytes)
	if r.ContentLength >= 0 {
		size = min(max(r.ContentLength, 1), size)
	}
	busy := true
	select {
	case j.waiting <- struct{}{}:
		defer func() { <-j.waiting }()
		busy = !j.budget.TryAcquire(size)
	default:
	}
	if busy {
		level.Warn(j.logger).Log("msg", "Janitor refused a webhook request: too many in, or too many bytes", "max", MaxWaiting, "max_bytes", MaxHeldBytes)
		j.answer(w, http.StatusServiceUnavailable, OutcomeBusy, []string{fmt.Sprintf("%d webhook requests, or %d bytes of them, are already in: nothing done, try again", MaxWaiting, MaxHeldBytes)})
		return
	}
	defer j.budget.Release(size)
	p, err := decode(http.MaxBytesReader(w, r.Body, MaxPayloadBytes))
	if err != nil {
		if mbe := (*http.MaxBytesError)(nil); errors.As(err, &mbe) {
			j.answer(w, http.StatusRequestEntityTooLarge, OutcomeTooLarge, []string{fmt.Sprintf("payload larger than %d bytes: nothing done", MaxPayloadBytes)})
			return
		}
		level.Warn(j.logger).Log("msg", "Janitor refused a webhook request", "err", err)
		j.answer(w, http.StatusBadRequest, OutcomeInvalid, []string{err.Error() + ": nothing done"})
		return
	}
	select {
	case j.turn <- struct{}{}:
		defer func() { <-j.turn }()
	case <-r.Context().Done(): // Alertmanager's timeout, while another webhook was handled
	}
	if r.Context().Err() != nil { // also when the turn came as it left: select picks either when both are ready
		j.abandoned(w)
		return
	}
	set := j.settings()

	// Decide every alert before acting: an alert about an app this
	// exporter does not know makes the whole request a mistake of routing.
	var lines []string
	var todo []string
	bad := false
	type refusal struct{ reason, app string }
	var refused []Action    // one per reason and app (one for all apps not configured): a log line and a landing-page entry each
	at := map[refusal]int{} // its index in refused
	for i, a := range p.Alerts {
		app := a.Labels.App
		if !set.known[app] {
			app = bounded(app) // logged and answered: cut
		}
		reason := ""
		switch {
		case a.Labels.AlertName != set.AlertName:
			reason = ReasonOtherAlert
			lines = append(lines, fmt.Sprintf("alerts[%d]: not acted on: not %s", i, set.AlertName))
		case a.Status == statusResolved:
			reason = ReasonResolved
			lines = append(lines, fmt.Sprintf("alerts[%d]: not acted on: resolved", i))
		case app == "":
			reason, bad = ReasonNoApp, true
			lines = append(lines, fmt.Sprintf("alerts[%d]: refused: no app label", i))
		case !set.known[app]:
			reason, bad = ReasonUnknownApp, true
			lines = append(lines, fmt.Sprintf("alerts[%d]: refused: app %q is not configured in this exporter", i, app))
		case set.ages[app] == 0:
			reason = ReasonNotOptedIn
			lines = append(lines, fmt.Sprintf("alerts[%d]: not acted on: app %q has not opted in to the janitor", i, app))
		default:
			if !slices.Contains(todo, app) {
				todo = append(todo, app)
			}
			continue
		}
		k := refusal{reason, app}
		if !set.known[app] {
			k.app = "" // named after the first, whatever else the payload names
		}
		if i, ok := at[k]; ok {
			refused[i].Count++
		} else {
			at[k], refused = len(refused), append(refused, Action{App: app, Action: ActionRefused, Reason: reason, Count: 1, DryRun: set.DryRun})
		}
	}
	for _, a := range refused {
		j.record(a)
	}
	if bad {
		lines = append(lines, "nothing done: route only this exporter's apps to its janitor")
		j.answer(w, http.StatusUnprocessableEntity, OutcomeUnknownApp, lines)
		return
	}
	failed := false
	for _, app := range todo {
		line, ok := j.clean(r.Context(), app)
		lines = append(lines, line)
		failed = failed || !ok
	}
	if len(lines) == 0 {
		lines = []string{"no alerts: nothing done"}
	}
	if failed {
		j.answer(w, http.StatusBadGateway, OutcomeFailed, lines)
		return
	}
	j.answer(w, http.StatusOK, OutcomeHandled, lines)
}

// candidate is a session of the app whose start is known.
type candidate struct {
	id    string
	start time.Time
}

// tally is what a decision about an app did, for its line of the answer.
type tally struct {
	old, stopped, would, already, failed, young, undated, mangled int
	budget                                                        Action // the refusal by the budget, Count sessions
	optedOut                                                      bool   // a reload took the app out of the janitor
}

// clean stops the sessions of app older than its max_session_age, within
// the budget, and returns the line of the answer about it and whether
// every call succeeded. Each session is decided under the configuration
// in force when its turn comes (a reload may come between two stops), and
// a stop counts against the budget from when it is sent.
func (j *Janitor) clean(ctx context.Context, app string) (string, bool) {
	set := j.settings()
	c := j.src.AppClient(app)
	if c == nil { // a reload under way dropped it
		j.record(Action{App: app, Action: ActionFailed, Reason: "no_client", DryRun: set.DryRun})
		return fmt.Sprintf("app %q: failed: the app has no client right now", app), false
	}
	listed, appID := j.now(), c.AppID()
	var dated []candidate
	var n tally
	seen := map[string]bool{}
	err := c.EachSession(ctx, client.SessionOptions{}, func(s client.Session) error {
		if s.ID == "" || seen[s.ID] {
			return nil // cannot be stopped, or listed twice
		}
		seen[s.ID] = true
		start, ok := j.src.FirstSeen(app, s.ID)
		if s.Start != nil && !s.Start.After(listed) { // a start in the future is not believed, as by the lifecycle
			start, ok = *s.Start, true
		}
		if !ok {
			n.undated++
			return nil
		}
		dated = append(dated, candidate{id: s.ID, start: start})
		return nil
	})
	if err != nil {
		// The reason class only: the error may quote the platform.
		j.record(Action{App: app, Action: ActionFailed, Reason: client.Reason(err), DryRun: set.DryRun})
		return fmt.Sprintf("app %q: failed: listing its sessions (%s)", app, client.Reason(err)), false
	}
	slices.SortFunc(dated, func(a, b candidate) int { return a.start.Compare(b.start) }) // oldest first

	for _, s := range dated {
		if ctx.Err() != nil {
			break // the sender left: no stop is sent for it, none counts against the budget
		}
		key := app + "\x00" + s.id
		j.mu.Lock()
		cur, now := j.set, j.now()
		m := mode(cur.DryRun)
		j.forget(now)
		_, wasActed := j.acted[m][key]
		full := len(j.stops[m]) >= cur.MaxStopsPerHour
		j.mu.Unlock()
		if c = j.src.AppClient(app); cur.ages[app] == 0 || c == nil || c.AppID() != appID { // the name now means another platform app
			n.optedOut = true
			break
		}
		set = cur
		a := Action{App: app, SessionID: s.id, Age: now.Sub(s.start), DryRun: set.DryRun}
		switch {
		case a.Age <= set.ages[app]:
			n.young++
			continue
		case strings.ContainsRune(s.id, utf8.RuneError): // bytes not UTF-8, or a lone surrogate, decoded as U+FFFD:
			n.mangled++ // a stop would go to an ID the platform does not have, at a cost to the budget
			a.Action, a.Reason = ActionRefused, ReasonIDNotUTF8
		case wasActed:
			n.already++
			a.Action, a.Reason = ActionRefused, ReasonAlreadyStopped
		case full:
			if n.budget.Count == 0 {
				n.budget = a
				n.budget.Action, n.budget.Reason = ActionRefused, ReasonBudget
			}
			n.budget.Count++
		case set.DryRun:
			n.would++
			a.Action = ActionWouldStop
			j.remember(m, key, now)
		default:
			_, err := c.StopSession(ctx, s.id)
			switch {
			case err == nil:
				n.stopped++
				a.Action = ActionStopped
				j.remember(m, key, now)
			case client.IsNotFound(err):
				n.already++
				a.Action, a.Reason = ActionRefused, ReasonAlreadyStopped
				j.remember(m, key, now) // a platform may answer 404 once its close took effect: it counts against the budget
			default:
				n.failed++
				a.Action, a.Reason = ActionFailed, client.Reason(err) // the class only, as above
				switch a.Reason {
				case client.ReasonAuth, client.ReasonRateLimited, client.ReasonAPI: // refused, or never sent
				default: // it may have taken effect all the same: it counts against the budget
					j.remember(m, "", now)
				}
			}
		}
		n.old++
		if a.Action != "" {
			j.record(a)
		}
	}
	if n.budget.Count > 0 {
		j.record(n.budget)
	}
	if n.optedOut {
		j.record(Action{App: app, Action: ActionRefused, Reason: ReasonNotOptedIn, DryRun: set.DryRun})
	}
	return n.line(app, set), n.failed == 0
}

// line is the line of the answer about app, decided under set (the last
// settings in force while the app was opted in).
func (n *tally) line(app string, set settings) string {
	verb := fmt.Sprintf("stopped %d", n.stopped)
	switch {
	case n.stopped > 0 && n.would > 0: // a reload turned dry_run on or off meanwhile
		verb += fmt.Sprintf(" and, in dry run, would have stopped %d", n.would)
	case n.would > 0 || set.DryRun && n.stopped == 0:
		verb = fmt.Sprintf("dry run: would have stopped %d", n.would)
	}
	line := fmt.Sprintf("app %q: %s of %d session(s) older than %s; %d already stopped or gone, %d refused by the budget of %d an hour, %d failed, %d younger, %d without a known start",
		app, verb, n.old, model.Duration(set.ages[app]), n.already, n.budget.Count, set.MaxStopsPerHour, n.failed, n.young, n.undated)
	if n.mangled > 0 {
		line += fmt.Sprintf("; %d not stopped: their IDs are not valid UTF-8 (sessions stop --app NAME --all closes every session)", n.mangled)
	}
	if n.optedOut {
		line += "; then a reload took the app out of the janitor (or gave its name to another platform app): its other sessions were not acted on"
	}
	return line
}

// settings returns the settings in force.
func (j *Janitor) settings() settings {
	j.mu.Lock()
	defer j.mu.Unlock()
	return j.set
}

// remember notes a stop sent at when (or decided, in dry run) against the budget of mode m and, unless key is empty,
// that the session was stopped (or found gone).
func (j *Janitor) remember(m int, key string, when time.Time) {
	j.mu.Lock()
	defer j.mu.Unlock()
	if key != "" {
		j.acted[m][key] = when
	}
	j.stops[m] = append(j.stops[m], when)
}

// forget drops the stops and stopped sessions older than the window. A stopped session is remembered from the time of
// its stop, so none is older than the window while no stop is: the memory is walked only when a stop was dropped (a
// walk per session listed made a webhook cost sessions × stops remembered). j.mu is held.
func (j *Janitor) forget(now time.Time) {
	for m := range j.stops {
		i := 0
		for i < len(j.stops[m]) && now.Sub(j.stops[m][i]) >= window {
			i++
		}
		if j.stops[m] = j.stops[m][i:]; i == 0 {
			continue
		}
		for k, t := range j.acted[m] {
			if now.Sub(t) >= window {
				delete(j.acted[m], k)
			}
		}
	}
}

// bounded cuts a label value from a payload, or a session ID, for logs,
// answers and the landing page, and replaces the characters that would
// not show as themselves: controls, format characters (a right-to-left
// override) and line separators.
func bounded(s string) string {
	if len(s) > maxLabelLog {
		s = s[:maxLabelLog] + "..."
	}
	return strings.Map(func(r rune) rune {
		if unicode.IsControl(r) || unicode.In(r, unicode.Cf, unicode.Zl, unicode.Zp) {
			return '?'
		}
		return r
	}, strings.ToValidUTF8(s, string(utf8.RuneError)))
}
