package collector

import "github.com/prometheus/client_golang/prometheus"

// Every metric the scrape collector exports, declared once. The HELP texts
// name the API field each value comes from.
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
		"Wall time of the calls made to the platform for the app (getconcurrentNumber, getconcurrentList and any conversation refresh, made concurrently).",
		[]string{"app"}, nil)
	scrapeErrorsDesc = prometheus.NewDesc("duix_scrape_errors_total",
		"Failed calls to the platform, by app, endpoint and reason (timeout, http, api, decode, auth, network, rate_limited).",
		[]string{"app", "endpoint", "reason"}, nil)
	conversationMaxDesc = prometheus.NewDesc("duix_conversation_max_concurrent",
		"Maximum concurrent conversations of a configured conversation: maxConversation of getConversationById (last good value).",
		[]string{"app", "conversation_id"}, nil)
	conversationInfoDesc = prometheus.NewDesc("duix_conversation_info",
		"Facts about a configured conversation, value 1: conversationName, language, detailDto.modelName and detailDto.ttsName of getConversationById.",
		[]string{"app", "conversation_id", "name", "language", "model_name", "tts_name"}, nil)
	conversationRefreshDesc = prometheus.NewDesc("duix_conversation_last_refresh_timestamp_seconds",
		"When the details of a configured conversation were last fetched successfully from getConversationById.",
		[]string{"app", "conversation_id"}, nil)
	conversationSessionsDesc = prometheus.NewDesc("duix_conversation_active_sessions",
		"Active sessions per conversation: entries of getconcurrentList whose record names the conversation (conversationId); 0 for configured conversations without any.",
		[]string{"app", "conversation_id"}, nil)
	rateLimitedUntilDesc = prometheus.NewDesc("duix_app_rate_limited_until_timestamp_seconds",
		"Until when the platform asked (HTTP 429 Retry-After) not to be called for the app; only present while it applies.",
		[]string{"app"}, nil)
)

var allDescs = []*prometheus.Desc{
	upDesc, limitDesc, inUseDesc, activeSessionsDesc, appInfoDesc, scrapeDurationDesc,
	scrapeErrorsDesc, conversationMaxDesc, conversationInfoDesc, conversationRefreshDesc,
	conversationSessionsDesc, rateLimitedUntilDesc,
}
