package client_test

import (
	"bytes"
	"context"
	"encoding/pem"
	"fmt"
	"net/http/httptest"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/duix-exporter/duix_exporter/client"
	"github.com/duix-exporter/duix_exporter/config"
	"github.com/duix-exporter/duix_exporter/simulator"
)

// counterValue reads one series of a counter from reg (0 when absent).
func counterValue(t *testing.T, reg *prometheus.Registry, name string, labels map[string]string) float64 {
	t.Helper()
	mfs, err := reg.Gather()
	require.NoError(t, err)
	for _, mf := range mfs {
		if mf.GetName() != name {
			continue
		}
	series:
		for _, m := range mf.GetMetric() {
			for _, lp := range m.GetLabel() {
				if labels[lp.GetName()] != lp.GetValue() {
					continue series
				}
			}
			return m.GetCounter().GetValue()
		}
	}
	return 0
}

// returnsWithin runs fn and fails the test if it has not returned after a
// bound no healthy call comes near: a read blocked on a FIFO never returns.
func returnsWithin(t *testing.T, fn func()) {
	t.Helper()
	done := make(chan struct{})
	go func() {
		defer close(done)
		fn()
	}()
	select {
	case <-done:
	case <-time.After(time.Minute):
		t.Fatal("the call blocked")
	}
}

// secretFileEnv is an app whose credential is a file, built the way the
// daemon builds it.
type secretFileEnv struct {
	sim    *simulator.Simulator
	reg    *prometheus.Registry
	c      *client.Client
	path   string
	kind   string
	key    string // the app's key on the simulator
	mu     sync.Mutex
	logged []string
	now    time.Time // the pool's clock
}

// later moves the pool's clock on by a minute: the file is looked at again.
func (e *secretFileEnv) later() {
	e.mu.Lock()
	defer e.mu.Unlock()
	e.now = e.now.Add(time.Minute)
}

func newSecretFileEnv(t *testing.T, kind string) *secretFileEnv {
	t.Helper()
	e := &secretFileEnv{sim: simulator.New(), reg: prometheus.NewRegistry(), kind: kind, key: appKey, now: time.Now()}
	e.sim.AddApp(simulator.App{ID: appID, Key: e.key, Allowance: 5})
	srv := httptest.NewServer(e.sim)
	t.Cleanup(srv.Close)
	dir := t.TempDir()
	e.path = filepath.Join(dir, "secret")
	field := "app_key_file"
	if kind == client.SecretToken {
		field = "token_file"
	}
	e.writeGood(t)
	cfg, err := config.Parse([]byte(fmt.Sprintf("api: {base_url: %q}\napps: [{name: a, app_id: %q, %s: secret}]\n",
		srv.URL+simulator.BasePath, appID, field)), dir)
	require.NoError(t, err)
	pool, err := client.NewPool(cfg, client.PoolOptions{
		Metrics: client.NewMetrics(e.reg),
		Now: func() time.Time {
			e.mu.Lock()
			defer e.mu.Unlock()
			return e.now
		},
		OnSecretFileError: func(kind, path string, err error) {
			e.mu.Lock()
			defer e.mu.Unlock()
			e.logged = append(e.logged, kind+" "+path+": "+err.Error())
		},
	})
	require.NoError(t, err)
	t.Cleanup(pool.Close)
	e.c = pool.Client("a")
	return e
}

// writeGood replaces the file with a good credential for the simulator's
// current key.
func (e *secretFileEnv) writeGood(t *testing.T) {
	t.Helper()
	content := e.key
	if e.kind == client.SecretToken {
		tok, err := simulator.MintToken(appID, content, time.Now(), time.Now().Add(time.Hour))
		require.NoError(t, err)
		content = tok
	}
	e.replace(t, func(p string) error { return os.WriteFile(p, []byte(content+"\n"), 0o600) })
}

// replace removes the file and lets make create something in its place.
func (e *secretFileEnv) replace(t *testing.T, make func(path string) error) {
	t.Helper()
	require.NoError(t, os.RemoveAll(e.path))
	require.NoError(t, make(e.path))
}

func (e *secretFileEnv) refusals(t *testing.T) float64 {
	return counterValue(t, e.reg, "duix_exporter_secret_file_errors_total", map[string]string{"kind": e.kind})
}

// rotateKey gives the app a new key on the simulator.
func (e *secretFileEnv) rotateKey(key string) {
	e.key = key
	e.sim.AddApp(simulator.App{ID: appID, Key: key, Allowance: 5})
}

func TestChangedSecretFilesAreReadAsCarefullyAsAtStart(t *testing.T) {
	big := strings.Repeat("k", 64<<10+1)
	bad := map[string]func(path string) error{
		"directory":        func(p string) error { return os.Mkdir(p, 0o700) },
		"fifo":             func(p string) error { return syscall.Mkfifo(p, 0o600) },
		"dangling symlink": func(p string) error { return os.Symlink(p+".nowhere", p) },
		"symlink to /dev/zero": func(p string) error {
			if _, err := os.Stat("/dev/zero"); err != nil {
				t.Skip("no /dev/zero")
			}
			return os.Symlink("/dev/zero", p)
		},
		"over 64 KiB": func(p string) error { return os.WriteFile(p, []byte(big), 0o600) },
		"empty":       func(p string) error { return os.WriteFile(p, []byte(" \n"), 0o600) },
		"gone":        func(string) error { return nil },
		"two lines":   func(p string) error { return os.WriteFile(p, []byte("line-one\r\nline-two\n"), 0o600) },
	}
	for _, kind := range []string{client.SecretKey, client.SecretToken} {
		for name, makeBad := range bad {
			t.Run(kind+"/"+name, func(t *testing.T) {
				e := newSecretFileEnv(t, kind)
				_, err := e.c.Concurrency(context.Background())
				require.NoError(t, err, "the good file is used")
				require.Zero(t, e.refusals(t))

				e.replace(t, makeBad)
				_, err = e.c.Concurrency(context.Background())
				require.NoError(t, err)
				require.Zero(t, e.refusals(t), "looked at once a minute, not on every call")
				for range 3 {
					e.later()
					returnsWithin(t, func() {
						_, err = e.c.Concurrency(context.Background())
					})
					assert.NoError(t, err, "the last good secret stays in use")
				}
				assert.Equal(t, 1.0, e.refusals(t), "counted once for the change")
				e.mu.Lock()
				require.Len(t, e.logged, 1)
				assert.Contains(t, e.logged[0], kind+" "+e.path+": ")
				e.mu.Unlock()

				// A good file again, for a new key: it is read and used.
				// The platform refuses the last good secret: the file
				// is read at once, before the minute is up.
				e.rotateKey("rotated-" + name)
				e.writeGood(t)
				_, err = e.c.Concurrency(context.Background())
				require.Equal(t, client.ReasonAuth, client.Reason(err), "the old secret is refused")
				_, err = e.c.Concurrency(context.Background())
				assert.NoError(t, err, "the restored file is read at once after the refusal")

				// And a bad file after that is counted again.
				e.replace(t, makeBad)
				e.later()
				_, err = e.c.Concurrency(context.Background())
				assert.NoError(t, err)
				assert.Equal(t, 2.0, e.refusals(t))
			})
		}
	}
}

func TestSecretFileErrorsSeriesExistFromTheStart(t *testing.T) {
	reg := prometheus.NewRegistry()
	client.NewMetrics(reg)
	n, err := reg.Gather()
	require.NoError(t, err)
	var kinds []string
	for _, mf := range n {
		if mf.GetName() == "duix_exporter_secret_file_errors_total" {
			for _, m := range mf.GetMetric() {
				kinds = append(kinds, m.GetLabel()[0].GetValue())
			}
		}
	}
	assert.ElementsMatch(t, []string{client.SecretKey, client.SecretToken, client.SecretHeader, client.SecretTLS}, kinds)
}

// docs/platform-api.md#secret-files: key files are looked at "at most once a
// minute", and read again "before the next call after the platform refused
// the credentials". After a refusal while the file is a refused (bad) one,
// the file must go back to being looked at once a minute.
func TestAfterARefusalABadFileIsLookedAtOnceAMinuteAgain(t *testing.T) {
	e := newSecretFileEnv(t, client.SecretKey)
	_, err := e.c.Concurrency(context.Background())
	require.NoError(t, err)

	e.replace(t, func(p string) error { return os.WriteFile(p, []byte(" \n"), 0o600) }) // empty: refused
	e.later()
	_, err = e.c.Concurrency(context.Background())
	require.NoError(t, err, "the last good key stays in use")
	require.Equal(t, 1.0, e.refusals(t))

	e.rotateKey("rotated") // the platform refuses the key in use once
	_, err = e.c.Concurrency(context.Background())
	require.Equal(t, client.ReasonAuth, client.Reason(err))
	e.rotateKey(appKey) // and accepts it again
	_, err = e.c.Concurrency(context.Background())
	require.NoError(t, err, "the call after the refusal read the file again (still bad) and minted anew")

	// Within the same minute, no refusal since: the file is not looked at.
	e.replace(t, func(p string) error { return os.Mkdir(p, 0o700) })
	for range 3 {
		_, err = e.c.Concurrency(context.Background())
		require.NoError(t, err)
	}
	assert.Equal(t, 1.0, e.refusals(t), "the file was looked at again within the minute, with no refusal since")
}

// A clock set back by minutes does not stop a file being looked at: the
// minute between looks is counted either way.
func TestAClockSetBackStillLooksAtTheFile(t *testing.T) {
	e := newSecretFileEnv(t, client.SecretKey)
	_, err := e.c.Concurrency(context.Background())
	require.NoError(t, err)
	e.replace(t, func(p string) error { return os.WriteFile(p, []byte(" \n"), 0o600) }) // empty: refused
	e.mu.Lock()
	e.now = e.now.Add(-2 * time.Minute)
	e.mu.Unlock()
	_, err = e.c.Concurrency(context.Background())
	require.NoError(t, err, "the last good key stays in use")
	assert.Equal(t, 1.0, e.refusals(t), "the file was looked at")
}

// badFiles make, in a file's place, what is refused instead of a secret
// file of at most limit bytes (a TLS file's limit: it may hold lines).
func badFiles(limit int) map[string]func(p string) error {
	bad := map[string]func(p string) error{
		"too large": func(p string) error { return os.WriteFile(p, bytes.Repeat([]byte("h"), limit+1), 0o600) },
		"empty":     func(p string) error { return os.WriteFile(p, []byte(" \n"), 0o600) },
		"/dev/zero": func(p string) error { return os.Symlink("/dev/zero", p) },
		"fifo":      func(p string) error { return syscall.Mkfifo(p, 0o600) },
		"directory": func(p string) error { return os.Mkdir(p, 0o700) },
		"gone":      func(string) error { return nil },
	}
	if limit < 4<<20 { // a value sent in a header: one line
		bad["two lines"] = func(p string) error { return os.WriteFile(p, []byte("good-0123\nsecond-line\n"), 0o600) }
		bad["a NUL byte"] = func(p string) error { return os.WriteFile(p, []byte("good\x000123\n"), 0o600) }
	}
	return bad
}

// poolWith builds, on the simulator's clock, the pool of one app against
// baseURL with the given http_client section (YAML flow style).
func poolWith(t *testing.T, baseURL, httpClient string) (*client.Pool, *prometheus.Registry, *simulator.Clock, error) {
	t.Helper()
	cfg, err := config.Parse([]byte(fmt.Sprintf("api: {base_url: %q, http_client: %s}\napps: [{name: a, app_id: %q, app_key: %q}]\n",
		baseURL+simulator.BasePath, httpClient, appID, appKey)), "")
	require.NoError(t, err)
	reg, clock := prometheus.NewRegistry(), simulator.NewClock(time.Now())
	var pool *client.Pool
	returnsWithin(t, func() {
		pool, err = client.NewPool(cfg, client.PoolOptions{Metrics: client.NewMetrics(reg), Now: clock.Now})
	})
	if err == nil {
		t.Cleanup(pool.Close)
	}
	return pool, reg, clock, err
}

// The files of http_headers and of tls_config are read as key files are
// (prometheus/common would read them with os.ReadFile on every request):
// swapped for what is not a regular file of at most 64 KiB (4 MiB for TLS),
// not empty, they are refused when next looked at (a minute later),
// counted, and the last good one stays in use; a FIFO cannot block the
// call. A changed good file is used. (The configuration refuses a bad
// header file at load and reload: TestHeaderFilesAreCheckedAtLoad, config.)
func TestHeaderAndTLSFilesAreReadAsKeyFilesAre(t *testing.T) {
	home := &recorder{sim: platformWithApp()}
	plain, tls := httptest.NewServer(home), httptest.NewTLSServer(platformWithApp())
	t.Cleanup(plain.Close)
	t.Cleanup(tls.Close)
	caPEM := pem.EncodeToMemory(&pem.Block{Type: "CERTIFICATE", Bytes: tls.Certificate().Raw})
	for _, tc := range []struct {
		kind, url, section, good string
		limit                    int
		lastGood                 func(t *testing.T) // after a call made with the last good file
		changed                  func(t *testing.T, file string, c *client.Client)
	}{{
		kind: client.SecretHeader, url: plain.URL, section: "{http_headers: {X-File: {files: [%q]}}}", good: "good-0123456789\n", limit: 64 << 10,
		lastGood: func(t *testing.T) {
			assert.Equal(t, []string{"good-0123456789"}, home.headers().Values("X-File"), "the last good value")
		},
		changed: func(t *testing.T, file string, c *client.Client) {
			require.NoError(t, os.WriteFile(file, []byte("new-0123456789\n"), 0o600))
			_, err := c.Concurrency(context.Background())
			require.NoError(t, err)
			assert.Equal(t, []string{"new-0123456789"}, home.headers().Values("X-File"))
		},
	}, {
		kind: client.SecretTLS, url: tls.URL, section: "{tls_config: {ca_file: %q}}", good: string(caPEM), limit: 4 << 20,
		lastGood: func(*testing.T) {},
		changed: func(t *testing.T, file string, c *client.Client) {
			require.NoError(t, os.WriteFile(file, []byte("no certificate\n"), 0o600))
			_, err := c.Concurrency(context.Background())
			assert.Equal(t, client.ReasonNetwork, client.Reason(err), "the changed file is used")
		},
	}} {
		for name, mk := range badFiles(tc.limit) {
			t.Run(tc.kind+"/"+name, func(t *testing.T) {
				file := filepath.Join(t.TempDir(), "file")
				require.NoError(t, os.WriteFile(file, []byte(tc.good), 0o600))
				pool, reg, clock, err := poolWith(t, tc.url, fmt.Sprintf(tc.section, file))
				require.NoError(t, err)
				_, err = pool.Client("a").Concurrency(context.Background())
				require.NoError(t, err)

				require.NoError(t, os.RemoveAll(file))
				require.NoError(t, mk(file))
				clock.Add(time.Minute)
				for range 2 {
					home.reset()
					returnsWithin(t, func() { _, err = pool.Client("a").Concurrency(context.Background()) })
					require.NoError(t, err)
					tc.lastGood(t)
				}
				assert.Equal(t, 1.0, counterValue(t, reg, "duix_exporter_secret_file_errors_total", map[string]string{"kind": tc.kind}))

				require.NoError(t, os.RemoveAll(file))
				clock.Add(time.Minute)
				home.reset()
				tc.changed(t, file, pool.Client("a"))
			})
		}
	}
}

// The files of tls_config are read as the pool is built (by --config.check,
// the start and a reload): one that is not good is refused at once, a FIFO
// cannot block, and a CA bundle over 64 KiB is fine.
func TestTLSFilesAreCheckedWhenThePoolIsBuilt(t *testing.T) {
	srv := httptest.NewTLSServer(platformWithApp())
	t.Cleanup(srv.Close)
	caPEM := pem.EncodeToMemory(&pem.Block{Type: "CERTIFICATE", Bytes: srv.Certificate().Raw})
	for name, mk := range badFiles(4 << 20) {
		for field, tls := range map[string]string{"ca_file": "ca_file: %[1]q", "cert_file": "cert_file: %q, key_file: %q", "key_file": "cert_file: %[2]q, key_file: %[1]q"} {
			t.Run(name+"/"+field, func(t *testing.T) {
				bad, good := filepath.Join(t.TempDir(), "bad"), filepath.Join(t.TempDir(), "good")
				require.NoError(t, mk(bad))
				require.NoError(t, os.WriteFile(good, caPEM, 0o600))
				_, reg, _, err := poolWith(t, srv.URL, "{tls_config: {"+fmt.Sprintf(tls, bad, good)+"}}")
				require.Error(t, err)
				if name == "gone" { // no file by that name: a secret pasted for it is not printed
					assert.Contains(t, err.Error(), "no such file or directory (the path is not printed")
				} else {
					assert.Contains(t, err.Error(), bad)
				}
				assert.Zero(t, counterValue(t, reg, "duix_exporter_secret_file_errors_total", map[string]string{"kind": "tls"}),
					"the configuration failed: no changed file was refused, nothing last good is kept")
			})
		}
	}
	bundle := filepath.Join(t.TempDir(), "bundle.pem")
	require.NoError(t, os.WriteFile(bundle, bytes.Repeat(caPEM, 64<<10/len(caPEM)+1), 0o600))
	_, _, _, err := poolWith(t, srv.URL, fmt.Sprintf("{tls_config: {ca_file: %q}}", bundle))
	assert.NoError(t, err, "a CA bundle over 64 KiB")
}

// A pool reads its key and token files when it is built, as the
// configuration was just validated; one that replaces another (a reload)
// keeps the other's last good value should a file no longer be good then
// (being rewritten, empty).
func TestANewPoolKeepsTheLastGoodSecretsOfThePoolItReplaces(t *testing.T) {
	srv := httptest.NewServer(platformWithApp())
	t.Cleanup(srv.Close)
	dir := t.TempDir()
	key := filepath.Join(dir, "key")
	require.NoError(t, os.WriteFile(key, []byte(appKey+"\n"), 0o600))
	cfg, err := config.Parse([]byte(fmt.Sprintf("api: {base_url: %q}\napps: [{name: a, app_id: %q, app_key_file: key}]\n", srv.URL+simulator.BasePath, appID)), dir)
	require.NoError(t, err)
	pool := func(prev *client.Pool) *client.Pool {
		p, err := client.NewPool(cfg, client.PoolOptions{Previous: prev})
		require.NoError(t, err)
		t.Cleanup(p.Close)
		return p
	}
	old := pool(nil)
	require.NoError(t, os.WriteFile(key, nil, 0o600)) // read by the pool already: the last good value
	_, err = old.Client("a").Concurrency(context.Background())
	require.NoError(t, err)

	reloaded, fresh := pool(old), pool(nil)
	_, err = reloaded.Client("a").Concurrency(context.Background())
	assert.NoError(t, err, "the last good key stays in use")
	_, err = fresh.Client("a").Concurrency(context.Background())
	assert.Equal(t, client.ReasonAuth, client.Reason(err), "a pool with no previous one has no last good value")
}

// A reload that gives the app another app_id, whose key was written to the
// same file, signs with that key, not with the last good one of the old
// app, even when the file is rewritten just after.
func TestANewPoolReadsTheKeyTheReloadValidated(t *testing.T) {
	const otherID, otherKey = "1790000000000000777", "KEY-of-the-other-app"
	sim := platformWithApp()
	sim.AddApp(simulator.App{ID: otherID, Key: otherKey, Allowance: 3})
	srv := httptest.NewServer(sim)
	t.Cleanup(srv.Close)
	dir := t.TempDir()
	key := filepath.Join(dir, "key")
	parse := func(id, content string) *config.Config {
		require.NoError(t, os.WriteFile(key, []byte(content), 0o600))
		cfg, err := config.Parse([]byte(fmt.Sprintf("api: {base_url: %q}\napps: [{name: a, app_id: %q, app_key_file: key}]\n", srv.URL+simulator.BasePath, id)), dir)
		require.NoError(t, err)
		return cfg
	}
	old, err := client.NewPool(parse(appID, appKey), client.PoolOptions{})
	require.NoError(t, err)
	t.Cleanup(old.Close)
	_, err = old.Client("a").Concurrency(context.Background())
	require.NoError(t, err)

	reloaded, err := client.NewPool(parse(otherID, otherKey), client.PoolOptions{Previous: old})
	require.NoError(t, err)
	t.Cleanup(reloaded.Close)
	require.NoError(t, os.WriteFile(key, nil, 0o600))
	_, err = reloaded.Client("a").Concurrency(context.Background())
	assert.NoError(t, err)
}

// One header file under two names is read, sent under both, and a refusal
// of it counted once.
func TestAHeaderFileUnderTwoNamesIsCountedOnce(t *testing.T) {
	home := &recorder{sim: platformWithApp()}
	srv := httptest.NewServer(home)
	t.Cleanup(srv.Close)
	file := filepath.Join(t.TempDir(), "h")
	require.NoError(t, os.WriteFile(file, []byte("gw\n"), 0o600))
	cfg, err := config.Parse([]byte(fmt.Sprintf("api:\n  base_url: %s%s\n  http_client: {http_headers: {X-Gw: {files: [%q]}, X-Gw-Copy: {files: [%q]}}}\napps: [{name: a, app_id: %q, app_key: %q}]\n",
		srv.URL, simulator.BasePath, file, file, appID, appKey)), "")
	require.NoError(t, err)
	reg, clock := prometheus.NewRegistry(), simulator.NewClock(time.Now())
	pool, err := client.NewPool(cfg, client.PoolOptions{Metrics: client.NewMetrics(reg), Now: clock.Now})
	require.NoError(t, err)
	t.Cleanup(pool.Close)
	require.NoError(t, os.WriteFile(file, nil, 0o600))
	clock.Add(time.Minute)
	_, err = pool.Client("a").Concurrency(context.Background())
	require.NoError(t, err)
	assert.Equal(t, []string{"gw"}, home.headers().Values("X-Gw"))
	assert.Equal(t, []string{"gw"}, home.headers().Values("X-Gw-Copy"))
	assert.Equal(t, 1.0, counterValue(t, reg, "duix_exporter_secret_file_errors_total", map[string]string{"kind": client.SecretHeader}))
}

// A reload that keeps an app's token source reads its key file again: a
// key rotated in the file and at the platform is used at the reload's
// first call, not after a refusal of the token minted from the old one.
func TestAReloadMintsFromTheKeyItRead(t *testing.T) {
	sim := platformWithApp()
	srv := httptest.NewServer(sim)
	t.Cleanup(srv.Close)
	dir := t.TempDir()
	key := filepath.Join(dir, "key")
	pool := func(content string, prev *client.Pool) *client.Pool {
		require.NoError(t, os.WriteFile(key, []byte(content), 0o600))
		cfg, err := config.Parse([]byte(fmt.Sprintf("api: {base_url: %q}\napps: [{name: a, app_id: %q, app_key_file: key}]\n", srv.URL+simulator.BasePath, appID)), dir)
		require.NoError(t, err)
		p, err := client.NewPool(cfg, client.PoolOptions{Previous: prev})
		require.NoError(t, err)
		t.Cleanup(p.Close)
		return p
	}
	old := pool(appKey, nil)
	_, err := old.Client("a").Concurrency(context.Background())
	require.NoError(t, err)

	sim.AddApp(simulator.App{ID: appID, Key: "rotated-key", Allowance: 3})
	reloaded := pool("rotated-key", old)
	_, err = reloaded.Client("a").Concurrency(context.Background())
	assert.NoError(t, err)
}

// An inline app key or token is trimmed as a file's content is: YAML's
// block scalars end with a line break, which no header can carry.
func TestInlineCredentialsAreTrimmed(t *testing.T) {
	srv := httptest.NewServer(platformWithApp())
	t.Cleanup(srv.Close)
	tok, err := simulator.MintToken(appID, appKey, time.Now(), time.Now().Add(time.Hour))
	require.NoError(t, err)
	for _, app := range []string{fmt.Sprintf("app_key: |\n      %s\n", appKey), fmt.Sprintf("token: %q", " "+tok+"\n")} {
		cfg, err := config.Parse([]byte(fmt.Sprintf("api: {base_url: %q}\napps:\n  - name: a\n    app_id: %q\n    %s\n", srv.URL+simulator.BasePath, appID, app)), "")
		require.NoError(t, err, app)
		pool, err := client.NewPool(cfg, client.PoolOptions{})
		require.NoError(t, err)
		t.Cleanup(pool.Close)
		_, err = pool.Client("a").Concurrency(context.Background())
		assert.NoError(t, err, app)
	}
}

// A key or token file that begins with a byte order mark (as some editors
// write) is read without it: the mark is no part of the secret.
func TestAByteOrderMarkIsNoPartOfASecret(t *testing.T) {
	srv := httptest.NewServer(platformWithApp())
	t.Cleanup(srv.Close)
	dir := t.TempDir()
	require.NoError(t, os.WriteFile(filepath.Join(dir, "key"), []byte("\uFEFF"+appKey+"\r\n"), 0o600))
	cfg, err := config.Parse([]byte(fmt.Sprintf("api: {base_url: %q}\napps: [{name: a, app_id: %q, app_key_file: key}]\n", srv.URL+simulator.BasePath, appID)), dir)
	require.NoError(t, err)
	pool, err := client.NewPool(cfg, client.PoolOptions{})
	require.NoError(t, err)
	t.Cleanup(pool.Close)
	_, err = pool.Client("a").Concurrency(context.Background())
	assert.NoError(t, err)
}
