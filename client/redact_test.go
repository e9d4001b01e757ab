package client_test

import (
	"context"
	"encoding/base64"
	"encoding/json"
	"fmt"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/duix-exporter/duix_exporter/client"
	"github.com/duix-exporter/duix_exporter/config"
	"github.com/duix-exporter/duix_exporter/simulator"
)

// assertNoPrefix fails when text holds any prefix of secret 8 bytes long or
// longer.
func assertNoPrefix(t *testing.T, text, secret, what string) {
	t.Helper()
	for n := len(secret); n >= 8; n-- {
		if strings.Contains(text, secret[:n]) {
			t.Errorf("%s: the first %d bytes of the secret appear in %q", what, n, text)
			return
		}
	}
}

// echoOffset is where the echoed credential value starts in the text the
// simulator's echo faults produce: the body for FaultEchoRequest, the raw
// body for FaultEchoRequestJSON (escaped), or its decoded message.
func echoOffset(t *testing.T, kind simulator.FaultKind, status int, header string, raw bool) int {
	t.Helper()
	plain := "GET " + simulator.BasePath + "/" + simulator.EndpointConcurrency + "?appId=" + appID + " HTTP/1.1\r\n"
	if header == config.AuthHeaderToken {
		plain += "Token: "
	} else {
		plain += "Authorization: Bearer "
	}
	if kind == simulator.FaultEchoRequest || !raw {
		return len(plain)
	}
	msg, err := json.Marshal(plain)
	require.NoError(t, err)
	escaped := strings.ReplaceAll(string(msg[:len(msg)-1]), "/", `\/`) // without the closing quote
	return len(fmt.Sprintf(`{"code":"%d","message":`, status)) + len(escaped)
}

// TestSecretsStraddlingTheCutAreRedacted makes the upstream echo the
// request with the credential placed across byte 256, where error texts
// are cut, and with "/" escaped as "\/", through every path by which an
// upstream text reaches an error: an HTTP error body (text and JSON) and
// the message of success=false.
func TestSecretsStraddlingTheCutAreRedacted(t *testing.T) {
	static := "static/TOKEN/with/slashes/0123456789abcdefghijklmnopqrstuvwxyz"
	sources := map[string]func() (client.TokenSource, string){
		"minted": func() (client.TokenSource, string) {
			src := client.NewJWTSource(appID, client.StaticKey(appKey), 0, nil)
			tok, err := src.Token(context.Background())
			require.NoError(t, err)
			return src, tok
		},
		"static": func() (client.TokenSource, string) { return client.StaticToken(static), static },
	}
	faults := []struct {
		name   string
		kind   simulator.FaultKind
		status int
		raw    bool // the text shown is the raw body, not a decoded message
	}{
		{"text body", simulator.FaultEchoRequest, http.StatusBadGateway, true},
		{"json body", simulator.FaultEchoRequestJSON, http.StatusInternalServerError, true},
		{"success false", simulator.FaultEchoRequestJSON, http.StatusOK, false},
	}
	for srcName, source := range sources {
		for _, header := range []string{config.AuthHeaderAuthorization, config.AuthHeaderToken} {
			for _, fc := range faults {
				t.Run(srcName+"/"+header+"/"+fc.name, func(t *testing.T) {
					f := newFixture(t, header)
					ts, tok := source()
					form := tok
					if fc.raw && fc.kind == simulator.FaultEchoRequestJSON {
						form = strings.ReplaceAll(tok, "/", `\/`)
					}
					pad := 256 - echoOffset(t, fc.kind, fc.status, header, fc.raw) - len(form)/2
					require.Positive(t, pad)
					f.sim.SetFault(appID, client.EndpointConcurrency, simulator.Fault{Kind: fc.kind, Status: fc.status, Bytes: int64(pad)})

					_, err := client.New(f.t, appID, ts).Concurrency(context.Background())
					require.Error(t, err)
					msg := err.Error()
					assertNoPrefix(t, msg, tok, "token")
					assertNoPrefix(t, msg, form, "escaped token")
					assertNoPrefix(t, msg, appKey, "app key")
					assert.Contains(t, msg, "....", "the padding before the secret is shown")
				})
			}
		}
	}
}

// TestProxyCredentialsAreRedacted sends the requests through a proxy that
// echoes them, with credentials in proxy_url: neither the password nor the
// Basic credential made of it may appear.
func TestProxyCredentialsAreRedacted(t *testing.T) {
	const (
		user     = "proxy-user-0123456789"
		password = "PROXY-PASSWORD-0123456789"
	)
	sim := simulator.New()
	sim.AddApp(simulator.App{ID: appID, Key: appKey})
	proxy := httptest.NewServer(sim) // answers the proxied requests itself
	t.Cleanup(proxy.Close)
	sim.SetFault(appID, "", simulator.Fault{Kind: simulator.FaultEchoRequest})

	proxyURL := strings.Replace(proxy.URL, "http://", "http://"+user+":"+password+"@", 1)
	cfg, err := config.Parse([]byte(fmt.Sprintf(`
api:
  base_url: http://platform.invalid%s
  http_client:
    proxy_url: %s
apps:
  - {name: a, app_id: %q, app_key: %q}
`, simulator.BasePath, proxyURL, appID, appKey)), "")
	require.NoError(t, err)
	pool, err := client.NewPool(cfg, client.PoolOptions{})
	require.NoError(t, err)
	t.Cleanup(pool.Close)

	_, err = pool.Client("a").Concurrency(context.Background())
	require.Error(t, err)
	msg := err.Error()
	assert.Contains(t, msg, "Proxy-Authorization: ", "the proxy echoed the request")
	assertNoPrefix(t, msg, password, "proxy password")
	assertNoPrefix(t, msg, base64.StdEncoding.EncodeToString([]byte(user+":"+password)), "Basic credential")
	assertNoPrefix(t, msg, user, "proxy user")
	assertNoPrefix(t, msg, appKey, "app key")
}

// TestSecretHeaderValuesAreRedacted has an upstream answer every request
// with an error that shows the secret http_headers values it received,
// inline and read from a file, each whole and without its scheme: none may
// appear in the error, including a file's new content from the first call
// after it changed.
func TestSecretHeaderValuesAreRedacted(t *testing.T) {
	const (
		inline  = "SECRETHDR-inline-0123456789"
		inFile  = "SECRETHDR-file-9876543210"
		rotated = "SECRETHDR-rotated-5555555555"
	)
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		_, scheme := strings.CutPrefix(r.Header.Get("X-Api-Key"), "Key ")
		require.True(t, scheme, "the inline value has its scheme")
		w.WriteHeader(http.StatusUnauthorized)
		_, _ = fmt.Fprintf(w, "unknown key %s; file %s; was %s",
			strings.TrimPrefix(r.Header.Get("X-Api-Key"), "Key "), r.Header.Get("X-File-Key"), r.Header.Get("X-Api-Key"))
	}))
	t.Cleanup(srv.Close)
	file := filepath.Join(t.TempDir(), "header.secret")
	require.NoError(t, os.WriteFile(file, []byte(inFile+"\n"), 0o600))
	cfg, err := config.Parse([]byte(fmt.Sprintf(`
api:
  base_url: %s%s
  http_client:
    http_headers:
      X-Api-Key: {secrets: ["Key %s"]}
      X-File-Key: {files: [%q]}
apps:
  - {name: a, app_id: %q, app_key: %q}
`, srv.URL, simulator.BasePath, inline, file, appID, appKey)), "")
	require.NoError(t, err)
	pool, err := client.NewPool(cfg, client.PoolOptions{})
	require.NoError(t, err)
	t.Cleanup(pool.Close)

	call := func() string {
		_, err := pool.Client("a").Concurrency(context.Background())
		require.Error(t, err)
		return err.Error()
	}
	msg := call()
	assert.Contains(t, msg, "unknown key <redacted>; file <redacted>; was <redacted>", "the upstream showed the values")
	assertNoPrefix(t, msg, inline, "inline header value")
	assertNoPrefix(t, msg, inFile, "header value from a file")

	// prometheus/common reads the file at every request.
	require.NoError(t, os.WriteFile(file, []byte(rotated), 0o600))
	msg = call()
	assert.Contains(t, msg, "file <redacted>;", "the upstream showed the new value")
	assertNoPrefix(t, msg, rotated, "the file's new content")
	assertNoPrefix(t, msg, inFile, "the file's old content")
}

// headerEcho is a pool whose upstream answers 401 showing the X-File-Key
// and X-Api-Key values it received, the latter with its white space folded
// into spaces, once during (may be nil) has run while the request waits.
func headerEcho(t *testing.T, headers string, during func()) *client.Pool {
	t.Helper()
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if during != nil {
			during()
		}
		w.WriteHeader(http.StatusUnauthorized)
		api := strings.Join(strings.Fields(r.Header.Get("X-Api-Key")), " ")
		_, _ = fmt.Fprintf(w, "unknown file key %s; api key %s", r.Header.Get("X-File-Key"), api)
	}))
	t.Cleanup(srv.Close)
	return headerPool(t, srv.URL, headers)
}

func callError(t *testing.T, pool *client.Pool) string {
	t.Helper()
	_, err := pool.Client("a").Concurrency(context.Background())
	require.Error(t, err)
	return err.Error()
}

// A header file changed while a request waits for its answer, or
// rewritten with the same size and time, or its value written with white
// space or a tab after a scheme: what the request sent is what its answer
// is redacted of.
func TestHeaderValuesAreRedactedAsTheRequestSentThem(t *testing.T) {
	const (
		first  = "SECRETHDR-first-0123456789abcdef"
		second = "SECRETHDR-second-fedcba98765432"
	)
	file := filepath.Join(t.TempDir(), "header.secret")
	require.NoError(t, os.WriteFile(file, []byte(first), 0o600))
	var rotate atomic.Bool
	pool := headerEcho(t, fmt.Sprintf("      X-File-Key: {files: [%q]}", file), func() {
		if rotate.Load() {
			require.NoError(t, os.WriteFile(file+".new", []byte(second), 0o600))
			require.NoError(t, os.Rename(file+".new", file))
		}
	})
	msg := callError(t, pool)
	assert.Contains(t, msg, "unknown file key <redacted>;", "the upstream showed the value")
	rotate.Store(true)
	msg = callError(t, pool) // sends first; second is in the file when the answer comes
	assert.Contains(t, msg, "unknown file key <redacted>;")
	assertNoPrefix(t, msg, first, "the value the request sent, changed meanwhile")

	// The same size and time: only the content tells.
	rotate.Store(false)
	stamp := time.Date(2026, 1, 2, 3, 4, 5, 0, time.UTC)
	for _, v := range []string{first, second} {
		require.NoError(t, os.WriteFile(file, []byte(v), 0o600))
		require.NoError(t, os.Chtimes(file, stamp, stamp))
		msg = callError(t, pool)
		assert.Contains(t, msg, "unknown file key <redacted>;")
		assertNoPrefix(t, msg, v, "a file rewritten with the same size and time")
	}

	for name, value := range map[string]string{
		"white space around":   " SECRETHDR-spaced-0123456789abcd\t",
		"a tab after a scheme": "Key\tSECRETHDR-tabbed-0123456789ab",
		// Shown with its white space folded: none of its words is left.
		"several words": "Key\tSECRETHDR-word-0123456789\t\tSECRETHDR-other-abcdef  SECRETHDR-last-987654",
	} {
		pool := headerEcho(t, fmt.Sprintf("      X-Api-Key: {secrets: [%q]}", value), nil)
		msg := callError(t, pool)
		assert.Contains(t, msg, "<redacted>", name)
		for _, word := range strings.Fields(strings.TrimPrefix(strings.TrimSpace(value), "Key\t")) {
			assertNoPrefix(t, msg, word, name)
		}
	}
}

// A header file that cannot be read as a key file can (larger than 64 KiB,
// empty, gone) fails the call before anything is sent, naming the header,
// never its content.
func TestHeaderFilesThatCannotBeReadFailTheCall(t *testing.T) {
	const secret = "SECRETHDR-big-0123456789abcdef"
	dir := t.TempDir()
	var calls atomic.Int64
	pool := headerEcho(t, fmt.Sprintf("      X-File-Key: {files: [%q]}", filepath.Join(dir, "header.secret")), func() { calls.Add(1) })
	for name, content := range map[string]string{
		"larger than 64 KiB": secret + strings.Repeat("A", 70<<10),
		"empty":              " \n",
		"gone":               "",
	} {
		path := filepath.Join(dir, "header.secret")
		_ = os.Remove(path)
		if name != "gone" {
			require.NoError(t, os.WriteFile(path, []byte(content), 0o600))
		}
		_, err := pool.Client("a").Concurrency(context.Background())
		require.Error(t, err, name)
		assert.Equal(t, client.ReasonAuth, client.Reason(err), name)
		assert.Contains(t, err.Error(), "header X-File-Key", name)
		assertNoPrefix(t, err.Error(), secret, name)
	}
	assert.Zero(t, calls.Load(), "nothing was sent")
}

// A secret only a few bytes long (a header value such as "10", a proxy
// user such as "user") is also a piece of an answer's syntax: replaced in
// the body, it would make the answer undecodable or a count silently
// zero. Answers decode as they came, and the strings decoded from them
// are redacted of it all the same.
func TestShortSecretsDoNotBreakAnswers(t *testing.T) {
	sim := simulator.New()
	sim.AddApp(simulator.App{ID: appID, Key: appKey, CorpID: "corp user 10", Allowance: 10})
	require.NoError(t, sim.AddConversation(appID, simulator.Conversation{ID: "c1", ConversationName: "user line 10", MaxConversation: 10}))
	for range 3 {
		_, err := sim.StartSession(appID, "c1")
		require.NoError(t, err)
	}
	srv := httptest.NewServer(sim)
	t.Cleanup(srv.Close)
	c := headerPool(t, srv.URL, "      X-Shard: {secrets: [\"10\"]}\n      X-User: {secrets: [user]}").Client("a")

	conc, err := c.Concurrency(context.Background())
	require.NoError(t, err)
	assert.Equal(t, int64(10), conc.TotalConcurrentNumber)
	assert.Equal(t, int64(3), conc.UserConcurrentNumber, "userConcurrentNumber is read under its name")
	assert.Equal(t, "corp <redacted> <redacted>", conc.CropID)
	conv, err := c.Conversation(context.Background(), "c1")
	require.NoError(t, err)
	assert.Equal(t, 10, conv.MaxConversation)
	assert.Equal(t, "<redacted> line <redacted>", conv.ConversationName)
	sessions, err := c.Sessions(context.Background())
	require.NoError(t, err)
	assert.Len(t, sessions, 3)
}

// A session's start is a number: a short secret that is a piece of it
// (the "10" of 1764010101000) leaves it as it came, on both of the session
// list's paths.
func TestShortSecretsLeaveSessionStartsAlone(t *testing.T) {
	sim := simulator.New()
	sim.AddApp(simulator.App{ID: appID, Key: appKey, Allowance: 10})
	require.NoError(t, sim.AddConversation(appID, simulator.Conversation{ID: "c1", ConversationName: "c", MaxConversation: 10}))
	start := time.UnixMilli(1764010101000)
	_, err := sim.StartSessionAt(appID, "c1", start)
	require.NoError(t, err)
	srv := httptest.NewServer(sim)
	t.Cleanup(srv.Close)
	c := headerPool(t, srv.URL, `      X-Shard: {secrets: ["10"]}`).Client("a")
	for _, keepRaw := range []bool{true, false} {
		var got []client.Session
		require.NoError(t, c.EachSession(context.Background(), client.SessionOptions{KeepRaw: keepRaw}, func(s client.Session) error {
			got = append(got, s)
			return nil
		}))
		require.Len(t, got, 1)
		if assert.NotNil(t, got[0].Start, "KeepRaw %v", keepRaw) {
			assert.True(t, start.Equal(*got[0].Start), "KeepRaw %v", keepRaw)
		}
	}
}

// A credential of 8 bytes or more that an upstream writes as a number in
// a raw member of an answer long enough to stream is redacted all the
// same.
func TestNumericSecretsInStreamedRawMembersAreRedacted(t *testing.T) {
	const secret = "987654321012"
	pad := strings.Repeat("x", 70<<10)
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		_, _ = fmt.Fprintf(w, `{"success":true,"code":"0","data":{"pad":%q,"tenant":%s,"short":10}}`, pad, r.Header.Get("X-Tenant"))
	}))
	t.Cleanup(srv.Close)
	c := headerPool(t, srv.URL, fmt.Sprintf("      X-Tenant: {secrets: [%q]}\n      X-Shard: {secrets: [\"10\"]}", secret)).Client("a")
	res, err := c.StopAllSessions(context.Background())
	require.NoError(t, err)
	var data struct {
		Tenant any `json:"tenant"`
		Short  any `json:"short"`
	}
	require.NoError(t, json.Unmarshal(res.Data, &data))
	assert.Equal(t, "<redacted>", data.Tenant)
	assert.Equal(t, 10.0, data.Short, "a short one is a piece of many a number: left alone")
	assert.False(t, strings.Contains(string(res.Data), secret), "the secret is nowhere in the data")
	assert.Contains(t, string(res.Data), `"tenant":"<redacted>"`, "the mark as it is, not \\u003credacted\\u003e")
}

// headerPool is a pool of app a, with http_headers headers, calling base.
func headerPool(t *testing.T, base, headers string) *client.Pool {
	t.Helper()
	cfg, err := config.Parse([]byte(fmt.Sprintf(`
api:
  base_url: %s%s
  http_client:
    http_headers:
%s
apps:
  - {name: a, app_id: %q, app_key: %q}
`, base, simulator.BasePath, headers, appID, appKey)), "")
	require.NoError(t, err)
	pool, err := client.NewPool(cfg, client.PoolOptions{})
	require.NoError(t, err)
	t.Cleanup(pool.Close)
	return pool
}
