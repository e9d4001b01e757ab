package client

import (
	"fmt"
	"net/url"
	"os"
	"slices"
	"time"

	promconfig "github.com/prometheus/common/config"
	"golang.org/x/sync/semaphore"

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
}

// NewPool builds the clients for every app of cfg. It makes no request.
func NewPool(cfg *config.Config, opts PoolOptions) (*Pool, error) {
	base, err := url.Parse(cfg.API.BaseURL)
	if err != nil {
		return nil, fmt.Errorf("api.base_url: %w", err)
	}
	httpClient, err := promconfig.NewClientFromConfig(cfg.API.HTTPClientConfig, "duix_exporter",
		promconfig.WithUserAgent(opts.UserAgent),
		promconfig.WithIdleConnTimeout(90*time.Second))
	if err != nil {
		return nil, fmt.Errorf("api.http_client: %w", err)
	}
	t := &Transport{
		HTTP:             httpClient,
		BaseURL:          base,
		HeaderStyle:      cfg.API.AuthHeader,
		Timeout:          time.Duration(cfg.API.Timeout),
		MaxResponseBytes: cfg.API.MaxResponseBytes,
		Metrics:          opts.Metrics,
		UserAgent:        opts.UserAgent,
		Secrets:          transportSecrets(&cfg.API.HTTPClientConfig),
	}
	if cfg.API.MaxConcurrency > 0 {
		t.Limit = semaphore.NewWeighted(int64(cfg.API.MaxConcurrency))
	}
	p := &Pool{Transport: t, clients: make(map[string]*Client, len(cfg.Apps))}
	for _, app := range cfg.Apps {
		c := New(t, app.AppID, TokenSourceFor(app, opts.Now))
		if opts.Now != nil {
			c.now = opts.Now
		}
		p.clients[app.Name] = c
	}
	return p, nil
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
			out = append(out, string(v))
		}
	}
	if hc.HTTPHeaders != nil {
		for _, h := range hc.HTTPHeaders.Headers {
			for _, v := range h.Secrets {
				out = append(out, string(v))
			}
		}
	}
	return slices.DeleteFunc(out, func(s string) bool { return s == "" })
}

// TokenSourceFor returns the token source an app's configuration asks for.
func TokenSourceFor(app config.App, now func() time.Time) TokenSource {
	switch {
	case app.AppKey != "":
		return NewJWTSource(app.AppID, StaticKey(app.AppKey), time.Duration(app.TokenTTL), now)
	case app.AppKeyFile != "":
		return NewJWTSource(app.AppID, NewFileKey(app.AppKeyFile), time.Duration(app.TokenTTL), now)
	case app.TokenFile != "":
		return NewFileToken(app.TokenFile)
	}
	return StaticToken(app.Token)
}

// Client returns the client of the app with that name, or nil.
func (p *Pool) Client(name string) *Client { return p.clients[name] }

// Close releases idle connections.
func (p *Pool) Close() { p.Transport.HTTP.CloseIdleConnections() }
