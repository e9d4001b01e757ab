package collector_test

import (
	"context"
	"io"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/duix-exporter/duix_exporter/simulator"
)

// A platform that puts the token it received into a conversation's name
// does not get it exported as a label value, neither when it escapes the
// bytes after the first of each part as \uXXXX (not an escape of
// encoding/json) nor when it pads its answer past 64 KiB, so that it
// streams.
func TestATokenEchoedInAConversationNameIsNotExported(t *testing.T) {
	for _, variant := range []string{"escape", "padded"} {
		t.Run(variant, func(t *testing.T) {
			e := newEnv(t, appDef{"a", "app-a", "key-a", 5, []string{"c1"}})
			var tokens []string
			srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
				if !strings.HasSuffix(r.URL.Path, simulator.EndpointConversation) {
					e.sim.ServeHTTP(w, r)
					return
				}
				tok := strings.TrimPrefix(r.Header.Get("Authorization"), "Bearer ")
				tokens = append(tokens, tok)
				name := simulator.EscapeParts(tok)
				pad := ""
				if variant == "padded" {
					name, pad = tok, strings.Repeat(" ", 64<<10)
				}
				rec := httptest.NewRecorder()
				e.sim.ServeHTTP(rec, r)
				answer := strings.Replace(rec.Body.String(), `"conversationName":"conv c1"`, `"conversationName":"echo `+name+`"`, 1)
				require.Contains(t, answer, "echo")
				answer = strings.Replace(answer, "{", "{"+pad, 1)
				_, _ = io.WriteString(w, answer)
			}))
			t.Cleanup(srv.Close)
			cfg := *e.cfg
			cfg.API.BaseURL = srv.URL + simulator.BasePath
			require.NoError(t, e.exp.Apply(&cfg))
			body := e.scrapeText(t, context.Background())
			require.NotEmpty(t, tokens)
			require.NotEmpty(t, tokens[0])
			assert.NotContains(t, body, tokens[0])
			assert.NotContains(t, body, tokens[0][strings.LastIndex(tokens[0], ".")+1:], "the signature")
		})
	}
}
