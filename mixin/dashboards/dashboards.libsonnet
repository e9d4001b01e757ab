// The dashboards, by file name.
{
  grafanaDashboards+:: {
    'duix-fleet.json': (import 'fleet.libsonnet')($._config),
    'duix-app.json': (import 'app.libsonnet')($._config),
  },
}
