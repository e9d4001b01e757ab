// Package config holds the configuration file of duix_exporter: its types,
// defaults, parsing, validation and a reload-safe holder (SafeConfig).
package config

import (
	"bytes"
	"cmp"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"net/url"
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"syscall"
	"time"
	"unicode"
	"unicode/utf8"

	promconfig "github.com/prometheus/common/config"
	"github.com/prometheus/common/model"
	"go.yaml.in/yaml/v2"
	"golang.org/x/net/http/httpguts"
)

// DefaultBaseURL is the production base address of the Duix OpenAPI v2, sdk area and version segment included.
const DefaultBaseURL = "https://app.duix.ai/duix-openapi-v2/sdk/v2"

// Values of API.AuthHeader: "Authorization: Bearer <token>" or "token: <token>".
const (
	AuthHeaderAuthorization = "authorization"
	AuthHeaderToken         = "token"
)

// Defaults and limits.
const (
	DefaultMaxConcurrency      = 16
	DefaultMaxResponseBytes    = int64(512 << 10) // see MemoryNeeded
	DefaultConversationRefresh = model.Duration(5 * time.Minute)
	DefaultTokenTTL            = model.Duration(30 * time.Minute)

	MaxMaxConcurrency   = 4096
	MinMaxResponseBytes = int64(1024)
	MaxMaxResponseBytes = int64(1 << 30) // so that the memory check cannot overflow
	MaxConfigFileBytes  = 16 << 20
	MaxConfigItems      = 300000 // line breaks, indicators and bytes / 50 (see Parse): the YAML tree costs up to 300 bytes each
)

var (
	// DefaultAPI is the api section, and the value of each of its fields, when absent.
	DefaultAPI = API{
		BaseURL:             DefaultBaseURL,
		AuthHeader:          AuthHeaderAuthorization,
		Timeout:             model.Duration(10 * time.Second),
		MaxConcurrency:      DefaultMaxConcurrency,
		MaxResponseBytes:    DefaultMaxResponseBytes,
		ConversationRefresh: DefaultConversationRefresh,
		HTTPClientConfig:    promconfig.DefaultHTTPClientConfig,
	}

	// DefaultSessions and DefaultJanitor are those sections, and the value of each of their fields, when absent.
	DefaultSessions = Sessions{Lifecycle: true, MaxTracked: 10000}
	DefaultJanitor  = Janitor{MaxStopsPerHour: 10, AlertName: "DuixSessionStuck"}

	appNameRE = regexp.MustCompile(`^[a-zA-Z0-9_.:-]{1,128}$`)
	// alertNameRE is what Prometheus' alerting rules accept as an alert name.
	alertNameRE = regexp.MustCompile(`^[a-zA-Z_][a-zA-Z0-9_]{0,127}$`)
)

// Config is the whole configuration file.
type Config struct {
	API      API      `yaml:"api"`
	Sessions Sessions `yaml:"sessions"`
	Apps     []App    `yaml:"apps"`
	Janitor  Janitor  `yaml:"janitor"`
}

// Sessions configures what the exporter follows of the apps' sessions.
type Sessions struct {
	Lifecycle  bool `yaml:"lifecycle"`   // the session lifecycle metrics (16 series per app)
	MaxTracked int  `yaml:"max_tracked"` // sessions followed per app, 1..1000000; the others are counted
}

// API holds the settings shared by every upstream request.
type API struct {
	BaseURL             string         `yaml:"base_url"`             // absolute http(s) URL, no user info, query or fragment; trailing slashes removed
	AuthHeader          string         `yaml:"auth_header"`          // AuthHeaderAuthorization or AuthHeaderToken
	Timeout             model.Duration `yaml:"timeout"`              // per upstream request, > 0
	MaxConcurrency      int            `yaml:"max_concurrency"`      // upstream requests in flight, 1..4096
	MaxResponseBytes    int64          `yaml:"max_response_bytes"`   // per response body, 1024..1 GiB
	MinInterval         model.Duration `yaml:"min_interval"`         // results younger than this are reused; 0: off
	ConversationRefresh model.Duration `yaml:"conversation_refresh"` // how often conversation details are fetched, > 0
	// HTTPClientConfig configures TLS, proxy and redirects (calls use HTTP/1.1: enable_http2 has no effect); no credentials.
	HTTPClientConfig promconfig.HTTPClientConfig `yaml:"http_client,omitempty"`
}

// App is one application of the platform, scraped with its own credential: exactly one of AppKey, AppKeyFile, Token and
// TokenFile. After Parse with a directory, the file paths are absolute.
type App struct {
	Name          string            `yaml:"name"`                    // the app label: unique, [a-zA-Z0-9_.:-]{1,128}
	AppID         string            `yaml:"app_id"`                  // the platform's application ID; unique
	AppKey        promconfig.Secret `yaml:"app_key,omitempty"`       // signs (HS256) the access tokens the exporter mints
	AppKeyFile    string            `yaml:"app_key_file,omitempty"`  // a file holding the app key
	Token         promconfig.Secret `yaml:"token,omitempty"`         // a ready-made access token
	TokenFile     string            `yaml:"token_file,omitempty"`    // a file holding a ready-made access token
	TokenTTL      model.Duration    `yaml:"token_ttl,omitempty"`     // of minted tokens, 1m..24h, DefaultTokenTTL if absent; 0 for a ready-made token
	Conversations []string          `yaml:"conversations,omitempty"` // conversation IDs to watch, unique in the app
	Janitor       *AppJanitor       `yaml:"janitor,omitempty"`       // when set, opts the app in to the janitor
}

// Janitor is the top-level janitor section (docs/janitor.md): what the janitor acts on and how much, for the apps that
// opt in with an AppJanitor. It does nothing unless --janitor.listen-address is set.
type Janitor struct {
	MaxStopsPerHour int    `yaml:"max_stops_per_hour"` // sessions stopped in any hour, all apps together, 1..10000
	DryRun          bool   `yaml:"dry_run"`            // decide and count as usual, stop nothing
	AlertName       string `yaml:"alert_name"`         // the only alert the janitor acts on
}

// AppJanitor is the janitor section of an app: its presence opts the app in.
type AppJanitor struct {
	MaxSessionAge model.Duration `yaml:"max_session_age"` // sessions older than this (as the exporter knows their start) are stopped; >= 1m
}

// UsesKey reports whether the app mints its own tokens from an app key.
func (a App) UsesKey() bool { return a.AppKey != "" || a.AppKeyFile != "" }

// Load reads and parses the configuration file at path (symbolic links followed). Relative paths in it are joined with
// the directory of path as given, links not followed, as Prometheus does: keys beside a config file that Kubernetes
// mounts through links (..data) are read from where the next update puts them.
func Load(path string) (*Config, error) {
	abs, err := filepath.Abs(path)
	var data []byte
	if err == nil {
		data, err = readRegular(abs, MaxConfigFileBytes) // as carefully as a secret file
	}
	if err != nil {
		return nil, fmt.Errorf("reading config file: %w", err)
	}
	cfg, err := Parse(data, filepath.Dir(abs))
	if err != nil {
		return nil, fmt.Errorf("config file %q: %w", path, err)
	}
	return cfg, nil
}

// Parse parses and validates a configuration. Unknown fields are errors, defaults are applied and relative file paths
// are joined with dir (left alone when dir is empty). Key, token and header files are read, and must pass
// ReadSecretFile (TLS files are read as the clients are built).
func Parse(data []byte, dir string) (*Config, error) {
	n := len(data) / 50                                                                                                                            // what the YAML tree of the file costs, before it is built: its bytes, its line breaks (five kinds), its node indicators and aliases
	for _, item := range []string{"\n", "\r", "\u0085", "\u2028", "\u2029", ",", ",", "[", "{", "- ", "-\t", ": ", ":\t", "? ", "?\t", "&", "*"} { // a comma twice: in a flow mapping it is a key and a value
		n += bytes.Count(data, []byte(item))
	}
	n -= bytes.Count(data, []byte("\r\n")) // one line break
	if n > MaxConfigItems {
		return nil, fmt.Errorf("parsing YAML: %d line breaks and indicators, more than %d: too large to parse within the memory the exporter is sized for", n, MaxConfigItems)
	}
	var cfg *Config // stays nil for an empty document
	dec := yaml.NewDecoder(bytes.NewReader(data))
	dec.SetStrict(true)
	err := dec.Decode(&cfg)
	for more := false; err == nil; { // what follows may only be empty documents (a trailing ---), never decoded
		if err = dec.Decode((*document)(&more)); err == nil && more {
			return nil, errors.New("parsing YAML: more than one document (a line --- after the first): the configuration is one document")
		}
	}
	if err != io.EOF {
		return nil, yamlError(err)
	}
	if cfg == nil {
		cfg = &Config{API: DefaultAPI, Sessions: DefaultSessions, Janitor: DefaultJanitor}
	}
	if dir != "" {
		cfg.API.HTTPClientConfig.SetDirectory(dir)
		for i := range cfg.Apps {
			cfg.Apps[i].AppKeyFile = promconfig.JoinDir(dir, cfg.Apps[i].AppKeyFile)
			cfg.Apps[i].TokenFile = promconfig.JoinDir(dir, cfg.Apps[i].TokenFile)
		}
	}
	if err := cfg.validate(); err != nil {
		return nil, err
	}
	return cfg, nil
}

// UnmarshalYAML implements yaml.Unmarshaler. The YAML decoder decodes a section onto the defaults the pointers below
// point to, and sets a section left empty to nil instead: such a section gets its defaults too.
func (c *Config) UnmarshalYAML(unmarshal func(any) error) error {
	type plainConfig struct {
		API      *API      `yaml:"api"`
		Sessions *Sessions `yaml:"sessions"`
		Apps     []App     `yaml:"apps"`
		Janitor  *Janitor  `yaml:"janitor"`
	}
	sessions, janitor := DefaultSessions, DefaultJanitor
	p := plainConfig{Sessions: &sessions, Janitor: &janitor}
	if err := unmarshal(&p); err != nil {
		return err
	}
	*c = Config{API: *cmp.Or(p.API, &DefaultAPI), Sessions: *cmp.Or(p.Sessions, &DefaultSessions), Apps: p.Apps, Janitor: *cmp.Or(p.Janitor, &DefaultJanitor)}
	return nil
}

// UnmarshalYAML implements yaml.Unmarshaler, starting from DefaultAPI.
func (a *API) UnmarshalYAML(unmarshal func(any) error) error {
	*a = DefaultAPI
	type plainAPI API
	if err := unmarshal((*plainAPI)(a)); err != nil {
		if uerr := (*url.Error)(nil); errors.As(err, &uerr) {
			// Its text quotes the URL, which may hold a password.
			return errors.New("api.http_client.proxy_url: not a valid URL")
		}
		return locateError("api", err)
	}
	// An empty http_client section is zeroed (see Config.UnmarshalYAML), which would turn off redirects and HTTP/2.
	var raw map[string]*document // nil for a null value; the others not decoded
	if err := unmarshal(&raw); err == nil {
		if v, ok := raw["http_client"]; ok && v == nil {
			a.HTTPClientConfig = promconfig.DefaultHTTPClientConfig
		}
	}
	return nil
}

// UnmarshalYAML implements yaml.Unmarshaler; TokenTTL defaults to DefaultTokenTTL with an app key.
func (a *App) UnmarshalYAML(unmarshal func(any) error) error {
	*a = App{}
	type plainApp App
	if err := unmarshal((*plainApp)(a)); err != nil {
		where := "apps entry"
		if a.Name != "" {
			where = fmt.Sprintf("app %.64q", a.Name)
		}
		return locateError(where, err)
	}
	if a.TokenTTL == 0 && a.UsesKey() {
		a.TokenTTL = DefaultTokenTTL
	}
	var raw map[string]*document // nil for a null value
	if err := unmarshal(&raw); err == nil {
		if v, in := raw["janitor"]; in && v == nil {
			a.Janitor = &AppJanitor{} // a janitor section left empty opts the app in, and lacks max_session_age
		}
	}
	return nil
}

// UnmarshalYAML implements yaml.Unmarshaler, so that an error names the section.
func (a *AppJanitor) UnmarshalYAML(unmarshal func(any) error) error {
	type appJanitorFields AppJanitor
	return locateError("janitor", unmarshal((*appJanitorFields)(a)))
}

// document is a YAML document after the configuration: set if not empty, read no further.
type document bool

func (d *document) UnmarshalYAML(func(any) error) error { *d = true; return nil }

// setNames returns the names of the settings that are set.
func setNames(names []string, set ...bool) (out []string) {
	for i, s := range set {
		if s {
			out = append(out, names[i])
		}
	}
	return out
}

func (c *Config) validate() error {
	if err := c.API.validate(); err != nil {
		return err
	}
	// An error names the field, what it must be and the value it has.
	switch tracked, j := c.Sessions.MaxTracked, c.Janitor; {
	case tracked < 1 || tracked > 1000000:
		return fmt.Errorf("sessions.max_tracked: must be between 1 and 1000000, got %d", tracked)
	case j.MaxStopsPerHour < 1 || j.MaxStopsPerHour > 10000:
		return fmt.Errorf("janitor.max_stops_per_hour: must be between 1 and 10000, got %d", j.MaxStopsPerHour)
	case !alertNameRE.MatchString(j.AlertName):
		return fmt.Errorf("janitor.alert_name: must be an alert name matching %s, got %.64q", alertNameRE, j.AlertName)
	case len(c.Apps) == 0:
		return errors.New("at least one app is required")
	}
	names, appIDs := make(map[string]int, len(c.Apps)), make(map[string]int, len(c.Apps))
	for i := range c.Apps {
		a := &c.Apps[i]
		if a.Name == "" {
			return fmt.Errorf("apps[%d]: name is required", i)
		}
		if !appNameRE.MatchString(a.Name) {
			return fmt.Errorf("apps[%d]: name %.64q is not valid: it must match %s", i, a.Name, appNameRE)
		}
		prefix := fmt.Sprintf("app %.64q (apps[%d])", a.Name, i)
		if j, ok := names[a.Name]; ok {
			return fmt.Errorf("%s: duplicate name (also apps[%d])", prefix, j)
		}
		names[a.Name] = i
		if err := a.validate(); err != nil {
			return fmt.Errorf("%s: %w", prefix, err)
		}
		if j, ok := appIDs[a.AppID]; ok {
			return fmt.Errorf("%s: duplicate app_id (also used by app %.64q (apps[%d])); each application must be listed once", prefix, c.Apps[j].Name, j)
		}
		appIDs[a.AppID] = i
	}
	return nil
}

func (a *API) validate() error {
	// Neither the URL nor its parse error (which quotes it) is echoed: it may hold a password or a token.
	u, err := url.Parse(a.BaseURL)
	switch {
	case err != nil || (u.Scheme != "http" && u.Scheme != "https") || u.Host == "":
		return errors.New("api.base_url: not a valid absolute URL (http or https)")
	case u.User != nil:
		return errors.New("api.base_url: must not contain user info: credentials are per app")
	case u.RawQuery != "" || u.ForceQuery || strings.Contains(a.BaseURL, "#"):
		return errors.New("api.base_url: must not have a query or a fragment")
	}
	a.BaseURL = strings.TrimRight(a.BaseURL, "/")

	switch { // durations are never negative: model.Duration does not parse them
	case a.AuthHeader != AuthHeaderAuthorization && a.AuthHeader != AuthHeaderToken: // a token pasted here is not echoed
		return fmt.Errorf("api.auth_header: must be %q or %q, got another value", AuthHeaderAuthorization, AuthHeaderToken)
	case a.Timeout == 0:
		return errors.New("api.timeout: must be greater than 0, got 0s")
	case a.MaxConcurrency < 1 || a.MaxConcurrency > MaxMaxConcurrency:
		return fmt.Errorf("api.max_concurrency: must be between 1 and %d, got %d", MaxMaxConcurrency, a.MaxConcurrency)
	case a.MaxResponseBytes < MinMaxResponseBytes || a.MaxResponseBytes > MaxMaxResponseBytes:
		return fmt.Errorf("api.max_response_bytes: must be between %d and %d, got %d", MinMaxResponseBytes, MaxMaxResponseBytes, a.MaxResponseBytes)
	case a.ConversationRefresh == 0:
		return errors.New("api.conversation_refresh: must be greater than 0, got 0s")
	}

	hc := a.HTTPClientConfig
	const perApp = "credentials are per app (app_key, app_key_file, token or token_file under apps)"
	// Decoding the HTTP client configuration moved bearer_token and bearer_token_file to authorization.
	if found := setNames([]string{"basic_auth", "authorization (or bearer_token, bearer_token_file)", "oauth2"},
		hc.BasicAuth != nil, hc.Authorization != nil, hc.OAuth2 != nil); len(found) > 0 {
		return fmt.Errorf("api.http_client: %s must not be set: %s", strings.Join(found, ", "), perApp)
	}
	if u := hc.ProxyURL.URL; u != nil && *u != (url.URL{}) {
		switch {
		case u.Scheme != "http" && u.Scheme != "https" && u.Scheme != "socks5", u.Host == "", u.Opaque != "":
			return errors.New("api.http_client.proxy_url: not a valid absolute URL (http, https or socks5)")
		case (u.Path != "" && u.Path != "/") || u.RawQuery != "" || u.ForceQuery || u.Fragment != "":
			return errors.New("api.http_client.proxy_url: must be scheme://[user:password@]host[:port], without path, query or fragment")
		}
	}
	if hc.HTTPHeaders != nil {
		for name, h := range hc.HTTPHeaders.Headers {
			if strings.EqualFold(name, "Authorization") || strings.EqualFold(name, "Token") {
				return fmt.Errorf("api.http_client.http_headers: header %.64q must not be set: %s", name, perApp)
			} else if !httpguts.ValidHeaderFieldName(name) { // net/http would refuse to send it, as a bad value below
				return errors.New("api.http_client.http_headers: a header name is not valid (not printed: a secret pasted there would be)")
			}
			for _, path := range h.Files {
				if _, err := ReadSecretFile(path, false); err != nil {
					return fmt.Errorf("api.http_client.http_headers: header %.64q: %w", name, err)
				}
			}
			if !oneLine(fmt.Sprint(h.Values, h.Secrets)) { // net/http would refuse to send it: every call would fail
				return fmt.Errorf("api.http_client.http_headers: header %.64q: a value holds a line break or a control character", name)
			}
		}
	}
	for name, vs := range hc.ProxyConnectHeader {
		if !httpguts.ValidHeaderFieldName(name) {
			return errors.New("api.http_client.proxy_connect_header: a header name is not valid (not printed: a secret pasted there would be)")
		} else if !oneLine(fmt.Sprint(vs)) {
			return fmt.Errorf("api.http_client.proxy_connect_header: header %.64q: a value holds a line break or a control character", name)
		}
	}
	return nil
}

func (a *App) validate() error {
	switch {
	case a.AppID == "":
		return errors.New("app_id is required")
	case !utf8.ValidString(a.AppID) || len(a.AppID) > 256: // it labels series
		return errors.New("app_id is not valid UTF-8 of at most 256 bytes")
	case strings.ContainsFunc(a.AppID, func(r rune) bool { return !unicode.IsPrint(r) }) || a.AppID != strings.TrimSpace(a.AppID):
		return errors.New("app_id holds a control character, or leading or trailing white space") // or an invisible one: nor two IDs that look alike
	}
	creds := setNames([]string{"app_key", "app_key_file", "token", "token_file"}, // a blank inline value is none, as a blank file
		strings.TrimSpace(string(a.AppKey)) != "", a.AppKeyFile != "", strings.TrimSpace(string(a.Token)) != "", a.TokenFile != "")
	if len(creds) != 1 {
		found := "none"
		if len(creds) > 1 {
			found = strings.Join(creds[:len(creds)-1], ", ") + " and " + creds[len(creds)-1]
		}
		return fmt.Errorf("exactly one of app_key, app_key_file, token, token_file must be set, found %s", found)
	}
	if !oneLine(strings.TrimSpace(string(a.AppKey + a.Token))) { // at most one is set
		return fmt.Errorf("%s: holds more than one line or a control character", creds[0])
	}
	if path := a.AppKeyFile + a.TokenFile; path != "" { // at most one is set
		if _, err := ReadSecretFile(path, false); err != nil { // a reload then keeps the last good secret in use
			return fmt.Errorf("%s: %w", creds[0], err)
		}
	}

	switch {
	case a.UsesKey() && (a.TokenTTL < model.Duration(time.Minute) || a.TokenTTL > model.Duration(24*time.Hour)):
		return fmt.Errorf("token_ttl: must be between 1m and 24h, got %s", a.TokenTTL)
	case !a.UsesKey() && a.TokenTTL != 0:
		return errors.New("token_ttl is only used with app_key or app_key_file")
	case a.Janitor != nil && a.Janitor.MaxSessionAge < model.Duration(time.Minute):
		return fmt.Errorf("janitor.max_session_age: must be at least 1m, got %s", a.Janitor.MaxSessionAge)
	}

	seen := make(map[string]int, len(a.Conversations))
	for i, id := range a.Conversations {
		switch j, dup := seen[id]; {
		case strings.TrimSpace(id) == "":
			return fmt.Errorf("conversations[%d]: must not be empty", i)
		case !utf8.ValidString(id) || len(id) > 256: // it labels series
			return fmt.Errorf("conversations[%d]: not valid UTF-8 of at most 256 bytes", i)
		case id != strings.TrimSpace(id):
			return fmt.Errorf("conversations[%d]: %.64q has leading or trailing white space", i, id)
		case dup:
			return fmt.Errorf("conversations[%d]: duplicate conversation ID %.64q (also conversations[%d])", i, id, j)
		}
		seen[id] = i
	}
	return nil
}

// Bounds on a key, token or header file, and on a file of tls_config (a CA bundle).
const (
	MaxSecretFileBytes = 64 << 10
	MaxTLSFileBytes    = 4 << 20
)

// ReadSecretFile reads a key, token, header or TLS file: a regular file (opened without blocking, so that a FIFO cannot
// hang the caller) of at most MaxSecretFileBytes (a TLS file: MaxTLSFileBytes), not empty once trimmed, one line unless
// a TLS file; the error names the file, never its content.
func ReadSecretFile(path string, tls bool) ([]byte, error) {
	maxBytes := MaxSecretFileBytes
	if tls {
		maxBytes = MaxTLSFileBytes
	}
	b, err := readRegular(path, maxBytes)
	b = bytes.TrimSpace(bytes.TrimPrefix(b, []byte("\uFEFF"))) // a byte order mark (some editors write one) is no part of a secret
	switch {
	case errors.Is(err, fs.ErrNotExist) || errors.Is(err, syscall.ENAMETOOLONG) || errors.Is(err, syscall.ENOTDIR):
		return nil, fmt.Errorf("%w (the path is not printed: a secret pasted in its place would be)", errors.Unwrap(err))
	case err != nil:
		return nil, err
	case len(b) == 0:
		return nil, fmt.Errorf("%s is empty", path)
	case !tls && !oneLine(string(b)):
		return nil, fmt.Errorf("%s holds more than one line or a control character", path)
	}
	return bytes.Clone(b), nil // not the rest of ReadAll's buffer
}

// oneLine reports whether s holds no control character but tabs, as a header value must.
func oneLine(s string) bool {
	return !strings.ContainsFunc(s, func(r rune) bool { return r < ' ' && r != '\t' || r == 0x7f })
}

// readRegular reads a key, token, header, TLS or configuration file of at most maxBytes. It refuses what is not a
// regular file once symbolic links are followed (a directory, a FIFO, /dev/zero), and opens without blocking (a FIFO
// swapped in after the check cannot hang the caller) to check it again.
func readRegular(path string, maxBytes int) ([]byte, error) {
	notRegular := fmt.Errorf("%q is not a regular file", path)
	st, err := os.Stat(path)
	if err != nil || !st.Mode().IsRegular() {
		return nil, cmp.Or(err, notRegular)
	}
	f, err := os.OpenFile(path, os.O_RDONLY|syscall.O_NONBLOCK, 0) // #nosec G304 -- a file named by the configuration or the command line
	if err != nil {
		return nil, err
	}
	defer f.Close()
	if st, err = f.Stat(); err != nil || !st.Mode().IsRegular() {
		return nil, cmp.Or(err, notRegular)
	}
	b, err := io.ReadAll(io.LimitReader(f, int64(maxBytes)+1))
	if err == nil && len(b) > maxBytes {
		return nil, fmt.Errorf("%s is larger than %d bytes", path, maxBytes)
	}
	return b, err
}

// yamlTypeNames turns the names of the decoding types in YAML errors into the names of the configuration sections.
var yamlTypeNames = strings.NewReplacer(
	"in type ", "in ", // field x not found in type T
	"config.plainConfig", "the top level",
	"config.plainAPI", "section api",
	"config.Sessions", "section sessions",
	"config.plainApp", "an entry of apps",
	"config.Janitor", "section janitor",
	"config.appJanitorFields", "an app's janitor section",
	"config.plain", "a string", // a secret
)

// Values quoted in decoding errors are removed: a secret pasted in the wrong place would be printed. The line number of
// a YAML error locates it. So are tags but the standard ones (`!KEY 5`), the names of unknown fields and of keys set
// twice unless shaped as a setting's (a key pasted as a key), what follows a name (`app_key:KEY` with no space is one
// key) and the quoted parts of YAML syntax errors (an alias `*KEY`).
var (
	quotedValue = regexp.MustCompile(`:? ?"(?:[^"\\]|\\.)*"`)
	yamlName    = regexp.MustCompile(`(?s)(field|key) (.*) (not found in |already set in )`)
	settingName = regexp.MustCompile(`^([a-z][a-z_]{0,30}[a-z_0-9]?)($|[: \t\n])`) // and no random string
	yamlWhat    = regexp.MustCompile(`(?s)(cannot (?:unmarshal|decode))(?:( !!(?:str|int|bool|float|null|seq|map|timestamp|binary|merge))(?: \(…\))?|.*) ((?:into|as a) \S*(?: \{\}\S*)*)$`)
	quoted      = regexp.MustCompile("(?s)[`'].*[`']")               // go-yaml's quoting of a value or a token, from the first quote to the last
	tlsVersion  = regexp.MustCompile(`(unknown TLS version)(?s:.*)`) // prometheus/common's, unquoted
	commonPlain = regexp.MustCompile(`in type config\.plain\b`)      // prometheus/common's HTTP client settings
)

// locateError prefixes an error of a field's decoder (a duration, the HTTP client configuration...) with where it
// happened. YAML type errors already carry a line number and are passed on for the decoder to gather.
func locateError(where string, err error) error {
	if _, ok := err.(*yaml.TypeError); ok || err == nil {
		return err
	}
	return fmt.Errorf("%s: %s", where, tlsVersion.ReplaceAllString(quotedValue.ReplaceAllString(err.Error(), ""), "$1"))
}

func yamlError(err error) error {
	var te *yaml.TypeError
	if !errors.As(err, &te) {
		return fmt.Errorf("parsing YAML: %s", scrub(err.Error()))
	}
	msgs := make([]string, min(len(te.Errors), 10), 11) // the first ten, not a line of megabytes
	for i := range msgs {
		m := commonPlain.ReplaceAllString(scrub(te.Errors[i]), "in api.http_client or a section of it")
		msgs[i] = yamlTypeNames.Replace(yamlName.ReplaceAllStringFunc(m, unknownName))
	}
	if n := len(te.Errors) - len(msgs); n > 0 {
		msgs = append(msgs, fmt.Sprintf("and %d more", n))
	}
	return fmt.Errorf("parsing YAML: %s", strings.Join(msgs, "; "))
}

// scrub removes what a YAML error quotes, and a tag but YAML's own: a tag may be anything (!KEY, !<KEY> with escaped
// spaces, tag:KEY), so all runs to the last " into " or " as a ", before a Go type (no spaces but "interface {}").
func scrub(m string) string {
	return yamlWhat.ReplaceAllString(quoted.ReplaceAllString(m, "(…)"), "$1$2 $3")
}

// unknownName names an unknown field or a key set twice only when its name is shaped as a setting's (a secret pasted
// as a key is not), and of `app_key:KEY` with no space only app_key.
func unknownName(m string) string {
	parts := yamlName.FindStringSubmatch(m)
	switch p := settingName.FindStringSubmatch(parts[2]); { // a key set twice in a map is quoted: not printed
	case p == nil:
		return parts[1] + " (not printed: only a name shaped as a setting's is, lowercase letters and _) " + parts[3]
	case p[2] != "":
		return parts[1] + " " + p[1] + "… (a space missing after a colon?) " + parts[3]
	}
	return m
}
