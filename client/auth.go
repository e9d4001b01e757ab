package client

import (
	"bytes"
	"fmt"
	"io"
	"net/http"
	"net/url"
	"os"
	"strings"
	"sync"
	"time"

	"github.com/golang-jwt/jwt/v5"

	"github.com/duix-exporter/duix_exporter/config"
)

// Kinds of secret file, the kind label of
// duix_exporter_secret_file_errors_total.
const (
	SecretKey   = "key"
	SecretToken = "token"
)

// SecretFileHook is told each time a key or token file that changed is
// refused (not a regular file, over 64 KiB, empty, unreadable, gone): kind
// is SecretKey or SecretToken. The last good secret stays in use. err names
// the file, never its content.
type SecretFileHook func(kind, path string, err error)

// maxSecretFile bounds what is read of a key or token file.
const maxSecretFile = 64 << 10

// secretFile is a key or token kept in a file, read again when the file
// changes (looked at before every use) or after the platform refused it.
type secretFile struct {
	path, kind string
	hook       SecretFileHook

	value     []byte
	good, bad os.FileInfo // the file value was read from; the last refused
	gone      bool        // the last refused was gone
	reread    bool        // read even when unchanged
}

// unchanged reports whether a and b describe the same file, unmodified.
func unchanged(a, b os.FileInfo) bool {
	return a != nil && b != nil && os.SameFile(a, b) && a.Size() == b.Size() && a.Mode() == b.Mode() && a.ModTime().Equal(b.ModTime())
}

// read returns the secret and whether it changed. It fails only while no
// good secret was ever read. The caller holds the token source's lock.
func (f *secretFile) read() ([]byte, bool, error) {
	st, _ := os.Stat(f.path)
	told := unchanged(st, f.bad) || st == nil && f.gone // refused as it is now
	if f.value != nil && (told || !f.reread && unchanged(st, f.good)) {
		return f.value, false, nil
	}
	f.reread = false
	b, st, err := readSecretFile(f.path)
	if err != nil {
		if !told {
			f.hook(f.kind, f.path, err)
		}
		f.bad, f.gone = st, st == nil
		return f.value, false, err
	}
	changed := !bytes.Equal(b, f.value)
	f.value, f.good, f.bad, f.gone = b, st, nil, false
	return b, changed, nil
}

// readSecretFile reads a regular file of at most maxSecretFile bytes, not
// empty once trimmed; config.OpenSecretFile opens it without blocking, so
// that a FIFO swapped in cannot hang the caller. st describes what was
// refused when it can be told.
func readSecretFile(path string) ([]byte, os.FileInfo, error) {
	fd, st, err := config.OpenSecretFile(path)
	if err != nil {
		st, _ = os.Stat(path)
		return nil, st, err
	}
	defer fd.Close()
	b, err := io.ReadAll(io.LimitReader(fd, maxSecretFile+1))
	switch {
	case err != nil:
		return nil, st, fmt.Errorf("reading %s failed", path)
	case len(b) > maxSecretFile:
		return nil, st, fmt.Errorf("%s is larger than %d bytes", path, maxSecretFile)
	case len(bytes.TrimSpace(b)) == 0:
		return nil, st, fmt.Errorf("%s is empty", path)
	}
	return bytes.TrimSpace(b), st, nil
}

// tokenSource gives an app's access token: a JWT minted from its key
// (HS256, claims appId, iat, exp), renewed a fifth of its lifetime (at most
// five minutes) before it expires and at once after the platform refused
// it; or a ready-made token, inline or in a file.
type tokenSource struct {
	appID string
	ttl   time.Duration
	now   func() time.Time
	fixed []byte      // app_key, or token when mint is false
	file  *secretFile // app_key_file or token_file, else nil
	mint  bool

	mu      sync.Mutex
	token   string
	renewAt time.Time
}

func newTokenSource(app config.App, now func() time.Time, hook SecretFileHook) *tokenSource {
	s := &tokenSource{appID: app.AppID, ttl: time.Duration(app.TokenTTL), now: now, mint: app.UsesKey()}
	if s.ttl <= 0 {
		s.ttl = time.Duration(config.DefaultTokenTTL)
	}
	switch {
	case app.AppKeyFile != "":
		s.file = &secretFile{path: app.AppKeyFile, kind: SecretKey, hook: hook}
	case app.TokenFile != "":
		s.file = &secretFile{path: app.TokenFile, kind: SecretToken, hook: hook}
	case app.AppKey != "":
		s.fixed = []byte(app.AppKey)
	default:
		s.fixed = []byte(app.Token)
	}
	return s
}

// get returns the token to send.
func (s *tokenSource) get() (string, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	secret, changed := s.fixed, false
	if s.file != nil {
		var err error
		if secret, changed, err = s.file.read(); secret == nil {
			return "", &Error{Reason: ReasonAuth, detail: "no usable " + s.file.kind + " file", err: err}
		}
	}
	if len(secret) == 0 {
		return "", &Error{Reason: ReasonAuth, detail: "no credential"}
	}
	if !s.mint {
		return string(secret), nil
	}
	now := s.now()
	if s.token != "" && !changed && now.Before(s.renewAt) {
		return s.token, nil
	}
	exp := now.Add(s.ttl)
	tok, err := jwt.NewWithClaims(jwt.SigningMethodHS256, jwt.MapClaims{
		"appId": s.appID, "iat": now.Unix(), "exp": exp.Unix(),
	}).SignedString(secret)
	if err != nil {
		return "", &Error{Reason: ReasonAuth, detail: "signing the token failed"}
	}
	s.token, s.renewAt = tok, exp.Add(-min(s.ttl/5, 5*time.Minute))
	return tok, nil
}

// refused forgets the token the platform refused: the next call mints a
// new one, after reading the key or token file again.
func (s *tokenSource) refused() {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.token = ""
	if s.file != nil {
		s.file.reread = true
	}
}

// tokenRoundTripper adds an app's token to every request sent to the
// origin (scheme, host and port) of the base URL, in the Authorization
// header as a Bearer token or in the token header. A request that a
// redirect took to another origin, or that comes back from one, carries
// none: net/http would drop Authorization only on a change of host, and
// never a header named token.
type tokenRoundTripper struct {
	next   http.RoundTripper
	base   *url.URL
	header string
	tokens *tokenSource
}

func (rt *tokenRoundTripper) RoundTrip(req *http.Request) (*http.Response, error) {
	for r := req; r != nil; r = r.Response.Request {
		if !sameOrigin(r.URL, rt.base) {
			return rt.next.RoundTrip(req)
		}
		if r.Response == nil {
			break
		}
	}
	tok, err := rt.tokens.get()
	if err != nil {
		if req.Body != nil {
			req.Body.Close()
		}
		return nil, err
	}
	req = req.Clone(req.Context())
	if rt.header == config.AuthHeaderToken {
		req.Header.Set("token", tok)
	} else {
		req.Header.Set("Authorization", "Bearer "+tok)
	}
	return rt.next.RoundTrip(req)
}

// sameOrigin reports whether a and b have the same scheme, host and port.
func sameOrigin(a, b *url.URL) bool {
	return strings.EqualFold(a.Scheme, b.Scheme) && strings.EqualFold(a.Hostname(), b.Hostname()) && port(a) == port(b)
}

// port returns the port of u, the scheme's default when none is given.
func port(u *url.URL) string {
	if p := u.Port(); p != "" {
		return p
	}
	return map[string]string{"http": "80", "https": "443"}[strings.ToLower(u.Scheme)]
}
