package web

import (
	"bytes"
	"errors"
	"io"
	"net/http"
	"os"
	"regexp"
	"strings"
	"testing"

	dto "github.com/prometheus/client_model/go"
	"github.com/prometheus/common/expfmt"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// refusedScrape is every answer to a scrape request the exporter cannot serve: its own words, and at most a short
// quoted part of what was sent.
var refusedScrape = regexp.MustCompile(`^(invalid X-Prometheus-Scrape-Timeout-Seconds "(?:[^"\\]|\\.){0,128}": want a number of seconds ` +
	`greater than 0 and at most 3600|scrape timeout too short: at least 100ms after --scrape.timeout-offset|` +
	`the query does not parse \(a bad %-escape or a semicolon\): use /probe\?app=NAME|give exactly one app parameter|` +
	`the app parameter is missing: use /probe\?app=NAME with a name from the configuration|` +
	`unknown app "(?:[^"\\]|\\.){0,256}": not in the configuration)\n$`)

// Whatever a scraper sends in its query, timeout, Accept and Accept-Encoding headers, the exporter answers 200 with
// every app it asked for, in the format and encoding the answer announces, or refuses it in one line of its own words.
func FuzzScrapeRequest(f *testing.F) {
	for _, seed := range [][5]string{
		{"/metrics", "", "", "", "gzip"},
		{"/probe", "app=museum-guide", "10", "application/openmetrics-text;version=1.0.0;escaping=underscores", "identity"},
		{"/probe", "app=museum-guide", "1", `application/vnd.google.protobuf;proto=io.prometheus.client.MetricFamily;encoding=delimited`, "GZIP;q=0.5"},
		{"/probe", "app=museum-guide&app=support-desk", "NaN", "text/plain;version=0.0.4", "gzip;q=0"},
		{"/probe", "app=%zz;x", "0x10", "*/*", "x-gzip, zstd"},
		{"/probe", "app=%1B%5B2J%FF%22", "0.55", "text/plain;version=1.0.0;escaping=allow-utf-8", "br"},
		{"/metrics", "app=nope", "3600", "application/openmetrics-text;version=0.0.1", "*"},
	} {
		f.Add(seed[0] == "/probe", seed[1], seed[2], seed[3], seed[4])
	}
	p := startPlatform(f)
	// A fetch is reused for an hour: the inputs are about the request, not the platform.
	cfg, err := os.ReadFile(p.Config)
	require.NoError(f, err)
	require.NoError(f, os.WriteFile(p.Config, bytes.Replace(cfg, []byte("min_interval: 0s"), []byte("min_interval: 1h"), 1), 0o600))
	s := serve(f, p.Config, Options{})
	tr := &http.Transport{DisableCompression: true} // one pool of connections for every input
	f.Cleanup(tr.CloseIdleConnections)
	f.Fuzz(func(t *testing.T, probe bool, query, timeout, accept, encoding string) {
		path := map[bool]string{false: "/metrics", true: "/probe"}[probe]
		req, err := http.NewRequest(http.MethodGet, s.url+path+"?"+query, nil)
		if err != nil || strings.ContainsAny(query, "#") {
			t.Skip("not a URL a client can send")
		}
		for name, v := range map[string]string{"X-Prometheus-Scrape-Timeout-Seconds": timeout, "Accept": accept, "Accept-Encoding": encoding} {
			if v != "" {
				req.Header.Set(name, v)
			}
		}
		resp, err := tr.RoundTrip(req)
		if err != nil {
			t.Skip("a request the client refuses to send")
		}
		body, err := io.ReadAll(resp.Body)
		resp.Body.Close()
		require.NoError(t, err)
		switch resp.StatusCode {
		case http.StatusBadRequest:
			if string(body) == "400 Bad Request" {
				return // net/http's answer to a request line it cannot parse (a space in the query, say)
			}
			assert.Regexp(t, refusedScrape, string(body))
			assert.Equal(t, "text/plain; charset=utf-8", resp.Header.Get("Content-Type"))
			assert.Equal(t, "nosniff", resp.Header.Get("X-Content-Type-Options"), "an echoed part is never read as HTML")
		case http.StatusOK:
			if resp.Header.Get("Content-Encoding") == "gzip" {
				assert.Contains(t, strings.ToLower(encoding), "gzip", "gzip only when asked for")
				body = gunzip(t, body)
			} else {
				assert.Empty(t, resp.Header.Get("Content-Encoding"))
			}
			want := map[bool]int{false: len(p.Apps), true: 1}[probe] // every app, or the one asked for
			assert.Equal(t, want, upSamples(t, resp.Header, body))
		default:
			t.Errorf("status %d: %.300q", resp.StatusCode, body)
		}
	})
}

// upSamples decodes an answer in the format its header announces and returns the number of duix_up samples.
func upSamples(t *testing.T, h http.Header, body []byte) (up int) {
	t.Helper()
	format := expfmt.ResponseFormat(h)
	if format.FormatType() == expfmt.TypeOpenMetrics {
		require.True(t, bytes.HasSuffix(body, []byte("# EOF\n")), "an OpenMetrics answer ends with # EOF")
		return bytes.Count(body, []byte("\nduix_up{"))
	}
	require.Contains(t, []expfmt.FormatType{expfmt.TypeTextPlain, expfmt.TypeProtoDelim}, format.FormatType(), "%s", format)
	for dec := expfmt.NewDecoder(bytes.NewReader(body), format); ; {
		var mf dto.MetricFamily
		err := dec.Decode(&mf)
		if errors.Is(err, io.EOF) {
			return up
		}
		require.NoError(t, err)
		if mf.GetName() == "duix_up" {
			up += len(mf.GetMetric())
		}
	}
}
