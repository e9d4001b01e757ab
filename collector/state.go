package collector

import (
	"cmp"
	"slices"
	"strings"
	"sync"
	"time"

	"golang.org/x/sync/singleflight"

	"github.com/duix-exporter/duix_exporter/client"
)

// result is what getconcurrentNumber and getconcurrentList answered.
type result struct {
	started, landed  time.Time // when the calls began, by the exporter's clock; when they ended, by the monotonic clock
	duration         time.Duration
	conc             *client.Concurrency
	concErr, sessErr error
	sessions, noConv int      // all, and those whose record names no conversation
	convIDs          []string // the app's configured conversations when the calls began
	perConv          []int    // the sessions of each of convIDs; nil unless the list was fetched
}

// conversation is the last known details of a configured conversation.
type conversation struct {
	id                     string
	maxConv                int       // maxConversation
	info                   [4]string // language, model_name, name, tts_name
	refreshed, lastAttempt time.Time
	lastErr                error
}

// appState is what outlives a scrape for one app, kept across reloads while its name and app_id stay the same.
type appState struct {
	name, appID, key string // key: unique among the exporter's apps, ever: its fetch under way is Exporter.flights[key]

	mu            sync.Mutex
	c             *client.Client
	convIDs       []string        // configured, in order
	conversations []*conversation // of convIDs, in order
	errs          map[string]uint64
	last          *result
	flying        bool // a fetch is making its calls
	shown         bool // the app's series were exposed
	corpID        string
	life          *lifecycle // nil when the lifecycle is off
	maxTracked    int
}

// configure sets the client, the conversations and the lifecycle, keeping what is known of those that stay.
func (st *appState) configure(c *client.Client, ids []string, life bool, maxTracked int) {
	st.mu.Lock()
	defer st.mu.Unlock()
	st.c, st.maxTracked = c, maxTracked
	if !life {
		st.life = nil
	} else if st.life == nil {
		st.life = &lifecycle{}
	}
	convs := make([]*conversation, len(ids))
	for i, id := range ids {
		if j := slices.Index(st.convIDs, id); j >= 0 {
			convs[i] = st.conversations[j]
		} else {
			convs[i] = &conversation{id: id}
		}
	}
	st.convIDs, st.conversations = ids, convs
}

// lastResult returns the last result and whether a fetch is under way.
func (st *appState) lastResult() (*result, bool) {
	st.mu.Lock()
	defer st.mu.Unlock()
	return st.last, st.flying
}

// due returns the conversations due for a refresh, marked attempted; a
// failed refresh is retried after min(retry, refresh) (retry: a minute).
func (st *appState) due(now time.Time, refresh, retry time.Duration) []string {
	st.mu.Lock()
	defer st.mu.Unlock()
	var due []string
	for _, cv := range st.conversations {
		if cv.lastAttempt.IsZero() || now.Sub(cv.lastAttempt) >= min(retry, refresh) && (cv.lastErr != nil || now.Sub(cv.refreshed) >= refresh) {
			cv.lastAttempt = now
			due = append(due, cv.id)
		}
	}
	return due
}

// conversationDetails are the fields of getConversationById the collector uses.
type conversationDetails struct {
	ConversationName, Language string
	MaxConversation            *int // required: a missing one is no 0
	DetailDto                  struct{ ModelName, TtsName string }
}

// recordConversation keeps the details of a successful refresh, else the last good.
func (st *appState) recordConversation(id string, d *conversationDetails, err error, now time.Time) {
	st.mu.Lock()
	defer st.mu.Unlock()
	st.countError(err)
	if i := slices.Index(st.convIDs, id); i >= 0 {
		cv := st.conversations[i]
		if cv.lastErr = err; err == nil {
			cv.maxConv, cv.refreshed = *d.MaxConversation, now
			cv.info = [4]string{labelValue(d.Language), labelValue(d.DetailDto.ModelName), labelValue(d.ConversationName), labelValue(d.DetailDto.TtsName)}
		}
	}
}

// countError counts a failed call by its reason; callers hold st.mu.
func (st *appState) countError(err error) {
	if err != nil {
		st.errs[client.Reason(err)]++
	}
}

// record keeps a landed fetch, counts its failed calls and has the
// lifecycle observe its list, once however many requests share it.
func (st *appState) record(flights *singleflight.Group, r *result, list []seenSession, cut bool, listedAt time.Time) {
	st.mu.Lock()
	defer st.mu.Unlock()
	st.last, st.flying, r.landed = r, false, time.Now()
	flights.Forget(st.key) // with it: a request arriving from now on makes new calls, not wait for a refresh
	st.countError(r.concErr)
	st.countError(r.sessErr)
	if r.conc != nil && r.conc.CropID != "" { // the last value seen
		st.corpID = labelValue(r.conc.CropID)
	}
	if st.life != nil && list != nil && r.sessErr == nil {
		st.life.observe(list, r.sessions, cut, listedAt, st.maxTracked)
	}
}

// Status is what the exporter last learnt about an app, for people.
type Status struct {
	Name, AppID, LastError          string
	LastScrape                      time.Time
	Duration                        time.Duration
	Up, HasConcurrency, HasSessions bool
	InUse, Limit                    int64
	ActiveSessions                  int
}

func (st *appState) status() Status {
	st.mu.Lock()
	defer st.mu.Unlock()
	s, r := Status{Name: st.name, AppID: st.appID}, st.last
	if r == nil {
		return s
	}
	s.LastScrape, s.Duration, s.Up = r.started, r.duration, r.concErr == nil && r.sessErr == nil
	if r.conc != nil {
		s.InUse, s.Limit, s.HasConcurrency = r.conc.UserConcurrentNumber, r.conc.TotalConcurrentNumber, true
	}
	s.ActiveSessions, s.HasSessions = r.sessions, r.sessErr == nil
	if err := cmp.Or(r.concErr, r.sessErr); err != nil {
		s.LastError = client.Reason(err) + ": " + err.Error()
	}
	return s
}

// labelValue makes platform text a valid label value of at most 256 bytes.
func labelValue(s string) string {
	s = strings.ToValidUTF8(s, "\uFFFD")
	if len(s) > 256 {
		s = strings.ToValidUTF8(s[:256], "")
	}
	return s
}
