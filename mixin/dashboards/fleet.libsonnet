// Fleet overview: how many apps answer, are near or at their allowance,
// and the worst ten by each measure. No panel draws one series per app for
// the whole fleet: counts and sums, or topk.
local g = import '../lib/grafana.libsonnet';
local u = import '../lib/utils.libsonnet';

function(c)
  local common = (import 'common.libsonnet')(c);
  local q = (import '../lib/queries.libsonnet')(c);
  local r = q.record;
  local sel = common.appSelector;
  local exp = common.exporterSelector;
  local drill = common.appDashboardURL('${__data.fields.app}', '${__data.fields.job}', '${__data.fields.instance}');
  local drillField = common.appDashboardURL('${__field.labels.app}', '${__field.labels.job}', '${__field.labels.instance}');
  local drillLinks = [g.link('Open ${__field.labels.app}', drillField)];
  local countOrZero(expr) = 'count(%s) or vector(0)' % expr;

  g.dashboard(
    uid=c.fleetDashboardUID,
    title='Duix fleet',
    description='Every Duix app monitored by duix_exporter at a glance: apps answering, near or at their concurrency allowance, and the ten worst by use, errors and stuck sessions. Open an app in the "Duix app" dashboard.',
    tags=c.dashboardTags,
    refresh=c.dashboardRefresh,
    timezone=c.dashboardTimezone,
    time='now-6h',
    variables=common.variables(appMulti=true, appIncludeAll=true),
    annotations=[common.alertAnnotation()],
    links=common.links,
    rows=[
      {
        title: 'Fleet',
        panels: [
          g.stat('Apps answering', 'Apps whose last scrape reached the platform (duix_up 1).', [
            g.target(countOrZero('duix_up{%s} == 1' % sel), instant=true),
          ], color='green'),
          g.stat('Apps not answering', 'Apps whose last scrape failed to reach the platform (duix_up 0); DuixAppDown fires after %s.' % u.durationText(c.alertFor.DuixAppDown), [
            g.target(countOrZero('duix_up{%s} == 0' % sel), instant=true),
          ], thresholds=g.thresholds('green', [[1, 'red']])),
          g.stat('Apps near their allowance', 'Apps at %s of their concurrency allowance or with %d free slot(s) or fewer: the DuixConcurrencyNearLimit condition.' % [u.percent(c.nearLimitRatio), c.nearLimitMinFree], [
            g.target(countOrZero(q.concurrencyNearLimit(sel)), instant=true),
          ], thresholds=g.thresholds('green', [[1, 'orange']])),
          g.stat('Apps at their allowance', 'Apps using all of their concurrency allowance: the platform refuses their new sessions.', [
            g.target(countOrZero('%s{%s} >= 1' % [r.utilization, sel]), instant=true),
          ], thresholds=g.thresholds('green', [[1, 'red']])),
          g.stat('Fleet allowance used', 'Sessions in use over the sum of the allowances, across the apps shown.', [
            g.target('sum(duix_app_concurrency_in_use{%s}) / sum(duix_app_concurrency_limit{%s} > 0)' % [sel, sel], instant=true),
          ], unit='percentunit', thresholds=common.utilizationThresholds),
          g.stat('Duix alerts firing', 'Duix alerts firing now for the jobs and instances shown, of every kind.', [
            g.target(countOrZero('ALERTS{%s}' % u.matchers(['alertname=~"Duix.*"', 'alertstate="firing"', exp])), instant=true),
          ], thresholds=g.thresholds('green', [[1, 'orange']])),
        ],
      },
      {
        title: 'Worst apps',
        panels: [
          g.table(
            'Closest to their allowance (top 10)',
            'The ten apps using the largest share of their concurrency allowance. Click an app to open it.',
            [
              g.target('topk(10, %s{%s})' % [r.utilization, sel], instant=true, table=true),
              g.target('duix_app_concurrency_in_use{%s} and topk(10, %s{%s})' % [sel, r.utilization, sel], instant=true, table=true),
              g.target('duix_app_concurrency_limit{%s} and topk(10, %s{%s})' % [sel, r.utilization, sel], instant=true, table=true),
            ],
            columns=[['app', 'app'], ['Value #A', 'Allowance used'], ['Value #B', 'In use'], ['Value #C', 'Allowance']],
            hidden=['job', 'instance'],
            sortBy='Allowance used',
            w=12,
            h=9,
            overrides=[
              g.override('app', [['links', [g.link('Open ${__data.fields.app}', drill)]]]),
              g.override('Allowance used', [
                ['unit', 'percentunit'],
                ['thresholds', common.utilizationThresholds],
                ['custom.cellOptions', { type: 'color-background', mode: 'basic' }],
              ]),
            ],
          ),
          g.timeseries(
            'Allowance used, top 10',
            'Share of the allowance in use over time, for the ten apps using the most at each moment. Thresholds: near the limit, and exhausted.',
            [g.target('topk(10, %s{%s})' % [r.utilization, sel], '{{app}}')],
            unit='percentunit',
            min=0,
            w=12,
            h=9,
            thresholds=common.utilizationThresholds,
          ),
          g.bargauge(
            'Failed calls per scrape (top 10)',
            'Failed calls to the platform per scrape over the time range shown, for the ten apps with the most. DuixAPIErrorsHigh fires above %s over %s.' % [u.num(c.apiErrorsPerScrape), c.apiErrorsWindow],
            [g.target(
              |||
                topk(10,
                    increase(duix_app_errors_total{%(sel)s}[$__range])
                  /
                    count_over_time(duix_up{%(sel)s}[$__range])
                )
              ||| % { sel: sel },
              '{{app}}',
              instant=true,
            )],
            thresholds=g.thresholds('green', [[c.apiErrorsPerScrape, 'red']]),
            links=drillLinks,
          ),
          g.bargauge(
            'Oldest active session (top 10)',
            'Age of the oldest active session of the ten apps with the oldest. DuixSessionStuck fires past %s.' % u.secondsDuration(c.stuckSessionSeconds),
            [g.target('topk(10, duix_app_oldest_session_age_seconds{%s})' % sel, '{{app}}', instant=true)],
            unit='s',
            thresholds=g.thresholds('green', [[c.stuckSessionSeconds, 'red']]),
            links=drillLinks,
          ),
          g.bargauge(
            'Session-minutes, last day (top 10)',
            'Session-minutes used over the last day (%s), for the ten apps that used the most.' % r.sessionSeconds1d,
            [g.target('topk(10, %s{%s}) / 60' % [r.sessionSeconds1d, sel], '{{app}}', instant=true)],
            unit='none',
            thresholds=g.thresholds('blue'),
            links=drillLinks,
          ),
        ],
      },
      {
        title: 'Fleet over time',
        panels: [
          g.timeseries('Sessions in use and allowance', 'Sum over the apps shown.', [
            g.target('sum(duix_app_concurrency_in_use{%s})' % sel, 'in use'),
            g.target('sum(duix_app_concurrency_limit{%s})' % sel, 'allowance'),
          ], w=8),
          g.timeseries('Apps answering', 'Apps whose scrape reached the platform, and those whose scrape failed.', [
            g.target(countOrZero('duix_up{%s} == 1' % sel), 'answering'),
            g.target(countOrZero('duix_up{%s} == 0' % sel), 'not answering'),
          ], w=8, stack=true),
          g.timeseries('Sessions started and ended per hour', 'Sum over the apps shown (session lifecycle).', [
            g.target('sum(increase(duix_app_sessions_started_total{%s}[1h]))' % sel, 'started'),
            g.target('sum(increase(duix_app_sessions_ended_total{%s}[1h]))' % sel, 'ended'),
          ], w=8),
        ],
      },
      {
        title: 'Exporter',
        panels: [
          g.stat('Exporters up', 'Exporters of the jobs and instances shown whose /metrics Prometheus scrapes (their duix_exporter_build_info).', [
            g.target(countOrZero('duix_exporter_build_info{%s}' % exp), instant=true),
          ], thresholds=g.thresholds('red', [[1, 'green']])),
          g.stat('Targets down', "Targets that Prometheus fails to scrape: an exporter's /metrics (DuixExporterDown) or a per-app /probe target (DuixProbeFailed). Only the jobs shown that served Duix metrics over the last hour count.", [
            g.target(|||
              count(
                  up{%(exp)s} == 0
                and on (job)
                  (
                      group by (job) (last_over_time(duix_up{%(exp)s}[1h]))
                    or
                      group by (job) (last_over_time(duix_exporter_build_info{%(exp)s}[1h]))
                  )
              ) or vector(0)
            ||| % { exp: exp }, instant=true),
          ], thresholds=g.thresholds('green', [[1, 'red']])),
          g.stat('Configuration reload', 'Whether the last configuration reload of every exporter succeeded.', [
            g.target('min(duix_exporter_config_last_reload_successful{%s})' % exp, instant=true),
          ], mappings=g.boolMappings('Failed', 'OK')),
          g.timeseries('Slowest scrapes (top 10)', 'Wall time of the getconcurrentNumber and getconcurrentList calls for the ten slowest apps.', [
            g.target('topk(10, duix_scrape_duration_seconds{%s})' % sel, '{{app}}'),
          ], unit='s', w=6, h=6),
          g.timeseries('API requests by status', 'Requests of the exporter to the platform, by HTTP status (error: no response).', [
            g.target('sum by (code) (rate(duix_api_requests_total{%s}[$__rate_interval]))' % exp, '{{code}}'),
          ], unit='reqps', w=6, h=6),
        ],
      },
    ],
  )
