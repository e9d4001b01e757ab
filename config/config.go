// Package config holds the configuration file of duix_exporter: its types,
// defaults, parsing, validation and a reload-safe holder (SafeConfig).
package config

import (
	"errors"
	"fmt"
	"io"
	"net/http"
	"net/url"
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"syscall"
	"time"
	"unicode/utf8"

	promconfig "github.com/prometheus/common/config"
	"github.com/prometheus/common/model"
	"go.yaml.in/yaml/v2"
)

// DefaultBaseURL is the production base address of the Duix OpenAPI v2. It
// already contains the sdk area and the version segment.
const DefaultBaseURL = "https://app.duix.ai/duix-openapi-v2/sdk/v2"

// Values of API.AuthHeader.
const (
	// AuthHeaderAuthorization sends "Authorization: Bearer <token>".
	AuthHeaderAuthorization = "authorization"
	// AuthHeaderToken sends "token: <token>".
	AuthHeaderToken = "token"
)

// Defaults and limits.
const (
	DefaultTimeout             = model.Duration(10 * time.Second)
	DefaultMaxConcurrency      = 16
	DefaultMaxResponseBytes    = int64(512 << 10) // 512 KiB; see MemoryNeeded
	DefaultConversationRefresh = model.Duration(5 * time.Minute)
	DefaultTokenTTL            = model.Duration(30 * time.Minute)

	DefaultMaxTracked = 10000

	MaxMaxConcurrency   = 4096
	MaxMaxTracked       = 1000000
	MinMaxResponseBytes = int64(1024)
	MinTokenTTL         = model.Duration(time.Minute)
	MaxTokenTTL         = model.Duration(24 * time.Hour)
)

var (
	// DefaultAPI is the api section used when the section, or one of its
	// fields, is absent.
	DefaultAPI = API{
		BaseURL:             DefaultBaseURL,
		AuthHeader:          AuthHeaderAuthorization,
		Timeout:             DefaultTimeout,
		MaxConcurrency:      DefaultMaxConcurrency,
		MaxResponseBytes:    DefaultMaxResponseBytes,
		MinInterval:         0,
		ConversationRefresh: DefaultConversationRefresh,
		HTTPClientConfig:    promconfig.DefaultHTTPClientConfig,
	}

	// DefaultSessions is the sessions section used when the section, or
	// one of its fields, is absent.
	DefaultSessions = Sessions{Lifecycle: true, MaxTracked: DefaultMaxTracked}

	// DefaultApp is the starting point of every entry of apps. TokenTTL is
	// not set here: it defaults to DefaultTokenTTL only for apps that mint
	// their own tokens (see App.UnmarshalYAML).
	DefaultApp = App{}

	appNameRE = regexp.MustCompile(`^[a-zA-Z0-9_.:-]{1,128}$`)
)

// Config is the whole configuration file.
type Config struct {
	API      API      `yaml:"api"`
	Sessions Sessions `yaml:"sessions"`
	Apps     []App    `yaml:"apps"`
	Janitor  Janitor  `yaml:"janitor"` // config/janitor.go
}

// Sessions configures what the exporter follows of the apps' sessions.
// The zero value turns the lifecycle off; a file without the section gets
// DefaultSessions.
type Sessions struct {
	// Lifecycle turns on the session lifecycle metrics: sessions started
	// and ended, their durations, the oldest session's age and the
	// session-seconds used (15 series per app).
	Lifecycle bool `yaml:"lifecycle"`
	// MaxTracked bounds the sessions followed per app, 1..1000000; those
	// over it are counted, not followed.
	MaxTracked int `yaml:"max_tracked"`
}

// API holds the settings shared by every upstream request.
type API struct {
	// BaseURL is the base address the operation paths are appended to.
	// Absolute http or https URL, without user info, query or fragment.
	// Trailing slashes are removed.
	BaseURL string `yaml:"base_url"`
	// AuthHeader selects how the access token is sent: "authorization"
	// (Authorization: Bearer <token>) or "token" (token: <token>).
	AuthHeader string `yaml:"auth_header"`
	// Timeout bounds each upstream request. Must be > 0.
	Timeout model.Duration `yaml:"timeout"`
	// MaxConcurrency bounds the upstream requests in flight at once, 1..4096.
	MaxConcurrency int `yaml:"max_concurrency"`
	// MaxResponseBytes bounds the size of a response body, >= 1024.
	MaxResponseBytes int64 `yaml:"max_response_bytes"`
	// MinInterval: results younger than this are reused instead of asking
	// the platform again. 0 turns the cache off.
	MinInterval model.Duration `yaml:"min_interval"`
	// ConversationRefresh is how often conversation details are fetched
	// again. Must be > 0.
	ConversationRefresh model.Duration `yaml:"conversation_refresh"`
	// HTTPClientConfig configures TLS, proxy, redirects and HTTP/2.
	// Credentials are not allowed here: they are per app.
	HTTPClientConfig promconfig.HTTPClientConfig `yaml:"http_client,omitempty"`
}

// App is one application of the platform, scraped with its own credential.
// Exactly one of AppKey, AppKeyFile, Token and TokenFile is set.
type App struct {
	// Name is the value of the app label. Unique, [a-zA-Z0-9_.:-]{1,128}.
	Name string `yaml:"name"`
	// AppID is the application ID created on the platform. Unique.
	AppID string `yaml:"app_id"`
	// AppKey is the application secret used to sign (HS256) the access
	// tokens the exporter mints itself.
	AppKey promconfig.Secret `yaml:"app_key,omitempty"`
	// AppKeyFile is a file holding the application secret. After Parse
	// or Load it is an absolute path (or relative to the working directory
	// when Parse was given an empty dir).
	AppKeyFile string `yaml:"app_key_file,omitempty"`
	// Token is a ready-made access token.
	Token promconfig.Secret `yaml:"token,omitempty"`
	// TokenFile is a file holding a ready-made access token. The path is
	// resolved like AppKeyFile.
	TokenFile string `yaml:"token_file,omitempty"`
	// TokenTTL is the lifetime of the tokens minted from the app key,
	// 1m..24h. Absent or 0 means DefaultTokenTTL when a key is used; it must
	// be left unset for apps with a ready-made token (it is 0 for them).
	TokenTTL model.Duration `yaml:"token_ttl,omitempty"`
	// Conversations are the conversation IDs to watch. Non-empty, unique
	// within the app.
	Conversations []string `yaml:"conversations,omitempty"`
	// Janitor, when set, opts the app in to the janitor (config/janitor.go).
	Janitor *AppJanitor `yaml:"janitor,omitempty"`
}

// UsesKey reports whether the app mints its own tokens from an app key
// (app_key or app_key_file is set).
func (a App) UsesKey() bool {
	return a.AppKey != "" || a.AppKeyFile != ""
}

// Load reads and parses the configuration file at path. Relative *_file
// paths in it are resolved against the directory of the file, once
// symbolic links are followed: a configuration linked from elsewhere
// finds its key files beside the real file.
func Load(path string) (*Config, error) {
	data, err := readConfigFile(path)
	if err != nil {
		return nil, fmt.Errorf("reading config file: %w", err)
	}
	resolved := path
	if p, err := filepath.EvalSymlinks(path); err == nil {
		resolved = p
	}
	dir := filepath.Dir(resolved)
	if abs, err := filepath.Abs(dir); err == nil {
		dir = abs
	}
	cfg, err := Parse(data, dir)
	if err != nil {
		return nil, fmt.Errorf("config file %q: %w", path, err)
	}
	return cfg, nil
}

// Parse parses a configuration from data. Unknown fields are errors,
// defaults are applied, relative *_file paths are joined with dir (left
// alone when dir is empty) and the result is validated. The key and token
// files must exist and be readable regular files; their content is not read.
func Parse(data []byte, dir string) (*Config, error) {
	// Through a pointer, so that an empty or null document leaves it nil
	// instead of zeroing the defaults.
	var cfg *Config
	if err := yaml.UnmarshalStrict(data, &cfg); err != nil {
		return nil, yamlError(err)
	}
	if cfg == nil {
		cfg = &Config{API: DefaultAPI, Sessions: DefaultSessions, Janitor: DefaultJanitor}
	}
	cfg.setDirectory(dir)
	if err := cfg.validate(); err != nil {
		return nil, err
	}
	return cfg, nil
}

// String returns the configuration as YAML, with secrets replaced by
// "<secret>".
func (c *Config) String() string {
	b, err := yaml.Marshal(c)
	if err != nil {
		return fmt.Sprintf("<error creating config string: %s>", err)
	}
	return string(b)
}

// UnmarshalYAML implements yaml.Unmarshaler. An absent or empty api section
// gets DefaultAPI.
func (c *Config) UnmarshalYAML(unmarshal func(any) error) error {
	type plainConfig struct {
		API      *API      `yaml:"api"`
		Sessions *Sessions `yaml:"sessions"`
		Apps     []App     `yaml:"apps"`
		Janitor  *Janitor  `yaml:"janitor"`
	}
	var p plainConfig
	if err := unmarshal(&p); err != nil {
		return err
	}
	*c = Config{API: DefaultAPI, Sessions: DefaultSessions, Apps: p.Apps, Janitor: DefaultJanitor}
	if p.API != nil {
		c.API = *p.API
	}
	if p.Sessions != nil {
		c.Sessions = *p.Sessions
	}
	if p.Janitor != nil {
		c.Janitor = *p.Janitor
	}
	return nil
}

// UnmarshalYAML implements yaml.Unmarshaler: fields that are absent keep
// their value from DefaultSessions.
func (s *Sessions) UnmarshalYAML(unmarshal func(any) error) error {
	*s = DefaultSessions
	type plainSessions Sessions
	if err := unmarshal((*plainSessions)(s)); err != nil {
		return locateError("sessions", err)
	}
	return nil
}

// UnmarshalYAML implements yaml.Unmarshaler: fields that are absent keep
// their value from DefaultAPI.
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
	// The YAML decoder zeroes a section left empty ("http_client:" alone,
	// or with every line commented out) instead of decoding it, which
	// would turn off redirects and HTTP/2: give it the defaults, as when
	// it is absent.
	var raw map[string]any
	if err := unmarshal(&raw); err == nil {
		if v, ok := raw["http_client"]; ok && v == nil {
			a.HTTPClientConfig = promconfig.DefaultHTTPClientConfig
		}
	}
	return nil
}

// UnmarshalYAML implements yaml.Unmarshaler. TokenTTL defaults to
// DefaultTokenTTL for apps that use an app key.
func (a *App) UnmarshalYAML(unmarshal func(any) error) error {
	*a = DefaultApp
	type plainApp App
	if err := unmarshal((*plainApp)(a)); err != nil {
		where := "apps entry"
		if a.Name != "" {
			where = fmt.Sprintf("app %q", a.Name)
		}
		return locateError(where, err)
	}
	if a.TokenTTL == 0 && a.UsesKey() {
		a.TokenTTL = DefaultTokenTTL
	}
	return nil
}

// setDirectory joins the relative file paths of the configuration with dir.
func (c *Config) setDirectory(dir string) {
	if dir == "" {
		return
	}
	c.API.HTTPClientConfig.SetDirectory(dir)
	for i := range c.Apps {
		c.Apps[i].AppKeyFile = promconfig.JoinDir(dir, c.Apps[i].AppKeyFile)
		c.Apps[i].TokenFile = promconfig.JoinDir(dir, c.Apps[i].TokenFile)
	}
}

func (c *Config) validate() error {
	if err := c.API.validate(); err != nil {
		return err
	}
	if m := c.Sessions.MaxTracked; m < 1 || m > MaxMaxTracked {
		return fmt.Errorf("sessions.max_tracked: must be between 1 and %d", MaxMaxTracked)
	}
	if len(c.Apps) == 0 {
		return errors.New("at least one app is required")
	}
	names := make(map[string]int, len(c.Apps))
	appIDs := make(map[string]int, len(c.Apps))
	for i := range c.Apps {
		a := &c.Apps[i]
		if a.Name == "" {
			return fmt.Errorf("apps[%d]: name is required", i)
		}
		if !appNameRE.MatchString(a.Name) {
			return fmt.Errorf("apps[%d]: name %q is not valid: it must match %s", i, a.Name, appNameRE.String())
		}
		prefix := fmt.Sprintf("app %q (apps[%d])", a.Name, i)
		if j, ok := names[a.Name]; ok {
			return fmt.Errorf("%s: duplicate name (also apps[%d])", prefix, j)
		}
		names[a.Name] = i
		if err := a.validate(); err != nil {
			return fmt.Errorf("%s: %w", prefix, err)
		}
		if j, ok := appIDs[a.AppID]; ok {
			return fmt.Errorf("%s: duplicate app_id (also used by app %q (apps[%d])); each application must be listed once", prefix, c.Apps[j].Name, j)
		}
		appIDs[a.AppID] = i
	}
	return c.validateJanitor()
}

func (a *API) validate() error {
	// A URL is never echoed, nor the text of its parse error (which quotes
	// it): it may hold a password or a token (docs/platform-api.md#redaction).
	u, err := url.Parse(a.BaseURL)
	if err != nil || (u.Scheme != "http" && u.Scheme != "https") || u.Host == "" {
		return errors.New("api.base_url: not a valid absolute URL (http or https)")
	}
	if u.User != nil {
		return errors.New("api.base_url: must not contain user info: credentials are per app")
	}
	if u.RawQuery != "" || u.ForceQuery || u.Fragment != "" {
		return errors.New("api.base_url: must not have a query or a fragment")
	}
	a.BaseURL = strings.TrimRight(a.BaseURL, "/")

	switch a.AuthHeader {
	case AuthHeaderAuthorization, AuthHeaderToken:
	default:
		return fmt.Errorf("api.auth_header: must be %q or %q, got %q", AuthHeaderAuthorization, AuthHeaderToken, a.AuthHeader)
	}
	if a.Timeout <= 0 {
		return fmt.Errorf("api.timeout: must be greater than 0, got %s", a.Timeout)
	}
	if a.MaxConcurrency < 1 || a.MaxConcurrency > MaxMaxConcurrency {
		return fmt.Errorf("api.max_concurrency: must be between 1 and %d, got %d", MaxMaxConcurrency, a.MaxConcurrency)
	}
	if a.MaxResponseBytes < MinMaxResponseBytes {
		return fmt.Errorf("api.max_response_bytes: must be at least %d, got %d", MinMaxResponseBytes, a.MaxResponseBytes)
	}
	if a.MinInterval < 0 {
		return fmt.Errorf("api.min_interval: must not be negative, got %s", a.MinInterval)
	}
	if a.ConversationRefresh <= 0 {
		return fmt.Errorf("api.conversation_refresh: must be greater than 0, got %s", a.ConversationRefresh)
	}
	return a.validateHTTPClientConfig()
}

func (a *API) validateHTTPClientConfig() error {
	hc := &a.HTTPClientConfig
	const perApp = "credentials are per app (app_key, app_key_file, token or token_file under apps)"
	// Checked before Validate, which turns bearer_token(_file) into authorization.
	var found []string
	if hc.BasicAuth != nil {
		found = append(found, "basic_auth")
	}
	if hc.Authorization != nil {
		// The HTTP client config's own decoding already moved bearer_token
		// and bearer_token_file here.
		found = append(found, "authorization (or bearer_token, bearer_token_file)")
	}
	if hc.BearerToken != "" {
		found = append(found, "bearer_token")
	}
	if hc.BearerTokenFile != "" {
		found = append(found, "bearer_token_file")
	}
	if hc.OAuth2 != nil {
		found = append(found, "oauth2")
	}
	if len(found) > 0 {
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
	if err := hc.Validate(); err != nil {
		return fmt.Errorf("api.http_client: %w", err)
	}
	if hc.HTTPHeaders != nil {
		for name := range hc.HTTPHeaders.Headers {
			switch http.CanonicalHeaderKey(name) {
			case "Authorization", "Token":
				return fmt.Errorf("api.http_client.http_headers: header %q must not be set: %s", name, perApp)
			}
		}
	}
	return nil
}

func (a *App) validate() error {
	if a.AppID == "" {
		return errors.New("app_id is required")
	}
	if !utf8.ValidString(a.AppID) {
		return errors.New("app_id is not valid UTF-8") // it labels series
	}

	var creds []string
	if a.AppKey != "" {
		creds = append(creds, "app_key")
	}
	if a.AppKeyFile != "" {
		creds = append(creds, "app_key_file")
	}
	if a.Token != "" {
		creds = append(creds, "token")
	}
	if a.TokenFile != "" {
		creds = append(creds, "token_file")
	}
	if len(creds) != 1 {
		found := "none"
		if len(creds) > 1 {
			found = strings.Join(creds[:len(creds)-1], ", ") + " and " + creds[len(creds)-1]
		}
		return fmt.Errorf("exactly one of app_key, app_key_file, token, token_file must be set, found %s", found)
	}
	if err := checkFile("app_key_file", a.AppKeyFile); err != nil {
		return err
	}
	if err := checkFile("token_file", a.TokenFile); err != nil {
		return err
	}

	if a.UsesKey() {
		if a.TokenTTL < MinTokenTTL || a.TokenTTL > MaxTokenTTL {
			return fmt.Errorf("token_ttl: must be between 1m and 24h, got %s", a.TokenTTL)
		}
	} else if a.TokenTTL != 0 {
		return errors.New("token_ttl is only used with app_key or app_key_file")
	}

	seen := make(map[string]int, len(a.Conversations))
	for i, id := range a.Conversations {
		if strings.TrimSpace(id) == "" {
			return fmt.Errorf("conversations[%d]: must not be empty", i)
		}
		if !utf8.ValidString(id) {
			return fmt.Errorf("conversations[%d]: not valid UTF-8", i) // it labels series
		}
		if id != strings.TrimSpace(id) {
			return fmt.Errorf("conversations[%d]: %q has leading or trailing white space", i, id)
		}
		if j, ok := seen[id]; ok {
			return fmt.Errorf("conversations[%d]: duplicate conversation ID %q (also conversations[%d])", i, id, j)
		}
		seen[id] = i
	}
	return nil
}

// checkFile makes sure path, when set, is a regular file that can be
// opened. It never reads the content.
func checkFile(field, path string) error {
	if path == "" {
		return nil
	}
	f, _, err := OpenSecretFile(path)
	if err != nil {
		return fmt.Errorf("%s: %w", field, err)
	}
	_ = f.Close()
	return nil
}

// OpenSecretFile opens a key or token file for reading. It refuses what is
// not a regular file once symbolic links are followed (a directory, a
// FIFO, a device such as /dev/zero), and opens without blocking, so that a
// FIFO swapped in after the check cannot hang the caller; the opened file
// is checked again. It returns the file and its information.
func OpenSecretFile(path string) (*os.File, os.FileInfo, error) {
	st, err := os.Stat(path)
	if err != nil {
		return nil, nil, err
	}
	if !st.Mode().IsRegular() {
		return nil, nil, fmt.Errorf("%q is not a regular file", path)
	}
	f, err := os.OpenFile(path, os.O_RDONLY|syscall.O_NONBLOCK, 0) // #nosec G304 -- a key or token file named by the configuration
	if err != nil {
		return nil, nil, err
	}
	if st, err = f.Stat(); err != nil || !st.Mode().IsRegular() {
		_ = f.Close()
		if err == nil {
			err = fmt.Errorf("%q is not a regular file", path)
		}
		return nil, nil, err
	}
	return f, st, nil
}

// MaxConfigFileBytes bounds the configuration file.
const MaxConfigFileBytes = 16 << 20

// readConfigFile reads the configuration file as carefully as a secret
// file: a regular file only (a FIFO swapped in cannot block a reload, nor
// /dev/zero fill the memory), opened without blocking, at most
// MaxConfigFileBytes.
func readConfigFile(path string) ([]byte, error) {
	f, _, err := OpenSecretFile(path)
	if err != nil {
		return nil, err
	}
	defer f.Close()
	b, err := io.ReadAll(io.LimitReader(f, MaxConfigFileBytes+1))
	if err != nil {
		return nil, err
	}
	if len(b) > MaxConfigFileBytes {
		return nil, fmt.Errorf("%q is larger than %d bytes", path, MaxConfigFileBytes)
	}
	return b, nil
}

// yamlTypeNames turns the names of the internal decoding types in YAML
// errors into the names of the configuration sections.
var yamlTypeNames = strings.NewReplacer(
	"type config.plainConfig", "the top level",
	"type config.plainAPI", "section api",
	"type config.plainApp", "an entry of apps",
	"config.plainConfig", "the top level",
	"config.plainAPI", "section api",
	"config.plainApp", "an entry of apps",
	"config.janitorFields", "section janitor",
	"config.appJanitorFields", "an app's janitor section",
	"config.plain", "a string", // a secret
)

// locateError prefixes the errors returned by the decoders of field values
// (durations, the HTTP client configuration, ...) with where they happened.
// The YAML type errors already carry a line number; they are passed on as they
// are, so that the decoder can gather them.
func locateError(where string, err error) error {
	if _, ok := err.(*yaml.TypeError); ok {
		return err
	}
	// A value that failed to parse (a duration, say) is never echoed: a
	// secret pasted in the wrong place would be printed.
	return fmt.Errorf("%s: %s", where, quotedValue.ReplaceAllString(err.Error(), ""))
}

// quotedValue matches a value quoted in an error of a field's decoder.
var quotedValue = regexp.MustCompile(`:? ?"(?:[^"\\]|\\.)*"`)

// yamlValue matches the value a YAML type error quotes (its first
// characters): what failed to parse is never echoed, the line number
// locates it.
var yamlValue = regexp.MustCompile(`(cannot unmarshal \S+) .* (into )`)

func yamlError(err error) error {
	var te *yaml.TypeError
	if errors.As(err, &te) {
		msgs := make([]string, len(te.Errors))
		for i, m := range te.Errors {
			msgs[i] = yamlTypeNames.Replace(yamlValue.ReplaceAllString(m, "$1 $2"))
		}
		return fmt.Errorf("parsing YAML: %s", strings.Join(msgs, "; "))
	}
	return fmt.Errorf("parsing YAML: %w", err)
}
