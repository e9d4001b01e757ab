package operator

import (
	"io"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
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
