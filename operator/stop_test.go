package operator

import (
	"net/http"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/duix-exporter/duix_exporter/internal/platformtest"
	"github.com/duix-exporter/duix_exporter/simulator"
)

// startOld starts a session of app on conv that began ago before now, as a
// kiosk that never hung up leaves one.
func (p *platform) startOld(t *testing.T, app, conv string, ago time.Duration) string {
	t.Helper()
	id, err := p.sim.StartSessionAt(p.id(app), conv, time.Now().Add(-ago))
	require.NoError(t, err)
	return id
}

// activeIDs returns the IDs of the app's active sessions.
func (p *platform) activeIDs(app string) map[string]bool {
	ids := map[string]bool{}
	for _, s := range p.sim.Sessions(p.id(app)) {
		ids[s.ID] = true
	}
	return ids
}

// requests returns how many requests reached each endpoint.
func (p *platform) requests() map[string]int64 {
	out := map[string]int64{}
	for _, ep := range []string{simulator.EndpointConversation, simulator.EndpointConcurrency, simulator.EndpointSessions, simulator.EndpointStop, simulator.EndpointStopAll} {
		out[ep] = p.sim.Requests(ep)
	}
	return out
}

func TestSessionsStopOlderThan(t *testing.T) {
	p := startPlatform(t)
	recent := p.activeIDs("support-desk") // the demo's 3 sessions, started just now
	old1 := p.startOld(t, "support-desk", "1081", 5*time.Hour)
	old2 := p.startOld(t, "support-desk", "1082", 3*time.Hour)
	young := p.startOld(t, "support-desk", "1081", 90*time.Minute)
	// A start time of 0 reads as none: such a session is not older than
	// anything.
	undated, err := p.sim.StartSessionAt(p.id("support-desk"), "1082", time.UnixMilli(0))
	require.NoError(t, err)

	res := p.run(t, nil, "sessions", "stop", "--app=support-desk", "--older-than=2h", "--yes")
	require.Equal(t, exitOK, res.code)
	assert.Empty(t, res.stderr)
	assert.Contains(t, res.stdout, "skipped 1 session(s) whose record has no start time: they are not older than anything")
	assert.Contains(t, res.stdout, "app support-desk has 7 active session(s); 2 started more than 2h ago (before ")
	rows := tableRows(t, res.stdout)
	assert.Equal(t, []string{"SESSION ID", "CONVERSATION", "STARTED (UTC)", "AGE"}, rows["SESSION ID"])
	require.Len(t, rows[old1], 4)
	assert.Equal(t, "1081", rows[old1][1])
	assert.True(t, strings.HasPrefix(rows[old1][3], "5h0m"), "age %q", rows[old1][3])
	assert.Contains(t, rows, old2)
	for _, id := range []string{young, undated} {
		assert.NotContains(t, res.stdout, id)
	}
	assert.Contains(t, res.stdout, "session "+old1+": stopped\nsession "+old2+": stopped\n")
	assert.True(t, strings.HasSuffix(res.stdout, "app support-desk: 2 stopped, 0 already gone, 0 failed\n"), res.stdout)

	left := p.activeIDs("support-desk")
	assert.Len(t, left, 5)
	for id := range recent {
		assert.True(t, left[id], "recent session %s is kept", id)
	}
	assert.True(t, left[young], "a session younger than the limit is kept")
	assert.True(t, left[undated], "a session without a start time is kept")
	assert.EqualValues(t, 2, p.sim.Requests(simulator.EndpointStop), "one sessionStop per old session")
	assert.Zero(t, p.sim.Requests(simulator.EndpointStopAll))

	// Prometheus-style durations are accepted too.
	res = p.run(t, nil, "sessions", "stop", "--app=support-desk", "--older-than=1d", "--yes")
	assert.Equal(t, exitOK, res.code)
}

func TestSessionsStopOlderThanWithNothingToStop(t *testing.T) {
	p := startPlatform(t)
	// No --yes and no terminal: with nothing to stop there is nothing to
	// confirm either.
	res := p.run(t, nil, "sessions", "stop", "--app=sales-avatar", "--older-than=2h")
	require.Equal(t, exitOK, res.code)
	assert.Equal(t, "app sales-avatar has 8 active session(s), none started more than 2h ago: nothing to stop\n", res.stdout)
	assert.Empty(t, res.stderr)
	assert.Zero(t, p.sim.Requests(simulator.EndpointStop))
	assert.Equal(t, 8, p.sim.InUse(p.id("sales-avatar")))
}

func TestSessionsStopOlderThanDryRun(t *testing.T) {
	p := startPlatform(t)
	old := p.startOld(t, "museum-guide", "3081", 4*time.Hour)
	res := p.run(t, nil, "sessions", "stop", "--app=museum-guide", "--older-than=2h", "--dry-run")
	require.Equal(t, exitOK, res.code)
	assert.Empty(t, res.stderr)
	assert.Contains(t, tableRows(t, res.stdout), old)
	assert.True(t, strings.HasSuffix(res.stdout, "dry run: 1 session(s) of app museum-guide would be stopped; nothing was stopped\n"), res.stdout)
	assert.Zero(t, p.sim.Requests(simulator.EndpointStop))
	assert.Zero(t, p.sim.Requests(simulator.EndpointStopAll))
	assert.True(t, p.activeIDs("museum-guide")[old])
	assert.Equal(t, 3, p.sim.InUse(p.id("museum-guide")))
}

// TestSessionsStopOlderThanReportsEachOutcome stops three old sessions: the
// platform fails the first stop, the second session ends on its own just
// before it is stopped, the third is stopped. Exit 1, one line each.
func TestSessionsStopOlderThanReportsEachOutcome(t *testing.T) {
	type target struct{ app, id string }
	var goneID atomic.Pointer[target] // ended just before its sessionStop arrives
	p := startPlatformBehind(t, func(sim *simulator.Simulator, next http.Handler) http.Handler {
		return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
			if g := goneID.Load(); g != nil && strings.HasSuffix(r.URL.Path, "/"+simulator.EndpointStop) && r.URL.Query().Get("uuid") == g.id {
				sim.EndSession(g.app, g.id) // the caller hung up meanwhile
			}
			next.ServeHTTP(w, r)
		})
	})
	app := p.id("support-desk")
	failing := p.startOld(t, "support-desk", "1081", 5*time.Hour)
	gone := p.startOld(t, "support-desk", "1082", 4*time.Hour)
	goneID.Store(&target{app, gone})
	stopped := p.startOld(t, "support-desk", "1081", 3*time.Hour)
	p.faults.SetFault(app, simulator.EndpointStop, platformtest.Fault{Kind: platformtest.FaultHTML502, Times: 1})

	res := p.run(t, nil, "sessions", "stop", "--app=support-desk", "--older-than=2h", "--yes")
	assert.Equal(t, exitFailed, res.code)
	assert.Contains(t, res.stdout, "session "+failing+": failed: sessionStop (app support-desk): http: HTTP 502")
	assert.Contains(t, res.stdout, "session "+gone+`: already gone (sessionStop (app support-desk): api, code 404: success is false)`+"\n")
	assert.Contains(t, res.stdout, "session "+stopped+": stopped\n")
	assert.True(t, strings.HasSuffix(res.stdout, "app support-desk: 1 stopped, 1 already gone, 1 failed\n"), res.stdout)
	assert.Equal(t, "duix_exporter sessions stop: 1 of 3 session(s) of app support-desk could not be stopped\n", res.stderr)
	left := p.activeIDs("support-desk")
	assert.True(t, left[failing], "the failed stop left its session active")
	assert.False(t, left[gone])
	assert.False(t, left[stopped])
	assert.EqualValues(t, 3, p.sim.Requests(simulator.EndpointStop), "every session was tried once")

	// Already gone is not a failure: what was asked for is done.
	gone = p.startOld(t, "support-desk", "1082", 4*time.Hour)
	goneID.Store(&target{app, gone})
	res = p.run(t, nil, "sessions", "stop", "--app=support-desk", "--older-than=2h", "--yes")
	assert.Equal(t, exitOK, res.code)
	assert.True(t, strings.HasSuffix(res.stdout, "app support-desk: 1 stopped, 1 already gone, 0 failed\n"), res.stdout)
	assert.Empty(t, res.stderr)
	assert.Len(t, p.activeIDs("support-desk"), 3, "only the demo's recent sessions are left")
}

func TestSessionsStopOlderThanOfAFailingList(t *testing.T) {
	p := startPlatform(t)
	p.startOld(t, "support-desk", "1081", 5*time.Hour)
	p.faults.SetFault(p.id("support-desk"), simulator.EndpointSessions, platformtest.Fault{Kind: platformtest.FaultTruncatedJSON})
	res := p.run(t, nil, "sessions", "stop", "--app=support-desk", "--older-than=2h", "--yes")
	assert.Equal(t, exitFailed, res.code)
	assert.Contains(t, res.stderr, "listing the sessions of app support-desk: getconcurrentList (app support-desk): decode: ")
	assert.Empty(t, res.stdout)
	assert.Zero(t, p.sim.Requests(simulator.EndpointStop))
}

func TestSessionsStopAll(t *testing.T) {
	p := startPlatform(t)
	p.startOld(t, "support-desk", "1081", 5*time.Hour)
	res := p.run(t, nil, "sessions", "stop", "--app=support-desk", "--all", "--yes")
	require.Equal(t, exitOK, res.code)
	assert.Empty(t, res.stderr)
	lines := strings.Split(strings.TrimSuffix(res.stdout, "\n"), "\n")
	require.Len(t, lines, 2, res.stdout)
	assert.Regexp(t, `^app support-desk has 4 active session\(s\), the oldest started \d{4}-\d\d-\d\d \d\d:\d\d:\d\d UTC \(5h0m\d+s ago\)$`, lines[0])
	assert.Equal(t, `closed every session of app support-desk: the platform answered code "200", data {"count":4}`, lines[1])
	assert.Zero(t, p.sim.InUse(p.id("support-desk")))
	assert.Equal(t, 8, p.sim.InUse(p.id("sales-avatar")), "other apps keep their sessions")
	assert.EqualValues(t, 1, p.sim.RequestsFor(p.id("support-desk"), simulator.EndpointStopAll))
	assert.Zero(t, p.sim.Requests(simulator.EndpointStop), "one call closes them all")

	// An app that lists no session: the platform is asked all the same.
	res = p.run(t, nil, "sessions", "stop", "--app=support-desk", "--all", "--yes")
	require.Equal(t, exitOK, res.code)
	assert.Equal(t, "app support-desk has 0 active session(s)\n"+
		`closed every session of app support-desk: the platform answered code "200", data {"count":0}`+"\n", res.stdout)
	assert.EqualValues(t, 2, p.sim.Requests(simulator.EndpointStopAll))
}

func TestSessionsStopAllDryRun(t *testing.T) {
	p := startPlatform(t)
	res := p.run(t, nil, "sessions", "stop", "--app=museum-guide", "--all", "--dry-run")
	require.Equal(t, exitOK, res.code)
	assert.Empty(t, res.stderr)
	assert.Contains(t, res.stdout, "app museum-guide has 2 active session(s), the oldest started ")
	assert.True(t, strings.HasSuffix(res.stdout, "dry run: every session of app museum-guide would be closed (distroyCallSessionsByAppId); nothing was stopped\n"), res.stdout)
	assert.Zero(t, p.sim.Requests(simulator.EndpointStopAll))
	assert.Equal(t, 2, p.sim.InUse(p.id("museum-guide")))
}

func TestSessionsStopAllFailures(t *testing.T) {
	p := startPlatform(t)
	app := p.id("museum-guide")

	p.faults.SetFault(app, simulator.EndpointStopAll, platformtest.Fault{Kind: platformtest.FaultSuccessFalse, Times: 1})
	res := p.run(t, nil, "sessions", "stop", "--app=museum-guide", "--all", "--yes")
	assert.Equal(t, exitFailed, res.code)
	assert.Equal(t, "duix_exporter sessions stop: closing every session of app museum-guide: distroyCallSessionsByAppId (app museum-guide): api, code 500: success is false\n", res.stderr)
	assert.NotContains(t, res.stdout, "closed")
	assert.Equal(t, 2, p.sim.InUse(app))

	// Without the list there is no count to show: the platform is not
	// asked to close anything.
	p.faults.SetFault(app, simulator.EndpointSessions, platformtest.Fault{Kind: platformtest.FaultHTML502, Times: 1})
	res = p.run(t, nil, "sessions", "stop", "--app=museum-guide", "--all", "--yes")
	assert.Equal(t, exitFailed, res.code)
	assert.Contains(t, res.stderr, "listing the sessions of app museum-guide: getconcurrentList (app museum-guide): http: HTTP 502")
	assert.EqualValues(t, 1, p.sim.Requests(simulator.EndpointStopAll), "only the first, faulted, call")
	assert.Equal(t, 2, p.sim.InUse(app))
}

func TestSessionsStopManyRefusesWithoutATerminalOrYes(t *testing.T) {
	p := startPlatform(t)
	old := p.startOld(t, "support-desk", "1081", 5*time.Hour)
	for _, tc := range []struct {
		mode, want string
	}{
		{"--older-than=2h", "not stopping 1 session(s) of app support-desk: stdin is not a terminal, so there is no one to confirm; pass --yes to stop them without asking"},
		{"--all", "not closing the sessions of app support-desk: stdin is not a terminal, so there is no one to confirm; pass --yes to close them without asking"},
	} {
		res := p.run(t, nil, "sessions", "stop", "--app=support-desk", tc.mode)
		assert.Equal(t, exitDeclined, res.code, tc.mode)
		assert.Equal(t, "duix_exporter sessions stop: "+tc.want+"\n", res.stderr, tc.mode)
	}
	assert.Zero(t, p.sim.Requests(simulator.EndpointStop), "the platform is not asked to stop anything")
	assert.Zero(t, p.sim.Requests(simulator.EndpointStopAll))
	assert.True(t, p.activeIDs("support-desk")[old])
	assert.Equal(t, 4, p.sim.InUse(p.id("support-desk")))
}

func TestSessionsStopNeedsExactlyOneOfSessionOlderThanAll(t *testing.T) {
	p := startPlatform(t)
	for _, tc := range []struct {
		args []string
		want string
	}{
		{nil, "give exactly one of --session ID, --older-than DURATION or --all: none was given"},
		{[]string{"--session=abc", "--all"}, "--session and --all were given"},
		{[]string{"--session=abc", "--older-than=2h"}, "--session and --older-than were given"},
		{[]string{"--older-than=2h", "--all"}, "--older-than and --all were given"},
		{[]string{"--session=abc", "--older-than=2h", "--all"}, "--session and --older-than and --all were given"},
		{[]string{"--session=", "--all"}, "--session and --all were given"},
		{[]string{"--older-than=", "--all"}, "--older-than and --all were given"},
		{[]string{"--no-all"}, "none was given"},
		{[]string{"--session=abc", "--dry-run"}, "--dry-run goes with --older-than or --all, not with --session"},
		{[]string{"--older-than="}, "--older-than is not a duration such as 90m, 2h or 1d"},
		{[]string{"--older-than=two-hours-SECRETISH"}, "--older-than is not a duration such as 90m, 2h or 1d"},
		{[]string{"--older-than=0s"}, "--older-than must be longer than zero (to close every session, use --all)"},
		{[]string{"--older-than=-1h"}, "--older-than must be longer than zero"},
	} {
		args := append([]string{"sessions", "stop", "--app=support-desk", "--yes"}, tc.args...)
		res := p.run(t, nil, args...)
		assert.Equal(t, exitUsage, res.code, "%v", tc.args)
		assert.Contains(t, res.stderr, tc.want, "%v", tc.args)
		assert.NotContains(t, res.stderr, "SECRETISH", "a value that failed to parse is not repeated")
		assert.Empty(t, res.stdout, "%v", tc.args)
	}
	for ep, n := range p.requests() {
		assert.Zero(t, n, "no call reaches the platform: %s", ep)
	}
	assert.Equal(t, 3, p.sim.InUse(p.id("support-desk")))
}

func TestParseAge(t *testing.T) {
	for in, want := range map[string]time.Duration{
		"90m": 90 * time.Minute, "2h": 2 * time.Hour, "1h30m": 90 * time.Minute, "1.5h": 90 * time.Minute,
		"1d": 24 * time.Hour, "1w": 7 * 24 * time.Hour, "1s": time.Second,
	} {
		got, err := parseAge(in)
		require.NoError(t, err, in)
		assert.Equal(t, want, got, in)
	}
	for _, in := range []string{"", "0", "0s", "0d", "-5m", "2", "h", "2 h", "1y2", "9999999999999999999h"} {
		_, err := parseAge(in)
		assert.Error(t, err, in)
	}
}
