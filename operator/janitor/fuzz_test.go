package janitor_test

import (
	"net/http"
	"regexp"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
)

// refusedPayload is every answer the janitor gives a payload it cannot read: its own words, nothing of the payload.
var refusedPayload = regexp.MustCompile(`^(not an Alertmanager webhook payload: (a field has the wrong type|not a JSON object|` +
	`data after the JSON object|null|no version|no alerts)|unsupported webhook payload version: the janitor reads version "4"|` +
	`alerts\[\d+\]: (status must be "firing" or "resolved"|no alertname label)): nothing done$`)

// Whatever a webhook sends, the janitor answers with a status of its documented list and does not panic; a payload
// it cannot read is refused in one line of its own words, and the platform is not called.
func FuzzWebhook(f *testing.F) {
	good := `{"version":"4","status":"firing","alerts":[{"status":"firing","labels":{"alertname":"DuixSessionStuck","app":"kiosk"}}]}`
	for _, seed := range []string{good, strings.Replace(good, `"4"`, `"3"`, 1), strings.Replace(good, `"firing","labels"`, `"FIRING","labels"`, 1),
		strings.Replace(good, `"kiosk"`, `"SECRET"`, 1), strings.Replace(good, `"kiosk"`, `7`, 1), good + good, "[" + good + "]",
		`{"version":"4","alerts":[null]}`, `{"version":"4","alerts":[{"status":"resolved","labels":null}]}`, "null", "SECRET {", ""} {
		f.Add(seed)
	}
	f.Fuzz(func(t *testing.T, body string) {
		fx := newFixture(t, "")
		fx.session("kiosk", 3*time.Hour)
		code, answer := fx.post(body)
		assert.Contains(t, []int{http.StatusOK, http.StatusBadRequest, http.StatusRequestEntityTooLarge, http.StatusUnprocessableEntity, http.StatusBadGateway}, code, "%.300s", answer)
		assert.NotContains(t, answer, "\x00")
		if code == http.StatusBadRequest {
			assert.Regexp(t, refusedPayload, strings.TrimSpace(answer))
			assert.Zero(t, fx.stops.Load()+fx.lists.Load(), "the platform is not called")
		}
	})
}
