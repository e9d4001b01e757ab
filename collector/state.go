package collector

import (
	"slices"
	"strings"
	"sync"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	dto "github.com/prometheus/client_model/go"

	"github.com/duix-exporter/duix_exporter/client"
)

// result is one fetch of an app: what getconcurrentNumber and
// getconcurrentList answered.
type result struct {
	started  time.Time // when the calls began, by the exporter's clock
	begun    time.Time // the same, by the monotonic clock
	duration time.Duration
	conc     *client.Concurrency
	concErr  error
	sessions int
	// noConv counts the sessions whose record names no conversation.
	noConv int
	// perConv counts the sessions of each conversation of convIDs, the
	// configured ones in ID order; other conversation IDs are not kept, so
	// its size is bounded by the configuration.
	convIDs []string
	perConv []int
	sessErr error
	// list is the start of the session list, for the lifecycle (nil when
	// it is off), and listedAt when it was received.
	list     []seenSession
	listedAt time.Time
}

// conversationSessions returns the sessions counted for the conversation
// id (0 when it was not configured at the time of the fetch).
func (r *result) conversationSessions(id string) int {
	if i, ok := slices.BinarySearch(r.convIDs, id); ok {
		return r.perConv[i]
	}
	return 0
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
	pairs       []*dto.LabelPair // app and conversation_id, see sample
	infoPairs   []*dto.LabelPair // of duix_conversation_info, once known
	known       bool             // details were fetched once
	maxConv     int              // maxConversation
	refreshed   time.Time        // last success
	lastAttempt time.Time
	lastErr     error
}

// appState is what outlives a scrape for one app: the last result, the
// conversation details and the error counts. It is kept across reloads
// while the app's name and app_id stay the same.
type appState struct {
	name, appID string
	pairs       []*dto.LabelPair // app, see sample

	mu            sync.Mutex
	c             *client.Client
	conversations []*conversation // in ID order
	errs          map[string]uint64
	last          *result
	corpID        string
	infoPairs     []*dto.LabelPair // of duix_app_info, for corpID
	life          *lifecycle       // nil when the lifecycle metrics are off
	durations     prometheus.Histogram
	maxTracked    int
}

func newAppState(name, appID string) *appState {
	app := labelPair(&labelApp, name)
	st := &appState{name: name, appID: appID, pairs: labelPairs(app)}
	st.setCorpID("")
	return st
}

// setCorpID keeps the app's corp ID and the label pairs of duix_app_info;
// callers hold st.mu (or own st).
func (st *appState) setCorpID(id string) {
	st.corpID = id
	st.infoPairs = labelPairs(st.pairs[0], labelPair(&labelAppID, st.appID), sharedPair(&labelCorpID, labelValue(id)))
}

func (st *appState) client() *client.Client {
	st.mu.Lock()
	defer st.mu.Unlock()
	return st.c
}

// lifeSettings configure an app's session lifecycle: off when durations
// is nil.
type lifeSettings struct {
	durations  prometheus.Histogram // the app's child of duix_app_session_duration_seconds
	maxTracked int
}

// configure sets the client, the watched conversations and the lifecycle,
// keeping the details already known of conversations that stay and the
// sessions followed so far.
func (st *appState) configure(c *client.Client, ids []string, ls lifeSettings) {
	st.mu.Lock()
	defer st.mu.Unlock()
	st.c = c
	switch {
	case ls.durations == nil:
		st.life = nil
	case st.life == nil:
		st.life = &lifecycle{}
	}
	if st.life != nil {
		st.life.durations = ls.durations
	}
	st.durations, st.maxTracked = ls.durations, ls.maxTracked
	kept := make([]*conversation, 0, len(ids))
	for _, id := range ids {
		cv := st.conversation(id)
		if cv == nil {
			cv = &conversation{id: id, pairs: labelPairs(st.pairs[0], labelPair(&labelConversationID, id))}
		}
		kept = append(kept, cv)
	}
	slices.SortFunc(kept, func(a, b *conversation) int { return strings.Compare(a.id, b.id) })
	st.conversations = kept
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

// fetchSettings returns what a fetch of the app needs: its client, the
// configured conversations (in ID order), whether to keep the session list
// for the lifecycle, and how much of it.
func (st *appState) fetchSettings() (c *client.Client, ids []string, life bool, maxTracked int) {
	st.mu.Lock()
	defer st.mu.Unlock()
	ids = make([]string, len(st.conversations))
	for i, cv := range st.conversations {
		ids[i] = cv.id
	}
	return st.c, ids, st.life != nil, st.maxTracked
}

// due returns the conversations whose details are due for a refresh and
// marks them attempted, so that concurrent fetches do not repeat them. A
// failed refresh is retried after min(retry, refresh).
func (st *appState) due(now time.Time, refresh, retry time.Duration) []string {
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
		cv.lastAttempt = now
		due = append(due, cv.id)
	}
	return due
}

// recordConversation keeps the outcome of a conversation refresh: the
// details on success (only what is exported: the record is large), the
// last good details and an error count on failure.
func (st *appState) recordConversation(id string, details *client.Conversation, err error, now time.Time) {
	st.mu.Lock()
	defer st.mu.Unlock()
	if err != nil {
		st.countError(err)
	}
	cv := st.conversation(id)
	if cv == nil {
		return // no longer configured
	}
	cv.lastErr = err
	if err == nil {
		cv.known, cv.maxConv, cv.refreshed = true, details.MaxConversation, now
		cv.infoPairs = labelPairs(append([]*dto.LabelPair{
			sharedPair(&labelLanguage, labelValue(details.Language)),
			sharedPair(&labelModelName, labelValue(details.DetailDto.ModelName)),
			sharedPair(&labelName, labelValue(details.ConversationName)),
			sharedPair(&labelTTSName, labelValue(details.DetailDto.TtsName)),
		}, cv.pairs...)...)
	}
}

// countError counts a failed call by its reason; callers hold st.mu.
func (st *appState) countError(err error) {
	if st.errs == nil {
		st.errs = map[string]uint64{}
	}
	st.errs[client.Reason(err)]++
}

// record keeps a landed fetch and counts its failed calls.
func (st *appState) record(r *result) {
	st.mu.Lock()
	defer st.mu.Unlock()
	st.last = r
	if r.concErr != nil {
		st.countError(r.concErr)
	} else if r.conc != nil && r.conc.CropID != st.corpID {
		st.setCorpID(r.conc.CropID)
	}
	if r.sessErr != nil {
		st.countError(r.sessErr)
	} else if st.life != nil && r.list != nil {
		st.life.observe(r.list, r.sessions, r.listedAt, st.maxTracked)
	}
	r.list = nil // observed once, however many requests share the result
}

func (st *appState) lastResult() *result {
	st.mu.Lock()
	defer st.mu.Unlock()
	return st.last
}

// view is a consistent copy of what a scrape exports of an app's state.
type view struct {
	infoPairs     []*dto.LabelPair
	errs          map[string]uint64
	conversations []conversation
	life          *lifeView
	durations     prometheus.Histogram
}

// lifeView is what a scrape exports of an app's lifecycle.
type lifeView struct {
	baseline                  bool
	started, ended, untracked uint64
	seconds, oldestAge        float64
}

func (st *appState) view(now time.Time) view {
	st.mu.Lock()
	defer st.mu.Unlock()
	v := view{infoPairs: st.infoPairs, conversations: make([]conversation, len(st.conversations))}
	if len(st.errs) > 0 {
		v.errs = make(map[string]uint64, len(st.errs))
	}
	if l := st.life; l != nil {
		v.durations = st.durations
		v.life = &lifeView{baseline: l.baseline, started: l.started, ended: l.ended, untracked: l.untracked,
			seconds: l.seconds, oldestAge: l.oldestAge(now)}
	}
	for k, n := range st.errs {
		v.errs[k] = n
	}
	for i, cv := range st.conversations {
		v.conversations[i] = *cv
	}
	return v
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

func (st *appState) status() Status {
	st.mu.Lock()
	defer st.mu.Unlock()
	s := Status{Name: st.name, AppID: st.appID}
	r := st.last
	if r == nil {
		return s
	}
	s.LastScrape, s.Duration, s.Up = r.started, r.duration, r.up()
	if r.conc != nil {
		s.InUse, s.Limit, s.HasConcurrency = r.conc.UserConcurrentNumber, r.conc.TotalConcurrentNumber, true
	}
	if r.sessErr == nil {
		s.ActiveSessions, s.HasSessions = r.sessions, true
	}
	if err := r.firstErr(); err != nil {
		s.LastError = client.Reason(err) + ": " + err.Error()
	}
	return s
}
