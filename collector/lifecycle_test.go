package collector_test

import (
	"bytes"
	"context"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"
	"time"

	"github.com/prometheus/common/model"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/duix-exporter/duix_exporter/internal/platformtest"
	"github.com/duix-exporter/duix_exporter/simulator"
)

// sample returns the value of one sample line of an exposition ("" when
// absent): series is the name with its labels as exposed.
func sample(body, series string) string {
	for line := range strings.SplitSeq(body, "\n") {
		if v, ok := strings.CutPrefix(line, series+" "); ok {
			return v
		}
	}
	return ""
}

func TestLifecycleStartedEndedAndDurations(t *testing.T) {
	e := newEnv(t, appDef{"a", "app-a", "key-a", 10, nil})
	before, err := e.sim.StartSession("app-a", "")
	require.NoError(t, err)
	scrape := func() string { return e.scrapeText(t, context.Background()) }

	// The first list is the baseline: the session already there did not
	// start now.
	body := scrape()
	assert.Equal(t, "0", sample(body, `duix_app_sessions_started_total{app="a"}`))
	assert.Equal(t, "0", sample(body, `duix_app_sessions_ended_total{app="a"}`))
	assert.Equal(t, "0", sample(body, `duix_app_oldest_session_age_seconds{app="a"}`))

	// A call starts; 90 s later the first one (started at fixedNow, by its
	// record's startTime) ends.
	e.clk.Add(30 * time.Second)
	_, err = e.sim.StartSession("app-a", "")
	require.NoError(t, err)
	body = scrape()
	assert.Equal(t, "1", sample(body, `duix_app_sessions_started_total{app="a"}`))
	assert.Equal(t, "30", sample(body, `duix_app_oldest_session_age_seconds{app="a"}`))
	e.clk.Add(60 * time.Second)
	require.True(t, e.sim.EndSession("app-a", before))
	body = scrape()
	assert.Equal(t, "1", sample(body, `duix_app_sessions_ended_total{app="a"}`))
	// Last seen at 30 s after its start: ended sessions last from their
	// start to when they were last listed.
	assert.Equal(t, "1", sample(body, `duix_app_session_duration_seconds_bucket{app="a",le="30"}`))
	assert.Equal(t, "30", sample(body, `duix_app_session_duration_seconds_sum{app="a"}`))
	assert.Equal(t, "1", sample(body, `duix_app_session_duration_seconds_count{app="a"}`))
	assert.Equal(t, "60", sample(body, `duix_app_oldest_session_age_seconds{app="a"}`), "the second call is the oldest now")

	// Session-seconds by the trapezoid rule: from 1 to 2 sessions over 30 s
	// (45), from 2 to 1 over 60 s (90).
	assert.Equal(t, "135", sample(body, `duix_app_session_seconds_total{app="a"}`))
}

func TestLifecycleFailedFetchChangesNothing(t *testing.T) {
	e := newEnv(t, appDef{"a", "app-a", "key-a", 10, nil})
	_, err := e.sim.StartSession("app-a", "")
	require.NoError(t, err)
	e.scrapeText(t, context.Background())
	e.faults.SetFault("app-a", simulator.EndpointSessions, platformtest.Fault{Kind: platformtest.FaultHTTP500})
	e.clk.Add(time.Minute)
	body := e.scrapeText(t, context.Background())
	assert.Equal(t, "0", sample(body, `duix_app_sessions_ended_total{app="a"}`), "a failed list ends nothing")
	assert.Equal(t, "0", sample(body, `duix_app_session_seconds_total{app="a"}`))
	e.faults.ClearFaults()
	e.clk.Add(time.Minute)
	body = e.scrapeText(t, context.Background())
	assert.Equal(t, "0", sample(body, `duix_app_sessions_ended_total{app="a"}`))
	assert.Equal(t, "0", sample(body, `duix_app_sessions_started_total{app="a"}`))
	assert.Equal(t, "120", sample(body, `duix_app_session_seconds_total{app="a"}`), "integrated over the time between successful lists")
}

func TestLifecycleOneFetchCountsOnce(t *testing.T) {
	e := newGatedEnv(t, appDef{"a", "app-a", "key-a", 10, nil})
	_, err := e.sim.StartSession("app-a", "")
	require.NoError(t, err)
	// The baseline fetch, shared by two requests.
	first := e.scrapeAsync(t, context.Background())
	waitFor(t, "the calls reach the platform", func() bool { return e.gate.arrived.Load() == 2 })
	second := e.scrapeAsync(t, context.Background(), "a")
	e.gate.release()
	receive(t, first)
	receive(t, second)

	// A new session, listed by one fetch that two requests share.
	_, err = e.sim.StartSession("app-a", "")
	require.NoError(t, err)
	e.clk.Add(time.Minute)
	cfg := *e.cfg
	cfg.API.MinInterval = 0
	bodies := []string{receive(t, e.scrapeAsync(t, context.Background()))}
	// Reused under min_interval, by later requests.
	cfg.API.MinInterval = model.Duration(time.Hour)
	require.NoError(t, e.exp.Apply(&cfg))
	e.clk.Add(time.Minute)
	bodies = append(bodies, e.scrapeText(t, context.Background()), e.scrapeText(t, context.Background(), "a"))
	for i, body := range bodies {
		assert.Equal(t, "1", sample(body, `duix_app_sessions_started_total{app="a"}`), "request %d", i)
		assert.Equal(t, "90", sample(body, `duix_app_session_seconds_total{app="a"}`), "request %d: from 1 to 2 sessions over 60 s, once", i)
	}
	assert.Equal(t, int64(2), e.sim.Requests(simulator.EndpointSessions))
}

func TestLifecycleStateLeavesWithTheApp(t *testing.T) {
	e := newEnv(t, appDef{"a", "app-a", "key-a", 10, nil}, appDef{"b", "app-b", "key-b", 10, nil})
	e.scrapeText(t, context.Background())
	_, err := e.sim.StartSession("app-a", "")
	require.NoError(t, err)
	e.clk.Add(time.Minute)
	assert.Equal(t, "1", sample(e.scrapeText(t, context.Background()), `duix_app_sessions_started_total{app="a"}`))

	cfg := *e.cfg
	cfg.Apps = cfg.Apps[1:]
	require.NoError(t, e.exp.Apply(&cfg))
	assert.NotContains(t, e.scrapeText(t, context.Background()), `app="a"`)
	require.NoError(t, e.exp.Apply(e.cfg))
	_, err = e.sim.StartSession("app-a", "")
	require.NoError(t, err)
	body := e.scrapeText(t, context.Background())
	assert.Equal(t, "0", sample(body, `duix_app_sessions_started_total{app="a"}`), "a returning app starts with a baseline")
	assert.Equal(t, "0", sample(body, `duix_app_session_duration_seconds_count{app="a"}`))
}

// The lifecycle keeps the IDs of the sessions it follows from one fetch to
// the next: an ID longer than any real one (here 100 kB, which a list
// within max_response_bytes may hold) is counted, not kept, so that what a
// platform sends cannot make the state of an app grow to
// max_response_bytes.
// A session ID of up to 256 bytes is followed; a longer one is counted, not kept.
func TestLifecycleDoesNotKeepOverlongSessionIDs(t *testing.T) {
	prefix, suffix := simulator.SuccessParts(simulator.EndpointSessions)
	frame := int64(len(prefix + `[{"uuid":"` + `"}]` + suffix)) // the answer around the ID
	for id, untracked := range map[int64]string{256: "0", 257: "1", 100_000: "1"} {
		e := newEnv(t, appDef{"a", "app-a", "key-a", 10, nil})
		e.faults.SetFault("app-a", simulator.EndpointSessions, platformtest.Fault{Kind: platformtest.FaultEndlessString, Bytes: frame + id})
		body := e.scrapeText(t, context.Background())
		assert.Equal(t, "1", sample(body, `duix_up{app="a"}`))
		assert.Equal(t, "1", sample(body, `duix_app_active_sessions{app="a"}`))
		assert.Equal(t, untracked, sample(body, `duix_app_sessions_untracked_total{app="a"}`), "an ID of %d bytes", id)
	}
}

// Over sessions.max_tracked the list is cut: a followed session missing
// from the part kept may still be listed, and one entering it may have been
// listed before. A cut list ends none, the list after it starts none; the
// end of a session is counted once a whole list shows it.
func TestLifecycleOverMaxTrackedCountsNoFalseStartsOrEnds(t *testing.T) {
	e := newEnv(t, appDef{name: "a", id: "1", key: "k1", allowance: 10})
	e.cfg.Sessions.MaxTracked = 2
	require.NoError(t, e.exp.Apply(e.cfg))
	var ids []string
	for range 3 {
		id, err := e.sim.StartSession("1", "")
		require.NoError(t, err)
		ids = append(ids, id)
	}
	e.scrapeText(t, context.Background()) // the baseline: 3 listed, 2 followed
	e.clk.Add(15 * time.Second)
	require.True(t, e.sim.EndSession("1", ids[0])) // one ends, none starts: the list is whole again
	body := e.scrapeText(t, context.Background())
	assert.Equal(t, "1", sample(body, `duix_app_sessions_ended_total{app="a"}`))
	assert.Equal(t, "0", sample(body, `duix_app_sessions_started_total{app="a"}`), "no session started")

	body = e.replace(t, ids[1]) // 2 listed: whole, after a whole list
	assert.Equal(t, "2", sample(body, `duix_app_sessions_ended_total{app="a"}`))
	assert.Equal(t, "1", sample(body, `duix_app_sessions_started_total{app="a"}`))
}

// Whether a list was cut is the fetch's own knowledge: a reload that
// raises sessions.max_tracked while the list is fetched does not hide the
// cut (the same 4 sessions are listed throughout: none starts or ends).
func TestLifecycleKnowsACutAcrossAReloadDuringTheFetch(t *testing.T) {
	e := newGatedEnv(t, appDef{name: "a", id: "1", key: "k1", allowance: 10})
	pass := func(*http.Request) bool { return false }
	e.gate.holds.Store(&pass)
	e.cfg.Sessions.MaxTracked = 3
	require.NoError(t, e.exp.Apply(e.cfg))
	for range 4 {
		_, err := e.sim.StartSession("1", "")
		require.NoError(t, err)
	}
	e.scrapeText(t, context.Background()) // the baseline: 4 listed, 3 followed

	e.cfg.Sessions.MaxTracked = 2
	require.NoError(t, e.exp.Apply(e.cfg))
	hold := func(r *http.Request) bool { return strings.HasSuffix(r.URL.Path, "/"+simulator.EndpointSessions) }
	e.gate.holds.Store(&hold)
	e.clk.Add(15 * time.Second)
	ch := e.scrapeAsync(t, context.Background())
	waitFor(t, "the list call is held", func() bool { return e.gate.arrived.Load() == 1 })
	e.cfg.Sessions.MaxTracked = 10 // a reload while the list is fetched under a cap of 2
	require.NoError(t, e.exp.Apply(e.cfg))
	e.gate.release()
	receive(t, ch)
	e.clk.Add(15 * time.Second)
	body := e.scrapeText(t, context.Background()) // whole
	assert.Equal(t, "0", sample(body, `duix_app_sessions_ended_total{app="a"}`))
	assert.Equal(t, "0", sample(body, `duix_app_sessions_started_total{app="a"}`))
}

// editList rewrites the body of every successful session list.
type editList struct {
	next http.Handler
	edit func(body []byte) []byte
}

// withoutID adds a record without a session ID to a session list, first or last.
func withoutID(first bool) func(body []byte) []byte {
	const noID = `{"appId":"1","status":"in_call"}`
	return func(body []byte) []byte {
		if first {
			return bytes.Replace(body, []byte(`"data":[`), []byte(`"data":[`+noID+`,`), 1)
		}
		return bytes.Replace(body, []byte(`}],"message"`), []byte(`},`+noID+`],"message"`), 1)
	}
}

// twoSessions sets sessions.max_tracked, has every session list edited by edit, and starts two sessions of the
// platform app "1"; it returns the first one's ID.
func (e *env) twoSessions(t *testing.T, maxTracked int, edit func(body []byte) []byte) string {
	t.Helper()
	e.gate.next = editList{e.gate.next, edit}
	e.cfg.Sessions.MaxTracked = maxTracked
	require.NoError(t, e.exp.Apply(e.cfg))
	first, err := e.sim.StartSession("1", "")
	require.NoError(t, err)
	_, err = e.sim.StartSession("1", "")
	require.NoError(t, err)
	return first
}

func (p editList) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	rec := httptest.NewRecorder()
	p.next.ServeHTTP(rec, r)
	body := rec.Body.Bytes()
	if strings.HasSuffix(r.URL.Path, "/"+simulator.EndpointSessions) && rec.Code == http.StatusOK {
		body = p.edit(body)
	}
	for k, v := range rec.Header() {
		w.Header()[k] = v
	}
	w.Header().Del("Content-Length")
	w.WriteHeader(rec.Code)
	_, _ = w.Write(body)
}

// A record without a session ID takes no place under sessions.max_tracked
// and cuts nothing: with max_tracked 2, two sessions and such a record,
// one ending and another starting are counted.
func TestLifecycleARecordWithoutIDCutsNothing(t *testing.T) {
	for _, first := range []bool{false, true} {
		t.Run(map[bool]string{false: "last", true: "first"}[first], func(t *testing.T) {
			e := newEnv(t, appDef{name: "a", id: "1", key: "k1", allowance: 10})
			a := e.twoSessions(t, 2, withoutID(first))
			body := e.scrapeText(t, context.Background()) // the baseline
			require.Equal(t, "3", sample(body, `duix_app_active_sessions{app="a"}`), "the record without ID is listed")
			assert.Equal(t, "1", sample(body, `duix_app_sessions_untracked_total{app="a"}`))
			body = e.replace(t, a)
			assert.Equal(t, "1", sample(body, `duix_app_sessions_ended_total{app="a"}`))
			assert.Equal(t, "1", sample(body, `duix_app_sessions_started_total{app="a"}`))
		})
	}
}

// A session listed more than once is one session, but the copies count
// toward sessions.max_tracked as listed: one ID repeated past the cap makes
// the list look cut, so that it ends none, never a false end.
func TestLifecycleCopiesOfASessionPastTheCapEndNone(t *testing.T) {
	e := newEnv(t, appDef{name: "a", id: "1", key: "k1", allowance: 10})
	const dup = `{"appId":"1","sessionId":"copied","status":"in_call"}`
	copies := 1
	first := e.twoSessions(t, 4, func(body []byte) []byte {
		return bytes.Replace(body, []byte(`}],"message"`), []byte(`}`+strings.Repeat(`,`+dup, copies)+`],"message"`), 1)
	})
	e.scrapeText(t, context.Background()) // the baseline: 2 sessions and "copied"

	copies = 2 // listed twice, within the cap: one session
	body := e.replace(t, first)
	require.Equal(t, "4", sample(body, `duix_app_active_sessions{app="a"}`), "every entry is counted")
	assert.Equal(t, "1", sample(body, `duix_app_sessions_ended_total{app="a"}`))
	assert.Equal(t, "1", sample(body, `duix_app_sessions_started_total{app="a"}`), "the copy did not start")

	copies = 3 // 4 sessions, 6 entries: the list looks cut
	second, err := e.sim.StartSession("1", "")
	require.NoError(t, err)
	e.clk.Add(15 * time.Second)
	e.scrapeText(t, context.Background())
	body = e.replace(t, second)
	assert.Equal(t, "1", sample(body, `duix_app_sessions_ended_total{app="a"}`), "no end while the list looks cut")
}

// While the list fails, the oldest session's age is not reported: its
// sessions may have ended, and an age grown from a list hours old would
// page DuixSessionStuck during an outage.
func TestTheOldestAgeIsAbsentWhileTheListFails(t *testing.T) {
	e := newEnv(t, appDef{"a", "app-a", "key-a", 10, nil})
	_, err := e.sim.StartSession("app-a", "")
	require.NoError(t, err)
	e.clk.Add(10 * time.Minute)
	require.Equal(t, "600", sample(e.scrapeText(t, context.Background()), `duix_app_oldest_session_age_seconds{app="a"}`))
	e.faults.SetFault("app-a", "", platformtest.Fault{Kind: platformtest.FaultHTTP500})
	e.clk.Add(3 * time.Hour)
	body := e.scrapeText(t, context.Background())
	require.Contains(t, body, `duix_up{app="a"} 0`)
	assert.Empty(t, sample(body, `duix_app_oldest_session_age_seconds{app="a"}`))
	e.faults.ClearFaults()
	assert.Equal(t, "11400", sample(e.scrapeText(t, context.Background()), `duix_app_oldest_session_age_seconds{app="a"}`), "back with the list")
}

// replace ends the session id of the platform app "1" and starts another, 15 s on, and returns the scrape after that.
func (e *env) replace(t *testing.T, id string) string {
	t.Helper()
	require.True(t, e.sim.EndSession("1", id))
	_, err := e.sim.StartSession("1", "")
	require.NoError(t, err)
	e.clk.Add(15 * time.Second)
	return e.scrapeText(t, context.Background())
}
