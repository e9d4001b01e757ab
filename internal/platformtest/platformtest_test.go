package platformtest

import (
	"bufio"
	"context"
	"encoding/json"
	"go/ast"
	"go/parser"
	gotoken "go/token"
	"io"
	"net"
	"net/http"
	"net/url"
	"os/exec"
	"path/filepath"
	"regexp"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/duix-exporter/duix_exporter/simulator"
)

const (
	appA = "app-a"
	keyA = "key-a-secret"
	appB = "app-b"
	keyB = "key-b-secret"

	concurrencyBody  = `{"code":"200","data":{"cropId":"corp-a","totalConcurrentNumber":3,"userConcurrentNumber":0},"message":"","success":true}`
	unauthorizedBody = `{"code":"401","message":"token invalid or expired","success":false,"data":null}`
)

type env struct {
	t    *testing.T
	sim  *simulator.Simulator
	f    *Faults
	base string
}

// newEnv serves a simulator with apps A (allowance 3, conversation 108) and
// B (allowance 2) through Start.
func newEnv(t *testing.T) *env {
	t.Helper()
	sim := simulator.New()
	sim.AddApp(simulator.App{ID: appA, Key: keyA, CorpID: "corp-a", Allowance: 3})
	sim.AddApp(simulator.App{ID: appB, Key: keyB, CorpID: "corp-b", Allowance: 2})
	require.NoError(t, sim.AddConversation(appA, simulator.NewConversation("108", "c", 2)))
	base, f := Start(t, sim)
	require.Same(t, sim, f.Simulator())
	return &env{t: t, sim: sim, f: f, base: base}
}

func (e *env) url(ep string, params ...string) string {
	q := url.Values{}
	for i := 0; i+1 < len(params); i += 2 {
		q.Set(params[i], params[i+1])
	}
	return e.base + "/" + ep + "?" + q.Encode()
}

func token(t *testing.T, app, key string) string {
	t.Helper()
	tok, err := simulator.MintToken(app, key, time.Now(), time.Now().Add(time.Hour))
	require.NoError(t, err)
	return tok
}

type response struct {
	status int
	reason string
	header http.Header
	body   []byte
}

// send sends a GET as app with the extra headers, and returns the answer
// unread.
func (e *env) send(ctx context.Context, app, key, u string, hdr ...string) (*http.Response, error) {
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, u, nil)
	require.NoError(e.t, err)
	req.Header.Set("Authorization", "Bearer "+token(e.t, app, key))
	for i := 0; i+1 < len(hdr); i += 2 {
		req.Header.Set(hdr[i], hdr[i+1])
	}
	return http.DefaultClient.Do(req)
}

func (e *env) getAs(app, key, ep string, params ...string) response {
	e.t.Helper()
	resp, err := e.send(context.Background(), app, key, e.url(ep, params...))
	require.NoError(e.t, err)
	defer resp.Body.Close()
	body, err := io.ReadAll(resp.Body)
	require.NoError(e.t, err)
	return response{status: resp.StatusCode, reason: resp.Status, header: resp.Header, body: body}
}

// get sends a GET as app A to ep with the parameters every endpoint needs.
func (e *env) get(ep string) response {
	e.t.Helper()
	return e.getAs(appA, keyA, ep, "appId", appA, "conversationId", "108", "uuid", "x")
}

func decode(t *testing.T, body []byte) map[string]any {
	t.Helper()
	var m map[string]any
	require.NoError(t, json.Unmarshal(body, &m), "body: %s", body)
	return m
}

func TestFaultKinds(t *testing.T) {
	e := newEnv(t)
	normalConv := e.get(simulator.EndpointConversation).body
	set := func(f Fault) {
		e.f.ClearFaults()
		e.f.SetFault(appA, "", f)
	}
	conc := func() response { return e.get(simulator.EndpointConcurrency) }

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
		e.f.ClearFaults()
		r = e.getAs(appA, "another key", simulator.EndpointConcurrency, "appId", appA)
		assert.Equal(t, unauthorizedBody, string(r.body), "the simulator's own refusal")
	})
	for name, tc := range map[string]struct {
		kind   FaultKind
		status int
		body   string
	}{
		"forbidden403": {FaultForbidden403, http.StatusForbidden, `{"code":"403","message":"token not valid for this app","success":false,"data":null}`},
		"successfalse": {FaultSuccessFalse, http.StatusOK, `{"code":"500","message":"internal error","success":false,"data":null}`},
	} {
		t.Run(name, func(t *testing.T) {
			set(Fault{Kind: tc.kind})
			r := conc()
			assert.Equal(t, tc.status, r.status)
			assert.Equal(t, tc.body, string(r.body))
		})
	}
	t.Run("truncatedjson", func(t *testing.T) {
		set(Fault{Kind: FaultTruncatedJSON})
		r := conc()
		assert.Equal(t, http.StatusOK, r.status)
		assert.Equal(t, concurrencyBody[:len(concurrencyBody)/2], string(r.body))
		assert.False(t, json.Valid(r.body))
		r = e.get(simulator.EndpointConversation)
		assert.Equal(t, string(normalConv[:len(normalConv)/2]), string(r.body))
	})
	t.Run("nulldata", func(t *testing.T) {
		set(Fault{Kind: FaultNullData})
		assert.Equal(t, `{"code":"200","data":null,"message":"","success":true}`, string(conc().body))
		assert.Equal(t, `{"code":"200","data":null,"message":"","success":true}`, string(e.get(simulator.EndpointSessions).body))
		assert.Equal(t, `{"code":"200","message":"","success":true,"data":null}`, string(e.get(simulator.EndpointStop).body))
		assert.Equal(t, `{"code":"0","message":"SUCCESS","msg":"SUCCESS","success":true,"data":null}`,
			string(e.get(simulator.EndpointConversation).body))
	})
	t.Run("codeasnumber", func(t *testing.T) {
		set(Fault{Kind: FaultCodeAsNumber})
		assert.Equal(t, strings.Replace(concurrencyBody, `"code":"200"`, `"code":200`, 1), string(conc().body))
		m := decode(t, e.get(simulator.EndpointConversation).body)
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
		assert.IsType(t, "", decode(t, e.get(simulator.EndpointSessions).body)["data"])
		var conv struct {
			Data struct {
				ID              string `json:"id"`
				MaxConversation int    `json:"maxConversation"`
			} `json:"data"`
		}
		assert.Error(t, json.Unmarshal(e.get(simulator.EndpointConversation).body, &conv))
	})
	t.Run("oversizedbody", func(t *testing.T) {
		for _, ep := range []string{simulator.EndpointConcurrency, simulator.EndpointConversation} {
			set(Fault{Kind: FaultOversizedBody, Bytes: 1 << 20})
			r := e.get(ep)
			assert.Equal(t, http.StatusOK, r.status)
			assert.Len(t, r.body, 1<<20)
			assert.Equal(t, "1048576", r.header.Get("Content-Length"))
			assert.Equal(t, true, decode(t, r.body)["success"])
		}
		set(Fault{Kind: FaultOversizedBody})
		resp, err := e.send(context.Background(), appA, keyA, e.url(simulator.EndpointConcurrency, "appId", appA))
		require.NoError(t, err)
		resp.Body.Close()
		assert.Equal(t, strconv.Itoa(DefaultOversizedBytes), resp.Header.Get("Content-Length"))
	})
	t.Run("slowbody", func(t *testing.T) {
		set(Fault{Kind: FaultSlowBody, Delay: 20 * time.Millisecond})
		begin := time.Now()
		r := conc()
		assert.GreaterOrEqual(t, time.Since(begin), SlowBodyChunks*20*time.Millisecond, "a pause before each chunk")
		assert.Equal(t, concurrencyBody, string(r.body))
	})
	t.Run("slowbody headers at once, body cancelled", func(t *testing.T) {
		// The first chunk comes after an hour: that the headers arrive
		// at all shows they are sent at once, and that the read returns
		// shows the server stops when the client goes away.
		set(Fault{Kind: FaultSlowBody, Delay: time.Hour})
		ctx, cancel := context.WithCancel(context.Background())
		defer cancel()
		resp, err := e.send(ctx, appA, keyA, e.url(simulator.EndpointConcurrency, "appId", appA))
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
		resp, err := e.send(context.Background(), appA, keyA, e.url(simulator.EndpointConcurrency, "appId", appA))
		if err == nil {
			var body []byte
			body, err = io.ReadAll(resp.Body)
			resp.Body.Close()
			assert.Less(t, len(body), len(concurrencyBody))
		}
		assert.Error(t, err)
		e.f.ClearFaults()
		assert.Equal(t, concurrencyBody, string(conc().body), "the server keeps working afterwards")
	})
	t.Run("echorequest", func(t *testing.T) {
		set(Fault{Kind: FaultEchoRequest, Bytes: 5})
		resp, err := e.send(context.Background(), appA, keyA, e.url(simulator.EndpointConcurrency, "appId", appA), "token", "t/1", "X-Other", "o")
		require.NoError(t, err)
		body, _ := io.ReadAll(resp.Body)
		resp.Body.Close()
		assert.Equal(t, http.StatusBadGateway, resp.StatusCode)
		assert.Equal(t, "text/plain; charset=utf-8", resp.Header.Get("Content-Type"))
		want := ".....GET " + simulator.BasePath + "/" + simulator.EndpointConcurrency + "?appId=" + appA + " HTTP/1.1\r\nAuthorization: Bearer ey"
		assert.True(t, strings.HasPrefix(string(body), want), "%q", body)
		assert.Contains(t, string(body), "\r\nToken: t/1\r\n")
		assert.Contains(t, string(body), "X-Other: o\r\n")

		set(Fault{Kind: FaultEchoRequest, Status: http.StatusInternalServerError})
		assert.Equal(t, http.StatusInternalServerError, conc().status)
	})
	t.Run("echorequestjson", func(t *testing.T) {
		set(Fault{Kind: FaultEchoRequestJSON, Bytes: 2})
		r := conc()
		assert.Equal(t, http.StatusOK, r.status)
		assert.Contains(t, string(r.body), `Authorization: Bearer ey`)
		assert.Contains(t, string(r.body), `GET \/duix-openapi-v2`, "slashes escaped")
		env := decode(t, r.body)
		assert.Equal(t, "200", env["code"])
		assert.Equal(t, false, env["success"])
		assert.True(t, strings.HasPrefix(env["message"].(string), "..GET "+simulator.BasePath+"/"), "%q", env["message"])

		set(Fault{Kind: FaultEchoRequestJSON, Status: http.StatusInternalServerError})
		r = conc()
		assert.Equal(t, http.StatusInternalServerError, r.status)
		assert.Equal(t, "500", decode(t, r.body)["code"])
	})
	e.f.ClearFaults()
	assert.Equal(t, concurrencyBody, string(conc().body))
}

// FaultEcho carries the request's token, query and other headers in the
// status line, the message, msg and the session records.
func TestFaultEcho(t *testing.T) {
	e := newEnv(t)
	tok := token(t, appA, keyA)
	get := func(ep string) (*http.Response, map[string]any) {
		req, err := http.NewRequest(http.MethodGet, e.url(ep, "appId", appA, "conversationId", "108", "q", "query-secret"), nil)
		require.NoError(t, err)
		req.Header.Set("Authorization", "Bearer "+tok)
		req.Header.Set("token", "token-secret")
		req.Header.Set("X-Api-Key", "header-secret")
		resp, err := http.DefaultClient.Do(req)
		require.NoError(t, err)
		defer resp.Body.Close()
		body, err := io.ReadAll(resp.Body)
		require.NoError(t, err)
		return resp, decode(t, body)
	}
	secrets := []string{tok, "token-secret", "header-secret", "q=query-secret"}

	e.f.SetFault(appA, "", Fault{Kind: FaultEcho})
	for _, ep := range []string{simulator.EndpointConcurrency, simulator.EndpointConversation, simulator.EndpointSessions} {
		resp, env := get(ep)
		assert.Equal(t, http.StatusOK, resp.StatusCode, ep)
		assert.Equal(t, "200", env["code"], ep)
		assert.Equal(t, false, env["success"], ep)
		for _, s := range secrets {
			assert.Contains(t, resp.Status, s, "%s: status line", ep)
			assert.Contains(t, env["message"], s, "%s: message", ep)
			assert.Contains(t, env["msg"], s, "%s: msg", ep)
		}
		assert.NotContains(t, resp.Status, "\r")
		if ep == simulator.EndpointSessions {
			recs := env["data"].([]any)
			require.Len(t, recs, 1)
			rec := recs[0].(map[string]any)
			assert.Equal(t, appA, rec["appId"])
			for _, field := range []string{"uuid", "sessionId", "conversationId", "status"} {
				assert.Contains(t, rec[field], tok, field)
			}
		} else {
			assert.Nil(t, env["data"], ep)
		}
	}
	e.f.SetFault(appA, "", Fault{Kind: FaultEcho, Status: http.StatusBadGateway})
	resp, env := get(simulator.EndpointConcurrency)
	assert.Equal(t, http.StatusBadGateway, resp.StatusCode)
	assert.Equal(t, "502", env["code"])
	assert.Contains(t, resp.Status, tok)
}

func TestFaultEndlessBounded(t *testing.T) {
	e := newEnv(t)
	for _, kind := range []FaultKind{FaultEndlessString, FaultEndlessList} {
		for _, ep := range []string{simulator.EndpointConcurrency, simulator.EndpointSessions, simulator.EndpointConversation, simulator.EndpointStop, simulator.EndpointStopAll} {
			e.f.SetFault(appA, "", Fault{Kind: kind, Bytes: 100 << 10})
			r := e.get(ep)
			assert.Equal(t, http.StatusOK, r.status)
			assert.Empty(t, r.header.Get("Content-Length"), "%s %s: streamed", kind, ep)
			assert.InDelta(t, 100<<10, len(r.body), 400, "%s %s", kind, ep)
			env := decode(t, r.body)
			assert.Equal(t, true, env["success"], "%s %s", kind, ep)
			if kind == FaultEndlessList && ep == simulator.EndpointSessions {
				recs := env["data"].([]any)
				ids := map[any]bool{}
				for _, rec := range recs {
					ids[rec.(map[string]any)["uuid"]] = true
					assert.Equal(t, appA, rec.(map[string]any)["appId"])
				}
				assert.Greater(t, len(recs), 500)
				assert.Len(t, ids, len(recs), "distinct sessions")
			}
		}
	}
	want := map[string]string{
		simulator.EndpointConcurrency: `{"code":"200","data":{"cropId":"xxx`,
		simulator.EndpointSessions:    `{"code":"200","data":[{"uuid":"xxx`,
	}
	for ep, prefix := range want {
		e.f.SetFault(appA, "", Fault{Kind: FaultEndlessString, Bytes: 1 << 10})
		assert.True(t, strings.HasPrefix(string(e.get(ep).body), prefix), ep)
	}
}

// An endless body streams until the client leaves: a reader gets far more
// than any bound the exporter sets, then the server stops when the reader
// goes away.
func TestFaultEndlessUntilTheClientLeaves(t *testing.T) {
	e := newEnv(t)
	for _, kind := range []FaultKind{FaultEndlessString, FaultEndlessList} {
		e.f.SetFault(appA, "", Fault{Kind: kind})
		ctx, cancel := context.WithCancel(context.Background())
		resp, err := e.send(ctx, appA, keyA, e.url(simulator.EndpointSessions, "appId", appA))
		require.NoError(t, err)
		n, err := io.CopyN(io.Discard, resp.Body, 20<<20) // beyond the default max_response_bytes
		require.NoError(t, err)
		assert.EqualValues(t, 20<<20, n, kind)
		cancel()
		_, err = io.Copy(io.Discard, resp.Body)
		assert.Error(t, err)
		resp.Body.Close()
	}
	e.f.ClearFaults()
	assert.Equal(t, concurrencyBody, string(e.get(simulator.EndpointConcurrency).body), "the server keeps working afterwards")
}

func TestFaultKindString(t *testing.T) {
	assert.Equal(t, "ratelimit429", FaultRateLimit429.String())
	assert.Equal(t, "echo", FaultEcho.String())
	assert.Equal(t, "endlesslist", FaultEndlessList.String())
	assert.Equal(t, "fault(99)", FaultKind(99).String())
}

func TestFaultScopeAndPrecedence(t *testing.T) {
	e := newEnv(t)
	status := func(app, key, ep string) int {
		return e.getAs(app, key, ep, "appId", app, "uuid", "x", "conversationId", "x").status
	}
	fault := func(k FaultKind) Fault { return Fault{Kind: k} }

	e.f.SetFault(appA, simulator.EndpointConcurrency, fault(FaultHTTP500))
	assert.Equal(t, 500, status(appA, keyA, simulator.EndpointConcurrency))
	assert.Equal(t, 200, status(appA, keyA, simulator.EndpointSessions))
	assert.Equal(t, 200, status(appB, keyB, simulator.EndpointConcurrency))

	// Every app, one endpoint: app A's own setting still wins.
	e.f.SetFault("", simulator.EndpointConcurrency, fault(FaultHTML502))
	assert.Equal(t, 500, status(appA, keyA, simulator.EndpointConcurrency))
	assert.Equal(t, 502, status(appB, keyB, simulator.EndpointConcurrency))
	assert.Equal(t, 200, status(appB, keyB, simulator.EndpointSessions))

	// App-wide beats endpoint-wide.
	e.f.SetFault(appB, "", fault(FaultRateLimit429))
	assert.Equal(t, 429, status(appB, keyB, simulator.EndpointConcurrency))
	assert.Equal(t, 429, status(appB, keyB, simulator.EndpointStop))

	// Global.
	e.f.SetFault("", "", fault(FaultForbidden403))
	assert.Equal(t, 403, status(appA, keyA, simulator.EndpointSessions))
	assert.Equal(t, 500, status(appA, keyA, simulator.EndpointConcurrency))

	// An explicit FaultNone overrides a wider fault.
	e.f.SetFault(appA, simulator.EndpointSessions, fault(FaultNone))
	assert.Equal(t, 200, status(appA, keyA, simulator.EndpointSessions))

	// Applies on the app of the token for endpoints without appId.
	assert.Equal(t, 403, status(appA, keyA, simulator.EndpointConversation))

	e.f.ClearFaults()
	for _, ep := range []string{simulator.EndpointConcurrency, simulator.EndpointSessions} {
		assert.Equal(t, 200, status(appA, keyA, ep))
		assert.Equal(t, 200, status(appB, keyB, ep))
	}
}

func TestFaultTimes(t *testing.T) {
	e := newEnv(t)
	e.f.SetFault("", "", Fault{Kind: FaultHTML502})
	e.f.SetFault(appA, simulator.EndpointConcurrency, Fault{Kind: FaultHTTP500, Times: 2})
	get := func() int { return e.get(simulator.EndpointConcurrency).status }
	assert.Equal(t, 500, get())
	assert.Equal(t, 500, get())
	assert.Equal(t, 502, get(), "falls back to the wider fault once used up")
	e.f.ClearFaults()
	assert.Equal(t, 200, get())

	e.f.SetFault(appA, "", Fault{Kind: FaultRateLimit429, Times: 1})
	assert.Equal(t, 200, e.getAs(appB, keyB, simulator.EndpointConcurrency, "appId", appB).status, "another app does not use it up")
	assert.Equal(t, 429, get())
	assert.Equal(t, 200, get())
}

func TestFaultedRequestsStillCount(t *testing.T) {
	e := newEnv(t)
	e.f.SetFault("", "", Fault{Kind: FaultHTTP500})
	for range 3 {
		e.get(simulator.EndpointConcurrency)
	}
	assert.EqualValues(t, 3, e.sim.Requests(simulator.EndpointConcurrency))
	assert.EqualValues(t, 3, e.sim.RequestsFor(appA, simulator.EndpointConcurrency))
}

func TestStopThroughFaults(t *testing.T) {
	e := newEnv(t)
	stop := func(f Fault) response {
		id, err := e.sim.StartSession(appA, "c")
		require.NoError(t, err)
		e.f.SetFault(appA, simulator.EndpointStop, f)
		return e.getAs(appA, keyA, simulator.EndpointStop, "uuid", id)
	}
	assert.False(t, json.Valid(stop(Fault{Kind: FaultTruncatedJSON}).body))
	assert.Zero(t, e.sim.InUse(appA), "the platform processed the stop; only the answer was damaged")

	stop(Fault{Kind: FaultHTTP500})
	assert.Equal(t, 1, e.sim.InUse(appA), "a 500 does not stop the session")

	e.f.ClearFaults()
	e.f.SetFault(appA, simulator.EndpointStopAll, Fault{Kind: FaultHTTP500, Times: 1})
	assert.Equal(t, http.StatusInternalServerError, e.get(simulator.EndpointStopAll).status)
	assert.Equal(t, 1, e.sim.InUse(appA), "a faulted request ends nothing")
	assert.Equal(t, `{"code":"200","message":"","success":true,"data":{"count":1}}`, string(e.get(simulator.EndpointStopAll).body))
}

func TestLatencyThenFault(t *testing.T) {
	e := newEnv(t)
	e.sim.SetLatency(appB, "", 150*time.Millisecond)
	e.f.SetFault(appB, "", Fault{Kind: FaultHTTP500})
	begin := time.Now()
	assert.Equal(t, http.StatusInternalServerError, e.getAs(appB, keyB, simulator.EndpointSessions, "appId", appB).status)
	assert.GreaterOrEqual(t, time.Since(begin), 150*time.Millisecond, "the delay first, then the fault")

	// ClearFaults clears the latencies too: an hour late before, it
	// answers at once.
	e.sim.SetLatency("", "", time.Hour)
	e.f.ClearFaults()
	assert.Equal(t, http.StatusOK, e.get(simulator.EndpointConcurrency).status)
}

// Faults set and cleared while requests run: every answer is complete
// JSON (go test -race checks the rest).
func TestConcurrentUse(t *testing.T) {
	e := newEnv(t)
	stop := make(chan struct{})
	var wg sync.WaitGroup
	wg.Go(func() {
		for i := 0; ; i++ {
			select {
			case <-stop:
				return
			default:
			}
			e.f.SetFault(appA, "", Fault{Kind: FaultHTTP500, Times: 1})
			e.sim.SetLatency(appB, simulator.EndpointStop, time.Millisecond)
			if i%3 == 0 {
				e.f.ClearFaults()
			}
		}
	})
	const workers, perWorker = 8, 25
	errs := make(chan error, workers)
	for w := range workers {
		go func() {
			var err error
			for i := 0; i < perWorker && err == nil; i++ {
				var resp *http.Response
				ep := []string{simulator.EndpointConcurrency, simulator.EndpointSessions, simulator.EndpointConversation}[(w+i)%3]
				if resp, err = e.send(context.Background(), appA, keyA, e.url(ep, "appId", appA, "conversationId", "108")); err == nil {
					var b []byte
					b, err = io.ReadAll(bufio.NewReader(resp.Body))
					resp.Body.Close()
					if err == nil && !json.Valid(b) {
						err = assert.AnError
					}
				}
			}
			errs <- err
		}()
	}
	for range workers {
		assert.NoError(t, <-errs)
	}
	close(stop)
	wg.Wait()
}

func TestEscapePartsReadsBackAsTheToken(t *testing.T) {
	tok := "eyJhbGciOiJIUzI1NiJ9.eyJhcHBJZCI6IjEifQ.c2ln_-x"
	escaped := EscapeParts(tok)
	assert.NotContains(t, escaped, "yJhbGci", "no run of a part is left as it was")
	var got string
	require.NoError(t, json.Unmarshal([]byte(`"`+escaped+`"`), &got))
	assert.Equal(t, tok, got)
}

func TestStartServesUntilTheTestEnds(t *testing.T) {
	var (
		base string
		f    *Faults
		resp *http.Response
	)
	t.Run("inner", func(t *testing.T) {
		sim := simulator.New()
		sim.AddApp(simulator.App{ID: appA, Key: keyA, Allowance: 1})
		base, f = Start(t, sim)
		assert.Regexp(t, `^http://127\.0\.0\.1:\d+`+regexp.QuoteMeta(simulator.BasePath)+`$`, base)
		f.SetFault("", "", Fault{Kind: FaultSlowBody, Delay: time.Hour})
		req, err := http.NewRequest(http.MethodGet, base+"/"+simulator.EndpointConcurrency+"?appId="+appA, nil)
		require.NoError(t, err)
		req.Header.Set("Authorization", "Bearer "+token(t, appA, keyA))
		resp, err = http.DefaultClient.Do(req)
		require.NoError(t, err)
		assert.Equal(t, http.StatusOK, resp.StatusCode)
		assert.Equal(t, int64(1), f.Simulator().RequestsFor(appA, simulator.EndpointConcurrency))
	})
	// The answer still being sent did not keep the server open.
	_, err := http.Get(base + "/" + simulator.EndpointConcurrency)
	assert.Error(t, err, "closed with the test")
	_, err = io.ReadAll(resp.Body)
	assert.Error(t, err, "the slow answer was cut")
	resp.Body.Close()
}

func TestFreeAddr(t *testing.T) {
	addr := FreeAddr(t)
	assert.True(t, strings.HasPrefix(addr, "127.0.0.1:"), addr)
	port, err := strconv.Atoi(strings.TrimPrefix(addr, "127.0.0.1:"))
	require.NoError(t, err)
	assert.Less(t, port, 32768, "below the ephemeral range: no socket bound to port 0 takes it")
	l, err := net.Listen("tcp", addr)
	require.NoError(t, err, "free to listen on")
	require.NoError(t, l.Close())
}

func TestProcess(t *testing.T) {
	// WaitReady gives up, with the output, when the process exits.
	p, err := StartProcess("quitter", exec.Command("sh", "-c", "echo bye; exit 3"))
	require.NoError(t, err)
	err = p.WaitReady(t.Context(), "http://"+FreeAddr(t)+"/-/ready", time.Minute)
	require.ErrorContains(t, err, "quitter exited: exit status 3")
	assert.Contains(t, err.Error(), "bye")

	// Stop ends it with SIGTERM, and may be called again.
	p, err = StartProcess("sleeper", exec.Command("sleep", "60"))
	require.NoError(t, err)
	require.EqualError(t, p.Stop(time.Minute), "signal: terminated")
	require.EqualError(t, p.Stop(time.Minute), "signal: terminated")
}

// The exporter's binary links neither this package nor any fault: only
// the tests and the load harness inject them.
func TestProductionBinaryHasNoFaults(t *testing.T) {
	out, err := exec.Command("go", "list", "-deps", "-json=ImportPath,Module,Dir,GoFiles", "github.com/duix-exporter/duix_exporter").Output()
	require.NoError(t, err)
	dec := json.NewDecoder(strings.NewReader(string(out)))
	fault := regexp.MustCompile(`^fault|Fault`) // not "default"
	own := 0
	for dec.More() {
		var pkg struct {
			ImportPath, Dir string
			Module          *struct{ Path string }
			GoFiles         []string
		}
		require.NoError(t, dec.Decode(&pkg))
		assert.NotContains(t, pkg.ImportPath, "platformtest")
		if pkg.Module == nil || pkg.Module.Path != "github.com/duix-exporter/duix_exporter" {
			continue
		}
		own++
		for _, name := range pkg.GoFiles {
			f, err := parser.ParseFile(gotoken.NewFileSet(), filepath.Join(pkg.Dir, name), nil, parser.SkipObjectResolution)
			require.NoError(t, err)
			for _, d := range f.Decls {
				for _, id := range declared(d) {
					assert.False(t, fault.MatchString(id), "%s declares %s in %s", pkg.ImportPath, id, name)
				}
			}
		}
	}
	assert.Greater(t, own, 3, "the module's own packages were looked at")
}

// declared lists the names a top-level declaration declares, methods
// included.
func declared(d ast.Decl) []string {
	var names []string
	switch d := d.(type) {
	case *ast.FuncDecl:
		names = append(names, d.Name.Name)
	case *ast.GenDecl:
		for _, s := range d.Specs {
			switch s := s.(type) {
			case *ast.TypeSpec:
				names = append(names, s.Name.Name)
			case *ast.ValueSpec:
				for _, n := range s.Names {
					names = append(names, n.Name)
				}
			}
		}
	}
	return names
}
