package collector

import (
	"context"
	"slices"
	"strings"
	"time"

	"github.com/prometheus/client_golang/prometheus"
)

// scrape is the collector of one scrape: it fetches every app at once and
// reports each app's outcome on its own, so that one failing app never
// fails the scrape or touches another app's series.
type scrape struct {
	e     *Exporter
	ctx   context.Context
	names []string
}

// Describe implements prometheus.Collector.
func (s *scrape) Describe(ch chan<- *prometheus.Desc) {
	for _, d := range descs {
		ch <- d
	}
	s.e.durations.Describe(ch)
}

// Collect implements prometheus.Collector.
func (s *scrape) Collect(ch chan<- prometheus.Metric) {
	apps, set := s.e.snapshot(s.names)
	for i, r := range s.e.fetchAll(s.ctx, apps, set) {
		collectApp(ch, apps[i], r, s.e.now())
	}
}

// collectApp sends the series of one app. Values the platform did not give
// in this fetch are left out rather than reported as 0.
func collectApp(ch chan<- prometheus.Metric, st *appState, r *result, now time.Time) {
	gauge := func(d *prometheus.Desc, v float64, labels ...string) {
		ch <- prometheus.MustNewConstMetric(d, prometheus.GaugeValue, v, labels...)
	}
	counter := func(d *prometheus.Desc, v float64, labels ...string) {
		ch <- prometheus.MustNewConstMetric(d, prometheus.CounterValue, v, labels...)
	}
	app := st.name
	v := st.view(now)
	gauge(upDesc, boolValue(r.up()), app)
	gauge(appInfoDesc, 1, app, st.appID, labelValue(v.corpID))
	gauge(scrapeDurationDesc, r.duration.Seconds(), app)
	if r.conc != nil {
		gauge(limitDesc, float64(r.conc.TotalConcurrentNumber), app)
		gauge(inUseDesc, float64(r.conc.UserConcurrentNumber), app)
	}
	if r.sessErr == nil {
		gauge(activeSessionsDesc, float64(r.sessions), app)
		gauge(sessionsWithoutConversationDesc, float64(r.noConv), app)
	}
	reasons := make([]string, 0, len(v.errs))
	for reason := range v.errs {
		reasons = append(reasons, reason)
	}
	slices.Sort(reasons)
	for _, reason := range reasons {
		counter(scrapeErrorsDesc, float64(v.errs[reason]), app, reason)
	}
	if l := v.life; l != nil {
		counter(sessionsStartedDesc, float64(l.started), app)
		counter(sessionsEndedDesc, float64(l.ended), app)
		counter(sessionSecondsDesc, l.seconds, app)
		if l.baseline {
			gauge(oldestSessionAgeDesc, l.oldestAge, app)
		}
		if l.untracked > 0 {
			counter(sessionsUntrackedDesc, float64(l.untracked), app)
		}
		ch <- v.durations
	}
	if until := st.client().RetryAfter(); !until.IsZero() {
		gauge(rateLimitedUntilDesc, float64(until.UnixMilli())/1e3, app)
	}
	for _, cv := range v.conversations {
		if cv.known {
			gauge(conversationMaxDesc, float64(cv.maxConv), app, cv.id)
			gauge(conversationInfoDesc, 1, app, cv.id,
				labelValue(cv.language), labelValue(cv.modelName), labelValue(cv.name), labelValue(cv.ttsName))
			gauge(conversationRefreshDesc, float64(cv.refreshed.UnixMilli())/1e3, app, cv.id)
		}
		// A count is only known when every entry names its conversation:
		// an entry without one may belong to any.
		if r.sessErr == nil && r.noConv == 0 {
			gauge(conversationSessionsDesc, float64(r.perConv[cv.id]), app, cv.id)
		}
	}
}

func boolValue(b bool) float64 {
	if b {
		return 1
	}
	return 0
}

// maxLabelValue bounds a label value that comes from the platform.
const maxLabelValue = 256

// labelValue makes a value from the platform a valid, bounded label value.
func labelValue(s string) string {
	s = strings.ToValidUTF8(s, "\uFFFD")
	if len(s) > maxLabelValue {
		s = strings.ToValidUTF8(s[:maxLabelValue], "")
	}
	return s
}
