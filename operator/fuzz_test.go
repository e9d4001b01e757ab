package operator

import (
	"encoding/json"
	"io"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync/atomic"
	"testing"
	"unicode"
	"unicode/utf8"

	"github.com/stretchr/testify/assert"
)

// Whatever a platform answers, the read-only commands end with 0 or 1, print valid UTF-8 with no control character
// but the line feed and nothing that would disguise the text around it, and their JSON outputs parse.
func FuzzCommandOutput(f *testing.F) {
	commands := [][]string{
		{"sessions", "list", "--app=a"}, {"sessions", "list", "--app=a", "--output=json"}, {"apps", "check"},
		{"conversation", "show", "--app=a", "--id=1"}, {"conversation", "show", "--app=a", "--id=1", "--output=json"},
	}
	for i, seed := range []string{
		`{"success":true,"code":"0","data":[{"uuid":"s1","conversationId":"1","startTime":1700000000000,"note":"x` + "\u009b2J\u202e" + `"}]}`,
		`{"success":true,"code":"0","data":{"list":["a` + "\\u001b[2J" + `b","\u2028"]}}`,
		`{"success":true,"code":"0","data":{"cropId":"c\u0085","totalConcurrentNumber":5,"userConcurrentNumber":2}}`,
		`{"success":true,"code":"0","data":{"id":"1","conversationName":"n` + "\\u009b2J\\ud800" + `","maxConversation":3,"conversationConfigDto":{"a":"\t"}}}`,
		`{"success":false,"code":"E\u001b[31m","message":"` + "\x1b]0;title\x07" + `"}`,
		"\x1b[2J", `{"success":true,"data":[{"uuid":"` + strings.Repeat("\u200f", 200) + `"}]}`,
	} {
		f.Add(uint8(i), seed)
	}
	var answer atomic.Pointer[string]
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, _ *http.Request) { _, _ = io.WriteString(w, *answer.Load()) }))
	f.Cleanup(srv.Close)
	config := "--config.file=" + oneAppConfig(f, srv.URL)
	f.Fuzz(func(t *testing.T, command uint8, body string) {
		answer.Store(&body)
		args := commands[int(command)%len(commands)]
		res := runCommand(t, nil, append([]string{config}, args...)...)
		assert.Contains(t, []int{exitOK, exitFailed}, res.code)
		out := res.stdout + res.stderr
		assert.True(t, utf8.ValidString(out), "valid UTF-8")
		hidden := func(r rune) bool {
			return unicode.IsControl(r) && r != '\n' || unicode.In(r, unicode.Cf, unicode.Zl, unicode.Zp)
		}
		if i := strings.IndexFunc(out, hidden); i >= 0 {
			t.Errorf("a control or disguising character at %d: %+q", i, out[max(i-20, 0):min(i+20, len(out))])
		}
		if args[len(args)-1] == "--output=json" && res.code == exitOK {
			assert.True(t, json.Valid([]byte(res.stdout)), "the JSON output parses")
		}
	})
}
