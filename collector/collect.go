package collector

import (
	"context"
	"time"

	"github.com/prometheus/client_golang/prometheus"
)

// scrape is the collector of one scrape: it fetches every app at once and
// reports each app's outcome on its own, so that one failing app never
// fails the scrape or touches another app's series.
type scrape struct {
	e       *Exporter
	ctx     context.Context
	names   []string
	arrived time.Time // when its request arrived
	id      uint64
}

// Describe implements prometheus.Collector.
func (s *scrape) Describe(ch chan<- *prometheus.Desc) {
	for _, d := range descs {
		ch <- d
	}
}

// Collect implements prometheus.Collector.
func (s *scrape) Collect(ch chan<- prometheus.Metric) {
	apps, set := s.e.snapshot(s.names)
	s.e.fetchAll(s.ctx, s, apps, set, func(st *appState, r *result) {
		if r == nil { // not fetched in time: down for this request only
			r = &result{duration: time.Since(s.arrived)}
		}
		for _, m := range st.metrics(r, s.e.now()) {
			ch <- m
		}
	})
}

// metrics returns the series of the app for the result r of a scrape (nil
// when the scrape had none in time). Values the platform did not give in
// this fetch are left out rather than reported as 0.
func (st *appState) metrics(r *result, now time.Time) []prometheus.Metric {
	var out []prometheus.Metric
	add := func(d *prometheus.Desc, t prometheus.ValueType, v float64, labels ...string) {
		out = append(out, prometheus.MustNewConstMetric(d, t, v, append([]string{st.name}, labels...)...))
	}
	gauge := func(d *prometheus.Desc, v float64, labels ...string) { add(d, prometheus.GaugeValue, v, labels...) }
	counter := func(d *prometheus.Desc, v float64) { add(d, prometheus.CounterValue, v) }
	known := r.perConv != nil // the list was fetched
	up := 0.0
	if known && r.concErr == nil {
		up = 1
	}
	gauge(upDesc, up)
	gauge(scrapeDurationDesc, r.duration.Seconds())
	if r.conc != nil {
		gauge(limitDesc, float64(r.conc.TotalConcurrentNumber))
		gauge(inUseDesc, float64(r.conc.UserConcurrentNumber))
	}
	if known {
		gauge(activeSessionsDesc, float64(r.sessions))
		gauge(sessionsWithoutConversationDesc, float64(r.noConv))
	}
	if until := st.client().RetryAfter(); !until.IsZero() {
		gauge(rateLimitedUntilDesc, float64(until.UnixMilli())/1e3)
	}

	st.mu.Lock()
	defer st.mu.Unlock()
	gauge(appInfoDesc, 1, st.appID, st.corpID)
	var errs uint64
	for reason, n := range st.errs {
		add(scrapeErrorsDesc, prometheus.CounterValue, float64(n), reason)
		errs += n
	}
	counter(appErrorsDesc, float64(errs))
	for _, cv := range st.conversations {
		if cv.known {
			gauge(conversationMaxDesc, float64(cv.maxConv), cv.id)
			gauge(conversationInfoDesc, 1, cv.id, cv.info[0], cv.info[1], cv.info[2], cv.info[3])
			gauge(conversationRefreshDesc, float64(cv.refreshed.UnixMilli())/1e3, cv.id)
		}
		// A count is only known when every entry names its conversation:
		// an entry without one may belong to any.
		if n, ok := r.perConv[cv.id]; ok && r.noConv == 0 {
			gauge(conversationSessionsDesc, float64(n), cv.id)
		}
	}
	if l := st.life; l != nil {
		counter(sessionsStartedDesc, float64(l.started))
		counter(sessionsEndedDesc, float64(l.ended))
		counter(sessionSecondsDesc, l.seconds)
		if l.baseline {
			gauge(oldestSessionAgeDesc, l.oldestAge(now))
		}
		if l.untracked > 0 {
			counter(sessionsUntrackedDesc, float64(l.untracked))
		}
		out = append(out, prometheus.MustNewConstHistogram(sessionDurationDesc, l.count, l.durationSum, l.cumulativeBuckets(), st.name))
	}
	return out
}
