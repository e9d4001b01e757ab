package operator

import (
	"encoding/json"
	"io"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"
	"unicode/utf8"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// A hostile platform neither hangs a command nor gets its text into the
// errors, and no secret or terminal escape reaches the output: endless
// bodies, wrong shapes, odd Retry-After values, redirects to another host.
func TestHostileAnswersReachNoOutput(t *testing.T) {
	other := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		for k, v := range r.Header {
			if strings.Contains(strings.ToLower(k), "auth") || strings.Contains(strings.Join(v, ""), "SECRET") {
				t.Errorf("header %s reached another host", k)
			}
		}
		_, _ = io.WriteString(w, `{"success":false,"code":"UPSTREAM-TEXT-\u001b[31m","message":"UPSTREAM-TEXT"}`)
	}))
	t.Cleanup(other.Close)
	for name, h := range map[string]http.HandlerFunc{
		"endless body": func(w http.ResponseWriter, r *http.Request) {
			_, _ = io.WriteString(w, `{"success":true,"data":[`)
			for r.Context().Err() == nil {
				if _, err := io.WriteString(w, `"UPSTREAM-TEXT",`); err != nil {
					return
				}
			}
		},
		"wrong shape": func(w http.ResponseWriter, r *http.Request) {
			_, _ = io.WriteString(w, `{"success":true,"data":{"list":"UPSTREAM-TEXT"},"message":"UPSTREAM-TEXT"}`)
		},
		"429 with an odd Retry-After": func(w http.ResponseWriter, r *http.Request) {
			w.Header().Set("Retry-After", "-99999999999999999999999 UPSTREAM-TEXT")
			w.WriteHeader(http.StatusTooManyRequests)
			_, _ = io.WriteString(w, "UPSTREAM-TEXT")
		},
		"429 with a huge Retry-After": func(w http.ResponseWriter, r *http.Request) {
			w.Header().Set("Retry-After", "99999999999999999999999")
			w.WriteHeader(http.StatusTooManyRequests)
		},
		"redirect to another host": func(w http.ResponseWriter, r *http.Request) {
			http.Redirect(w, r, other.URL+r.URL.Path+"?"+r.URL.RawQuery, http.StatusFound)
		},
		"code with text": func(w http.ResponseWriter, r *http.Request) {
			_, _ = io.WriteString(w, `{"success":false,"code":"UPSTREAM TEXT","msg":"UPSTREAM-TEXT"}`)
		},
	} {
		t.Run(name, func(t *testing.T) {
			srv := httptest.NewServer(h)
			t.Cleanup(srv.Close)
			config := "--config.file=" + oneAppConfig(t, srv.URL)
			for _, args := range [][]string{
				{"sessions", "list", "--app=a"},
				{"sessions", "stop", "--app=a", "--session=abc", "--yes"},
				{"sessions", "stop", "--app=a", "--all", "--yes"},
				{"apps", "check"},
			} {
				res := runCommand(t, nil, append([]string{config}, args...)...)
				// Records and a stop's data are the platform's, printed as
				// they came (docs/operator.md); errors carry none of it.
				assert.NotContains(t, res.stderr, "UPSTREAM", "%v", args)
				assert.NotContains(t, res.stdout+res.stderr, "SECRET", "%v", args)
				assert.NotContains(t, res.stdout+res.stderr, "\x1b", "%v", args)
			}
		})
	}
}

// The JSON outputs carry the platform's text as JSON, never as terminal
// control: invalid UTF-8 is U+FFFD and C1 controls (CSI, U+009B), DEL and
// what would disguise the text (a right-to-left override) are escaped; and platform JSON is printed as compact as it came, so that
// a deeply nested record cannot make an output of hundreds of megabytes
// (indenting it would grow with the square of its depth).
func TestJSONOutputsAreSafeAndAsLargeAsTheAnswer(t *testing.T) {
	nest := strings.Repeat("[", 5000) + strings.Repeat("]", 5000)
	for name, tc := range map[string]struct {
		body string
		args []string
	}{
		"sessions": {`{"success":true,"code":"0","data":[{"uuid":"s1` + "\u009b" + `2J","startTime":1700000000000,"note":"x` + "\u009b2Jy\x9b2J\u007f\u202egnp.exe\u2028" + `","x":` + nest + `}]}`,
			[]string{"sessions", "list", "--app=a", "--output=json"}},
		"conversation": {`{"success":true,"code":"0","data":{"id":"1","conversationName":"n` + "\u009b2J\xff" + `","conversationConfigDto":{"a":"r` + "\x9b2J" + `","n":` + nest + `}}}`,
			[]string{"conversation", "show", "--app=a", "--id=1", "--output=json"}},
	} {
		t.Run(name, func(t *testing.T) {
			srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) { _, _ = io.WriteString(w, tc.body) }))
			t.Cleanup(srv.Close)
			res := runCommand(t, nil, append([]string{"--config.file=" + oneAppConfig(t, srv.URL)}, tc.args...)...)
			require.Empty(t, res.stderr)
			assert.Less(t, len(res.stdout), 2*len(tc.body), "as large as the answer")
			assert.True(t, utf8.ValidString(res.stdout))
			assert.False(t, strings.ContainsFunc(res.stdout, func(r rune) bool { return r == 0x7f || r >= 0x80 && r <= 0x9f || r == 0x202e || r == 0x2028 }), "%q", res.stdout[:200])
			assert.True(t, strings.Contains(res.stdout, `\u009b2J`), "C1 escaped")
			var v any
			assert.NoError(t, json.Unmarshal([]byte(res.stdout), &v), "still JSON")
		})
	}
}
