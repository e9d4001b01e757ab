// Package client calls the platform's OpenAPI v2 for each configured app:
// concurrency, sessions, conversation details, and closing sessions.
package client

import (
	"cmp"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"maps"
	"net"
	"net/http"
	"net/http/httptrace"
	"net/url"
	"slices"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	promconfig "github.com/prometheus/common/config"

	"github.com/duix-exporter/duix_exporter/config"
)

// Endpoints of the platform (docs/platform-api.md#operations).
const (
	EndpointConversation = "getConversationById"
	EndpointConcurrency  = "getconcurrentNumber"
	EndpointSessions     = "getconcurrentList"
	EndpointStop         = "sessionStop"
	EndpointStopAll      = "distroyCallSessionsByAppId" // the misspelling is the platform's
)

// PoolOptions are the process-wide parts of a Pool.
type PoolOptions struct {
	Metrics           *Metrics // instruments every call (nil: unregistered ones)
	UserAgent         string
	Now               func() time.Time                   // the clock of tokens and Retry-After (nil: time.Now)
	OnSecretFileError func(kind, path string, err error) // told of a refused changed key, token, header or TLS file (nil: none); err holds no content
	Previous          *Pool                              // the pool this one replaces: the last good values of the same files are kept
}

// Pool holds one Client per configured app, sharing one HTTP client of
// prometheus/common (TLS, proxy, http_headers, redirects) and its connections.
type Pool struct {
	http          *http.Client
	baseURL, auth string   // base_url as written (url.JoinPath would clean its path); the token's header: Authorization or Token
	headers       []header // the secret http_headers
	files         *files   // of http_headers and tls_config
	ua            []string
	timeout       time.Duration
	maxBytes      int64
	metrics       *Metrics
	now           func() time.Time
	clients       map[string]*Client
	records       map[[2]string]*appRecord // by platform (base_url's origin and path) and app_id, of every app configured since the first pool
	mu            sync.Mutex
	inFlight      int // calls begun and not ended
	closed        bool
}

// NewPool builds the clients for every app of cfg, reading their files; it makes no request.
func NewPool(cfg *config.Config, opts PoolOptions) (*Pool, error) {
	base, err := url.Parse(cfg.API.BaseURL)
	if err != nil {
		return nil, errors.New("api.base_url: not a valid URL")
	}
	p := &Pool{baseURL: cfg.API.BaseURL, auth: "Authorization", ua: []string{opts.UserAgent},
		timeout: time.Duration(cfg.API.Timeout), maxBytes: cfg.API.MaxResponseBytes, metrics: cmp.Or(opts.Metrics, NewMetrics(nil)), now: opts.Now,
		clients: make(map[string]*Client, len(cfg.Apps)), records: map[[2]string]*appRecord{}}
	if p.now == nil {
		p.now = time.Now
	}
	onErr := opts.OnSecretFileError // not opts: its Previous would be kept, and the pools before it
	hook := func(kind, path string, err error) {
		p.metrics.secretFileErrors.WithLabelValues(kind).Inc()
		if onErr != nil {
			onErr(kind, path, err)
		}
	}
	// Secret http_headers are the client's, so that they stay on base_url's origin and a file is read as a key file is:
	// prometheus/common would send them on every hop and block on a FIFO. Plain values are common's.
	p.files = &files{now: p.now, m: map[string]*secretFile{}}
	file := func(path, kind string) string { // one file under several names: read and counted once
		ref := kind + ":" + path // by kind: header and TLS files are read under different rules
		if p.files.m[ref] == nil {
			p.files.m[ref] = &secretFile{path: path, kind: kind, hook: hook}
			p.files.m[ref].start(p.now())
		}
		return ref
	}
	hcfg := cfg.API.HTTPClientConfig
	if hh := hcfg.HTTPHeaders; hh != nil {
		hcfg.HTTPHeaders = &promconfig.Headers{Headers: map[string]promconfig.Header{}}
		for name, h := range hh.Headers {
			hcfg.HTTPHeaders.Headers[name] = promconfig.Header{Values: h.Values}
			for _, v := range h.Secrets {
				p.headers = append(p.headers, header{name: name, value: string(v)})
			}
			for _, path := range h.Files {
				p.headers = append(p.headers, header{name: name, ref: file(path, SecretHeader)})
			}
		}
	}
	for _, f := range [][2]*string{{&hcfg.TLSConfig.CAFile, &hcfg.TLSConfig.CARef}, {&hcfg.TLSConfig.CertFile, &hcfg.TLSConfig.CertRef}, {&hcfg.TLSConfig.KeyFile, &hcfg.TLSConfig.KeyRef}} {
		if path := *f[0]; path != "" {
			*f[0], *f[1] = "", file(path, SecretTLS)
		}
	}
	if p.http, err = promconfig.NewClientFromConfig(hcfg, "duix_exporter", promconfig.WithIdleConnTimeout(90*time.Second), promconfig.WithSecretManager(p.files),
		promconfig.WithDialContextFunc(func(ctx context.Context, network, addr string) (net.Conn, error) {
			conn, err := new(net.Dialer).DialContext(ctx, network, addr)
			return &capped{Conn: conn}, err // unused on an error
		}), promconfig.WithHTTP2Disabled()); err != nil { // HTTP/2 off: a connection holds one answer at a time, as capped needs
		return nil, err
	}
	prefix := "Bearer "
	if cfg.API.AuthHeader == config.AuthHeaderToken {
		p.auth, prefix = "Token", ""
	}
	p.http.CheckRedirect = func(req *http.Request, via []*http.Request) error {
		if origin(req.URL) != origin(base) || slices.ContainsFunc(via, func(r *http.Request) bool { return origin(r.URL) != origin(base) }) {
			req.Header.Del(p.auth) // never past base_url's origin, nor back: net/http would only drop Authorization for another host
			for _, h := range p.headers {
				req.Header.Del(h.name)
			}
		}
		switch {
		case !hcfg.FollowRedirects:
			return http.ErrUseLastResponse
		case len(via) >= 10:
			return errors.New("stopped after 10 redirects") // net/http's default
		}
		return nil
	}
	prev := map[[3]string]string{} // by app_id, kind and path, the last good values of the replaced pool's files: kept should one no longer be good
	if opts.Previous != nil {
		maps.Copy(p.records, opts.Previous.records)
		for _, c := range opts.Previous.clients {
			c.tokens.mu.Lock()
			if f := c.tokens.file; f != nil {
				prev[[3]string{c.tokens.appID, f.kind, f.path}] = f.value
			}
			c.tokens.mu.Unlock()
		}
	}
	platform := origin(base) + base.Path // a Retry-After is the platform's
	for _, app := range cfg.Apps {
		rec := [2]string{platform, app.AppID}
		p.records[rec] = cmp.Or(p.records[rec], &appRecord{})
		tokens := newTokenSource(app, prefix, p.records[rec], p.now, hook)
		if f := tokens.file; f != nil {
			f.value = prev[[3]string{app.AppID, f.kind, f.path}]
			f.start(p.now())
		}
		p.clients[app.Name] = &Client{p: p, name: app.Name, appQuery: url.Values{"appId": {app.AppID}}.Encode(), tokens: tokens}
	}
	return p, nil
}

// capped reads at most config.MaxHeaderBytes as it opens (a CONNECT's answer, a TLS handshake's), then for a call's
// headers (hop), 1xx answers' and redirects' included: net/http alone reads 10 MiB of them. call bounds the body.
type capped struct {
	net.Conn
	left atomic.Int64 // what may be read past config.MaxHeaderBytes
}

func (c *capped) Read(b []byte) (int, error) {
	room := c.left.Load() + config.MaxHeaderBytes
	if room <= 0 {
		return 0, ErrBodyTooLarge
	}
	n, err := c.Conn.Read(b[:min(int64(len(b)), room)])
	c.left.Add(-int64(n))
	return n, err
}

func (c *capped) LocalAddr() net.Addr { return cappedAddr{c.Conn.LocalAddr(), c} } // how hop finds c under any wrapper

// hop returns the capped connection under conn of a call's hop after prev (a zero capped before the first): it has
// what is left of prev's room for headers, so that a call's redirects share it.
func hop(conn net.Conn, prev *capped) *capped {
	a, _ := conn.LocalAddr().(cappedAddr)
	a.c = cmp.Or(a.c, prev)
	a.c.left.Store(prev.left.Load())
	return a.c
}

type cappedAddr struct {
	net.Addr
	c *capped
}

// Client returns the client of the app with that name, or nil.
func (p *Pool) Client(name string) *Client { return p.clients[name] }

// Close closes the idle connections once the last call in flight has ended; later calls work, closing theirs as they end.
func (p *Pool) Close() { p.track(0, true) }

// track counts the calls in flight; none left after Close closes the idle connections.
func (p *Pool) track(delta int, closing bool) {
	p.mu.Lock()
	defer p.mu.Unlock()
	p.closed = p.closed || closing
	if p.inFlight += delta; p.inFlight == 0 && p.closed {
		p.http.CloseIdleConnections()
	}
}

// Client calls the platform on behalf of one app.
type Client struct {
	p              *Pool
	name, appQuery string
	tokens         *tokenSource
}

// AppID is the platform's ID of the client's app.
func (c *Client) AppID() string { return c.tokens.appID }

// RetryAfter is when the platform's last 429 for the app allows calls again (zero: none; past: allowed), across reloads.
func (c *Client) RetryAfter() time.Time {
	c.tokens.last.mu.Lock()
	defer c.tokens.last.mu.Unlock()
	return c.tokens.last.retryAfter
}

// backOff stops calls for what Retry-After v says, seconds or an HTTP date clamped to [0, 1h] first (a minute when it
// says nothing usable), and returns it.
func (c *Client) backOff(v string) time.Duration {
	d, now := time.Minute, c.p.now()
	if n, err := strconv.ParseUint(strings.TrimSpace(v), 10, 64); err == nil || errors.Is(err, strconv.ErrRange) {
		d = time.Duration(min(n, 3600)) * time.Second // ParseUint gives its maximum when out of range
	} else if t, err := http.ParseTime(strings.TrimSpace(v)); err == nil {
		d = min(max(t.Sub(now), 0), time.Hour)
	}
	c.tokens.last.mu.Lock()
	defer c.tokens.last.mu.Unlock()
	c.tokens.last.retryAfter = now.Add(d)
	return d
}

// Concurrency returns the app's concurrency status (GET /getconcurrentNumber?appId=), both numbers required.
func (c *Client) Concurrency(ctx context.Context) (*Concurrency, error) {
	v, err := getObject[struct {
		CropID string `json:"cropId"`
		T      *int64 `json:"totalConcurrentNumber"`
		U      *int64 `json:"userConcurrentNumber"`
	}](ctx, c, EndpointConcurrency, c.appQuery)
	switch {
	case err != nil:
		return nil, err
	case v.T == nil || v.U == nil || *v.T < 0 || *v.U < 0: // a count below 0 is none
		return nil, &Error{Endpoint: EndpointConcurrency, App: c.name, Reason: ReasonDecode, detail: "no totalConcurrentNumber or userConcurrentNumber, or one below 0", err: errShape}
	}
	return &Concurrency{CropID: v.CropID, TotalConcurrentNumber: *v.T, UserConcurrentNumber: *v.U}, nil
}

// GetConversation decodes a conversation's details (GET /getConversationById?conversationId=) into T, which holds the
// fields its caller uses (docs/platform-api.md#conversation).
func GetConversation[T any](ctx context.Context, c *Client, id string) (*T, error) {
	return getObject[T](ctx, c, EndpointConversation, url.Values{"conversationId": {id}}.Encode())
}

// getObject calls an endpoint whose data is one object, not null.
func getObject[T any](ctx context.Context, c *Client, endpoint, query string) (*T, error) {
	var out *T
	if _, err := c.call(ctx, endpoint, query, func(dec *json.Decoder) error { return dec.Decode(&out) }); err != nil || out == nil {
		return nil, cmp.Or(err, error(&Error{Endpoint: endpoint, App: c.name, Reason: ReasonDecode, detail: "data is null", err: errShape}))
	}
	return out, nil
}

// StopSession closes a session (GET /sessionStop?uuid=) and returns the envelope's code (as Error.Code); see IsNotFound.
func (c *Client) StopSession(ctx context.Context, sessionID string) (string, error) {
	return c.stop(ctx, EndpointStop, url.Values{"uuid": {sessionID}}.Encode())
}

// StopAllSessions closes every session of the app (GET /distroyCallSessionsByAppId?appId=) and returns the code.
func (c *Client) StopAllSessions(ctx context.Context) (string, error) {
	return c.stop(ctx, EndpointStopAll, c.appQuery)
}

// stop makes a stop call. Its data, which the platform does not document, is read past, never kept: it could hold
// what the platform was sent.
func (c *Client) stop(ctx context.Context, endpoint, query string) (string, error) {
	env, err := c.call(ctx, endpoint, query, func(dec *json.Decoder) error { return dec.Decode(new(json.RawMessage)) })
	if err != nil {
		return "", err
	}
	return env.code, nil
}

// call makes one GET and decodes at most max_response_bytes of the answer,
// handing its data member to data as it streams past.
func (c *Client) call(ctx context.Context, endpoint, query string, data func(*json.Decoder) error) (env envelope, err error) {
	defer func() {
		if e, ok := err.(*Error); ok {
			e.Endpoint, e.App = endpoint, c.name
		}
	}()
	if until := c.RetryAfter(); until.After(c.p.now()) {
		return env, &Error{Reason: ReasonRateLimited, RetryAfter: until.Sub(c.p.now()).Round(time.Second), detail: "no call until the platform's Retry-After"}
	}
	c.p.track(1, false)
	defer c.p.track(-1, false)
	ctx, cancel := context.WithTimeout(ctx, c.p.timeout)
	defer cancel()
	conn := &capped{} // the answer's (its last hop's)
	trace := &httptrace.ClientTrace{GotConn: func(i httptrace.GotConnInfo) { conn = hop(i.Conn, conn) }}
	req, err := http.NewRequestWithContext(httptrace.WithClientTrace(ctx, trace), http.MethodGet, c.p.baseURL+"/"+endpoint+"?"+query, nil)
	if err != nil {
		return env, transportError(err)
	}
	tok, secrets, err := c.tokens.get() // secrets: what a code may not echo (codeOf)
	if err != nil {
		return env, err
	}
	req.Header = http.Header{"Accept": {"application/json"}, "User-Agent": c.p.ua, c.p.auth: {tok}}
	for _, h := range c.p.headers {
		v := h.value
		if h.ref != "" {
			if v, err = c.p.files.Fetch(ctx, h.ref); err != nil {
				return env, &Error{Reason: ReasonAuth, detail: "no usable http_headers file for " + h.name, err: err}
			}
		}
		req.Header.Add(h.name, v)
		secrets = append(secrets, v)
	}
	start := time.Now()
	resp, err := c.p.http.Do(req)
	if err != nil {
		if c.p.metrics.observe(endpoint, 0, time.Since(start)); conn.left.Load() <= -config.MaxHeaderBytes {
			err = ErrBodyTooLarge // what net/http says of a header cut short
		} else if ctx.Err() != nil && conn.Conn == nil { // left before it had a connection, which net/http goes on opening
			c.p.http.CloseIdleConnections() // (a proxy's CONNECT: a minute): ended, as are the others no call waits for
		}
		return env, transportError(err)
	}
	if resp.Body != http.NoBody { // else net/http gave the connection back already, maybe to another call: not ours to lift
		conn.left.Store(1 << 62)
	}
	defer func() { // up to 64 KiB of what is left is read, for the connection's reuse, but a late end is not waited for
		t := time.AfterFunc(50*time.Millisecond, cancel)      // then the connection is closed
		if resp.StatusCode != http.StatusSwitchingProtocols { // its body is the connection, which cancel does not close
			_, _ = io.CopyN(io.Discard, resp.Body, 64<<10)
		}
		t.Stop()
		resp.Body.Close()
		c.p.metrics.observe(endpoint, resp.StatusCode, time.Since(start))
	}()
	var e *Error
	if resp.StatusCode < 200 || resp.StatusCode > 299 {
		e = &Error{Reason: ReasonHTTP, Status: resp.StatusCode}
		env.code = strconv.Itoa(resp.StatusCode) // what the status says, as a code
	} else {
		body := &io.LimitedReader{R: resp.Body, N: c.p.maxBytes + 1}
		if resp.ContentLength > c.p.maxBytes {
			body.N = 0 // refused unread
		}
		dec := json.NewDecoder(body)
		if env, err = decodeEnvelope(dec, data); err == nil && env.success { // a refusal is one whatever follows
			defer time.AfterFunc(50*time.Millisecond, cancel).Stop() // a late end is not waited for
			if err = endOf(dec); body.N <= 0 {
				err = ErrBodyTooLarge // past the cap after the envelope
			}
		}
		switch {
		case err == nil && env.success:
			return envelope{code: codeOf(env.code, secrets), success: true}, nil
		case err == nil:
			e = &Error{Reason: ReasonAPI, Code: codeOf(env.code, secrets), detail: "success is false"}
		case body.N <= 0:
			return env, &Error{Reason: ReasonDecode, detail: ErrBodyTooLarge.Error(), err: ErrBodyTooLarge}
		case isDecodeError(err): // even after the deadline: what was read is no envelope
			return env, &Error{Reason: ReasonDecode, detail: "not the JSON the endpoint documents", err: err}
		case ctx.Err() != nil:
			return env, transportError(ctx.Err())
		default:
			return env, transportError(err)
		}
	}
	switch env.code {
	case "401", "403":
		e.Reason = ReasonAuth
		c.tokens.refused()
		c.p.files.refused()
	case "429":
		e.Reason, e.RetryAfter = ReasonRateLimited, c.backOff(resp.Header.Get("Retry-After"))
	}
	return env, e
}

func isDecodeError(err error) bool {
	var syntax *json.SyntaxError
	return errors.As(err, &syntax) || readPast(err) || errors.Is(err, io.ErrUnexpectedEOF) || errors.Is(err, errDepth)
}

// readPast reports whether err is of a JSON value of another shape, read to its end: what follows can be read on.
func readPast(err error) bool {
	var typ *json.UnmarshalTypeError
	return errors.As(err, &typ) || errors.Is(err, errShape)
}

// endOf returns errShape when a value, or what is no JSON, follows the envelope; an end that does not come, or a cut one,
// is no error. A failed Token leaves unread what it could not read.
func endOf(dec *json.Decoder) error {
	if _, err := dec.Token(); err != io.EOF {
		if rest, _ := io.ReadAll(dec.Buffered()); err == nil || strings.Trim(string(rest), " \t\r\n") != "" {
			return errShape
		}
	}
	return nil
}

// envelope is what an answer says around its data (docs/platform-api.md#envelope).
type envelope struct {
	code    string
	success bool
}

// decodeEnvelope reads code (string or number), success (required; null is
// false) and data (once, handed to data), names in any case as encoding/json.
func decodeEnvelope(dec *json.Decoder, data func(*json.Decoder) error) (env envelope, err error) {
	dec.UseNumber()
	tok, err := dec.Token()
	if err == nil && tok != json.Delim('{') {
		err = errShape
	}
	var hasSuccess, hasData bool
	var dataErr error // data of another shape: an error, of the reason the rest says when success is false
	for err == nil && dec.More() {
		if tok, err = dec.Token(); err != nil {
			break
		}
		name, _ := tok.(string)
		if name = strings.ToLower(name); name == "data" {
			if hasData {
				return env, errShape
			}
			if hasData, err = true, data(dec); readPast(err) {
				dataErr, err = err, nil
			}
			continue
		}
		if tok, err = dec.Token(); err != nil {
			break
		}
		switch v := tok.(type) {
		case json.Delim:
			if err = skipRest(dec); name == "code" || name == "success" {
				err = errShape
			}
		case string, json.Number:
			if name == "code" {
				env.code = fmt.Sprint(v)
			}
		case bool, nil:
			if name == "success" {
				env.success, hasSuccess = v == true, true
			}
		}
	}
	if err == nil {
		if _, err = dec.Token(); err == nil && !hasSuccess { // '}', and success is required
			err = errShape
		}
	}
	if dataErr != nil && (err != nil || env.success) {
		err = dataErr
	}
	if err == io.EOF {
		err = io.ErrUnexpectedEOF
	}
	return env, err
}
