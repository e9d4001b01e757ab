package main

import (
	"encoding/base64"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"net/url"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"sort"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"syscall"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/duix-exporter/duix_exporter/internal/platformtest"
	"github.com/duix-exporter/duix_exporter/simulator"
)

// Secret hygiene: one test drives every path of the binary with
// recognisable app keys and tokens (each fault of the platform, bad
// configurations, reloads by SIGHUP and /-/reload, debug logging, the
// landing page, /probe, --config.check and the operator commands), keeps
// everything the binary printed, logged or answered, and requires that no
// key, no configured token and no token the exporter minted (captured as
// the platform received them) appears in any of it, nor anything shaped
// like a JWT.

// Recognisable secrets. Each app of the configuration uses another kind of
// credential.
const (
	secInlineKey  = "SECRETKEY-inline-7f3a9c1e5d"
	secFileKey    = "SECRETKEY-file-2b8d4e6f0a"
	secStaticKey  = "SECRETKEY-static-9e8d7c6b5a" // signs the ready-made tokens; never configured
	secBadToken   = "SECRETTOKEN-not-a-jwt-5d1c3b"
	secBasicPass  = "SECRETPASS-in-base-url-4e2f"
	secHTTPBearer = "SECRETBEARER-http-client-8a7b"
	secProxyPass  = "SECRETPROXY-password-3c9d" // of proxy_url: every call goes through the platform as a proxy
	secGateway    = "SECRETHEADER-gateway-1b7e" // a secret http_headers value
	jwtPrefix     = "eyJ"                       // base64 of `{"`: the start of every JWT
)

// tokenRecorder keeps every credential the platform received.
type tokenRecorder struct {
	mu     sync.Mutex
	tokens map[string]bool
}

func (r *tokenRecorder) wrap(next http.Handler) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, req *http.Request) {
		tok := strings.TrimSpace(strings.TrimPrefix(req.Header.Get("Authorization"), "Bearer "))
		if tok == "" {
			tok = req.Header.Get("token")
		}
		if tok != "" {
			r.mu.Lock()
			r.tokens[tok] = true
			r.mu.Unlock()
		}
		next.ServeHTTP(w, req)
	})
}

func (r *tokenRecorder) list() []string {
	r.mu.Lock()
	defer r.mu.Unlock()
	out := make([]string, 0, len(r.tokens))
	for t := range r.tokens {
		out = append(out, t)
	}
	sort.Strings(out)
	return out
}

// echoShape is how the echoing upstream answers: every shape puts what
// it received (request line, query, every header, the token among them)
// where a careless client would copy it into an error, a log line or a
// page.
type echoShape int32

const (
	echoOff             echoShape = iota // the simulator answers
	echoErrorPage                        // 502 with an HTML page of the request
	echoStatusLine                       // a status line whose reason phrase is the request, body too
	echoEnvelopeMessage                  // 200, success false, code, message and msg the request
	echoEnvelope401                      // 401, the same envelope
	echoBadData                          // success true, data holding the request: session records, conversation name, concurrency (of the wrong types), stops
	echoCodeTail                         // success false, a code of the credential's last 32 characters (of a code's characters)
	echoEarlierCode                      // 401 to an app's first credential; then a code of the last 32 characters of the one before the call's
	echoHeaderCode                       // success false, a code of the secret http_headers value, each letter's case swapped
)

var echoShapes = map[echoShape]string{
	echoErrorPage: "error page", echoStatusLine: "status line", echoEnvelopeMessage: "envelope message",
	echoEnvelope401: "envelope 401", echoBadData: "data of every endpoint", echoCodeTail: "code",
	echoEarlierCode: "code of an earlier credential", echoHeaderCode: "code of a secret header",
}

// echoing is an upstream that echoes everything it receives, in the shape
// set, in front of the simulator.
type echoing struct {
	shape atomic.Int32
	next  http.Handler
	mu    sync.Mutex
	creds map[string][]string // by appId, the credentials received, in order
}

func (e *echoing) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	var b strings.Builder
	fmt.Fprintf(&b, "%s %s %s query=%s", r.Method, r.URL.RequestURI(), r.Proto, r.URL.RawQuery)
	for k, vs := range r.Header {
		for _, v := range vs {
			fmt.Fprintf(&b, " | %s: %s", k, v)
		}
	}
	echo := b.String()
	quoted, _ := json.Marshal(echo)
	q := string(quoted)
	envelope := `{"code":` + q + `,"message":` + q + `,"msg":` + q + `,"success":false,"data":null}`
	switch echoShape(e.shape.Load()) {
	case echoErrorPage:
		w.Header().Set("Content-Type", "text/html")
		w.Header().Set("X-Echo", echo)
		w.WriteHeader(http.StatusBadGateway)
		fmt.Fprintf(w, "<html><body><h1>502 Bad Gateway</h1><pre>%s</pre></body></html>", echo)
	case echoStatusLine:
		conn, buf, err := http.NewResponseController(w).Hijack()
		if err != nil {
			return
		}
		defer conn.Close()
		line := strings.NewReplacer("\r", " ", "\n", " ").Replace(echo)
		fmt.Fprintf(buf, "HTTP/1.1 500 %s\r\nContent-Type: text/plain\r\nX-Echo: %s\r\nContent-Length: %d\r\nConnection: close\r\n\r\n%s", line, line, len(echo), echo)
		_ = buf.Flush()
	case echoCodeTail:
		cred := strings.TrimPrefix(r.Header.Get("Authorization"), "Bearer ") + r.Header.Get("Token")
		_, _ = fmt.Fprintf(w, `{"code":%q,"success":false,"data":null}`, cred[max(len(cred)-32, 0):])
	case echoHeaderCode:
		_, _ = fmt.Fprintf(w, `{"code":%q,"success":false,"data":null}`, swapCase(r.Header.Get("X-Gateway-Key")))
	case echoEarlierCode:
		cred, app := r.Header.Get("Authorization")+r.Header.Get("Token"), r.URL.Query().Get("appId")
		e.mu.Lock()
		defer e.mu.Unlock()
		i := slices.Index(e.creds[app], cred)
		if i < 0 {
			e.creds[app], i = append(e.creds[app], cred), len(e.creds[app])
		}
		if i == 0 {
			_, _ = io.WriteString(w, `{"code":"401","success":false,"data":null}`)
			return
		}
		earlier := e.creds[app][i-1]
		_, _ = fmt.Fprintf(w, `{"code":%q,"success":false,"data":null}`, earlier[max(len(earlier)-32, 0):])
	case echoEnvelopeMessage, echoEnvelope401:
		w.Header().Set("Content-Type", "application/json")
		if echoShape(e.shape.Load()) == echoEnvelope401 {
			w.WriteHeader(http.StatusUnauthorized)
		}
		_, _ = io.WriteString(w, envelope)
	case echoBadData:
		var data string
		switch {
		case strings.HasSuffix(r.URL.Path, simulator.EndpointSessions):
			data = `[{"uuid":{"echo":` + q + `},"sessionId":{"echo":` + q + `},"conversationId":[` + q + `],"startTime":` + q + `,"status":{"echo":` + q + `}}]`
		case strings.HasSuffix(r.URL.Path, simulator.EndpointConversation):
			data = `{"id":{"echo":` + q + `},"conversationName":{"echo":` + q + `},"maxConversation":` + q + `}`
		case strings.HasSuffix(r.URL.Path, simulator.EndpointConcurrency):
			data = `{"cropId":{"echo":` + q + `},"totalConcurrentNumber":` + q + `,"userConcurrentNumber":` + q + `}`
		case strings.HasSuffix(r.URL.Path, simulator.EndpointStop), strings.HasSuffix(r.URL.Path, simulator.EndpointStopAll):
			data = `{"echo":` + q + `}` // a stop's data is not documented: any value is a success
		default:
			_, _ = io.WriteString(w, envelope)
			return
		}
		w.Header().Set("Content-Type", "application/json")
		_, _ = io.WriteString(w, `{"code":"0000","message":`+q+`,"success":true,"data":`+data+`}`)
	default:
		e.next.ServeHTTP(w, r)
	}
}

// transcript gathers everything the binary said, with where it said it.
type transcript struct {
	mu      sync.Mutex
	entries []entry
}

type entry struct{ where, text string }

func (tr *transcript) add(where, text string) {
	tr.mu.Lock()
	defer tr.mu.Unlock()
	tr.entries = append(tr.entries, entry{where, text})
}

// secretsEnv is the platform and the configuration files of the test.
type secretsEnv struct {
	sim        *simulator.Simulator
	faults     *platformtest.Faults
	rec        *tokenRecorder
	echo       *echoing
	base       string
	dir        string
	good       string // configuration path
	staticTok  string // a ready-made token, configured inline
	fileTok    string // a ready-made token, in a file
	sessionIDs []string
	stuck      string // a session of inline-key started hours ago: the janitor's to stop
}

func newSecretsEnv(t *testing.T) *secretsEnv {
	t.Helper()
	e := &secretsEnv{sim: simulator.New(), rec: &tokenRecorder{tokens: map[string]bool{}}, dir: t.TempDir()}
	apps := []struct{ id, key string }{
		{"2001", secInlineKey}, {"2002", secFileKey}, {"2003", secStaticKey}, {"2004", secStaticKey}, {"2005", secStaticKey},
	}
	for _, a := range apps {
		e.sim.AddApp(simulator.App{ID: a.id, Key: a.key, CorpID: "corp-" + a.id, Allowance: 4})
		require.NoError(t, e.sim.AddConversation(a.id, simulator.NewConversation("c"+a.id, "conversation "+a.id, 2)))
		id, err := e.sim.StartSession(a.id, "c"+a.id)
		require.NoError(t, err)
		e.sessionIDs = append(e.sessionIDs, id)
	}
	stuck, err := e.sim.StartSessionAt("2001", "c2001", time.Now().Add(-3*time.Hour))
	require.NoError(t, err)
	e.stuck = stuck
	now := time.Now()
	e.staticTok, err = simulator.MintToken("2003", secStaticKey, now, now.Add(time.Hour))
	require.NoError(t, err)
	e.fileTok, err = simulator.MintToken("2004", secStaticKey, now, now.Add(time.Hour))
	require.NoError(t, err)
	e.faults = platformtest.New(e.sim)
	e.echo = &echoing{next: e.faults, creds: map[string][]string{}}
	srv := httptest.NewServer(e.rec.wrap(e.echo))
	t.Cleanup(srv.Close)
	e.base = srv.URL + simulator.BasePath

	keyFile := filepath.Join(e.dir, "key-file.key")
	tokFile := filepath.Join(e.dir, "token-file.token")
	require.NoError(t, os.WriteFile(keyFile, []byte(secFileKey+"\n"), 0o600))
	require.NoError(t, os.WriteFile(tokFile, []byte(e.fileTok+"\n"), 0o600))
	e.good = e.write(t, "duix.yml", e.config(""))
	return e
}

// apiTimeout is the configuration's api.timeout: far beyond what a call to
// a healthy platform on loopback takes on a busy machine, and short enough
// that the calls of the faults in time (a platform that takes an hour) end
// soon after the scrapes that gave up on them: later scrapes would
// otherwise join them until they do.
const apiTimeout = "  timeout: 4s\n"

// config renders the configuration; extra is appended to the apps. The
// calls go through a proxy with credentials: the platform itself, which
// sees them in Proxy-Authorization and echoes them with the rest.
func (e *secretsEnv) config(extra string) string {
	u, _ := url.Parse(e.base)
	return fmt.Sprintf(`api:
  base_url: %q
`+apiTimeout+`  http_client:
    proxy_url: "http://proxyuser:`+secProxyPass+`@`+u.Host+`"
    http_headers:
      X-Gateway-Key:
        secrets: ["`+secGateway+`"]
apps:
  - name: inline-key
    app_id: "2001"
    app_key: %s
    conversations: ["c2001"]
    janitor: {max_session_age: 1h}
  - name: file-key
    app_id: "2002"
    app_key_file: key-file.key
    conversations: ["c2002"]
  - name: inline-token
    app_id: "2003"
    token: %s
  - name: file-token
    app_id: "2004"
    token_file: token-file.token
  - name: refused-token
    app_id: "2005"
    token: %s
%s`, e.base, secInlineKey, e.staticTok, secBadToken, extra)
}

func (e *secretsEnv) write(t *testing.T, name, content string) string {
	t.Helper()
	path := filepath.Join(e.dir, name)
	require.NoError(t, os.WriteFile(path, []byte(content), 0o600))
	return path
}

// badConfigs are invalid configurations full of secrets, each refused for
// a reason that has nothing to do with them.
func (e *secretsEnv) badConfigs() map[string]string {
	good := e.config("")
	return map[string]string{
		"two credentials":         e.config("  - name: both\n    app_id: \"2009\"\n    app_key: " + secInlineKey + "\n    token: " + secBadToken + "\n"),
		"unknown field":           e.config("  - name: typo\n    app_id: \"2009\"\n    app_key: " + secInlineKey + "\n    apikey: " + secInlineKey + "\n"),
		"duplicate key":           e.config("  - name: dup\n    app_id: \"2009\"\n    app_key: " + secInlineKey + "\n    app_key: " + secFileKey + "\n"),
		"key of the wrong type":   e.config("  - name: wrongtype\n    app_id: \"2009\"\n    app_key: {value: " + secInlineKey + "}\n"),
		"unterminated quote":      e.config("  - name: quote\n    app_id: \"2009\"\n    app_key: \"" + secInlineKey + "\n"),
		"token with token_ttl":    e.config("  - name: ttl\n    app_id: \"2009\"\n    token: " + secBadToken + "\n    token_ttl: 5m\n"),
		"duplicate app_id":        e.config("  - name: again\n    app_id: \"2001\"\n    app_key: " + secInlineKey + "\n"),
		"missing key file":        e.config("  - name: nofile\n    app_id: \"2009\"\n    app_key_file: no-such.key\n"),
		"credentials in base_url": strings.Replace(good, "base_url: \"http://", "base_url: \"http://user:"+secBasicPass+"@", 1),
		"bearer in http_client":   strings.Replace(good, "  http_client:\n", "  http_client:\n    bearer_token: "+secHTTPBearer+"\n", 1),
		"authorization header in http_client": strings.Replace(good, "    http_headers:\n",
			"    http_headers:\n      Authorization:\n        secrets: [\"Bearer "+secHTTPBearer+"\"]\n", 1),
		"bad indentation": strings.Replace(good, "    app_key: "+secInlineKey, "   app_key: "+secInlineKey, 1),
		"tab":             strings.Replace(good, "    app_key: "+secInlineKey, "\tapp_key: "+secInlineKey, 1),
	}
}

// runCmd runs the binary to its end and records its output.
func runCmd(t *testing.T, tr *transcript, where string, args ...string) (int, string) {
	t.Helper()
	cmd := exec.Command(binary, args...)
	cmd.Stdin = strings.NewReader("")
	out, err := cmd.CombinedOutput()
	code := 0
	if ee, ok := err.(*exec.ExitError); ok {
		code = ee.ExitCode()
	} else {
		require.NoError(t, err, where)
	}
	tr.add(where, string(out))
	return code, string(out)
}

// fetch GETs (or POSTs) a path of the running exporter and records the
// answer, headers included. Its scrape timeout is far beyond what a scrape
// of a healthy platform takes on a busy machine.
func fetch(t *testing.T, tr *transcript, p *process, method, path string) (int, string) {
	t.Helper()
	return fetchWithin(t, tr, p, method, path, "60")
}

// fetchWithin is fetch with a scrape timeout of secs seconds.
func fetchWithin(t *testing.T, tr *transcript, p *process, method, path, secs string) (int, string) {
	t.Helper()
	req, err := http.NewRequest(method, p.url+path, nil)
	require.NoError(t, err)
	req.Header.Set("X-Prometheus-Scrape-Timeout-Seconds", secs)
	resp, err := http.DefaultClient.Do(req)
	require.NoError(t, err, path)
	defer resp.Body.Close()
	b, err := io.ReadAll(resp.Body)
	require.NoError(t, err, path)
	var hdr strings.Builder
	require.NoError(t, resp.Header.Write(&hdr))
	tr.add(method+" "+path, hdr.String()+"\n"+string(b))
	return resp.StatusCode, string(b)
}

func TestSecretsNeverLeak(t *testing.T) {
	t.Parallel()
	e := newSecretsEnv(t)
	tr := &transcript{}

	// --config.check, good and bad; starting with a bad configuration.
	code, out := runCmd(t, tr, "--config.check good", "--config.check", "--config.file="+e.good)
	require.Equal(t, 0, code, out)
	for name, content := range e.badConfigs() {
		path := e.write(t, "bad.yml", content)
		code, out := runCmd(t, tr, "--config.check "+name, "--config.check", "--config.file="+path)
		assert.Equal(t, 1, code, "%s is refused: %s", name, out)
		code, out = runCmd(t, tr, "serve with "+name, "--config.file="+path, "--log.level=debug", "--web.listen-address=127.0.0.1:0")
		assert.Equal(t, 1, code, "%s: the exporter does not start: %s", name, out)
	}

	// The exporter, logging everything, with the janitor on.
	janitorAddr := platformtest.FreeAddr(t)
	p := startExporter(t, "--config.file="+e.good, "--log.level=debug", "--janitor.listen-address="+janitorAddr)
	stuckAlert := func(app string) int { // Alertmanager's webhook: DuixSessionStuck for app
		resp, err := http.Post("http://"+janitorAddr+"/webhook", "application/json", strings.NewReader(
			`{"version":"4","status":"firing","alerts":[{"status":"firing","labels":{"alertname":"DuixSessionStuck","app":"`+app+`"}}]}`))
		require.NoError(t, err, app)
		defer resp.Body.Close()
		b, err := io.ReadAll(resp.Body)
		require.NoError(t, err, app)
		tr.add("janitor webhook for "+app, string(b))
		return resp.StatusCode
	}
	_, body := fetch(t, tr, p, http.MethodGet, "/metrics")
	for _, app := range []string{"inline-key", "file-key", "inline-token", "file-token"} {
		assert.Contains(t, body, `duix_up{app="`+app+`"} 1`, "every credential works")
	}
	assert.Contains(t, body, `duix_up{app="refused-token"} 0`)
	assert.Equal(t, http.StatusOK, stuckAlert("inline-key"), "the janitor stops the stuck session")
	_, body = fetch(t, tr, p, http.MethodGet, "/")
	assert.Contains(t, body, e.stuck, "the landing page lists the janitor's stop")
	// The faults in time: a platform that answers in an hour, and a body
	// that stalls for an hour, time out at the scrape's deadline whatever
	// the machine's speed.
	e.sim.SetLatency("", "", time.Hour)
	_, body = fetchWithin(t, tr, p, http.MethodGet, "/metrics", "1.5")
	assert.Contains(t, body, `duix_up{app="inline-key"} 0`, "timeout")
	e.faults.ClearFaults()
	e.faults.SetFault("", "", platformtest.Fault{Kind: platformtest.FaultSlowBody, Delay: time.Hour})
	_, body = fetchWithin(t, tr, p, http.MethodGet, "/metrics", "1.5")
	assert.Contains(t, body, `duix_up{app="inline-key"} 0`, "slow body")
	fetchWithin(t, tr, p, http.MethodGet, "/probe?app=file-key", "1.5")
	e.faults.ClearFaults()
	// Every other fault, each answered at once; 429 last, since the
	// exporter then stops calling for the Retry-After.
	faults := []platformtest.Fault{
		{Kind: platformtest.FaultHTTP500}, {Kind: platformtest.FaultHTML502},
		{Kind: platformtest.FaultUnauthorized401}, {Kind: platformtest.FaultForbidden403}, {Kind: platformtest.FaultTruncatedJSON},
		{Kind: platformtest.FaultSuccessFalse}, {Kind: platformtest.FaultNullData}, {Kind: platformtest.FaultCodeAsNumber},
		{Kind: platformtest.FaultWrongTypes},
		{Kind: platformtest.FaultOversizedBody, Bytes: 20 << 20}, {Kind: platformtest.FaultResetConnection},
		{Kind: platformtest.FaultUnsolicitedEcho}, // net/http logs it through package log
		{Kind: platformtest.FaultRateLimit429},
	}
	before := e.sim.Requests(simulator.EndpointConcurrency)
	for _, f := range faults {
		e.faults.SetFault("", "", f)
		_, body := fetch(t, tr, p, http.MethodGet, "/metrics")
		if f.Kind != platformtest.FaultCodeAsNumber && f.Kind != platformtest.FaultUnsolicitedEcho { // accepted
			assert.Contains(t, body, `duix_up{app="inline-key"} 0`, f.Kind.String())
		}
		fetch(t, tr, p, http.MethodGet, "/probe?app=file-key")
		e.faults.ClearFaults()
	}
	assert.GreaterOrEqual(t, e.sim.Requests(simulator.EndpointConcurrency)-before, int64(5*len(faults)), "each fault reached the platform")
	for _, path := range []string{"/", "/-/healthy", "/-/ready", "/probe?app=inline-token", "/probe?app=no-such-app", "/probe", "/no-such-page"} {
		fetch(t, tr, p, http.MethodGet, path)
	}
	// An upstream that echoes what it receives, in every shape: the
	// answers, the landing page and the logs must carry none of it. The
	// conversation details are refreshed at most every few minutes: a
	// reload with a new app_id (the state of an app starts afresh) has
	// them fetched again.
	for shape, name := range echoShapes {
		e.echo.shape.Store(int32(shape))
		require.NoError(t, os.WriteFile(e.good, []byte(e.config("  - name: echo-"+strconv.Itoa(int(shape))+"\n    app_id: \"209"+strconv.Itoa(int(shape))+"\"\n    app_key: "+secInlineKey+"\n    conversations: [\"c2001\"]\n    janitor: {max_session_age: 1h}\n")), 0o600))
		code, _ := fetch(t, tr, p, http.MethodPost, "/-/reload")
		require.Equal(t, http.StatusOK, code, name)
		_, body := fetch(t, tr, p, http.MethodGet, "/metrics")
		assert.Contains(t, body, `duix_up{app="inline-key"} 0`, name)
		fetch(t, tr, p, http.MethodPost, "/-/reload") // the tokens given follow the apps across it
		fetch(t, tr, p, http.MethodGet, "/metrics")   // after a refusal: a new token
		fetch(t, tr, p, http.MethodGet, "/probe?app=file-key")
		fetch(t, tr, p, http.MethodGet, "/")
		if code := stuckAlert("echo-" + strconv.Itoa(int(shape))); shape != echoBadData { // its records name no session: nothing to stop
			assert.NotEqual(t, http.StatusOK, code, "the janitor's list fails: %s", name)
		}
	}
	e.echo.shape.Store(int32(echoOff))
	require.NoError(t, os.WriteFile(e.good, []byte(e.config("")), 0o600))
	fetch(t, tr, p, http.MethodGet, "/-/reload")

	// Reloads: bad files by /-/reload and SIGHUP, then the good one again.
	for name, content := range e.badConfigs() {
		require.NoError(t, os.WriteFile(e.good, []byte(content), 0o600))
		code, _ := fetch(t, tr, p, http.MethodPost, "/-/reload")
		assert.Equal(t, http.StatusInternalServerError, code, name)
		require.NoError(t, p.Cmd.Process.Signal(syscall.SIGHUP))
	}
	require.NoError(t, os.WriteFile(e.good, []byte(e.config("")), 0o600))
	require.NoError(t, p.Cmd.Process.Signal(syscall.SIGHUP))
	code, _ = fetch(t, tr, p, http.MethodPost, "/-/reload")
	assert.Equal(t, http.StatusOK, code)
	fetch(t, tr, p, http.MethodGet, "/metrics")
	fetch(t, tr, p, http.MethodGet, "/")

	// The operator commands.
	e.operatorCommands(t, tr)

	p.stop(t)
	tr.add("exporter log", p.Out.String())

	// What must never appear.
	secrets := map[string]string{
		secInlineKey: "inline app_key", secFileKey: "app_key_file content", secStaticKey: "key of the ready-made tokens",
		secBadToken: "inline token", e.staticTok: "inline JWT token", e.fileTok: "token_file content",
		secBasicPass: "password in base_url", secHTTPBearer: "http_client credential", secProxyPass: "proxy_url password",
		secGateway: "secret http_headers value", swapCase(secGateway): "secret http_headers value, case swapped",
		base64.StdEncoding.EncodeToString([]byte("proxyuser:" + secProxyPass)): "Proxy-Authorization",
	}
	captured := e.rec.list()
	require.NotEmpty(t, captured, "the platform was called")
	for i, tok := range captured {
		secrets[tok] = fmt.Sprintf("token %d received by the platform", i)
	}
	// Distinctive parts too, in case a value is cut or quoted.
	for _, s := range []string{secInlineKey, secFileKey, secStaticKey, secBadToken, secBasicPass, secHTTPBearer, secProxyPass, secGateway} {
		secrets[s[len(s)-10:]] = "end of a secret"
	}
	for _, tok := range captured {
		if i := strings.LastIndexByte(tok, '.'); i > 0 {
			secrets[tok[i+1:]] = "JWT signature"
		}
		secrets[tok[max(len(tok)-10, 0):]] = "end of a token received by the platform"
	}
	checked := 0
	for _, en := range tr.entries {
		checked += len(en.text)
		for s, what := range secrets {
			if strings.Contains(en.text, s) {
				t.Errorf("%s (%s) appears in %s:\n%s", what, s, en.where, excerpt(en.text, s))
			}
		}
		if strings.Contains(en.text, jwtPrefix) {
			t.Errorf("something shaped like a JWT appears in %s:\n%s", en.where, excerpt(en.text, jwtPrefix))
		}
	}
	t.Logf("checked %d outputs (%d bytes) against %d secrets and %d tokens the platform received",
		len(tr.entries), checked, len(secrets), len(captured))
}

// operatorCommands runs the operator commands, each of which the binary must list in --help.
func (e *secretsEnv) operatorCommands(t *testing.T, tr *transcript) {
	_, help := runCmd(t, tr, "--help", "--help")
	has := func(cmd string) bool { // a command renamed must not pass undriven
		return assert.Contains(t, help, cmd, "the binary has no %q command", cmd)
	}
	cfg := "--config.file=" + e.good
	var runs [][]string
	if has("apps check") {
		runs = append(runs, []string{"apps", "check"}, []string{"apps", "check", "--output=json"})
	}
	if has("sessions list") {
		for _, app := range []string{"inline-key", "file-token", "refused-token", "no-such-app"} {
			runs = append(runs, []string{"sessions", "list", "--app=" + app}, []string{"sessions", "list", "--app=" + app, "--output=json"})
		}
	}
	if has("sessions stop") {
		runs = append(runs,
			[]string{"sessions", "stop", "--app=file-key", "--session=" + e.sessionIDs[1], "--yes"},
			[]string{"sessions", "stop", "--app=file-key", "--session=no-such-session", "--yes"},
			[]string{"sessions", "stop", "--app=inline-key", "--session=" + e.sessionIDs[0]}, // not confirmed
			[]string{"sessions", "stop", "--app=refused-token", "--session=" + e.sessionIDs[4], "--yes"},
			[]string{"sessions", "stop", "--app=inline-token", "--all", "--yes"})
	}
	if has("conversation show") {
		runs = append(runs,
			[]string{"conversation", "show", "--app=inline-key", "--id=c2001"},
			[]string{"conversation", "show", "--app=inline-key", "--id=c2001", "--output=json"},
			[]string{"conversation", "show", "--app=inline-token", "--id=no-such-conversation"},
			[]string{"conversation", "show", "--app=refused-token", "--id=c2005"})
	}
	for _, args := range runs {
		runCmd(t, tr, strings.Join(args, " "), append([]string{cfg, "--log.level=debug"}, args...)...)
	}
	// The same with the platform failing.
	for _, f := range []platformtest.FaultKind{platformtest.FaultUnauthorized401, platformtest.FaultHTML502, platformtest.FaultTruncatedJSON, platformtest.FaultResetConnection, platformtest.FaultUnsolicitedEcho} {
		e.faults.SetFault("", "", platformtest.Fault{Kind: f})
		for _, args := range runs {
			runCmd(t, tr, strings.Join(args, " ")+" ("+f.String()+")", append([]string{cfg, "--log.level=debug"}, args...)...)
		}
		e.faults.ClearFaults()
	}
	// The same against the echoing upstream.
	for shape, name := range echoShapes {
		e.echo.shape.Store(int32(shape))
		for _, args := range runs {
			// sessions list shows the platform's records as they come
			// (docs/operator.md): a record the platform fills with what
			// it received is its data, printed on request, not an error.
			if shape == echoBadData && len(args) > 1 && args[0] == "sessions" && args[1] == "list" {
				continue
			}
			// A command is a process of its own: the tokens the platform echoes
			// here were given by others, which it cannot know (docs/reliability.md).
			if shape == echoEarlierCode {
				continue
			}
			runCmd(t, tr, strings.Join(args, " ")+" (echo: "+name+")", append([]string{cfg, "--log.level=debug"}, args...)...)
		}
	}
	e.echo.shape.Store(int32(echoOff))
	// With a bad configuration.
	bad := e.write(t, "bad-operator.yml", e.badConfigs()["two credentials"])
	for _, args := range runs {
		runCmd(t, tr, strings.Join(args, " ")+" (bad configuration)", append([]string{"--config.file=" + bad, "--log.level=debug"}, args...)...)
	}
}

func excerpt(text, s string) string {
	i := strings.Index(text, s)
	from, to := max(i-200, 0), min(i+len(s)+200, len(text))
	return text[from:to]
}

// swapCase swaps the case of every ASCII letter of s.
func swapCase(s string) string {
	return strings.Map(func(r rune) rune {
		if 'a' <= r && r <= 'z' || 'A' <= r && r <= 'Z' {
			return r ^ 0x20
		}
		return r
	}, s)
}
