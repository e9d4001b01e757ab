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
	hc, headerFiles := withoutHeaderFiles(cfg.API.HTTPClientConfig)
	httpClient, err := promconfig.NewClientFromConfig(hc, "duix_exporter", httpOpts...)
	if err != nil {
		return nil, fmt.Errorf("api.http_client: %w", err)
	}
	httpClient.CheckRedirect = keepCredentialsHome(httpClient.CheckRedirect)
	t := &Transport{
		HTTP:             httpClient,
		BaseURL:          base,
		HeaderStyle:      cfg.API.AuthHeader,
		Timeout:          time.Duration(cfg.API.Timeout),
		MaxResponseBytes: cfg.API.MaxResponseBytes,
		Metrics:          opts.Metrics,
		UserAgent:        opts.UserAgent,
		Secrets:          transportSecrets(&cfg.API.HTTPClientConfig),
		HeaderFiles:      headerFiles,
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
// neither the token header nor Authorization. net/http drops Authorization
// only when the host name changes, and never a custom header such as token
// (docs/platform-api.md#redirects).
func keepCredentialsHome(next func(*http.Request, []*http.Request) error) func(*http.Request, []*http.Request) error {
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

// withoutHeaderFiles returns a copy of hc without the header values read
// from files (http_headers files), and those headers, in the order of
// their names and, for one name, of the configuration: the client reads
// and sends them itself (see Transport.HeaderFiles). A header left with no
// value is left out: prometheus/common copies every request for a header
// configuration, even one with nothing to add.
func withoutHeaderFiles(hc promconfig.HTTPClientConfig) (promconfig.HTTPClientConfig, []HeaderFile) {
	if hc.HTTPHeaders == nil {
		return hc, nil
	}
	var files []HeaderFile
	headers := make(map[string]promconfig.Header, len(hc.HTTPHeaders.Headers))
	for name, h := range hc.HTTPHeaders.Headers {
		for _, path := range h.Files {
			files = append(files, HeaderFile{Name: name, Path: path})
		}
		if len(h.Values)+len(h.Secrets) > 0 {
			h.Files = nil
			headers[name] = h
		}
	}
	slices.SortStableFunc(files, func(a, b HeaderFile) int { return strings.Compare(a.Name, b.Name) })
	hc.HTTPHeaders = nil
	if len(headers) > 0 {
		hc.HTTPHeaders = &promconfig.Headers{Headers: headers}
	}
	return hc, files
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
