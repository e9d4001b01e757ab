package main

import (
	"io"
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// With --janitor.listen-address, the janitor serves Alertmanager's webhook
// on its own listener, the metrics listener stays read-only, and the
// landing page says that the janitor is on and shows its decisions.
func TestJanitorListenerAndLandingPage(t *testing.T) {
	t.Parallel()
	addr := freeAddr(t)
	p := startExporter(t, "--demo", "--janitor.listen-address="+addr)

	_, page := p.get(t, "/")
	assert.Contains(t, page, `id="janitor"`, "the landing page says the janitor is on")
	assert.Contains(t, page, "No decision yet.")

	post := func(url string) (int, string) {
		t.Helper()
		payload := `{"version":"4","status":"firing","receiver":"duix-janitor","groupLabels":{},"commonLabels":{},` +
			`"commonAnnotations":{},"externalURL":"http://am:9093","groupKey":"{}","truncatedAlerts":0,"alerts":[{"status":"firing",` +
			`"labels":{"alertname":"DuixSessionStuck","app":"support-desk","severity":"warning"},"annotations":{},` +
			`"startsAt":"` + time.Now().Add(-time.Hour).UTC().Format(time.RFC3339) + `","endsAt":"0001-01-01T00:00:00Z","generatorURL":"","fingerprint":"f"}]}`
		resp, err := http.Post(url, "application/json", strings.NewReader(payload))
		require.NoError(t, err)
		defer resp.Body.Close()
		b, err := io.ReadAll(resp.Body)
		require.NoError(t, err)
		return resp.StatusCode, string(b)
	}
	code, _ := post(p.url + "/webhook")
	assert.Equal(t, http.StatusNotFound, code, "the metrics listener has no webhook")

	// The demo's apps do not opt in: nothing is stopped, and the answer,
	// the metrics and the landing page say why.
	code, answer := post("http://" + addr + "/webhook")
	require.Equal(t, http.StatusOK, code, answer)
	assert.Contains(t, answer, `app "support-desk" has not opted in`)
	_, metrics := p.get(t, "/metrics")
	assert.Regexp(t, `(?m)^duix_janitor_refusals_total\{reason="not_opted_in"\} 1$`, metrics)
	assert.Regexp(t, `(?m)^duix_janitor_webhook_requests_total\{outcome="handled"\} 1$`, metrics)
	_, page = p.get(t, "/")
	assert.NotContains(t, page, "No decision yet.")
	assert.Regexp(t, `<td>support-desk</td>.*not_opted_in`, page)
}

// Without the flag there is no janitor: no listener, no metrics, nothing on
// the landing page.
func TestJanitorOffByDefault(t *testing.T) {
	t.Parallel()
	p := startExporter(t, "--demo")
	_, page := p.get(t, "/")
	assert.NotContains(t, page, `id="janitor"`)
	_, metrics := p.get(t, "/metrics")
	assert.NotContains(t, metrics, "duix_janitor_")
}
