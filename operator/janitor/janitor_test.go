package janitor_test

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"log/slog"
	"net"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/go-kit/log"
	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/testutil"
	toolkit "github.com/prometheus/exporter-toolkit/web"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"golang.org/x/crypto/bcrypt"

	"github.com/duix-exporter/duix_exporter/client"
	"github.com/duix-exporter/duix_exporter/config"
	"github.com/duix-exporter/duix_exporter/internal/platformtest"
	"github.com/duix-exporter/duix_exporter/operator/janitor"
	"github.com/duix-exporter/duix_exporter/simulator"
)

// The apps of the tests: kiosk and lobby opt in with a max_session_age of
// 1h, web does not.
var testApps = []struct{ name, id string }{{"kiosk", "1001"}, {"lobby", "1002"}, {"web", "1003"}}

// source is the exporter as the janitor sees it: a real client per app
// (against the simulator) and the lifecycle's first sightings, which the
// test sets.
type source struct {
	pool *client.Pool
	mu   sync.Mutex
	seen map[string]time.Time // app + "/" + session ID
}

func (s *source) AppClient(name string) *client.Client { return s.pool.Client(name) }

func (s *source) FirstSeen(app, id string) (time.Time, bool) {
	s.mu.Lock()
	defer s.mu.Unlock()
	t, ok := s.seen[app+"/"+id]
	return t, ok
}

// fixture is a janitor in front of the simulator.
type fixture struct {
	t     *testing.T
	sim   *simulator.Simulator
	src   *source
	j     *janitor.Janitor
	reg   *prometheus.Registry
	logs  *platformtest.Buffer
	base  string       // the API's base URL
	clock atomic.Int64 // the janitor's now, Unix nanoseconds
	// wrap, when set, stands between the client and the simulator: a
	// platform that behaves otherwise.
	wrap  func(w http.ResponseWriter, r *http.Request, next http.Handler)
	stops atomic.Int64 // sessionStop calls that reached the platform
	lists atomic.Int64 // session lists that reached the platform
}

// newFixture serves the simulator and starts a janitor with the
// configuration's janitor section set to section (YAML flow mapping, or
// "" for the defaults).
func newFixture(t *testing.T, section string) *fixture {
	t.Helper()
	f := &fixture{t: t, sim: simulator.New(), logs: &platformtest.Buffer{}}
	f.clock.Store(time.Now().UnixNano())
	for _, a := range testApps {
		f.sim.AddApp(simulator.App{ID: a.id, Key: "key-" + a.id, Allowance: 20})
	}
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		switch {
		case strings.HasSuffix(r.URL.Path, "/"+simulator.EndpointStop):
			f.stops.Add(1)
		case strings.HasSuffix(r.URL.Path, "/"+simulator.EndpointSessions):
			f.lists.Add(1)
		}
		if f.wrap != nil {
			f.wrap(w, r, f.sim)
			return
		}
		f.sim.ServeHTTP(w, r)
	}))
	t.Cleanup(srv.Close)
	f.base = srv.URL + simulator.BasePath

	cfg := f.configure(section, optedIn, optedIn)
	pool, err := client.NewPool(cfg, client.PoolOptions{})
	require.NoError(t, err)
	t.Cleanup(pool.Close)
	f.src = &source{pool: pool, seen: map[string]time.Time{}}

	f.reg = prometheus.NewPedanticRegistry()
	f.j, err = janitor.New(janitor.Options{
		Source:     f.src,
		Logger:     log.NewLogfmtLogger(f.logs),
		Registerer: f.reg,
		Now:        func() time.Time { return time.Unix(0, f.clock.Load()) },
	})
	require.NoError(t, err)
	require.NoError(t, f.j.Apply(cfg))
	return f
}

// optedIn is the janitor section of kiosk and lobby unless a test says
// otherwise.
const optedIn = "{max_session_age: 1h}"

// configure returns a configuration of the test apps with the janitor
// section section and the janitor sections of kiosk and lobby ("": the
// app does not opt in; web never does).
func (f *fixture) configure(section, kiosk, lobby string) *config.Config {
	f.t.Helper()
	var b strings.Builder
	fmt.Fprintf(&b, "api: {base_url: %q, timeout: 2s}\n", f.base)
	if section != "" {
		fmt.Fprintf(&b, "janitor: %s\n", section)
	}
	b.WriteString("apps:\n")
	for _, a := range testApps {
		fmt.Fprintf(&b, "  - {name: %s, app_id: %q, app_key: key-%s", a.name, a.id, a.id)
		if jan := map[string]string{"kiosk": kiosk, "lobby": lobby}[a.name]; jan != "" {
			fmt.Fprintf(&b, ", janitor: %s", jan)
		}
		b.WriteString("}\n")
	}
	cfg, err := config.Parse([]byte(b.String()), "")
	require.NoError(f.t, err)
	return cfg
}

// reload applies configure(section, kiosk, lobby) to the janitor, as a
// SIGHUP would.
func (f *fixture) reload(section, kiosk, lobby string) {
	f.t.Helper()
	require.NoError(f.t, f.j.Apply(f.configure(section, kiosk, lobby)))
}

// reloadDuringFirstStop makes the platform apply reload(section, kiosk,
// lobby) while it answers the first stop, before the janitor reads the
// answer, and returns the count of the stops that reach it afterwards.
func (f *fixture) reloadDuringFirstStop(section, kiosk, lobby string) *atomic.Int64 {
	var reloaded atomic.Bool
	after := &atomic.Int64{}
	f.wrap = func(w http.ResponseWriter, r *http.Request, next http.Handler) {
		stop := strings.HasSuffix(r.URL.Path, "/"+simulator.EndpointStop)
		if stop && reloaded.Load() {
			after.Add(1)
		}
		next.ServeHTTP(w, r)
		if stop && reloaded.CompareAndSwap(false, true) {
			f.reload(section, kiosk, lobby)
		}
	}
	return after
}

// keepListingStopped makes the platform acknowledge every stop but keep
// listing the session, as an eventually consistent one may.
func (f *fixture) keepListingStopped() {
	f.before(simulator.EndpointStop, func(w http.ResponseWriter, r *http.Request, next http.Handler) bool {
		w.Header().Set("Content-Type", "application/json")
		_, _ = io.WriteString(w, `{"code":"0","success":true,"message":"ok","data":true}`)
		return true
	})
}

// before runs fn before the platform answers a call of endpoint; fn
// answers it itself when it returns true.
func (f *fixture) before(endpoint string, fn func(w http.ResponseWriter, r *http.Request, next http.Handler) bool) {
	f.wrap = func(w http.ResponseWriter, r *http.Request, next http.Handler) {
		if !strings.HasSuffix(r.URL.Path, "/"+endpoint) || !fn(w, r, next) {
			next.ServeHTTP(w, r)
		}
	}
}

func (f *fixture) now() time.Time { return time.Unix(0, f.clock.Load()) }

func (f *fixture) advance(d time.Duration) { f.clock.Add(int64(d)) }

// session starts a session of app that began age ago.
func (f *fixture) session(app string, age time.Duration) string {
	f.t.Helper()
	id, err := f.sim.StartSessionAt(appID(app), "conv-1", f.now().Add(-age))
	require.NoError(f.t, err)
	return id
}

// sessions starts n sessions of app, age old.
func (f *fixture) sessions(app string, n int, age time.Duration) {
	f.t.Helper()
	for range n {
		f.session(app, age)
	}
}

func appID(name string) string {
	for _, a := range testApps {
		if a.name == name {
			return a.id
		}
	}
	return "0"
}

// listed returns the IDs of app's active sessions on the platform.
func (f *fixture) listed(app string) []string {
	var ids []string
	for _, s := range f.sim.Sessions(appID(app)) {
		ids = append(ids, s.ID)
	}
	return ids
}

// post sends a webhook request and returns its status and answer.
func (f *fixture) post(body string) (int, string) {
	f.t.Helper()
	req := httptest.NewRequest(http.MethodPost, "/webhook", strings.NewReader(body))
	rec := httptest.NewRecorder()
	f.j.ServeHTTP(rec, req)
	return rec.Code, rec.Body.String()
}

// postStuck posts a firing DuixSessionStuck alert for each app, requires
// the status want and returns the answer.
func (f *fixture) postStuck(want int, apps ...string) string {
	f.t.Helper()
	alerts := make([]webhookAlert, len(apps))
	for i, app := range apps {
		alerts[i] = stuck(app)
	}
	code, answer := f.post(payload(f.t, alerts...))
	require.Equal(f.t, want, code, answer)
	return answer
}

// counter returns the value of a janitor counter.
func (f *fixture) counter(name, label, value string) float64 {
	f.t.Helper()
	mfs, err := f.reg.Gather()
	require.NoError(f.t, err)
	for _, mf := range mfs {
		if mf.GetName() != name {
			continue
		}
		for _, m := range mf.GetMetric() {
			for _, lp := range m.GetLabel() {
				if lp.GetName() == label && lp.GetValue() == value {
					return m.GetCounter().GetValue()
				}
			}
		}
	}
	f.t.Fatalf("no series %s{%s=%q}", name, label, value)
	return 0
}

func (f *fixture) stopped(app string) float64 {
	return f.counter("duix_janitor_sessions_stopped_total", "app", app)
}

func (f *fixture) wouldStop(app string) float64 {
	return f.counter("duix_janitor_sessions_would_stop_total", "app", app)
}

func (f *fixture) refusals(reason string) float64 {
	return f.counter("duix_janitor_refusals_total", "reason", reason)
}

func (f *fixture) requests(outcome string) float64 {
	return f.counter("duix_janitor_webhook_requests_total", "outcome", outcome)
}

// webhookAlert is one alert of a payload.
type webhookAlert struct {
	Status      string            `json:"status"`
	Labels      map[string]string `json:"labels"`
	Annotations map[string]string `json:"annotations,omitempty"`
	StartsAt    time.Time         `json:"startsAt"`
	EndsAt      time.Time         `json:"endsAt"`
}

// payload renders an Alertmanager webhook payload (version 4) of alerts.
func payload(t *testing.T, alerts ...webhookAlert) string {
	t.Helper()
	status := "resolved"
	for i := range alerts {
		if alerts[i].Status == "firing" {
			status = "firing"
		}
		if alerts[i].StartsAt.IsZero() {
			alerts[i].StartsAt = time.Now().Add(-time.Hour)
		}
	}
	b, err := json.Marshal(map[string]any{
		"version": "4", "groupKey": `{}:{alertname="DuixSessionStuck"}`, "truncatedAlerts": 0,
		"status": status, "receiver": "duix-janitor", "groupLabels": map[string]string{},
		"commonLabels": map[string]string{}, "commonAnnotations": map[string]string{},
		"externalURL": "http://alertmanager.example:9093", "alerts": alerts,
	})
	require.NoError(t, err)
	return string(b)
}

// stuck is a firing DuixSessionStuck alert about app, as the shipped rule
// labels it.
func stuck(app string) webhookAlert {
	return webhookAlert{Status: "firing", Labels: map[string]string{
		"alertname": "DuixSessionStuck", "app": app, "job": "duix-exporter",
		"instance": "exporter:9866", "severity": "warning",
	}}
}

func TestStopsOnlyOldSessionsOfTheAlertedApp(t *testing.T) {
	f := newFixture(t, "")
	old := f.session("kiosk", 3*time.Hour)
	young := f.session("kiosk", 10*time.Minute)
	lobbyOld := f.session("lobby", 3*time.Hour)

	answer := f.postStuck(http.StatusOK, "kiosk")
	assert.Contains(t, answer, `app "kiosk": stopped 1 of 1 session(s) older than 1h`)
	assert.Equal(t, []string{young}, f.listed("kiosk"), "the old session is stopped, the young one kept")
	assert.Equal(t, []string{lobbyOld}, f.listed("lobby"), "another app is not touched without its own alert")
	assert.Equal(t, 1.0, f.stopped("kiosk"))
	assert.Equal(t, 0.0, f.stopped("lobby"))
	assert.Equal(t, 1.0, f.requests("handled"))

	// The decision is logged with the app, the session, its age and dry_run.
	assert.Regexp(t, `action=stopped app=kiosk session=`+old+` age=3h0m0s dry_run=false`, f.logs.String())
	recent := f.j.Recent()
	require.Len(t, recent, 1)
	recent[0].Age = recent[0].Age.Round(time.Second) // the record's start is in milliseconds
	assert.Equal(t, janitor.Action{Time: f.now(), App: "kiosk", SessionID: old, Age: 3 * time.Hour,
		Action: janitor.ActionStopped, Count: 1}, recent[0])
	assert.True(t, f.j.Enabled())
}

func TestSeriesExistFromTheStart(t *testing.T) {
	f := newFixture(t, "")
	for _, r := range janitor.Reasons {
		assert.Equal(t, 0.0, f.refusals(r), r)
	}
	for _, o := range janitor.Outcomes {
		assert.Equal(t, 0.0, f.requests(o), o)
	}
	for _, app := range []string{"kiosk", "lobby"} {
		assert.Equal(t, 0.0, f.stopped(app))
		assert.Equal(t, 0.0, f.wouldStop(app))
	}
	// An app not opted in has no per-app series.
	n, err := testutil.GatherAndCount(f.reg, "duix_janitor_sessions_stopped_total", "duix_janitor_sessions_would_stop_total")
	require.NoError(t, err)
	assert.Equal(t, 4, n)
}

// The metric tables of README.md and docs/janitor.md list every reason and outcome, and no other.
func TestDocumentedReasonsAndOutcomes(t *testing.T) {
	for _, doc := range []string{"../../README.md", "../../docs/janitor.md"} {
		b, err := os.ReadFile(doc)
		require.NoError(t, err)
		for metric, want := range map[string][]string{"duix_janitor_refusals_total": janitor.Reasons, "duix_janitor_webhook_requests_total": janitor.Outcomes} {
			row := regexp.MustCompile("(?m)^\\| `" + metric + "` \\|.*$").FindString(string(b))
			require.NotEmpty(t, row, "%s has a row for %s", doc, metric)
			listed := map[string]bool{} // the values named after the metric's cell, the label's name left out
			for _, m := range regexp.MustCompile("`([a-z0-9_]+)`").FindAllStringSubmatch(strings.SplitN(row, "|", 3)[2], -1) {
				listed[m[1]] = m[1] != "reason" && m[1] != "outcome"
			}
			for _, v := range want {
				assert.True(t, listed[v], "%s lists %s of %s", doc, v, metric)
				delete(listed, v)
			}
			for v, value := range listed {
				assert.False(t, value, "%s lists %s of %s, which the janitor does not have", doc, v, metric)
			}
		}
	}
}

func TestNothingStoppedWithoutAFiringAlertOfAnOptedInApp(t *testing.T) {
	tests := []struct {
		name   string
		alert  func() webhookAlert
		reason string
		answer string
	}{
		{"resolved alert", func() webhookAlert { a := stuck("kiosk"); a.Status = "resolved"; return a },
			"resolved", "not acted on: resolved"},
		{"another alert", func() webhookAlert { a := stuck("kiosk"); a.Labels["alertname"] = "DuixConcurrencyExhausted"; return a },
			"other_alert", "not acted on: not DuixSessionStuck"},
		{"app not opted in", func() webhookAlert { return stuck("web") },
			"not_opted_in", `not acted on: app "web" has not opted in to the janitor`},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			f := newFixture(t, "")
			f.session("kiosk", 3*time.Hour)
			webOld := f.session("web", 3*time.Hour)
			code, answer := f.post(payload(t, tt.alert()))
			require.Equal(t, http.StatusOK, code, answer)
			assert.Contains(t, answer, tt.answer)
			assert.Len(t, f.listed("kiosk"), 1)
			assert.Equal(t, []string{webOld}, f.listed("web"))
			assert.Zero(t, f.stops.Load(), "no stop reached the platform")
			assert.Equal(t, 1.0, f.refusals(tt.reason))
			assert.Equal(t, 0.0, f.stopped("kiosk"))
		})
	}
}

func TestUnknownAppRefusesTheWholeRequest(t *testing.T) {
	f := newFixture(t, "")
	f.session("kiosk", 3*time.Hour)
	long := strings.Repeat("x", 500)
	for _, app := range []string{"elsewhere", long, ""} {
		answer := f.postStuck(http.StatusUnprocessableEntity, "kiosk", app)
		assert.Len(t, f.listed("kiosk"), 1, "the known app of the same request is not acted on either")
		assert.NotContains(t, answer, long)
		lines := strings.Split(strings.TrimSpace(answer), "\n")
		require.Len(t, lines, 2, "a line per alert refused, then the verdict")
		assert.Regexp(t, `^alerts\[1\]: refused: `, lines[0])
		assert.Equal(t, "nothing done: route only this exporter's apps to its janitor", lines[1])
	}
	assert.Zero(t, f.stops.Load()+f.lists.Load(), "the platform is not called")
	assert.Equal(t, 2.0, f.refusals("unknown_app"))
	assert.Equal(t, 1.0, f.refusals("no_app_label"))
	assert.Equal(t, 3.0, f.requests("unknown_app"))
	assert.Regexp(t, `level=warn msg="Janitor decision" action=refused app=elsewhere reason=unknown_app`, f.logs.String())
	assert.Regexp(t, `level=warn msg="Janitor decision" action=refused app= reason=no_app_label`, f.logs.String(), "a routing mistake is a warning")
	assert.NotContains(t, f.logs.String(), long, "a label value is logged cut")
	assert.Contains(t, f.logs.String(), strings.Repeat("x", 128)+"...")
}

func TestPayloadThresholdsAndSessionIDsAreIgnored(t *testing.T) {
	f := newFixture(t, "")
	young := f.session("kiosk", 20*time.Minute)
	old := f.session("kiosk", 2*time.Hour)
	a := stuck("kiosk")
	// What a crafted alert could carry to steer the janitor: none of it is read.
	a.Labels["session_id"] = young
	a.Labels["max_session_age"] = "1m"
	a.Annotations = map[string]string{"session": young, "threshold": "60", "value": "99999", "description": "SECRET-annotation"}
	code, answer := f.post(payload(t, a))
	require.Equal(t, http.StatusOK, code, answer)
	assert.Equal(t, []string{young}, f.listed("kiosk"), "only the session old by the exporter's own knowledge is stopped")
	assert.Equal(t, 1.0, f.stopped("kiosk"))
	assert.NotContains(t, f.logs.String(), old+"x")
	assert.NotContains(t, f.logs.String(), "SECRET")
}

func TestFirstSeenWhenTheRecordHasNoStart(t *testing.T) {
	f := newFixture(t, "")
	startTime := regexp.MustCompile(`,"startTime":\d+`)
	f.wrap = func(w http.ResponseWriter, r *http.Request, next http.Handler) {
		rec := httptest.NewRecorder()
		next.ServeHTTP(rec, r)
		w.WriteHeader(rec.Code)
		_, _ = w.Write(startTime.ReplaceAll(rec.Body.Bytes(), nil))
	}
	// The records carry no start: the ages are those the lifecycle knows.
	seenLongAgo := f.session("kiosk", 0)
	seenLately := f.session("kiosk", 0)
	unseen := f.session("kiosk", 5*time.Hour) // old, but the exporter cannot know it
	f.src.seen["kiosk/"+seenLongAgo] = f.now().Add(-90 * time.Minute)
	f.src.seen["kiosk/"+seenLately] = f.now().Add(-5 * time.Minute)

	answer := f.postStuck(http.StatusOK, "kiosk")
	assert.ElementsMatch(t, []string{seenLately, unseen}, f.listed("kiosk"))
	assert.Contains(t, answer, "1 younger, 1 without a known start")
	assert.Regexp(t, `session=`+seenLongAgo+` age=1h30m0s`, f.logs.String())
}

// An ID that is not valid UTF-8 (raw bytes, or a lone surrogate escape) is decoded with U+FFFD in it: a stop would go
// to an ID the platform does not have, cost a stop of the budget and be taken as gone. It is refused instead, and said.
func TestOldSessionsWhoseIDIsNotUTF8AreRefused(t *testing.T) {
	f := newFixture(t, "{max_stops_per_hour: 2}")
	raw, escaped := f.session("kiosk", 2*time.Hour), f.session("kiosk", 3*time.Hour)
	f.session("kiosk", 2*time.Hour)
	f.wrap = func(w http.ResponseWriter, r *http.Request, next http.Handler) {
		rec := httptest.NewRecorder()
		next.ServeHTTP(rec, r)
		b := bytes.Replace(rec.Body.Bytes(), []byte(`"`+raw+`"`), []byte("\"\xff"+raw+`"`), -1)
		w.WriteHeader(rec.Code)
		_, _ = w.Write(bytes.Replace(b, []byte(`"`+escaped+`"`), []byte(`"\ud800`+escaped+`"`), -1))
	}

	answer := f.postStuck(http.StatusOK, "kiosk")
	assert.Contains(t, answer, "stopped 1 of 3 session(s) older than 1h; 0 already stopped or gone, 0 refused by the budget of 2 an hour, 0 failed")
	assert.Contains(t, answer, "; 2 not stopped: their IDs are not valid UTF-8")
	assert.Equal(t, int64(1), f.stops.Load(), "no stop for an ID the platform does not have")
	assert.ElementsMatch(t, []string{raw, escaped}, f.listed("kiosk"))
	assert.Equal(t, 2.0, f.refusals(janitor.ReasonIDNotUTF8))
	assert.Contains(t, f.logs.String(), "reason=id_not_utf8")

	// The budget was not spent on them: another old session is stopped.
	f.wrap = nil
	f.session("lobby", 2*time.Hour)
	assert.Contains(t, f.postStuck(http.StatusOK, "lobby"), "stopped 1 of 1 session(s)")
}

func TestBudgetAcrossAppsSlidingWindow(t *testing.T) {
	f := newFixture(t, "{max_stops_per_hour: 2}")
	f.sessions("kiosk", 3, 2*time.Hour)
	lobby := f.session("lobby", 2*time.Hour)

	answer := f.postStuck(http.StatusOK, "kiosk")
	assert.Contains(t, answer, "stopped 2 of 3 session(s) older than 1h; 0 already stopped or gone, 1 refused by the budget of 2 an hour")
	assert.Len(t, f.listed("kiosk"), 1)
	assert.Equal(t, 1.0, f.refusals("budget"))

	// The budget is for every app together.
	answer = f.postStuck(http.StatusOK, "lobby")
	assert.Contains(t, answer, "1 refused by the budget")
	assert.Equal(t, []string{lobby}, f.listed("lobby"))
	assert.Equal(t, 2.0, f.refusals("budget"))
	assert.Regexp(t, `level=warn msg="Janitor decision" action=refused app=lobby .* reason=budget dry_run=false`, f.logs.String())

	// Half an hour later the window still holds both stops; an hour after
	// them it holds none.
	f.advance(30 * time.Minute)
	f.post(payload(t, stuck("lobby")))
	assert.Equal(t, []string{lobby}, f.listed("lobby"))
	f.advance(31 * time.Minute)
	f.postStuck(http.StatusOK, "lobby", "kiosk")
	assert.Empty(t, f.listed("lobby"))
	assert.Empty(t, f.listed("kiosk"))
	assert.Equal(t, 4.0, f.stopped("kiosk")+f.stopped("lobby"))
}

func TestDryRunStopsNothingAndCountsOnce(t *testing.T) {
	f := newFixture(t, "{dry_run: true}")
	old := f.session("kiosk", 3*time.Hour)
	young := f.session("kiosk", time.Minute)
	for range 3 { // Alertmanager repeats
		answer := f.postStuck(http.StatusOK, "kiosk")
		assert.Contains(t, answer, "dry run: would have stopped")
	}
	assert.Equal(t, []string{old, young}, f.listed("kiosk"))
	assert.Zero(t, f.stops.Load(), "no stop reached the platform")
	assert.Equal(t, 1.0, f.wouldStop("kiosk"), "each session is counted once an hour")
	assert.Equal(t, 0.0, f.stopped("kiosk"))
	assert.Regexp(t, `action=would_stop app=kiosk session=`+old+` age=3h0m0s dry_run=true`, f.logs.String())
	assert.True(t, f.j.Recent()[len(f.j.Recent())-1].DryRun)
}

func TestRepeatedPostsStopOnce(t *testing.T) {
	f := newFixture(t, "")
	old := f.session("kiosk", 3*time.Hour)
	f.keepListingStopped()
	for range 3 {
		f.postStuck(http.StatusOK, "kiosk")
	}
	assert.Equal(t, int64(1), f.stops.Load(), "stopped once")
	assert.Equal(t, []string{old}, f.listed("kiosk"))
	assert.Equal(t, 1.0, f.stopped("kiosk"))
	assert.Equal(t, 2.0, f.refusals("already_stopped"))
	assert.Equal(t, 3.0, f.requests("handled"))

	// An hour after its stop, as the stop leaves the budget's window, a
	// session still listed is forgotten as stopped: it is stopped again.
	f.advance(time.Hour)
	f.postStuck(http.StatusOK, "kiosk")
	assert.Equal(t, int64(2), f.stops.Load())
}

// Under the budget the oldest sessions go first, whatever order the
// platform lists them in.
func TestTheOldestSessionsAreStoppedFirst(t *testing.T) {
	f := newFixture(t, "{max_stops_per_hour: 1}")
	ids := map[time.Duration]string{}
	for _, age := range []time.Duration{2 * time.Hour, 5 * time.Hour, 3 * time.Hour} { // listed in this order
		ids[age] = f.session("kiosk", age)
	}
	assert.Contains(t, f.postStuck(http.StatusOK, "kiosk"), "stopped 1 of 3 session(s) older than 1h; 0 already stopped or gone, 2 refused by the budget")
	assert.ElementsMatch(t, []string{ids[2*time.Hour], ids[3*time.Hour]}, f.listed("kiosk"), "the five-hour session is stopped")
	assert.Regexp(t, `level=warn msg="Janitor decision" action=refused app=kiosk session=\S+ age=3h0m0s reason=budget sessions=2 dry_run=false`, f.logs.String(),
		"the budget's refusal names the first session it refused and counts them all")
}

// A session is older than max_session_age only once its age is above it.
func TestASessionOfExactlyMaxSessionAgeIsKept(t *testing.T) {
	f := newFixture(t, "")
	f.clock.Store(time.Now().Truncate(time.Second).UnixNano()) // the record's start is in milliseconds
	id := f.session("kiosk", time.Hour)

	assert.Contains(t, f.postStuck(http.StatusOK, "kiosk"), "stopped 0 of 0 session(s) older than 1h; 0 already stopped or gone, 0 refused by the budget of 10 an hour, 0 failed, 1 younger")
	assert.Equal(t, []string{id}, f.listed("kiosk"))

	f.advance(time.Millisecond)
	assert.Contains(t, f.postStuck(http.StatusOK, "kiosk"), "stopped 1 of 1 session(s) older than 1h")
	assert.Empty(t, f.listed("kiosk"))
}

// A platform that lists a session twice gets one stop for it, and the
// answer counts it once.
func TestASessionListedTwiceIsStoppedOnce(t *testing.T) {
	f := newFixture(t, "")
	f.session("kiosk", 3*time.Hour)
	f.before(simulator.EndpointSessions, func(w http.ResponseWriter, r *http.Request, next http.Handler) bool {
		rec := httptest.NewRecorder()
		next.ServeHTTP(rec, r)
		var env map[string]any
		require.NoError(t, json.Unmarshal(rec.Body.Bytes(), &env))
		data, _ := env["data"].([]any)
		env["data"] = append(data, data...)
		w.Header().Set("Content-Type", "application/json")
		assert.NoError(t, json.NewEncoder(w).Encode(env))
		return true
	})

	answer := f.postStuck(http.StatusOK, "kiosk")
	assert.Contains(t, answer, "stopped 1 of 1 session(s) older than 1h; 0 already stopped or gone")
	assert.Equal(t, int64(1), f.stops.Load())
	assert.Equal(t, 0.0, f.refusals("already_stopped"))
}

// Two alerts about one app in a payload (say, from two Prometheus
// servers) make one decision about it.
func TestAnAppAlertedTwiceInAPayloadIsDecidedOnce(t *testing.T) {
	f := newFixture(t, "")
	f.sessions("kiosk", 2, 3*time.Hour)
	second := stuck("kiosk")
	second.Labels["instance"] = "exporter-2:9866"

	code, answer := f.post(payload(t, stuck("kiosk"), second))
	require.Equal(t, http.StatusOK, code, answer)
	assert.Equal(t, 1, strings.Count(answer, `app "kiosk":`), answer)
	assert.Contains(t, answer, "stopped 2 of 2 session(s)")
	assert.Equal(t, int64(1), f.lists.Load(), "its sessions are listed once")
}

func TestSessionGoneWhenStoppedIsNotAnError(t *testing.T) {
	f := newFixture(t, "")
	old := f.session("kiosk", 3*time.Hour)
	// The call ends between the list and the stop.
	f.wrap = func(w http.ResponseWriter, r *http.Request, next http.Handler) {
		next.ServeHTTP(w, r)
		if strings.HasSuffix(r.URL.Path, "/"+simulator.EndpointSessions) {
			f.sim.EndSession(appID("kiosk"), old)
		}
	}
	answer := f.postStuck(http.StatusOK, "kiosk")
	assert.Contains(t, answer, "stopped 0 of 1 session(s) older than 1h; 1 already stopped or gone")
	assert.Equal(t, 0.0, f.stopped("kiosk"))
	assert.Equal(t, 1.0, f.refusals("already_stopped"))
	assert.Equal(t, 1.0, f.requests("handled"))

	// Retried by Alertmanager: it is no longer listed, nothing to do.
	f.postStuck(http.StatusOK, "kiosk")
	assert.Equal(t, int64(1), f.stops.Load())
}

func TestPlatformFailureAsksForARetry(t *testing.T) {
	f := newFixture(t, "")
	f.session("kiosk", 3*time.Hour)
	f.before(simulator.EndpointStop, func(w http.ResponseWriter, r *http.Request, next http.Handler) bool {
		http.Error(w, "SECRET-upstream-body", http.StatusInternalServerError)
		return true
	})
	answer := f.postStuck(http.StatusBadGateway, "kiosk")
	assert.Contains(t, answer, "1 failed")
	assert.Equal(t, 1.0, f.requests("failed"))
	assert.Equal(t, 0.0, f.stopped("kiosk"))

	// Alertmanager retries; the platform answers again.
	f.wrap = nil
	answer = f.postStuck(http.StatusOK, "kiosk")
	assert.Empty(t, f.listed("kiosk"))
	assert.Equal(t, 1.0, f.stopped("kiosk"))
	assert.NotContains(t, answer+f.logs.String(), "SECRET")
}

func TestBadPayloads(t *testing.T) {
	f := newFixture(t, "")
	f.session("kiosk", 3*time.Hour)
	good := payload(t, stuck("kiosk"))
	tests := []struct {
		name, body, outcome string
		code                int
		answer              string
	}{
		{"not JSON", "SECRET-not-json {", "invalid", http.StatusBadRequest, "not a JSON object"},
		{"a list", "[" + good + "]", "invalid", http.StatusBadRequest, "wrong type"},
		{"null", "null", "invalid", http.StatusBadRequest, "null"},
		{"two objects", good + good, "invalid", http.StatusBadRequest, "data after the JSON object"},
		{"version 3", strings.Replace(good, `"version":"4"`, `"version":"3"`, 1), "invalid", http.StatusBadRequest, `the janitor reads version "4"`},
		{"no version", strings.Replace(good, `,"version":"4"`, "", 1), "invalid", http.StatusBadRequest, "no version"},
		{"no alerts", `{"version":"4","status":"firing"}`, "invalid", http.StatusBadRequest, "no alerts"},
		{"alert without status", `{"version":"4","alerts":[{"labels":{"alertname":"DuixSessionStuck","app":"kiosk"}}]}`,
			"invalid", http.StatusBadRequest, `alerts[0]: status must be "firing" or "resolved"`},
		{"alert without name", `{"version":"4","alerts":[{"status":"firing","labels":{"app":"kiosk"}}]}`,
			"invalid", http.StatusBadRequest, "alerts[0]: no alertname label"},
		{"labels of the wrong type", `{"version":"4","alerts":[{"status":"firing","labels":["kiosk"]}]}`,
			"invalid", http.StatusBadRequest, "wrong type"},
		{"over 1 MiB", strings.Replace(good, `"receiver"`, `"padding":"`+strings.Repeat("a", janitor.MaxPayloadBytes)+`","receiver"`, 1),
			"too_large", http.StatusRequestEntityTooLarge, "payload larger than 1048576 bytes"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			before := f.requests(tt.outcome)
			code, answer := f.post(tt.body)
			assert.Equal(t, tt.code, code, answer)
			assert.Contains(t, answer, tt.answer)
			assert.Equal(t, 1, strings.Count(strings.TrimSpace(answer), "\n")+1, "one line: %q", answer)
			assert.Equal(t, before+1, f.requests(tt.outcome))
		})
	}
	assert.Zero(t, f.stops.Load()+f.lists.Load(), "the platform is not called")
	assert.Len(t, f.listed("kiosk"), 1)
	assert.NotContains(t, f.logs.String(), "SECRET")

	// The same payload, well formed, acts.
	code, answer := f.post(good)
	require.Equal(t, http.StatusOK, code, answer)
	assert.Empty(t, f.listed("kiosk"))
}

func TestOnlyPostOnWebhook(t *testing.T) {
	f := newFixture(t, "")
	rec := httptest.NewRecorder()
	f.j.ServeHTTP(rec, httptest.NewRequest(http.MethodGet, "/webhook", nil))
	assert.Equal(t, http.StatusMethodNotAllowed, rec.Code)
	assert.Equal(t, "POST", rec.Header().Get("Allow"))
	assert.Equal(t, 1.0, f.requests("method_not_allowed"))

	rec = httptest.NewRecorder()
	f.j.ServeHTTP(rec, httptest.NewRequest(http.MethodGet, "/metrics", nil))
	assert.Equal(t, http.StatusNotFound, rec.Code, "the janitor's listener serves no metrics")
}

// The landing page's list of decisions keeps the last 32, newest first.
func TestRecentKeepsTheLast32(t *testing.T) {
	f := newFixture(t, "")
	for i := range 40 {
		f.postStuck(http.StatusUnprocessableEntity, fmt.Sprintf("elsewhere-%d", i))
	}
	recent := f.j.Recent()
	require.Len(t, recent, 32)
	assert.Equal(t, "elsewhere-39", recent[0].App)
	assert.Equal(t, "elsewhere-8", recent[31].App)
}

func TestReloadOptsOutAndDropsSeries(t *testing.T) {
	f := newFixture(t, "")
	f.session("kiosk", 3*time.Hour)
	f.reload("", "", "")
	answer := f.postStuck(http.StatusOK, "kiosk")
	assert.Contains(t, answer, "has not opted in")
	assert.Len(t, f.listed("kiosk"), 1)
	n, err := testutil.GatherAndCount(f.reg, "duix_janitor_sessions_stopped_total", "duix_janitor_sessions_would_stop_total")
	require.NoError(t, err)
	assert.Zero(t, n)
}

func TestDisabledJanitorIsSafe(t *testing.T) {
	var j *janitor.Janitor
	assert.False(t, j.Enabled())
	assert.Empty(t, j.Recent())
}

func TestConcurrentPostsStopOnce(t *testing.T) {
	f := newFixture(t, "")
	f.session("kiosk", 3*time.Hour)
	var wg sync.WaitGroup
	for range 4 {
		wg.Go(func() {
			req := httptest.NewRequest(http.MethodPost, "/webhook", bytes.NewReader([]byte(payload(t, stuck("kiosk")))))
			req = req.WithContext(context.Background())
			f.j.ServeHTTP(httptest.NewRecorder(), req)
		})
	}
	wg.Wait()
	assert.Equal(t, int64(1), f.stops.Load())
	assert.Equal(t, 1.0, f.stopped("kiosk"))
}

// A record's start the exporter cannot believe is not used: one in the
// future (the lifecycle then counts from the first listing, and
// DuixSessionStuck fires by that age), and one before 2000, such as a start
// in seconds read as milliseconds (every session would look decades old).
// Both fall back to when the exporter first listed the session.
func TestImplausibleRecordStartsFallBackToFirstSeen(t *testing.T) {
	f := newFixture(t, "")
	future := f.session("kiosk", -24*time.Hour)
	inSeconds, err := f.sim.StartSessionAt(appID("kiosk"), "conv-1", time.UnixMilli(f.now().Add(-5*time.Minute).Unix()))
	require.NoError(t, err)
	unseen, err := f.sim.StartSessionAt(appID("kiosk"), "conv-1", time.UnixMilli(f.now().Add(-3*time.Hour).Unix()))
	require.NoError(t, err)
	f.src.seen["kiosk/"+future] = f.now().Add(-90 * time.Minute)
	f.src.seen["kiosk/"+inSeconds] = f.now().Add(-5 * time.Minute)

	answer := f.postStuck(http.StatusOK, "kiosk")
	assert.ElementsMatch(t, []string{inSeconds, unseen}, f.listed("kiosk"))
	assert.Contains(t, answer, "stopped 1 of 1 session(s) older than 1h; 0 already stopped or gone, 0 refused by the budget of 10 an hour, 0 failed, 1 younger, 1 without a known start")
	assert.Regexp(t, `session=`+future+` age=1h30m0s`, f.logs.String())
}

// A stop that failed may have taken effect (the platform ended the call,
// then its answer was lost or an error): it counts against the budget, so
// a platform that fails every answer cannot have every old session stopped
// at once, nor again at each of Alertmanager's retries.
func TestFailedStopsCountAgainstTheBudget(t *testing.T) {
	f := newFixture(t, "{max_stops_per_hour: 2}")
	f.sessions("kiosk", 4, 2*time.Hour)
	f.before(simulator.EndpointStop, func(w http.ResponseWriter, r *http.Request, next http.Handler) bool {
		next.ServeHTTP(httptest.NewRecorder(), r) // done, but the answer is lost
		http.Error(w, "gateway timeout", http.StatusGatewayTimeout)
		return true
	})
	answer := f.postStuck(http.StatusBadGateway, "kiosk")
	assert.Contains(t, answer, "stopped 0 of 4 session(s) older than 1h; 0 already stopped or gone, 2 refused by the budget of 2 an hour, 2 failed")
	for range 3 { // Alertmanager retries: the sessions the lost stops ended are no longer listed
		answer = f.postStuck(http.StatusOK, "kiosk")
		assert.Contains(t, answer, "stopped 0 of 2 session(s) older than 1h; 0 already stopped or gone, 2 refused by the budget")
	}
	assert.Equal(t, int64(2), f.stops.Load(), "no more stop requests than the budget")
	assert.Len(t, f.listed("kiosk"), 2)
}

// A session ID is the platform's: the landing page's recent actions hold
// it cut, as the log does.
func TestRecentActionsHoldSessionIDsCut(t *testing.T) {
	f := newFixture(t, "")
	long := strings.Repeat("s", 100_000)
	f.wrap = func(w http.ResponseWriter, r *http.Request, next http.Handler) {
		switch {
		case strings.HasSuffix(r.URL.Path, "/"+simulator.EndpointSessions):
			fmt.Fprintf(w, `{"code":"0","success":true,"data":[{"uuid":%q,"startTime":%d}]}`, long, f.now().Add(-3*time.Hour).UnixMilli())
		case strings.HasSuffix(r.URL.Path, "/"+simulator.EndpointStop):
			_, _ = io.WriteString(w, `{"code":"0","success":true,"data":true}`)
		default:
			next.ServeHTTP(w, r)
		}
	}
	f.postStuck(http.StatusOK, "kiosk")
	require.Len(t, f.j.Recent(), 1)
	assert.Equal(t, janitor.ActionStopped, f.j.Recent()[0].Action)
	assert.Equal(t, strings.Repeat("s", 128)+"...", f.j.Recent()[0].SessionID)
	assert.NotContains(t, f.logs.String(), strings.Repeat("s", 129))
}

// When Alertmanager gives up on a request (its context ends), the janitor
// attempts no more stops for it: stops never sent neither reach the
// platform nor use up the budget.
func TestNoStopIsAttemptedAfterTheSenderLeft(t *testing.T) {
	f := newFixture(t, "{max_stops_per_hour: 2}")
	f.sessions("kiosk", 3, 2*time.Hour)
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	f.wrap = func(w http.ResponseWriter, r *http.Request, next http.Handler) {
		next.ServeHTTP(w, r)
		if strings.HasSuffix(r.URL.Path, "/"+simulator.EndpointStop) {
			cancel() // Alertmanager's timeout, once the first stop is done
		}
	}
	req := httptest.NewRequest(http.MethodPost, "/webhook", strings.NewReader(payload(t, stuck("kiosk")))).WithContext(ctx)
	f.j.ServeHTTP(httptest.NewRecorder(), req)
	assert.Equal(t, int64(1), f.stops.Load(), "no stop is sent once the sender left")

	f.wrap = nil
	answer := f.postStuck(http.StatusOK, "kiosk")
	assert.Contains(t, answer, "stopped 1 of 2 session(s) older than 1h; 0 already stopped or gone, 1 refused by the budget of 2 an hour, 0 failed")
}

// A request whose sender leaves (Alertmanager's timeout) while another
// holds the turn does nothing, and is logged and counted as abandoned.
func TestASenderThatLeavesBeforeItsTurnIsCounted(t *testing.T) {
	f := newFixture(t, "")
	f.session("kiosk", 3*time.Hour)
	listing, release := make(chan struct{}), make(chan struct{})
	f.before(simulator.EndpointSessions, func(w http.ResponseWriter, r *http.Request, next http.Handler) bool {
		close(listing)
		<-release
		return false
	})
	done := make(chan struct{})
	go func() {
		defer close(done)
		f.post(payload(t, stuck("kiosk")))
	}()
	<-listing // the first request holds the turn
	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	rec := httptest.NewRecorder()
	f.j.ServeHTTP(rec, httptest.NewRequest(http.MethodPost, "/webhook", strings.NewReader(payload(t, stuck("kiosk")))).WithContext(ctx))
	close(release)
	<-done

	assert.Equal(t, http.StatusServiceUnavailable, rec.Code)
	assert.Equal(t, 1.0, f.requests("abandoned"))
	assert.Equal(t, 1.0, f.requests("handled"))
	assert.Contains(t, f.logs.String(), `level=warn msg="Janitor dropped a webhook request: its sender left while another was handled"`)
	assert.Equal(t, int64(1), f.lists.Load(), "the platform is called for the first request only")
}

// A sender that has left when its turn comes is abandoned too, not taken
// for a platform that failed: when the turn frees as the sender leaves,
// select may pick either, and the listing then failed on the ended
// context (outcome failed, a false "failed ... network" decision).
func TestASenderGoneWhenItsTurnComesIsAbandoned(t *testing.T) {
	f := newFixture(t, "")
	f.session("kiosk", 3*time.Hour)
	ctx, cancel := context.WithCancel(context.Background())
	cancel()     // the turn is free too: both cases are ready
	const n = 32 // with a fair pick between the two, all 32 abandoned by chance is 1 in 2^32
	for range n {
		rec := httptest.NewRecorder()
		f.j.ServeHTTP(rec, httptest.NewRequest(http.MethodPost, "/webhook", strings.NewReader(payload(t, stuck("kiosk")))).WithContext(ctx))
		assert.Equal(t, http.StatusServiceUnavailable, rec.Code)
	}
	assert.Equal(t, float64(n), f.requests("abandoned"))
	assert.Zero(t, f.requests("failed"))
	assert.Zero(t, f.lists.Load(), "the platform is not called for a sender that left")
	assert.Empty(t, f.j.Recent(), "no decision is recorded")
}

// deadlineRecorder is a ResponseWriter that records the write deadline
// set on it (http.ResponseController finds SetWriteDeadline), and whether
// any of the answer was written before.
type deadlineRecorder struct {
	*httptest.ResponseRecorder
	deadline      time.Time
	writtenBefore bool
}

func (d *deadlineRecorder) SetWriteDeadline(t time.Time) error {
	d.deadline, d.writtenBefore = t, d.Body.Len() > 0
	return nil
}

// A sender that never reads its answer (a 1 MiB payload of 20 000 alerts
// gets about as long an answer) is cut off at a write deadline: it would
// otherwise hold the janitor's turn, and so every later webhook, for as
// long as its connection stays open. The janitor's server has no write
// timeout of its own (a webhook may wait on the platform), so the answer
// sets one before it is written.
func TestTheAnswerHasAWriteDeadline(t *testing.T) {
	f := newFixture(t, "")
	for _, body := range []string{payload(t, stuck("kiosk")), "not json"} {
		rec := &deadlineRecorder{ResponseRecorder: httptest.NewRecorder()}
		before := time.Now()
		f.j.ServeHTTP(rec, httptest.NewRequest(http.MethodPost, "/webhook", strings.NewReader(body)))
		require.False(t, rec.deadline.IsZero(), "a write deadline is set")
		assert.False(t, rec.writtenBefore, "before the answer is written")
		assert.True(t, rec.deadline.After(before) && rec.deadline.Before(before.Add(time.Minute)), "%s", rec.deadline)
	}
}

// A stop the platform refused (401 or 403, 429, or success false) ended
// nothing, and one never sent (while a Retry-After applies) neither: they
// do not count against the budget.
func TestRefusedStopsDoNotCountAgainstTheBudget(t *testing.T) {
	for name, refuse := range map[string]func(w http.ResponseWriter){
		"HTTP 403": func(w http.ResponseWriter) { w.WriteHeader(http.StatusForbidden) },
		"success false": func(w http.ResponseWriter) {
			w.Header().Set("Content-Type", "application/json")
			_, _ = io.WriteString(w, `{"code":"10001","success":false,"message":"refused","data":null}`)
		},
	} {
		t.Run(name, func(t *testing.T) {
			f := newFixture(t, "{max_stops_per_hour: 2}")
			f.sessions("kiosk", 3, 2*time.Hour)
			f.before(simulator.EndpointStop, func(w http.ResponseWriter, r *http.Request, next http.Handler) bool {
				refuse(w)
				return true
			})
			answer := f.postStuck(http.StatusBadGateway, "kiosk")
			assert.Contains(t, answer, "stopped 0 of 3 session(s) older than 1h; 0 already stopped or gone, 0 refused by the budget of 2 an hour, 3 failed")

			f.wrap = nil
			answer = f.postStuck(http.StatusOK, "kiosk")
			assert.Contains(t, answer, "stopped 2 of 3 session(s) older than 1h; 0 already stopped or gone, 1 refused by the budget of 2 an hour, 0 failed")
		})
	}
}

// Going to dry run and back (two reloads) keeps the real stops of the
// hour: the budget cannot be reset by a rehearsal; would-stops never count
// against it.
func TestDryRunAndBackKeepsTheBudget(t *testing.T) {
	f := newFixture(t, "{max_stops_per_hour: 1}")
	f.session("kiosk", 3*time.Hour)
	f.postStuck(http.StatusOK, "kiosk")
	require.Equal(t, 1.0, f.stopped("kiosk"))

	f.session("kiosk", 2*time.Hour)
	f.reload("{max_stops_per_hour: 1, dry_run: true}", optedIn, optedIn)
	answer := f.postStuck(http.StatusOK, "kiosk")
	assert.Contains(t, answer, "dry run: would have stopped 1 of 1", "a rehearsal has a budget of its own")
	f.reload("{max_stops_per_hour: 1}", optedIn, optedIn)
	answer = f.postStuck(http.StatusOK, "kiosk")
	assert.Contains(t, answer, "stopped 0 of 1 session(s) older than 1h; 0 already stopped or gone, 1 refused by the budget of 1 an hour")
	assert.Equal(t, 1.0, f.stopped("kiosk"))
}

// A reload that turns dry_run on while a decision is under way, and one
// that turns it off again, leave the real stops of that decision in the
// real budget: a rehearsal cannot reset it.
func TestDryRunAndBackDuringADecisionKeepsTheBudget(t *testing.T) {
	f := newFixture(t, "{max_stops_per_hour: 2}")
	f.sessions("kiosk", 2, 3*time.Hour)
	f.reloadDuringFirstStop("{max_stops_per_hour: 2, dry_run: true}", optedIn, optedIn)
	answer := f.postStuck(http.StatusOK, "kiosk")
	assert.Contains(t, answer, "stopped 1 and, in dry run, would have stopped 1 of 2 session(s) older than 1h")

	f.wrap = nil
	f.reload("{max_stops_per_hour: 2}", optedIn, optedIn)
	f.advance(time.Minute)
	f.sessions("kiosk", 2, 3*time.Hour)
	answer = f.postStuck(http.StatusOK, "kiosk")
	assert.Contains(t, answer, "stopped 1 of 3 session(s) older than 1h; 0 already stopped or gone, 2 refused by the budget of 2 an hour")
	assert.Equal(t, int64(2), f.stops.Load(), "stops sent within the hour")
	assert.Equal(t, 2.0, f.stopped("kiosk"))
}

// A reload applies to a decision under way from its next session on: once
// dry_run is on, no stop is sent.
func TestNoStopAfterAReloadToDryRun(t *testing.T) {
	f := newFixture(t, "")
	f.sessions("kiosk", 3, 3*time.Hour)
	after := f.reloadDuringFirstStop("{dry_run: true}", optedIn, optedIn)
	answer := f.postStuck(http.StatusOK, "kiosk")
	assert.Zero(t, after.Load(), "stops sent after the reload")
	assert.Contains(t, answer, "stopped 1 and, in dry run, would have stopped 2 of 3")
	assert.Len(t, f.listed("kiosk"), 2)
	assert.Equal(t, 1.0, f.stopped("kiosk"))
	assert.Equal(t, 2.0, f.wouldStop("kiosk"))
}

// A reload that raises an app's max_session_age, or takes the app out of
// the janitor, while its sessions are stopped: no session is stopped
// afterwards that the configuration in force would not stop, and an app
// taken out gets no per-app series back.
func TestNoStopBeyondAReloadDuringADecision(t *testing.T) {
	for _, tc := range []struct{ name, kiosk, answer string }{
		{"max_session_age raised", "{max_session_age: 5h}", "stopped 1 of 1 session(s) older than 5h; 0 already stopped or gone, 0 refused by the budget of 10 an hour, 0 failed, 2 younger"},
		{"janitor section removed", "", "stopped 1 of 1 session(s) older than 1h; 0 already stopped or gone, 0 refused by the budget of 10 an hour, 0 failed, 0 younger, 0 without a known start; then a reload took the app out of the janitor"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			f := newFixture(t, "")
			f.sessions("kiosk", 3, 2*time.Hour)
			after := f.reloadDuringFirstStop("", tc.kiosk, optedIn)
			answer := f.postStuck(http.StatusOK, "kiosk")
			assert.Zero(t, after.Load(), "stops sent after the reload")
			assert.Contains(t, answer, tc.answer)
			assert.Len(t, f.listed("kiosk"), 2)
			if tc.kiosk == "" {
				n, err := testutil.GatherAndCount(f.reg, "duix_janitor_sessions_stopped_total")
				require.NoError(t, err)
				assert.Equal(t, 1, n, "lobby's series only")
				assert.Equal(t, 1.0, f.refusals("not_opted_in"))
			}
		})
	}
}

// A stop counts against the budget from when it is sent, not from when
// its decision began: here the platform takes a minute to list the
// sessions.
func TestBudgetCountsFromTheStop(t *testing.T) {
	f := newFixture(t, "{max_stops_per_hour: 2}")
	f.sessions("kiosk", 4, 3*time.Hour)
	f.before(simulator.EndpointSessions, func(w http.ResponseWriter, r *http.Request, next http.Handler) bool {
		f.advance(time.Minute)
		return false
	})
	f.postStuck(http.StatusOK, "kiosk")
	f.wrap = nil

	f.advance(59 * time.Minute) // an hour after the decision began, 59 minutes after its stops
	answer := f.postStuck(http.StatusOK, "kiosk")
	assert.Contains(t, answer, "stopped 0 of 2 session(s) older than 1h; 0 already stopped or gone, 2 refused by the budget")
	f.advance(time.Minute)
	answer = f.postStuck(http.StatusOK, "kiosk")
	assert.Contains(t, answer, "stopped 2 of 2")
}

// A session ID is logged and shown as what it is: a right-to-left
// override, a line separator or a terminal escape in it is replaced.
func TestASessionIDIsLoggedAsItIs(t *testing.T) {
	f := newFixture(t, "")
	const id = "aaa\u202egnp.exe\u2028\x1b[2J"
	f.before(simulator.EndpointSessions, func(w http.ResponseWriter, _ *http.Request, _ http.Handler) bool {
		rec, err := json.Marshal(map[string]any{"uuid": id, "sessionId": id, "startTime": f.now().Add(-3 * time.Hour).UnixMilli()})
		require.NoError(t, err)
		_, _ = fmt.Fprintf(w, `{"code":"0","success":true,"data":[%s]}`, rec)
		return true
	})
	f.postStuck(http.StatusOK, "kiosk")
	assert.Equal(t, int64(1), f.stops.Load())
	assert.Contains(t, f.logs.String(), "session=aaa?gnp.exe??[2J ")
	recent := f.j.Recent()
	require.NotEmpty(t, recent)
	assert.Equal(t, "aaa?gnp.exe??[2J", recent[len(recent)-1].SessionID)
	assert.False(t, strings.ContainsAny(f.logs.String(), "\u202e\u2028\x1b"))
}

// A stop answered 404 counts against the budget: a platform may answer so
// once its close took effect, and the budget bounds the stops sent.
func TestAStopAnswered404CountsAgainstTheBudget(t *testing.T) {
	f := newFixture(t, "{max_stops_per_hour: 3}")
	f.sessions("kiosk", 20, 3*time.Hour)
	f.before(simulator.EndpointStop, func(w http.ResponseWriter, _ *http.Request, _ http.Handler) bool {
		_, _ = io.WriteString(w, `{"code":"404","success":false,"message":"no such session","data":null}`)
		return true
	})
	answer := f.postStuck(http.StatusOK, "kiosk")
	assert.Contains(t, answer, "stopped 0 of 20 session(s) older than 1h; 3 already stopped or gone, 17 refused by the budget of 3 an hour")
	assert.Equal(t, int64(3), f.stops.Load(), "the stops sent")
	f.postStuck(http.StatusOK, "kiosk")
	assert.Equal(t, int64(3), f.stops.Load(), "none more within the hour")
	assert.Equal(t, 3.0+3, f.refusals("already_stopped"), "the second time, as the first")
	assert.Equal(t, 17.0+17, f.refusals("budget"))
}

// A session stopped within the hour that the platform still lists is
// logged and counted as already stopped also when it comes after the
// budget ran out in the same decision.
func TestAlreadyStoppedIsDecidedAfterTheBudgetRanOut(t *testing.T) {
	f := newFixture(t, "{max_stops_per_hour: 1}")
	a := f.session("kiosk", 2*time.Hour)
	f.keepListingStopped()
	f.postStuck(http.StatusOK, "kiosk")
	require.Equal(t, 1.0, f.stopped("kiosk"))

	f.session("kiosk", 3*time.Hour) // older than a: decided first, and refused by the budget
	answer := f.postStuck(http.StatusOK, "kiosk")
	assert.Contains(t, answer, "stopped 0 of 2 session(s) older than 1h; 1 already stopped or gone, 1 refused by the budget")
	assert.Equal(t, 1.0, f.refusals("already_stopped"))
	assert.Equal(t, 1.0, f.refusals("budget"))
	assert.Equal(t, 2, strings.Count(f.logs.String(), "session="+a), "a decision about a at each post:\n%s", f.logs.String())
}

// The janitor's listener applies the web configuration (here basic auth)
// as the metrics listener does.
func TestServeWithBasicAuth(t *testing.T) {
	f := newFixture(t, "")
	f.session("kiosk", 3*time.Hour)

	hash, err := bcrypt.GenerateFromPassword([]byte("s3cret"), bcrypt.MinCost)
	require.NoError(t, err)
	webConfig := filepath.Join(t.TempDir(), "web.yml")
	require.NoError(t, os.WriteFile(webConfig, []byte("basic_auth_users:\n  alertmanager: "+string(hash)+"\n"), 0o600))
	addr := serve(t, f.j.Server(slog.New(slog.DiscardHandler)), webConfig)

	post := func(user, password string) int {
		req, err := http.NewRequest(http.MethodPost, "http://"+addr+"/webhook", strings.NewReader(payload(t, stuck("kiosk"))))
		require.NoError(t, err)
		if user != "" {
			req.SetBasicAuth(user, password)
		}
		resp, err := http.DefaultClient.Do(req)
		if err != nil {
			return 0
		}
		resp.Body.Close()
		return resp.StatusCode
	}
	assert.Equal(t, http.StatusUnauthorized, post("", ""))
	assert.Equal(t, http.StatusUnauthorized, post("alertmanager", "wrong"))
	assert.Len(t, f.listed("kiosk"), 1, "nothing stopped without the credentials")
	assert.Zero(t, f.lists.Load())

	assert.Equal(t, http.StatusOK, post("alertmanager", "s3cret"))
	assert.Empty(t, f.listed("kiosk"))
}

// serve serves srv on a free loopback address as the exporter does
// (exporter-toolkit), with the web configuration file webConfig ("" for
// none), until the test ends, and returns the address once it accepts
// connections.
func serve(t *testing.T, srv *http.Server, webConfig string) string {
	t.Helper()
	addr := platformtest.FreeAddr(t)
	systemd := false
	flags := &toolkit.FlagConfig{WebListenAddresses: &[]string{addr}, WebSystemdSocket: &systemd, WebConfigFile: &webConfig}
	done := make(chan error, 1)
	go func() { done <- toolkit.ListenAndServe(srv, flags, slog.New(slog.DiscardHandler)) }()
	t.Cleanup(func() {
		assert.NoError(t, srv.Close())
		assert.ErrorIs(t, <-done, http.ErrServerClosed)
	})
	require.Eventually(t, func() bool {
		c, err := net.Dial("tcp", addr)
		if err == nil {
			c.Close()
		}
		return err == nil
	}, 5*time.Second, 10*time.Millisecond, "the listener is up")
	return addr
}

// Hostile payloads get an answer and a metric, never a stop, a panic or a
// forged log line.
func TestHostilePayloadsAreAnsweredWithoutActing(t *testing.T) {
	f := newFixture(t, "")
	kiosk := f.session("kiosk", 3*time.Hour)
	web := f.session("web", 3*time.Hour)
	many := func(alert string, n int) string {
		return `{"version":"4","alerts":[` + strings.Repeat(alert+",", n-1) + alert + "]}"
	}
	firing := func(app string) string {
		return `{"version":"4","alerts":[{"status":"firing","labels":{"alertname":"DuixSessionStuck","app":` + app + `}}]}`
	}
	for _, tt := range []struct {
		name, body string
		code       int
	}{
		{"deep nesting", `{"version":"4","alerts":[{"status":"firing","labels":{"alertname":"DuixSessionStuck","app":"kiosk"},"annotations":` +
			strings.Repeat("[", 200000) + strings.Repeat("]", 200000) + `}]}`, http.StatusBadRequest},
		{"version as a number", `{"version":4,"alerts":[]}`, http.StatusBadRequest},
		{"version 40", `{"version":"40","alerts":[]}`, http.StatusBadRequest},
		{"status in capitals", `{"version":"4","alerts":[{"status":"FIRING","labels":{"alertname":"DuixSessionStuck","app":"kiosk"}}]}`, http.StatusBadRequest},
		{"labels null", `{"version":"4","alerts":[{"status":"firing","labels":null}]}`, http.StatusBadRequest},
		{"alert null", `{"version":"4","alerts":[null]}`, http.StatusBadRequest},
		{"over 1 MiB in one string", `{"version":"4","alerts":[],"x":"` + strings.Repeat("a", 3<<20) + `"}`, http.StatusRequestEntityTooLarge},
		{"many other alerts", many(`{"status":"firing","labels":{"alertname":"Other","app":"kiosk"}}`, 15000), http.StatusOK},
		{"many alerts of an app not opted in", many(`{"status":"firing","labels":{"alertname":"DuixSessionStuck","app":"web"}}`, 12000), http.StatusOK},
		{"alert name in lower case", `{"version":"4","alerts":[{"status":"firing","labels":{"alertname":"duixsessionstuck","app":"kiosk"}}]}`, http.StatusOK},
		{"a look-alike app", firing(`"k\u0456osk"`), http.StatusUnprocessableEntity},
		{"an app with NUL", firing(`"kiosk\u0000"`), http.StatusUnprocessableEntity},
		{"an app forging a log line", firing(`"x\nlevel=info msg=\"Janitor decision\" action=stopped app=kiosk"`), http.StatusUnprocessableEntity},
		{"an app of invalid UTF-8", firing("\"\xff\xfe\""), http.StatusUnprocessableEntity},
	} {
		t.Run(tt.name, func(t *testing.T) {
			code, answer := f.post(tt.body)
			assert.Equal(t, tt.code, code, "%.300s", answer)
			assert.NotContains(t, answer, "\x00")
		})
	}
	assert.Equal(t, []string{kiosk}, f.listed("kiosk"))
	assert.Equal(t, []string{web}, f.listed("web"))
	assert.Zero(t, f.stops.Load())
	assert.NotRegexp(t, `(?m)^level=info msg="Janitor decision" action=stopped`, f.logs.String(), "a forged log line")
}

// On the janitor's own listener, at most MaxWaiting (64, as docs/janitor.md
// says) requests are in:
// senders that never finish their body (no read timeout here) take those
// places, but not the turn, and a request beyond them is answered 503
// (busy) at once and counted; once they leave, webhooks are handled again.
// A storm of concurrent webhooks stays within the stop budget.
func TestSlowSendersCannotHoldTheListenerOrItsMemory(t *testing.T) {
	f := newFixture(t, "{max_stops_per_hour: 5}")
	for range 20 {
		f.session("kiosk", 3*time.Hour)
		f.session("lobby", 3*time.Hour)
	}
	srv := f.j.Server(slog.New(slog.DiscardHandler))
	srv.ReadTimeout = 0 // the slow senders hold their requests until they leave
	require.Equal(t, 64, janitor.MaxWaiting, "the documented bound on the requests in")
	addr := serve(t, srv, "")
	body := []byte(payload(t, stuck("kiosk"), stuck("lobby")))
	resolved := stuck("kiosk")
	resolved.Status = "resolved"
	probe := []byte(payload(t, resolved)) // acts on nothing
	post := func() int { return postBody(t, addr, body) }
	require.NotEqual(t, http.StatusOK, postBody(t, addr, []byte("{")), "a body that does not parse")
	var slow []net.Conn
	for range janitor.MaxWaiting + 8 { // more than the places: the probes below may take one for a while
		c, err := net.Dial("tcp", addr)
		require.NoError(t, err)
		t.Cleanup(func() { c.Close() })
		fmt.Fprint(c, "POST /webhook HTTP/1.1\r\nHost: x\r\nContent-Type: application/json\r\nContent-Length: 100000\r\n\r\n{")
		slow = append(slow, c)
	}
	require.Eventually(t, func() bool { return postBody(t, addr, probe) == http.StatusServiceUnavailable }, time.Minute, 10*time.Millisecond, "busy once the slow senders are in")
	assert.Positive(t, f.requests(janitor.OutcomeBusy))
	assert.Zero(t, f.stops.Load())
	for _, c := range slow {
		c.Close()
	}
	require.Eventually(t, func() bool { return post() == http.StatusOK }, time.Minute, 10*time.Millisecond, "handled once they left")

	var wg sync.WaitGroup
	codes := make(chan int, 50)
	for range 50 {
		wg.Go(func() { codes <- post() })
	}
	wg.Wait()
	close(codes)
	for c := range codes {
		assert.Contains(t, []int{http.StatusOK, http.StatusServiceUnavailable}, c)
	}
	assert.Equal(t, int64(5), f.stops.Load(), "stops within the budget")
}

// The shipped Alertmanager route posts one webhook per app at once when
// many apps have a stuck session: they wait their turn, none is answered
// busy (20 apps, a platform 50 ms away).
func TestABurstOfOneWebhookPerAppIsHandled(t *testing.T) {
	const apps = 20
	sim := simulator.New()
	platform := &http.Server{Handler: http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		time.Sleep(50 * time.Millisecond)
		sim.ServeHTTP(w, r)
	})}
	base := "http://" + serve(t, platform, "")
	var y strings.Builder
	fmt.Fprintf(&y, "api: {base_url: %q, timeout: 5s}\njanitor: {max_stops_per_hour: 100}\napps:\n", base+simulator.BasePath)
	for i := range apps {
		id := fmt.Sprint(2000 + i)
		sim.AddApp(simulator.App{ID: id, Key: "k" + id, Allowance: 20})
		_, err := sim.StartSessionAt(id, "c", time.Now().Add(-3*time.Hour))
		require.NoError(t, err)
		fmt.Fprintf(&y, "  - {name: app%d, app_id: %q, app_key: k%s, janitor: {max_session_age: 1h}}\n", i, id, id)
	}
	cfg, err := config.Parse([]byte(y.String()), "")
	require.NoError(t, err)
	pool, err := client.NewPool(cfg, client.PoolOptions{})
	require.NoError(t, err)
	t.Cleanup(pool.Close)
	j, err := janitor.New(janitor.Options{Source: poolSource{pool}})
	require.NoError(t, err)
	require.NoError(t, j.Apply(cfg))
	addr := serve(t, j.Server(slog.New(slog.DiscardHandler)), "")
	var wg sync.WaitGroup
	for i := range apps {
		body := []byte(payload(t, stuck(fmt.Sprintf("app%d", i))))
		wg.Go(func() {
			resp, err := http.Post("http://"+addr+"/webhook", "application/json", bytes.NewReader(body))
			if assert.NoError(t, err) {
				_, _ = io.Copy(io.Discard, resp.Body)
				resp.Body.Close()
				assert.Equal(t, http.StatusOK, resp.StatusCode)
			}
		})
	}
	wg.Wait()
	for i := range apps {
		assert.Empty(t, sim.Sessions(fmt.Sprint(2000+i)), "app%d's stuck session stopped", i)
	}
}

type poolSource struct{ pool *client.Pool }

func (s poolSource) AppClient(name string) *client.Client       { return s.pool.Client(name) }
func (s poolSource) FirstSeen(string, string) (time.Time, bool) { return time.Time{}, false }

// Prometheus label names are case-sensitive: an alert whose labels have
// APP (or AlertName) but no app (or alertname) is not about an app.
func TestLabelNamesAreCaseSensitive(t *testing.T) {
	f := newFixture(t, "")
	f.session("kiosk", 3*time.Hour)
	a := stuck("kiosk")
	delete(a.Labels, "app")
	a.Labels["APP"] = "kiosk"
	code, answer := f.post(payload(t, a))
	assert.Equal(t, http.StatusUnprocessableEntity, code, answer)
	assert.Contains(t, answer, "no app label")

	b := stuck("kiosk")
	delete(b.Labels, "alertname")
	b.Labels["AlertName"] = "DuixSessionStuck"
	code, answer = f.post(payload(t, b))
	assert.Equal(t, http.StatusBadRequest, code, answer)
	assert.Contains(t, answer, "no alertname label")

	code, answer = f.post(`{"version":"4","alerts":[{"status":"firing","labels":{"alertname":"DuixSessionStuck","app":"kiosk","n":1}}]}`)
	assert.Equal(t, http.StatusBadRequest, code, "a label that is not a string: %s", answer)
	assert.Zero(t, f.stops.Load())
}

// A body that never ends is cut at the listener's read timeout (30 s, as
// docs/janitor.md says; here shortened), answered and counted.
func TestASlowBodyIsCutAndCounted(t *testing.T) {
	f := newFixture(t, "")
	srv := f.j.Server(slog.New(slog.DiscardHandler))
	require.Equal(t, 30*time.Second, srv.ReadTimeout, "the listener's documented read timeout")
	srv.ReadTimeout = 300 * time.Millisecond
	c, err := net.Dial("tcp", serve(t, srv, ""))
	require.NoError(t, err)
	defer c.Close()
	fmt.Fprint(c, "POST /webhook HTTP/1.1\r\nHost: x\r\nContent-Length: 100000\r\n\r\n{\"version\":")
	go func() { // a byte now and then, until the connection is cut
		for {
			time.Sleep(50 * time.Millisecond)
			if _, err := c.Write([]byte(" ")); err != nil {
				return
			}
		}
	}()
	require.NoError(t, c.SetReadDeadline(time.Now().Add(time.Minute))) // only if the server never answers
	answer, _ := io.ReadAll(c)
	assert.Contains(t, string(answer), "HTTP/1.1 400 ")
	assert.Equal(t, 1.0, f.requests("invalid"))
}

// swapSource is the exporter whose clients a reload replaces, as
// collector.Exporter.AppClient's are.
type swapSource struct {
	*source
	cur atomic.Pointer[client.Pool]
}

func (s *swapSource) AppClient(name string) *client.Client { return s.cur.Load().Client(name) }

// A reload during a decision that gives the opted-in name to another
// platform app: the sessions listed were the other app's, and the rest of
// them are not acted on (its new owner did not opt in).
func TestAReloadThatGivesTheNameToAnotherAppStopsTheDecision(t *testing.T) {
	f := newFixture(t, "")
	cfgOf := func(kioskID, webID string) *config.Config {
		y := fmt.Sprintf("api: {base_url: %q, timeout: 2s}\napps:\n"+
			"  - {name: kiosk, app_id: %q, app_key: key-%s, janitor: {max_session_age: 1h}}\n"+
			"  - {name: web, app_id: %q, app_key: key-%s}\n", f.base, kioskID, kioskID, webID, webID)
		cfg, err := config.Parse([]byte(y), "")
		require.NoError(t, err)
		return cfg
	}
	before, after := cfgOf("1001", "1003"), cfgOf("1003", "1001") // the two names swap their platform apps
	p1, err := client.NewPool(before, client.PoolOptions{})
	require.NoError(t, err)
	p2, err := client.NewPool(after, client.PoolOptions{})
	require.NoError(t, err)
	src := &swapSource{source: f.src}
	src.cur.Store(p1)
	j, err := janitor.New(janitor.Options{Source: src, Now: f.now})
	require.NoError(t, err)
	require.NoError(t, j.Apply(before))

	f.sessions("kiosk", 3, 3*time.Hour) // of platform app 1001, opted in as kiosk
	var reloaded atomic.Bool
	f.wrap = func(w http.ResponseWriter, r *http.Request, next http.Handler) {
		next.ServeHTTP(w, r)
		if strings.HasSuffix(r.URL.Path, "/"+simulator.EndpointStop) && reloaded.CompareAndSwap(false, true) {
			src.cur.Store(p2) // the exporter's clients first, then the janitor's settings, as SafeConfig calls them
			require.NoError(t, j.Apply(after))
		}
	}
	rec := httptest.NewRecorder()
	j.ServeHTTP(rec, httptest.NewRequest(http.MethodPost, "/webhook", strings.NewReader(payload(t, stuck("kiosk")))))
	assert.Equal(t, http.StatusOK, rec.Code, rec.Body.String())
	assert.Len(t, f.sim.Sessions("1001"), 2, "one stopped before the reload, none after: 1001 is now web, not opted in")
	assert.Contains(t, rec.Body.String(), "then a reload")
}

// The alerts a request refuses are logged, counted and shown on the landing
// page once per reason and app (once for all the apps not configured), not
// once per alert: a forged payload of thousands of alerts cannot flood the
// log nor push the real decisions off the landing page.
func TestRefusedAlertsAreRecordedOncePerReasonAndApp(t *testing.T) {
	f := newFixture(t, "")
	f.session("kiosk", 3*time.Hour)
	code, _ := f.post(payload(t, stuck("kiosk")))
	require.Equal(t, http.StatusOK, code)
	require.Len(t, f.j.Recent(), 1, "the stop")

	var alerts []webhookAlert
	for i := range 500 {
		other := stuck("kiosk")
		other.Labels["alertname"] = "DuixConcurrencyExhausted"
		alerts = append(alerts, other, stuck(fmt.Sprintf("elsewhere-%d", i)))
	}
	logged := strings.Count(f.logs.String(), "\n")
	code, answer := f.post(payload(t, alerts...))
	require.Equal(t, http.StatusUnprocessableEntity, code)
	assert.Equal(t, 1001, strings.Count(answer, "\n"), "the answer has a line per alert, and the verdict")
	assert.Equal(t, 2, strings.Count(f.logs.String(), "\n")-logged, "a line for the other alerts, one for the unknown apps")
	assert.Contains(t, f.logs.String(), "reason=unknown_app alerts=500")
	assert.Equal(t, 500.0, f.refusals("unknown_app"))
	assert.Equal(t, 500.0, f.refusals("other_alert"))
	recent := f.j.Recent()
	require.Len(t, recent, 2, "the unknown apps' entry beside the stop; other alerts are left out")
	assert.Equal(t, janitor.ActionStopped, recent[1].Action)
	assert.Equal(t, 500, recent[0].Count)
}

// Over a real listener (net/http sees a sender leave only once its body
// is read, which is why bodies are read before the turn), a request whose
// sender leaves while another holds the turn is answered abandoned at
// once, counted, and nothing is done for it.
func TestASenderThatLeavesWhileWaitingIsAbandonedOverAListener(t *testing.T) {
	f := newFixture(t, "")
	f.session("kiosk", 3*time.Hour)
	f.session("lobby", 3*time.Hour)
	listing, release := make(chan struct{}), make(chan struct{})
	var once, released sync.Once
	f.before(simulator.EndpointSessions, func(http.ResponseWriter, *http.Request, http.Handler) bool {
		once.Do(func() { close(listing); <-release })
		return false
	})
	addr := serve(t, f.j.Server(slog.New(slog.DiscardHandler)), "")
	t.Cleanup(func() { released.Do(func() { close(release) }) }) // before the listener shuts down, should the test fail
	done := make(chan int)
	go func() {
		resp, err := http.Post("http://"+addr+"/webhook", "application/json", strings.NewReader(payload(t, stuck("lobby"))))
		if assert.NoError(t, err) {
			resp.Body.Close()
			done <- resp.StatusCode
		}
	}()
	<-listing // the first request holds the turn
	conn, err := net.Dial("tcp", addr)
	require.NoError(t, err)
	body := payload(t, stuck("kiosk"))
	_, err = fmt.Fprintf(conn, "POST /webhook HTTP/1.1\r\nHost: janitor\r\nContent-Type: application/json\r\nContent-Length: %d\r\n\r\n%s", len(body), body)
	require.NoError(t, err)
	require.NoError(t, conn.Close()) // it gives up once its request is sent (a client cancelled then may not have sent it yet)
	require.Eventually(t, func() bool { return f.requests(janitor.OutcomeAbandoned) == 1 }, time.Minute, time.Millisecond, "counted while the other holds the turn")
	released.Do(func() { close(release) })
	assert.Equal(t, http.StatusOK, <-done)
	assert.Len(t, f.listed("kiosk"), 1, "nothing is done for a sender that left")
	assert.Equal(t, int64(1), f.lists.Load())
}

// postBody posts body to the janitor at addr and returns the status.
func postBody(t *testing.T, addr string, body []byte) int {
	t.Helper()
	resp, err := http.Post("http://"+addr+"/webhook", "application/json", bytes.NewReader(body))
	require.NoError(t, err)
	_, _ = io.Copy(io.Discard, resp.Body)
	resp.Body.Close()
	return resp.StatusCode
}

// The payloads the requests in read or hold are at most MaxHeldBytes, by
// what they declare: senders that claim it all and never finish their
// body leave no room, and a webhook then is answered 503 (busy) at once,
// not queued behind them; once one leaves, webhooks are handled again.
func TestThePayloadBudgetAnswersBusyNotLater(t *testing.T) {
	f := newFixture(t, "")
	f.session("kiosk", 3*time.Hour)
	srv := f.j.Server(slog.New(slog.DiscardHandler))
	srv.ReadTimeout = 0 // the slow senders hold their bytes until they leave
	addr := serve(t, srv, "")
	resolved := stuck("kiosk")
	resolved.Status = "resolved"
	probe := []byte(payload(t, resolved)) // acts on nothing
	var slow []net.Conn
	for range janitor.MaxHeldBytes / janitor.MaxPayloadBytes {
		c, err := net.Dial("tcp", addr)
		require.NoError(t, err)
		t.Cleanup(func() { c.Close() })
		fmt.Fprintf(c, "POST /webhook HTTP/1.1\r\nHost: x\r\nContent-Type: application/json\r\nContent-Length: %d\r\n\r\n{", janitor.MaxPayloadBytes)
		slow = append(slow, c)
	}
	require.Eventually(t, func() bool { return postBody(t, addr, probe) == http.StatusServiceUnavailable }, time.Minute, 10*time.Millisecond,
		"busy once the slow senders hold every byte")
	slow[0].Close()
	require.Eventually(t, func() bool { return postBody(t, addr, []byte(payload(t, stuck("kiosk")))) == http.StatusOK }, time.Minute, 10*time.Millisecond,
		"room again once one left")
	assert.Equal(t, int64(1), f.stops.Load())
}
