package config

import (
	"fmt"
	"os"
	"path/filepath"
	"runtime"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	promconfig "github.com/prometheus/common/config"
	"github.com/prometheus/common/model"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// Every secret in testdata starts with this, so that a test can tell that
// none of them leaked into an error or into String().
const secretMarker = "SECRET"

func testdataDir(t *testing.T) string {
	t.Helper()
	dir, err := filepath.Abs("testdata")
	require.NoError(t, err)
	return dir
}

func TestLoadGood(t *testing.T) {
	dir := testdataDir(t)
	cfg, err := Load("testdata/good.yml")
	require.NoError(t, err)

	api := cfg.API
	assert.Equal(t, "https://api.duix.ai/duix-openapi-v2/sdk/v2", api.BaseURL, "trailing slash removed")
	assert.Equal(t, AuthHeaderToken, api.AuthHeader)
	assert.Equal(t, model.Duration(7*time.Second), api.Timeout)
	assert.Equal(t, 8, api.MaxConcurrency)
	assert.Equal(t, int64(2097152), api.MaxResponseBytes)
	assert.Equal(t, model.Duration(15*time.Second), api.MinInterval)
	assert.Equal(t, model.Duration(10*time.Minute), api.ConversationRefresh)

	hc := api.HTTPClientConfig
	assert.False(t, hc.FollowRedirects)
	assert.False(t, hc.EnableHTTP2)
	require.NotNil(t, hc.ProxyURL.URL)
	assert.Equal(t, "http://proxy.example.internal:3128", hc.ProxyURL.String())
	assert.Equal(t, filepath.Join(dir, "certs", "ca.pem"), hc.TLSConfig.CAFile)
	assert.Equal(t, "api.duix.ai", hc.TLSConfig.ServerName)
	assert.Equal(t, promconfig.TLSVersions["TLS12"], hc.TLSConfig.MinVersion)
	assert.Nil(t, hc.BasicAuth)
	assert.Nil(t, hc.Authorization)
	assert.Nil(t, hc.OAuth2)

	want := []App{
		{
			Name:          "sales",
			AppID:         "1001",
			AppKey:        "SECRET-inline-sales-app-key-0000",
			TokenTTL:      model.Duration(time.Hour),
			Conversations: []string{"108", "109"},
		},
		{
			Name:       "billing",
			AppID:      "1002",
			AppKeyFile: filepath.Join(dir, "secrets", "billing.key"),
			TokenTTL:   DefaultTokenTTL,
		},
		{
			Name:          "marketing.eu-1",
			AppID:         "1003",
			Token:         "SECRET-inline-marketing-token-0000",
			Conversations: []string{"c-1"},
		},
		{
			Name:      "support:night_shift",
			AppID:     "1004",
			TokenFile: filepath.Join(dir, "secrets", "support.token"),
		},
	}
	assert.Equal(t, want, cfg.Apps)

	assert.True(t, cfg.Apps[0].UsesKey())
	assert.True(t, cfg.Apps[1].UsesKey())
	assert.False(t, cfg.Apps[2].UsesKey())
	assert.False(t, cfg.Apps[3].UsesKey())
}

func TestLoadMinimalDefaults(t *testing.T) {
	cfg, err := Load("testdata/minimal.yml")
	require.NoError(t, err)

	assert.Equal(t, DefaultAPI, cfg.API)
	assert.Equal(t, DefaultBaseURL, cfg.API.BaseURL)
	assert.Equal(t, AuthHeaderAuthorization, cfg.API.AuthHeader)
	assert.Equal(t, model.Duration(10*time.Second), cfg.API.Timeout)
	assert.Equal(t, 16, cfg.API.MaxConcurrency)
	assert.Equal(t, int64(524288), cfg.API.MaxResponseBytes)
	assert.Equal(t, model.Duration(0), cfg.API.MinInterval)
	assert.Equal(t, model.Duration(5*time.Minute), cfg.API.ConversationRefresh)
	assert.True(t, cfg.API.HTTPClientConfig.FollowRedirects)
	assert.True(t, cfg.API.HTTPClientConfig.EnableHTTP2)

	require.Len(t, cfg.Apps, 1)
	assert.Equal(t, App{
		Name:     "main",
		AppID:    "1001",
		AppKey:   "fake-app-key",
		TokenTTL: model.Duration(30 * time.Minute),
	}, cfg.Apps[0])
}

func TestParseAPISectionDefaults(t *testing.T) {
	const apps = "apps: [{name: a, app_id: '1', app_key: k}]\n"
	for name, doc := range map[string]string{
		"absent":   apps,
		"null":     "api:\n" + apps,
		"tilde":    "api: ~\n" + apps,
		"empty":    "api: {}\n" + apps,
		"comments": "# nothing\napi:\n  # nothing\n" + apps,
	} {
		t.Run(name, func(t *testing.T) {
			cfg, err := Parse([]byte(doc), "")
			require.NoError(t, err)
			assert.Equal(t, DefaultAPI, cfg.API)
		})
	}
}

func TestParsePartialAPIKeepsOtherDefaults(t *testing.T) {
	cfg, err := Parse([]byte(`
api:
  timeout: 3s
  http_client:
    proxy_url: http://127.0.0.1:3128
apps: [{name: a, app_id: '1', token: t}]
`), "")
	require.NoError(t, err)
	assert.Equal(t, model.Duration(3*time.Second), cfg.API.Timeout)
	assert.Equal(t, DefaultBaseURL, cfg.API.BaseURL)
	assert.Equal(t, DefaultMaxConcurrency, cfg.API.MaxConcurrency)
	assert.Equal(t, DefaultConversationRefresh, cfg.API.ConversationRefresh)
	assert.True(t, cfg.API.HTTPClientConfig.FollowRedirects, "http_client defaults kept")
	assert.True(t, cfg.API.HTTPClientConfig.EnableHTTP2, "http_client defaults kept")
	assert.Equal(t, model.Duration(0), cfg.Apps[0].TokenTTL, "no token_ttl for a ready-made token")
}

func TestParseEmptyDocument(t *testing.T) {
	for _, doc := range []string{"", "# only a comment\n", "---\n", "null\n"} {
		_, err := Parse([]byte(doc), "")
		require.Error(t, err, "%q", doc)
		assert.Contains(t, err.Error(), "at least one app is required", "%q", doc)
	}
}

func TestParseNullAppEntry(t *testing.T) {
	_, err := Parse([]byte("apps:\n  - ~\n"), "")
	require.Error(t, err)
	assert.Contains(t, err.Error(), "apps[0]: name is required")
}

func TestTokenTTL(t *testing.T) {
	tests := []struct {
		name string
		app  string
		want model.Duration
	}{
		{"key default", "app_key: k", DefaultTokenTTL},
		{"key explicit zero means default", "app_key: k\n    token_ttl: 0s", DefaultTokenTTL},
		{"key lower bound", "app_key: k\n    token_ttl: 1m", model.Duration(time.Minute)},
		{"key upper bound", "app_key: k\n    token_ttl: 24h", model.Duration(24 * time.Hour)},
		{"key file", "app_key_file: testdata/secrets/billing.key\n    token_ttl: 2h", model.Duration(2 * time.Hour)},
		{"token", "token: t", 0},
		{"token file", "token_file: testdata/secrets/support.token", 0},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			doc := "apps:\n  - name: a\n    app_id: '1'\n    " + tc.app + "\n"
			cfg, err := Parse([]byte(doc), "")
			require.NoError(t, err)
			assert.Equal(t, tc.want, cfg.Apps[0].TokenTTL)
		})
	}
}

func TestRelativeFilePaths(t *testing.T) {
	dir := testdataDir(t)

	t.Run("resolved against the directory of the file", func(t *testing.T) {
		cfg, err := Load(filepath.Join("testdata", "good.yml"))
		require.NoError(t, err)
		assert.True(t, filepath.IsAbs(cfg.Apps[1].AppKeyFile))
		assert.Equal(t, filepath.Join(dir, "secrets", "billing.key"), cfg.Apps[1].AppKeyFile)
		assert.Equal(t, filepath.Join(dir, "secrets", "support.token"), cfg.Apps[3].TokenFile)
		assert.Equal(t, filepath.Join(dir, "certs", "ca.pem"), cfg.API.HTTPClientConfig.TLSConfig.CAFile)
	})

	t.Run("not the working directory", func(t *testing.T) {
		// secrets/billing.key does not exist relative to the working
		// directory of the test, only relative to testdata/.
		tmp := t.TempDir()
		require.NoError(t, os.MkdirAll(filepath.Join(tmp, "keys"), 0o755))
		require.NoError(t, os.WriteFile(filepath.Join(tmp, "keys", "a.key"), []byte("fake"), 0o600))
		path := filepath.Join(tmp, "duix.yml")
		require.NoError(t, os.WriteFile(path, []byte("apps: [{name: a, app_id: '1', app_key_file: keys/a.key}]\n"), 0o600))
		cfg, err := Load(path)
		require.NoError(t, err)
		assert.Equal(t, filepath.Join(tmp, "keys", "a.key"), cfg.Apps[0].AppKeyFile)
	})

	// As Kubernetes mounts a Secret holding the file and its keys: each name a link through ..data, which an update
	// points at a new directory before removing the old one.
	t.Run("against the directory of the path given, not of the file a link leads to", func(t *testing.T) {
		k := t.TempDir()
		version := func(v, key string) {
			require.NoError(t, os.Mkdir(filepath.Join(k, v), 0o700))
			require.NoError(t, os.WriteFile(filepath.Join(k, v, "duix.yml"), []byte("apps: [{name: a, app_id: '1', app_key_file: kiosk.key}]\n"), 0o600))
			require.NoError(t, os.WriteFile(filepath.Join(k, v, "kiosk.key"), []byte(key), 0o600))
			require.NoError(t, os.Symlink(v, filepath.Join(k, "..data.tmp")))
			require.NoError(t, os.Rename(filepath.Join(k, "..data.tmp"), filepath.Join(k, "..data")))
		}
		version("..v1", "old-key")
		for _, name := range []string{"duix.yml", "kiosk.key"} {
			require.NoError(t, os.Symlink(filepath.Join("..data", name), filepath.Join(k, name)))
		}
		cfg, err := Load(filepath.Join(k, "duix.yml"))
		require.NoError(t, err)
		assert.Equal(t, filepath.Join(k, "kiosk.key"), cfg.Apps[0].AppKeyFile)

		version("..v2", "new-key")
		require.NoError(t, os.RemoveAll(filepath.Join(k, "..v1")))
		key, err := ReadSecretFile(cfg.Apps[0].AppKeyFile, false)
		require.NoError(t, err, "the key the update put there")
		assert.Equal(t, "new-key", string(key))
	})

	t.Run("Parse joins with dir", func(t *testing.T) {
		cfg, err := Parse([]byte("apps: [{name: a, app_id: '1', token_file: secrets/support.token}]\n"), dir)
		require.NoError(t, err)
		assert.Equal(t, filepath.Join(dir, "secrets", "support.token"), cfg.Apps[0].TokenFile)
	})

	t.Run("Parse with empty dir leaves paths alone", func(t *testing.T) {
		cfg, err := Parse([]byte("apps: [{name: a, app_id: '1', token_file: testdata/secrets/support.token}]\n"), "")
		require.NoError(t, err)
		assert.Equal(t, "testdata/secrets/support.token", cfg.Apps[0].TokenFile)
	})

	t.Run("absolute paths kept", func(t *testing.T) {
		abs := filepath.Join(dir, "secrets", "support.token")
		cfg, err := Parse([]byte("apps: [{name: a, app_id: '1', token_file: '"+abs+"'}]\n"), "/elsewhere")
		require.NoError(t, err)
		assert.Equal(t, abs, cfg.Apps[0].TokenFile)
	})
}

func TestInvalidConfigs(t *testing.T) {
	tests := []struct {
		file string
		want string
	}{
		{"invalid-unknown-field-top.yml", "field scrape_interval not found"},
		{"invalid-unknown-field-app.yml", "field app_secret not found in an entry of apps"},
		{"invalid-unknown-field-api.yml", "field timout not found in section api"},
		{"invalid-no-apps.yml", "at least one app is required"},
		{"invalid-empty-apps.yml", "at least one app is required"},
		{"invalid-missing-name.yml", "apps[2]: name is required"},
		{"invalid-bad-name.yml", `apps[0]: name "sales team" is not valid`},
		{"invalid-missing-app-id.yml", `app "sales" (apps[1]): app_id is required`},
		{"invalid-app-id-not-utf8.yml", `app "sales" (apps[0]): app_id is not valid UTF-8`},
		{"invalid-conversation-not-utf8.yml", `app "sales" (apps[0]): conversations[1]: not valid UTF-8`},
		{"invalid-duplicate-name.yml", `app "sales" (apps[1]): duplicate name (also apps[0])`},
		{"invalid-duplicate-app-id.yml", `app "sales-copy" (apps[1]): duplicate app_id (also used by app "sales" (apps[0]))`},
		{"invalid-no-credential.yml", `app "sales" (apps[0]): exactly one of app_key, app_key_file, token, token_file must be set, found none`},
		{"invalid-two-credentials.yml", `app "sales" (apps[1]): exactly one of app_key, app_key_file, token, token_file must be set, found app_key and token`},
		{"invalid-three-credentials.yml", `found app_key_file, token and token_file`},
		{"invalid-token-ttl-with-token.yml", `app "x" (apps[0]): token_ttl is only used with app_key or app_key_file`},
		{"invalid-token-ttl-too-small.yml", `app "x" (apps[0]): token_ttl: must be between 1m and 24h, got 30s`},
		{"invalid-token-ttl-too-large.yml", `app "x" (apps[0]): token_ttl: must be between 1m and 24h`},
		{"invalid-bad-auth-header.yml", `api.auth_header: must be "authorization" or "token", got another value`},
		{"invalid-base-url-relative.yml", "api.base_url: not a valid absolute URL (http or https)"},
		{"invalid-base-url-ftp.yml", "api.base_url: not a valid absolute URL (http or https)"},
		{"invalid-base-url-userinfo.yml", "api.base_url: must not contain user info"},
		{"invalid-base-url-password-with-slash.yml", "api.base_url: not a valid absolute URL (http or https)"},
		{"invalid-base-url-schemeless-userinfo.yml", "api.base_url: not a valid absolute URL (http or https)"},
		{"invalid-base-url-query-token.yml", "api.base_url: must not have a query or a fragment"},
		{"invalid-base-url-fragment.yml", "api.base_url: must not have a query or a fragment"},
		{"invalid-proxy-url-password-with-slash.yml", "api.http_client.proxy_url: not a valid URL"},
		{"invalid-proxy-url-schemeless-userinfo.yml", "api.http_client.proxy_url: not a valid absolute URL (http, https or socks5)"},
		{"invalid-proxy-url-bad-scheme.yml", "api.http_client.proxy_url: not a valid absolute URL (http, https or socks5)"},
		{"invalid-proxy-url-password-in-path.yml", "api.http_client.proxy_url: must be scheme://[user:password@]host[:port], without path, query or fragment"},
		{"invalid-proxy-url-password-with-hash.yml", "api.http_client.proxy_url: must be scheme://[user:password@]host[:port], without path, query or fragment"},
		{"invalid-proxy-url-query-token.yml", "api.http_client.proxy_url: must be scheme://[user:password@]host[:port], without path, query or fragment"},
		{"invalid-proxy-url-fragment.yml", "api.http_client.proxy_url: must be scheme://[user:password@]host[:port], without path, query or fragment"},
		{"invalid-negative-timeout.yml", "api: not a valid duration string"},
		{"invalid-zero-timeout.yml", "api.timeout: must be greater than 0"},
		{"invalid-zero-conversation-refresh.yml", "api.conversation_refresh: must be greater than 0"},
		{"invalid-max-concurrency-zero.yml", "api.max_concurrency: must be between 1 and 4096, got 0"},
		{"invalid-sessions-max-tracked-zero.yml", "sessions.max_tracked: must be between 1 and 1000000"},
		{"invalid-sessions-max-tracked-too-large.yml", "sessions.max_tracked: must be between 1 and 1000000, got 1000001"},
		{"invalid-unknown-field-sessions.yml", "field lifecyle not found in section sessions"},
		{"invalid-max-concurrency-too-large.yml", "api.max_concurrency: must be between 1 and 4096, got 4097"},
		{"invalid-max-response-bytes-too-small.yml", "api.max_response_bytes: must be between 1024 and 1073741824, got 1023"},
		{"invalid-max-response-bytes-too-large.yml", "api.max_response_bytes: must be between 1024 and 1073741824, got 9223372036854775807"},
		{"invalid-missing-key-file.yml", `app "keyfile" (apps[0]): app_key_file: no such file or directory (the path is not printed: a secret pasted in its place would be)`},
		{"invalid-missing-token-file.yml", `app "tokenfile" (apps[1]): token_file: no such file or directory (the path is not printed: a secret pasted in its place would be)`},
		{"invalid-key-file-is-directory.yml", `app "keyfile" (apps[0]): app_key_file: "` + filepath.Join(testdataDir(t), "secrets") + `" is not a regular file`},
		{"invalid-duplicate-conversation.yml", `app "sales" (apps[0]): conversations[2]: duplicate conversation ID "108" (also conversations[0])`},
		{"invalid-empty-conversation.yml", `app "sales" (apps[0]): conversations[1]: must not be empty`},
		{"invalid-http-client-basic-auth.yml", "api.http_client: basic_auth must not be set: credentials are per app"},
		{"invalid-http-client-bearer-token.yml", "bearer_token, bearer_token_file) must not be set: credentials are per app"},
		{"invalid-http-client-token-header.yml", `api.http_client.http_headers: header "token" must not be set: credentials are per app`},
		{"invalid-yaml-syntax.yml", "parsing YAML: yaml: line 3"},
	}

	listed := map[string]bool{}
	for _, tc := range tests {
		listed[tc.file] = true
		t.Run(tc.file, func(t *testing.T) {
			path := filepath.Join("testdata", tc.file)
			cfg, err := Load(path)
			require.Error(t, err)
			assert.Nil(t, cfg)
			msg := err.Error()
			assert.Contains(t, msg, tc.want)
			assert.Contains(t, msg, path, "the error names the file")
			assert.NotContains(t, msg, secretMarker, "no secret in the error")
		})
	}

	// Every bad file in testdata is in the table above.
	files, err := filepath.Glob(filepath.Join("testdata", "invalid-*.yml"))
	require.NoError(t, err)
	for _, f := range files {
		assert.True(t, listed[filepath.Base(f)], "%s is not tested", f)
	}
}

// sessions.max_tracked is 1..1000000 (docs/configuration.md): both ends
// are accepted; the values just outside are refused with the documented
// message (1000001 also by a testdata file in TestInvalidConfigs).
func TestSessionsMaxTrackedBounds(t *testing.T) {
	const apps = "apps: [{name: a, app_id: '1', app_key: k}]\n"
	for _, n := range []int{1, 1000000} {
		cfg, err := Parse([]byte(fmt.Sprintf("sessions: {max_tracked: %d}\n", n)+apps), "")
		require.NoError(t, err, n)
		assert.Equal(t, n, cfg.Sessions.MaxTracked)
	}
	for _, n := range []int{0, 1000001} {
		_, err := Parse([]byte(fmt.Sprintf("sessions: {max_tracked: %d}\n", n)+apps), "")
		require.Error(t, err, n)
		assert.Contains(t, err.Error(), fmt.Sprintf("sessions.max_tracked: must be between 1 and 1000000, got %d", n))
	}
}

// The configuration file is read at most 16 MiB (docs/reliability.md),
// written here as a literal rather than MaxConfigFileBytes: a file of
// exactly 16 MiB is read (and handed to Parse, which finds it too large
// to parse), one byte more is refused as "larger than".
func TestConfigFileIsReadAtMost16MiB(t *testing.T) {
	const documented = 16 << 20
	dir := t.TempDir()
	body := "#" + strings.Repeat(" ", documented-2) + "\n" // one comment line
	require.Len(t, body, documented)

	exact := filepath.Join(dir, "exact.yml")
	require.NoError(t, os.WriteFile(exact, []byte(body), 0o600))
	_, err := Load(exact)
	require.Error(t, err, "read, then refused by the parser")
	assert.NotContains(t, err.Error(), "reading config file", "16 MiB is within the limit")
	assert.NotContains(t, err.Error(), "larger than")
	assert.Contains(t, err.Error(), "too large to parse", "handed to Parse")

	over := filepath.Join(dir, "over.yml")
	require.NoError(t, os.WriteFile(over, []byte(body+" "), 0o600))
	_, err = Load(over)
	require.Error(t, err)
	assert.Contains(t, err.Error(), "reading config file")
	assert.Contains(t, err.Error(), "is larger than 16777216 bytes")
}

// TestConfigFileReadCarefully: a configuration file swapped for a FIFO
// or a device is refused at once, never read without bound or blocked on.
func TestConfigFileReadCarefully(t *testing.T) {
	dir := t.TempDir()
	fifo := filepath.Join(dir, "fifo.yml")
	require.NoError(t, syscall.Mkfifo(fifo, 0o600))
	zero := filepath.Join(dir, "zero.yml")
	require.NoError(t, os.Symlink("/dev/zero", zero))
	big := filepath.Join(dir, "big.yml")
	require.NoError(t, os.WriteFile(big, make([]byte, MaxConfigFileBytes+1), 0o600))
	for _, path := range []string{fifo, zero, big, dir} {
		_, err := Load(path)
		require.Error(t, err, path)
		assert.Contains(t, err.Error(), "reading config file", path)
	}
}

func TestInvalidInline(t *testing.T) {
	tests := []struct {
		name string
		doc  string
		want string
	}{
		{
			"base url with query",
			"api: {base_url: 'https://app.duix.ai/sdk/v2?x=1'}\napps: [{name: a, app_id: '1', token: t}]",
			"api.base_url: must not have a query or a fragment",
		},
		{
			"base url with an empty fragment", // url.URL keeps no trace of it
			"api: {base_url: 'https://app.duix.ai/sdk/v2#'}\napps: [{name: a, app_id: '1', token: t}]",
			"api.base_url: must not have a query or a fragment",
		},
		{
			"base url with an empty query", // url.URL keeps it as ForceQuery alone
			"api: {base_url: 'https://app.duix.ai/sdk/v2?'}\napps: [{name: a, app_id: '1', token: t}]",
			"api.base_url: must not have a query or a fragment",
		},
		{
			"proxy url with an empty query",
			"api: {http_client: {proxy_url: 'http://proxy.example:3128?'}}\napps: [{name: a, app_id: '1', token: t}]",
			"api.http_client.proxy_url: must be scheme://[user:password@]host[:port], without path, query or fragment",
		},
		{
			"base url without host",
			"api: {base_url: 'https:///sdk/v2'}\napps: [{name: a, app_id: '1', token: t}]",
			"api.base_url: not a valid absolute URL (http or https)",
		},
		{
			"base url not parsable, password not echoed",
			"api: {base_url: 'https://u:SECRET@[::1'}\napps: [{name: a, app_id: '1', token: t}]",
			"api.base_url: not a valid absolute URL (http or https)",
		},
		{
			"base url with password and bad scheme",
			"api: {base_url: 'ftp://u:SECRET@host/v2'}\napps: [{name: a, app_id: '1', token: t}]",
			"api.base_url: not a valid absolute URL (http or https)",
		},
		{
			"value of the wrong type not echoed",
			"api: {max_concurrency: SECRET-abcdef}\napps: [{name: a, app_id: '1', token: t}]",
			"line 1: cannot unmarshal !!str into int",
		},
		{
			"secret of the wrong type",
			"apps: [{name: a, app_id: '1', token: [SECRET]}]",
			"line 1: cannot unmarshal !!seq into a string",
		},
		{
			"auth header is case sensitive",
			"api: {auth_header: Authorization}\napps: [{name: a, app_id: '1', token: t}]",
			`api.auth_header: must be "authorization" or "token", got another value`,
		},
		{
			"http client authorization",
			"api: {http_client: {authorization: {credentials: SECRET}}}\napps: [{name: a, app_id: '1', token: t}]",
			"api.http_client: authorization",
		},
		{
			"http client oauth2",
			"api: {http_client: {oauth2: {client_id: c, client_secret: SECRET, token_url: 'https://x/t'}}}\napps: [{name: a, app_id: '1', token: t}]",
			"api.http_client: oauth2 must not be set: credentials are per app",
		},
		{
			"http client invalid",
			"api: {http_client: {proxy_connect_header: {X: [SECRET]}}}\napps: [{name: a, app_id: '1', token: t}]",
			"api: if proxy_connect_header is configured",
		},
		{
			"unknown field in http client",
			"api: {http_client: {proxy: x}}\napps: [{name: a, app_id: '1', token: t}]",
			"field proxy not found",
		},
		{
			"bad duration in app",
			"apps: [{name: a, app_id: '1', app_key: SECRET, token_ttl: soon}]",
			`app "a": not a valid duration string`,
		},
		{
			// A secret pasted as a duration is not echoed.
			"secret as a duration",
			"apps: [{name: a, app_id: '1', app_key: x, token_ttl: eyJSECRET.eyJSECRET.SECRETSIG}]",
			`app "a": not a valid duration string`,
		},
		{
			// A YAML type error quotes the value, backticks included.
			"secret with a backtick in a list of strings",
			"apps: [{name: a, app_id: '1', token: t, conversations: 'a`bcdSECRET7'}]",
			"cannot unmarshal !!str into []string",
		},
		{
			"conversation with white space",
			"apps: [{name: a, app_id: '1', token: SECRET, conversations: [' 108']}]",
			`app "a" (apps[0]): conversations[0]: " 108" has leading or trailing white space`,
		},
		{
			"blank conversation",
			"apps: [{name: a, app_id: '1', token: SECRET, conversations: ['  ']}]",
			`app "a" (apps[0]): conversations[0]: must not be empty`,
		},
		{
			"name too long",
			"apps: [{name: " + strings.Repeat("a", 129) + ", app_id: '1', token: SECRET}]",
			"apps[0]: name",
		},
		{
			"duplicate key",
			"apps: [{name: a, name: b, app_id: '1', token: SECRET}]",
			"already set",
		},
		{
			"top level is a list",
			"- a\n- b\n",
			"into the top level",
		},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			cfg, err := Parse([]byte(tc.doc), "")
			require.Error(t, err)
			assert.Nil(t, cfg)
			assert.Contains(t, err.Error(), tc.want)
			assert.NotContains(t, err.Error(), secretMarker)
		})
	}
}

func TestNameCharacters(t *testing.T) {
	for _, name := range []string{"a", "A-Z_0.9:x", strings.Repeat("n", 128)} {
		_, err := Parse([]byte("apps: [{name: '"+name+"', app_id: '1', token: t}]"), "")
		assert.NoError(t, err, name)
	}
	for _, name := range []string{"a b", "a/b", "é", "a\"b", "a{b}"} {
		_, err := Parse([]byte("apps: [{name: '"+name+"', app_id: '1', token: t}]"), "")
		assert.Error(t, err, name)
	}
}

func TestUnreadableKeyFile(t *testing.T) {
	cases := map[string]struct {
		make func(path string) error
		want string
	}{
		"directory":            {func(p string) error { return os.Mkdir(p, 0o700) }, `app_key_file: "%s" is not a regular file`},
		"fifo":                 {func(p string) error { return syscall.Mkfifo(p, 0o600) }, `app_key_file: "%s" is not a regular file`},
		"dangling symlink":     {func(p string) error { return os.Symlink(p+".nowhere", p) }, "app_key_file: no such file or directory (the path is not printed: a secret pasted in its place would be)"},
		"symlink to /dev/zero": {func(p string) error { return os.Symlink("/dev/zero", p) }, `app_key_file: "%s" is not a regular file`},
		"unreadable":           {func(p string) error { return os.WriteFile(p, []byte("SECRET-unreadable"), 0o000) }, "app_key_file: open %s: permission denied"},
		"empty":                {func(p string) error { return os.WriteFile(p, []byte(" \n"), 0o600) }, "app_key_file: %s is empty"},
		"over 64 KiB":          {func(p string) error { return os.WriteFile(p, []byte(strings.Repeat("SECRET", 11000)), 0o600) }, "app_key_file: %s is larger than 65536 bytes"},
	}
	for name, tc := range cases {
		t.Run(name, func(t *testing.T) {
			if name == "unreadable" && os.Geteuid() == 0 {
				t.Skip("root can read any file")
			}
			tmp := t.TempDir()
			key := filepath.Join(tmp, "a.key")
			require.NoError(t, tc.make(key))
			_, err := Parse([]byte("apps: [{name: a, app_id: '1', app_key_file: a.key}]"), tmp)
			require.Error(t, err)
			if strings.Contains(tc.want, "%s") {
				tc.want = fmt.Sprintf(tc.want, key)
			}
			assert.Contains(t, err.Error(), `app "a" (apps[0]): `+tc.want)
			assert.NotContains(t, err.Error(), secretMarker)
		})
	}
}

// A secret pasted where a file's path belongs is not printed: no file has
// that name, and the error says so without the name.
func TestASecretPastedAsAPathIsNotPrinted(t *testing.T) {
	tmp := t.TempDir()
	require.NoError(t, os.WriteFile(filepath.Join(tmp, "f"), []byte("x"), 0o600))
	jwt := "eyJhbGciOiJIUzI1NiJ9.eyJhcHBJZCI6IjEwMDEifQ." + strings.Repeat("SECRETsig", 30) // a name too long for a file
	for _, secret := range []string{"SECRET-key-0123456789", jwt, "SECRET/b64+key==", "f/SECRET-under-a-file"} {
		for _, field := range []string{"app_key_file: ", "token_file: "} {
			_, err := Parse([]byte("apps: [{name: a, app_id: '1', "+field+strconv.Quote(secret)+"}]"), tmp)
			require.ErrorContains(t, err, `app "a" (apps[0]): `+field, secret)
			assert.ErrorContains(t, err, "(the path is not printed", secret)
			assert.NotContains(t, err.Error(), "SECRET")
		}
		_, err := Parse([]byte("api: {http_client: {http_headers: {X-Tenant: {files: ["+strconv.Quote(secret)+"]}}}}\n"+
			"apps: [{name: a, app_id: '1', app_key: k}]"), tmp)
		require.ErrorContains(t, err, `api.http_client.http_headers: header "X-Tenant": `, secret)
		assert.NotContains(t, err.Error(), "SECRET")
	}
}

// A huge file (here a sparse one of 256 MiB) is refused after reading one
// byte past the limit, never read whole.
func TestAHugeFileIsNotReadWhole(t *testing.T) {
	tmp := t.TempDir()
	for _, name := range []string{"a.key", "duix.yml"} {
		f, err := os.Create(filepath.Join(tmp, name))
		require.NoError(t, err)
		require.NoError(t, f.Truncate(256<<20))
		require.NoError(t, f.Close())
	}
	var before, after runtime.MemStats
	runtime.ReadMemStats(&before)
	_, keyErr := Parse([]byte("apps: [{name: a, app_id: '1', app_key_file: a.key}]"), tmp)
	_, configErr := Load(filepath.Join(tmp, "duix.yml"))
	runtime.ReadMemStats(&after)
	require.Error(t, keyErr)
	assert.Contains(t, keyErr.Error(), "is larger than 65536 bytes")
	require.Error(t, configErr)
	assert.Contains(t, configErr.Error(), fmt.Sprintf("is larger than %d bytes", MaxConfigFileBytes))
	assert.Less(t, after.TotalAlloc-before.TotalAlloc, uint64(8*MaxConfigFileBytes), "a few times the limit (io.ReadAll grows its buffer), not the file")
}

func TestLoadMissingFile(t *testing.T) {
	_, err := Load(filepath.Join("testdata", "does-not-exist.yml"))
	require.Error(t, err)
	assert.Contains(t, err.Error(), "does-not-exist.yml")
	assert.ErrorIs(t, err, os.ErrNotExist)
}

func TestUsesKey(t *testing.T) {
	assert.True(t, App{AppKey: "k"}.UsesKey())
	assert.True(t, App{AppKeyFile: "f"}.UsesKey())
	assert.False(t, App{Token: "t"}.UsesKey())
	assert.False(t, App{TokenFile: "f"}.UsesKey())
	assert.False(t, App{}.UsesKey())
}

// A secret written where YAML reads a key, an alias or another setting is
// not echoed by the error that follows.
func TestErrorsNeverEchoAMisplacedSecret(t *testing.T) {
	const key = "SECRET-APP-KEY-0123456789"
	for name, doc := range map[string]string{
		"no space after app_key:": "apps: [{name: a, app_id: '1', app_key:" + key + "}]\n",
		"no space after token:":   "apps: [{name: a, app_id: '1', token:" + key + "}]\n",
		"a key read as an alias":  "apps: [{name: a, app_id: '1', app_key: *" + key + "}]\n",
		"an alias with a quote":   "apps: [{name: a, app_id: '1', app_key: *SEC'" + key + "}]\n",
		"a token in auth_header":  "api: {auth_header: 'Bearer " + key + "'}\napps: [{name: a, app_id: '1', app_key: x}]\n",
		// go-yaml quotes what it cannot decode with backquotes, across lines.
		"app_key !!int":              "apps: [{name: a, app_id: '1', app_key: !!int " + key + "}]\n",
		"token !!timestamp":          "apps: [{name: a, app_id: '1', token: !!timestamp " + key + "}]\n",
		"header secret !!float":      "api: {http_client: {http_headers: {X-Gate: {secrets: [!!float " + key + "]}}}}\napps: [{name: a, app_id: '1', app_key: k}]\n",
		"proxy header !!bool":        "api: {http_client: {proxy_url: 'http://p:1', proxy_connect_header: {X: [!!bool " + key + "]}}}\napps: [{name: a, app_id: '1', app_key: k}]\n",
		"tls inline key !!null":      "api: {http_client: {tls_config: {key: !!null " + key + "}}}\napps: [{name: a, app_id: '1', app_key: k}]\n",
		"a key in token_ttl":         "apps: [{name: a, app_id: '1', app_key: k, token_ttl: !!int " + key + "}]\n",
		"a block scalar into an int": "api:\n  max_concurrency: |\n    a\n    " + key + "\napps: [{name: a, app_id: '1', app_key: k}]\n",
		"a quoted newline":           "sessions: {max_tracked: \"1\\n" + key + "\"}\napps: [{name: a, app_id: '1', app_key: k}]\n",
		"a key pasted as a key":      "apps:\n- name: a\n  app_id: '1'\n  app_key: k\n  " + key + ": x\n",
		"a lowercase key as a key":   "apps:\n- {name: a, app_id: '1', app_key: k, sec0123456789abcdef: x}\n",
		"a key after a setting":      "apps:\n- {name: a, app_id: '1', app_key: k, app_key0123456789: x}\n",
		"a quoted key with newlines": "apps:\n- {name: a, app_id: '1', app_key: k, \"x\\n" + key + "\\ny\": 1}\n",
		"a custom tag":               "api:\n  max_concurrency: !" + key + " 5\napps: [{name: a, app_id: '1', app_key: k}]\n",
		"a verbatim tag":             "api: {max_concurrency: !<" + key + "> 5}\napps: [{name: a, app_id: '1', app_key: k}]\n",
		"a tag directive":            "%TAG !e! tag:" + key + ":\n---\napi: {max_concurrency: !e!x 5}\napps: [{name: a, app_id: '1', app_key: k}]\n",
		"a tag on a section":         "apps: !" + key + " x\n",
		"a header set twice":         "api: {http_client: {http_headers: {" + key + ": {values: [c]}, " + key + ": {values: [d]}}}}\napps: [{name: a, app_id: '1', app_key: k}]\n",
		"a backquote in a value":     "sessions: {max_tracked: !!int 'x`" + key + "'}\napps: [{name: a, app_id: '1', app_key: k}]\n",
		"an escaped space in a tag":  "sessions: {max_tracked: !x%20" + key + " 5}\napps: [{name: a, app_id: '1', app_key: k}]\n",
		"escaped blanks, verbatim":   "sessions: {max_tracked: !<x%09" + key + "%0Ay> 5}\napps: [{name: a, app_id: '1', app_key: k}]\n",
		"a tag with into in it":      "sessions: {max_tracked: !!str%20into%20" + key + " 5}\napps: [{name: a, app_id: '1', app_key: k}]\n",
		"an escaped space, apps":     "apps: [!x%20" + key + " 5]\n",
		"a tag into interface {}":    "api: {http_client: {oauth2: {client_id: x, token_url: 'http://a/', claims: !x%20" + key + " 5}}}\napps: [{name: a, app_id: '1', app_key: k}]\n",
		// prometheus/common's TLS version decoder does not quote it.
		"tls min_version": "api: {http_client: {tls_config: {min_version: " + key + "}}}\napps: [{name: a, app_id: '1', app_key: k}]\n",
	} {
		t.Run(name, func(t *testing.T) {
			_, err := Parse([]byte(doc), "")
			require.Error(t, err)
			assert.NotContains(t, err.Error(), "0123456789")
			assert.NotContains(t, err.Error(), "SEC")
		})
	}
	_, err := Parse([]byte("apps: [{name: a, app_id: '1', app_key:"+key+"}]\n"), "")
	assert.EqualError(t, err, "parsing YAML: line 1: field app_key… (a space missing after a colon?) not found in an entry of apps")
	_, err = Parse([]byte("apps: [{name: a, app_id: '1', app_key: k, appId: '2', name: b}]\n"), "")
	assert.EqualError(t, err, "parsing YAML: line 1: field (not printed: only a name shaped as a setting's is, lowercase letters and _) not found in an entry of apps; line 1: field name already set in an entry of apps")
	_, err = Parse([]byte("api: {max_concurrency: !!str 5}\napps: [{name: a, app_id: '1', app_key: k}]\n"), "")
	assert.EqualError(t, err, "parsing YAML: line 1: cannot unmarshal !!str into int", "a standard tag is named")
	_, err = Parse([]byte("api: {max_concurrency: !!secretpasswordxyz 5}\napps: [{name: a, app_id: '1', app_key: k}]\n"), "")
	assert.EqualError(t, err, "parsing YAML: line 1: cannot unmarshal into int", "another !! tag is not")
}

// A file of http_headers is checked as a key file is, at load and reload.
func TestHeaderFilesAreCheckedAtLoad(t *testing.T) {
	for name, mk := range map[string]func(p string) error{
		"fifo":  func(p string) error { return syscall.Mkfifo(p, 0o600) },
		"empty": func(p string) error { return os.WriteFile(p, []byte("\n"), 0o600) },
		"gone":  func(string) error { return nil },
	} {
		t.Run(name, func(t *testing.T) {
			tmp := t.TempDir()
			require.NoError(t, mk(filepath.Join(tmp, "h")))
			_, err := Parse([]byte("api: {http_client: {http_headers: {X-Gate: {files: [h]}}}}\napps: [{name: a, app_id: '1', app_key: k}]"), tmp)
			require.Error(t, err)
			assert.Contains(t, err.Error(), `api.http_client.http_headers: header "X-Gate": `)
		})
	}
	tmp := t.TempDir()
	require.NoError(t, os.WriteFile(filepath.Join(tmp, "h"), []byte(secretMarker+"-gate\n"), 0o600))
	_, err := Parse([]byte("api: {http_client: {http_headers: {X-Gate: {files: [h]}}}}\napps: [{name: a, app_id: '1', app_key: k}]"), tmp)
	assert.NoError(t, err)
}

// A misspelled field of prometheus/common's HTTP client settings names the
// section, and a blank inline credential is none, as a blank file is.
func TestHTTPClientTyposAndBlankCredentialsAreNamed(t *testing.T) {
	_, err := Parse([]byte("api: {http_client: {follow_redirect: false}}\napps: [{name: a, app_id: '1', app_key: k}]"), "")
	require.Error(t, err)
	assert.Contains(t, err.Error(), "field follow_redirect not found in api.http_client")
	for _, cred := range []string{"app_key: '   '", `token: " \n"`} {
		_, err = Parse([]byte("apps: [{name: a, app_id: '1', "+cred+"}]"), "")
		require.Error(t, err, cred)
		assert.Contains(t, err.Error(), "found none", cred)
	}
}

// The configuration is one YAML document: a second one (two files pasted
// together) is refused, not silently ignored; empty ones after it (a
// trailing ---, as templating leaves) are fine.
func TestParseRefusesASecondDocument(t *testing.T) {
	one := "apps: [{name: a, app_id: '1', app_key: k}]\n"
	for _, doc := range []string{one + "---\napps: [{name: b, app_id: '2', app_key: " + secretMarker + "}]\n", one + "---\n---\n# x\n---\nx: 1\n"} {
		_, err := Parse([]byte(doc), "")
		require.Error(t, err, "%q", doc)
		assert.Contains(t, err.Error(), "more than one document", "%q", doc)
		assert.NotContains(t, err.Error(), secretMarker)
	}
	_, err := Parse([]byte("---\n"+one+"---\n[\n"), "")
	assert.ErrorContains(t, err, "parsing YAML: yaml: line 4", "a second document that does not parse")
	for _, doc := range []string{one, "---\n" + one, one + "...\n", "---\n" + one + "...\n# the end\n", one + "---\n", one + "---\n# the end\n---\n"} {
		_, err := Parse([]byte(doc), "")
		assert.NoError(t, err, "%q", doc)
	}
}

// Key, token and header values are one line: net/http refuses a header
// value with a line break or another control character, so every call
// would fail (as a network error). They are refused at load, with the
// field or file named and the value not echoed; a TLS file holds lines.
func TestSecretValuesAreOneLine(t *testing.T) {
	for _, app := range []string{`app_key: "` + secretMarker + `\nk2"`, `token: "` + secretMarker + `\u0000"`, `token: "a\rb"`} {
		_, err := Parse([]byte("apps: [{name: a, app_id: '1', "+app+"}]"), "")
		require.Error(t, err, app)
		assert.Contains(t, err.Error(), "holds more than one line or a control character", app)
		assert.NotContains(t, err.Error(), secretMarker)
	}
	for _, h := range []string{`values: ["a\nb"]`, `secrets: ["` + secretMarker + `\u007f"]`} {
		_, err := Parse([]byte("api: {http_client: {http_headers: {X-Gate: {"+h+"}}}}\napps: [{name: a, app_id: '1', app_key: k}]"), "")
		require.Error(t, err, h)
		assert.Contains(t, err.Error(), `header "X-Gate": a value holds a line break or a control character`, h)
		assert.NotContains(t, err.Error(), secretMarker)
	}
	for _, h := range []string{`"X-Tenant Id": {values: [a]}`, `"X-A\nB": {values: [a]}`, `"X-Token ": {values: [a]}`, `"": {values: [a]}`} {
		_, err := Parse([]byte("api: {http_client: {http_headers: {"+h+"}}}\napps: [{name: a, app_id: '1', app_key: k}]"), "")
		assert.ErrorContains(t, err, "api.http_client.http_headers: a header name is not valid", h)
	}
	for h, want := range map[string]string{`{X-Gate: ["` + secretMarker + `\u0001"]}`: `header "X-Gate": a value holds`, `{"X Gate": [a]}`: "a header name is not valid",
		`{"` + secretMarker + `=": [a]}`: "a header name is not valid"} { // a base64 secret pasted as a name
		_, err := Parse([]byte("api: {http_client: {proxy_url: 'http://proxy:3128', proxy_connect_header: "+h+"}}\napps: [{name: a, app_id: '1', app_key: k}]"), "")
		assert.ErrorContains(t, err, "api.http_client.proxy_connect_header: "+want, h)
		assert.NotContains(t, fmt.Sprint(err), secretMarker)
	}
	_, err := Parse([]byte("api: {http_client: {http_headers: {\""+secretMarker+"/=\": {values: [a]}}}}\napps: [{name: a, app_id: '1', app_key: k}]"), "")
	assert.ErrorContains(t, err, "a header name is not valid")
	assert.NotContains(t, fmt.Sprint(err), secretMarker, "a base64 secret pasted as a header name")
	_, err = Parse([]byte("api: {http_client: {http_headers: {X-Gate: {values: [\"a\\tb\"], secrets: [\""+secretMarker+"\"]}}}}\napps: [{name: a, app_id: '1', token: \"t\\n\"}]"), "")
	assert.NoError(t, err, "a tab, and white space around a credential, are fine")

	tmp := t.TempDir()
	for name, content := range map[string]string{"key": "k1\nk2\n", "token": "t\x00\n", "header": secretMarker + "\r\nX-Injected: 1\n"} {
		require.NoError(t, os.WriteFile(filepath.Join(tmp, name), []byte(content), 0o600))
	}
	for _, doc := range []string{
		"apps: [{name: a, app_id: '1', app_key_file: key}]",
		"apps: [{name: a, app_id: '1', token_file: token}]",
		"api: {http_client: {http_headers: {X-Gate: {files: [header]}}}}\napps: [{name: a, app_id: '1', app_key: k}]",
	} {
		_, err := Parse([]byte(doc), tmp)
		require.Error(t, err, doc)
		assert.Contains(t, err.Error(), "holds more than one line or a control character", doc)
		assert.NotContains(t, err.Error(), secretMarker)
	}
}

// A value the configuration quotes in an error (a name, a conversation ID,
// a header name) is cut to 64 characters: a pasted blob makes no
// megabyte log line.
func TestErrorsQuoteAtMost64Characters(t *testing.T) {
	long := strings.Repeat("x", 1<<20)
	for _, doc := range []string{
		"apps: [{name: " + long + ", app_id: '1', app_key: k}]",
		"apps: [{name: a, app_id: '1', app_key: k, conversations: [" + long + ", " + long + "]}]",
		"apps: [{name: a, app_id: '1', app_key: k, conversations: ['" + long + " ']}]",
		"api: {http_client: {http_headers: {" + long + ": {values: [\"a\\nb\"]}}}}\napps: [{name: a, app_id: '1', app_key: k}]",
		"janitor: {alert_name: '" + long + "-'}\napps: [{name: a, app_id: '1', app_key: k}]",
		"apps: [{name: " + long + ", app_id: '1', app_key: k, token_ttl: 1y2}]",
	} {
		_, err := Parse([]byte(doc), "")
		require.Error(t, err)
		assert.Less(t, len(err.Error()), 400, "%.200s", err)
	}
	name := strings.Repeat("n", 128) // a valid name
	for _, doc := range []string{"apps: [{name: " + name + ", app_key: k}]", "apps: [{name: " + name + ", app_id: '1', app_key: k}, {name: " + name + ", app_id: '2', app_key: k}]",
		"apps: [{name: " + name + ", app_id: '1', app_key: k}, {name: b, app_id: '1', app_key: k}]"} {
		_, err := Parse([]byte(doc), "")
		require.Error(t, err)
		assert.Contains(t, err.Error(), name[:64])
		assert.NotContains(t, err.Error(), name[:65])
	}
}

// A configuration file is parsed into a YAML tree of about 100 bytes per
// item: one far larger than a fleet needs is refused before it is parsed,
// so that a reload cannot take the exporter past its memory limit (a flow
// list of 8 million items would cost over 1 GiB). 5000 apps parse.
func TestAHugeConfigurationIsRefusedBeforeItIsParsed(t *testing.T) {
	for _, doc := range []string{
		"x: [" + strings.Repeat("1,", MaxConfigItems) + "1]\n",
		"x:\n" + strings.Repeat("- 1\n", MaxConfigItems/2+1),
		"x: [" + strings.Repeat("{},", MaxConfigItems/2) + strings.Repeat("[]", MaxConfigItems/2) + "]",
		"x:\r" + strings.Repeat("-\r", MaxConfigItems), // YAML's other line breaks
		"x:\u2028" + strings.Repeat("-\u2028", MaxConfigItems),
		"x:\n" + strings.Repeat(strings.Repeat("- ", 1000)+"x\n", MaxConfigItems/1000), // nested on one line
		strings.Repeat("{a: b, c: d}: x\n", MaxConfigItems/4),
		"x: [&a 1, " + strings.Repeat("*a,", MaxConfigItems*2/5) + "*a]", // an alias is a node
	} {
		data := []byte(doc)
		var before, after runtime.MemStats
		runtime.ReadMemStats(&before)
		_, err := Parse(data, "")
		runtime.ReadMemStats(&after)
		require.Error(t, err)
		assert.Contains(t, err.Error(), "too large to parse")
		assert.Less(t, after.TotalAlloc-before.TotalAlloc, uint64(1<<20), "refused before the YAML tree was built")
	}
	// Fleets as written: 5000 apps of 8 conversations, a comment each and
	// Windows line endings; 10 000 apps of 5 conversations.
	var b strings.Builder
	b.WriteString("apps:\r\n")
	for i := range 5000 {
		fmt.Fprintf(&b, "  # app %d: the front desk, the kiosk: with 8 conversations\r\n  - name: app-%05d\r\n    app_id: \"%d\"\r\n    app_key: KEY-%d\r\n    conversations:\r\n", i, i, i, i)
		for c := range 8 {
			fmt.Fprintf(&b, "      - \"c%d-%d\"\r\n", i, c)
		}
	}
	cfg, err := Parse([]byte(b.String()), "")
	require.NoError(t, err)
	assert.Len(t, cfg.Apps, 5000)
	b.Reset()
	b.WriteString("apps:\n")
	for i := range 10000 {
		fmt.Fprintf(&b, "  - name: app-%05d\n    app_id: \"%d\"\n    app_key_file: /etc/duix/keys/app-%05d.key\n    conversations: [\"c%d-1\", \"c%d-2\", \"c%d-3\", \"c%d-4\", \"c%d-5\"]\n", i, i, i, i, i, i, i, i)
	}
	_, err = Parse([]byte(b.String()), "") // fails later: the key files are not there
	assert.NotContains(t, fmt.Sprint(err), "too large to parse", "10 000 apps")
	// A Windows line ending is one line break: 200 000 of them are within the bound.
	_, err = Parse([]byte("x:\r\n"+strings.Repeat("-\r\n", MaxConfigItems*2/3)), "")
	assert.ErrorContains(t, err, "field x not found")
}

// The documents after the configuration are not decoded: aliases there
// are not expanded (a second document is refused all the same).
func TestTheDocumentsAfterTheConfigurationAreNotDecoded(t *testing.T) {
	doc := "apps: [{name: a, app_id: '1', app_key: k}]\n---\n- &m {a: b, c: d, e: f}\n- [" + strings.Repeat("*m, ", 90000) + "*m]\n"
	data := []byte(doc)
	var before, after runtime.MemStats
	runtime.ReadMemStats(&before)
	_, err := Parse(data, "")
	runtime.ReadMemStats(&after)
	require.ErrorContains(t, err, "more than one document")
	assert.Less(t, after.TotalAlloc-before.TotalAlloc, uint64(40<<20), "90 000 aliases of a map were not expanded (17 MB; 68 MB when they were)")
}

// IDs label series: at most 256 bytes.
func TestIDsAreAtMost256Bytes(t *testing.T) {
	long := strings.Repeat("9", 257)
	_, err := Parse([]byte("apps: [{name: a, app_id: '"+long+"', app_key: k}]"), "")
	assert.ErrorContains(t, err, "app_id is not valid UTF-8 of at most 256 bytes")
	_, err = Parse([]byte("apps: [{name: a, app_id: '1', app_key: k, conversations: ['"+long+"']}]"), "")
	assert.ErrorContains(t, err, "conversations[0]: not valid UTF-8 of at most 256 bytes")
	_, err = Parse([]byte("apps: [{name: a, app_id: '"+long[1:]+"', app_key: k, conversations: ['"+long[1:]+"']}]"), "")
	assert.NoError(t, err)
	_, err = Parse([]byte(`apps: [{name: a, app_id: "app 1-é_中", app_key: k}]`), "") // inner spaces and any script pass
	assert.NoError(t, err)
	for _, id := range []string{`"1\u0000"`, `"\e[31m1"`, `"1 "`, `" 1"`, `"1\t"`, // nor two IDs that look alike
		`"1\u0085"`, `"\u009b31m1"`, `"1\u2028"`, `"\u202e1"`, `"\ufeff1"`, `"1\u200b"`, `"1\u00a0"`, `"1\u00ad"`} { // C1 controls, separators, invisibles
		_, err = Parse([]byte("apps: [{name: a, app_id: "+id+", app_key: k}, {name: b, app_id: '1', app_key: k}]"), "")
		assert.ErrorContains(t, err, "app_id holds a control character, or leading or trailing white space", id)
	}
}

// A file with thousands of mistakes gets an error of the first ten, not a
// line of megabytes.
func TestAnErrorNamesTheFirstTenMistakes(t *testing.T) {
	var b strings.Builder
	for i := range 5000 {
		fmt.Fprintf(&b, "unknown_%d: %s\n", i, secretMarker)
	}
	_, err := Parse([]byte(b.String()), "")
	require.Error(t, err)
	assert.Contains(t, err.Error(), "; and 4990 more")
	assert.Less(t, len(err.Error()), 2000)
	assert.NotContains(t, err.Error(), secretMarker)
}

// janitor.alert_name is at most 128 characters (docs/configuration.md):
// 128 are accepted, 129 refused.
func TestJanitorAlertNameIsAtMost128Characters(t *testing.T) {
	const apps = "\napps: [{name: a, app_id: '1', token: t}]"
	name := "A" + strings.Repeat("b", 127)
	cfg, err := Parse([]byte("janitor: {alert_name: "+name+"}"+apps), "")
	require.NoError(t, err)
	assert.Equal(t, name, cfg.Janitor.AlertName)
	_, err = Parse([]byte("janitor: {alert_name: "+name+"c}"+apps), "")
	require.Error(t, err)
	assert.Contains(t, err.Error(), "janitor.alert_name: must be an alert name")
}
