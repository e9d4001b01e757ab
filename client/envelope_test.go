package client_test

import (
	"bufio"
	"context"
	"crypto/tls"
	"fmt"
	"io"
	"net"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"runtime"
	"slices"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/golang-jwt/jwt/v5"
	"github.com/prometheus/common/model"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/duix-exporter/duix_exporter/client"
	"github.com/duix-exporter/duix_exporter/config"
	"github.com/duix-exporter/duix_exporter/simulator"
)

// answering is a platform that answers every call with the body answer
// makes of the request, and keeps the token of every request.
func answering(t *testing.T, f *fixture, answer func(r *http.Request, w http.ResponseWriter) string) func() []string {
	var mu sync.Mutex
	var tokens []string
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		mu.Lock()
		tokens = append(tokens, r.Header.Get("Authorization")+r.Header.Get("Token"))
		mu.Unlock()
		_, _ = w.Write([]byte(answer(r, w)))
	}))
	t.Cleanup(srv.Close)
	f.cfg.API.BaseURL = srv.URL
	return func() []string {
		mu.Lock()
		defer mu.Unlock()
		return append([]string(nil), tokens...)
	}
}

// A refusal (success false, code 401, 403 or 429) is one whatever its data
// holds: the refused token is not sent again, and a 429 stops the calls.
func TestARefusalIsOneWhateverItsData(t *testing.T) {
	calls := map[string]func(*client.Client) error{
		client.EndpointConcurrency: func(c *client.Client) error { _, err := c.Concurrency(context.Background()); return err },
		client.EndpointSessions:    func(c *client.Client) error { _, err := allSessions(c); return err },
	}
	for _, data := range []string{`""`, `"token invalid"`, `false`, `0`, `[]`, `{}`, `[1,2]`, `{"list":[1]}`, `[{"uuid":{"a":[1]}},7]`} {
		for endpoint, call := range calls {
			t.Run(endpoint+" "+data, func(t *testing.T) {
				f := newFixture(t, config.AuthHeaderAuthorization)
				code := "401"
				tokens := answering(t, f, func(_ *http.Request, w http.ResponseWriter) string {
					w.Header().Set("Retry-After", "600")
					return `{"code":"` + code + `","data":` + data + `,"message":"refused","success":false}`
				})
				c := f.client(t)
				require.Equal(t, client.ReasonAuth, client.Reason(call(c)))
				f.clock.Add(time.Second)
				require.Equal(t, client.ReasonAuth, client.Reason(call(c)))
				got := tokens()
				require.Len(t, got, 2)
				assert.NotEqual(t, got[0], got[1], "the refused token was sent again")

				code = "429"
				err := call(c)
				require.Equal(t, client.ReasonRateLimited, client.Reason(err), "%v", err)
				assert.Equal(t, f.clock.Now().Add(600*time.Second), c.RetryAfter())
				require.Equal(t, client.ReasonRateLimited, client.Reason(call(c)))
				assert.Len(t, tokens(), 3, "no call while Retry-After applies")
			})
		}
	}
	// Data of another shape in a success is a decode error, wherever success is.
	for _, body := range []string{`{"code":"0","data":"","success":true}`, `{"success":true,"data":[1,"success",false]}`, `{"data":[1],"success":true}`} {
		f := newFixture(t, config.AuthHeaderAuthorization)
		answering(t, f, func(*http.Request, http.ResponseWriter) string { return body })
		c := f.client(t)
		for endpoint, call := range calls {
			assert.Equal(t, client.ReasonDecode, client.Reason(call(c)), "%s %s", endpoint, body)
		}
	}
}

// An answer is one envelope: anything but white space after it (a second
// envelope, a stray byte) makes a decode error, as encoding/json's
// Unmarshal does, whichever envelope says what.
func TestAnythingAfterTheEnvelopeIsADecodeError(t *testing.T) {
	const ok = `{"code":"200","data":{"cropId":"c","totalConcurrentNumber":5,"userConcurrentNumber":1},"success":true}`
	for tail, want := range map[string]string{"": "", " \r\n\t ": "", "x": client.ReasonDecode, "}": client.ReasonDecode,
		`{"code":"401","success":false}`: client.ReasonDecode, ok: client.ReasonDecode, " 0": client.ReasonDecode, `"`: client.ReasonDecode,
		" tr": client.ReasonDecode, strings.Repeat(" ", 2000): client.ReasonDecode, // past max_response_bytes, below
	} {
		f := newFixture(t, config.AuthHeaderAuthorization)
		f.cfg.API.MaxResponseBytes = 1024 // the whole answer comes in one write, well within the 50 ms given to its end
		answering(t, f, func(*http.Request, http.ResponseWriter) string { return ok + tail })
		_, err := f.client(t).Concurrency(context.Background())
		assert.Equal(t, want, client.Reason(err), "%.20q: %v", tail, err)
	}
	// A refusal is one whatever follows it: its token is not sent again.
	for _, tail := range []string{"x", ok} {
		f := newFixture(t, config.AuthHeaderAuthorization)
		answering(t, f, func(*http.Request, http.ResponseWriter) string { return `{"code":"401","success":false}` + tail })
		_, err := f.client(t).Concurrency(context.Background())
		assert.Equal(t, client.ReasonAuth, client.Reason(err), "%q: %v", tail, err)
	}
}

// The app key is never sent, but the platform that issued it knows it: a
// code that shares 8 characters with it is left out too.
func TestACodeThatEchoesTheAppKeyIsLeftOut(t *testing.T) {
	const key = "SECRETKEY-abcdefghijklmnop"
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		_, _ = fmt.Fprintf(w, `{"code":%q,"success":false}`, key)
	}))
	t.Cleanup(srv.Close)
	_, err := poolFor(t, srv.URL, config.AuthHeaderToken, fmt.Sprintf("app_key: %q", key), "").Concurrency(context.Background())
	var e *client.Error
	require.ErrorAs(t, err, &e)
	assert.Equal(t, client.ReasonAPI, e.Reason)
	assert.Empty(t, e.Code)
	assert.NotContains(t, err.Error(), key[:12])
}

// An envelope code that shares 8 characters with a secret sent with the
// call (the token, a secret header) is left out of the error and of a
// stop's result, whatever the platform echoes; other codes are kept.
func TestACodeThatEchoesASecretIsLeftOut(t *testing.T) {
	const staticToken, headerSecret = "STATIC-token-5d1c3b", "hdr-SECRET-0123456789"
	for name, echo := range map[string]func(r *http.Request) string{
		"token":       func(r *http.Request) string { return r.Header.Get("Token") },
		"token tail":  func(r *http.Request) string { return "x" + r.Header.Get("Token")[len(staticToken)-9:] },
		"8 of token":  func(r *http.Request) string { return r.Header.Get("Token")[len(staticToken)-8:] },         // the shortest compared
		"ends in 8":   func(r *http.Request) string { return "E.9" + r.Header.Get("Token")[len(staticToken)-8:] }, // only the last window is secret
		"header":      func(r *http.Request) string { return r.Header.Get("X-Tenant") },
		"header part": func(r *http.Request) string { return "E.1-" + r.Header.Get("X-Tenant")[4:12] + "-9" },
		"upper case":  func(r *http.Request) string { return strings.ToUpper(r.Header.Get("Token")) },
		"header file": func(r *http.Request) string { return r.Header.Get("X-File") },
	} {
		t.Run(name, func(t *testing.T) {
			srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
				success := strings.Contains(r.URL.Path, client.EndpointStop)
				_, _ = fmt.Fprintf(w, `{"code":%q,"success":%t,"data":null}`, echo(r), success)
			}))
			t.Cleanup(srv.Close)
			file := filepath.Join(t.TempDir(), "header")
			require.NoError(t, os.WriteFile(file, []byte(" file-SECRET-9876543210\n"), 0o600))
			c := poolFor(t, srv.URL, config.AuthHeaderToken, fmt.Sprintf("token: %q", staticToken),
				fmt.Sprintf("    http_headers: {X-Tenant: {secrets: [%q]}, X-File: {files: [%q]}}", headerSecret, file))
			_, err := c.Concurrency(context.Background())
			var e *client.Error
			require.ErrorAs(t, err, &e)
			assert.Equal(t, client.ReasonAPI, e.Reason)
			assert.Empty(t, e.Code)
			for _, secret := range []string{staticToken, headerSecret} {
				assert.NotContains(t, err.Error(), secret[len(secret)-8:])
				assert.NotContains(t, err.Error(), secret[4:12])
			}
			code, err := c.StopSession(context.Background(), "s-1")
			require.NoError(t, err)
			assert.Empty(t, code)
		})
	}
	// A code is compared with the secrets only: one that shares 8 characters with the name of a header, or with a
	// value that is no secret (Accept, a plain http_headers value), is kept.
	for _, code := range []string{"E_TOKEN_EXPIRED.1", "application_error", "X-Tenant-unknown", "region-eu-central-1"} {
		srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
			_, _ = fmt.Fprintf(w, `{"code":%q,"success":false}`, code)
		}))
		t.Cleanup(srv.Close)
		_, err := poolFor(t, srv.URL, config.AuthHeaderToken, fmt.Sprintf("token: %q", staticToken), fmt.Sprintf(
			"    http_headers: {X-Tenant: {secrets: [%q]}, X-Region: {values: [region-eu-central-1]}}", headerSecret)).Concurrency(context.Background())
		var e *client.Error
		require.ErrorAs(t, err, &e)
		assert.Equal(t, code, e.Code, "a code that is no secret's is kept")
	}

	// The token given before the call's (the one refused just before), echoed: the end of a minted token's signature
	// shares nothing with the next token.
	var mu sync.Mutex
	var seen []string // the tokens received, in order
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		mu.Lock()
		defer mu.Unlock()
		if tok := r.Header.Get("Authorization"); len(seen) == 0 || seen[len(seen)-1] != tok {
			seen = append(seen, tok)
		}
		if len(seen) == 1 {
			_, _ = w.Write([]byte(`{"code":"401","success":false}`))
			return
		}
		_, _ = fmt.Fprintf(w, `{"code":%q,"success":false}`, seen[len(seen)-2][len(seen[len(seen)-2])-32:])
	}))
	t.Cleanup(srv.Close)
	// 0: no reload; 1: a reload in between (a new pool) keeps what was given; 2: after it, a scrape of the old pool
	// still under way gives another token before the new pool's first call.
	for reload := range 3 {
		mu.Lock()
		seen = nil
		mu.Unlock()
		cfg, err := config.Parse([]byte(fmt.Sprintf("api: {base_url: %q}\napps: [{name: a, app_id: %q, app_key: %q}]\n", srv.URL, appID, appKey)), "")
		require.NoError(t, err)
		pool, err := client.NewPool(cfg, client.PoolOptions{})
		require.NoError(t, err)
		_, err = pool.Client("a").Concurrency(context.Background())
		require.Equal(t, client.ReasonAuth, client.Reason(err), "%v", err)
		if old := pool; reload > 0 {
			pool, err = client.NewPool(cfg, client.PoolOptions{Previous: old})
			require.NoError(t, err)
			if reload == 2 {
				_, err = old.Client("a").Concurrency(context.Background())
				require.Equal(t, client.ReasonAPI, client.Reason(err), "%v", err)
			}
		}
		_, err = pool.Client("a").Concurrency(context.Background())
		var e *client.Error
		require.ErrorAs(t, err, &e)
		assert.Equal(t, client.ReasonAPI, e.Reason)
		assert.Empty(t, e.Code, "the token given before the call's (reload %d)", reload)
		mu.Lock()
		assert.Len(t, seen, 2+reload/2)
		assert.NotContains(t, err.Error(), seen[len(seen)-2][len(seen[len(seen)-2])-8:])
		mu.Unlock()
	}
}

// A 101 Switching Protocols hands the connection over as the body, which
// the call's deadline does not close: it is closed, not drained, and the
// call ends however long the platform holds the connection.
func TestA101AnswerEndsTheCall(t *testing.T) {
	held := make(chan struct{})
	t.Cleanup(func() { close(held) })
	base := rawPlatform(t, func(conn net.Conn) {
		_, _ = conn.Write([]byte("HTTP/1.1 101 Switching Protocols\r\nUpgrade: websocket\r\nConnection: Upgrade\r\n\r\n"))
		<-held // until the test ends
	})
	f := newFixture(t, config.AuthHeaderAuthorization)
	f.cfg.API.BaseURL = base
	f.cfg.API.Timeout = model.Duration(time.Second)
	c, done := f.client(t), make(chan error, 1)
	go func() { _, err := c.Concurrency(context.Background()); done <- err }()
	select {
	case err := <-done:
		assert.Equal(t, client.ReasonHTTP, client.Reason(err), "%v", err)
	case <-time.After(time.Minute): // a guard against a hang: the connection is held until the test ends
		t.Fatal("a 101 answer held the call")
	}
}

// tokenEcho is a platform that records the credentials it receives, in order, and answers every call alike.
type tokenEcho struct {
	mu   sync.Mutex
	seen []string
	body string
	*httptest.Server
}

func newTokenEcho(t *testing.T) *tokenEcho {
	e := &tokenEcho{}
	e.Server = httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		e.mu.Lock()
		defer e.mu.Unlock()
		e.seen = append(e.seen, r.Header.Get("Authorization")+r.Header.Get("Token"))
		_, _ = io.WriteString(w, e.body)
	}))
	t.Cleanup(e.Close)
	return e
}

// answer sets the envelope's code and success; a code "echo N" is the last 32 characters of the Nth credential.
func (e *tokenEcho) answer(code string, success bool) {
	if n, ok := strings.CutPrefix(code, "echo "); ok {
		i, _ := strconv.Atoi(n)
		code = e.got()[i][len(e.got()[i])-32:]
	}
	e.mu.Lock()
	defer e.mu.Unlock()
	e.body = fmt.Sprintf(`{"code":%q,"success":%t,"data":{"totalConcurrentNumber":1,"userConcurrentNumber":0}}`, code, success)
}

func (e *tokenEcho) got() []string {
	e.mu.Lock()
	defer e.mu.Unlock()
	return slices.Clone(e.seen)
}

// Across reloads, a code that echoes a token the app gave before the call's is left out, whichever pool gave it: a
// scrape of the old pool still under way, an app dropped and added back, a change of auth_header, a token given again.
// An app dropped and added back never mints its refused token again, and a 429 still holds, on the same platform.
func TestTokensGivenAcrossReloadsStayOutOfCodes(t *testing.T) {
	now := func() time.Time { return time.Unix(1_800_000_000, 0) } // every token minted in the same second
	pool := func(e *tokenEcho, prev *client.Pool, apps ...string) *client.Pool {
		cfg, err := config.Parse([]byte(fmt.Sprintf("api: {base_url: %q}\napps: [%s]\n", e.URL, strings.Join(apps, ", "))), "")
		require.NoError(t, err)
		p, err := client.NewPool(cfg, client.PoolOptions{Previous: prev, Now: now})
		require.NoError(t, err)
		return p
	}
	call := func(p *client.Pool) error { _, err := p.Client("a").Concurrency(context.Background()); return err }
	echoed := func(e *tokenEcho, p *client.Pool, i int) {
		t.Helper()
		e.answer(fmt.Sprint("echo ", i), false)
		err := call(p)
		require.Equal(t, client.ReasonAPI, client.Reason(err), "%v", err)
		assert.NotContains(t, err.Error(), e.got()[i][len(e.got()[i])-8:], "credential %d", i)
	}
	minted, other := fmt.Sprintf("{name: a, app_id: %q, app_key: %q}", appID, appKey), "{name: b, app_id: other, token: other-token}"
	file := filepath.Join(t.TempDir(), "token")
	require.NoError(t, os.WriteFile(file, []byte("REFUSED-token-abcdefghijklmnopqrs"), 0o600))
	fromFile := func(header string) string {
		return fmt.Sprintf("api: {base_url: %%q, auth_header: %s}\napps: [{name: a, app_id: %q, token_file: %q}]\n", header, appID, file)
	}

	// The old pool gives R (refused), then A; the new pool gives B; then the old pool's scrape calls again with A.
	e := newTokenEcho(t)
	old := pool(e, nil, minted)
	e.answer("401", false)
	require.Equal(t, client.ReasonAuth, client.Reason(call(old)))
	e.answer("0", true)
	require.NoError(t, call(old))
	require.NoError(t, call(pool(e, old, minted)))
	echoed(e, old, 0)

	// Dropped and added back: the refused token is still known and not minted again; then a 429 holds.
	e = newTokenEcho(t)
	p1 := pool(e, nil, minted, other)
	e.answer("401", false)
	require.Equal(t, client.ReasonAuth, client.Reason(call(p1)))
	p3 := pool(e, pool(e, p1, other), minted, other)
	echoed(e, p3, 0)
	assert.NotEqual(t, e.got()[0], e.got()[1], "a refused token is never minted again")
	e.answer("429", false)
	require.Equal(t, client.ReasonRateLimited, client.Reason(call(p3)))
	assert.True(t, pool(e, pool(e, p3, other), minted, other).Client("a").RetryAfter().After(time.Now()), "the 429 holds")
	assert.True(t, pool(newTokenEcho(t), p3, minted).Client("a").RetryAfter().IsZero(), "not on another platform")

	// The same platform spelled another way (the scheme's case) after the reload: one record.
	e = newTokenEcho(t)
	p1 = pool(e, nil, minted)
	e.answer("401", false)
	require.Equal(t, client.ReasonAuth, client.Reason(call(p1)))
	e.URL = "HTTP" + strings.TrimPrefix(e.URL, "http")
	echoed(e, pool(e, p1, minted), 0)
	assert.NotEqual(t, e.got()[0], e.got()[1], "a refused token is never minted again")

	// Ready-made tokens T1 to T4 by reloads, T1 again (refused), then T5: T1 was given just before it.
	e = newTokenEcho(t)
	e.answer("0", true)
	ready := func(n int) string {
		return fmt.Sprintf("{name: a, app_id: %q, token: ready-%d-%s}", appID, n, strings.Repeat(string(rune('a'+n)), 30))
	}
	var p *client.Pool
	for i, n := range []int{1, 2, 3, 4, 1} {
		if p = pool(e, p, ready(n)); i == 4 {
			e.answer("401", false)
		}
		_ = call(p)
	}
	echoed(e, pool(e, p, ready(5)), 4)

	// A token given again and again does not push out the one given before it: the values kept are distinct.
	e = newTokenEcho(t)
	e.answer("0", true)
	p = pool(e, nil, ready(1))
	require.NoError(t, call(p))
	p = pool(e, p, ready(2))
	for range 5 {
		require.NoError(t, call(p))
	}
	echoed(e, p, 0)

	// A ready-made token refused, the file rewritten, then auth_header changed: Bearer N and N are two values given.
	e = newTokenEcho(t)
	parse := func(header string) *config.Config {
		cfg, err := config.Parse([]byte(fmt.Sprintf(fromFile(header), e.URL)), "")
		require.NoError(t, err)
		return cfg
	}
	p1, err := client.NewPool(parse(config.AuthHeaderAuthorization), client.PoolOptions{})
	require.NoError(t, err)
	e.answer("401", false)
	require.Equal(t, client.ReasonAuth, client.Reason(call(p1)))
	require.NoError(t, os.WriteFile(file, []byte("NEW-token-ZYXWVUTSRQPONMLKJIHGFEDCBA"), 0o600))
	e.answer("0", true)
	require.NoError(t, call(p1))
	p2, err := client.NewPool(parse(config.AuthHeaderToken), client.PoolOptions{Previous: p1})
	require.NoError(t, err)
	echoed(e, p2, 0)
}

// A key file rewritten in place (same size, another modification time) is
// read at the next look, a minute on, and a token is minted with the new
// key at once, without waiting for a refusal or the renewal.
func TestAKeyFileRewrittenInPlaceMintsWithTheNewKeyAtOnce(t *testing.T) {
	clock := time.Unix(1_800_000_000, 0)
	e := newTokenEcho(t)
	e.answer("0", true)
	path := filepath.Join(t.TempDir(), "key")
	require.NoError(t, os.WriteFile(path, []byte("first-key-aaaa"), 0o600))
	cfg, err := config.Parse([]byte(fmt.Sprintf("api: {base_url: %q}\napps: [{name: a, app_id: %q, app_key_file: %q}]\n", e.URL, appID, path)), "")
	require.NoError(t, err)
	p, err := client.NewPool(cfg, client.PoolOptions{Now: func() time.Time { return clock }})
	require.NoError(t, err)
	t.Cleanup(p.Close)
	signedWith := func(key string) bool {
		_, err := p.Client("a").Concurrency(context.Background())
		require.NoError(t, err)
		got := e.got()
		_, err = jwt.Parse(strings.TrimPrefix(got[len(got)-1], "Bearer "), func(*jwt.Token) (any, error) { return []byte(key), nil },
			jwt.WithValidMethods([]string{"HS256"}), jwt.WithTimeFunc(func() time.Time { return clock }))
		return err == nil
	}
	require.True(t, signedWith("first-key-aaaa"))
	st, err := os.Stat(path)
	require.NoError(t, err)
	require.NoError(t, os.WriteFile(path, []byte("other-key-bbbb"), 0o600)) // in place: the same file and size
	require.NoError(t, os.Chtimes(path, st.ModTime().Add(time.Second), st.ModTime().Add(time.Second)))
	assert.True(t, signedWith("first-key-aaaa"), "looked at once a minute")
	clock = clock.Add(time.Minute)
	assert.True(t, signedWith("other-key-bbbb"), "the new key, at once")
}

// rawPlatform is a platform on loopback that reads each request and has
// answer write the bytes of its answer; it returns the base URL.
func rawPlatform(t *testing.T, answer func(net.Conn)) string {
	return rawListener(t, func(conn net.Conn, br *bufio.Reader) {
		if _, err := http.ReadRequest(br); err == nil {
			answer(conn)
		}
	})
}

// rawListener serves each connection on loopback with serve (which reads
// it through br) and closes it; it returns the listener's http URL.
func rawListener(t *testing.T, serve func(conn net.Conn, br *bufio.Reader)) string {
	t.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	require.NoError(t, err)
	t.Cleanup(func() { _ = ln.Close() })
	go func() {
		for {
			conn, err := ln.Accept()
			if err != nil {
				return
			}
			go func() {
				defer conn.Close()
				serve(conn, bufio.NewReader(conn))
			}()
		}
	}()
	return "http://" + ln.Addr().String()
}

const goodBody = `{"success":true,"data":{"totalConcurrentNumber":5,"userConcurrentNumber":1}}`

// headerLines is n bytes of header lines made by line (of its index).
func headerLines(n int, line func(i int) string) string {
	var b strings.Builder
	for i := 0; b.Len() < n; i++ {
		b.WriteString(line(i))
	}
	return b.String()
}

// tinyHeader is a distinct header of the shortest name and no value: net/http
// holds about 200 bytes for each of these 5 or 6.
func tinyHeader(i int) string {
	const token = "abcdefghijklmnopqrstuvwxyz0123456789!#$%&'*+-.^_|~"
	name := string(token[i%len(token)])
	for j := i / len(token); j > 0; j /= len(token) {
		name += string(token[j%len(token)])
	}
	return name + ":\r\n"
}

func longHeader(int) string { return "X-A: " + strings.Repeat("a", 1000) + "\r\n" }

// answerWith is an HTTP/1.1 answer of status 200 with these headers and body.
func answerWith(headers, body string) []byte {
	return []byte("HTTP/1.1 200 OK\r\nContent-Type: application/json\r\n" + headers + "Content-Length: " + strconv.Itoa(len(body)) + "\r\n\r\n" + body)
}

// callAllocating makes one call of pool's app and returns the bytes it allocated and its error.
func callAllocating(pool *client.Pool) (uint64, error) {
	var before, after runtime.MemStats
	runtime.GC()
	runtime.ReadMemStats(&before)
	_, err := pool.Client("a").Concurrency(context.Background())
	runtime.ReadMemStats(&after)
	return after.TotalAlloc - before.TotalAlloc, err
}

// An answer's headers are at most config.MaxHeaderBytes, 1xx answers' and
// redirects' included (net/http keeps every hop's answer until the call
// ends), and so is a proxy's answer to CONNECT: net/http alone would read
// 10 MiB of them, and holds up to 16 times what it read once parsed (some
// 200 bytes for a header of 5), so that 16 calls at once would hold 120 MiB
// with headers of max_response_bytes. Such a call fails as an answer too
// large (decode), having allocated a fraction of them; the memory rule
// counts what the headers it lets through hold.
func TestAnAnswersHeadersAreBounded(t *testing.T) {
	early := "HTTP/1.1 103 Early Hints\r\n" + headerLines(20<<10, tinyHeader) + "\r\n"
	for name, answer := range map[string][]byte{
		"9 MiB of long headers (net/http's limit is 10 MiB)": answerWith(headerLines(9<<20, longHeader), goodBody),
		"500 KiB of tiny headers (under max_response_bytes)": answerWith(headerLines(500<<10, tinyHeader), goodBody),
		"30 answers 103 of 20 KiB of tiny headers":           append([]byte(strings.Repeat(early, 30)), answerWith("", goodBody)...),
		"redirects of 20 KiB of tiny headers each":           []byte("HTTP/1.1 302 Found\r\nLocation: /next\r\n" + headerLines(20<<10, tinyHeader) + "Content-Length: 0\r\n\r\n"),
	} {
		t.Run(name, func(t *testing.T) {
			pool, _, _, err := poolWith(t, rawPlatform(t, func(conn net.Conn) { _, _ = conn.Write(answer) }), "{}") // max_response_bytes: 512 KiB
			require.NoError(t, err)
			allocated, err := callAllocating(pool)
			require.Error(t, err)
			assert.Equal(t, client.ReasonDecode, client.Reason(err), "%v", err)
			assert.Contains(t, err.Error(), "answer larger than max_response_bytes, or its headers than 24 KiB")
			assert.Less(t, allocated, uint64(3*config.HeaderMemory), "bytes allocated by the call, garbage included")
		})
	}
	t.Run("half a KiB over the bound, over HTTP and TLS, every time", func(t *testing.T) {
		answer := answerWith(headerLines(config.MaxHeaderBytes+512, tinyHeader), goodBody)
		for _, platform := range []func(*testing.T, func(net.Conn)) string{rawPlatform, rawTLSPlatform} {
			pool, _, _, err := poolWith(t, platform(t, func(conn net.Conn) { _, _ = conn.Write(answer) }), "{tls_config: {insecure_skip_verify: true}}")
			require.NoError(t, err)
			for range 5 {
				_, err := pool.Client("a").Concurrency(context.Background())
				assert.ErrorIs(t, err, client.ErrBodyTooLarge)
			}
		}
	})
	t.Run("a proxy's answer to CONNECT of 500 KiB of tiny headers", func(t *testing.T) {
		srv := httptest.NewTLSServer(platformWithApp())
		t.Cleanup(srv.Close)
		proxy := connectProxy(t, answerWith(headerLines(500<<10, tinyHeader), ""))
		pool, _, _, err := poolWith(t, srv.URL, fmt.Sprintf("{tls_config: {insecure_skip_verify: true}, proxy_url: %q}", proxy))
		require.NoError(t, err)
		allocated, err := callAllocating(pool)
		require.Error(t, err)
		// decode, or network when net/http saw a header line cut at the bound as a bad one
		assert.Contains(t, []string{client.ReasonDecode, client.ReasonNetwork}, client.Reason(err), "%v", err)
		assert.Less(t, allocated, uint64(3*config.HeaderMemory), "bytes allocated by the call, garbage included")
	})
}

// Headers under config.MaxHeaderBytes, then a body of nearly
// max_response_bytes, are read: over plain HTTP, over TLS, over TLS
// through a proxy's tunnel (where the TLS handshake, the CONNECT and the
// answer each have their room), and in chunks of 16 bytes, each its own
// TLS record (the body is bounded as it is decoded, not on the wire, where
// it is 2.5 times as long); the connection is then reused.
func TestAnswersOfLongHeadersAndBodiesAreRead(t *testing.T) {
	headers := headerLines(16<<10, longHeader)
	body := `{"success":true,"data":{"pad":"` + strings.Repeat("x", 500<<10) + `","totalConcurrentNumber":5,"userConcurrentNumber":1}}`
	tlsPlatform := func(piece int) string {
		srv := httptest.NewTLSServer(http.HandlerFunc(func(w http.ResponseWriter, _ *http.Request) {
			for i := range 16 {
				w.Header().Set("X-A"+strconv.Itoa(i), strings.Repeat("a", 1000))
			}
			for rest := body; rest != ""; rest = rest[min(piece, len(rest)):] {
				_, _ = io.WriteString(w, rest[:min(piece, len(rest))])
				w.(http.Flusher).Flush()
			}
		}))
		t.Cleanup(srv.Close)
		return srv.URL
	}
	tls := tlsPlatform(len(body))
	for name, base := range map[string]string{
		"plain":                   rawPlatform(t, func(conn net.Conn) { _, _ = conn.Write(answerWith(headers, body)) }),
		"TLS":                     tls,
		"TLS through a proxy":     tls,
		"TLS, in 16-byte records": tlsPlatform(16),
	} {
		t.Run(name, func(t *testing.T) {
			httpClient := "{tls_config: {insecure_skip_verify: true}}"
			if strings.Contains(name, "proxy") {
				httpClient = fmt.Sprintf("{tls_config: {insecure_skip_verify: true}, proxy_url: %q}", connectProxy(t, []byte("HTTP/1.1 200 Connection established\r\n\r\n")))
			}
			pool, _, _, err := poolWith(t, base, httpClient)
			require.NoError(t, err)
			for range 2 {
				c, err := pool.Client("a").Concurrency(context.Background())
				require.NoError(t, err)
				assert.Equal(t, int64(5), c.TotalConcurrentNumber)
			}
		})
	}
}

// rawTLSPlatform is rawPlatform over TLS (a test certificate: calls skip
// its verification, as poolWith's http_client says).
func rawTLSPlatform(t *testing.T, answer func(net.Conn)) string {
	srv := httptest.NewTLSServer(nil)
	cert := srv.TLS
	srv.Close()
	return "https://" + strings.TrimPrefix(rawListener(t, func(conn net.Conn, _ *bufio.Reader) {
		tc := tls.Server(conn, cert)
		if _, err := http.ReadRequest(bufio.NewReader(tc)); err == nil {
			answer(tc)
		}
	}), "http://")
}

// What a call's headers hold, at their peak, is at most config.HeaderMemory
// (what the memory rule counts) for headers just under the bound, in the
// shapes that cost net/http the most (tiny names, bare line feeds, names
// it must rewrite), over HTTP and TLS: 16 calls hold their answer's headers
// while a session is handed over, and the heap is measured then.
func TestHeadersHoldAtMostHeaderMemory(t *testing.T) {
	bare := func(i int) string { return strings.TrimSuffix(tinyHeader(i), "\r\n") + "\n" }
	odd := func(i int) string { return "x-" + tinyHeader(i) }
	held := func(t *testing.T, platform func(*testing.T, func(net.Conn)) string, headers string) uint64 {
		release, arrived := make(chan struct{}), sync.WaitGroup{}
		base := platform(t, func(conn net.Conn) {
			_, _ = io.WriteString(conn, "HTTP/1.1 200 OK\r\nConnection: close\r\n"+headers+"\r\n"+`{"success":true,"data":[{"uuid":"a"}`)
			<-release
			_, _ = io.WriteString(conn, "]}")
		})
		pool, _, _, err := poolWith(t, base, "{tls_config: {insecure_skip_verify: true}}")
		require.NoError(t, err)
		var calls sync.WaitGroup
		for range 16 {
			arrived.Add(1)
			calls.Go(func() {
				assert.NoError(t, pool.Client("a").EachSession(context.Background(), client.SessionOptions{}, func(client.Session) error {
					arrived.Done()
					<-release
					return nil
				}))
			})
		}
		arrived.Wait()
		var m runtime.MemStats
		runtime.GC()
		runtime.ReadMemStats(&m)
		close(release)
		calls.Wait()
		return m.HeapAlloc
	}
	for pname, platform := range map[string]func(*testing.T, func(net.Conn)) string{"HTTP": rawPlatform, "TLS": rawTLSPlatform} {
		none := held(t, platform, "")
		for name, line := range map[string]func(int) string{"tiny": tinyHeader, "tiny, bare line feeds": bare, "tiny, lower case": odd} {
			got := held(t, platform, headerLines(config.MaxHeaderBytes-256, line))
			t.Logf("%s, %s: %.0f KiB a call", pname, name, float64(int64(got)-int64(none))/16/1024)
			assert.LessOrEqual(t, int64(got)-int64(none), int64(16*config.HeaderMemory), "%s, %s", pname, name)
		}
	}
}

// A call that leaves after it had its connection closes no other's: one
// slow answer does not cost every app its kept-alive connections.
func TestACallThatLeavesKeepsTheOthersConnections(t *testing.T) {
	var conns, calls atomic.Int64
	started, release := make(chan struct{}), make(chan struct{})
	sim := platformWithApp()
	srv := httptest.NewUnstartedServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if calls.Add(1) == 1 {
			close(started)
			<-release
		}
		sim.ServeHTTP(w, r)
	}))
	srv.Config.ConnState = func(_ net.Conn, s http.ConnState) {
		if s == http.StateNew {
			conns.Add(1)
		}
	}
	srv.Start()
	t.Cleanup(srv.Close)
	t.Cleanup(func() { close(release) })
	cfg, err := config.Parse([]byte(fmt.Sprintf("api: {base_url: %q, timeout: 300ms}\napps: [{name: a, app_id: %q, app_key: %q}]\n", srv.URL+simulator.BasePath, appID, appKey)), "")
	require.NoError(t, err)
	pool, err := client.NewPool(cfg, client.PoolOptions{})
	require.NoError(t, err)
	t.Cleanup(pool.Close)
	slow := make(chan error)
	go func() { _, err := pool.Client("a").Concurrency(context.Background()); slow <- err }()
	<-started
	_, err = pool.Client("a").Concurrency(context.Background()) // on a second connection, then idle
	require.NoError(t, err)
	assert.Equal(t, client.ReasonTimeout, client.Reason(<-slow))
	_, err = pool.Client("a").Concurrency(context.Background())
	require.NoError(t, err)
	assert.Equal(t, int64(2), conns.Load(), "the second connection was kept for the third call")
}

// An answer without a body gives its connection back before its call
// returns, maybe to another call already reading its headers: that room is
// not lifted by the first call. A platform alternating such answers with
// answers of 200 KiB of headers, 16 calls at once, gets none of the latter
// read.
func TestAnAnswerWithoutABodyLiftsNoOtherCallsRoom(t *testing.T) {
	big := answerWith(headerLines(200<<10, longHeader), goodBody)
	base := rawListener(t, func(conn net.Conn, br *bufio.Reader) {
		for n := 0; ; n++ {
			if _, err := http.ReadRequest(br); err != nil {
				return
			} else if n%2 == 0 {
				_, _ = io.WriteString(conn, "HTTP/1.1 204 No Content\r\n\r\n")
			} else {
				_, _ = conn.Write(big)
			}
		}
	})
	pool, _, _, err := poolWith(t, base, "{}")
	require.NoError(t, err)
	var read atomic.Int64
	var calls sync.WaitGroup
	for range 16 {
		calls.Go(func() {
			for range 200 {
				if _, err := pool.Client("a").Concurrency(context.Background()); err == nil {
					read.Add(1)
				}
			}
		})
	}
	calls.Wait()
	assert.Zero(t, read.Load(), "calls that read 200 KiB of headers")
}

// A call that leaves while its connection is being opened ends the opening:
// net/http would go on, for a minute through a proxy that does not answer
// CONNECT, and each call would add a connection (and what it reads).
func TestACallThatLeavesEndsTheOpeningOfItsConnection(t *testing.T) {
	var open atomic.Int64
	proxy := rawListener(t, func(conn net.Conn, br *bufio.Reader) {
		open.Add(1)
		defer open.Add(-1)
		_, _ = io.Copy(io.Discard, br) // never answers, until the client closes
	})
	cfg, err := config.Parse([]byte(fmt.Sprintf("api: {base_url: %q, timeout: 100ms, http_client: {proxy_url: %q}}\napps: [{name: a, app_id: %q, app_key: %q}]\n",
		"https://platform.invalid"+simulator.BasePath, proxy, appID, appKey)), "")
	require.NoError(t, err)
	pool, err := client.NewPool(cfg, client.PoolOptions{})
	require.NoError(t, err)
	t.Cleanup(pool.Close)
	for range 10 {
		_, err := pool.Client("a").Concurrency(context.Background())
		require.Equal(t, client.ReasonTimeout, client.Reason(err), "%v", err)
	}
	assert.Eventually(t, func() bool { return open.Load() == 0 }, 5*time.Second, 10*time.Millisecond, "connections opened for calls that left: %d", open.Load())
}

// connectProxy is an HTTP proxy on loopback that answers each CONNECT with
// answer, then tunnels to the host asked for; it returns its URL.
func connectProxy(t *testing.T, answer []byte) string {
	return rawListener(t, func(conn net.Conn, br *bufio.Reader) {
		req, err := http.ReadRequest(br)
		if err != nil {
			return
		}
		_, _ = conn.Write(answer)
		if target, err := net.Dial("tcp", req.Host); err == nil {
			defer target.Close()
			go func() { _, _ = io.Copy(target, br) }()
			_, _ = io.Copy(conn, target)
		}
	})
}
