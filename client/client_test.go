package client_test

import (
	"context"
	"errors"
	"net/http"
	"net/http/httptest"
	"net/url"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/golang-jwt/jwt/v5"
	"github.com/prometheus/client_golang/prometheus"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/duix-exporter/duix_exporter/client"
	"github.com/duix-exporter/duix_exporter/config"
	"github.com/duix-exporter/duix_exporter/simulator"
)

const (
	appID  = "1790000000000000001"
	appKey = "KEY-b7f3e1d9c2a4-recognisable"
	convID = "108"
)

type fixture struct {
	sim     *simulator.Simulator
	srv     *httptest.Server
	t       *client.Transport
	metrics *client.Metrics
	reg     *prometheus.Registry
}

func newFixture(t *testing.T, header string) *fixture {
	t.Helper()
	sim := simulator.New()
	sim.AddApp(simulator.App{ID: appID, Key: appKey, CorpID: "corp-7", Allowance: 10})
	require.NoError(t, sim.AddConversation(appID, simulator.NewConversation(convID, "law desk", 2)))
	srv := httptest.NewServer(sim)
	t.Cleanup(srv.Close)
	base, err := url.Parse(srv.URL + simulator.BasePath)
	require.NoError(t, err)
	reg := prometheus.NewRegistry()
	m := client.NewMetrics(reg)
	return &fixture{
		sim: sim, srv: srv, metrics: m, reg: reg,
		// The timeout only guards against a hang: a test that needs a
		// deadline sets its own, against a fault that never ends.
		t: &client.Transport{HTTP: srv.Client(), BaseURL: base, HeaderStyle: header, Timeout: time.Minute, Metrics: m},
	}
}

func (f *fixture) client() *client.Client {
	return client.New(f.t, appID, client.NewJWTSource(appID, client.StaticKey(appKey), 0, nil))
}

func TestConcurrencyBothHeaderStyles(t *testing.T) {
	for _, header := range []string{config.AuthHeaderAuthorization, config.AuthHeaderToken} {
		t.Run(header, func(t *testing.T) {
			f := newFixture(t, header)
			for range 3 {
				_, err := f.sim.StartSession(appID, convID)
				require.NoError(t, err)
			}
			got, err := f.client().Concurrency(context.Background())
			require.NoError(t, err)
			assert.Equal(t, &client.Concurrency{CropID: "corp-7", TotalConcurrentNumber: 10, UserConcurrentNumber: 3}, got)
			assert.Equal(t, 1.0, counterValue(t, f.reg, "duix_api_requests_total", map[string]string{"endpoint": client.EndpointConcurrency, "code": "200"}))
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
			sessions, err := f.client().Sessions(context.Background())
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
		sessions, err := f.client().Sessions(context.Background())
		require.NoError(t, err)
		assert.Empty(t, sessions)
	})
}

func TestConversationDetails(t *testing.T) {
	f := newFixture(t, config.AuthHeaderAuthorization)
	conv, err := f.client().Conversation(context.Background(), convID)
	require.NoError(t, err)
	assert.Equal(t, convID, conv.ID)
	assert.Equal(t, "law desk", conv.ConversationName)
	assert.Equal(t, 2, conv.MaxConversation)
	assert.Equal(t, "zh", conv.Language)
	assert.Equal(t, "guina", conv.DetailDto.TtsName)
	require.NotEmpty(t, conv.ModelDtoList)
	assert.Equal(t, "chatbot_law", conv.ModelDtoList[0].LargeName)
	require.NotEmpty(t, conv.ScriptDtoList)
	assert.Equal(t, client.ScriptWakeUpWord, conv.ScriptDtoList[0].ScriptType)
	assert.Equal(t, "wake-up word", conv.ScriptDtoList[0].ScriptType.String())
	assert.NotEmpty(t, conv.DetailDto.BackgroundDto.BackgroundName)

	_, err = f.client().Conversation(context.Background(), "nope")
	var apiErr *client.APIError
	require.ErrorAs(t, err, &apiErr)
	assert.Equal(t, "404", apiErr.Code)
	assert.True(t, client.IsNotFound(err))
}

func TestStopSession(t *testing.T) {
	f := newFixture(t, config.AuthHeaderToken)
	c := f.client()
	id, err := f.sim.StartSession(appID, convID)
	require.NoError(t, err)
	_, err = f.sim.StartSession(appID, convID)
	require.NoError(t, err)

	res, err := c.StopSession(context.Background(), id)
	require.NoError(t, err)
	assert.Equal(t, "200", res.Code)
	assert.Equal(t, 1, f.sim.InUse(appID))
	conc, err := c.Concurrency(context.Background())
	require.NoError(t, err)
	assert.EqualValues(t, 1, conc.UserConcurrentNumber)

	_, err = c.StopSession(context.Background(), id)
	assert.True(t, client.IsNotFound(err), "stopping an ended session: %v", err)
	_, err = c.StopSession(context.Background(), "00000000-0000-0000-0000-000000000000")
	assert.True(t, client.IsNotFound(err), "stopping an unknown session: %v", err)
}

func TestStopAllSessions(t *testing.T) {
	f := newFixture(t, config.AuthHeaderToken)
	c := f.client()
	for range 3 {
		_, err := f.sim.StartSession(appID, convID)
		require.NoError(t, err)
	}

	res, err := c.StopAllSessions(context.Background())
	require.NoError(t, err)
	assert.Equal(t, "200", res.Code)
	assert.JSONEq(t, `{"count":3}`, string(res.Data))
	assert.Zero(t, f.sim.InUse(appID))
	assert.EqualValues(t, 1, f.sim.RequestsFor(appID, simulator.EndpointStopAll), "the app's ID is the appId parameter")
	assert.Equal(t, 1.0, counterValue(t, f.reg, "duix_api_requests_total", map[string]string{"endpoint": client.EndpointStopAll, "code": "200"}),
		"instrumented like every call")

	res, err = c.StopAllSessions(context.Background())
	require.NoError(t, err)
	assert.JSONEq(t, `{"count":0}`, string(res.Data), "nothing left is still a success")
}

// TestStopAllSessionsAcceptsAnyData checks that only the envelope decides:
// the platform does not document data, so any value, or none, is a success.
func TestStopAllSessionsAcceptsAnyData(t *testing.T) {
	for _, tc := range []struct {
		fault simulator.FaultKind
		data  string
	}{
		{simulator.FaultNullData, "null"},
		{simulator.FaultWrongTypes, `{"count":"all"}`},
		{simulator.FaultCodeAsNumber, `{"count":0}`},
	} {
		f := newFixture(t, config.AuthHeaderAuthorization)
		f.sim.SetFault(appID, simulator.EndpointStopAll, simulator.Fault{Kind: tc.fault})
		res, err := f.client().StopAllSessions(context.Background())
		require.NoError(t, err, tc.fault)
		assert.Equal(t, "200", res.Code, tc.fault)
		assert.JSONEq(t, tc.data, string(res.Data), tc.fault)
	}
}

func TestStopAllSessionsFailures(t *testing.T) {
	for _, tc := range []struct {
		fault  simulator.Fault
		reason string
	}{
		{simulator.Fault{Kind: simulator.FaultSuccessFalse}, client.ReasonAPI},
		{simulator.Fault{Kind: simulator.FaultHTML502}, client.ReasonHTTP},
		{simulator.Fault{Kind: simulator.FaultTruncatedJSON}, client.ReasonDecode},
		{simulator.Fault{Kind: simulator.FaultOversizedBody, Bytes: 64 << 10}, client.ReasonDecode},
		{simulator.Fault{Kind: simulator.FaultEchoRequest}, client.ReasonHTTP},
		{simulator.Fault{Kind: simulator.FaultEchoRequestJSON}, client.ReasonAPI},
	} {
		f := newFixture(t, config.AuthHeaderAuthorization)
		f.t.MaxResponseBytes = 16 << 10
		_, err := f.sim.StartSession(appID, convID)
		require.NoError(t, err)
		f.sim.SetFault(appID, simulator.EndpointStopAll, tc.fault)
		tokens := client.NewJWTSource(appID, client.StaticKey(appKey), 0, nil)
		tok, err := tokens.Token(context.Background())
		require.NoError(t, err)

		res, err := client.New(f.t, appID, tokens).StopAllSessions(context.Background())
		require.Error(t, err, tc.fault.Kind)
		assert.Nil(t, res)
		assert.Equal(t, tc.reason, client.Reason(err), "%v: %v", tc.fault.Kind, err)
		assert.Contains(t, err.Error(), client.EndpointStopAll)
		assert.NotContains(t, err.Error(), tok, "redacted like every call")
		assert.NotContains(t, err.Error(), appKey)
	}

	// A token of another app is refused: nothing is ended.
	f := newFixture(t, config.AuthHeaderAuthorization)
	_, err := f.sim.StartSession(appID, convID)
	require.NoError(t, err)
	f.sim.AddApp(simulator.App{ID: "other", Key: "other-key-0123456789"})
	other := client.New(f.t, appID, client.NewJWTSource("other", client.StaticKey("other-key-0123456789"), 0, nil))
	_, err = other.StopAllSessions(context.Background())
	assert.Equal(t, client.ReasonAuth, client.Reason(err), "%v", err)
	assert.Equal(t, 1, f.sim.InUse(appID))
}

type clock struct {
	mu sync.Mutex
	t  time.Time
}

func (c *clock) now() time.Time { c.mu.Lock(); defer c.mu.Unlock(); return c.t }
func (c *clock) add(d time.Duration) {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.t = c.t.Add(d)
}

func TestJWTMintingAndRenewal(t *testing.T) {
	clk := &clock{t: time.Unix(1_800_000_000, 0)}
	src := client.NewJWTSource(appID, client.StaticKey(appKey), 30*time.Minute, clk.now)

	tok1, err := src.Token(context.Background())
	require.NoError(t, err)
	claims := jwt.MapClaims{}
	parsed, err := jwt.ParseWithClaims(tok1, claims, func(*jwt.Token) (any, error) { return []byte(appKey), nil },
		jwt.WithValidMethods([]string{"HS256"}), jwt.WithTimeFunc(clk.now))
	require.NoError(t, err)
	assert.True(t, parsed.Valid)
	assert.Equal(t, appID, claims["appId"])
	assert.EqualValues(t, 1_800_000_000, claims["iat"])
	assert.EqualValues(t, 1_800_000_000+1800, claims["exp"])

	clk.add(20 * time.Minute) // still 10 minutes left: reused
	tok2, err := src.Token(context.Background())
	require.NoError(t, err)
	assert.Equal(t, tok1, tok2)

	clk.add(6 * time.Minute) // 4 minutes left, inside the 5-minute margin: renewed
	tok3, err := src.Token(context.Background())
	require.NoError(t, err)
	assert.NotEqual(t, tok1, tok3)
	_, err = jwt.ParseWithClaims(tok3, jwt.MapClaims{}, func(*jwt.Token) (any, error) { return []byte(appKey), nil },
		jwt.WithTimeFunc(func() time.Time { return clk.now().Add(25 * time.Minute) }))
	assert.NoError(t, err, "a renewed token is valid for a full TTL")
}

func TestJWTSourceConcurrentUse(t *testing.T) {
	clk := &clock{t: time.Unix(1_800_000_000, 0)} // no renewal however long the goroutines take
	src := client.NewJWTSource(appID, client.StaticKey(appKey), time.Minute, clk.now)
	var wg sync.WaitGroup
	tokens := make([]string, 32)
	for i := range tokens {
		wg.Add(1)
		go func() {
			defer wg.Done()
			tokens[i], _ = src.Token(context.Background())
		}()
	}
	wg.Wait()
	for _, tok := range tokens {
		assert.Equal(t, tokens[0], tok)
	}
}

func TestExpiredStaticTokenIsAnAuthError(t *testing.T) {
	f := newFixture(t, config.AuthHeaderAuthorization)
	past := time.Now().Add(-time.Hour)
	tok, err := simulator.MintToken(appID, appKey, past.Add(-30*time.Minute), past)
	require.NoError(t, err)
	_, err = client.New(f.t, appID, client.StaticToken(tok)).Concurrency(context.Background())
	require.Error(t, err)
	assert.Equal(t, client.ReasonAuth, client.Reason(err))
	assert.NotContains(t, err.Error(), tok)

	wrong := client.New(f.t, appID, client.NewJWTSource(appID, client.StaticKey("not-the-key"), 0, nil))
	_, err = wrong.Concurrency(context.Background())
	assert.Equal(t, client.ReasonAuth, client.Reason(err))
}

func TestTokenFileIsReReadWhenItChanges(t *testing.T) {
	defer client.SetSecretFileRecheck(0)() // look at every call
	f := newFixture(t, config.AuthHeaderAuthorization)
	path := filepath.Join(t.TempDir(), "token")
	expired, err := simulator.MintToken(appID, appKey, time.Now().Add(-2*time.Hour), time.Now().Add(-time.Hour))
	require.NoError(t, err)
	require.NoError(t, os.WriteFile(path, []byte(expired+"\n"), 0o600))
	c := client.New(f.t, appID, client.NewFileToken(path, nil))
	_, err = c.Concurrency(context.Background())
	assert.Equal(t, client.ReasonAuth, client.Reason(err))

	fresh, err := simulator.MintToken(appID, appKey, time.Now(), time.Now().Add(time.Hour))
	require.NoError(t, err)
	require.NoError(t, os.WriteFile(path, []byte(fresh), 0o600))
	_, err = c.Concurrency(context.Background())
	assert.NoError(t, err)

	// Gone: the last good token stays in use.
	require.NoError(t, os.Remove(path))
	_, err = c.Concurrency(context.Background())
	assert.NoError(t, err)

	// A file that was never good is an auth error.
	_, err = client.New(f.t, appID, client.NewFileToken(path, nil)).Concurrency(context.Background())
	var authErr *client.AuthError
	assert.ErrorAs(t, err, &authErr)
}

func TestAppKeyFileRotation(t *testing.T) {
	defer client.SetSecretFileRecheck(0)() // look at every call
	f := newFixture(t, config.AuthHeaderAuthorization)
	path := filepath.Join(t.TempDir(), "key")
	require.NoError(t, os.WriteFile(path, []byte("old-key"), 0o600))
	c := client.New(f.t, appID, client.NewJWTSource(appID, client.NewFileKey(path, nil), 0, nil))
	_, err := c.Concurrency(context.Background())
	assert.Equal(t, client.ReasonAuth, client.Reason(err), "old key is refused")
	require.NoError(t, os.WriteFile(path, []byte(appKey+"\n"), 0o600))
	_, err = c.Concurrency(context.Background())
	assert.NoError(t, err, "the rotated key is used without a restart")
}

// Between two looks, a changed file is not read: the secret of the last
// look stays in use.
func TestSecretFileIsLookedAtOncePerRecheck(t *testing.T) {
	defer client.SetSecretFileRecheck(time.Hour)()
	f := newFixture(t, config.AuthHeaderAuthorization)
	path := filepath.Join(t.TempDir(), "key")
	require.NoError(t, os.WriteFile(path, []byte(appKey), 0o600))
	c := client.New(f.t, appID, client.NewJWTSource(appID, client.NewFileKey(path, nil), 0, nil))
	_, err := c.Concurrency(context.Background())
	require.NoError(t, err)
	require.NoError(t, os.WriteFile(path, []byte("a-key-written-later"), 0o600))
	_, err = c.Concurrency(context.Background())
	assert.NoError(t, err, "the key of the last look is still used")
}

// A key or token that the platform refuses has its file read again before
// the next call, however long until the next look.
func TestRefusedCredentialsHaveTheirFileReadAgain(t *testing.T) {
	defer client.SetSecretFileRecheck(time.Hour)()
	f := newFixture(t, config.AuthHeaderAuthorization)
	dir := t.TempDir()
	keyPath, tokenPath := filepath.Join(dir, "key"), filepath.Join(dir, "token")
	require.NoError(t, os.WriteFile(keyPath, []byte(appKey), 0o600))
	tok, err := simulator.MintToken(appID, appKey, time.Now(), time.Now().Add(time.Hour))
	require.NoError(t, err)
	require.NoError(t, os.WriteFile(tokenPath, []byte(tok), 0o600))
	withKey := client.New(f.t, appID, client.NewJWTSource(appID, client.NewFileKey(keyPath, nil), 0, nil))
	withToken := client.New(f.t, appID, client.NewFileToken(tokenPath, nil))
	for _, c := range []*client.Client{withKey, withToken} {
		_, err := c.Concurrency(context.Background())
		require.NoError(t, err)
	}

	// The key is rotated on the platform and in the files.
	const rotated = "rotated-key-0d9c"
	f.sim.AddApp(simulator.App{ID: appID, Key: rotated, CorpID: "corp-7", Allowance: 10})
	require.NoError(t, os.WriteFile(keyPath, []byte(rotated), 0o600))
	tok, err = simulator.MintToken(appID, rotated, time.Now(), time.Now().Add(time.Hour))
	require.NoError(t, err)
	require.NoError(t, os.WriteFile(tokenPath, []byte(tok), 0o600))
	for name, c := range map[string]*client.Client{"key file": withKey, "token file": withToken} {
		_, err := c.Concurrency(context.Background())
		assert.Equal(t, client.ReasonAuth, client.Reason(err), "%s: the old credentials are refused", name)
		_, err = c.Concurrency(context.Background())
		assert.NoError(t, err, "%s: the file is read again after the refusal", name)
	}
}

func TestFaultsMapToErrorTypes(t *testing.T) {
	cases := []struct {
		name   string
		fault  simulator.Fault
		reason string
		check  func(t *testing.T, err error)
	}{
		{"500", simulator.Fault{Kind: simulator.FaultHTTP500}, client.ReasonHTTP, func(t *testing.T, err error) {
			var e *client.HTTPError
			require.ErrorAs(t, err, &e)
			assert.Equal(t, 500, e.StatusCode)
		}},
		{"502 html", simulator.Fault{Kind: simulator.FaultHTML502}, client.ReasonHTTP, func(t *testing.T, err error) {
			var e *client.HTTPError
			require.ErrorAs(t, err, &e)
			assert.Equal(t, 502, e.StatusCode)
			assert.LessOrEqual(t, len(e.Snippet), 256)
			assert.NotContains(t, e.Snippet, "\n")
		}},
		{"429", simulator.Fault{Kind: simulator.FaultRateLimit429, RetryAfter: 30 * time.Second}, client.ReasonRateLimited, func(t *testing.T, err error) {
			var e *client.HTTPError
			require.ErrorAs(t, err, &e)
			assert.Equal(t, 30*time.Second, e.RetryAfter)
		}},
		{"401", simulator.Fault{Kind: simulator.FaultUnauthorized401}, client.ReasonAuth, nil},
		{"403", simulator.Fault{Kind: simulator.FaultForbidden403}, client.ReasonAuth, nil},
		{"truncated", simulator.Fault{Kind: simulator.FaultTruncatedJSON}, client.ReasonDecode, func(t *testing.T, err error) {
			var e *client.DecodeError
			require.ErrorAs(t, err, &e)
		}},
		{"success false", simulator.Fault{Kind: simulator.FaultSuccessFalse}, client.ReasonAPI, func(t *testing.T, err error) {
			var e *client.APIError
			require.ErrorAs(t, err, &e)
			assert.Equal(t, "500", e.Code)
			assert.Equal(t, "internal error", e.Message)
		}},
		{"null data", simulator.Fault{Kind: simulator.FaultNullData}, client.ReasonDecode, nil},
		{"wrong types", simulator.Fault{Kind: simulator.FaultWrongTypes}, client.ReasonDecode, nil},
		{"oversized", simulator.Fault{Kind: simulator.FaultOversizedBody, Bytes: 64 << 10}, client.ReasonDecode, func(t *testing.T, err error) {
			assert.ErrorIs(t, err, client.ErrBodyTooLarge)
		}},
		// The body's first chunk comes after an hour: the deadline set
		// below always ends the call first.
		{"slow body", simulator.Fault{Kind: simulator.FaultSlowBody, Delay: time.Hour}, client.ReasonTimeout, func(t *testing.T, err error) {
			var e *client.TimeoutError
			require.ErrorAs(t, err, &e)
			assert.Contains(t, err.Error(), "timeout")
		}},
		{"reset", simulator.Fault{Kind: simulator.FaultResetConnection}, client.ReasonNetwork, func(t *testing.T, err error) {
			var e *client.NetworkError
			require.ErrorAs(t, err, &e)
		}},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			f := newFixture(t, config.AuthHeaderAuthorization)
			if tc.fault.Kind == simulator.FaultSlowBody {
				f.t.Timeout = 100 * time.Millisecond
			}
			f.t.MaxResponseBytes = 16 << 10
			f.sim.SetFault(appID, client.EndpointConcurrency, tc.fault)
			tokens := client.NewJWTSource(appID, client.StaticKey(appKey), 0, nil)
			tok, err := tokens.Token(context.Background())
			require.NoError(t, err)
			_, err = client.New(f.t, appID, tokens).Concurrency(context.Background())
			require.Error(t, err)
			assert.Equal(t, tc.reason, client.Reason(err), "error: %v", err)
			assert.NotContains(t, err.Error(), tok)
			assert.NotContains(t, err.Error(), appKey)
			if tc.check != nil {
				tc.check(t, err)
			}
		})
	}
}

func TestCodeAsNumberIsAccepted(t *testing.T) {
	f := newFixture(t, config.AuthHeaderAuthorization)
	f.sim.SetFault(appID, "", simulator.Fault{Kind: simulator.FaultCodeAsNumber})
	c := f.client()
	_, err := c.Concurrency(context.Background())
	assert.NoError(t, err)
	_, err = c.Sessions(context.Background())
	assert.NoError(t, err)
	_, err = c.Conversation(context.Background(), convID)
	assert.NoError(t, err)
}

func TestNullSessionDataIsEmptyButNullConcurrencyIsAnError(t *testing.T) {
	f := newFixture(t, config.AuthHeaderAuthorization)
	f.sim.SetFault(appID, "", simulator.Fault{Kind: simulator.FaultNullData})
	c := f.client()
	s, err := c.Sessions(context.Background())
	assert.NoError(t, err)
	assert.Empty(t, s)
	_, err = c.Concurrency(context.Background())
	assert.Equal(t, client.ReasonDecode, client.Reason(err))
}

func TestRetryAfterIsHonoured(t *testing.T) {
	f := newFixture(t, config.AuthHeaderAuthorization)
	f.sim.SetFault(appID, client.EndpointConcurrency, simulator.Fault{Kind: simulator.FaultRateLimit429, RetryAfter: time.Hour, Times: 1})
	c := f.client()
	_, err := c.Concurrency(context.Background())
	require.Equal(t, client.ReasonRateLimited, client.Reason(err))
	assert.False(t, c.RetryAfter().IsZero())
	_, err = c.Sessions(context.Background())
	var rl *client.RateLimitedError
	require.ErrorAs(t, err, &rl)
	assert.Equal(t, int64(1), f.sim.Requests(client.EndpointConcurrency))
	assert.Equal(t, int64(0), f.sim.Requests(client.EndpointSessions), "no call is made while Retry-After applies")
}

func TestTimeoutFromLatency(t *testing.T) {
	f := newFixture(t, config.AuthHeaderAuthorization)
	f.t.Timeout = 100 * time.Millisecond
	f.sim.SetLatency(appID, "", time.Hour) // returning at all shows the deadline ended the wait
	_, err := f.client().Concurrency(context.Background())
	var te *client.TimeoutError
	require.ErrorAs(t, err, &te)
	assert.Equal(t, client.ReasonTimeout, client.Reason(err))
	assert.Equal(t, 1.0, counterValue(t, f.reg, "duix_api_requests_total", map[string]string{"endpoint": client.EndpointConcurrency, "code": "error"}))
}

func TestConnectionRefusedIsANetworkError(t *testing.T) {
	f := newFixture(t, config.AuthHeaderAuthorization)
	f.srv.Close()
	_, err := f.client().Concurrency(context.Background())
	assert.Equal(t, client.ReasonNetwork, client.Reason(err))
	assert.NotContains(t, err.Error(), appKey)
}

func TestEachSessionCallbackErrorIsReturnedAsIs(t *testing.T) {
	f := newFixture(t, config.AuthHeaderAuthorization)
	_, err := f.sim.StartSession(appID, convID)
	require.NoError(t, err)
	stop := errors.New("stop here")
	err = f.client().EachSession(context.Background(), client.SessionOptions{}, func(client.Session) error { return stop })
	assert.Same(t, stop, err)
}

// An answer that names its data twice is read as encoding/json reads it:
// the last member wins, whole. Nothing of the records of an earlier member
// may stay in those of the last, whichever way the list is decoded.
func TestSessionListNamedTwiceKeepsOnlyTheLast(t *testing.T) {
	f := newFixture(t, config.AuthHeaderAuthorization)
	f.sim.SetSessionConversationIDs(false)
	id, err := f.sim.StartSession(appID, convID)
	require.NoError(t, err)
	// The simulator's answer, with an earlier data member put in front.
	stale := []byte(`{"data":[{"uuid":"stale","conversationId":"stale-conversation","startTime":1}],`)
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		rec := httptest.NewRecorder()
		f.sim.ServeHTTP(rec, r)
		body := rec.Body.Bytes()
		if strings.HasSuffix(r.URL.Path, "/"+client.EndpointSessions) {
			body = append(slices.Clone(stale), body[1:]...)
		}
		w.Header().Set("Content-Type", rec.Header().Get("Content-Type"))
		w.WriteHeader(rec.Code)
		_, _ = w.Write(body)
	}))
	t.Cleanup(srv.Close)
	base, err := url.Parse(srv.URL + simulator.BasePath)
	require.NoError(t, err)
	tr := client.Transport{HTTP: f.t.HTTP, BaseURL: base, HeaderStyle: f.t.HeaderStyle, Timeout: f.t.Timeout, Metrics: f.t.Metrics}
	c := client.New(&tr, appID, client.NewJWTSource(appID, client.StaticKey(appKey), 0, nil))

	streamed, err := c.Sessions(context.Background()) // KeepRaw: streamed
	require.NoError(t, err)
	require.Len(t, streamed, 1)
	assert.Equal(t, id, streamed[0].ID)
	assert.Empty(t, streamed[0].ConversationID, "the last list's record names no conversation")

	var counted []client.Session // as the collector counts: one pass
	require.NoError(t, c.EachSession(context.Background(), client.SessionOptions{}, func(s client.Session) error {
		counted = append(counted, s)
		return nil
	}))
	require.Len(t, counted, 1)
	streamed[0].Raw = nil
	assert.Equal(t, streamed[0], counted[0], "the same session, whichever way the list is decoded")
}
