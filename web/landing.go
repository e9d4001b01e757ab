package web

import (
	"bytes"
	_ "embed"
	"errors"
	"fmt"
	"html/template"
	"net/http"
	"net/url"
	"strconv"
	"time"

	"github.com/prometheus/common/version"
	toolkit "github.com/prometheus/exporter-toolkit/web"

	"github.com/duix-exporter/duix_exporter/collector"
)

// readmeURL is where the landing page sends people for documentation.
const readmeURL = "https://github.com/duix-exporter/duix_exporter#readme"

// statusMarker stands in the toolkit's page for the status table, which
// is rendered on every request.
const statusMarker = "<!--duix-exporter-app-status-->"

var (
	//go:embed landing_status.html
	landingStatusHTML string
	statusTemplate    = template.Must(template.New("status").Parse(landingStatusHTML))
)

const landingCSS = `
#apps table { border-collapse: collapse; margin: 0.5rem 0 1rem; }
#apps th, #apps td { border: 1px solid #ccc; padding: 0.35rem 0.6rem; text-align: left; vertical-align: top; }
#apps th { background: #f3f3f3; }
#apps td.num { text-align: right; font-variant-numeric: tabular-nums; white-space: nowrap; }
#apps td.app, #apps td.probe, #apps td.up, #apps td.down { white-space: nowrap; }
#apps .up { color: #fff; background: #2e7d32; font-weight: bold; }
#apps .down { color: #fff; background: #c62828; font-weight: bold; }
#apps .full { color: #b71c1c; font-weight: bold; }
#apps .pending { color: #666; font-style: italic; }
#apps .error { color: #b71c1c; max-width: 28rem; overflow-wrap: anywhere; font-family: monospace; }
#apps small { color: #666; }
`

// landingPage is exporter-toolkit's landing page with a table of the
// configured apps' last results, rendered for each request. It shows what
// the last scrape found and calls nothing itself.
type landingPage struct {
	head, tail    []byte // the toolkit's page before and after the table
	telemetryPath string
	statuses      func() []collector.Status
	now           func() time.Time
}

// newLandingPage builds the landing page of the exporter name for the apps
// whose statuses are given.
func newLandingPage(name, telemetryPath string, statuses func() []collector.Status) (*landingPage, error) {
	page, err := toolkit.NewLandingPage(toolkit.LandingConfig{
		Name:        name,
		Description: "Prometheus exporter for apps on the Duix digital-human platform",
		Version:     version.Info(),
		Links: []toolkit.LandingLinks{
			{Address: telemetryPath, Text: "Metrics", Description: "every configured app's metrics"},
			{Address: "/-/healthy", Text: "Health", Description: "liveness"},
			{Address: "/-/ready", Text: "Readiness", Description: "readiness"},
		},
		ExtraHTML: statusMarker,
		ExtraCSS:  landingCSS,
		Profiling: "false", // no pprof handlers are served
	})
	if err != nil {
		return nil, err
	}
	var rendered pageBuffer
	page.ServeHTTP(&rendered, &http.Request{Method: http.MethodGet, URL: &url.URL{Path: "/"}})
	head, tail, found := bytes.Cut(rendered.body.Bytes(), []byte(statusMarker))
	if !found {
		return nil, errors.New("landing page: the toolkit's page has no place for the status table")
	}
	return &landingPage{head: head, tail: tail, telemetryPath: telemetryPath, statuses: statuses, now: time.Now}, nil
}

// statusRow is one app of the table, ready to print.
type statusRow struct {
	Name, AppID               string
	Scraped, Up, Full         bool
	Usage, Sessions           string
	LastScrape, Ago, Duration string
	Error                     string
}

type statusView struct {
	Apps          []statusRow
	TelemetryPath string
	ReadmeURL     string
	Now           string
}

func (p *landingPage) view() statusView {
	now := p.now()
	v := statusView{TelemetryPath: p.telemetryPath, ReadmeURL: readmeURL, Now: now.UTC().Format(time.DateTime) + " UTC"}
	for _, s := range p.statuses() {
		row := statusRow{Name: s.Name, AppID: s.AppID, Usage: "–", Sessions: "–"}
		if !s.LastScrape.IsZero() {
			row.Scraped, row.Up, row.Error = true, s.Up, s.LastError
			row.LastScrape = s.LastScrape.UTC().Format(time.DateTime) + " UTC"
			row.Ago = now.Sub(s.LastScrape).Truncate(time.Second).String() + " ago"
			row.Duration = formatLatency(s.Duration.Seconds())
			if s.HasConcurrency {
				row.Usage = fmt.Sprintf("%d / %d", s.InUse, s.Limit)
				row.Full = s.Limit > 0 && s.InUse >= s.Limit
			}
			if s.HasSessions {
				row.Sessions = fmt.Sprint(s.ActiveSessions)
			}
		}
		v.Apps = append(v.Apps, row)
	}
	return v
}

// ServeHTTP serves the page at / only.
func (p *landingPage) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	if r.URL.Path != "/" {
		http.NotFound(w, r)
		return
	}
	var table bytes.Buffer
	if err := statusTemplate.Execute(&table, p.view()); err != nil {
		http.Error(w, "rendering the landing page: "+err.Error(), http.StatusInternalServerError)
		return
	}
	h := w.Header()
	h.Set("Content-Type", "text/html; charset=UTF-8")
	h.Set("Cache-Control", "no-store")
	for _, b := range [][]byte{p.head, table.Bytes(), p.tail} {
		if _, err := w.Write(b); err != nil { // #nosec G705 -- the toolkit's page and an html/template rendering, which escapes every value
			return
		}
	}
}

// pageBuffer captures the toolkit's rendered page.
type pageBuffer struct {
	header http.Header
	body   bytes.Buffer
}

func (b *pageBuffer) Header() http.Header {
	if b.header == nil {
		b.header = http.Header{}
	}
	return b.header
}
func (b *pageBuffer) Write(p []byte) (int, error) { return b.body.Write(p) }
func (b *pageBuffer) WriteHeader(int)             {}

// formatLatency prints a duration in milliseconds (seconds from 10 s on).
func formatLatency(secs float64) string {
	if secs >= 10 {
		return strconv.FormatFloat(secs, 'f', 1, 64) + "s"
	}
	return strconv.FormatFloat(secs*1000, 'f', 1, 64) + "ms"
}
