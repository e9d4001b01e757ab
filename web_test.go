package main

import (
	"bufio"
	"context"
	"crypto/ecdsa"
	"crypto/elliptic"
	"crypto/rand"
	"crypto/tls"
	"crypto/x509"
	"crypto/x509/pkix"
	"encoding/pem"
	"errors"
	"fmt"
	"io"
	"math/big"
	"net"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"golang.org/x/crypto/bcrypt"

	"github.com/duix-exporter/duix_exporter/internal/platformtest"
	"github.com/duix-exporter/duix_exporter/simulator"
	"github.com/duix-exporter/duix_exporter/web"
)

// The exporter's own endpoints, driven through the binary: TLS and basic
// auth from --web.config.file, the bounds on requests, the server
// timeouts and the graceful shutdown.

// selfSigned writes a certificate for 127.0.0.1 and localhost and its key
// to dir and returns their paths and a pool trusting the certificate.
func selfSigned(t *testing.T, dir string) (certFile, keyFile string, pool *x509.CertPool) {
	t.Helper()
	key, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	require.NoError(t, err)
	tmpl := &x509.Certificate{
		SerialNumber:          big.NewInt(time.Now().UnixNano()),
		Subject:               pkix.Name{CommonName: "duix_exporter test"},
		NotBefore:             time.Now().Add(-time.Hour),
		NotAfter:              time.Now().Add(time.Hour),
		KeyUsage:              x509.KeyUsageDigitalSignature | x509.KeyUsageCertSign,
		ExtKeyUsage:           []x509.ExtKeyUsage{x509.ExtKeyUsageServerAuth},
		BasicConstraintsValid: true,
		IsCA:                  true,
		IPAddresses:           []net.IP{net.ParseIP("127.0.0.1")},
		DNSNames:              []string{"localhost"},
	}
	der, err := x509.CreateCertificate(rand.Reader, tmpl, tmpl, &key.PublicKey, key)
	require.NoError(t, err)
	cert, err := x509.ParseCertificate(der)
	require.NoError(t, err)
	keyDER, err := x509.MarshalECPrivateKey(key)
	require.NoError(t, err)
	certFile, keyFile = filepath.Join(dir, "cert.pem"), filepath.Join(dir, "key.pem")
	require.NoError(t, os.WriteFile(certFile, pem.EncodeToMemory(&pem.Block{Type: "CERTIFICATE", Bytes: der}), 0o600))
	require.NoError(t, os.WriteFile(keyFile, pem.EncodeToMemory(&pem.Block{Type: "EC PRIVATE KEY", Bytes: keyDER}), 0o600))
	pool = x509.NewCertPool()
	pool.AddCert(cert)
	return certFile, keyFile, pool
}

func TestWebConfigTLSAndBasicAuth(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	certFile, keyFile, pool := selfSigned(t, dir)
	const user, password = "prometheus", "web-test-password-3f9a"
	hash, err := bcrypt.GenerateFromPassword([]byte(password), bcrypt.MinCost)
	require.NoError(t, err)
	webConfig := filepath.Join(dir, "web.yml")
	require.NoError(t, os.WriteFile(webConfig, []byte(fmt.Sprintf(
		"tls_server_config:\n  cert_file: %s\n  key_file: %s\nbasic_auth_users:\n  %s: %s\n",
		certFile, keyFile, user, hash)), 0o600))

	trusting := &http.Client{Timeout: hangTimeout, Transport: &http.Transport{TLSClientConfig: &tls.Config{RootCAs: pool, MinVersion: tls.VersionTLS12}}}
	defer trusting.CloseIdleConnections()
	get := func(p *process, path string, auth bool, pw string) (int, http.Header, string, error) {
		req, err := http.NewRequest(http.MethodGet, strings.Replace(p.url, "http://", "https://", 1)+path, nil)
		require.NoError(t, err)
		if auth {
			req.SetBasicAuth(user, pw)
		}
		resp, err := trusting.Do(req)
		if err != nil {
			return 0, nil, "", err
		}
		defer resp.Body.Close()
		b, err := io.ReadAll(resp.Body)
		return resp.StatusCode, resp.Header, string(b), err
	}
	janitor := platformtest.FreeAddr(t) // the janitor's listener has the same TLS and basic auth
	webhook := func(scheme string, auth bool) (int, error) {
		req, err := http.NewRequest(http.MethodPost, scheme+"://"+janitor+"/webhook", strings.NewReader("{}"))
		require.NoError(t, err)
		if auth {
			req.SetBasicAuth(user, password)
		}
		resp, err := trusting.Do(req)
		if err != nil {
			return 0, err
		}
		resp.Body.Close()
		return resp.StatusCode, nil
	}
	p := launch(t, func(p *process) bool {
		code, _, _, err := get(p, "/-/ready", true, password)
		_, jerr := webhook("https", false)
		return err == nil && code == http.StatusOK && jerr == nil
	}, "--demo", "--web.config.file="+webConfig, "--janitor.listen-address="+janitor)
	for scheme, want := range map[string]int{"https": http.StatusUnauthorized, "http": http.StatusBadRequest} {
		code, err := webhook(scheme, false)
		require.NoError(t, err)
		assert.Equal(t, want, code, "the janitor's webhook over %s without credentials", scheme)
	}
	jcode, err := webhook("https", true)
	require.NoError(t, err)
	assert.Equal(t, http.StatusBadRequest, jcode, "with credentials, the payload is read (and refused)")

	// The right credentials over TLS.
	code, _, body, err := get(p, "/metrics", true, password)
	require.NoError(t, err)
	assert.Equal(t, http.StatusOK, code)
	assert.Contains(t, body, `duix_up{app="support-desk"} 1`)
	code, _, body, err = get(p, "/probe?app=museum-guide", true, password)
	require.NoError(t, err)
	assert.Equal(t, http.StatusOK, code)
	assert.Contains(t, body, `duix_up{app="museum-guide"}`)

	// No credentials, or wrong ones: 401 everywhere, nothing served.
	for _, path := range []string{"/metrics", "/probe?app=museum-guide", "/", "/-/healthy"} {
		code, hdr, body, err := get(p, path, false, "")
		require.NoError(t, err)
		assert.Equal(t, http.StatusUnauthorized, code, path)
		assert.Contains(t, hdr.Get("WWW-Authenticate"), "Basic", path)
		assert.NotContains(t, body, "duix_", path)
		code, _, body, err = get(p, path, true, password+"x")
		require.NoError(t, err)
		assert.Equal(t, http.StatusUnauthorized, code, path+" with a wrong password")
		assert.NotContains(t, body, "duix_", path)
	}
	resp, err := http.Post(strings.Replace(p.url, "http://", "https://", 1)+"/-/reload", "", nil)
	if err == nil { // the default client does not trust the certificate
		resp.Body.Close()
		t.Errorf("an untrusted certificate was accepted")
	}

	// Plain HTTP is refused: the TLS listener answers 400 and serves
	// nothing.
	plain, err := http.Get(p.url + "/metrics")
	require.NoError(t, err)
	b, _ := io.ReadAll(plain.Body)
	plain.Body.Close()
	assert.Equal(t, http.StatusBadRequest, plain.StatusCode)
	assert.NotContains(t, string(b), "duix_")

	// /probe accepts configured names only.
	for _, q := range []string{"?app=unknown-app", "?app=", "", "?app=support-desk&app=sales-avatar", "?target=https://example.com"} {
		code, _, body, err := get(p, "/probe"+q, true, password)
		require.NoError(t, err)
		assert.Equal(t, http.StatusBadRequest, code, q)
		assert.NotContains(t, body, "duix_up", q)
	}
	assert.NotContains(t, p.Out.String(), password)
	assert.NotContains(t, p.Out.String(), string(hash))
}

func readyPlain(p *process) bool {
	resp, err := http.Get(p.url + "/-/ready")
	if err != nil {
		return false
	}
	resp.Body.Close()
	return resp.StatusCode == http.StatusOK
}

func TestRequestLimits(t *testing.T) {
	t.Parallel()
	p := launch(t, readyPlain, "--demo")
	addr := strings.TrimPrefix(p.url, "http://")
	// dial connects to the exporter, closes the connection when the test
	// ends and gives up on it after bound (to detect a hang only).
	dial := func(t *testing.T, bound time.Duration) net.Conn {
		conn, err := net.Dial("tcp", addr)
		require.NoError(t, err)
		t.Cleanup(func() { conn.Close() })
		require.NoError(t, conn.SetDeadline(time.Now().Add(bound)))
		return conn
	}

	t.Run("a 1 MiB header gets 431", func(t *testing.T) {
		t.Parallel()
		conn := dial(t, hangTimeout)
		go func() {
			// The server answers before it has read all of this, and
			// hangs up: the write may fail.
			_, _ = fmt.Fprintf(conn, "GET /metrics HTTP/1.1\r\nHost: %s\r\nX-Big: %s\r\n\r\n", addr, strings.Repeat("a", 1<<20))
		}()
		resp, err := http.ReadResponse(bufio.NewReader(conn), nil)
		require.NoError(t, err)
		resp.Body.Close()
		assert.Equal(t, http.StatusRequestHeaderFieldsTooLarge, resp.StatusCode)
	})

	t.Run("a body is not read", func(t *testing.T) {
		t.Parallel()
		conn := dial(t, hangTimeout)
		const size = 256 << 20
		type written struct {
			n   int64
			err error
		}
		sent := make(chan written, 1)
		go func() {
			w := bufio.NewWriter(conn)
			fmt.Fprintf(w, "POST /-/reload HTTP/1.1\r\nHost: %s\r\nContent-Length: %d\r\n\r\n", addr, size)
			n, err := io.CopyN(w, zeros{}, size)
			if err == nil {
				err = w.Flush()
			}
			sent <- written{n, err}
		}()
		resp, err := http.ReadResponse(bufio.NewReader(conn), nil)
		require.NoError(t, err)
		resp.Body.Close()
		assert.Equal(t, http.StatusOK, resp.StatusCode)
		// The server hangs up instead of reading the rest: the writer
		// stops, whatever the speed, once the socket buffers (a few MiB)
		// are full, and fails when the server closes (not at our
		// deadline, which only detects a server that never hangs up).
		w := <-sent
		require.Error(t, w.err, "the server read all %d bytes", size)
		var ne net.Error
		require.False(t, errors.As(w.err, &ne) && ne.Timeout(), "the server neither read the body nor hung up: %v", w.err)
		assert.Less(t, w.n, int64(64<<20), "bytes the server accepted")
	})

	// A body is not read, nor waited for: net/http would read one of under
	// 256 KiB before the answer and after it, with no deadline, so that a
	// client announcing a body it never sent held its scrape slot (and the
	// answer's memory) for as long as it kept the connection.
	t.Run("a body that never comes holds nothing", func(t *testing.T) {
		t.Parallel()
		for _, req := range []string{
			"GET /metrics HTTP/1.1\r\nHost: %s\r\nContent-Length: 1000\r\n\r\n",
			"GET /metrics HTTP/1.1\r\nHost: %s\r\nTransfer-Encoding: chunked\r\n\r\n",
			"GET /probe?app=support-desk HTTP/1.1\r\nHost: %s\r\nContent-Length: 1\r\n\r\n",
			"GET / HTTP/1.1\r\nHost: %s\r\nContent-Length: 10\r\n\r\n",
			"POST /-/reload HTTP/1.1\r\nHost: %s\r\nContent-Length: 10\r\n\r\n",
		} {
			conn := dial(t, hangTimeout)
			_, err := fmt.Fprintf(conn, req, addr)
			require.NoError(t, err)
			br := bufio.NewReader(conn)
			resp, err := http.ReadResponse(br, nil)
			require.NoError(t, err, "no answer (our deadline): %q", req)
			_, err = io.ReadAll(resp.Body)
			resp.Body.Close()
			require.NoError(t, err, req)
			assert.Equal(t, http.StatusOK, resp.StatusCode, req)
			assert.True(t, resp.Close, "the answer says the connection ends: %q", req)
			_, err = br.ReadByte() // io.EOF (or a reset), not our deadline: the server closed the connection
			var ne net.Error
			assert.False(t, err == nil || errors.As(err, &ne) && ne.Timeout(), "the server kept the connection: %q: %v", req, err)
		}
	})

	t.Run("headers that never end are cut off", func(t *testing.T) {
		t.Parallel()
		headersNeverEnd(t, dial(t, web.ReadHeaderTimeout+hangTimeout), addr)
	})
}

// headersNeverEnd starts a request on conn and sends header lines, never the
// empty line that ends them, until the server hangs up: its ReadHeaderTimeout
// cuts the client off, and conn's deadline, far beyond it, only detects a
// server that does not.
func headersNeverEnd(t *testing.T, conn net.Conn, host string) {
	t.Helper()
	_, err := fmt.Fprintf(conn, "GET /metrics HTTP/1.1\r\nHost: %s\r\n", host)
	require.NoError(t, err)
	closed := make(chan error, 1)
	go func() {
		_, err := io.ReadAll(conn) // nil at EOF
		closed <- err
	}()
	tick := time.NewTicker(500 * time.Millisecond)
	defer tick.Stop()
	for i := 0; ; i++ {
		select {
		case err := <-closed:
			// Closed by the server (EOF, or a reset after our last writes), not by our deadline.
			var ne net.Error
			require.False(t, errors.As(err, &ne) && ne.Timeout(), "the server kept the connection: %v", err)
			return
		case <-tick.C:
			_, _ = fmt.Fprintf(conn, "X-Drip-%d: x\r\n", i) // once the server has closed, writes may fail
		}
	}
}

// With TLS, HTTP/2 is offered, whose server does not bound a request's
// headers (docs/configuration.md); http_server_config's http2: false, the
// documented switch, leaves HTTP/1.1 alone, and its 10 s bound on headers.
func TestHTTP2CanBeTurnedOffForTheHeaderBound(t *testing.T) {
	t.Parallel()
	for _, http2 := range []bool{true, false} {
		t.Run(fmt.Sprintf("http2=%v", http2), func(t *testing.T) {
			t.Parallel()
			dir := t.TempDir()
			certFile, keyFile, pool := selfSigned(t, dir)
			webConfig := filepath.Join(dir, "web.yml")
			require.NoError(t, os.WriteFile(webConfig, []byte(fmt.Sprintf(
				"tls_server_config: {cert_file: %s, key_file: %s}\nhttp_server_config: {http2: %v}\n", certFile, keyFile, http2)), 0o600))
			tlsConfig := &tls.Config{RootCAs: pool, MinVersion: tls.VersionTLS12, NextProtos: []string{"h2", "http/1.1"}}
			dial := func(p *process) (*tls.Conn, error) {
				return tls.DialWithDialer(&net.Dialer{Timeout: hangTimeout}, "tcp", strings.TrimPrefix(p.url, "http://"), tlsConfig)
			}
			p := launch(t, func(p *process) bool {
				conn, err := dial(p)
				if err == nil {
					conn.Close()
				}
				return err == nil
			}, "--demo", "--web.config.file="+webConfig)
			conn, err := dial(p)
			require.NoError(t, err)
			t.Cleanup(func() { conn.Close() })
			if http2 {
				assert.Equal(t, "h2", conn.ConnectionState().NegotiatedProtocol, "HTTP/2 is on by default")
				return
			}
			require.Equal(t, "http/1.1", conn.ConnectionState().NegotiatedProtocol)
			require.NoError(t, conn.SetDeadline(time.Now().Add(web.ReadHeaderTimeout+hangTimeout)))
			headersNeverEnd(t, conn, "127.0.0.1")
		})
	}
}

type zeros struct{}

func (zeros) Read(p []byte) (int, error) {
	clear(p)
	return len(p), nil
}

// scrape gets /metrics with the headers given as name, value pairs: its
// status and body, or the error that cut it off.
func (p *process) scrape(ctx context.Context, header ...string) (int, string, error) {
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, p.url+"/metrics", nil)
	if err != nil {
		return 0, "", err
	}
	for i := 0; i+1 < len(header); i += 2 {
		req.Header.Set(header[i], header[i+1])
	}
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		return 0, "", err
	}
	defer resp.Body.Close()
	b, err := io.ReadAll(resp.Body)
	return resp.StatusCode, string(b), err
}

// slowPlatform serves one app, slow, that answers after latency, and writes
// the configuration of it; the platform stops with the test.
func slowPlatform(t *testing.T, latency time.Duration) (*simulator.Simulator, string) {
	sim := simulator.New()
	sim.AddApp(simulator.App{ID: "1", Key: "web-test-key-0001", Allowance: 1})
	sim.SetLatency("", "", latency)
	base, closeSim, err := sim.Listen("127.0.0.1:0")
	require.NoError(t, err)
	t.Cleanup(closeSim)
	cfg := filepath.Join(t.TempDir(), "duix.yml")
	require.NoError(t, os.WriteFile(cfg, []byte(fmt.Sprintf(
		"api: {base_url: %q, timeout: 1h}\napps: [{name: slow, app_id: '1', app_key: web-test-key-0001}]\n", base)), 0o600))
	return sim, cfg
}

// --web.max-requests and --scrape.timeout-offset reach the handler: with a
// scrape waiting on a platform that never answers, the next one gets 503;
// a scrape timeout that the offset leaves too short gets 400.
func TestScrapeFlagsReachTheHandler(t *testing.T) {
	t.Parallel()
	sim, cfg := slowPlatform(t, time.Hour)
	p := launch(t, readyPlain, "--config.file="+cfg, "--web.max-requests=1", "--scrape.timeout-offset=2s")
	scrape := func(ctx context.Context, timeout string) (int, string) {
		code, body, _ := p.scrape(ctx, "X-Prometheus-Scrape-Timeout-Seconds", timeout)
		return code, body
	}
	code, body := scrape(context.Background(), "2.05")
	assert.Equal(t, http.StatusBadRequest, code)
	assert.Contains(t, body, "scrape timeout too short")
	assert.Zero(t, sim.Requests(simulator.EndpointConcurrency), "no call for a scrape refused")

	ctx, cancel := context.WithCancel(context.Background())
	waiting := make(chan struct{})
	go func() {
		defer close(waiting)
		scrape(ctx, "3600")
	}()
	defer func() { cancel(); <-waiting }() // the client leaves: its scrape ends
	require.Eventually(t, func() bool { return sim.Requests(simulator.EndpointConcurrency) > 0 }, hangTimeout, 20*time.Millisecond)
	code, body = scrape(context.Background(), "10")
	assert.Equal(t, http.StatusServiceUnavailable, code)
	assert.Contains(t, body, "Limit of concurrent scrapes reached (1)")
}

// The bound on a graceful shutdown: a scrape that never ends (its platform
// never answers, within an hour) does not keep the process alive. Whatever
// the machine's speed, the graceful shutdown cannot finish, so it must
// time out, and the process then exits. The test's own wait only detects
// a hang.
func TestSIGTERMStopsWithinTheBound(t *testing.T) {
	t.Parallel()
	// A platform that never answers, and a scrape waiting on it.
	sim, cfg := slowPlatform(t, time.Hour)
	p := launch(t, readyPlain, "--config.file="+cfg)

	scrape := make(chan error, 1)
	go func() {
		_, _, err := p.scrape(context.Background())
		scrape <- err
	}()
	require.Eventually(t, func() bool { return sim.Requests(simulator.EndpointConcurrency) > 0 }, hangTimeout, 20*time.Millisecond)

	start := time.Now()
	bound := web.ShutdownTimeout + hangTimeout
	require.NoError(t, p.Stop(bound), "exit status 0 after SIGTERM (killed if still running after %s):\n%s", bound, p.Out.String())
	t.Logf("stopped %s after SIGTERM with a scrape in flight (bound %s)", time.Since(start).Round(10*time.Millisecond), web.ShutdownTimeout)
	select {
	case err := <-scrape:
		// The process is gone: the scrape was cut off (an error, or an
		// answer cut short), not answered.
		assert.Error(t, err, "the in-flight scrape was cut off")
	case <-time.After(hangTimeout):
		t.Error("the in-flight scrape did not end with the process")
	}
	logs := p.Out.String()
	assert.Contains(t, logs, "Shutting down")
	assert.Contains(t, logs, "Graceful shutdown timed out", "the bound ended the shutdown, not the scrape")
}

// A listener that cannot start, the main one or the janitor's, ends the
// process with 1 and says why: the exporter never runs without one of them.
func TestAListenerThatCannotStartEndsTheProcess(t *testing.T) {
	t.Parallel()
	taken, err := net.Listen("tcp", "127.0.0.1:0")
	require.NoError(t, err)
	defer taken.Close()
	for name, flags := range map[string][]string{
		"metrics": {"--web.listen-address=" + taken.Addr().String()},
		"janitor": {"--web.listen-address=" + platformtest.FreeAddr(t), "--janitor.listen-address=" + taken.Addr().String()},
	} {
		ctx, cancel := context.WithTimeout(context.Background(), hangTimeout)
		out, err := exec.CommandContext(ctx, binary, append(flags, "--demo")...).CombinedOutput()
		cancel()
		var ee *exec.ExitError
		require.ErrorAs(t, err, &ee, "%s: %s", name, out)
		assert.Equal(t, 1, ee.ExitCode(), name)
		assert.Contains(t, string(out), "HTTP server failed", name)
		assert.Contains(t, string(out), "address already in use", name)
	}
}

// A SIGTERM lets a scrape in flight end and be answered, within the bound.
func TestSIGTERMLetsAScrapeInFlightEnd(t *testing.T) {
	t.Parallel()
	sim, cfg := slowPlatform(t, time.Second)
	p := launch(t, readyPlain, "--config.file="+cfg)
	type answer struct {
		code int
		body string
		err  error
	}
	scrape := make(chan answer, 1)
	go func() {
		code, body, err := p.scrape(context.Background())
		scrape <- answer{code, body, err}
	}()
	require.Eventually(t, func() bool { return sim.Requests(simulator.EndpointConcurrency) > 0 }, hangTimeout, 5*time.Millisecond)
	require.NoError(t, p.Stop(web.ShutdownTimeout+hangTimeout), "exit status 0 after SIGTERM:\n%s", p.Out.String())
	a := <-scrape
	require.NoError(t, a.err, "the scrape in flight was cut off")
	assert.Equal(t, http.StatusOK, a.code)
	assert.Contains(t, a.body, `duix_up{app="slow"} 1`)
	assert.NotContains(t, p.Out.String(), "Graceful shutdown timed out")
}
