// One app (or a few) in depth: use against the allowance, sessions,
// capacity, conversation limits, errors, latency. Thresholds are relative
// to each app's own allowance.
local g = import '../lib/grafana.libsonnet';
local u = import '../lib/utils.libsonnet';

function(c)
  local common = (import 'common.libsonnet')(c);
  local q = (import '../lib/queries.libsonnet')(c);
  local r = q.record;
  local sel = common.appSelector;
  local exp = common.exporterSelector;

  // Durations of the sessions that ended over the last hour, from the
  // classic buckets, or from the native histogram for a Prometheus that
  // scrapes only that. The hour is the panel's meaning, not a rate
  // window: increase(), whose ratios are those of rate().
  local durationQuantile(phi) =
    'histogram_quantile(%s, sum by (app, le) (increase(duix_app_session_duration_seconds_bucket{%s}[1h])))' % [phi, sel]
    + ' or histogram_quantile(%s, sum by (app) (increase(duix_app_session_duration_seconds{%s}[1h])))' % [phi, sel];

  g.dashboard(
    uid=c.appDashboardUID,
    title='Duix app',
    description='One Duix app in depth, from duix_exporter: concurrency against its allowance, sessions, daily capacity, conversation limits, errors and latency of the platform.',
    tags=c.dashboardTags,
    refresh=c.dashboardRefresh,
    timezone=c.dashboardTimezone,
    time='now-24h',
    variables=common.variables(appMulti=true, appIncludeAll=false),
    annotations=[common.alertAnnotation('app=~"$app|"')],
    links=common.links,
    rows=[
      {
        title: 'Allowance',
        panels: [
          g.timeseries(
            'In use vs allowance',
            'Concurrency in use (userConcurrentNumber), the allowance (totalConcurrentNumber), and the number in use from which DuixConcurrencyNearLimit warns (%s of the allowance, or %d free slot(s)).' % [u.percent(c.nearLimitRatio), c.nearLimitMinFree],
            [
              g.target('duix_app_concurrency_in_use{%s}' % sel, '{{app}} in use'),
              g.target('duix_app_concurrency_limit{%s}' % sel, '{{app}} allowance'),
              g.target(q.nearLimitLevel(sel), '{{app}} warns from'),
            ],
            min=0,
            w=12,
          ),
          g.timeseries(
            'Allowance used',
            'Share of the allowance in use. Thresholds: near the limit (%s) and exhausted (100%%).' % u.percent(c.nearLimitRatio),
            [g.target('%s{%s}' % [r.utilization, sel], '{{app}}')],
            unit='percentunit',
            min=0,
            thresholds=common.utilizationThresholds,
            w=8,
          ),
          g.gauge(
            'Allowance used now',
            'Share of the allowance in use now.',
            [g.target('%s{%s}' % [r.utilization, sel], '{{app}}', instant=true)],
            thresholds=common.utilizationThresholds,
            w=4,
          ),
        ],
      },
      {
        title: 'Sessions',
        panels: [
          g.timeseries('Active sessions', 'Entries of the active session list (getconcurrentList).', [
            g.target('duix_app_active_sessions{%s}' % sel, '{{app}}'),
          ], min=0, w=8),
          g.timeseries('Sessions started and ended per hour', 'Sessions seen for the first time, and sessions no longer listed, per hour (session lifecycle).', [
            g.target('increase(duix_app_sessions_started_total{%s}[1h])' % sel, '{{app}} started'),
            g.target('increase(duix_app_sessions_ended_total{%s}[1h])' % sel, '{{app}} ended'),
          ], min=0, w=8),
          g.timeseries('Session duration p50 / p90', 'Durations of the sessions that ended over the last hour: median and 90th percentile.', [
            g.target(durationQuantile('0.5'), '{{app}} p50'),
            g.target(durationQuantile('0.9'), '{{app}} p90'),
          ], unit='s', min=0, w=8),
          g.timeseries('Session-minutes per day', 'Session-minutes used over the previous 24 hours, at each moment (%s / 60).' % r.sessionSeconds1d, [
            g.target('%s{%s} / 60' % [r.sessionSeconds1d, sel], '{{app}}'),
          ], min=0, w=12),
          g.timeseries('Oldest session age', "Age of the app's oldest active session. DuixSessionStuck fires past %s." % u.secondsDuration(c.stuckSessionSeconds), [
            g.target('duix_app_oldest_session_age_seconds{%s}' % sel, '{{app}}'),
          ], unit='s', min=0, w=12, thresholds=g.thresholds('green', [[c.stuckSessionSeconds, 'red']])),
        ],
      },
      {
        title: 'Capacity (30 days)',
        panels: [
          g.timeseries('Daily peak vs allowance', 'The peak of the concurrency in use over the previous day, and the allowance, over 30 days.', [
            g.target('%s{%s}' % [r.inUseMax1d, sel], '{{app}} daily peak'),
            g.target('%s{%s}' % [r.limitMax1d, sel], '{{app}} allowance'),
          ], min=0, w=12) { timeFrom: '30d', interval: '1h' },
          g.timeseries('Daily peak / allowance', "The day's peak against the allowance. DuixAllowancePlanning fires when it reaches %s on %d of %d days." % [u.percent(c.planningRatio), c.planningDays, c.planningWindowDays], [
            g.target('%s{%s}' % [r.peakUtilization1d, sel], '{{app}}'),
          ], unit='percentunit', min=0, w=12, thresholds=g.thresholds('green', [[c.planningRatio, 'orange'], [1, 'red']])) { timeFrom: '30d', interval: '1h' },
        ],
      },
      {
        title: 'Conversations',
        panels: [
          g.timeseries('Active sessions vs maxConversation', 'Active sessions naming each configured conversation, and its maxConversation.', [
            g.target('duix_conversation_active_sessions{%s}' % sel, '{{app}}/{{conversation_id}} active'),
            g.target('duix_conversation_max_concurrent{%s}' % sel, '{{app}}/{{conversation_id}} maxConversation'),
          ], min=0, w=12),
          g.table(
            'Conversations',
            'The configured conversations: name, language, model and voice, maxConversation, and the sessions naming them now.',
            [
              g.target('duix_conversation_info{%s}' % sel, instant=true, table=true),
              g.target('duix_conversation_max_concurrent{%s}' % sel, instant=true, table=true),
              g.target('duix_conversation_active_sessions{%s}' % sel, instant=true, table=true),
              g.target('%s{%s}' % [r.conversationUtilization, sel], instant=true, table=true),
            ],
            columns=[
              ['app', 'app'],
              ['conversation_id', 'conversation'],
              ['name', 'name'],
              ['language', 'language'],
              ['model_name', 'model'],
              ['tts_name', 'voice'],
              ['Value #B', 'maxConversation'],
              ['Value #C', 'active'],
              ['Value #D', 'used'],
            ],
            overrides=[
              g.override('used', [
                ['unit', 'percentunit'],
                ['thresholds', common.utilizationThresholds],
                ['custom.cellOptions', { type: 'color-background', mode: 'basic' }],
              ]),
            ],
            w=12,
          ),
        ],
      },
      {
        title: 'Platform and errors',
        panels: [
          g.stateTimeline('Platform answering', 'Whether each scrape reached the platform for the app (duix_up).', [
            g.target('duix_up{%s}' % sel, '{{app}}'),
          ], mappings=g.boolMappings('failing', 'answering')),
          g.timeseries('Failed calls', "Failed calls to the platform per second: all of them (duix_app_errors_total, 0 from the app's first scrape on), and by reason (duix_scrape_errors_total, whose series of a reason appears with its first failure).", [
            g.target('sum by (app) (rate(duix_app_errors_total{%s}[$__rate_interval]))' % sel, '{{app}} all'),
            g.target('sum by (app, reason) (rate(duix_scrape_errors_total{%s}[$__rate_interval]))' % sel, '{{app}} {{reason}}'),
          ], unit='reqps', min=0, w=12, h=6),
          g.timeseries('Scrape duration', "Wall time of the app's getconcurrentNumber and getconcurrentList calls whose result each scrape reports (conversation refreshes not counted).", [
            g.target('duix_scrape_duration_seconds{%s}' % sel, '{{app}}'),
          ], unit='s', min=0, w=8),
          g.timeseries('API latency p50 / p99', 'Time from sending a request to the platform until its body was read, by endpoint, for every app of the exporter.', [
            g.target('histogram_quantile(0.5, sum by (endpoint, le) (rate(duix_api_request_duration_seconds_bucket{%s}[$__rate_interval])))' % exp, '{{endpoint}} p50'),
            g.target('histogram_quantile(0.99, sum by (endpoint, le) (rate(duix_api_request_duration_seconds_bucket{%s}[$__rate_interval])))' % exp, '{{endpoint}} p99'),
          ], unit='s', min=0, w=8),
          g.timeseries('API requests by status', 'Requests of the exporter to the platform by endpoint and HTTP status (error: no response), for every app of the exporter.', [
            g.target('sum by (endpoint, code) (rate(duix_api_requests_total{%s}[$__rate_interval]))' % exp, '{{endpoint}} {{code}}'),
          ], unit='reqps', min=0, w=8),
        ],
      },
      {
        title: 'Exporter',
        panels: [
          g.table('App', "The app's IDs as configured and reported.", [
            g.target('duix_app_info{%s}' % sel, instant=true, table=true),
          ], columns=[['app', 'app'], ['app_id', 'app ID'], ['corp_id', 'corp ID']], w=10, h=6),
          g.stat('Configuration reload', 'Whether the last configuration reload of the exporter succeeded.', [
            g.target('min(duix_exporter_config_last_reload_successful{%s})' % exp, instant=true),
          ], mappings=g.boolMappings('Failed', 'OK'), w=4, h=6),
          g.table('Build', 'Version of each exporter.', [
            g.target('duix_exporter_build_info{%s}' % exp, instant=true, table=true),
          ], columns=[['instance', 'instance'], ['version', 'version'], ['revision', 'revision'], ['branch', 'branch'], ['goversion', 'Go']], w=10, h=6),
        ],
      },
    ],
  )
