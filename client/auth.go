package client

import (
	"cmp"
	"context"
	"errors"
	"net/url"
	"os"
	"slices"
	"strings"
	"sync"
	"time"

	"github.com/golang-jwt/jwt/v5"

	"github.com/duix-exporter/duix_exporter/config"
)

// Kinds of secret file, the kind label of duix_exporter_secret_file_errors_total.
const (
	SecretKey    = "key"
	SecretToken  = "token"
	SecretHeader = "header" // a file of api.http_client.http_headers
	SecretTLS    = "tls"    // ca_file, cert_file or key_file of api.http_client.tls_config
)

// secretFile is a key, token, header or TLS file, looked at once a minute and read again when it changed, or at once
// after the platform refused it; a bad one is reported once, the last good kept.
type secretFile struct {
	path, kind   string
	hook         func(kind, path string, err error)
	value        string
	good, bad    os.FileInfo // the file value was read from; the last refused
	gone, reread bool        // the last refused was gone; read even if unchanged
	checked      time.Time   // when it was last looked at
}

func unchanged(a, b os.FileInfo) bool {
	return a != nil && b != nil && os.SameFile(a, b) && a.Size() == b.Size() && a.Mode() == b.Mode() && a.ModTime().Equal(b.ModTime())
}

// read returns the secret ("" while none was good) and whether it changed.
func (f *secretFile) read(now time.Time) (string, bool, error) {
	if f.value != "" && !f.reread && now.Sub(f.checked).Abs() < time.Minute {
		return f.value, false, nil
	}
	reread, first := f.reread, f.checked.IsZero()
	f.checked, f.reread = now, false
	st, _ := os.Stat(f.path)
	told := unchanged(st, f.bad) || st == nil && f.gone // refused as it is now
	if f.value != "" && (told || !reread && unchanged(st, f.good)) {
		return f.value, false, nil
	}
	b, err := config.ReadSecretFile(f.path, f.kind == SecretTLS)
	if err != nil {
		if !told && !first { // a file that fails at the start fails the configuration (a TLS file) or the app's calls
			f.hook(f.kind, f.path, err)
		}
		f.bad, f.gone = st, st == nil
		return f.value, false, err
	}
	changed := string(b) != f.value
	f.value, f.good, f.bad, f.gone = string(b), st, nil, false
	return f.value, changed, nil
}

// start reads the file as it is now, as the pool is built.
func (f *secretFile) start(now time.Time) { f.reread = true; _, _, _ = f.read(now) }

// tokenSource gives an app's token: a JWT (HS256; appId, iat, exp) minted from its key, renewed a fifth of its lifetime
// (at most 5m) before expiry and after the platform refused it; or a ready-made token.
type tokenSource struct {
	appID, auth, fixed string // auth: what goes before the token in its header, "Bearer " or nothing; fixed: app_key or token
	ttl                time.Duration
	now                func() time.Time
	mint               bool
	file               *secretFile // app_key_file or token_file, else nil

	mu      sync.Mutex
	token   string     // auth and the last token minted
	last    *appRecord // shared with the app's sources before and after a reload
	renewAt time.Time
}

func newTokenSource(app config.App, auth string, last *appRecord, now func() time.Time, hook func(kind, path string, err error)) *tokenSource {
	s := &tokenSource{appID: app.AppID, auth: auth, last: last, ttl: time.Duration(cmp.Or(app.TokenTTL, config.DefaultTokenTTL)), now: now, mint: app.UsesKey(), fixed: strings.TrimSpace(string(app.AppKey + app.Token))}
	if path := app.AppKeyFile + app.TokenFile; path != "" { // at most one is set
		s.file = &secretFile{path: path, kind: map[bool]string{true: SecretKey, false: SecretToken}[s.mint], hook: hook}
	}
	return s
}

// appRecord is what an app's token sources share across reloads, by platform and app_id, the app dropped and added back
// too: its last token's iat and exp (Unix seconds), so that none mints a refused token again; the last four distinct
// values given, the last given last (a code echoing one is left out: codeOf); the platform's last Retry-After.
type appRecord struct {
	mu         sync.Mutex
	iat, exp   int64
	given      [4]string
	retryAfter time.Time
}

// get returns the value of the token's header, and the last values given, it included.
func (s *tokenSource) get() (string, []string, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	now, secret, changed := s.now(), s.fixed, false
	if s.file != nil {
		var err error
		if secret, changed, err = s.file.read(now); secret == "" {
			return "", nil, &Error{Reason: ReasonAuth, detail: "no usable " + s.file.kind + " file", err: err}
		}
	}
	switch {
	case len(secret) == 0:
		return "", nil, &Error{Reason: ReasonAuth, detail: "no credential"}
	case !s.mint:
		return s.give(s.auth + secret)
	case s.token == "" || changed || !now.Before(s.renewAt):
		s.last.mu.Lock()
		exp := now.Add(s.ttl).Unix()
		if now.Unix() == s.last.iat && exp <= s.last.exp {
			exp = s.last.exp + 1 // minted in the second of the last, which may have been refused: never its bytes
		}
		s.last.iat, s.last.exp = now.Unix(), exp
		s.last.mu.Unlock()
		tok, err := jwt.NewWithClaims(jwt.SigningMethodHS256, jwt.MapClaims{"appId": s.appID, "iat": now.Unix(), "exp": exp}).SignedString([]byte(secret))
		if err != nil {
			return "", nil, &Error{Reason: ReasonAuth, detail: "signing the token failed"}
		}
		s.token, s.renewAt = s.auth+tok, time.Unix(exp, 0).Add(-min(s.ttl/5, 5*time.Minute))
	}
	return s.give(s.token, secret) // the key is never sent, but the platform that issued it may echo it as a code
}

func (s *tokenSource) give(v string, key ...string) (string, []string, error) {
	s.last.mu.Lock()
	defer s.last.mu.Unlock()
	h := append(slices.DeleteFunc(s.last.given[:], func(g string) bool { return g == v }), v) // in place unless v is new
	copy(s.last.given[:], h[len(h)-4:])
	return v, append(slices.Clone(s.last.given[:]), key...), nil
}

// refused makes the next call mint a new token, reading the file again.
func (s *tokenSource) refused() {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.token = ""
	if s.file != nil {
		s.file.reread = true
	}
}

// origin is u's scheme, host and port, in lower case, the port given or the scheme's: one for every spelling of one origin.
func origin(u *url.URL) string {
	scheme := strings.ToLower(u.Scheme)
	return scheme + " " + strings.ToLower(u.Hostname()) + " " + cmp.Or(u.Port(), map[string]string{"http": "80", "https": "443"}[scheme])
}

// header is a secret value of http_headers, or its file's reference in files.
type header struct{ name, value, ref string }

// files are the pool's files of http_headers and tls_config, by kind:path, read as key files are. prometheus/common
// fetches tls_config's on every request (as secret references: it would read them with os.ReadFile, which blocks on a
// FIFO and reads /dev/zero on); the client sets http_headers' itself.
type files struct {
	mu  sync.Mutex
	now func() time.Time
	m   map[string]*secretFile
}

// Fetch implements promconfig.SecretManager: the file's last good value.
func (f *files) Fetch(_ context.Context, ref string) (string, error) {
	f.mu.Lock()
	defer f.mu.Unlock()
	if f.m[ref] == nil {
		return "", errors.New("ca_ref, cert_ref and key_ref are not supported: use ca_file, cert_file and key_file")
	}
	v, _, err := f.m[ref].read(f.now())
	if v != "" {
		err = nil // the last good one, should the file no longer be
	}
	return v, err
}

// refused makes the next call read the header files again (not the TLS files: they hold no credential of the platform's).
func (f *files) refused() {
	f.mu.Lock()
	defer f.mu.Unlock()
	for _, sf := range f.m {
		sf.reread = sf.reread || sf.kind == SecretHeader
	}
}
