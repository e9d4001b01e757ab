package client

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"os"
	"sync"
	"time"

	"github.com/golang-jwt/jwt/v5"
)

// Header styles: how the access token travels.
const (
	// HeaderAuthorization sends "Authorization: Bearer <token>" (interface.md).
	HeaderAuthorization = "authorization"
	// HeaderToken sends "token: <token>" (the public reference's API-key header).
	HeaderToken = "token"
)

// TokenSource yields the access token to send with a request.
type TokenSource interface {
	Token(ctx context.Context) (string, error)
}

// StaticToken is a ready-made access token given inline.
type StaticToken string

// Token implements TokenSource.
func (t StaticToken) Token(context.Context) (string, error) {
	if t == "" {
		return "", &AuthError{Err: errors.New("token is empty")}
	}
	return string(t), nil
}

// secretFile reads a small secret from a file and re-reads it whenever the
// file's size or modification time changes, so a rotated token or key is
// picked up without a restart.
type secretFile struct {
	path string

	mu      sync.Mutex
	modTime time.Time
	size    int64
	value   []byte
}

// maxSecretFile bounds what is read from a token or key file.
const maxSecretFile = 64 << 10

// read returns the trimmed content and whether it changed since the last read.
func (f *secretFile) read() ([]byte, bool, error) {
	f.mu.Lock()
	defer f.mu.Unlock()
	st, err := os.Stat(f.path)
	if err != nil {
		return nil, false, fmt.Errorf("reading %s: %w", f.path, errors.Unwrap(err))
	}
	if f.value != nil && st.ModTime().Equal(f.modTime) && st.Size() == f.size {
		return f.value, false, nil
	}
	if st.Size() > maxSecretFile {
		return nil, false, fmt.Errorf("reading %s: file larger than %d bytes", f.path, maxSecretFile)
	}
	b, err := os.ReadFile(f.path)
	if err != nil {
		return nil, false, fmt.Errorf("reading %s: %w", f.path, errors.Unwrap(err))
	}
	b = bytes.TrimSpace(b)
	if len(b) == 0 {
		return nil, false, fmt.Errorf("%s is empty", f.path)
	}
	changed := !bytes.Equal(b, f.value)
	f.value, f.modTime, f.size = b, st.ModTime(), st.Size()
	return b, changed, nil
}

// FileToken is a ready-made access token kept in a file, re-read when the
// file changes.
type FileToken struct{ f secretFile }

// NewFileToken returns a TokenSource reading path.
func NewFileToken(path string) *FileToken { return &FileToken{f: secretFile{path: path}} }

// Token implements TokenSource.
func (t *FileToken) Token(context.Context) (string, error) {
	b, _, err := t.f.read()
	if err != nil {
		return "", &AuthError{Err: err}
	}
	return string(b), nil
}

// KeySource yields an app's secret appKey and whether it changed since the
// previous call.
type KeySource interface {
	Key() (key []byte, changed bool, err error)
}

// StaticKey is an appKey given inline.
type StaticKey string

// Key implements KeySource.
func (k StaticKey) Key() ([]byte, bool, error) {
	if k == "" {
		return nil, false, errors.New("app_key is empty")
	}
	return []byte(k), false, nil
}

// FileKey is an appKey kept in a file, re-read when the file changes.
type FileKey struct{ f secretFile }

// NewFileKey returns a KeySource reading path.
func NewFileKey(path string) *FileKey { return &FileKey{f: secretFile{path: path}} }

// Key implements KeySource.
func (k *FileKey) Key() ([]byte, bool, error) { return k.f.read() }

// DefaultTokenTTL is the lifetime of minted tokens when none is configured;
// the platform reference's example uses 1800 s.
const DefaultTokenTTL = 30 * time.Minute

// JWTSource mints access tokens the way the platform documents: a JWT signed
// with HS256 using the appKey, with the claims appId, iat and exp. A token is
// reused until it is within its renewal margin of expiry, then a new one is
// minted. It is safe for concurrent use.
type JWTSource struct {
	appID string
	key   KeySource
	ttl   time.Duration
	now   func() time.Time

	mu      sync.Mutex
	token   string
	expiry  time.Time
	lastKey []byte
}

// NewJWTSource returns a TokenSource minting tokens for appID. A zero ttl
// means DefaultTokenTTL; a nil now means time.Now.
func NewJWTSource(appID string, key KeySource, ttl time.Duration, now func() time.Time) *JWTSource {
	if ttl <= 0 {
		ttl = DefaultTokenTTL
	}
	if now == nil {
		now = time.Now
	}
	return &JWTSource{appID: appID, key: key, ttl: ttl, now: now}
}

// renewMargin is how long before expiry a token is replaced: a fifth of its
// lifetime, at most five minutes, so a token never expires in flight.
func (s *JWTSource) renewMargin() time.Duration {
	return min(s.ttl/5, 5*time.Minute)
}

// keyed is a token source that signs with a key, which must be kept out of
// errors as well as its tokens.
type keyed interface{ signingKey() string }

// signingKey returns the key the last token was signed with.
func (s *JWTSource) signingKey() string {
	s.mu.Lock()
	defer s.mu.Unlock()
	return string(s.lastKey)
}

// Token implements TokenSource.
func (s *JWTSource) Token(context.Context) (string, error) {
	key, changed, err := s.key.Key()
	if err != nil {
		return "", &AuthError{Err: err}
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	now := s.now()
	if s.token != "" && !changed && now.Before(s.expiry.Add(-s.renewMargin())) {
		return s.token, nil
	}
	exp := now.Add(s.ttl)
	tok, err := jwt.NewWithClaims(jwt.SigningMethodHS256, jwt.MapClaims{
		"appId": s.appID,
		"iat":   now.Unix(),
		"exp":   exp.Unix(),
	}).SignedString(key)
	if err != nil {
		return "", &AuthError{Err: errors.New("signing the access token failed")}
	}
	s.token, s.expiry, s.lastKey = tok, exp, key
	return tok, nil
}
