package client

import (
	"fmt"
	"net/http"
	"net/url"
	"os"
	"slices"
	"strings"
	"time"

	promconfig "github.com/prometheus/common/config"

	"github.com/duix-exporter/duix_exporter/config"
)

// Pool holds one Client per configured app, all sharing one Transport.
type Pool struct {
	Transport *Transport
	clients   map[string]*Client
}

// PoolOptions are the process-wide parts of a Pool.
type PoolOptions struct {
	Metrics   *Metrics
	UserAgent string
	// Now is the clock used for minting tokens (nil: time.Now).
	Now func() time.Time
	// OnSecretFileError (may be nil) is told, for logging, each time a key
	// or token file that changed is refused; the last good secret stays in
	// use. Metrics counts these too.
	OnSecretFileError SecretFileHook
}

// NewPool builds the clients for every app of cfg. It makes no request.
func NewPool(cfg *config.Config, opts PoolOptions) (*Pool, error) {
	base, err := url.Parse(cfg.API.BaseURL)
	if err != nil {
		return nil, fmt.Errorf("api.base_url: %w", err)
	}
	httpOpts := []promconfig.HTTPClientOption{promconfig.WithIdleConnTimeout(90 * time.Second)}
	if cfg.API.HTTPClientConfig.OAuth2 != nil {
		// For the token requests of OAuth2; the client's own requests set
		// the User-Agent themselves, without a copy of each request.
		httpOpts = append(httpOpts, promconfig.WithUserAgent(opts.UserAgent))
	}
	hc, headers := ownHeaders(cfg.API.HTTPClientConfig)
	httpClient, err := promconfig.NewClientFromConfig(hc, "duix_exporter", httpOpts...)
	if err != nil {
		return nil, fmt.Errorf("api.http_client: %w", err)
	}
	var names []string
	for _, h := range headers {
		names = append(names, h.Name)
	}
	httpClient.CheckRedirect = keepCredentialsHome(httpClient.CheckRedirect, slices.Compact(names))
	t := &Transport{
		HTTP:             httpClient,
		BaseURL:          base,
		HeaderStyle:      cfg.API.AuthHeader,
		Timeout:          time.Duration(cfg.API.Timeout),
		MaxResponseBytes: cfg.API.MaxResponseBytes,
		Metrics:          opts.Metrics,
		UserAgent:        opts.UserAgent,
		Secrets:          transportSecrets(&cfg.API.HTTPClientConfig),
		Headers:          headers,
	}
	p := &Pool{Transport: t, clients: make(map[string]*Client, len(cfg.Apps))}
	hook := func(kind, path string, err error) {
		opts.Metrics.secretFileRefused(kind)
		if opts.OnSecretFileError != nil {
			opts.OnSecretFileError(kind, path, err)
		}
	}
	for _, app := range cfg.Apps {
		c := New(t, app.AppID, TokenSourceFor(app, opts.Now, hook))
		if opts.Now != nil {
			c.now = opts.Now
		}
		p.clients[app.Name] = c
	}
	return p, nil
}

// maxRedirects is how many redirects a request follows, as with net/http.
const maxRedirects = 10

// keepCredentialsHome wraps the redirect policy next (nil: follow up to
// maxRedirects) so that a request redirected away from the origin of the
// first one (another scheme, host or port), and every later hop, carries
// neither the token header nor Authorization nor the headers named secret
// (those of http_headers with a secret or a file). net/http drops
// Authorization only when the host name changes, and never a custom header
// such as token (docs/platform-api.md#redirects).
func keepCredentialsHome(next func(*http.Request, []*http.Request) error, secret []string) func(*http.Request, []*http.Request) error {
	return func(req *http.Request, via []*http.Request) error {
		if next != nil {
			if err := next(req, via); err != nil {
				return err
			}
		} else if len(via) >= maxRedirects {
			return fmt.Errorf("stopped after %d redirects", maxRedirects)
		}
		for _, r := range append(via[1:], req) {
			if !sameOrigin(r.URL, via[0].URL) {
				req.Header.Del("Authorization")
				req.Header.Del(tokenHeader)
				for _, name := range secret {
					req.Header.Del(name)
				}
				break
			}
		}
		return nil
	}
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
	switch strings.ToLower(u.Scheme) {
	case "http":
		return "80"
	case "https":
		return "443"
	}
	return ""
}

// transportSecrets lists the credentials the HTTP client sends besides the
// token: proxy user info (from proxy_url or, when asked, the environment),
// proxy CONNECT headers and secret extra headers.
func transportSecrets(hc *promconfig.HTTPClientConfig) []string {
	var out []string
	addUser := func(u *url.URL) {
		if u == nil || u.User == nil {
			return
		}
		user := u.User.Username()
		pw, _ := u.User.Password()
		out = append(out, user, pw, basicAuthForm(user, pw))
	}
	addUser(hc.ProxyURL.URL)
	if hc.ProxyFromEnvironment {
		for _, name := range []string{"HTTPS_PROXY", "https_proxy", "HTTP_PROXY", "http_proxy"} {
			if u, err := url.Parse(os.Getenv(name)); err == nil {
				addUser(u)
			}
		}
	}
	for _, values := range hc.ProxyConnectHeader {
		for _, v := range values {
			out = append(out, headerSecrets(string(v))...)
		}
	}
	if hc.HTTPHeaders != nil {
		for _, h := range hc.HTTPHeaders.Headers {
			for _, v := range h.Secrets {
				out = append(out, headerSecrets(string(v))...)
			}
		}
	}
	return slices.DeleteFunc(out, func(s string) bool { return s == "" })
}

// headerSecrets returns the secrets of a secret header value: the value,
// trimmed as net/http sends it, and, when it begins with a scheme (Bearer,
// Basic, Key, ...), what follows it, which an upstream may show alone.
func headerSecrets(v string) []string {
	out := []string{v}
	t := strings.TrimSpace(v)
	if t != v {
		out = append(out, t)
	}
	if i := strings.IndexAny(t, " \t"); i >= 0 {
		out = append(out, strings.TrimSpace(t[i:]))
	}
	return out
}

// ownHeaders returns a copy of hc without the http_headers that have a
// secret or a file, and the values of those headers, in the order of their
// names and, for one name, in the order prometheus/common would send them:
// values, secrets, files. The client sends them itself (see
// Transport.Headers). When no header is left, hc has no header
// configuration at all: prometheus/common copies every request for one,
// even one with nothing to add.
func ownHeaders(hc promconfig.HTTPClientConfig) (promconfig.HTTPClientConfig, []Header) {
	if hc.HTTPHeaders == nil {
		return hc, nil
	}
	var own []Header
	left := make(map[string]promconfig.Header, len(hc.HTTPHeaders.Headers))
	for name, h := range hc.HTTPHeaders.Headers {
		if len(h.Secrets)+len(h.Files) == 0 {
			if len(h.Values) > 0 {
				left[name] = h
			}
			continue
		}
		for _, v := range h.Values {
			own = append(own, Header{Name: name, Value: v})
		}
		for _, v := range h.Secrets {
			own = append(own, Header{Name: name, Value: string(v)})
		}
		for _, path := range h.Files {
			own = append(own, Header{Name: name, Path: path})
		}
	}
	slices.SortStableFunc(own, func(a, b Header) int { return strings.Compare(a.Name, b.Name) })
	hc.HTTPHeaders = nil
	if len(left) > 0 {
		hc.HTTPHeaders = &promconfig.Headers{Headers: left}
	}
	return hc, own
}

// TokenSourceFor returns the token source an app's configuration asks for;
// hook (may be nil) is told when a changed key or token file is refused.
func TokenSourceFor(app config.App, now func() time.Time, hook SecretFileHook) TokenSource {
	switch {
	case app.AppKey != "":
		return NewJWTSource(app.AppID, StaticKey(app.AppKey), time.Duration(app.TokenTTL), now)
	case app.AppKeyFile != "":
		return NewJWTSource(app.AppID, NewFileKey(app.AppKeyFile, hook), time.Duration(app.TokenTTL), now)
	case app.TokenFile != "":
		return NewFileToken(app.TokenFile, hook)
	}
	return StaticToken(app.Token)
}

// Client returns the client of the app with that name, or nil.
func (p *Pool) Client(name string) *Client { return p.clients[name] }

// Close releases idle connections.
func (p *Pool) Close() { p.Transport.HTTP.CloseIdleConnections() }
