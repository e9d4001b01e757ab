// Package client is a typed client for the digital-human platform's OpenAPI
// v2: conversation details, concurrency, active sessions and closing one
// session or all of an app's, with access tokens minted from appId + appKey or given ready-made.
package client

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"net/url"
	"slices"
	"strconv"
	"strings"
	"sync"
	"time"
	"unicode/utf8"

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

// Transport is what every app's client shares: the HTTP client with its
// connection pool, the base address, limits and instrumentation.
type Transport struct {
	// HTTP sends the requests. Its Timeout should be zero: deadlines come
	// from Timeout and from the caller's context.
	HTTP *http.Client
	// BaseURL ends in the sdk area and v2, e.g.
	// https://app.duix.ai/duix-openapi-v2/sdk/v2.
	BaseURL *url.URL
	// HeaderStyle is config.AuthHeaderAuthorization (default) or
	// config.AuthHeaderToken.
	HeaderStyle string
	// Timeout bounds each request (0: only the caller's context).
	Timeout time.Duration
	// MaxResponseBytes caps each body (0: config.DefaultMaxResponseBytes).
	MaxResponseBytes int64
	// Metrics instruments every request (nil: none).
	Metrics *Metrics
	// UserAgent is sent with every request.
	UserAgent string
	// Secrets are the other credentials the transport sends (proxy user
	// info and headers): like the token, they never appear in an error.
	Secrets []string
	// Headers are the values of every http_headers header that has a
	// secret or a file, in the order prometheus/common would send them
	// (values, secrets, files). The client adds them itself: an answer is
	// redacted of the very values its request read from files, and a
	// redirect away from the origin carries none of them (see
	// keepCredentialsHome).
	Headers []Header

	// deadlines are the contexts shared by calls begun together (see
	// callContext).
	deadlines deadlines

	// The addresses of the endpoints called at every scrape, without
	// their query, built once for every client.
	scrapeURLs                  sync.Once
	concurrencyURL, sessionsURL string
}

// scrapeURL returns the address of the scrape endpoint (EndpointConcurrency
// or EndpointSessions) for the query appQuery. Each client keeps only its
// query: two whole addresses per app were 1 MB of live heap at 5000 apps.
func (t *Transport) scrapeURL(endpoint, appQuery string) string {
	t.scrapeURLs.Do(func() {
		t.concurrencyURL = t.BaseURL.JoinPath(EndpointConcurrency).String()
		t.sessionsURL = t.BaseURL.JoinPath(EndpointSessions).String()
	})
	if endpoint == EndpointConcurrency {
		return t.concurrencyURL + "?" + appQuery
	}
	return t.sessionsURL + "?" + appQuery
}

// Client calls the platform on behalf of one app.
type Client struct {
	t      *Transport
	appID  string
	tokens TokenSource
	now    func() time.Time
	// appQuery is the query of the calls made at every scrape, built once
	// (see Transport.scrapeURL).
	appQuery string

	mu         sync.Mutex
	retryAfter time.Time
	// forms caches the forms of the credentials of the last request, for
	// redacting answers (see secretForms).
	formsToken string
	formsFiles []string
	forms      [][]byte
}

// New returns a client for appID using tokens from ts.
func New(t *Transport, appID string, ts TokenSource) *Client {
	c := &Client{t: t, appID: appID, tokens: ts, now: time.Now}
	c.appQuery = url.Values{"appId": {appID}}.Encode()
	return c
}

// url is the address of endpoint with query.
func (c *Client) url(endpoint string, query url.Values) string {
	u := c.t.BaseURL.JoinPath(endpoint)
	u.RawQuery = query.Encode()
	return u.String()
}

// RetryAfter is the time before which the client refuses to call the
// platform because of an earlier 429 (zero when not rate limited).
func (c *Client) RetryAfter() time.Time {
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.now().Before(c.retryAfter) {
		return c.retryAfter
	}
	return time.Time{}
}

// envelope holds the fields around data (docs/platform-api.md#envelope).
type envelope struct {
	Code    Code
	Message string
	Msg     string
	Success *bool
	HasData bool
}

// Code is the envelope's code: a string, also accepted as a JSON number.
type Code string

// UnmarshalJSON implements json.Unmarshaler.
func (c *Code) UnmarshalJSON(b []byte) error {
	b = bytes.TrimSpace(b)
	switch {
	case len(b) > 0 && b[0] == '"':
		var s string
		if err := unquote(b, &s); err != nil {
			return err
		}
		*c = Code(s)
	case bytes.Equal(b, []byte("null")):
		*c = ""
	default:
		var n json.Number
		if err := json.Unmarshal(b, &n); err != nil {
			return errors.New("code is neither a string nor a number")
		}
		*c = Code(n.String())
	}
	return nil
}

// dataFunc decodes the data member from dec, which is positioned at its value.
type dataFunc func(dec *json.Decoder) error

// data says what to do with an answer's data member. An answer read whole
// has its data decoded into into (a pointer), in the same pass as the
// envelope; when that fails, or fits (may be nil) says that what into
// received from the (redacted) body is not of the expected shape, and there
// is a stream, the data is decoded again by stream, whose outcome stands. A
// long answer goes to stream when there is one, else into.
type data struct {
	into   any
	fits   func(body []byte) bool
	stream dataFunc
	// forms, when not nil, receives before the answer is decoded the forms
	// of the secrets of the call that what is decoded must be redacted of
	// again (see decodeEnvelope), for a stream to redact what it hands on.
	forms *[][]byte
}

// do performs one GET of rawURL, the address of endpoint, and decodes the
// envelope, handing data to d.
func (c *Client) do(ctx context.Context, endpoint, rawURL string, d data) (env envelope, err error) {
	if until := c.RetryAfter(); !until.IsZero() {
		return env, &RateLimitedError{Endpoint: endpoint, Until: until}
	}
	ctx, cancel := c.t.callContext(ctx)
	defer cancel()
	token, err := c.tokens.Token(ctx)
	if err != nil {
		return env, err
	}
	files, err := c.t.readHeaderFiles()
	if err != nil {
		return env, &AuthError{Err: err}
	}
	cred := sent{token: token, files: files}
	defer func() {
		if r, ok := c.tokens.(refusable); ok && err != nil && Reason(err) == ReasonAuth {
			r.refused() // a rotated key or token file is read before the next call
		}
	}()

	req, err := http.NewRequestWithContext(ctx, http.MethodGet, rawURL, nil)
	if err != nil {
		return env, &NetworkError{Endpoint: endpoint, Err: err}
	}
	req.Header.Set("Accept", "application/json")
	if c.t.UserAgent != "" {
		req.Header.Set("User-Agent", c.t.UserAgent)
	}
	if c.t.HeaderStyle == config.AuthHeaderToken {
		req.Header.Set(tokenHeader, token)
	} else {
		req.Header.Set("Authorization", "Bearer "+token)
	}
	c.t.addHeaders(req.Header, files)

	start := time.Now()
	status := ""
	defer func() { c.t.Metrics.observe(endpoint, status, time.Since(start)) }()

	resp, err := c.t.HTTP.Do(req)
	if err != nil {
		status = "error"
		return env, c.transportError(ctx, endpoint, err, cred)
	}
	defer func() {
		// Drain a little so the connection can be reused, then close.
		_, _ = io.CopyN(io.Discard, resp.Body, 4<<10)
		resp.Body.Close()
	}()
	status = "200"
	if resp.StatusCode != http.StatusOK {
		status = strconv.Itoa(resp.StatusCode)
	}

	maxBytes := c.t.MaxResponseBytes
	if maxBytes <= 0 {
		maxBytes = config.DefaultMaxResponseBytes
	}
	body := &limitedBody{r: resp.Body, left: maxBytes}

	if resp.StatusCode < 200 || resp.StatusCode > 299 {
		// Read well past what is shown, so that a secret that straddles the
		// cut is still whole when it is redacted.
		b, rerr := io.ReadAll(io.LimitReader(body, errorBodyBytes+1))
		if rerr != nil && len(b) == 0 && ctx.Err() != nil {
			return env, c.transportError(ctx, endpoint, rerr, cred)
		}
		more := rerr != nil || len(b) > errorBodyBytes
		b = b[:min(len(b), errorBodyBytes)]
		herr := &HTTPError{Endpoint: endpoint, StatusCode: resp.StatusCode, Snippet: c.clean(b, more, cred)}
		if resp.StatusCode == http.StatusTooManyRequests {
			herr.RetryAfter = parseRetryAfter(resp.Header.Get("Retry-After"), c.now())
			c.backOff(herr.RetryAfter)
		}
		return env, herr
	}
	if resp.ContentLength > maxBytes {
		// Announced too large: refused before reading any of it.
		return env, &DecodeError{Endpoint: endpoint, Err: fmt.Errorf("%w (%d bytes, Content-Length %d)", ErrBodyTooLarge, maxBytes, resp.ContentLength)}
	}

	env, again, err := decodeEnvelope(body, d, c.secretForms(cred))
	if err == nil {
		redactDecoded(&env, again) // its code and message, when they streamed
		if d.into != nil {
			redactDecoded(d.into, again)
		}
	}
	if err != nil {
		if cerr, ok := isCallbackError(err); ok {
			return env, cerr
		}
		switch {
		case errors.Is(body.readErr, ErrBodyTooLarge):
			return env, &DecodeError{Endpoint: endpoint, Err: fmt.Errorf("%w (%d bytes)", ErrBodyTooLarge, maxBytes)}
		case body.readErr != nil:
			return env, c.transportError(ctx, endpoint, body.readErr, cred)
		case ctx.Err() != nil:
			return env, c.transportError(ctx, endpoint, ctx.Err(), cred)
		}
		return env, &DecodeError{Endpoint: endpoint, Err: errors.New(c.clean([]byte(err.Error()), false, cred))}
	}
	if env.Success == nil {
		return env, &DecodeError{Endpoint: endpoint, Err: errors.New("envelope has no success flag")}
	}
	if !*env.Success {
		msg := env.Message
		if msg == "" {
			msg = env.Msg
		}
		aerr := &APIError{Endpoint: endpoint, Code: c.clean([]byte(env.Code), false, cred), Message: c.clean([]byte(msg), false, cred)}
		if aerr.Code == "429" {
			c.backOff(time.Minute)
		}
		return env, aerr
	}
	return env, nil
}

// backOff records that the platform asked for no calls for d.
func (c *Client) backOff(d time.Duration) {
	if d <= 0 {
		d = time.Minute
	}
	c.mu.Lock()
	defer c.mu.Unlock()
	if until := c.now().Add(d); until.After(c.retryAfter) {
		c.retryAfter = until
	}
}

// parseRetryAfter reads delay-seconds or an HTTP date.
func parseRetryAfter(v string, now time.Time) time.Duration {
	v = strings.TrimSpace(v)
	if v == "" {
		return 0
	}
	if n, err := strconv.Atoi(v); err == nil {
		if n < 0 {
			return 0
		}
		return min(time.Duration(n)*time.Second, time.Hour)
	}
	if t, err := http.ParseTime(v); err == nil {
		return min(max(t.Sub(now), 0), time.Hour)
	}
	return 0
}

// wholeBody is the size up to which a body is read whole and decoded in one
// pass. A larger one (a long session list) is decoded as it streams, so
// that memory stays flat whatever its length. Walking the envelope token by
// token costs encoding/json a Decode (and a discarded syntax error) per
// member: for the small answers of almost every call, one pass halves the
// client's CPU (see docs/performance.md).
const wholeBody = 64 << 10

// decodeEnvelope reads the top-level object, keeping the envelope fields and
// handing data to decode. Member names match case-insensitively, as
// encoding/json matches struct fields, and the last occurrence of a member
// wins.
//
// A body read whole has every form of the secrets replaced before it is
// decoded, so that an upstream that puts a credential it received into its
// answer (a name, a message, a session record) cannot have it exported,
// printed or logged. What is decoded must be redacted again (see
// redactDecoded) of the forms it returns, again, which it also hands to
// d.forms before decoding: every form for a long answer, which streams,
// and for one with an escape (a backslash) or with bytes that are not
// UTF-8 (decoded, they read as U+FFFD), which may spell a secret in a way
// no form does; none for a body read whole without either, whose strings
// and raw members are parts of it as it was redacted. That is
// almost every answer, and the second pass was 1.6% of the exporter's CPU
// in a profile of `make load`. A form shorter than minRawForm is never
// replaced in the body, only in what is decoded (see splitShort).
func decodeEnvelope(r io.Reader, d data, forms [][]byte) (env envelope, again [][]byte, err error) {
	buf := bodyBuffers.Get().(*bytes.Buffer)
	defer func() {
		if buf.Cap() <= maxPooledBody { // a long answer's buffer is left to the GC
			buf.Reset()
			bodyBuffers.Put(buf)
		}
	}()
	if _, err := buf.ReadFrom(io.LimitReader(r, wholeBody+1)); err != nil {
		return env, forms, err
	}
	head := buf.Bytes()
	whole := len(head) <= wholeBody
	long, short := splitShort(forms)
	if whole {
		// Checked as redacted, which is what is decoded: a form that
		// ends inside a character leaves bytes that are not UTF-8.
		head = redactAll(head, long)
	}
	again = short
	if !whole || bytes.IndexByte(head, '\\') >= 0 || !utf8.Valid(head) {
		again = forms
	}
	if d.forms != nil {
		*d.forms = again
	}
	if whole {
		env, err = decodeWhole(head, d)
		return env, again, err
	}
	decode := d.stream
	if decode == nil {
		decode = func(dec *json.Decoder) error { return dec.Decode(d.into) }
	}
	env, err = decodeStream(io.MultiReader(bytes.NewReader(head), r), decode)
	return env, again, err
}

// bodyBuffers hold answers while they are decoded; what is decoded is
// copied out of them (strings, raw messages), so they are reused.
var bodyBuffers = sync.Pool{New: func() any { return new(bytes.Buffer) }}

// maxPooledBody bounds the buffers kept for reuse, far above the answers
// of a scrape (a few hundred bytes).
const maxPooledBody = 16 << 10

// decodeWhole decodes a body held in memory in one pass. Like decodeStream,
// it reads the first JSON value and ignores what follows it.
func decodeWhole(b []byte, d data) (env envelope, _ error) {
	if t := bytes.TrimSpace(b); len(t) == 0 {
		return env, io.ErrUnexpectedEOF
	} else if t[0] != '{' {
		return env, errors.New("the answer is not a JSON object")
	}
	// Into the caller's value directly, in this one pass; else, or when
	// that does not fit, kept raw for the caller's stream (null included).
	var (
		w       envelopeHead
		raw     json.RawMessage
		err     error
		decoded bool
	)
	if d.into != nil {
		err = unmarshalFirst(b, &struct {
			*envelopeHead
			Data any `json:"data"`
		}{&w, d.into})
		decoded = d.stream == nil || (err == nil && (d.fits == nil || d.fits(b)))
		if !decoded {
			w, err = envelopeHead{}, nil
		}
	}
	if !decoded {
		v := struct {
			*envelopeHead
			Data *json.RawMessage `json:"data"`
		}{&w, &raw}
		err = unmarshalFirst(b, &v)
		if v.Data == nil { // null sets the pointer to nil
			raw = json.RawMessage("null")
		}
	}
	if err != nil {
		if err == io.EOF {
			err = io.ErrUnexpectedEOF
		}
		return env, err
	}
	env = envelope{Code: w.Code, Message: string(w.Message), Msg: string(w.Msg), HasData: raw != nil}
	if w.Success.set {
		env.Success = &w.Success.v
	}
	if !decoded && raw != nil && d.stream != nil {
		if err := d.stream(json.NewDecoder(bytes.NewReader(raw))); err != nil {
			if err == io.EOF {
				err = io.ErrUnexpectedEOF
			}
			return env, err
		}
	}
	return env, nil
}

// unmarshalFirst decodes the first JSON value of b into v, ignoring what
// follows it, as a json.Decoder does. A body that is that one value (every
// body, in practice) is decoded by json.Unmarshal, which does not copy it.
func unmarshalFirst(b []byte, v any) error {
	err := json.Unmarshal(b, v)
	var syntax *json.SyntaxError
	if errors.As(err, &syntax) {
		return json.NewDecoder(bytes.NewReader(b)).Decode(v)
	}
	return err
}

// envelopeHead is the envelope without its data.
type envelopeHead struct {
	Code    Code        `json:"code"`
	Message looseString `json:"message"`
	Msg     looseString `json:"msg"`
	Success flag        `json:"success"`
}

// flag is the envelope's success: true or false, null read as false.
type flag struct{ set, v bool }

// UnmarshalJSON implements json.Unmarshaler.
func (f *flag) UnmarshalJSON(b []byte) error {
	switch string(b) {
	case "true":
		*f = flag{set: true, v: true}
	case "false", "null":
		*f = flag{set: true}
	default:
		return errors.New("success: not a boolean")
	}
	return nil
}

// looseString is a string or null; anything else is kept as its JSON text,
// since a message is only ever shown to people.
type looseString string

// UnmarshalJSON implements json.Unmarshaler.
func (s *looseString) UnmarshalJSON(b []byte) error {
	switch {
	case len(b) > 0 && b[0] == '"':
		return unquote(b, (*string)(s))
	case string(b) != "null":
		*s = looseString(b)
	}
	return nil
}

// envelopeMember returns the envelope member that key names, matched
// case-insensitively as encoding/json matches struct fields, or "".
func envelopeMember(key string) string {
	for _, m := range []string{"code", "message", "msg", "success", "data"} {
		if strings.EqualFold(key, m) {
			return m
		}
	}
	return ""
}

// decodeStream walks the top-level object token by token, handing data to
// decode as it streams past.
func decodeStream(r io.Reader, decode dataFunc) (env envelope, err error) {
	defer func() {
		if err == io.EOF { // the body ended inside the object
			err = io.ErrUnexpectedEOF
		}
	}()
	dec := json.NewDecoder(r)
	dec.UseNumber()
	if err := expectDelim(dec, '{'); err != nil {
		return env, err
	}
	for dec.More() {
		tok, err := dec.Token()
		if err != nil {
			return env, err
		}
		key, _ := tok.(string)
		switch envelopeMember(key) {
		case "code":
			err = dec.Decode(&env.Code)
		case "message":
			err = decodeLooseString(dec, &env.Message)
		case "msg":
			err = decodeLooseString(dec, &env.Msg)
		case "success":
			var b bool
			if err = dec.Decode(&b); err == nil {
				env.Success = &b
			} else {
				err = fmt.Errorf("success: %w", err)
			}
		case "data":
			env.HasData = true
			if decode == nil {
				err = skipValue(dec)
			} else {
				err = decode(dec)
			}
		default:
			err = skipValue(dec)
		}
		if err != nil {
			return env, err
		}
	}
	if err := expectDelim(dec, '}'); err != nil {
		return env, err
	}
	return env, nil
}

// decodeLooseString accepts a string or null; anything else is kept as its
// JSON text, since a message is only ever shown to people.
func decodeLooseString(dec *json.Decoder, s *string) error {
	var raw json.RawMessage
	if err := dec.Decode(&raw); err != nil {
		return err
	}
	if len(raw) > 0 && raw[0] == '"' {
		return json.Unmarshal(raw, s)
	}
	if string(raw) != "null" {
		*s = string(raw)
	}
	return nil
}

func expectDelim(dec *json.Decoder, want json.Delim) error {
	tok, err := dec.Token()
	if err != nil {
		if err == io.EOF {
			return io.ErrUnexpectedEOF
		}
		return err
	}
	if d, ok := tok.(json.Delim); !ok || d != want {
		return fmt.Errorf("expected %q, found %s", want, describeToken(tok))
	}
	return nil
}

func describeToken(tok json.Token) string {
	switch v := tok.(type) {
	case json.Delim:
		return fmt.Sprintf("%q", v.String())
	case string:
		return "a string"
	case json.Number, float64:
		return "a number"
	case bool:
		return "a boolean"
	case nil:
		return "null"
	}
	return fmt.Sprintf("%T", tok)
}

// skipValue consumes one JSON value without keeping it.
func skipValue(dec *json.Decoder) error {
	tok, err := dec.Token()
	if err != nil {
		return err
	}
	if tok == json.Delim('{') || tok == json.Delim('[') {
		return skipRest(dec)
	}
	return nil
}

// skipRest consumes the rest of an object or array whose opening delimiter
// has been read.
func skipRest(dec *json.Decoder) error {
	for depth := 1; depth > 0; {
		tok, err := dec.Token()
		if err != nil {
			return err
		}
		switch tok {
		case json.Delim('{'), json.Delim('['):
			depth++
		case json.Delim('}'), json.Delim(']'):
			depth--
		}
	}
	return nil
}

// limitedBody caps what is read and remembers the first read error that is
// not io.EOF, so that a reset connection is told apart from bad JSON.
type limitedBody struct {
	r       io.Reader
	left    int64
	readErr error
}

func (b *limitedBody) Read(p []byte) (int, error) {
	if b.left <= 0 {
		// Probe for one more byte: a body of exactly the cap is fine.
		var one [1]byte
		n, err := b.r.Read(one[:])
		if n > 0 {
			b.readErr = ErrBodyTooLarge
			return 0, ErrBodyTooLarge
		}
		return 0, err
	}
	if int64(len(p)) > b.left {
		p = p[:b.left]
	}
	n, err := b.r.Read(p)
	b.left -= int64(n)
	if err != nil && err != io.EOF && b.readErr == nil {
		b.readErr = err
	}
	return n, err
}

// errorBodyBytes bounds what is read of an error body.
const errorBodyBytes = 64 << 10

// sent is what a request sends that is secret: its token, and the values
// it read from the files of the transport's Headers.
type sent struct {
	token string
	files []string
}

// fileSecrets are the secrets of the values read from files (see
// headerSecrets).
func (cred sent) fileSecrets() []string {
	var out []string
	for _, v := range cred.files {
		out = append(out, headerSecrets(v)...)
	}
	return out
}

// clean passes upstream text through the package's one redaction and
// truncation path, hiding every credential the request sent.
func (c *Client) clean(text []byte, more bool, cred sent) string {
	return clean(text, more, c.secrets(cred))
}

// secretForms lists every form of every credential a request sends,
// longest first (see asBytes). They are kept for the next request that
// sends the same: the token changes once in its lifetime, and header
// files seldom (their forms made at every request were three times the
// cost of the rest of redacting an answer).
func (c *Client) secretForms(cred sent) [][]byte {
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.forms == nil || c.formsToken != cred.token || !slices.Equal(c.formsFiles, cred.files) {
		var forms []string
		for _, s := range c.secrets(cred) {
			forms = append(forms, secretForms(s)...)
		}
		// A new slice: callers may still read the old one.
		c.forms, c.formsToken, c.formsFiles = asBytes(forms), cred.token, cred.files
	}
	return c.forms
}

// secrets lists every credential a request sends.
func (c *Client) secrets(cred sent) []string {
	secrets := append([]string{cred.token}, c.t.Secrets...)
	secrets = append(secrets, cred.fileSecrets()...)
	if k, ok := c.tokens.(keyed); ok {
		secrets = append(secrets, k.signingKey())
	}
	return secrets
}

// transportError classifies an error from sending a request or reading its
// body, with its text cleaned like any upstream text.
func (c *Client) transportError(ctx context.Context, endpoint string, err error, cred sent) error {
	return classifyTransport(ctx, endpoint, err, func(s string) string { return c.clean([]byte(s), false, cred) })
}

// Concurrency returns the app's real-time concurrency status
// (GET /getconcurrentNumber?appId=).
func (c *Client) Concurrency(ctx context.Context) (*Concurrency, error) {
	return getObject[Concurrency](ctx, c, EndpointConcurrency, c.t.scrapeURL(EndpointConcurrency, c.appQuery))
}

// Conversation returns the details of one conversation
// (GET /getConversationById?conversationId=).
func (c *Client) Conversation(ctx context.Context, id string) (*Conversation, error) {
	return getObject[Conversation](ctx, c, EndpointConversation, c.url(EndpointConversation, url.Values{"conversationId": {id}}))
}

// getObject calls an endpoint whose data is one object; null data is an
// error.
func getObject[T any](ctx context.Context, c *Client, endpoint, rawURL string) (*T, error) {
	var out *T // stays nil when data is null
	_, err := c.do(ctx, endpoint, rawURL, data{into: &out})
	if err != nil {
		return nil, err
	}
	if out == nil {
		return nil, &DecodeError{Endpoint: endpoint, Err: errors.New("data is null")}
	}
	return out, nil
}

// StopSession closes an active session (GET /sessionStop?uuid=). An unknown
// or already ended session gives an *APIError for which IsNotFound may hold.
func (c *Client) StopSession(ctx context.Context, sessionID string) (*StopResult, error) {
	return c.stop(ctx, EndpointStop, c.url(EndpointStop, url.Values{"uuid": {sessionID}}))
}

// StopAllSessions closes every session of the app
// (GET /distroyCallSessionsByAppId?appId=). What the platform puts in data
// is not documented: it is returned as it came, and only the envelope says
// whether the call succeeded
// (docs/platform-api.md#closing-all-sessions-of-an-app).
func (c *Client) StopAllSessions(ctx context.Context) (*StopResult, error) {
	return c.stop(ctx, EndpointStopAll, c.url(EndpointStopAll, url.Values{"appId": {c.appID}}))
}

// stop calls an endpoint that closes sessions and returns its answer.
func (c *Client) stop(ctx context.Context, endpoint, rawURL string) (*StopResult, error) {
	var (
		raw   json.RawMessage
		forms [][]byte
	)
	env, err := c.do(ctx, endpoint, rawURL, data{stream: func(dec *json.Decoder) error { return dec.Decode(&raw) }, forms: &forms})
	if err != nil {
		return nil, err
	}
	redactDecoded(&raw, forms) // a long answer streams without the first pass
	msg := env.Message
	if msg == "" {
		msg = env.Msg
	}
	return &StopResult{Code: string(env.Code), Message: msg, Data: raw}, nil
}
