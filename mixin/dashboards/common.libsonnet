// What the two dashboards share: variables, selectors, annotations, links.
local g = import '../lib/grafana.libsonnet';
local u = import '../lib/utils.libsonnet';

function(c) {
  local clusterMatcher = '%s=~"$cluster"' % c.clusterLabel,

  // Every panel query narrows by the cluster, job and instance variables
  // (and the app variable for the per-app metrics), with =~ matchers, as
  // dashboard-linter's target-job-rule and target-instance-rule ask. The
  // selectors of _config appear in the variables only: the job variable
  // lists the jobs that appSelector selects.
  //
  // The exporter's own metrics (duix_api_*, duix_exporter_*) and `up`.
  exporterSelector:: u.matchers([clusterMatcher, 'job=~"$job"', 'instance=~"$instance"']),
  // The per-app metrics of the chosen apps.
  appSelector:: u.matchers([self.exporterSelector, 'app=~"$app"']),

  // cluster, job, instance and app, each narrowing the next. The cluster
  // variable's All is ".*", which also matches series without the label;
  // job and instance are multi-value with All ".+" (dashboard-linter's
  // template-job-rule and template-instance-rule). With per-app /probe
  // targets, All takes the probe job (per-app metrics) and the exporter's
  // job (its own metrics) together.
  variables(appMulti, appIncludeAll):: [
    g.datasourceVariable,
    g.queryVariable(
      'cluster',
      'Cluster',
      'label_values(up{%s}, %s)' % [c.exporterSelector, c.clusterLabel],
      includeAll=true,
      allValue='.*',
      hide=if c.showMultiCluster then 0 else 2,
    ),
    g.queryVariable(
      'job',
      'Job',
      'label_values(duix_up{%s}, job)' % u.matchers([c.appSelector, clusterMatcher]),
      multi=true,
      includeAll=true,
      allValue='.+',
    ),
    g.queryVariable(
      'instance',
      'Instance',
      'label_values(duix_up{%s}, instance)' % u.matchers([clusterMatcher, 'job=~"$job"']),
      multi=true,
      includeAll=true,
      allValue='.+',
    ),
    g.queryVariable(
      'app',
      'App',
      'label_values(duix_up{%s}, app)' % u.matchers([clusterMatcher, 'job=~"$job"', 'instance=~"$instance"']),
      multi=appMulti,
      includeAll=appIncludeAll,
      allValue=if appIncludeAll then '.+' else null,
    ),
  ],

  // Firing Duix alerts as annotations; extra: more matchers.
  alertAnnotation(extra=''):: {
    name: 'Duix alerts',
    expr: 'ALERTS{%s}' % u.matchers(['alertname=~"Duix.*"', 'alertstate="firing"', clusterMatcher, extra]),
    title: '{{ alertname }}',
    text: '{{ app }} {{ instance }}',
    tags: 'severity,app',
    color: 'red',
  },

  // Links between the dashboards, keeping the variables and the time.
  links:: [{
    title: 'Duix dashboards',
    type: 'dashboards',
    tags: ['duix'],
    asDropdown: false,
    includeVars: true,
    keepTime: true,
    targetBlank: false,
  }],

  // The drill-down of one app, for a data link: app, job and instance
  // given as Grafana link expressions.
  appDashboardURL(app, job, instance)::
    '/d/%s/duix-app?${datasource:queryparam}&${cluster:queryparam}&var-job=%s&var-instance=%s&var-app=%s&${__url_time_range}'
    % [c.appDashboardUID, job, instance, app],

  utilizationThresholds:: g.thresholds('green', [[c.nearLimitRatio, 'orange'], [1, 'red']]),
}
