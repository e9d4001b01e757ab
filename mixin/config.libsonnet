// Settings of the duix_exporter mixin. Override any of them with
//
//   (import 'mixin.libsonnet') + { _config+:: { exporterSelector: 'job="duix"' } }
//
// Selectors are put between the braces of PromQL selectors, after other
// matchers: write them as one or more label matchers separated by commas.
{
  _config+:: {
    // The exporter's own targets (/metrics): its `up`, and the metrics only
    // /metrics serves (duix_api_*, duix_exporter_*). DuixExporterDown
    // watches these targets.
    exporterSelector: 'job="duix-exporter"',

    // Where the per-app metrics (duix_up, duix_app_*, duix_conversation_*,
    // duix_scrape_*) are read. By default the exporter's /metrics job. With
    // per-app /probe targets (deploy/prometheus/probe-targets.yml), set it
    // to the probe job's selector, e.g. 'job="duix-apps"': when /metrics is
    // scraped too, every app's metrics exist under both jobs, and a selector
    // matching both would count every app twice.
    appSelector: self.exporterSelector,

    // The per-app /probe targets, one per app (probe-targets.yml's job).
    // DuixProbeFailed watches their `up`. No such target: no alert.
    probeSelector: 'job="duix-apps"',
    // The target label that names the app of a /probe target: the example
    // relabels the app name into `instance` (an `app` target label would
    // clash with the samples' own). DuixProbeFailed copies it into `app`.
    probeAppLabel: 'instance',

    // The label that tells clusters (or Prometheus servers) apart, for the
    // dashboards' cluster variable. A fleet without it works unchanged: the
    // variable's All matches series without the label.
    clusterLabel: 'cluster',
    // Show the cluster variable in the dashboards' header.
    showMultiCluster: false,

    // Near the concurrency allowance: at least this share of it in use, or
    // at most nearLimitMinFree free slots (so that a small allowance warns
    // before it is exhausted: 4 of 5 in use, 17 of 20, 85 of 100). The same
    // rule applies to a conversation's maxConversation. No alert while
    // nothing is in use, or while the allowance is 0 or unknown.
    nearLimitRatio: 0.85,
    nearLimitMinFree: 1,

    // An active session older than this is taken to be stuck (a client
    // that never hung up), in seconds.
    stuckSessionSeconds: 2 * 3600,

    // DuixAPIErrorsHigh: more failed calls per scrape than this, over
    // apiErrorsWindow, for an app that still answers.
    apiErrorsPerScrape: 0.1,
    apiErrorsWindow: '10m',

    // DuixAllowancePlanning: the daily peak reached planningRatio of the
    // allowance on planningDays of the last planningWindowDays days.
    planningRatio: 0.9,
    planningDays: 3,
    planningWindowDays: 7,

    // How often the daily usage rules are evaluated.
    usageInterval: '5m',

    // DuixJanitorFailing fires on any failed webhook request of this window.
    janitorFailingWindow: '30m',

    // How long each alert's condition must hold before it fires.
    alertFor: {
      DuixConcurrencyNearLimit: '5m',
      DuixConcurrencyExhausted: '1m',
      DuixConversationNearLimit: '5m',
      DuixAppDown: '10m',
      DuixExporterDown: '5m',
      DuixProbeFailed: '5m',
      DuixAPIErrorsHigh: '15m',
      DuixSessionStuck: '10m',
      DuixExporterConfigReloadFailed: '5m',
    },

    // Every alert's runbook_url is this, '#', and its name in lower case.
    runbookURLBase: 'https://github.com/duix-exporter/duix_exporter/blob/main/docs/runbooks.md',

    // Grafana.
    dashboardTags: ['duix', 'duix_exporter'],
    dashboardRefresh: '30s',
    dashboardTimezone: 'browser',
    fleetDashboardUID: 'duix-fleet',
    appDashboardUID: 'duix-app',
  },
}
