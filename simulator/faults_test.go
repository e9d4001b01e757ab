package simulator

import (
	"context"
	"encoding/json"
	"io"
	"net/http"
	"net/http/httptest"
	"strconv"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

const concurrencyBody = `{"code":"200","data":{"cropId":"corp-a","totalConcurrentNumber":3,"userConcurrentNumber":0},"message":"","success":true}`

func TestFaultKinds(t *testing.T) {
	e := newEnv(t)
	require.NoError(t, e.sim.AddConversation(appA, NewConversation("108", "c", 2)))
	normalConv := e.get(EndpointConversation, "conversationId", "108").body

	set := func(f Fault) {
		e.sim.ClearFaults()
		e.sim.SetFault(appA, "", f)
	}
	conc := func() response { return e.get(EndpointConcurrency, "appId", appA) }

	t.Run("none", func(t *testing.T) {
		set(Fault{Kind: FaultNone})
		assert.Equal(t, concurrencyBody, string(conc().body))
	})
	t.Run("http500", func(t *testing.T) {
		set(Fault{Kind: FaultHTTP500})
		r := conc()
		assert.Equal(t, http.StatusInternalServerError, r.status)
		assert.Equal(t, "application/json", r.header.Get("Content-Type"))
		assert.Equal(t, `{"code":"500","message":"internal server error","success":false,"data":null}`, string(r.body))
	})
	t.Run("html502", func(t *testing.T) {
		set(Fault{Kind: FaultHTML502})
		r := conc()
		assert.Equal(t, http.StatusBadGateway, r.status)
		assert.Equal(t, "text/html", r.header.Get("Content-Type"))
		assert.Contains(t, string(r.body), "<title>502 Bad Gateway</title>")
		assert.Contains(t, string(r.body), "nginx")
		assert.False(t, json.Valid(r.body))
	})
	t.Run("ratelimit429", func(t *testing.T) {
		for ra, want := range map[time.Duration]string{0: "1", 10 * time.Millisecond: "1", 1500 * time.Millisecond: "2", 30 * time.Second: "30"} {
			set(Fault{Kind: FaultRateLimit429, RetryAfter: ra})
			r := conc()
			assert.Equal(t, http.StatusTooManyRequests, r.status)
			assert.Equal(t, want, r.header.Get("Retry-After"), "RetryAfter %v", ra)
			assert.Equal(t, "429", decode(t, r.body)["code"])
			assert.Equal(t, false, decode(t, r.body)["success"])
		}
	})
	t.Run("unauthorized401", func(t *testing.T) {
		set(Fault{Kind: FaultUnauthorized401})
		r := conc()
		assert.Equal(t, http.StatusUnauthorized, r.status)
		assert.Equal(t, unauthorizedBody, string(r.body))
	})
	t.Run("forbidden403", func(t *testing.T) {
		set(Fault{Kind: FaultForbidden403})
		r := conc()
		assert.Equal(t, http.StatusForbidden, r.status)
		assert.Equal(t, `{"code":"403","message":"token not valid for this app","success":false,"data":null}`, string(r.body))
	})
	t.Run("truncatedjson", func(t *testing.T) {
		set(Fault{Kind: FaultTruncatedJSON})
		r := conc()
		assert.Equal(t, http.StatusOK, r.status)
		assert.Equal(t, concurrencyBody[:len(concurrencyBody)/2], string(r.body))
		assert.False(t, json.Valid(r.body))
		r = e.get(EndpointConversation, "conversationId", "108")
		assert.Equal(t, string(normalConv[:len(normalConv)/2]), string(r.body))
	})
	t.Run("successfalse", func(t *testing.T) {
		set(Fault{Kind: FaultSuccessFalse})
		r := conc()
		assert.Equal(t, http.StatusOK, r.status)
		assert.Equal(t, `{"code":"500","message":"internal error","success":false,"data":null}`, string(r.body))
	})
	t.Run("nulldata", func(t *testing.T) {
		set(Fault{Kind: FaultNullData})
		assert.Equal(t, `{"code":"200","data":null,"message":"","success":true}`, string(conc().body))
		assert.Equal(t, `{"code":"200","data":null,"message":"","success":true}`, string(e.get(EndpointSessions, "appId", appA).body))
		assert.Equal(t, `{"code":"200","message":"","success":true,"data":null}`, string(e.get(EndpointStop, "uuid", "x").body))
		assert.Equal(t, `{"code":"0","message":"SUCCESS","msg":"SUCCESS","success":true,"data":null}`,
			string(e.get(EndpointConversation, "conversationId", "108").body))
	})
	t.Run("codeasnumber", func(t *testing.T) {
		set(Fault{Kind: FaultCodeAsNumber})
		r := conc()
		assert.Equal(t, strings.Replace(concurrencyBody, `"code":"200"`, `"code":200`, 1), string(r.body))
		r = e.get(EndpointConversation, "conversationId", "108")
		m := decode(t, r.body)
		assert.Equal(t, float64(0), m["code"])
		assert.Equal(t, "108", m["data"].(map[string]any)["id"])
	})
	t.Run("wrongtypes", func(t *testing.T) {
		set(Fault{Kind: FaultWrongTypes})
		m := decode(t, conc().body)
		assert.Equal(t, true, m["success"])
		assert.Equal(t, "200", m["code"])
		var typed struct {
			Data struct {
				Total int `json:"totalConcurrentNumber"`
			} `json:"data"`
		}
		assert.Error(t, json.Unmarshal(conc().body, &typed))

		m = decode(t, e.get(EndpointSessions, "appId", appA).body)
		assert.Equal(t, "string", kindOf(m["data"]))

		var conv struct {
			Data struct {
				ID              string `json:"id"`
				MaxConversation int    `json:"maxConversation"`
			} `json:"data"`
		}
		assert.Error(t, json.Unmarshal(e.get(EndpointConversation, "conversationId", "108").body, &conv))
	})
	t.Run("oversizedbody", func(t *testing.T) {
		for _, ep := range []string{EndpointConcurrency, EndpointConversation} {
			set(Fault{Kind: FaultOversizedBody, Bytes: 1 << 20})
			r := e.get(ep, "appId", appA, "conversationId", "108")
			assert.Equal(t, http.StatusOK, r.status)
			assert.Len(t, r.body, 1<<20)
			assert.Equal(t, "1048576", r.header.Get("Content-Length"))
			assert.True(t, json.Valid(r.body))
			assert.Equal(t, true, decode(t, r.body)["success"])
		}
		set(Fault{Kind: FaultOversizedBody})
		r := conc()
		assert.Len(t, r.body, DefaultOversizedBytes)
	})
	t.Run("slowbody", func(t *testing.T) {
		set(Fault{Kind: FaultSlowBody, Delay: 20 * time.Millisecond})
		begin := time.Now()
		resp, err := e.send(context.Background(), http.MethodGet, e.url(EndpointConcurrency, "appId", appA), bearer(e.token(appA, keyA)))
		require.NoError(t, err)
		body, err := io.ReadAll(resp.Body)
		resp.Body.Close()
		require.NoError(t, err)
		assert.GreaterOrEqual(t, time.Since(begin), SlowBodyChunks*20*time.Millisecond, "a pause before each chunk")
		assert.Equal(t, concurrencyBody, string(body))
	})
	t.Run("slowbody headers at once, body cancelled", func(t *testing.T) {
		// The first chunk comes after an hour: that the headers arrive
		// at all shows they are sent at once, and that the read returns
		// shows the server stops when the client goes away.
		set(Fault{Kind: FaultSlowBody, Delay: time.Hour})
		ctx, cancel := context.WithCancel(context.Background())
		defer cancel()
		resp, err := e.send(ctx, http.MethodGet, e.url(EndpointConcurrency, "appId", appA), bearer(e.token(appA, keyA)))
		require.NoError(t, err)
		assert.Equal(t, http.StatusOK, resp.StatusCode)
		assert.Equal(t, strconv.Itoa(len(concurrencyBody)), resp.Header.Get("Content-Length"))
		cancel()
		_, err = io.ReadAll(resp.Body)
		resp.Body.Close()
		assert.Error(t, err)
	})
	t.Run("resetconnection", func(t *testing.T) {
		set(Fault{Kind: FaultResetConnection})
		resp, err := e.send(context.Background(), http.MethodGet, e.url(EndpointConcurrency, "appId", appA), bearer(e.token(appA, keyA)))
		if err == nil {
			var body []byte
			body, err = io.ReadAll(resp.Body)
			resp.Body.Close()
			assert.Less(t, len(body), len(concurrencyBody))
		}
		assert.Error(t, err)
		// The server keeps working afterwards.
		e.sim.ClearFaults()
		assert.Equal(t, concurrencyBody, string(conc().body))
	})
	t.Run("echorequest", func(t *testing.T) {
		set(Fault{Kind: FaultEchoRequest, Bytes: 5})
		r := e.do(http.MethodGet, e.url(EndpointConcurrency, "appId", appA), map[string]string{"token": "t/1", "Authorization": "Bearer a/1", "X-Other": "o"})
		assert.Equal(t, http.StatusBadGateway, r.status)
		assert.Equal(t, "text/plain; charset=utf-8", r.header.Get("Content-Type"))
		want := ".....GET " + BasePath + "/" + EndpointConcurrency + "?appId=" + appA + " HTTP/1.1\r\nAuthorization: Bearer a/1\r\nToken: t/1\r\n"
		assert.True(t, strings.HasPrefix(string(r.body), want), "%q", r.body)
		assert.Contains(t, string(r.body), "X-Other: o\r\n")

		set(Fault{Kind: FaultEchoRequest, Status: http.StatusInternalServerError})
		assert.Equal(t, http.StatusInternalServerError, conc().status)
	})
	t.Run("echorequestjson", func(t *testing.T) {
		set(Fault{Kind: FaultEchoRequestJSON, Bytes: 2})
		r := e.do(http.MethodGet, e.url(EndpointConcurrency, "appId", appA), map[string]string{"token": "t/1"})
		assert.Equal(t, http.StatusOK, r.status)
		assert.Contains(t, string(r.body), `Token: t\/1`, "slashes escaped")
		env := decode(t, r.body)
		assert.Equal(t, "200", env["code"])
		assert.Equal(t, false, env["success"])
		assert.True(t, strings.HasPrefix(env["message"].(string), "..GET "+BasePath+"/"+EndpointConcurrency+"?appId="+appA+" HTTP/1.1\r\nToken: t/1\r\n"), "%q", env["message"])

		set(Fault{Kind: FaultEchoRequestJSON, Status: http.StatusInternalServerError})
		r = conc()
		assert.Equal(t, http.StatusInternalServerError, r.status)
		assert.Equal(t, "500", decode(t, r.body)["code"])
	})
	e.sim.ClearFaults()
	assert.Equal(t, concurrencyBody, string(conc().body))
}

func TestFaultKindString(t *testing.T) {
	assert.Equal(t, "ratelimit429", FaultRateLimit429.String())
	assert.Equal(t, "resetconnection", FaultResetConnection.String())
	assert.Equal(t, "echorequestjson", FaultEchoRequestJSON.String())
	assert.Equal(t, "fault(99)", FaultKind(99).String())
}

func TestFaultScopeAndPrecedence(t *testing.T) {
	e := newEnv(t)
	status := func(appID, key, ep string) int {
		return e.getAs(appID, key, ep, "appId", appID, "uuid", "x", "conversationId", "x").status
	}

	e.sim.SetFault(appA, EndpointConcurrency, Fault{Kind: FaultHTTP500})
	assert.Equal(t, 500, status(appA, keyA, EndpointConcurrency))
	assert.Equal(t, 200, status(appA, keyA, EndpointSessions))
	assert.Equal(t, 200, status(appB, keyB, EndpointConcurrency))

	// Every app, one endpoint: app A's own setting still wins.
	e.sim.SetFault("", EndpointConcurrency, Fault{Kind: FaultHTML502})
	assert.Equal(t, 500, status(appA, keyA, EndpointConcurrency))
	assert.Equal(t, 502, status(appB, keyB, EndpointConcurrency))
	assert.Equal(t, 200, status(appB, keyB, EndpointSessions))

	// App-wide beats endpoint-wide.
	e.sim.SetFault(appB, "", Fault{Kind: FaultRateLimit429})
	assert.Equal(t, 429, status(appB, keyB, EndpointConcurrency))
	assert.Equal(t, 429, status(appB, keyB, EndpointStop))

	// Global.
	e.sim.SetFault("", "", Fault{Kind: FaultForbidden403})
	assert.Equal(t, 403, status(appA, keyA, EndpointSessions))
	assert.Equal(t, 500, status(appA, keyA, EndpointConcurrency))

	// An explicit FaultNone overrides a wider fault.
	e.sim.SetFault(appA, EndpointSessions, Fault{Kind: FaultNone})
	assert.Equal(t, 200, status(appA, keyA, EndpointSessions))

	// Applies on the app of the token for endpoints without appId.
	assert.Equal(t, 403, status(appA, keyA, EndpointConversation))

	e.sim.ClearFaults()
	for _, ep := range []string{EndpointConcurrency, EndpointSessions} {
		assert.Equal(t, 200, status(appA, keyA, ep))
		assert.Equal(t, 200, status(appB, keyB, ep))
	}
}

func TestFaultTimes(t *testing.T) {
	e := newEnv(t)
	e.sim.SetFault("", "", Fault{Kind: FaultHTML502})
	e.sim.SetFault(appA, EndpointConcurrency, Fault{Kind: FaultHTTP500, Times: 2})
	get := func() int { return e.get(EndpointConcurrency, "appId", appA).status }
	assert.Equal(t, 500, get())
	assert.Equal(t, 500, get())
	assert.Equal(t, 502, get(), "falls back to the wider fault once used up")
	e.sim.ClearFaults()
	assert.Equal(t, 200, get())

	e.sim.SetFault(appA, "", Fault{Kind: FaultRateLimit429, Times: 1})
	assert.Equal(t, 200, e.getAs(appB, keyB, EndpointConcurrency, "appId", appB).status, "another app does not use it up")
	assert.Equal(t, 429, get())
	assert.Equal(t, 200, get())
}

func TestFaultedRequestsStillCount(t *testing.T) {
	e := newEnv(t)
	e.sim.SetFault("", "", Fault{Kind: FaultHTTP500})
	for i := 0; i < 3; i++ {
		e.get(EndpointConcurrency, "appId", appA)
	}
	assert.EqualValues(t, 3, e.sim.Requests(EndpointConcurrency))
	assert.EqualValues(t, 3, e.sim.RequestsFor(appA, EndpointConcurrency))
}

func TestStopThroughDistortingFaultStillStops(t *testing.T) {
	e := newEnv(t)
	id, _ := e.sim.StartSession(appA, "c")
	e.sim.SetFault(appA, EndpointStop, Fault{Kind: FaultTruncatedJSON})
	r := e.get(EndpointStop, "uuid", id)
	assert.False(t, json.Valid(r.body))
	assert.Zero(t, e.sim.InUse(appA), "the platform processed the stop; only the answer was damaged")

	id, _ = e.sim.StartSession(appA, "c")
	e.sim.SetFault(appA, EndpointStop, Fault{Kind: FaultHTTP500})
	e.get(EndpointStop, "uuid", id)
	assert.Equal(t, 1, e.sim.InUse(appA), "a 500 does not stop the session")
}

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

	// Latency combines with a fault: delay first, then the fault.
	e.sim.SetLatency(appB, "", 150*time.Millisecond)
	e.sim.SetFault(appB, "", Fault{Kind: FaultHTTP500})
	begin := time.Now()
	assert.Equal(t, http.StatusInternalServerError, e.getAs(appB, keyB, EndpointSessions, "appId", appB).status)
	assert.GreaterOrEqual(t, time.Since(begin), 150*time.Millisecond)

	// Cleared: app A's concurrency, an hour late before, answers.
	e.sim.ClearFaults()
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
				e.sim.SetFault(appB, "", Fault{Kind: FaultHTTP500, Times: 1})
				e.sim.SetLatency(appB, EndpointStop, time.Millisecond)
			}
			if i%11 == 0 {
				e.sim.ClearFaults()
			}
			_ = e.sim.InUse(appA)
			mutations.Add(1)
		}
	}()

	const workers, perWorker = 16, 40
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

func TestEscapePartsReadsBackAsTheToken(t *testing.T) {
	tok := "eyJhbGciOiJIUzI1NiJ9.eyJhcHBJZCI6IjEifQ.c2ln_-x"
	escaped := EscapeParts(tok)
	assert.NotContains(t, escaped, "yJhbGci", "no run of a part is left as it was")
	var got string
	require.NoError(t, json.Unmarshal([]byte(`"`+escaped+`"`), &got))
	assert.Equal(t, tok, got)
}
