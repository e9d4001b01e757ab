package client_test

import (
	"bytes"
	"cmp"
	"context"
	"encoding/pem"
	"errors"
	"fmt"
	"io"
	"log"
	"net"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/golang-jwt/jwt/v5"
	"github.com/prometheus/client_golang/prometheus"
	promconfig "github.com/prometheus/common/config"
	"github.com/prometheus/common/model"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/duix-exporter/duix_exporter/client"
	"github.com/duix-exporter/duix_exporter/config"
	"github.com/duix-exporter/duix_exporter/internal/platformtest"
	"github.com/duix-exporter/duix_exporter/simulator"
)

const (
	appID  = "1790000000000000001"
	appKey = "KEY-b7f3e1d9c2a4-recognisable"
	convID = "108"
)

// fixture is the simulator on loopback, a recorder of the tokens it
// received, and a configuration for one app "a".
type fixture struct {
	sim     *simulator.Simulator
	faults  *platformtest.Faults
	srv     *httptest.Server
	reg     *prometheus.Registry
	metrics *client.Metrics
	cfg     *config.Config
	clock   *simulator.Clock
	mu      sync.Mutex
	tokens  []string // as received, in order
}

func newFixture(t *testing.T, header string) *fixture {
	t.Helper()
	f := &fixture{sim: simulator.New(), reg: prometheus.NewRegistry(), clock: simulator.NewClock(time.Now())}
	f.metrics = client.NewMetrics(f.reg)
	f.faults = platformtest.New(f.sim)
	f.sim.AddApp(simulator.App{ID: appID, Key: appKey, CorpID: "corp-7", Allowance: 10})
	require.NoError(t, f.sim.AddConversation(appID, simulator.NewConversation(convID, "law desk", 2)))
	f.srv = httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		tok := strings.TrimPrefix(r.Header.Get("Authorization"), "Bearer ")
		if tok == "" {
			tok = r.Header.Get("token")
		}
		f.mu.Lock()
		f.tokens = append(f.tokens, tok)
		f.mu.Unlock()
		f.faults.ServeHTTP(w, r)
	}))
	t.Cleanup(f.srv.Close)
	f.cfg = &config.Config{API: config.DefaultAPI, Apps: []config.App{{Name: "a", AppID: appID, AppKey: appKey, TokenTTL: config.DefaultTokenTTL}}}
	f.cfg.API.BaseURL = f.srv.URL + simulator.BasePath
	f.cfg.API.AuthHeader = header
	// Only a guard against a hang: a test that needs a deadline sets its
	// own, against a fault that never ends.
	f.cfg.API.Timeout = model.Duration(time.Minute)
	return f
}

func (f *fixture) pool(t *testing.T) *client.Pool {
	t.Helper()
	p, err := client.NewPool(f.cfg, client.PoolOptions{Metrics: f.metrics, Now: f.clock.Now})
	require.NoError(t, err)
	t.Cleanup(p.Close)
	return p
}

func (f *fixture) client(t *testing.T) *client.Client { return f.pool(t).Client("a") }

func (f *fixture) lastToken() string {
	f.mu.Lock()
	defer f.mu.Unlock()
	return f.tokens[len(f.tokens)-1]
}

// allSessions lists the app's sessions with their records.
func allSessions(c *client.Client) ([]client.Session, error) {
	var out []client.Session
	err := c.EachSession(context.Background(), client.SessionOptions{KeepRaw: true}, func(s client.Session) error {
		out = append(out, s)
		return nil
	})
	return out, err
}

func TestConcurrencyBothHeaderStyles(t *testing.T) {
	for _, header := range []string{config.AuthHeaderAuthorization, config.AuthHeaderToken} {
		t.Run(header, func(t *testing.T) {
			f := newFixture(t, header)
			for range 3 {
				_, err := f.sim.StartSession(appID, convID)
				require.NoError(t, err)
			}
			got, err := f.client(t).Concurrency(context.Background())
			require.NoError(t, err)
			assert.Equal(t, &client.Concurrency{CropID: "corp-7", TotalConcurrentNumber: 10, UserConcurrentNumber: 3}, got)
			assert.Equal(t, 1.0, counterValue(t, f.reg, "duix_api_requests_total", map[string]string{"endpoint": client.EndpointConcurrency, "code": "200"}))
			assert.True(t, strings.HasPrefix(f.lastToken(), "eyJ"), "the token went in the configured header")
		})
	}
}

func TestSessionsEveryShape(t *testing.T) {
	shapes := map[string]simulator.Shape{
		"array": simulator.ShapeArray, "list": simulator.ShapeList,
		"records": simulator.ShapeRecords, "rows": simulator.ShapeRows,
	}
	for name, shape := range shapes {
		t.Run(name, func(t *testing.T) {
			f := newFixture(t, config.AuthHeaderAuthorization)
			f.sim.SetSessionListShape(shape)
			id1, err := f.sim.StartSession(appID, convID)
			require.NoError(t, err)
			id2, err := f.sim.StartSession(appID, convID)
			require.NoError(t, err)
			sessions, err := allSessions(f.client(t))
			require.NoError(t, err)
			require.Len(t, sessions, 2)
			assert.Equal(t, id1, sessions[0].ID)
			assert.Equal(t, id2, sessions[1].ID)
			assert.Equal(t, convID, sessions[0].ConversationID)
			require.NotNil(t, sessions[0].Start)
			assert.Contains(t, string(sessions[0].Raw), id1)
		})
	}
	t.Run("null", func(t *testing.T) {
		f := newFixture(t, config.AuthHeaderAuthorization)
		f.sim.SetSessionListShape(simulator.ShapeNull)
		_, err := f.sim.StartSession(appID, convID)
		require.NoError(t, err)
		sessions, err := allSessions(f.client(t))
		require.NoError(t, err)
		assert.Empty(t, sessions)
	})
}

// conversation holds the fields of a conversation's details that the tests read.
type conversation struct {
	ID, ConversationName, Language string
	MaxConversation                int
	DetailDto                      struct{ TtsName string }
}

func TestConversationDetails(t *testing.T) {
	f := newFixture(t, config.AuthHeaderAuthorization)
	c := f.client(t)
	conv, err := client.GetConversation[conversation](context.Background(), c, convID)
	require.NoError(t, err)
	assert.Equal(t, convID, conv.ID)
	assert.Equal(t, "law desk", conv.ConversationName)
	assert.Equal(t, 2, conv.MaxConversation)
	assert.Equal(t, "zh", conv.Language)
	assert.Equal(t, "guina", conv.DetailDto.TtsName)

	_, err = client.GetConversation[conversation](context.Background(), c, "nope")
	var e *client.Error
	require.ErrorAs(t, err, &e)
	assert.Equal(t, "404", e.Code)
	assert.Equal(t, "a", e.App)
	assert.True(t, client.IsNotFound(err))
}

func TestStopSession(t *testing.T) {
	f := newFixture(t, config.AuthHeaderToken)
	c := f.client(t)
	id, err := f.sim.StartSession(appID, convID)
	require.NoError(t, err)
	_, err = f.sim.StartSession(appID, convID)
	require.NoError(t, err)

	code, err := c.StopSession(context.Background(), id)
	require.NoError(t, err)
	assert.Equal(t, "200", code)
	assert.Equal(t, 1, f.sim.InUse(appID))

	_, err = c.StopSession(context.Background(), id)
	assert.True(t, client.IsNotFound(err), "stopping an ended session: %v", err)
	_, err = c.StopSession(context.Background(), "00000000-0000-0000-0000-000000000000")
	assert.True(t, client.IsNotFound(err), "stopping an unknown session: %v", err)
}

func TestStopAllSessions(t *testing.T) {
	f := newFixture(t, config.AuthHeaderToken)
	c := f.client(t)
	for range 3 {
		_, err := f.sim.StartSession(appID, convID)
		require.NoError(t, err)
	}
	code, err := c.StopAllSessions(context.Background())
	require.NoError(t, err)
	assert.Equal(t, "200", code)
	assert.Zero(t, f.sim.InUse(appID))
	assert.EqualValues(t, 1, f.sim.RequestsFor(appID, simulator.EndpointStopAll), "the app's ID is the appId parameter")
	assert.Equal(t, 1.0, counterValue(t, f.reg, "duix_api_requests_total", map[string]string{"endpoint": client.EndpointStopAll, "code": "200"}))
}

// Only the envelope decides: the platform does not document data, so any
// value is a success.
func TestStopAllSessionsAcceptsAnyData(t *testing.T) {
	for _, fault := range []platformtest.FaultKind{platformtest.FaultNullData, platformtest.FaultWrongTypes, platformtest.FaultCodeAsNumber} {
		f := newFixture(t, config.AuthHeaderAuthorization)
		f.faults.SetFault(appID, simulator.EndpointStopAll, platformtest.Fault{Kind: fault})
		code, err := f.client(t).StopAllSessions(context.Background())
		require.NoError(t, err, fault)
		assert.Equal(t, "200", code, fault)
	}
}

// A successful stop's code is kept only when it is shaped like one, as an
// error's is: the operator commands print it.
func TestStopKeepsOnlyACodeShapedCode(t *testing.T) {
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		_, _ = w.Write([]byte(`{"code":"token: SECRET-echoed ` + r.Header.Get("Authorization") + `","success":true,"data":null}`))
	}))
	t.Cleanup(srv.Close)
	f := newFixture(t, config.AuthHeaderAuthorization)
	f.cfg.API.BaseURL = srv.URL
	c := f.client(t)
	code, err := c.StopSession(context.Background(), "s-1")
	require.NoError(t, err)
	assert.Empty(t, code)
	code, err = c.StopAllSessions(context.Background())
	require.NoError(t, err)
	assert.Empty(t, code)
}

// Every fault of the platform maps to its reason, and the error carries
// the endpoint, the app, the status and the code, and nothing the platform
// wrote: not its message, not an echo of the request's token.
func TestFaultsMapToReasonsAndCarryNoUpstreamText(t *testing.T) {
	cases := []struct {
		fault  platformtest.Fault
		reason string
		status int
		code   string
	}{
		{platformtest.Fault{Kind: platformtest.FaultHTTP500}, client.ReasonHTTP, 500, ""},
		{platformtest.Fault{Kind: platformtest.FaultHTML502}, client.ReasonHTTP, 502, ""},
		{platformtest.Fault{Kind: platformtest.FaultRateLimit429, RetryAfter: 30 * time.Second}, client.ReasonRateLimited, 429, ""},
		{platformtest.Fault{Kind: platformtest.FaultUnauthorized401}, client.ReasonAuth, 401, ""},
		{platformtest.Fault{Kind: platformtest.FaultForbidden403}, client.ReasonAuth, 403, ""},
		{platformtest.Fault{Kind: platformtest.FaultTruncatedJSON}, client.ReasonDecode, 0, ""},
		{platformtest.Fault{Kind: platformtest.FaultSuccessFalse}, client.ReasonAPI, 0, "500"},
		{platformtest.Fault{Kind: platformtest.FaultNullData}, client.ReasonDecode, 0, ""},
		{platformtest.Fault{Kind: platformtest.FaultWrongTypes}, client.ReasonDecode, 0, ""},
		{platformtest.Fault{Kind: platformtest.FaultOversizedBody, Bytes: 64 << 10}, client.ReasonDecode, 0, ""},
		{platformtest.Fault{Kind: platformtest.FaultResetConnection}, client.ReasonNetwork, 0, ""},
		{platformtest.Fault{Kind: platformtest.FaultEchoRequest}, client.ReasonHTTP, 502, ""},
		{platformtest.Fault{Kind: platformtest.FaultEchoRequestJSON}, client.ReasonAPI, 0, ""},
		// The body's first chunk comes after an hour: the timeout below
		// always ends the call first.
		{platformtest.Fault{Kind: platformtest.FaultSlowBody, Delay: time.Hour}, client.ReasonTimeout, 0, ""},
	}
	for _, tc := range cases {
		t.Run(tc.fault.Kind.String(), func(t *testing.T) {
			f := newFixture(t, config.AuthHeaderAuthorization)
			f.cfg.API.MaxResponseBytes = 16 << 10
			if tc.fault.Kind == platformtest.FaultSlowBody {
				f.cfg.API.Timeout = model.Duration(100 * time.Millisecond)
			}
			f.faults.SetFault(appID, client.EndpointConcurrency, tc.fault)
			_, err := f.client(t).Concurrency(context.Background())
			var e *client.Error
			require.ErrorAs(t, err, &e)
			assert.Equal(t, tc.reason, client.Reason(err), "%v", err)
			assert.Equal(t, tc.status, e.Status)
			if tc.code != "" {
				assert.Equal(t, tc.code, e.Code)
			}
			assert.Equal(t, client.EndpointConcurrency, e.Endpoint)
			assert.Equal(t, "a", e.App)
			text := err.Error()
			assert.True(t, strings.HasPrefix(text, client.EndpointConcurrency+" (app a): "+tc.reason), text)
			for _, upstream := range []string{f.lastToken(), appKey, "internal error", "nginx", "Bearer", "<"} {
				assert.NotContains(t, text, upstream)
			}
		})
	}
}

// An envelope code is kept only when it looks like a code.
func TestOnlyCodeShapedCodesAreKept(t *testing.T) {
	for code, want := range map[string]string{`"E_1.x-2"`: "E_1.x-2", `4031`: "4031", `"has space"`: "", `"` + strings.Repeat("x", 33) + `"`: ""} {
		srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
			_, _ = w.Write([]byte(`{"success":false,"code":` + code + `,"message":"SECRET-MESSAGE"}`))
		}))
		f := newFixture(t, config.AuthHeaderAuthorization)
		f.cfg.API.BaseURL = srv.URL
		_, err := f.client(t).Concurrency(context.Background())
		srv.Close()
		var e *client.Error
		require.ErrorAs(t, err, &e)
		assert.Equal(t, want, e.Code, code)
		assert.Equal(t, client.ReasonAPI, e.Reason)
		assert.NotContains(t, err.Error(), "SECRET-MESSAGE")
	}
}

func TestCodeAsNumberIsAccepted(t *testing.T) {
	f := newFixture(t, config.AuthHeaderAuthorization)
	f.faults.SetFault(appID, "", platformtest.Fault{Kind: platformtest.FaultCodeAsNumber})
	c := f.client(t)
	_, err := c.Concurrency(context.Background())
	assert.NoError(t, err)
	_, err = allSessions(c)
	assert.NoError(t, err)
	_, err = client.GetConversation[conversation](context.Background(), c, convID)
	assert.NoError(t, err)
}

func TestNullSessionDataIsEmptyButNullConcurrencyIsAnError(t *testing.T) {
	f := newFixture(t, config.AuthHeaderAuthorization)
	f.faults.SetFault(appID, "", platformtest.Fault{Kind: platformtest.FaultNullData})
	c := f.client(t)
	s, err := allSessions(c)
	assert.NoError(t, err)
	assert.Empty(t, s)
	_, err = c.Concurrency(context.Background())
	assert.Equal(t, client.ReasonDecode, client.Reason(err))
}

// An answer of getconcurrentNumber without both numbers, or with one below
// 0, is not the documented one: a decode error, never zeros that look like
// free capacity, nor a negative use that no alert would ever fire on.
func TestConcurrencyWithoutItsNumbersIsADecodeError(t *testing.T) {
	for _, data := range []string{`{}`, `{"totalConcurrentNumber":5}`, `{"totalConcurrentNumber":5,"userConcurrentNumber":null}`, `{"userConcurrentNumber":1,"cropId":"c"}`,
		`{"totalConcurrentNumber":5,"userConcurrentNumber":-2}`, `{"totalConcurrentNumber":-1,"userConcurrentNumber":0}`} {
		srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
			_, _ = w.Write([]byte(`{"code":"200","success":true,"data":` + data + `}`))
		}))
		t.Cleanup(srv.Close)
		f := newFixture(t, config.AuthHeaderAuthorization)
		f.cfg.API.BaseURL = srv.URL
		_, err := f.client(t).Concurrency(context.Background())
		assert.Equal(t, client.ReasonDecode, client.Reason(err), data)
		assert.Contains(t, fmt.Sprint(err), client.EndpointConcurrency, data)
	}
}

func TestRetryAfterIsHonoured(t *testing.T) {
	f := newFixture(t, config.AuthHeaderAuthorization)
	f.faults.SetFault(appID, client.EndpointConcurrency, platformtest.Fault{Kind: platformtest.FaultRateLimit429, RetryAfter: 30 * time.Second, Times: 1})
	c := f.client(t)
	_, err := c.Concurrency(context.Background())
	require.Equal(t, client.ReasonRateLimited, client.Reason(err))
	assert.Equal(t, f.clock.Now().Add(30*time.Second), c.RetryAfter())
	_, err = allSessions(c)
	assert.Equal(t, client.ReasonRateLimited, client.Reason(err))
	assert.Zero(t, f.sim.Requests(client.EndpointSessions), "no call is made while Retry-After applies")
	f.clock.Add(31 * time.Second)
	_, err = allSessions(c)
	assert.NoError(t, err, "called again once it has passed")
}

// A Retry-After too large for a duration is an hour, as is any longer
// than that, in seconds or as a date; one of 0 seconds, or a date already
// past, has passed at once (the minute is for an absent or unreadable one).
func TestRetryAfterIsAtMostAnHourAndAPastOneStopsNothing(t *testing.T) {
	f := newFixture(t, config.AuthHeaderAuthorization)
	now := f.clock.Now()
	for v, until := range map[string]time.Time{
		"18446744074": now.Add(time.Hour), "99999999999999999999999": now.Add(time.Hour), "7200": now.Add(time.Hour),
		now.Add(3 * time.Hour).UTC().Format(http.TimeFormat): now.Add(time.Hour),
		"0": now, now.Add(-time.Hour).UTC().Format(http.TimeFormat): now, // allowed at once
	} {
		assert.Equal(t, until, retryAfterOf(t, f, v), v)
	}
}

// retryAfterOf returns when a client of f may call again after a 429 with
// Retry-After v (none when v is empty).
func retryAfterOf(t *testing.T, f *fixture, v string) time.Time {
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if v != "" {
			w.Header().Set("Retry-After", v)
		}
		w.WriteHeader(http.StatusTooManyRequests)
	}))
	defer srv.Close()
	f.cfg.API.BaseURL = srv.URL
	c := f.client(t)
	_, err := c.Concurrency(context.Background())
	assert.Equal(t, client.ReasonRateLimited, client.Reason(err), "%q", v)
	return c.RetryAfter()
}

// A 429 whose Retry-After is absent or unreadable stops the app's calls
// for one minute (docs/platform-api.md, "Rate limits"), and so does a
// success false with code 429 and no Retry-After.
func TestRetryAfterAbsentOrUnreadableIsOneMinute(t *testing.T) {
	for _, v := range []string{"", "soon", "-5", "1.5", "Tomorrow, 99 Foo 2100 25:00:00 GMT"} {
		f := newFixture(t, config.AuthHeaderAuthorization)
		assert.Equal(t, f.clock.Now().Add(time.Minute), retryAfterOf(t, f, v), "%q", v)
	}

	f := newFixture(t, config.AuthHeaderAuthorization)
	answering(t, f, func(*http.Request, http.ResponseWriter) string {
		return `{"code":"429","data":null,"message":"too many","success":false}`
	})
	c := f.client(t)
	_, err := c.Concurrency(context.Background())
	assert.Equal(t, client.ReasonRateLimited, client.Reason(err), "%v", err)
	assert.Equal(t, f.clock.Now().Add(time.Minute), c.RetryAfter(), "an envelope 429")
}

func TestTimeoutFromLatency(t *testing.T) {
	f := newFixture(t, config.AuthHeaderAuthorization)
	f.cfg.API.Timeout = model.Duration(100 * time.Millisecond)
	f.sim.SetLatency(appID, "", time.Hour) // returning at all shows the deadline ended the wait
	_, err := f.client(t).Concurrency(context.Background())
	assert.Equal(t, client.ReasonTimeout, client.Reason(err), "%v", err)
	assert.ErrorIs(t, err, context.DeadlineExceeded)
	assert.Equal(t, 1.0, counterValue(t, f.reg, "duix_api_requests_total", map[string]string{"endpoint": client.EndpointConcurrency, "code": "error"}))
}

func TestConnectionRefusedIsANetworkError(t *testing.T) {
	f := newFixture(t, config.AuthHeaderAuthorization)
	f.srv.Close()
	_, err := f.client(t).Concurrency(context.Background())
	assert.Equal(t, client.ReasonNetwork, client.Reason(err))
	assert.Contains(t, err.Error(), "connection refused")
}

func TestEachSessionCallbackErrorIsReturnedAsIs(t *testing.T) {
	f := newFixture(t, config.AuthHeaderAuthorization)
	_, err := f.sim.StartSession(appID, convID)
	require.NoError(t, err)
	stop := errors.New("stop here")
	err = f.client(t).EachSession(context.Background(), client.SessionOptions{}, func(client.Session) error { return stop })
	assert.Same(t, stop, err)
}

// An answer that names its data twice is refused: which one holds the
// list is not known.
func TestDataNamedTwiceIsADecodeError(t *testing.T) {
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		_, _ = w.Write([]byte(`{"success":true,"data":[{"uuid":"a"}],"Data":[]}`))
	}))
	t.Cleanup(srv.Close)
	f := newFixture(t, config.AuthHeaderAuthorization)
	f.cfg.API.BaseURL = srv.URL
	_, err := allSessions(f.client(t))
	assert.Equal(t, client.ReasonDecode, client.Reason(err))
}

// Minted tokens are HS256 JWTs with appId, iat and exp, reused until a
// fifth of their lifetime (at most five minutes) is left.
func TestJWTMintingAndRenewal(t *testing.T) {
	f := newFixture(t, config.AuthHeaderAuthorization)
	f.cfg.Apps[0].TokenTTL = model.Duration(30 * time.Minute)
	c := f.client(t)
	call := func() string {
		_, err := c.Concurrency(context.Background())
		require.NoError(t, err)
		return f.lastToken()
	}
	start := f.clock.Now()
	tok1 := call()
	claims := jwt.MapClaims{}
	_, err := jwt.ParseWithClaims(tok1, claims, func(*jwt.Token) (any, error) { return []byte(appKey), nil },
		jwt.WithValidMethods([]string{"HS256"}), jwt.WithTimeFunc(f.clock.Now))
	require.NoError(t, err)
	assert.Equal(t, appID, claims["appId"])
	assert.EqualValues(t, start.Unix(), claims["iat"])
	assert.EqualValues(t, start.Unix()+1800, claims["exp"])

	f.clock.Add(20 * time.Minute) // 10 minutes left: reused
	assert.Equal(t, tok1, call())
	f.clock.Add(270 * time.Second) // 5m30s left: a fifth of the lifetime (6m) would renew, the margin is at most 5m
	assert.Equal(t, tok1, call())
	f.clock.Add(90 * time.Second) // 4 minutes left, inside the margin: renewed
	assert.NotEqual(t, tok1, call())
}

// After the platform refuses a token, the next call carries a newly minted
// one, not the cached one, however long the cached one had left.
func TestARefusedTokenIsNotSentAgain(t *testing.T) {
	f := newFixture(t, config.AuthHeaderToken)
	c := f.client(t)
	_, err := c.Concurrency(context.Background())
	require.NoError(t, err)
	first := f.lastToken()

	f.faults.SetFault(appID, "", platformtest.Fault{Kind: platformtest.FaultUnauthorized401, Times: 1})
	f.clock.Add(time.Second) // a token minted now differs from the first
	_, err = c.Concurrency(context.Background())
	require.Equal(t, client.ReasonAuth, client.Reason(err))
	assert.Equal(t, first, f.lastToken(), "the cached token was sent")
	_, err = c.Concurrency(context.Background())
	require.NoError(t, err)
	assert.NotEqual(t, first, f.lastToken(), "a new token after the refusal")
}

// Within the second the refused token was minted in, a token minted anew
// would carry the same claims, so the same bytes: it is made to differ.
func TestARefusedTokenIsNotSentAgainWithinTheSameSecond(t *testing.T) {
	f := newFixture(t, config.AuthHeaderAuthorization)
	c := f.client(t)
	f.faults.SetFault(appID, "", platformtest.Fault{Kind: platformtest.FaultUnauthorized401, Times: 100})
	seen := map[string]bool{}
	for range 101 { // the clock does not move
		_, _ = c.Concurrency(context.Background())
		assert.False(t, seen[f.lastToken()], "a refused token is sent again")
		seen[f.lastToken()] = true
	}
	_, err := c.Concurrency(context.Background())
	require.NoError(t, err, "the token minted after the refusals is good")
}

// Nor by the pool of a reload in the same second.
func TestARefusedTokenIsNotSentAgainByThePoolOfAReload(t *testing.T) {
	f := newFixture(t, config.AuthHeaderAuthorization)
	old := f.pool(t)
	f.faults.SetFault(appID, "", platformtest.Fault{Kind: platformtest.FaultUnauthorized401, Times: 1})
	_, err := old.Client("a").Concurrency(context.Background())
	require.Equal(t, client.ReasonAuth, client.Reason(err))
	refused := f.lastToken()
	reloaded, err := client.NewPool(f.cfg, client.PoolOptions{Metrics: f.metrics, Now: f.clock.Now, Previous: old})
	require.NoError(t, err)
	t.Cleanup(reloaded.Close)
	_, err = reloaded.Client("a").Concurrency(context.Background())
	require.NoError(t, err)
	assert.NotEqual(t, refused, f.lastToken())
}

// Scrapes go on with the old pool while a reload builds the new one, and a
// fetch in flight keeps the old client to its end: the two pools share the
// app's token source, so a token one minted and the platform refused is
// not minted again by the other, in that second, whichever mints first.
func TestTheOldPoolAndTheReloadedOneNeverMintTheSameRefusedToken(t *testing.T) {
	f := newFixture(t, config.AuthHeaderAuthorization)
	old := f.pool(t)
	reloaded, err := client.NewPool(f.cfg, client.PoolOptions{Metrics: f.metrics, Now: f.clock.Now, Previous: old})
	require.NoError(t, err)
	t.Cleanup(reloaded.Close)

	// A scrape still on the old pool (before the switch, or a fetch in
	// flight after it) mints, and the platform refuses the token.
	refused := f.refuseOnce(t, old.Client("a"))

	_, err = reloaded.Client("a").Concurrency(context.Background()) // the clock has not moved
	require.NoError(t, err)
	assert.NotEqual(t, refused, f.lastToken(), "the new pool sent the token the platform just refused")

	// The other way round.
	f.faults.SetFault(appID, "", platformtest.Fault{Kind: platformtest.FaultUnauthorized401, Times: 2})
	_, err = reloaded.Client("a").Concurrency(context.Background())
	require.Equal(t, client.ReasonAuth, client.Reason(err))
	refusedByNew := f.lastToken()
	_, _ = old.Client("a").Concurrency(context.Background())
	_, _ = old.Client("a").Concurrency(context.Background())
	assert.NotEqual(t, refusedByNew, f.lastToken(), "the old pool sent the token the platform refused from the new one")
}

// Nor by a reload that changes the source of the app's tokens but not its
// app_id (the header style, the key file's path, the key inline, the app's
// name), whichever of the old pool, still finishing a fetch, and the new one
// mints first: both follow one record of the app's last token.
func TestAReloadThatChangesTheCredentialNeverMintsARefusedTokenAgain(t *testing.T) {
	dir := t.TempDir()
	for _, name := range []string{"key", "key2"} {
		require.NoError(t, os.WriteFile(filepath.Join(dir, name), []byte(appKey+"\n"), 0o600))
	}
	app := func(name, credential string) string {
		return fmt.Sprintf("{name: %s, app_id: %q, %s}", name, appID, credential)
	}
	for change, reload := range map[string]struct{ header, app, name string }{
		"header style": {"token", app("a", "app_key_file: key"), "a"},
		"key path":     {"authorization", app("a", "app_key_file: key2"), "a"},
		"key inline":   {"authorization", app("a", fmt.Sprintf("app_key: %q", appKey)), "a"},
		"app renamed":  {"authorization", app("b", "app_key_file: key"), "b"},
	} {
		for _, oldFirst := range []bool{true, false} {
			t.Run(fmt.Sprintf("%s/old first %v", change, oldFirst), func(t *testing.T) {
				f := newFixture(t, config.AuthHeaderAuthorization)
				parse := func(header, app string) *config.Config {
					cfg, err := config.Parse([]byte(fmt.Sprintf("api: {base_url: %q, auth_header: %s}\napps: [%s]\n", f.srv.URL+simulator.BasePath, header, app)), dir)
					require.NoError(t, err)
					return cfg
				}
				old, err := client.NewPool(parse("authorization", app("a", "app_key_file: key")), client.PoolOptions{Now: f.clock.Now})
				require.NoError(t, err)
				t.Cleanup(old.Close)
				refused := f.refuseOnce(t, old.Client("a"))
				reloaded, err := client.NewPool(parse(reload.header, reload.app), client.PoolOptions{Now: f.clock.Now, Previous: old})
				require.NoError(t, err)
				t.Cleanup(reloaded.Close)

				first, second := old.Client("a"), reloaded.Client(reload.name) // the clock does not move
				if !oldFirst {
					first, second = second, first
				}
				again := f.refuseOnce(t, first)
				assert.NotEqual(t, refused, again)
				_, err = second.Concurrency(context.Background())
				require.NoError(t, err)
				assert.NotEqual(t, refused, f.lastToken())
				assert.NotEqual(t, again, f.lastToken())
			})
		}
	}
}

func TestExpiredStaticTokenIsAnAuthError(t *testing.T) {
	f := newFixture(t, config.AuthHeaderAuthorization)
	past := time.Now().Add(-time.Hour)
	tok, err := simulator.MintToken(appID, appKey, past.Add(-30*time.Minute), past)
	require.NoError(t, err)
	f.cfg.Apps[0] = config.App{Name: "a", AppID: appID, Token: promconfig.Secret(tok)}
	_, err = f.client(t).Concurrency(context.Background())
	assert.Equal(t, client.ReasonAuth, client.Reason(err))
	assert.NotContains(t, err.Error(), tok)

	f.cfg.Apps[0] = config.App{Name: "a", AppID: appID, AppKey: "not-the-key"}
	_, err = f.client(t).Concurrency(context.Background())
	assert.Equal(t, client.ReasonAuth, client.Reason(err))
}

// A rotated key or token file is used at the next call, without a
// restart; a file that was never good is an auth error.
func TestKeyAndTokenFilesAreReadAgainWhenTheyChange(t *testing.T) {
	f := newFixture(t, config.AuthHeaderAuthorization)
	dir := t.TempDir()
	keyPath, tokenPath := filepath.Join(dir, "key"), filepath.Join(dir, "token")
	require.NoError(t, os.WriteFile(keyPath, []byte("old-key"), 0o600))
	expired, err := simulator.MintToken(appID, appKey, time.Now().Add(-2*time.Hour), time.Now().Add(-time.Hour))
	require.NoError(t, err)
	require.NoError(t, os.WriteFile(tokenPath, []byte(expired+"\n"), 0o600))
	f.cfg.Apps = []config.App{{Name: "key", AppID: appID, AppKeyFile: keyPath}, {Name: "token", AppID: appID, TokenFile: tokenPath}, {Name: "never", AppID: appID, TokenFile: filepath.Join(dir, "none")}}
	p := f.pool(t)
	for _, name := range []string{"key", "token"} {
		_, err := p.Client(name).Concurrency(context.Background())
		assert.Equal(t, client.ReasonAuth, client.Reason(err), "%s: the old credential is refused", name)
	}
	require.NoError(t, os.WriteFile(keyPath, []byte(appKey+"\n"), 0o600))
	fresh, err := simulator.MintToken(appID, appKey, time.Now(), time.Now().Add(time.Hour))
	require.NoError(t, err)
	require.NoError(t, os.WriteFile(tokenPath, []byte(fresh), 0o600))
	for _, name := range []string{"key", "token"} {
		_, err := p.Client(name).Concurrency(context.Background())
		assert.NoError(t, err, "%s: the new file is used", name)
	}
	_, err = p.Client("never").Concurrency(context.Background())
	assert.Equal(t, client.ReasonAuth, client.Reason(err))
}

// After a refusal the key file is read again even when it looks unchanged
// (rewritten in place within the same second, size and all).
func TestARefusalReadsTheKeyFileAgain(t *testing.T) {
	f := newFixture(t, config.AuthHeaderAuthorization)
	path := filepath.Join(t.TempDir(), "key")
	require.NoError(t, os.WriteFile(path, []byte(appKey), 0o600))
	st, err := os.Stat(path)
	require.NoError(t, err)
	f.cfg.Apps[0] = config.App{Name: "a", AppID: appID, AppKeyFile: path}
	c := f.client(t)
	_, err = c.Concurrency(context.Background())
	require.NoError(t, err)

	rotated := strings.ToUpper(appKey) // as long as the old one
	f.sim.AddApp(simulator.App{ID: appID, Key: rotated, CorpID: "corp-7", Allowance: 10})
	fd, err := os.OpenFile(path, os.O_WRONLY, 0)
	require.NoError(t, err)
	_, err = fd.WriteAt([]byte(rotated), 0)
	require.NoError(t, err)
	require.NoError(t, fd.Close())
	require.NoError(t, os.Chtimes(path, st.ModTime(), st.ModTime()))

	_, err = c.Concurrency(context.Background())
	assert.Equal(t, client.ReasonAuth, client.Reason(err), "the old key is refused")
	_, err = c.Concurrency(context.Background())
	assert.NoError(t, err, "the file was read again after the refusal")
}

// recorder serves the simulator, under /moved when asked to, and keeps the
// headers of the last request.
type recorder struct {
	sim  *simulator.Simulator
	mu   sync.Mutex
	last http.Header
}

func (r *recorder) ServeHTTP(w http.ResponseWriter, req *http.Request) {
	r.mu.Lock()
	r.last = req.Header.Clone()
	r.mu.Unlock()
	req.URL.Path = strings.TrimPrefix(req.URL.Path, "/moved")
	r.sim.ServeHTTP(w, req)
}

func (r *recorder) reset() {
	r.mu.Lock()
	defer r.mu.Unlock()
	r.last = nil
}

func (r *recorder) headers() http.Header {
	r.mu.Lock()
	defer r.mu.Unlock()
	return r.last
}

// redirectTo answers every request with a 302 to the same path and query
// under target.
func redirectTo(target func() string) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, req *http.Request) {
		http.Redirect(w, req, target()+req.URL.RequestURI(), http.StatusFound)
	})
}

// platformWithApp is a simulator with the tests' app.
func platformWithApp() *simulator.Simulator {
	sim := simulator.New()
	sim.AddApp(simulator.App{ID: appID, Key: appKey, Allowance: 3})
	return sim
}

// refuseOnce has the platform refuse c's next call, and returns its token.
func (f *fixture) refuseOnce(t *testing.T, c *client.Client) string {
	t.Helper()
	f.faults.SetFault(appID, "", platformtest.Fault{Kind: platformtest.FaultUnauthorized401, Times: 1})
	_, err := c.Concurrency(context.Background())
	require.Equal(t, client.ReasonAuth, client.Reason(err))
	return f.lastToken()
}

// poolFor builds a client the way the daemon does, from a configuration.
func poolFor(t *testing.T, base, header, credential, extraHTTP string) *client.Client {
	t.Helper()
	cfg, err := config.Parse([]byte(fmt.Sprintf(`
api:
  base_url: %s%s
  auth_header: %s
  http_client:
    follow_redirects: true
%s
apps:
  - {name: a, app_id: %q, %s}
`, base, simulator.BasePath, header, extraHTTP, appID, credential)), "")
	require.NoError(t, err)
	pool, err := client.NewPool(cfg, client.PoolOptions{})
	require.NoError(t, err)
	t.Cleanup(pool.Close)
	return pool.Client("a")
}

func TestTokensNeverFollowARedirectElsewhere(t *testing.T) {
	sim := platformWithApp()
	static, err := simulator.MintToken(appID, appKey, time.Now(), time.Now().Add(time.Hour))
	require.NoError(t, err)
	credentials := map[string]string{
		"minted": fmt.Sprintf("app_key: %q", appKey),
		"static": fmt.Sprintf("token: %q", static),
	}

	other := &recorder{sim: sim}
	plain := httptest.NewServer(other)
	t.Cleanup(plain.Close)
	tlsSrv := httptest.NewTLSServer(other)
	t.Cleanup(tlsSrv.Close)
	targets := map[string]string{
		"port":   plain.URL,                                               // same host, another port
		"host":   strings.Replace(plain.URL, "127.0.0.1", "localhost", 1), // another host name
		"scheme": tlsSrv.URL,                                              // https
	}
	const trustAny = "    tls_config: {insecure_skip_verify: true}"

	for credName, cred := range credentials {
		for _, header := range []string{config.AuthHeaderAuthorization, config.AuthHeaderToken} {
			for targetName, target := range targets {
				t.Run(credName+"/"+header+"/"+targetName, func(t *testing.T) {
					other.reset()
					redirector := httptest.NewServer(redirectTo(func() string { return target }))
					t.Cleanup(redirector.Close)
					c := poolFor(t, redirector.URL, header, cred, trustAny)

					_, err := c.Concurrency(context.Background())
					assert.Equal(t, client.ReasonAuth, client.Reason(err), "the other server got no credential: %v", err)
					got := other.headers()
					require.NotNil(t, got, "the redirect was followed")
					assert.Empty(t, got.Values("Authorization"))
					assert.Empty(t, got.Values("Token"))
				})
			}
		}
	}

	// A redirect on the same origin keeps the credential: the call works.
	for credName, cred := range credentials {
		for _, header := range []string{config.AuthHeaderAuthorization, config.AuthHeaderToken} {
			t.Run("same origin/"+credName+"/"+header, func(t *testing.T) {
				rec := &recorder{sim: sim}
				c := poolFor(t, movedHome(t, rec), header, cred, "")
				got, err := c.Concurrency(context.Background())
				require.NoError(t, err)
				assert.EqualValues(t, 3, got.TotalConcurrentNumber)
				assert.NotNil(t, rec.headers())
			})
		}
	}
}

// A chain that leaves the origin and comes back still carries no
// credential on the way back.
func TestTokensAreNotRestoredWhenARedirectComesBack(t *testing.T) {
	sim := platformWithApp()
	home := &recorder{sim: sim}
	var first, away *httptest.Server
	first = httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, req *http.Request) {
		if strings.HasPrefix(req.URL.Path, "/moved/") {
			home.ServeHTTP(w, req)
			return
		}
		http.Redirect(w, req, away.URL+req.URL.RequestURI(), http.StatusFound)
	}))
	t.Cleanup(first.Close)
	away = httptest.NewServer(redirectTo(func() string { return first.URL + "/moved" }))
	t.Cleanup(away.Close)

	c := poolFor(t, first.URL, config.AuthHeaderToken, fmt.Sprintf("app_key: %q", appKey), "")
	_, err := c.Concurrency(context.Background())
	assert.Equal(t, client.ReasonAuth, client.Reason(err))
	require.NotNil(t, home.headers())
	assert.Empty(t, home.headers().Values("Token"))
}

// With follow_redirects false, the redirect is not followed at all.
func TestRedirectsNotFollowedWhenTurnedOff(t *testing.T) {
	sim := simulator.New()
	sim.AddApp(simulator.App{ID: appID, Key: appKey})
	other := &recorder{sim: sim}
	srv := httptest.NewServer(other)
	t.Cleanup(srv.Close)
	redirector := httptest.NewServer(redirectTo(func() string { return srv.URL }))
	t.Cleanup(redirector.Close)
	cfg, err := config.Parse([]byte(fmt.Sprintf("api: {base_url: %q, http_client: {follow_redirects: false}}\napps: [{name: a, app_id: %q, app_key: %q}]\n",
		redirector.URL+simulator.BasePath, appID, appKey)), "")
	require.NoError(t, err)
	pool, err := client.NewPool(cfg, client.PoolOptions{})
	require.NoError(t, err)
	_, err = pool.Client("a").Concurrency(context.Background())
	var e *client.Error
	require.ErrorAs(t, err, &e)
	assert.Equal(t, http.StatusFound, e.Status)
	assert.Nil(t, other.headers())
}

// The headers of api.http_client.http_headers are sent with every request,
// and on a redirect on the same origin: secrets and files set by the client,
// then the plain values by prometheus/common.
func TestConfiguredHeadersAreSent(t *testing.T) {
	sim := platformWithApp()
	file := filepath.Join(t.TempDir(), "header")
	require.NoError(t, os.WriteFile(file, []byte("FILE-SECRET-0123456789"), 0o600))
	headers := fmt.Sprintf(`    http_headers:
      X-File: {files: [%q]}
      X-Mixed: {values: [public-part], secrets: [MIXED-SECRET-0123456789]}
      X-Public: {values: [public]}`, file)
	home := &recorder{sim: sim}
	c := poolFor(t, movedHome(t, home), config.AuthHeaderToken, fmt.Sprintf("app_key: %q", appKey), headers)
	_, err := c.Concurrency(context.Background())
	require.NoError(t, err)
	got := home.headers()
	require.NotNil(t, got)
	assert.Equal(t, []string{"FILE-SECRET-0123456789"}, got.Values("X-File"))
	assert.Equal(t, []string{"MIXED-SECRET-0123456789", "public-part"}, got.Values("X-Mixed"))
	assert.Equal(t, []string{"public"}, got.Values("X-Public"))
	assert.NotEmpty(t, got.Values("Token"))
}

// Secret http_headers (secrets and files) go to base_url's origin only;
// plain values go everywhere, as prometheus/common sends them.
func TestSecretHTTPHeadersStayOnBaseURLsOrigin(t *testing.T) {
	sim := platformWithApp()
	other := &recorder{sim: sim}
	otherSrv := httptest.NewServer(other)
	t.Cleanup(otherSrv.Close)
	home := &recorder{sim: simulator.New()}
	homeSrv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		home.ServeHTTP(httptest.NewRecorder(), r.Clone(r.Context()))
		http.Redirect(w, r, otherSrv.URL+r.URL.RequestURI(), http.StatusFound)
	}))
	t.Cleanup(homeSrv.Close)

	file := filepath.Join(t.TempDir(), "header")
	require.NoError(t, os.WriteFile(file, []byte("FILE-SECRET-0123456789\n"), 0o600))
	c := poolFor(t, homeSrv.URL, config.AuthHeaderToken, fmt.Sprintf("app_key: %q", appKey), fmt.Sprintf(`    http_headers:
      X-Secret: {secrets: [INLINE-SECRET-0123456789]}
      X-File: {files: [%q]}
      X-Plain: {values: [plain]}`, file))
	_, err := c.Concurrency(context.Background())
	assert.Equal(t, client.ReasonAuth, client.Reason(err), "the other origin had no token")

	sent := home.headers()
	require.NotNil(t, sent)
	assert.Equal(t, []string{"INLINE-SECRET-0123456789"}, sent.Values("X-Secret"))
	assert.Equal(t, []string{"FILE-SECRET-0123456789"}, sent.Values("X-File"), "read and trimmed")
	assert.Equal(t, []string{"plain"}, sent.Values("X-Plain"))
	assert.NotEmpty(t, sent.Values("Token"))

	got := other.headers()
	require.NotNil(t, got)
	assert.Empty(t, got.Values("Token"), "the token stays home")
	assert.Empty(t, got.Values("X-Secret"), "a secret header went to another origin")
	assert.Empty(t, got.Values("X-File"), "a header file's secret went to another origin")
	assert.Equal(t, []string{"plain"}, got.Values("X-Plain"))
}

// A header file, like a key file, is read again at once after the
// platform refused the credentials, within the minute: a gateway's key
// rotated in the file, then at the gateway.
func TestAHeaderFileIsReadAgainAtOnceAfterARefusal(t *testing.T) {
	sim := platformWithApp()
	var mu sync.Mutex
	want := "gw-key-one"
	var got []string
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		mu.Lock()
		ok := r.Header.Get("X-Gw-Key") == want
		got = append(got, r.Header.Get("X-Gw-Key"))
		mu.Unlock()
		if !ok {
			w.WriteHeader(http.StatusUnauthorized)
			return
		}
		sim.ServeHTTP(w, r)
	}))
	t.Cleanup(srv.Close)
	file := filepath.Join(t.TempDir(), "gw")
	require.NoError(t, os.WriteFile(file, []byte("gw-key-one\n"), 0o600))
	cfg, err := config.Parse([]byte(fmt.Sprintf("api:\n  base_url: %s%s\n  http_client:\n    http_headers:\n      X-Gw-Key: {files: [%q]}\napps: [{name: a, app_id: %q, app_key: %q}]\n",
		srv.URL, simulator.BasePath, file, appID, appKey)), "")
	require.NoError(t, err)
	clock := simulator.NewClock(time.Now())
	pool, err := client.NewPool(cfg, client.PoolOptions{Now: clock.Now})
	require.NoError(t, err)
	t.Cleanup(pool.Close)
	c := pool.Client("a")
	_, err = c.Concurrency(context.Background())
	require.NoError(t, err)

	// The gateway's key is rotated: the file, then the gateway.
	require.NoError(t, os.WriteFile(file, []byte("gw-key-two-rotated\n"), 0o600))
	mu.Lock()
	want = "gw-key-two-rotated"
	mu.Unlock()
	_, err = c.Concurrency(context.Background())
	require.Equal(t, client.ReasonAuth, client.Reason(err), "the old header is refused")
	_, err = c.Concurrency(context.Background())
	mu.Lock()
	defer mu.Unlock()
	assert.NoError(t, err, "the header file is read again at once after the refusal; sent: %q", got)
}

// A refusal has the header files read again at once, not the TLS files:
// they hold no credential of the platform's, and are looked at once a
// minute.
func TestATLSFileIsNotReadAgainAtOnceAfterARefusal(t *testing.T) {
	sim := platformWithApp()
	var want atomic.Value
	want.Store("gw-key-one")
	srv := httptest.NewTLSServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.Header.Get("X-Gw-Key") != want.Load() {
			w.WriteHeader(http.StatusUnauthorized)
			return
		}
		sim.ServeHTTP(w, r)
	}))
	t.Cleanup(srv.Close)
	dir := t.TempDir()
	gw, ca := filepath.Join(dir, "gw"), filepath.Join(dir, "ca")
	require.NoError(t, os.WriteFile(gw, []byte("gw-key-one\n"), 0o600))
	require.NoError(t, os.WriteFile(ca, pem.EncodeToMemory(&pem.Block{Type: "CERTIFICATE", Bytes: srv.Certificate().Raw}), 0o600))
	pool, reg, clock, err := poolWith(t, srv.URL, fmt.Sprintf("{http_headers: {X-Gw-Key: {files: [%q]}}, tls_config: {ca_file: %q}}", gw, ca))
	require.NoError(t, err)
	c := pool.Client("a")
	_, err = c.Concurrency(context.Background())
	require.NoError(t, err)

	require.NoError(t, os.WriteFile(ca, nil, 0o600)) // refused when looked at
	require.NoError(t, os.WriteFile(gw, []byte("gw-key-two\n"), 0o600))
	want.Store("gw-key-two")
	_, err = c.Concurrency(context.Background())
	require.Equal(t, client.ReasonAuth, client.Reason(err), "the old header is refused")
	_, err = c.Concurrency(context.Background())
	require.NoError(t, err, "the header file is read again at once")
	tlsRefusals := func() float64 {
		return counterValue(t, reg, "duix_exporter_secret_file_errors_total", map[string]string{"kind": client.SecretTLS})
	}
	assert.Equal(t, 0.0, tlsRefusals(), "the TLS file was read again at once")
	clock.Add(time.Minute)
	_, err = c.Concurrency(context.Background())
	require.NoError(t, err, "the last good CA")
	assert.Equal(t, 1.0, tlsRefusals(), "a minute later, the TLS file is looked at")
}

// Every request says what it accepts and who asks: the pool's User-Agent
// (prometheus/common refuses one in http_headers).
func TestUserAgentAndAcceptAreSent(t *testing.T) {
	sim := platformWithApp()
	home := &recorder{sim: sim}
	cfg, err := config.Parse([]byte(fmt.Sprintf("api: {base_url: %s%s}\napps: [{name: a, app_id: %q, app_key: %q}]\n",
		movedHome(t, home), simulator.BasePath, appID, appKey)), "")
	require.NoError(t, err)
	pool, err := client.NewPool(cfg, client.PoolOptions{UserAgent: "duix_exporter/test"})
	require.NoError(t, err)
	t.Cleanup(pool.Close)
	_, err = pool.Client("a").Concurrency(context.Background())
	require.NoError(t, err)
	assert.Equal(t, []string{"duix_exporter/test"}, home.headers().Values("User-Agent"))
	assert.Equal(t, []string{"application/json"}, home.headers().Values("Accept"))
	assert.Len(t, home.headers().Values("Authorization"), 1)
}

// Redirects on the platform's origin are followed at most ten times, as
// net/http does.
func TestRedirectsStopAfterTen(t *testing.T) {
	var hops atomic.Int32
	var srv *httptest.Server
	srv = httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, req *http.Request) {
		hops.Add(1)
		http.Redirect(w, req, srv.URL+req.URL.RequestURI(), http.StatusFound)
	}))
	t.Cleanup(srv.Close)
	_, err := poolFor(t, srv.URL, config.AuthHeaderAuthorization, fmt.Sprintf("app_key: %q", appKey), "").Concurrency(context.Background())
	require.Error(t, err)
	assert.Equal(t, client.ReasonNetwork, client.Reason(err))
	assert.Equal(t, int32(10), hops.Load())
}

// movedHome is the address of a server that redirects every request to
// the same path under /moved on itself, where rec answers it.
func movedHome(t *testing.T, rec *recorder) string {
	t.Helper()
	var srv *httptest.Server
	srv = httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, req *http.Request) {
		if strings.HasPrefix(req.URL.Path, "/moved/") {
			rec.ServeHTTP(w, req)
			return
		}
		http.Redirect(w, req, srv.URL+"/moved"+req.URL.RequestURI(), http.StatusFound)
	}))
	t.Cleanup(srv.Close)
	return srv.URL
}

// A pool replaced while a call is in flight closes its connection once the
// call has ended: reloads leave no connection open behind them.
func TestCloseClosesTheConnectionsOnceTheLastCallHasEnded(t *testing.T) {
	f := newFixture(t, config.AuthHeaderAuthorization)
	entered, release := make(chan struct{}), make(chan struct{})
	closed := make(chan net.Conn, 10)
	srv := httptest.NewUnstartedServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.URL.Query().Get("conversationId") == "slow" {
			close(entered)
			<-release
		}
		f.sim.ServeHTTP(w, r)
	}))
	srv.Config.ConnState = func(c net.Conn, s http.ConnState) {
		if s == http.StateClosed {
			closed <- c
		}
	}
	srv.Start()
	t.Cleanup(srv.Close)
	f.cfg.API.BaseURL = srv.URL + "/duix-openapi-v2/sdk/v2"
	p := f.pool(t)
	c := p.Client("a")

	done := make(chan error)
	go func() {
		_, err := client.GetConversation[conversation](context.Background(), c, "slow")
		done <- err
	}()
	<-entered
	p.Close()
	select {
	case <-closed:
		t.Fatal("a connection in use was closed")
	default:
	}
	close(release)
	assert.Error(t, <-done, "the call ended (an unknown conversation)")
	select {
	case <-closed:
	case <-time.After(10 * time.Second): // only ever reached when the connection stays open
		t.Fatal("the connection is still open after the last call ended")
	}

	// Calls after Close still work, and leave nothing open either.
	_, err := c.Concurrency(context.Background())
	require.NoError(t, err)
	select {
	case <-closed:
	case <-time.After(10 * time.Second):
		t.Fatal("the connection of a call after Close is still open")
	}
}

// docs/platform-api.md#minted-tokens: tokens are minted "with a lifetime of
// token_ttl". When the clock has gone back (an NTP step) and the platform
// refuses the token, the next one must still live token_ttl, not token_ttl
// plus the step.
func TestAfterTheClockWentBackANewTokenLivesTokenTTL(t *testing.T) {
	f := newFixture(t, config.AuthHeaderAuthorization)
	c := f.client(t)
	_, err := c.Concurrency(context.Background())
	require.NoError(t, err)

	f.clock.Add(-2 * time.Hour)
	f.faults.SetFault(appID, "", platformtest.Fault{Kind: platformtest.FaultUnauthorized401, Times: 1})
	_, err = c.Concurrency(context.Background())
	require.Equal(t, client.ReasonAuth, client.Reason(err))
	_, _ = c.Concurrency(context.Background()) // the simulator's clock did not go back: it may refuse

	claims := jwt.MapClaims{}
	_, _, err = jwt.NewParser().ParseUnverified(f.lastToken(), claims)
	require.NoError(t, err)
	iat, exp := claims["iat"].(float64), claims["exp"].(float64)
	assert.EqualValues(t, f.clock.Now().Unix(), iat)
	assert.InDelta(t, (30 * time.Minute).Seconds(), exp-iat, 1, "lifetime of the token minted after the refusal (exp - iat)")
}

// docs/platform-api.md#base-url: "Every operation is a path appended to one
// base URL". A base path the client rewrites (empty segments collapsed, dot
// segments resolved) calls another address than the one configured.
func TestEndpointsAreAppendedToTheBasePathAsWritten(t *testing.T) {
	var mu sync.Mutex
	var paths []string
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		mu.Lock()
		paths = append(paths, r.URL.EscapedPath())
		mu.Unlock()
		http.NotFound(w, r)
	}))
	t.Cleanup(srv.Close)
	for _, base := range []string{"/gw//sdk/v2", "/gw/sdk/v2/.."} {
		cfg, err := config.Parse([]byte(fmt.Sprintf("api: {base_url: %q}\napps: [{name: a, app_id: '1', app_key: k}]\n", srv.URL+base)), "")
		require.NoError(t, err)
		pool, err := client.NewPool(cfg, client.PoolOptions{})
		require.NoError(t, err)
		_, _ = pool.Client("a").Concurrency(context.Background())
		pool.Close()
		mu.Lock()
		assert.Equal(t, base+"/getconcurrentNumber", paths[len(paths)-1])
		mu.Unlock()
	}
}

// A complete answer whose body does not end (a Content-Length over what
// is sent, a chunked body's last chunk late) is used as soon as its JSON
// is read: nothing waits for the end, which would hold the call's slot
// until api.timeout and make a healthy app miss its scrape. A body cut
// after its envelope is used too; one whose envelope is followed by the
// start of another value is not, whether it ends late or never. Nor is the
// end of an HTTP error's body waited for.
func TestACompleteAnswerIsNotHeldByALateEndOfItsBody(t *testing.T) {
	const body = `{"code":"200","success":true,"data":{"cropId":"c","totalConcurrentNumber":5,"userConcurrentNumber":1}}`
	for _, framing := range []string{"content-length", "chunked"} {
		for name, tc := range map[string]struct {
			tail        string
			cut, refuse bool
			status      int
		}{"late": {tail: " \n"}, "cut": {tail: " ", cut: true}, "a value begun": {tail: ` "JUNK`, refuse: true}, "a value begun, cut": {tail: ` tr`, cut: true, refuse: true},
			"an HTTP error": {tail: " ", status: http.StatusBadGateway}} {
			t.Run(framing+" "+name, func(t *testing.T) {
				release := make(chan struct{})
				srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
					if framing == "content-length" {
						w.Header().Set("Content-Length", strconv.Itoa(len(body)+100))
					}
					w.WriteHeader(cmp.Or(tc.status, http.StatusOK))
					_, _ = io.WriteString(w, body+tc.tail)
					w.(http.Flusher).Flush()
					if tc.cut {
						panic(http.ErrAbortHandler) // the connection is closed, the chunked body's end never sent
					}
					select { // the rest never comes while the test runs
					case <-r.Context().Done():
					case <-release:
					}
				}))
				srv.Config.ErrorLog = log.New(io.Discard, "", 0)
				t.Cleanup(srv.Close)
				t.Cleanup(func() { close(release) }) // before the server closes
				cfg, err := config.Parse([]byte(fmt.Sprintf("api: {base_url: %q, timeout: 1h}\napps: [{name: a, app_id: %q, app_key: %q}]\n", srv.URL+simulator.BasePath, appID, appKey)), "")
				require.NoError(t, err)
				pool, err := client.NewPool(cfg, client.PoolOptions{})
				require.NoError(t, err)
				t.Cleanup(pool.Close)
				var got *client.Concurrency
				returnsWithin(t, func() { got, err = pool.Client("a").Concurrency(context.Background()) })
				switch {
				case tc.status != 0:
					require.Equal(t, client.ReasonHTTP, client.Reason(err), "%v", err)
				case tc.refuse:
					require.Equal(t, client.ReasonDecode, client.Reason(err), "%v", err)
				default:
					require.NoError(t, err)
					assert.Equal(t, int64(5), got.TotalConcurrentNumber)
				}
			})
		}
	}
}

// An HTTP error's body is not read beyond 64 KiB: one of 256 MiB, sent as
// fast as the connection takes it, ends the connection after at most what
// the socket buffers hold (a few MiB), not after 50 ms of reading.
func TestAnHTTPErrorsLongBodyIsNotRead(t *testing.T) {
	const size = 256 << 20
	written := make(chan int64, 1)
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, _ *http.Request) {
		w.Header().Set("Content-Length", strconv.Itoa(size))
		w.WriteHeader(http.StatusBadGateway)
		chunk, n := bytes.Repeat([]byte(" "), 64<<10), int64(0)
		for n < size {
			m, err := w.Write(chunk)
			if n += int64(m); err != nil {
				break
			}
		}
		written <- n
	}))
	t.Cleanup(srv.Close)
	pool, _, _, err := poolWith(t, srv.URL, "{}")
	require.NoError(t, err)
	_, err = pool.Client("a").Concurrency(context.Background())
	require.Equal(t, client.ReasonHTTP, client.Reason(err), "%v", err)
	select {
	case n := <-written:
		assert.Less(t, n, int64(16<<20), "bytes the server could send")
	case <-time.After(time.Minute):
		t.Fatal("the connection was kept open")
	}
}

// Calls speak HTTP/1.1 to a platform that offers HTTP/2 (one answer per
// connection at a time, whose bytes the connection bounds), and succeed.
func TestCallsUseHTTP1WhereHTTP2IsOffered(t *testing.T) {
	var protos sync.Map
	sim := platformWithApp()
	srv := httptest.NewUnstartedServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		protos.Store(r.Proto, true)
		sim.ServeHTTP(w, r)
	}))
	srv.EnableHTTP2 = true
	srv.StartTLS()
	t.Cleanup(srv.Close)
	pool, _, _, err := poolWith(t, srv.URL, "{tls_config: {insecure_skip_verify: true}, enable_http2: true}")
	require.NoError(t, err)
	_, err = pool.Client("a").Concurrency(context.Background())
	require.NoError(t, err)
	got := []string{}
	protos.Range(func(k, _ any) bool { got = append(got, k.(string)); return true })
	assert.Equal(t, []string{"HTTP/1.1"}, got)
}

// A call whose context is cancelled (Ctrl-C in an operator command) says
// so, rather than looking like a network failure with no detail.
func TestACancelledCallSaysSo(t *testing.T) {
	srv := httptest.NewServer(platformWithApp())
	t.Cleanup(srv.Close)
	pool, _, _, err := poolWith(t, srv.URL, "{}")
	require.NoError(t, err)
	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	_, err = pool.Client("a").Concurrency(ctx)
	require.Error(t, err)
	assert.Equal(t, "getconcurrentNumber (app a): network: canceled (interrupted)", err.Error())
}

// A connection to the platform is reused after an answer of any kind: a
// long session list, an HTTP error with a body (which the client does
// not read), so that an outage or a rotated key does not cost a new
// connection, and a TLS handshake, per call.
func TestConnectionsAreReusedAfterErrorsAndLongLists(t *testing.T) {
	sim := simulator.New()
	sim.AddApp(simulator.App{ID: appID, Key: appKey, Allowance: 300})
	for range 300 {
		_, err := sim.StartSession(appID, "")
		require.NoError(t, err)
	}
	list := func(c *client.Client) error {
		return c.EachSession(context.Background(), client.SessionOptions{}, func(client.Session) error { return nil })
	}
	conc := func(c *client.Client) error { _, err := c.Concurrency(context.Background()); return err }
	for name, tc := range map[string]struct {
		h    http.HandlerFunc
		call func(*client.Client) error
	}{
		"a list of 300 sessions": {sim.ServeHTTP, list},
		"HTTP 503 with a JSON body": {func(w http.ResponseWriter, _ *http.Request) {
			w.WriteHeader(http.StatusServiceUnavailable)
			_, _ = io.WriteString(w, `{"code":"503","message":"busy","success":false}`)
		}, conc},
		"HTTP 500 with a page": {func(w http.ResponseWriter, _ *http.Request) {
			w.WriteHeader(http.StatusInternalServerError)
			_, _ = io.WriteString(w, "<html><body><h1>500 Internal Server Error</h1>"+strings.Repeat(" ", 2000)+"</body></html>\n")
		}, conc},
		"HTTP 502 with a page of 20 KB": {func(w http.ResponseWriter, _ *http.Request) {
			w.WriteHeader(http.StatusBadGateway)
			_, _ = io.WriteString(w, "<html><body><h1>502 Bad Gateway</h1>"+strings.Repeat("<p>The upstream is down.</p>\n", 700)+"</body></html>\n")
		}, conc},
		"HTTP 401": {func(w http.ResponseWriter, _ *http.Request) { http.Error(w, "unauthorized", http.StatusUnauthorized) }, conc},
	} {
		t.Run(name, func(t *testing.T) {
			var conns atomic.Int64
			srv := httptest.NewUnstartedServer(tc.h)
			srv.Config.ConnState = func(_ net.Conn, s http.ConnState) {
				if s == http.StateNew {
					conns.Add(1)
				}
			}
			srv.Start()
			t.Cleanup(srv.Close)
			pool, _, _, err := poolWith(t, srv.URL, "{}")
			require.NoError(t, err)
			for range 20 {
				_ = tc.call(pool.Client("a"))
			}
			assert.Equal(t, int64(1), conns.Load(), "20 calls one after the other, one connection")
		})
	}
}
