// Recording rules: shares of the allowances in use, and daily usage.
{
  local c = $._config,
  local q = (import '../lib/queries.libsonnet')(c),
  local r = q.record,

  prometheusRules+:: {
    groups+: [
      {
        name: 'duix.rules',
        rules: [
          {
            // Share of the app's concurrency allowance in use, 0 to 1 (more
            // when the platform lets it overflow). No series while the
            // allowance is 0 or unknown.
            record: r.utilization,
            expr: 'duix_app_concurrency_in_use{%(appSelector)s} / (duix_app_concurrency_limit{%(appSelector)s} > 0)' % c,
          },
          {
            // Sum of maxConversation over the app's configured conversations.
            record: r.conversationMaxSum,
            expr: 'sum without (conversation_id) (duix_conversation_max_concurrent{%(appSelector)s})' % c,
          },
          {
            // Share of a conversation's maxConversation in use, from the
            // active sessions that name it. No series while maxConversation
            // is 0 or unknown.
            record: r.conversationUtilization,
            expr: 'duix_conversation_active_sessions{%(appSelector)s} / (duix_conversation_max_concurrent{%(appSelector)s} > 0)' % c,
          },
          {
            // The app's concurrency in use against each conversation's
            // maxConversation: an upper bound of the conversation's share
            // (exact for an app with one configured conversation). The
            // alert reads it where the app's session records name no
            // conversation, so that the count of each is unknown and not
            // exported. Recorded all along, so that no rule reads a series
            // that comes and goes with the records' content.
            record: r.conversationUtilizationEstimate,
            expr: |||
              duix_app_concurrency_in_use{%(appSelector)s}
              / ignoring (conversation_id) group_right ()
              (duix_conversation_max_concurrent{%(appSelector)s} > 0)
            ||| % c,
          },
        ],
      },
      {
        // Usage and capacity per day, for the bill and the capacity plan.
        name: 'duix.usage',
        interval: c.usageInterval,
        rules: [
          {
            // Session-seconds used by the app over the last day.
            record: r.sessionSeconds1d,
            expr: 'increase(duix_app_session_seconds_total{%(appSelector)s}[1d])' % c,
          },
          {
            // The day's peak of the concurrency in use.
            record: r.inUseMax1d,
            expr: 'max_over_time(duix_app_concurrency_in_use{%(appSelector)s}[1d])' % c,
          },
          {
            // The day's largest allowance.
            record: r.limitMax1d,
            expr: 'max_over_time(duix_app_concurrency_limit{%(appSelector)s}[1d])' % c,
          },
          {
            // The day's peak against that allowance.
            record: r.peakUtilization1d,
            expr: '%s{%s} / (%s{%s} > 0)' % [r.inUseMax1d, c.appSelector, r.limitMax1d, c.appSelector],
          },
        ],
      },
    ],
  },
}
