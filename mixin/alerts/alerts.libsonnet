// Alerts. Every alert has a severity, a summary, a description and a
// runbook_url (the runbook's anchor is the alert's name in lower case).
// As the monitoring-mixins guidelines ask (and mixtool lint checks), the
// summary is one static sentence, the same for every alert of that name;
// the app, instance and values are in the description.
{
  local c = $._config,
  local q = (import '../lib/queries.libsonnet')(c),
  local u = import '../lib/utils.libsonnet',
  local r = q.record,

  // Annotations are written as lists of lines, joined with spaces.
  local text(lines) = std.join(' ', lines),

  local alert(name, severity, expr, summary, description) = {
    alert: name,
    expr: expr,
    labels: { severity: severity },
    annotations: {
      summary: summary,
      description: text(description),
      runbook_url: c.runbookURLBase + '#' + std.asciiLower(name),
    },
  } + (if std.objectHas(c.alertFor, name) then { 'for': c.alertFor[name] } else {}),

  // Template snippets that look up a series of the alert's app (or
  // conversation) at the time the alert is sent.
  local appValue(metric) =
    '{{ with printf `' + metric + '{job=%q,instance=%q,app=%q}` $labels.job $labels.instance $labels.app | query }}{{ . | first | value }}{{ end }}',
  local convQuery(metric) =
    'printf `' + metric + '{job=%q,instance=%q,app=%q,conversation_id=%q}` $labels.job $labels.instance $labels.app $labels.conversation_id | query',
  local mostFrequentError(window) =
    '{{- with printf `topk(1, sum by (reason) (increase(duix_scrape_errors_total{job=%q,instance=%q,app=%q}[' + window + '])) > 0)` $labels.job $labels.instance $labels.app | query }} Most frequent error: {{ . | first | label "reason" }}.{{ end }}',
  local inUseOfLimit =
    '(' + appValue('duix_app_concurrency_in_use') + ' of ' + appValue('duix_app_concurrency_limit') + ' sessions)',
  local nearLimitWhen =
    'from %s in use or with %d free slot%s' % [u.percent(c.nearLimitRatio), c.nearLimitMinFree, if c.nearLimitMinFree == 1 then '' else 's'],

  prometheusAlerts+:: {
    groups+: [
      {
        name: 'duix.alerts',
        rules: [
          alert(
            'DuixConcurrencyNearLimit',
            'warning',
            q.concurrencyNearLimit(c.appSelector),
            'A Duix app is close to its concurrency allowance.',
            [
              '{{ $labels.app }} uses {{ $value | humanizePercentage }} of its concurrency allowance',
              inUseOfLimit + '; it warns ' + nearLimitWhen + '.',
              'The platform refuses new sessions once it is full.',
            ],
          ),
          alert(
            'DuixConcurrencyExhausted',
            'critical',
            '%s{%s} >= 1' % [r.utilization, c.appSelector],
            'A Duix app has used up its concurrency allowance.',
            [
              '{{ $labels.app }} uses {{ $value | humanizePercentage }} of its concurrency allowance',
              inUseOfLimit + ': new sessions are being refused.',
            ],
          ),
          alert(
            'DuixConversationNearLimit',
            'warning',
            q.conversationNearLimit(c.appSelector),
            'A conversation of a Duix app is close to its maxConversation.',
            [
              'Conversation {{ $labels.conversation_id }}{{- with ' + convQuery('duix_conversation_info') + ' }} ({{ . | first | label "name" }}){{ end }}',
              '{{ if eq $labels.basis "app_in_use" -}}',
              'of {{ $labels.app }} may be full: the session records of {{ $labels.app }} name no conversation, so its',
              appValue('duix_app_concurrency_in_use') + " sessions in use are compared with the conversation's maxConversation of",
              '{{ with ' + convQuery('duix_conversation_max_concurrent') + ' }}{{ . | first | value }}{{ end }}',
              '({{ $value | humanizePercentage }}; exact when the app has one configured conversation, an estimate from above when it has several).',
              '{{- else -}}',
              'of {{ $labels.app }} uses {{ $value | humanizePercentage }} of its maxConversation',
              '({{ with ' + convQuery('duix_conversation_active_sessions') + ' }}{{ . | first | value }}{{ end }}',
              'of {{ with ' + convQuery('duix_conversation_max_concurrent') + ' }}{{ . | first | value }}{{ end }}',
              'sessions; it warns ' + nearLimitWhen + ').',
              '{{- end }}',
            ],
          ),
          alert(
            'DuixAppDown',
            'warning',
            'duix_up{%(appSelector)s} == 0' % c,
            'The Duix platform does not answer for an app.',
            [
              'For ' + u.durationText(c.alertFor.DuixAppDown) + ' every scrape of {{ $labels.app }} by {{ $labels.instance }} failed',
              '(duix_up is 0): its concurrency and sessions are unknown.',
              mostFrequentError(c.alertFor.DuixAppDown),
            ],
          ),
          alert(
            'DuixExporterDown',
            'critical',
            'up{%(exporterSelector)s} == 0 or absent(up{%(exporterSelector)s})' % c,
            'Duix exporter is down or not scraped.',
            [
              '{{ if $labels.instance }}Prometheus cannot scrape duix_exporter at {{ $labels.instance }}{{ else }}Prometheus has no duix_exporter target (no series up{' + c.exporterSelector + '}){{ end }}:',
              'the concurrency of the Duix apps is not monitored.',
            ],
          ),
          alert(
            'DuixProbeFailed',
            'warning',
            'label_replace(up{%(probeSelector)s} == 0, "app", "$1", "%(probeAppLabel)s", "(.*)")' % c,
            'Prometheus cannot probe a Duix app through duix_exporter.',
            [
              'Every scrape of /probe for {{ $labels.app }} (job {{ $labels.job }}) failed for ' + u.durationText(c.alertFor.DuixProbeFailed) + ':',
              'none of its metrics arrive, so no other alert can fire for it. The exporter is down or unreachable,',
              'does not have the app in its configuration (/probe answers 400), or answers after the scrape timeout.',
              'A platform that fails is not a failed probe: it shows as duix_up 0 (DuixAppDown).',
            ],
          ),
          alert(
            'DuixAPIErrorsHigh',
            'warning',
            |||
              (
                  increase(duix_app_errors_total{%(appSelector)s}[%(apiErrorsWindow)s])
                /
                  count_over_time(duix_up{%(appSelector)s}[%(apiErrorsWindow)s])
              ) > %(apiErrorsPerScrape)s
              unless
              max_over_time(duix_up{%(appSelector)s}[%(apiErrorsWindow)s]) == 0
            ||| % (c { apiErrorsPerScrape: u.num(c.apiErrorsPerScrape) }),
            'Calls to the Duix platform for an app often fail.',
            [
              '{{ $labels.app }} had {{ $value | printf "%.2f" }} failed calls to the platform per scrape',
              'over the last ' + u.durationText(c.apiErrorsWindow) + ' (reported by {{ $labels.instance }}).',
              mostFrequentError(c.apiErrorsWindow),
            ],
          ),
          alert(
            'DuixSessionStuck',
            'warning',
            'duix_app_oldest_session_age_seconds{%(appSelector)s} > %(stuckSessionSeconds)d' % c,
            'A Duix app has a session that has been active for over ' + u.secondsDuration(c.stuckSessionSeconds) + '.',
            [
              'The oldest active session of {{ $labels.app }} has been going for',
              '{{ $value | humanizeDuration }} (over ' + u.secondsDuration(c.stuckSessionSeconds) + ', reported by {{ $labels.instance }}): a client or kiosk',
              'that never hung up may be holding a slot of the allowance.',
            ],
          ),
          alert(
            'DuixAllowancePlanning',
            'info',
            'count_over_time((%s{%s} >= %s)[%dd:1d]) >= %d'
            % [r.peakUtilization1d, c.appSelector, u.num(c.planningRatio), c.planningWindowDays, c.planningDays],
            'A Duix app often peaks near its concurrency allowance.',
            [
              'On {{ $value }} of the last %d days the daily peak of {{ $labels.app }} reached %s of its' % [c.planningWindowDays, u.percent(c.planningRatio)],
              'concurrency allowance (reported by {{ $labels.instance }}): plan more allowance before',
              'callers are refused.',
            ],
          ),
          alert(
            'DuixExporterConfigReloadFailed',
            'warning',
            'duix_exporter_config_last_reload_successful{%(exporterSelector)s} == 0' % c,
            'Duix exporter could not reload its configuration.',
            [
              'The last reload of the configuration file by {{ $labels.instance }} failed; it keeps',
              'running with the previous configuration',
              '{{- with printf `duix_exporter_config_last_reload_success_timestamp_seconds{job=%q,instance=%q}` $labels.job $labels.instance | query }}, loaded {{ . | first | value | humanizeTimestamp }}{{ end }}.',
            ],
          ),
          alert(
            'DuixJanitorFailing',
            'warning',
            'sum without (outcome) (increase(duix_janitor_webhook_requests_total{%(exporterSelector)s,outcome!~"handled|method_not_allowed"}[%(janitorFailingWindow)s])) > 0' % c,
            "Duix exporter's janitor answers Alertmanager with errors.",
            [
              'The janitor of {{ $labels.instance }} answered {{ $value | printf "%.0f" }} of Alertmanager\'s',
              'webhook requests over the last ' + u.durationText(c.janitorFailingWindow) + ' with an error (listing or stopping',
              'failed, a payload it cannot read, an app it does not have, a sender that left before',
              'its turn, or too many requests waiting): stuck sessions may not be stopped. Its log',
              '(component=janitor) says why.',
            ],
          ),
        ],
      },
    ],
  },
}
