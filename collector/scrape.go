package collector

import (
	"context"
	"sort"
	"sync"

	"github.com/prometheus/client_golang/prometheus"

	"github.com/duix-exporter/duix_exporter/client"
)

// scrape is the collector of one scrape.
type scrape struct {
	e     *Exporter
	ctx   context.Context
	names []string
}

// Describe implements prometheus.Collector.
func (s *scrape) Describe(ch chan<- *prometheus.Desc) {
	for _, d := range allDescs {
		ch <- d
	}
}

// Collect implements prometheus.Collector: it fetches every app at once and
// reports each app's outcome on its own, so that one failing app never
// fails the scrape or touches another app's series.
func (s *scrape) Collect(ch chan<- prometheus.Metric) {
	apps, api := s.e.snapshot(s.names)
	results := make([]*result, len(apps))
	var wg sync.WaitGroup
	for i, st := range apps {
		wg.Add(1)
		go func() {
			defer wg.Done()
			results[i] = s.e.fetch(s.ctx, st, api)
		}()
	}
	wg.Wait()
	for i, st := range apps {
		emit(ch, st, results[i], st.view())
	}
}

func gauge(ch chan<- prometheus.Metric, d *prometheus.Desc, v float64, labels ...string) {
	ch <- prometheus.MustNewConstMetric(d, prometheus.GaugeValue, v, labels...)
}

func emit(ch chan<- prometheus.Metric, st *appState, r *result, v view) {
	app := st.name
	up := 0.0
	if r.up() {
		up = 1
	}
	gauge(ch, upDesc, up, app)
	gauge(ch, scrapeDurationDesc, r.duration.Seconds(), app)
	gauge(ch, appInfoDesc, 1, app, st.appID, v.corpID)
	if r.concErr == nil && r.conc != nil {
		gauge(ch, limitDesc, float64(r.conc.TotalConcurrentNumber), app)
		gauge(ch, inUseDesc, float64(r.conc.UserConcurrentNumber), app)
	}
	if r.sessErr == nil {
		gauge(ch, activeSessionsDesc, float64(r.sessions), app)
	}
	for _, ec := range v.errors {
		ch <- prometheus.MustNewConstMetric(scrapeErrorsDesc, prometheus.CounterValue, float64(ec.n), app, ec.endpoint, ec.reason)
	}
	if c := st.client(); c != nil {
		if until := c.RetryAfter(); !until.IsZero() {
			gauge(ch, rateLimitedUntilDesc, float64(until.UnixNano())/1e9, app)
		}
	}

	configured := make(map[string]bool, len(v.conversations))
	for _, cv := range v.conversations {
		configured[cv.id] = true
		if cv.details != nil {
			d := cv.details
			gauge(ch, conversationMaxDesc, float64(d.MaxConversation), app, cv.id)
			gauge(ch, conversationInfoDesc, 1, app, cv.id, d.ConversationName, d.Language, d.DetailDto.ModelName, d.DetailDto.TtsName)
			gauge(ch, conversationRefreshDesc, float64(cv.refreshed.UnixNano())/1e9, app, cv.id)
		}
	}
	if r.sessErr != nil {
		return
	}
	ids := make([]string, 0, len(configured)+len(r.perConv))
	for id := range configured {
		ids = append(ids, id)
	}
	for id := range r.perConv {
		if !configured[id] {
			ids = append(ids, id)
		}
	}
	sort.Strings(ids)
	for _, id := range ids {
		gauge(ch, conversationSessionsDesc, float64(r.perConv[id]), app, id)
	}
}

var _ = client.Reason
