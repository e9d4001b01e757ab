package operator

import (
	"encoding/json"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/duix-exporter/duix_exporter/simulator"
)

func TestSessionsListTable(t *testing.T) {
	p := startPlatform(t)
	res := p.run(t, nil, "sessions", "list", "--app=sales-avatar")
	require.Equal(t, exitOK, res.code)
	assert.Empty(t, res.stderr)
	rows := tableRows(t, res.stdout)
	assert.Equal(t, []string{"SESSION ID", "CONVERSATION", "STARTED (UTC)", "AGE", "appId", "status"}, rows["SESSION ID"],
		"the record's other fields get a column each")
	want := p.sim.Sessions(p.id("sales-avatar"))
	require.Len(t, want, 8)
	for _, s := range want {
		row := rows[s.ID]
		require.Len(t, row, 6, "row of %s", s.ID)
		assert.Equal(t, s.ConversationID, row[1])
		assert.Equal(t, s.Start.UTC().Format(time.DateTime), row[2])
		assert.Equal(t, p.id("sales-avatar"), row[4])
		assert.Equal(t, "in_call", row[5])
	}
	assert.Contains(t, res.stdout, "8 active session(s)")
}

func TestSessionsListJSON(t *testing.T) {
	p := startPlatform(t)
	res := p.run(t, nil, "sessions", "list", "--app=museum-guide", "--output=json")
	require.Equal(t, exitOK, res.code)
	var out struct {
		App      string `json:"app"`
		Count    int    `json:"count"`
		Sessions []struct {
			ID             string          `json:"id"`
			ConversationID string          `json:"conversationId"`
			Start          time.Time       `json:"start"`
			Record         json.RawMessage `json:"record"`
		} `json:"sessions"`
	}
	require.NoError(t, json.Unmarshal([]byte(res.stdout), &out), res.stdout)
	want := p.sim.Sessions(p.id("museum-guide"))
	assert.Equal(t, "museum-guide", out.App)
	assert.Equal(t, len(want), out.Count)
	require.Len(t, out.Sessions, len(want))
	for i, s := range want {
		assert.Equal(t, s.ID, out.Sessions[i].ID)
		assert.Equal(t, s.ConversationID, out.Sessions[i].ConversationID)
		assert.True(t, s.Start.Truncate(time.Millisecond).Equal(out.Sessions[i].Start))
		var rec map[string]any
		require.NoError(t, json.Unmarshal(out.Sessions[i].Record, &rec))
		assert.Equal(t, "in_call", rec["status"], "the whole record is kept")
		assert.Equal(t, s.ID, rec["uuid"])
	}
}

func TestSessionsListWithoutSessions(t *testing.T) {
	p := startPlatform(t)
	for _, s := range p.sim.Sessions(p.id("museum-guide")) {
		require.True(t, p.sim.EndSession(p.id("museum-guide"), s.ID))
	}
	res := p.run(t, nil, "sessions", "list", "--app=museum-guide")
	require.Equal(t, exitOK, res.code)
	assert.Equal(t, "app museum-guide has no active sessions\n", res.stdout)

	res = p.run(t, nil, "sessions", "list", "--app=museum-guide", "--output=json")
	require.Equal(t, exitOK, res.code)
	assert.JSONEq(t, `{"app":"museum-guide","count":0,"sessions":[]}`, res.stdout)
}

func TestSessionsListOfAFailingApp(t *testing.T) {
	p := startPlatform(t)
	p.sim.SetFault(p.id("sales-avatar"), simulator.EndpointSessions, simulator.Fault{Kind: simulator.FaultTruncatedJSON})
	res := p.run(t, nil, "sessions", "list", "--app=sales-avatar", "--output=json")
	assert.Equal(t, exitFailed, res.code)
	assert.Empty(t, res.stdout, "no partial list")
	assert.Contains(t, res.stderr, "listing the sessions of app sales-avatar: decode: ")
}

func TestSessionsStop(t *testing.T) {
	p := startPlatform(t)
	app := p.id("sales-avatar")
	victim := p.sim.Sessions(app)[3]
	res := p.run(t, nil, "sessions", "stop", "--app=sales-avatar", "--session="+victim.ID, "--yes")
	require.Equal(t, exitOK, res.code)
	assert.Equal(t, "stopped session "+victim.ID+` of app sales-avatar: the platform answered code "200", message "", data true`+"\n", res.stdout)
	assert.Equal(t, 7, p.sim.InUse(app), "the slot is free")
	for _, s := range p.sim.Sessions(app) {
		assert.NotEqual(t, victim.ID, s.ID)
	}

	// Stopping it again: the platform no longer knows it as active.
	res = p.run(t, nil, "sessions", "stop", "--app=sales-avatar", "--session="+victim.ID, "--yes")
	assert.Equal(t, exitNotFound, res.code)
	assert.Contains(t, res.stderr, "is unknown or no longer active")
	assert.Contains(t, res.stderr, `code "404"`)
	assert.Empty(t, res.stdout)
}

func TestSessionsStopOfAnEndedOrUnknownSession(t *testing.T) {
	p := startPlatform(t)
	app := p.id("support-desk")
	ended := p.sim.Sessions(app)[0]
	require.True(t, p.sim.EndSession(app, ended.ID))
	for _, id := range []string{ended.ID, "00000000-0000-4000-8000-000000000000"} {
		res := p.run(t, nil, "sessions", "stop", "--app=support-desk", "--session="+id, "--yes")
		assert.Equal(t, exitNotFound, res.code, id)
		assert.Contains(t, res.stderr, "session "+id+" of app support-desk is unknown or no longer active")
	}
	assert.Equal(t, 2, p.sim.InUse(app), "nothing else was stopped")
}

func TestSessionsStopRefusesWithoutATerminalOrYes(t *testing.T) {
	p := startPlatform(t)
	app := p.id("museum-guide")
	s := p.sim.Sessions(app)[0]
	res := p.run(t, nil, "sessions", "stop", "--app=museum-guide", "--session="+s.ID)
	assert.Equal(t, exitDeclined, res.code)
	assert.Contains(t, res.stderr, "stdin is not a terminal")
	assert.Contains(t, res.stderr, "--yes")
	assert.Empty(t, res.stdout)
	assert.Zero(t, p.sim.Requests(simulator.EndpointStop), "the platform is not asked")
	assert.Equal(t, 2, p.sim.InUse(app))
}

func TestSessionsStopOfAFailingApp(t *testing.T) {
	p := startPlatform(t)
	app := p.id("museum-guide")
	s := p.sim.Sessions(app)[0]
	p.sim.SetFault(app, simulator.EndpointStop, simulator.Fault{Kind: simulator.FaultHTML502})
	res := p.run(t, nil, "sessions", "stop", "--app=museum-guide", "--session="+s.ID, "--yes")
	assert.Equal(t, exitFailed, res.code)
	assert.Contains(t, res.stderr, "stopping session "+s.ID+" of app museum-guide: http: sessionStop: HTTP 502")
	assert.False(t, strings.Contains(res.stdout, "stopped"))
	assert.Equal(t, 2, p.sim.InUse(app))
}
