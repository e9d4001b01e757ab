// Package client is a typed client for the digital-human platform's OpenAPI
// v2: conversation details, concurrency, active sessions and closing one
// session or all of an app's, with access tokens minted from appId + appKey
// or given ready-made.
package client

import (
	"context"
	"encoding/json"
	"errors"
	"io"
	"maps"
	"net/http"
	"net/url"
	"slices"
	"strconv"
	"strings"
	"sync"
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

// Endpoints lists every endpoint the client calls.
var Endpoints = []string{EndpointConversation, EndpointConcurrency, EndpointSessions, EndpointStop, EndpointStopAll}

// PoolOptions are the process-wide parts of a Pool.
type PoolOptions struct {
	Metrics   *Metrics // instruments every call (nil: none)
	UserAgent string
	// Now is the clock of token minting and Retry-After (nil: time.Now).
	Now func() time.Time
	// OnSecretFileError (may be nil) is told, for logging, each time a key
	// or token file that changed is refused; the last good secret stays in
	// use. Metrics counts these too.
	OnSecretFileError SecretFileHook
}

// Pool holds one Client per configured app. They share one HTTP client of
// prometheus/common (TLS, proxy, http_headers, redirects) and its
// connections.
type Pool struct {
	http     *http.Client
	base     *url.URL
	timeout  time.Duration
	maxBytes int64
	metrics  *Metrics
	now      func() time.Time
	clients  map[string]*Client

	mu       sync.Mutex
	inFlight int  // calls begun and not ended
	closed   bool // Close was called
}

// NewPool builds the clients for every app of cfg. It makes no request.
func NewPool(cfg *config.Config, opts PoolOptions) (*Pool, error) {
	base, err := url.Parse(cfg.API.BaseURL)
	if err != nil {
		return nil, errors.New("api.base_url: not a valid URL")
	}
	hc, err := promconfig.NewClientFromConfig(cfg.API.HTTPClientConfig, "duix_exporter",
		promconfig.WithUserAgent(opts.UserAgent), promconfig.WithIdleConnTimeout(90*time.Second))
	if err != nil {
		return nil, err
	}
	p := &Pool{
		http: hc, base: base, timeout: time.Duration(cfg.API.Timeout), maxBytes: cfg.API.MaxResponseBytes,
		metrics: opts.Metrics, now: opts.Now, clients: make(map[string]*Client, len(cfg.Apps)),
	}
	if p.now == nil {
		p.now = time.Now
	}
	if p.maxBytes <= 0 {
		p.maxBytes = config.DefaultMaxResponseBytes
	}
	hook := func(kind, path string, err error) {
		opts.Metrics.secretFileRefused(kind)
		if opts.OnSecretFileError != nil {
			opts.OnSecretFileError(kind, path, err)
		}
	}
	redirect := hc.CheckRedirect
	if h := cfg.API.HTTPClientConfig.HTTPHeaders; h != nil && slices.ContainsFunc(slices.Collect(maps.Values(h.Headers)),
		func(h promconfig.Header) bool { return len(h.Secrets)+len(h.Files) > 0 }) {
		// prometheus/common sends http_headers on every hop: secret ones
		// are kept home by not leaving it.
		redirect = func(req *http.Request, via []*http.Request) error {
			switch {
			case !sameOrigin(req.URL, base):
				return http.ErrUseLastResponse
			case hc.CheckRedirect != nil:
				return hc.CheckRedirect(req, via)
			case len(via) >= 10:
				return errors.New("stopped after 10 redirects")
			}
			return nil
		}
	}
	for _, app := range cfg.Apps {
		tokens := newTokenSource(app, p.now, hook)
		p.clients[app.Name] = &Client{
			p: p, name: app.Name, appID: app.AppID, tokens: tokens,
			appQuery: url.Values{"appId": {app.AppID}}.Encode(),
			http: &http.Client{
				Transport:     &tokenRoundTripper{next: hc.Transport, base: base, header: cfg.API.AuthHeader, tokens: tokens},
				CheckRedirect: redirect,
			},
		}
	}
	return p, nil
}

// Client returns the client of the app with that name, or nil.
func (p *Pool) Client(name string) *Client { return p.clients[name] }

// Close closes the pool's idle connections once its last call in flight
// has ended (at once when none is). Calls made after Close still work;
// their connections are closed when they end.
func (p *Pool) Close() {
	p.mu.Lock()
	defer p.mu.Unlock()
	p.closed = true
	if p.inFlight == 0 {
		p.http.CloseIdleConnections()
	}
}

func (p *Pool) begin() {
	p.mu.Lock()
	defer p.mu.Unlock()
	p.inFlight++
}

func (p *Pool) end() {
	p.mu.Lock()
	defer p.mu.Unlock()
	if p.inFlight--; p.inFlight == 0 && p.closed {
		p.http.CloseIdleConnections()
	}
}

// Client calls the platform on behalf of one app.
type Client struct {
	p                     *Pool
	name, appID, appQuery string
	tokens                *tokenSource
	http                  *http.Client

	mu         sync.Mutex
	retryAfter time.Time
}

// RetryAfter is the time before which the client refuses to call the
// platform because of an earlier 429 (zero when not rate limited).
func (c *Client) RetryAfter() time.Time {
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.p.now().Before(c.retryAfter) {
		return c.retryAfter
	}
	return time.Time{}
}

// backOff records that the platform asked for no calls for d (a minute
// when it did not say how long).
func (c *Client) backOff(d time.Duration) {
	if d <= 0 {
		d = time.Minute
	}
	c.mu.Lock()
	defer c.mu.Unlock()
	c.retryAfter = c.p.now().Add(d)
}

// parseRetryAfter reads delay-seconds or an HTTP date, clamped to
// [0, 1h] before it becomes a duration.
func parseRetryAfter(v string, now time.Time) time.Duration {
	v = strings.TrimSpace(v)
	if n, err := strconv.ParseUint(v, 10, 64); err == nil || errors.Is(err, strconv.ErrRange) {
		return time.Duration(min(n, 3600)) * time.Second // ParseUint gives its maximum when out of range
	}
	if t, err := http.ParseTime(v); err == nil {
		if limit := now.Add(time.Hour); t.After(limit) {
			t = limit
		}
		return max(t.Sub(now), 0)
	}
	return 0
}

// Concurrency returns the app's real-time concurrency status
// (GET /getconcurrentNumber?appId=).
func (c *Client) Concurrency(ctx context.Context) (*Concurrency, error) {
	return getObject[Concurrency](ctx, c, EndpointConcurrency, c.appQuery)
}

// Conversation returns the details of one conversation
// (GET /getConversationById?conversationId=).
func (c *Client) Conversation(ctx context.Context, id string) (*Conversation, error) {
	return getObject[Conversation](ctx, c, EndpointConversation, url.Values{"conversationId": {id}}.Encode())
}

// getObject calls an endpoint whose data is one object; null is an error.
func getObject[T any](ctx context.Context, c *Client, endpoint, query string) (*T, error) {
	var out *T
	if _, err := c.call(ctx, endpoint, query, func(dec *json.Decoder) error { return dec.Decode(&out) }); err != nil {
		return nil, err
	}
	if out == nil {
		return nil, &Error{Endpoint: endpoint, App: c.name, Reason: ReasonDecode, detail: "data is null", err: errShape}
	}
	return out, nil
}

// StopSession closes an active session (GET /sessionStop?uuid=). An unknown
// or ended session is an error for which IsNotFound holds.
func (c *Client) StopSession(ctx context.Context, sessionID string) (*StopResult, error) {
	return c.stop(ctx, EndpointStop, url.Values{"uuid": {sessionID}}.Encode())
}

// StopAllSessions closes every session of the app
// (GET /distroyCallSessionsByAppId?appId=). Its data is not documented: it
// is returned as it came, and only the envelope says whether the call
// succeeded.
func (c *Client) StopAllSessions(ctx context.Context) (*StopResult, error) {
	return c.stop(ctx, EndpointStopAll, c.appQuery)
}

func (c *Client) stop(ctx context.Context, endpoint, query string) (*StopResult, error) {
	var raw json.RawMessage
	env, err := c.call(ctx, endpoint, query, func(dec *json.Decoder) error { return dec.Decode(&raw) })
	if err != nil {
		return nil, err
	}
	return &StopResult{Code: env.code, Message: env.message, Data: raw}, nil
}

// call makes one GET of endpoint with query and decodes the envelope of
// the answer, at most max_response_bytes of it, handing the data member to
// data as it streams past.
func (c *Client) call(ctx context.Context, endpoint, query string, data func(*json.Decoder) error) (env envelope, err error) {
	defer func() {
		var e *Error
		if errors.As(err, &e) {
			e.Endpoint, e.App = endpoint, c.name
		}
	}()
	if until := c.RetryAfter(); !until.IsZero() {
		return env, &Error{Reason: ReasonRateLimited, RetryAfter: until.Sub(c.p.now()).Round(time.Second), detail: "no call until the platform's Retry-After"}
	}
	c.p.begin()
	defer c.p.end()
	if c.p.timeout > 0 {
		var cancel context.CancelFunc
		ctx, cancel = context.WithTimeout(ctx, c.p.timeout)
		defer cancel()
	}
	u := c.p.base.JoinPath(endpoint)
	u.RawQuery = query
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, u.String(), nil)
	if err != nil {
		return env, &Error{Reason: ReasonNetwork, detail: "cannot build the request", err: err}
	}
	req.Header.Set("Accept", "application/json")
	start := time.Now()
	resp, err := c.http.Do(req)
	if err != nil {
		e := transportError(err)
		if e.Reason != ReasonAuth { // else no request was sent
			c.p.metrics.observe(endpoint, 0, time.Since(start))
		}
		return env, e
	}
	defer func() {
		_, _ = io.CopyN(io.Discard, resp.Body, 4<<10) // so that the connection may be reused
		resp.Body.Close()
		c.p.metrics.observe(endpoint, resp.StatusCode, time.Since(start))
	}()

	if resp.StatusCode < 200 || resp.StatusCode > 299 {
		e := &Error{Reason: ReasonHTTP, Status: resp.StatusCode}
		switch resp.StatusCode {
		case http.StatusUnauthorized, http.StatusForbidden:
			e.Reason = ReasonAuth
			c.tokens.refused()
		case http.StatusTooManyRequests:
			e.Reason, e.RetryAfter = ReasonRateLimited, parseRetryAfter(resp.Header.Get("Retry-After"), c.p.now())
			c.backOff(e.RetryAfter)
		}
		return env, e
	}
	tooLarge := &Error{Reason: ReasonDecode, detail: ErrBodyTooLarge.Error(), err: ErrBodyTooLarge}
	if resp.ContentLength > c.p.maxBytes {
		return env, tooLarge
	}
	body := &io.LimitedReader{R: resp.Body, N: c.p.maxBytes + 1}
	env, err = decodeEnvelope(json.NewDecoder(body), data)
	switch {
	case err == nil:
	case body.N <= 0:
		return env, tooLarge
	case ctx.Err() != nil:
		return env, transportError(ctx.Err())
	case isDecodeError(err):
		return env, &Error{Reason: ReasonDecode, detail: "not the JSON the endpoint documents", err: err}
	default:
		return env, transportError(err)
	}
	if !env.success {
		e := &Error{Reason: ReasonAPI, Code: envelopeCode(env.code), detail: "success is false"}
		switch env.code {
		case "401", "403":
			e.Reason = ReasonAuth
			c.tokens.refused()
		case "429":
			e.Reason, e.RetryAfter = ReasonRateLimited, time.Minute
			c.backOff(e.RetryAfter)
		}
		return env, e
	}
	return env, nil
}

func isDecodeError(err error) bool {
	var (
		syntax *json.SyntaxError
		typ    *json.UnmarshalTypeError
	)
	return errors.As(err, &syntax) || errors.As(err, &typ) || errors.Is(err, io.ErrUnexpectedEOF) || errors.Is(err, errShape)
}

// envelope is what the answer says around its data
// (docs/platform-api.md#envelope).
type envelope struct {
	code, message string
	success       bool
}

// decodeEnvelope walks the answer's top-level object: code (a string, or a
// number as it is written), message or msg, success (required; null is
// false) and data (at most once), handed to data; other members are
// skipped. Names match in any case, as encoding/json matches fields.
func decodeEnvelope(dec *json.Decoder, data func(*json.Decoder) error) (env envelope, err error) {
	defer func() {
		if err == io.EOF {
			err = io.ErrUnexpectedEOF
		}
	}()
	dec.UseNumber()
	if tok, err := dec.Token(); err != nil {
		return env, err
	} else if tok != json.Delim('{') {
		return env, errShape
	}
	var hasSuccess, hasData bool
	for dec.More() {
		tok, err := dec.Token()
		if err != nil {
			return env, err
		}
		name, _ := tok.(string)
		switch name = strings.ToLower(name); name {
		case "data":
			if hasData {
				return env, errShape
			}
			hasData = true
			err = data(dec)
		default:
			if tok, err = dec.Token(); err != nil {
				return env, err
			}
			switch v := tok.(type) {
			case json.Delim:
				if name == "code" || name == "success" {
					return env, errShape
				}
				err = skipRest(dec)
			case string:
				switch {
				case name == "code":
					env.code = v
				case name == "message" || name == "msg" && env.message == "":
					env.message = v
				}
			case json.Number:
				if name == "code" {
					env.code = v.String()
				}
			case bool:
				if name == "success" {
					env.success, hasSuccess = v, true
				}
			case nil:
				if name == "success" {
					env.success, hasSuccess = false, true
				}
			}
		}
		if err != nil {
			return env, err
		}
	}
	if _, err := dec.Token(); err != nil { // '}'
		return env, err
	}
	if !hasSuccess {
		return env, errShape
	}
	return env, nil
}
