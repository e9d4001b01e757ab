package web

import (
	"context"
	"html"
	"net/http"
	"net/http/httptest"
	"regexp"
	"strings"
	"testing"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/duix-exporter/duix_exporter/collector"
	"github.com/duix-exporter/duix_exporter/config"
	"github.com/duix-exporter/duix_exporter/internal/platformtest"
	"github.com/duix-exporter/duix_exporter/simulator"
)

var (
	rowRE  = regexp.MustCompile(`(?s)<tr id="app-([^"]+)">(.*?)</tr>`)
	cellRE = regexp.MustCompile(`(?s)<td([^>]*)>(.*?)</td>`)
	tagRE  = regexp.MustCompile(`<[^>]+>`)
)

// statusCell is one cell of the landing page's table.
type statusCell struct{ attrs, html, text string }

// statusRows finds the rows of the landing page's status table by app.
func statusRows(page string) map[string][]statusCell {
	rows := map[string][]statusCell{}
	for _, m := range rowRE.FindAllStringSubmatch(page, -1) {
		var cells []statusCell
		for _, c := range cellRE.FindAllStringSubmatch(m[2], -1) {
			text := html.UnescapeString(tagRE.ReplaceAllString(strings.ReplaceAll(c[2], "<br>", " "), ""))
			cells = append(cells, statusCell{attrs: c[1], html: c[2], text: strings.Join(strings.Fields(text), " ")})
		}
		rows[m[1]] = cells
	}
	return rows
}

func newTestExporter(t *testing.T, p *platform) *collector.Exporter {
	t.Helper()
	cfg, err := config.Load(p.Config)
	require.NoError(t, err)
	exp := collector.New(collector.Options{})
	require.NoError(t, exp.Apply(cfg))
	return exp
}

func scrapeOnce(t *testing.T, exp *collector.Exporter) {
	t.Helper()
	reg := prometheus.NewRegistry()
	reg.MustRegister(exp.Collector(context.Background()))
	_, err := reg.Gather()
	require.NoError(t, err)
}

func getLanding(t *testing.T, h http.Handler, path string) (*httptest.ResponseRecorder, string) {
	t.Helper()
	rec := httptest.NewRecorder()
	h.ServeHTTP(rec, httptest.NewRequest(http.MethodGet, path, nil))
	return rec, rec.Body.String()
}

func TestLandingPageShowsTheLastScrape(t *testing.T) {
	p := startPlatform(t)
	exp := newTestExporter(t, p)
	page := http.HandlerFunc(func(w http.ResponseWriter, _ *http.Request) {
		landingPage(w, Options{TelemetryPath: "/metrics"}, exp.Statuses())
	})

	rec, body := getLanding(t, page, "/")
	require.Equal(t, http.StatusOK, rec.Code)
	assert.Equal(t, "text/html; charset=UTF-8", rec.Header().Get("Content-Type"))
	assert.Equal(t, "no-store", rec.Header().Get("Cache-Control"), "the apps' status is never shown stale")
	assert.Contains(t, body, "<h1>duix_exporter</h1>")
	assert.Contains(t, body, `<a href="/metrics">Metrics</a>`)
	assert.Contains(t, body, `href="https://github.com/duix-exporter/duix_exporter#readme"`)
	assert.NotContains(t, body, "debug/pprof", "no links to handlers that are not served")
	assert.NotContains(t, body, "<script", "works without JavaScript")
	rows := statusRows(body)
	require.Len(t, rows, 3)
	for _, app := range []string{"support-desk", "sales-avatar", "museum-guide"} {
		require.Len(t, rows[app], 3, app)
		assert.Equal(t, app+" app ID "+p.ID(app), rows[app][0].text)
		assert.Equal(t, "not scraped yet", rows[app][1].text)
		assert.Equal(t, `<a href="/probe?app=`+app+`">/probe?app=`+app+`</a>`, rows[app][2].html)
	}
	assert.Zero(t, p.Sim.Requests(simulator.EndpointConcurrency), "the page calls nothing")

	scrapeOnce(t, exp)
	// museum-guide now at its limit, a scrape later.
	for range 3 {
		_, err := p.Sim.StartSession(p.ID("museum-guide"), "3081")
		require.NoError(t, err)
	}
	_, body = getLanding(t, page, "/")
	rows = statusRows(body)
	for app, want := range map[string][]string{
		"support-desk": {"up", "3 / 10", "3"},
		"sales-avatar": {"up", "8 / 20", "8"},
		"museum-guide": {"up", "2 / 5", "2"},
	} {
		require.Len(t, rows[app], 8, app)
		got := []string{rows[app][1].text, rows[app][2].text, rows[app][3].text}
		assert.Equal(t, want, got, app)
		assert.Regexp(t, `^\d{4}-\d\d-\d\d \d\d:\d\d:\d\d UTC \d+s ago$`, rows[app][4].text, app)
		assert.Regexp(t, `^[0-9.]+(µs|ms|s)$`, rows[app][5].text, app)
		assert.Equal(t, "–", rows[app][6].text, app)
		assert.Contains(t, rows[app][7].html, "/probe?app="+app)
	}
	assert.NotContains(t, rows["museum-guide"][2].attrs, "full")

	scrapeOnce(t, exp)
	_, body = getLanding(t, page, "/")
	rows = statusRows(body)
	assert.Equal(t, "5 / 5", rows["museum-guide"][2].text)
	assert.Contains(t, rows["museum-guide"][2].attrs, "full", "an app at its limit stands out")

	h, err := NewHandler(exp, NewRegistries(), func() error { return nil }, Options{TelemetryPath: "/metrics"})
	require.NoError(t, err)
	rec, _ = getLanding(t, h, "/nothing-here")
	assert.Equal(t, http.StatusNotFound, rec.Code)
	rec, body = getLanding(t, h, "/")
	assert.Equal(t, http.StatusOK, rec.Code)
	assert.Len(t, statusRows(body), 3)
}

func TestLandingPageEscapesErrors(t *testing.T) {
	p := startPlatform(t)
	exp := newTestExporter(t, p)
	page := http.HandlerFunc(func(w http.ResponseWriter, _ *http.Request) {
		landingPage(w, Options{TelemetryPath: "/custom-metrics"}, exp.Statuses())
	})
	// A gateway's HTML page ends up in the error message.
	p.Faults.SetFault(p.ID("sales-avatar"), simulator.EndpointConcurrency, platformtest.Fault{Kind: platformtest.FaultHTML502})
	scrapeOnce(t, exp)

	_, body := getLanding(t, page, "/")
	assert.Contains(t, body, `<a href="/custom-metrics">`)
	rows := statusRows(body)
	row := rows["sales-avatar"]
	require.Len(t, row, 8)
	assert.Equal(t, "down", row[1].text)
	assert.Contains(t, row[1].attrs, "down")
	assert.Equal(t, "–", row[2].text, "no concurrency figures")
	assert.Equal(t, "8", row[3].text, "the session list still answered")
	assert.Contains(t, row[6].text, "502", "the status of the failed call")
	assert.NotContains(t, body, "<title>502", "no markup from the platform")
	assert.Equal(t, "up", rows["support-desk"][1].text)

	// Whatever a status holds is escaped.
	rec := httptest.NewRecorder()
	landingPage(rec, Options{TelemetryPath: "/custom-metrics"},
		[]collector.Status{{Name: `<b>x</b>`, AppID: `"><script>`, LastScrape: time.Now(), LastError: "<script>alert(1)</script>"}})
	body = rec.Body.String()
	assert.NotContains(t, body, "<script", "works without JavaScript, and none can be injected")
	assert.NotContains(t, body, "<b>x")
	assert.Contains(t, body, "&lt;script&gt;alert(1)&lt;/script&gt;")
}
