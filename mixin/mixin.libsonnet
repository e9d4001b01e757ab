// The duix_exporter monitoring mixin: Prometheus recording rules and
// alerts, and Grafana dashboards, for the metrics of duix_exporter.
//
//   local duix = (import 'mixin.libsonnet') + { _config+:: { ... } };
//   duix.prometheusRules   // { groups: [...] }: recording rules
//   duix.prometheusAlerts  // { groups: [...] }: alerts
//   duix.grafanaDashboards // { 'duix-fleet.json': {...}, 'duix-app.json': {...} }
//
// config.libsonnet lists the settings. `make mixin` renders the files the
// repository ships from it.
(import 'config.libsonnet') +
(import 'rules/rules.libsonnet') +
(import 'alerts/alerts.libsonnet') +
(import 'dashboards/dashboards.libsonnet')
