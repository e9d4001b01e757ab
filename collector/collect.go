package collector

import (
	"context"
	"slices"
	"sync/atomic"
	"time"

	"github.com/prometheus/client_golang/prometheus"
)

// Scrape is the collector of one scrape: each app's outcome is reported on
// its own, so that one failing app never touches another's series.
type Scrape struct {
	e       *Exporter
	ctx     context.Context
	apps    []*appState // the apps and settings in force when its request arrived
	set     settings
	arrived time.Time             // when its request arrived
	got     map[*appState]*result // what Fetch found
	fetched bool                  // Fetch has run: Collect sends got
}

// Apps is the number of apps the scrape reports.
func (s *Scrape) Apps() int { return len(s.apps) }

// Describe implements prometheus.Collector.
func (s *Scrape) Describe(ch chan<- *prometheus.Desc) {
	for _, d := range descs {
		ch <- d
	}
}

// Collect implements prometheus.Collector. It fetches the apps, as many at once as api.max_concurrency, and
// sends each app's series as soon as its result is there (with ch nil, it keeps the results for Fetch).
func (s *Scrape) Collect(ch chan<- prometheus.Metric) {
	apps, set := s.apps, s.set
	results, out := make([]*result, len(apps)), make(chan int64, len(apps)) // the workers never wait for Collect
	var next atomic.Int64
	for range min(max(set.api.MaxConcurrency, 1), len(apps)) {
		go func() {
			for i := next.Add(1) - 1; i < int64(len(apps)); i = next.Add(1) - 1 {
				results[i] = s.fetch(apps[i], set)
				out <- i
			}
		}()
	}
	for range apps {
		i := <-out
		if results[i] == nil { // not fetched in time: down for this request only
			results[i] = &result{duration: time.Since(s.arrived)}
		}
		if ch == nil {
			s.got[apps[i]] = results[i]
			continue
		}
		for _, m := range apps[i].metrics(results[i], s.e.opts.Now()) {
			ch <- m
		}
	}
}

// Fetch fetches the apps until they land or the scrape's deadline, sending nothing: Collect then sends what it
// found and waits for nothing, so that a scrape can wait for its turn to be gathered while its apps are fetched.
func (s *Scrape) Fetch() {
	s.got = map[*appState]*result{}
	s.Collect(nil)
	s.fetched = true
}

// metrics returns the series of the app for the result r of a scrape. Values the platform did not give in this fetch
// are left out rather than reported as 0.
func (st *appState) metrics(r *result, now time.Time) []prometheus.Metric {
	var out []prometheus.Metric
	add := func(d *prometheus.Desc, t prometheus.ValueType, v float64, labels ...string) {
		out = append(out, prometheus.MustNewConstMetric(d, t, v, append([]string{st.name}, labels...)...))
	}
	gauge := func(d *prometheus.Desc, v float64, labels ...string) { add(d, prometheus.GaugeValue, v, labels...) }
	up := 0.0
	if r.perConv != nil && r.concErr == nil {
		up = 1
	}
	gauge(upDesc, up)
	gauge(scrapeDurationDesc, r.duration.Seconds())
	if r.conc != nil {
		gauge(limitDesc, float64(r.conc.TotalConcurrentNumber))
		gauge(inUseDesc, float64(r.conc.UserConcurrentNumber))
	}
	if r.perConv != nil {
		gauge(activeSessionsDesc, float64(r.sessions))
		gauge(sessionsWithoutConversationDesc, float64(r.noConv))
	}

	st.mu.Lock()
	defer st.mu.Unlock()
	if until := st.c.RetryAfter(); until.After(now) {
		gauge(rateLimitedUntilDesc, float64(until.UnixMilli())/1e3)
	}
	gauge(appInfoDesc, 1, st.appID, st.corpID)
	var errs uint64
	for reason, n := range st.errs {
		add(scrapeErrorsDesc, prometheus.CounterValue, float64(n), reason)
		errs += n
	}
	if !st.shown { // at 0 in the app's first scrape, so that increase() sees its first failures
		errs, st.shown = 0, true
	}
	add(appErrorsDesc, prometheus.CounterValue, float64(errs))
	for _, cv := range st.conversations {
		if !cv.refreshed.IsZero() { // known
			gauge(conversationMaxDesc, float64(cv.maxConv), cv.id)
			gauge(conversationInfoDesc, 1, cv.id, cv.info[0], cv.info[1], cv.info[2], cv.info[3])
			gauge(conversationRefreshDesc, float64(cv.refreshed.UnixMilli())/1e3, cv.id)
		}
		// A count is only known when every entry names its conversation: an entry without one may belong to any.
		if i := slices.Index(r.convIDs, cv.id); i >= 0 && r.noConv == 0 {
			gauge(conversationSessionsDesc, float64(r.perConv[i]), cv.id)
		}
	}
	if l := st.life; l != nil {
		add(sessionsStartedDesc, prometheus.CounterValue, float64(l.started))
		add(sessionsEndedDesc, prometheus.CounterValue, float64(l.ended))
		add(sessionSecondsDesc, prometheus.CounterValue, l.seconds)
		if l.baseline && r.perConv != nil { // not while the list fails: its sessions may have ended
			gauge(oldestSessionAgeDesc, l.oldestAge(now))
		}
		add(sessionsUntrackedDesc, prometheus.CounterValue, float64(l.untracked))
		buckets := make(map[float64]uint64, len(l.buckets))
		for i, le := range sessionDurationBuckets {
			buckets[le] = l.buckets[i]
		}
		out = append(out, prometheus.MustNewConstHistogram(sessionDurationDesc, l.ended, l.sum, buckets, st.name))
	}
	return out
}

// The metrics of a scrape, one descriptor each; each HELP text names the platform field the value comes from
// (docs/platform-api.md). A healthy app has 8 series; a configured conversation adds at most 4, the lifecycle 16.
var (
	upDesc                          = appDesc("duix_up", "1 when both getconcurrentNumber and getconcurrentList answered successfully for the app in this scrape, else 0.")
	limitDesc                       = appDesc("duix_app_concurrency_limit", "Concurrency allowance of the app: totalConcurrentNumber of getconcurrentNumber.")
	inUseDesc                       = appDesc("duix_app_concurrency_in_use", "Concurrency in use by the app: userConcurrentNumber of getconcurrentNumber.")
	activeSessionsDesc              = appDesc("duix_app_active_sessions", "Active (in-call) sessions of the app: the number of entries in the data of getconcurrentList.")
	appInfoDesc                     = appDesc("duix_app_info", "Facts about the app, value 1: app_id from the configuration, corp_id from cropId of getconcurrentNumber (last value seen).", "app_id", "corp_id")
	scrapeDurationDesc              = appDesc("duix_scrape_duration_seconds", "Wall time of the app's calls to the platform (getconcurrentNumber and getconcurrentList) whose result this scrape reports.")
	scrapeErrorsDesc                = appDesc("duix_scrape_errors_total", "Failed calls to the platform for the app (any endpoint), by reason: timeout, http, api, decode, auth, network, rate_limited. A series appears with the first failure of its reason.", "reason")
	appErrorsDesc                   = appDesc("duix_app_errors_total", "Failed calls to the platform for the app (any endpoint), every reason together; present at 0 from the app's first scrape.")
	rateLimitedUntilDesc            = appDesc("duix_app_rate_limited_until_timestamp_seconds", "Until when the platform asked (HTTP 429 Retry-After) not to be called for the app; only present while it applies.")
	conversationMaxDesc             = appDesc("duix_conversation_max_concurrent", "Maximum concurrent conversations of a configured conversation: maxConversation of getConversationById (last good value).", "conversation_id")
	conversationInfoDesc            = appDesc("duix_conversation_info", "Facts about a configured conversation, value 1: conversationName, language, detailDto.modelName and detailDto.ttsName of getConversationById.", "conversation_id", "language", "model_name", "name", "tts_name")
	conversationRefreshDesc         = appDesc("duix_conversation_last_refresh_timestamp_seconds", "When the details of a configured conversation were last fetched successfully from getConversationById.", "conversation_id")
	conversationSessionsDesc        = appDesc("duix_conversation_active_sessions", "Active sessions of a configured conversation: entries of getconcurrentList whose record names it (conversationId). Absent while any entry of the app names no conversation: the count is then unknown.", "conversation_id")
	sessionsWithoutConversationDesc = appDesc("duix_app_sessions_without_conversation", "Entries of getconcurrentList whose record names no conversation (no conversationId). While it is above 0 the per-conversation counts are unknown and left out.")
	sessionsStartedDesc             = appDesc("duix_app_sessions_started_total", "Sessions of the app seen for the first time in getconcurrentList, as observed at fetch time (the first list after a start or a reload that adds the app is the baseline). Sessions shorter than the time between two fetches are not seen.")
	sessionsEndedDesc               = appDesc("duix_app_sessions_ended_total", "Sessions of the app that were listed by getconcurrentList and no longer are, as observed at fetch time.")
	oldestSessionAgeDesc            = appDesc("duix_app_oldest_session_age_seconds", "Age of the app's oldest active session (from startTime of its getconcurrentList record, else from when it was first listed), 0 when none; absent until a list was fetched and while it cannot be.")
	sessionSecondsDesc              = appDesc("duix_app_session_seconds_total", "Session-seconds used by the app: the number of entries of getconcurrentList integrated over time between successful fetches (trapezoid rule).")
	sessionsUntrackedDesc           = appDesc("duix_app_sessions_untracked_total", "Entries of getconcurrentList left out of the lifecycle: without a session ID, with one over 256 bytes, or over sessions.max_tracked.")
	sessionDurationDesc             = appDesc("duix_app_session_duration_seconds", "Durations of the app's ended sessions, as observed at fetch time: from the record's start time (startTime of getconcurrentList) when it has one, else from when the session was first listed, to when it was last listed.")
)

// descs lists every descriptor of a scrape, for Describe.
var descs []*prometheus.Desc

func appDesc(name, help string, labels ...string) *prometheus.Desc {
	d := prometheus.NewDesc(name, help, append([]string{"app"}, labels...), nil)
	descs = append(descs, d)
	return d
}

// sessionDurationBuckets: calls last tens of seconds to hours.
var sessionDurationBuckets = []float64{30, 60, 120, 300, 600, 1800, 3600, 7200}
