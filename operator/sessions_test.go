package operator

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/alecthomas/kingpin/v2"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/duix-exporter/duix_exporter/internal/platformtest"
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
	p.faults.SetFault(p.id("sales-avatar"), simulator.EndpointSessions, platformtest.Fault{Kind: platformtest.FaultTruncatedJSON})
	res := p.run(t, nil, "sessions", "list", "--app=sales-avatar", "--output=json")
	assert.Equal(t, exitFailed, res.code)
	assert.False(t, json.Valid([]byte(res.stdout)), "a list cut short is not a JSON document")
	assert.Contains(t, res.stderr, "listing the sessions of app sales-avatar: getconcurrentList (app sales-avatar): decode: ")
}

func TestSessionsStop(t *testing.T) {
	p := startPlatform(t)
	app := p.id("sales-avatar")
	victim := p.sim.Sessions(app)[3]
	res := p.run(t, nil, "sessions", "stop", "--app=sales-avatar", "--session="+victim.ID, "--yes")
	require.Equal(t, exitOK, res.code)
	assert.Equal(t, "stopped session "+victim.ID+` of app sales-avatar: the platform answered code "200", data true`+"\n", res.stdout)
	assert.Equal(t, 7, p.sim.InUse(app), "the slot is free")
	for _, s := range p.sim.Sessions(app) {
		assert.NotEqual(t, victim.ID, s.ID)
	}

	// Stopping it again: the platform no longer knows it as active.
	res = p.run(t, nil, "sessions", "stop", "--app=sales-avatar", "--session="+victim.ID, "--yes")
	assert.Equal(t, exitNotFound, res.code)
	assert.Contains(t, res.stderr, "is unknown or no longer active")
	assert.Contains(t, res.stderr, "api, code 404")
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
	p.faults.SetFault(app, simulator.EndpointStop, platformtest.Fault{Kind: platformtest.FaultHTML502})
	res := p.run(t, nil, "sessions", "stop", "--app=museum-guide", "--session="+s.ID, "--yes")
	assert.Equal(t, exitFailed, res.code)
	assert.Contains(t, res.stderr, "stopping session "+s.ID+" of app museum-guide: sessionStop (app museum-guide): http: HTTP 502")
	assert.False(t, strings.Contains(res.stdout, "stopped"))
	assert.Equal(t, 2, p.sim.InUse(app))
}

// firstRow is stdout for a streaming test: it tells when a session row
// has been written.
type firstRow struct {
	mu      sync.Mutex
	buf     bytes.Buffer
	printed chan struct{}
	once    sync.Once
}

func (w *firstRow) Write(p []byte) (int, error) {
	w.mu.Lock()
	defer w.mu.Unlock()
	if bytes.Contains(p, []byte("session-0")) {
		w.once.Do(func() { close(w.printed) })
	}
	return w.buf.Write(p)
}

// sessions list prints each session as it arrives: the first rows are out
// while the platform is still sending the list, which is never held whole
// (a list of a million sessions needs no more memory than one of ten).
func TestSessionsListStreams(t *testing.T) {
	for _, output := range []string{"table", "json"} {
		t.Run(output, func(t *testing.T) {
			out := &firstRow{printed: make(chan struct{})}
			streamed := make(chan bool, 1)
			srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
				_, _ = io.WriteString(w, `{"success":true,"code":"0","data":{"total":2001,"list":[`)
				for i := range 2000 {
					fmt.Fprintf(w, `{"uuid":"session-%d","conversationId":"c","startTime":1700000000000,"status":"in_call"},`, i)
				}
				w.(http.Flusher).Flush()
				select {
				case <-out.printed: // the end of the list comes after its start was printed
					streamed <- true
				case <-time.After(10 * time.Second): // only when the list is held
					streamed <- false
				}
				_, _ = io.WriteString(w, `{"uuid":"last"}]}}`)
			}))
			t.Cleanup(srv.Close)
			path := filepath.Join(t.TempDir(), "duix.yml")
			require.NoError(t, os.WriteFile(path, fmt.Appendf(nil, "api: {base_url: %q}\napps: [{name: a, app_id: x, app_key: k}]\n", srv.URL), 0o600))
			app := kingpin.New("duix_exporter", "")
			cmds := Register(app)
			cmd, err := app.Parse([]string{"sessions", "list", "--app=a", "--output=" + output})
			require.NoError(t, err)
			var stderr bytes.Buffer
			code, _ := cmds.Run(context.Background(), cmd, Env{Program: "duix_exporter", ConfigFile: path, Stdout: out, Stderr: &stderr})
			require.Equal(t, exitOK, code, stderr.String())
			require.True(t, <-streamed, "the first sessions were printed before the list ended")
			text := out.buf.String()
			if output == "json" {
				var got struct {
					Count    int              `json:"count"`
					Sessions []map[string]any `json:"sessions"`
				}
				require.NoError(t, json.Unmarshal([]byte(text), &got))
				assert.Equal(t, 2001, got.Count)
				assert.Len(t, got.Sessions, 2001)
				return
			}
			assert.Contains(t, text, "2001 active session(s)")
			assert.Equal(t, 2001+2, strings.Count(text, "\n"), "a header per block of 1000 rows is not repeated: header, rows, footer")
		})
	}
}
