package collector

import (
	"sort"

	"github.com/prometheus/client_golang/prometheus"
	dto "github.com/prometheus/client_model/go"
)

// family is one metric the scrape exports, declared once: its descriptor
// for the Collector interface and the name, help and type of the metric
// family built for each scrape.
type family struct {
	name, help string
	typ        dto.MetricType
	desc       *prometheus.Desc
}

func newFamily(name, help string, typ dto.MetricType, labels ...string) *family {
	return &family{name: name, help: help, typ: typ, desc: prometheus.NewDesc(name, help, labels, nil)}
}

var (
	gaugeType   = dto.MetricType_GAUGE
	counterType = dto.MetricType_COUNTER
)

// Every metric the scrape collector exports. The HELP texts name the API
// field each value comes from. Label names are listed in sorted order, the
// order in which the label pairs of each sample are built.
var (
	upFamily = newFamily("duix_up",
		"1 when both getconcurrentNumber and getconcurrentList answered successfully for the app in this scrape, else 0.",
		gaugeType, "app")
	limitFamily = newFamily("duix_app_concurrency_limit",
		"Concurrency allowance of the app: totalConcurrentNumber of getconcurrentNumber.",
		gaugeType, "app")
	inUseFamily = newFamily("duix_app_concurrency_in_use",
		"Concurrency in use by the app: userConcurrentNumber of getconcurrentNumber.",
		gaugeType, "app")
	activeSessionsFamily = newFamily("duix_app_active_sessions",
		"Active (in-call) sessions of the app: the number of entries in the data of getconcurrentList.",
		gaugeType, "app")
	appInfoFamily = newFamily("duix_app_info",
		"Facts about the app, value 1: app_id from the configuration, corp_id from cropId of getconcurrentNumber (last value seen).",
		gaugeType, "app", "app_id", "corp_id")
	scrapeDurationFamily = newFamily("duix_scrape_duration_seconds",
		"Wall time of the calls made to the platform for the app (getconcurrentNumber, getconcurrentList and any conversation refresh, made concurrently).",
		gaugeType, "app")
	scrapeErrorsFamily = newFamily("duix_scrape_errors_total",
		"Failed calls to the platform, by app, endpoint and reason (timeout, http, api, decode, auth, network, rate_limited).",
		counterType, "app", "endpoint", "reason")
	conversationMaxFamily = newFamily("duix_conversation_max_concurrent",
		"Maximum concurrent conversations of a configured conversation: maxConversation of getConversationById (last good value).",
		gaugeType, "app", "conversation_id")
	conversationInfoFamily = newFamily("duix_conversation_info",
		"Facts about a configured conversation, value 1: conversationName, language, detailDto.modelName and detailDto.ttsName of getConversationById.",
		gaugeType, "app", "conversation_id", "language", "model_name", "name", "tts_name")
	conversationRefreshFamily = newFamily("duix_conversation_last_refresh_timestamp_seconds",
		"When the details of a configured conversation were last fetched successfully from getConversationById.",
		gaugeType, "app", "conversation_id")
	conversationSessionsFamily = newFamily("duix_conversation_active_sessions",
		"Active sessions per conversation: entries of getconcurrentList whose record names the conversation (conversationId); 0 for configured conversations without any.",
		gaugeType, "app", "conversation_id")
	rateLimitedUntilFamily = newFamily("duix_app_rate_limited_until_timestamp_seconds",
		"Until when the platform asked (HTTP 429 Retry-After) not to be called for the app; only present while it applies.",
		gaugeType, "app")
)

// allFamilies lists the families in name order, the order of an exposition.
var allFamilies = func() []*family {
	fs := []*family{
		upFamily, limitFamily, inUseFamily, activeSessionsFamily, appInfoFamily, scrapeDurationFamily,
		scrapeErrorsFamily, conversationMaxFamily, conversationInfoFamily, conversationRefreshFamily,
		conversationSessionsFamily, rateLimitedUntilFamily,
	}
	sort.Slice(fs, func(i, j int) bool { return fs[i].name < fs[j].name })
	return fs
}()

// Label names, shared by every label pair built.
var (
	labelApp            = "app"
	labelAppID          = "app_id"
	labelCorpID         = "corp_id"
	labelEndpoint       = "endpoint"
	labelReason         = "reason"
	labelConversationID = "conversation_id"
	labelLanguage       = "language"
	labelModelName      = "model_name"
	labelName           = "name"
	labelTTSName        = "tts_name"
)
