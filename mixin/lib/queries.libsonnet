// Recording-rule names and the PromQL that rules, alerts and dashboards
// share, as functions of the mixin's _config (c) and a selector (sel: the
// matchers to put between braces).
//
// Recording rules are named level:metric:operations
// (https://prometheus.io/docs/practices/rules/): level is the labels kept
// (besides the target's), metric the metric name (a ratio joins the two
// with _per_), operations what was applied, newest first.
local u = import 'utils.libsonnet';

function(c) {
  record:: {
    // duix_app_concurrency_in_use / duix_app_concurrency_limit, per app.
    utilization: 'app:duix_app_concurrency_in_use_per_limit:ratio',
    // sum of duix_conversation_max_concurrent over the app's conversations.
    conversationMaxSum: 'app:duix_conversation_max_concurrent:sum',
    // duix_conversation_active_sessions / duix_conversation_max_concurrent.
    conversationUtilization: 'app_conversation_id:duix_conversation_active_sessions_per_max_concurrent:ratio',
    // duix_app_concurrency_in_use / duix_conversation_max_concurrent: an
    // upper bound, used for apps whose session records name no
    // conversation.
    conversationUtilizationEstimate: 'app_conversation_id:duix_app_concurrency_in_use_per_conversation_max_concurrent:ratio',
    // increase(duix_app_session_seconds_total[1d]).
    sessionSeconds1d: 'app:duix_app_session_seconds:increase1d',
    // max_over_time(duix_app_concurrency_in_use[1d]).
    inUseMax1d: 'app:duix_app_concurrency_in_use:max_over_time1d',
    // max_over_time(duix_app_concurrency_limit[1d]).
    limitMax1d: 'app:duix_app_concurrency_limit:max_over_time1d',
    // The two above divided: the day's peak against the allowance.
    peakUtilization1d: 'app:duix_app_concurrency_in_use_per_limit:ratio_max_over_time1d',
  },

  // The limit rule of nearLimitRatio and nearLimitMinFree, given the
  // utilization ratio series, the limit and the number in use: the ratio
  // where at least nearLimitRatio is used, or where something is used and
  // at most nearLimitMinFree slots are free.
  local nearLimit(ratio, limit, used, sel) = |||
    %(ratio)s{%(sel)s} >= %(r)s
    or
    (
        %(ratio)s{%(sel)s} > 0
      and
        %(limit)s{%(sel)s} - %(used)s{%(sel)s} <= %(free)s
    )
  ||| % { ratio: ratio, limit: limit, used: used, sel: sel, r: u.num(c.nearLimitRatio), free: c.nearLimitMinFree },

  // Apps near their concurrency allowance (value: the ratio in use).
  concurrencyNearLimit(sel)::
    nearLimit(self.record.utilization, 'duix_app_concurrency_limit', 'duix_app_concurrency_in_use', sel),

  // Conversations near their maxConversation (value: the ratio in use),
  // with a basis label: "sessions" where the app's session records name
  // their conversation (its own count), "app_in_use" where they do not
  // (the count of each conversation is unknown; the app's concurrency in
  // use is compared with each maxConversation: exact when the app has one
  // conversation, an upper bound when it has several, so that the one with
  // the smallest maxConversation warns first).
  conversationNearLimit(sel)::
    local rec = self.record;
    |||
      label_replace(
        %(exact)s,
        "basis", "sessions", "", ""
      )
      or
      label_replace(
        (
            %(estimate)s{%(sel)s} >= %(r)s
          or
            (
                %(estimate)s{%(sel)s} > 0
              and
                (duix_conversation_max_concurrent{%(sel)s} - ignoring (conversation_id) group_left () duix_app_concurrency_in_use{%(sel)s}) <= %(free)s
            )
        )
        and ignoring (conversation_id)
        duix_app_sessions_without_conversation{%(sel)s} > 0,
        "basis", "app_in_use", "", ""
      )
    ||| % {
      exact: nearLimit(rec.conversationUtilization, 'duix_conversation_max_concurrent', 'duix_conversation_active_sessions', sel),
      estimate: rec.conversationUtilizationEstimate,
      sel: sel,
      r: u.num(c.nearLimitRatio),
      free: c.nearLimitMinFree,
    },

  // The number in use from which an app is near its allowance.
  nearLimitLevel(sel)::
    '(duix_app_concurrency_limit{%(sel)s} * %(r)s <= duix_app_concurrency_limit{%(sel)s} - %(free)s) or (duix_app_concurrency_limit{%(sel)s} - %(free)s)'
    % { sel: sel, r: u.num(c.nearLimitRatio), free: c.nearLimitMinFree },
}
