package client

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"sync"
	"time"

	"github.com/golang-jwt/jwt/v5"

	"github.com/duix-exporter/duix_exporter/config"
)

// tokenHeader is the header that carries the token when the header style is
// config.AuthHeaderToken (docs/platform-api.md#authentication).
const tokenHeader = "token"

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

// Kinds of secret file, the kind label of
// duix_exporter_secret_file_errors_total.
const (
	SecretKey   = "key"
	SecretToken = "token"
)

// SecretFileHook is told each time a key or token file that changed is
// refused (not a regular file, too large, empty, unreadable, gone): kind is
// SecretKey or SecretToken. The last good secret stays in use. err names
// the file, never its content.
type SecretFileHook func(kind, path string, err error)

// secretFile reads a small secret from a file and reads it again when the
// file changes, so that a rotated token or key is picked up without a
// restart: it looks for a change at most once every secretFileRecheck,
// and at the next use after the platform refused the credentials.
// Every read is as careful as the first (see readSecretFile); a changed
// file that is refused leaves the last good secret in use.
type secretFile struct {
	path    string
	kind    string
	hook    SecretFileHook
	recheck time.Duration

	mu      sync.Mutex
	info    fileState // of the file the value was read from
	checked time.Time // when the file was last looked at
	value   []byte
	refused string // the state last refused, so that it is reported once
}

// secretFileRecheck is how often a secret file is looked at for a change
// (a stat). Looking at every call cost about 4% of the exporter's CPU per
// scrape in `make load`, and once a second still 3% (each app's file once
// per scrape). A key the platform no longer accepts is refused at once,
// and the file looked at again then (lookAgain).
var secretFileRecheck = time.Minute

func newSecretFile(path, kind string, hook SecretFileHook) secretFile {
	return secretFile{path: path, kind: kind, hook: hook, recheck: secretFileRecheck}
}

// maxSecretFile bounds what is read from a token or key file.
const maxSecretFile = 64 << 10

// read returns the secret and whether it changed since the last read. It
// fails only when no good secret was ever read.
func (f *secretFile) read() ([]byte, bool, error) {
	f.mu.Lock()
	defer f.mu.Unlock()
	if f.value != nil {
		now := time.Now()
		if now.Sub(f.checked) < f.recheck {
			return f.value, false, nil
		}
		f.checked = now
		if st, err := os.Stat(f.path); err == nil && sameFile(st, f.info) {
			return f.value, false, nil
		}
	}
	b, st, err := readSecretFile(f.path)
	if err != nil {
		f.refuse(err)
		if f.value != nil {
			return f.value, false, nil
		}
		return nil, false, err
	}
	f.refused = ""
	changed := !bytes.Equal(b, f.value)
	f.value, f.info, f.checked = b, stateOf(st), time.Now()
	return b, changed, nil
}

// lookAgain makes the next read look at the file.
func (f *secretFile) lookAgain() {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.checked = time.Time{}
}

// refuse reports a refused file once for each state it is found in.
func (f *secretFile) refuse(err error) {
	state := err.Error()
	if st, serr := os.Stat(f.path); serr == nil {
		state += fmt.Sprintf("|%v|%d|%d", st.Mode(), st.Size(), st.ModTime().UnixNano())
	}
	if state == f.refused {
		return
	}
	f.refused = state
	if f.hook != nil {
		f.hook(f.kind, f.path, err)
	}
}

// fileState is what tells the file a secret was read from, unchanged,
// from another or a changed one: its device and inode, size and
// modification time. The os.FileInfo it replaces held the whole stat
// record, 1 MB of live heap at 5000 apps with key files.
type fileState struct {
	dev, ino    uint64
	size, mtime int64
	// info is kept only where the system has no device and inode
	// (fileIdentity fails), for os.SameFile.
	info os.FileInfo
}

func stateOf(st os.FileInfo) fileState {
	s := fileState{size: st.Size(), mtime: st.ModTime().UnixNano()}
	var ok bool
	if s.dev, s.ino, ok = fileIdentity(st); !ok {
		s.info = st
	}
	return s
}

// sameFile reports whether st is the file last read, unchanged.
func sameFile(st os.FileInfo, last fileState) bool {
	now := stateOf(st)
	if now.size != last.size || now.mtime != last.mtime {
		return false
	}
	if last.info != nil || now.info != nil {
		return last.info != nil && now.info != nil && os.SameFile(st, last.info)
	}
	return now.dev == last.dev && now.ino == last.ino
}

// readSecretFile reads a secret: the file must be a regular file (after
// symbolic links) of at most maxSecretFile bytes, not empty once white
// space is trimmed. It is opened without blocking, so that a FIFO put in
// its place cannot hang the caller, and checked again once open, so that
// it cannot be swapped between the check and the read.
func readSecretFile(path string) ([]byte, os.FileInfo, error) {
	fd, st, err := config.OpenSecretFile(path)
	if err != nil {
		return nil, nil, err
	}
	defer fd.Close()
	if st.Size() > maxSecretFile {
		return nil, nil, fmt.Errorf("%s: larger than %d bytes", path, maxSecretFile)
	}
	b, err := io.ReadAll(io.LimitReader(fd, maxSecretFile+1))
	if err != nil {
		return nil, nil, fmt.Errorf("reading %s: %w", path, errors.Unwrap(err))
	}
	if len(b) > maxSecretFile {
		return nil, nil, fmt.Errorf("%s: larger than %d bytes", path, maxSecretFile)
	}
	b = bytes.TrimSpace(b)
	if len(b) == 0 {
		return nil, nil, fmt.Errorf("%s is empty", path)
	}
	return bytes.Clone(b), st, nil // without the spare capacity of the read
}

// FileToken is a ready-made access token kept in a file, read again when
// the file changes.
type FileToken struct{ f secretFile }

// NewFileToken returns a TokenSource reading path; hook (may be nil) is
// told when a changed file is refused.
func NewFileToken(path string, hook SecretFileHook) *FileToken {
	return &FileToken{f: newSecretFile(path, SecretToken, hook)}
}

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

// FileKey is an appKey kept in a file, read again when the file changes.
type FileKey struct{ f secretFile }

// NewFileKey returns a KeySource reading path; hook (may be nil) is told
// when a changed file is refused.
func NewFileKey(path string, hook SecretFileHook) *FileKey {
	return &FileKey{f: newSecretFile(path, SecretKey, hook)}
}

// Key implements KeySource.
func (k *FileKey) Key() ([]byte, bool, error) { return k.f.read() }

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
// means config.DefaultTokenTTL; a nil now means time.Now.
func NewJWTSource(appID string, key KeySource, ttl time.Duration, now func() time.Time) *JWTSource {
	if ttl <= 0 {
		ttl = time.Duration(config.DefaultTokenTTL)
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

// refusable is a token source told when the platform refused its
// credentials, so that it reads its file again before the next call.
type refusable interface{ refused() }

func (t *FileToken) refused() { t.f.lookAgain() }

func (s *JWTSource) refused() {
	if k, ok := s.key.(*FileKey); ok {
		k.f.lookAgain()
	}
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
