package simulator

import (
	"context"
	"encoding/json"
	"io"
	"net/http"
	"net/http/httptest"
	"sync/atomic"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// doneHandler reports when each ServeHTTP call returns.
func doneHandler(h http.Handler, done chan<- struct{}) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		h.ServeHTTP(w, r)
		done <- struct{}{}
	})
}

// delayed reports whether a request as appID to ep went unanswered until a
// short deadline. The delays below are an hour: a delayed request fails at
// any speed, and one that is not delayed is sent without a deadline (it
// would hang, not fail, if it were delayed).
func (e *env) delayed(appID, key, ep string, params ...string) bool {
	e.t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 50*time.Millisecond)
	defer cancel()
	resp, err := e.send(ctx, http.MethodGet, e.url(ep, params...), bearer(e.token(appID, key)))
	if err != nil {
		return true
	}
	resp.Body.Close()
	return false
}

func TestLatency(t *testing.T) {
	e := newEnv(t)
	e.sim.SetLatency(appA, EndpointConcurrency, time.Hour)
	assert.True(t, e.delayed(appA, keyA, EndpointConcurrency, "appId", appA))
	// Other app and endpoint are not delayed.
	assert.Equal(t, http.StatusOK, e.getAs(appB, keyB, EndpointConcurrency, "appId", appB).status)
	assert.Equal(t, http.StatusOK, e.get(EndpointSessions, "appId", appA).status)

	// Most specific wins: an explicit zero for app A.
	e.sim.SetLatency("", "", time.Hour)
	e.sim.SetLatency(appA, "", 0)
	assert.Equal(t, http.StatusOK, e.get(EndpointSessions, "appId", appA).status)
	assert.True(t, e.delayed(appB, keyB, EndpointSessions, "appId", appB))

	// Cleared: app A's concurrency, an hour late before, answers.
	e.sim.ClearLatency()
	assert.Equal(t, http.StatusOK, e.get(EndpointConcurrency, "appId", appA).status)
}

func TestLatencyCancelled(t *testing.T) {
	clock := newFakeClock()
	sim := New(WithClock(clock.Now))
	sim.AddApp(App{ID: appA, Key: keyA, Allowance: 1})
	done := make(chan struct{}, 1)
	srv := httptest.NewServer(doneHandler(sim, done))
	defer srv.Close()

	sim.SetLatency("", "", time.Hour)
	tok, err := MintToken(appA, keyA, clock.Now(), clock.Now().Add(time.Hour))
	require.NoError(t, err)
	ctx, cancel := context.WithTimeout(context.Background(), 100*time.Millisecond)
	defer cancel()
	req, _ := http.NewRequestWithContext(ctx, http.MethodGet, srv.URL+BasePath+"/"+EndpointConcurrency+"?appId="+appA, nil)
	req.Header.Set("Authorization", "Bearer "+tok)
	_, err = srv.Client().Do(req)
	require.Error(t, err)
	// The handler returns long before its hour is up; the bound below
	// only keeps a failing test from hanging.
	select {
	case <-done:
	case <-time.After(time.Minute):
		t.Fatal("handler still waiting after the client went away")
	}
	assert.EqualValues(t, 1, sim.Requests(EndpointConcurrency))
}

func TestRequestCounting(t *testing.T) {
	e := newEnv(t)
	e.get(EndpointConcurrency, "appId", appA)
	e.get(EndpointConcurrency, "appId", appA)
	e.get(EndpointConcurrency, "appId", appB) // 403, counted for app B (query)
	e.getAs(appB, keyB, EndpointSessions, "appId", appB)
	e.get(EndpointStop, "uuid", "x")                      // attributed to the token's app
	e.get(EndpointConversation, "conversationId", "x")    // idem
	e.do(http.MethodGet, e.url(EndpointConcurrency), nil) // no app at all
	e.do(http.MethodPost, e.url(EndpointSessions, "appId", appA), nil)
	e.do(http.MethodGet, e.srv.URL+BasePath+"/nothing?appId="+appA, nil)

	assert.EqualValues(t, 4, e.sim.Requests(EndpointConcurrency))
	assert.EqualValues(t, 2, e.sim.Requests(EndpointSessions))
	assert.EqualValues(t, 1, e.sim.Requests(EndpointStop))
	assert.EqualValues(t, 1, e.sim.Requests(EndpointConversation))
	assert.EqualValues(t, 1, e.sim.Requests("nothing"))
	assert.EqualValues(t, 0, e.sim.Requests("never"))

	assert.EqualValues(t, 2, e.sim.RequestsFor(appA, EndpointConcurrency))
	assert.EqualValues(t, 1, e.sim.RequestsFor(appB, EndpointConcurrency))
	assert.EqualValues(t, 1, e.sim.RequestsFor("", EndpointConcurrency))
	assert.EqualValues(t, 1, e.sim.RequestsFor(appA, EndpointSessions))
	assert.EqualValues(t, 1, e.sim.RequestsFor(appB, EndpointSessions))
	assert.EqualValues(t, 1, e.sim.RequestsFor(appA, EndpointStop))
	assert.EqualValues(t, 1, e.sim.RequestsFor(appA, EndpointConversation))
	assert.EqualValues(t, 1, e.sim.RequestsFor(appA, "nothing"))
	assert.EqualValues(t, 0, e.sim.RequestsFor(appB, EndpointStop))

	e.sim.ResetCounts()
	for _, ep := range []string{EndpointConcurrency, EndpointSessions, EndpointStop, EndpointConversation, "nothing"} {
		assert.Zero(t, e.sim.Requests(ep))
		assert.Zero(t, e.sim.RequestsFor(appA, ep))
	}
	e.get(EndpointConcurrency, "appId", appA)
	assert.EqualValues(t, 1, e.sim.Requests(EndpointConcurrency))
	assert.EqualValues(t, 1, e.sim.RequestsFor(appA, EndpointConcurrency))
}

func TestConcurrentUse(t *testing.T) {
	e := newEnv(t)
	require.NoError(t, e.sim.SetAllowance(appA, 50))
	require.NoError(t, e.sim.AddConversation(appA, NewConversation("108", "c", 2)))
	tokA := bearer(e.token(appA, keyA))

	stop := make(chan struct{})
	var mutations atomic.Int64
	go func() {
		shapes := []Shape{ShapeArray, ShapeList, ShapeRecords, ShapeRows, ShapeNull}
		for i := 0; ; i++ {
			select {
			case <-stop:
				return
			default:
			}
			if id, err := e.sim.StartSession(appA, "108"); err == nil && i%2 == 0 {
				e.sim.EndSession(appA, id)
			}
			if s := e.sim.Sessions(appA); len(s) > 40 {
				e.sim.EndSession(appA, s[0].ID)
			}
			e.sim.SetSessionListShape(shapes[i%len(shapes)])
			if i%7 == 0 {
				e.sim.SetLatency(appB, EndpointStop, time.Millisecond)
			}
			if i%11 == 0 {
				e.sim.ClearLatency()
			}
			_ = e.sim.InUse(appA)
			mutations.Add(1)
		}
	}()

	const workers, perWorker = 8, 25
	errs := make(chan error, workers)
	for w := 0; w < workers; w++ {
		go func(w int) {
			var err error
			for i := 0; i < perWorker && err == nil; i++ {
				var resp *http.Response
				u := e.url([]string{EndpointConcurrency, EndpointSessions, EndpointStop, EndpointConversation}[(w+i)%4],
					"appId", appA, "uuid", "x", "conversationId", "108")
				resp, err = e.send(context.Background(), http.MethodGet, u, tokA)
				if err == nil {
					var b []byte
					b, err = io.ReadAll(resp.Body)
					resp.Body.Close()
					if err == nil && !json.Valid(b) {
						err = assert.AnError
					}
				}
			}
			errs <- err
		}(w)
	}
	for w := 0; w < workers; w++ {
		assert.NoError(t, <-errs)
	}
	close(stop)
	var total int64
	for _, ep := range []string{EndpointConcurrency, EndpointSessions, EndpointStop, EndpointConversation} {
		total += e.sim.Requests(ep)
	}
	assert.EqualValues(t, workers*perWorker, total)
	assert.Positive(t, mutations.Load())
}

// A responder sees the request after it is counted and delayed, with its
// app and endpoint, and can let the simulator answer.
func TestWithResponder(t *testing.T) {
	e := newEnv(t)
	type seen struct{ app, ep string }
	var got []seen
	respond := func(w http.ResponseWriter, r *http.Request, appID, ep string, normal func(http.ResponseWriter)) {
		got = append(got, seen{appID, ep})
		assert.EqualValues(t, len(got), e.sim.Requests(EndpointConcurrency)+e.sim.Requests(EndpointStop), "counted first")
		if ep == EndpointStop {
			w.WriteHeader(http.StatusTeapot)
			return
		}
		normal(w)
	}
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		e.sim.ServeHTTP(w, WithResponder(r, respond))
	}))
	defer srv.Close()
	e.sim.SetLatency(appA, EndpointConcurrency, 50*time.Millisecond)

	begin := time.Now()
	r := e.do(http.MethodGet, srv.URL+BasePath+"/"+EndpointConcurrency+"?appId="+appA, bearer(e.token(appA, keyA)))
	assert.GreaterOrEqual(t, time.Since(begin), 50*time.Millisecond, "delayed first")
	assert.Equal(t, http.StatusOK, r.status)
	assert.Equal(t, "corp-a", decode(t, r.body)["data"].(map[string]any)["cropId"])
	r = e.do(http.MethodGet, srv.URL+BasePath+"/"+EndpointStop+"?uuid=x", bearer(e.token(appB, keyB)))
	assert.Equal(t, http.StatusTeapot, r.status)
	r = e.do(http.MethodGet, srv.URL+BasePath+"/nothing", nil)
	assert.Equal(t, http.StatusNotFound, r.status, "not an endpoint: the simulator answers")
	assert.Equal(t, []seen{{appA, EndpointConcurrency}, {appB, EndpointStop}}, got)
}
