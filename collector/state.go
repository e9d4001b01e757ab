package collector

import (
	"cmp"
	"errors"
	"fmt"
	"slices"
	"strings"
	"sync"
	"time"

	"golang.org/x/sync/singleflight"

	"github.com/duix-exporter/duix_exporter/client"
)

// result is one fetch of an app: what getconcurrentNumber and
// getconcurrentList answered.
type result struct {
	by       uint64    // the scrape that made the calls
	started  time.Time // when the calls began, by the exporter's clock
	landed   time.Time // when they ended, by the monotonic clock
	duration time.Duration
	conc     *client.Concurrency
	concErr  error
	sessions int
	noConv   int            // sessions whose record names no conversation
	perConv  map[string]int // sessions per configured conversation
	sessErr  error
}

func (r *result) up() bool { return r.concErr == nil && r.sessErr == nil }

// conversation is the last known details of a configured conversation.
type conversation struct {
	id          string
	known       bool      // details were fetched once
	maxConv     int       // maxConversation
	info        [4]string // language, model_name, name, tts_name
	refreshed   time.Time // last success
	lastAttempt time.Time
	lastErr     error
}

// appState is what outlives a scrape for one app: the last result, the
// conversation details, the error counts and the session lifecycle. It is
// kept across reloads while the app's name and app_id stay the same.
type appState struct {
	name, appID string
	flights     singleflight.Group // the app's fetch under way, shared by its requesters

	mu            sync.Mutex
	c             *client.Client
	conversations []*conversation // in configuration order
	errs          map[string]uint64
	last          *result
	corpID        string
	life          *lifecycle // nil when the lifecycle is off
	maxTracked    int
}

// configure sets the client, the watched conversations and the lifecycle,
// keeping the details already known of conversations that stay and the
// sessions followed so far.
func (st *appState) configure(c *client.Client, ids []string, life bool, maxTracked int) {
	st.mu.Lock()
	defer st.mu.Unlock()
	st.c, st.maxTracked = c, maxTracked
	switch {
	case !life:
		st.life = nil
	case st.life == nil:
		st.life = &lifecycle{}
	}
	convs := make([]*conversation, 0, len(ids))
	for _, id := range ids {
		cv := st.conversation(id)
		if cv == nil {
			cv = &conversation{id: id}
		}
		convs = append(convs, cv)
	}
	st.conversations = convs
}

// conversation returns the configured conversation with that ID, or nil;
// callers hold st.mu.
func (st *appState) conversation(id string) *conversation {
	i := slices.IndexFunc(st.conversations, func(cv *conversation) bool { return cv.id == id })
	if i < 0 {
		return nil
	}
	return st.conversations[i]
}

func (st *appState) client() *client.Client {
	st.mu.Lock()
	defer st.mu.Unlock()
	return st.c
}

func (st *appState) lastResult() *result {
	st.mu.Lock()
	defer st.mu.Unlock()
	return st.last
}

// due returns the conversations whose details are due for a refresh and
// marks them attempted, so that concurrent fetches do not repeat them. A
// failed refresh is retried after min(retry, refresh).
func (st *appState) due(now time.Time, refresh, retry time.Duration) []string {
	st.mu.Lock()
	defer st.mu.Unlock()
	var due []string
	for _, cv := range st.conversations {
		since := now.Sub(cv.lastAttempt)
		if cv.lastAttempt.IsZero() || since >= min(retry, refresh) && (cv.lastErr != nil || now.Sub(cv.refreshed) >= refresh) {
			cv.lastAttempt = now
			due = append(due, cv.id)
		}
	}
	return due
}

// recordConversation keeps the outcome of a conversation refresh: the
// exported details on success, the last good ones and an error count on
// failure.
func (st *appState) recordConversation(id string, d *client.Conversation, err error, now time.Time) {
	st.mu.Lock()
	defer st.mu.Unlock()
	st.countError(err)
	if cv := st.conversation(id); cv != nil {
		cv.lastErr = err
		if err == nil {
			cv.known, cv.maxConv, cv.refreshed = true, d.MaxConversation, now
			cv.info = [4]string{labelValue(d.Language), labelValue(d.DetailDto.ModelName),
				labelValue(d.ConversationName), labelValue(d.DetailDto.TtsName)}
		}
	}
}

// countError counts a failed call by its reason; callers hold st.mu.
func (st *appState) countError(err error) {
	if err == nil {
		return
	}
	if st.errs == nil {
		st.errs = map[string]uint64{}
	}
	st.errs[reason(err)]++
}

// record keeps a landed fetch, counts its failed calls and has the
// lifecycle observe its list (once, however many requests share it).
func (st *appState) record(r *result, list []seenSession, listedAt time.Time) {
	st.mu.Lock()
	defer st.mu.Unlock()
	st.last = r
	st.countError(r.concErr)
	st.countError(r.sessErr)
	if r.conc != nil {
		st.corpID = labelValue(r.conc.CropID)
	}
	if st.life != nil && list != nil {
		st.life.observe(list, r.sessions, listedAt, st.maxTracked)
	}
}

// skipped is a call not made while the platform's Retry-After applies.
type skipped struct {
	endpoint string
	until    time.Time
}

func (e *skipped) Error() string {
	return fmt.Sprintf("%s: not called while rate limited until %s", e.endpoint, e.until.UTC().Format(time.RFC3339))
}

// reason classifies an error of a call into one of client.Reasons.
func reason(err error) string {
	if _, ok := errors.AsType[*skipped](err); ok {
		return client.ReasonRateLimited
	}
	return client.Reason(err)
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
	if err := cmp.Or(r.concErr, r.sessErr); err != nil {
		s.LastError = reason(err) + ": " + err.Error()
	}
	return s
}

// maxLabelValue bounds a label value that comes from the platform.
const maxLabelValue = 256

// labelValue makes a value from the platform a valid, bounded label value.
func labelValue(s string) string {
	s = strings.ToValidUTF8(s, "\uFFFD")
	if len(s) > maxLabelValue {
		s = strings.ToValidUTF8(s[:maxLabelValue], "")
	}
	return s
}
