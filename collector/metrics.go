package collector

import "github.com/prometheus/client_golang/prometheus"

// The metrics of a scrape, one descriptor each, declared once; their values
// are const metrics made at collect time. Each HELP text names the
// platform field the value comes from (see docs/platform-api.md). Series
// per app: duix_up, the two concurrency figures, active sessions, sessions
// without a conversation, info, scrape duration and the errors of every
// reason together (8 for a healthy app); one errors series per reason that
// has occurred; the rate-limit deadline while it applies. Each configured
// conversation adds at most 4.
var (
	upDesc = prometheus.NewDesc("duix_up",
		"1 when both getconcurrentNumber and getconcurrentList answered successfully for the app in this scrape, else 0.",
		[]string{"app"}, nil)
	limitDesc = prometheus.NewDesc("duix_app_concurrency_limit",
		"Concurrency allowance of the app: totalConcurrentNumber of getconcurrentNumber.",
		[]string{"app"}, nil)
	inUseDesc = prometheus.NewDesc("duix_app_concurrency_in_use",
		"Concurrency in use by the app: userConcurrentNumber of getconcurrentNumber.",
		[]string{"app"}, nil)
	activeSessionsDesc = prometheus.NewDesc("duix_app_active_sessions",
		"Active (in-call) sessions of the app: the number of entries in the data of getconcurrentList.",
		[]string{"app"}, nil)
	appInfoDesc = prometheus.NewDesc("duix_app_info",
		"Facts about the app, value 1: app_id from the configuration, corp_id from cropId of getconcurrentNumber (last value seen).",
		[]string{"app", "app_id", "corp_id"}, nil)
	scrapeDurationDesc = prometheus.NewDesc("duix_scrape_duration_seconds",
		"Wall time of the app's calls to the platform (getconcurrentNumber, getconcurrentList and any conversation refresh) whose result this scrape reports.",
		[]string{"app"}, nil)
	scrapeErrorsDesc = prometheus.NewDesc("duix_scrape_errors_total",
		"Failed calls to the platform for the app (any endpoint), by reason: timeout, http, api, decode, auth, network, rate_limited. A series appears with the first failure of its reason.",
		[]string{"app", "reason"}, nil)
	appErrorsDesc = prometheus.NewDesc("duix_app_errors_total",
		"Failed calls to the platform for the app (any endpoint), every reason together; present at 0 from the app's first scrape.",
		[]string{"app"}, nil)
	rateLimitedUntilDesc = prometheus.NewDesc("duix_app_rate_limited_until_timestamp_seconds",
		"Until when the platform asked (HTTP 429 Retry-After) not to be called for the app; only present while it applies.",
		[]string{"app"}, nil)
	conversationMaxDesc = prometheus.NewDesc("duix_conversation_max_concurrent",
		"Maximum concurrent conversations of a configured conversation: maxConversation of getConversationById (last good value).",
		[]string{"app", "conversation_id"}, nil)
	conversationInfoDesc = prometheus.NewDesc("duix_conversation_info",
		"Facts about a configured conversation, value 1: conversationName, language, detailDto.modelName and detailDto.ttsName of getConversationById.",
		[]string{"app", "conversation_id", "language", "model_name", "name", "tts_name"}, nil)
	conversationRefreshDesc = prometheus.NewDesc("duix_conversation_last_refresh_timestamp_seconds",
		"When the details of a configured conversation were last fetched successfully from getConversationById.",
		[]string{"app", "conversation_id"}, nil)
	conversationSessionsDesc = prometheus.NewDesc("duix_conversation_active_sessions",
		"Active sessions of a configured conversation: entries of getconcurrentList whose record names it (conversationId). Absent while any entry of the app names no conversation: the count is then unknown.",
		[]string{"app", "conversation_id"}, nil)
	sessionsWithoutConversationDesc = prometheus.NewDesc("duix_app_sessions_without_conversation",
		"Entries of getconcurrentList whose record names no conversation (no conversationId). While it is above 0 the per-conversation counts are unknown and left out.",
		[]string{"app"}, nil)
)

// The session lifecycle, as observed at fetch time (see lifecycle.go): 4
// series per app, plus duix_app_session_duration_seconds (11 series: 8
// buckets, +Inf, sum and count), when sessions.lifecycle is on.
var (
	sessionsStartedDesc = prometheus.NewDesc("duix_app_sessions_started_total",
		"Sessions of the app seen for the first time in getconcurrentList, as observed at fetch time (the first list after a start or a reload that adds the app is the baseline). Sessions shorter than the time between two fetches are not seen.",
		[]string{"app"}, nil)
	sessionsEndedDesc = prometheus.NewDesc("duix_app_sessions_ended_total",
		"Sessions of the app that were listed by getconcurrentList and no longer are, as observed at fetch time.",
		[]string{"app"}, nil)
	oldestSessionAgeDesc = prometheus.NewDesc("duix_app_oldest_session_age_seconds",
		"Age of the app's oldest active session (from startTime of its getconcurrentList record, else from when it was first listed), 0 when none; absent until a list was fetched.",
		[]string{"app"}, nil)
	sessionSecondsDesc = prometheus.NewDesc("duix_app_session_seconds_total",
		"Session-seconds used by the app: the number of entries of getconcurrentList integrated over time between successful fetches (trapezoid rule).",
		[]string{"app"}, nil)
	sessionsUntrackedDesc = prometheus.NewDesc("duix_app_sessions_untracked_total",
		"Entries of getconcurrentList left out of the lifecycle: without a session ID, or over sessions.max_tracked. Present once one was.",
		[]string{"app"}, nil)
	sessionDurationDesc = prometheus.NewDesc("duix_app_session_duration_seconds",
		"Durations of the app's ended sessions, as observed at fetch time: from the record's start time (startTime of getconcurrentList) when it has one, else from when the session was first listed, to when it was last listed.",
		[]string{"app"}, nil)
)

// sessionDurationBuckets are the buckets of duix_app_session_duration_seconds:
// calls last tens of seconds to hours.
var sessionDurationBuckets = []float64{30, 60, 120, 300, 600, 1800, 3600, 7200}

// descs lists every descriptor of a scrape, for Describe.
var descs = []*prometheus.Desc{
	upDesc, limitDesc, inUseDesc, activeSessionsDesc, appInfoDesc, scrapeDurationDesc, scrapeErrorsDesc, appErrorsDesc,
	rateLimitedUntilDesc, conversationMaxDesc, conversationInfoDesc, conversationRefreshDesc, conversationSessionsDesc,
	sessionsWithoutConversationDesc, sessionsStartedDesc, sessionsEndedDesc, oldestSessionAgeDesc, sessionSecondsDesc, sessionsUntrackedDesc,
	sessionDurationDesc,
}
