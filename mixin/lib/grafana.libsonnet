// Plain helpers that build Grafana dashboard JSON (schema 39, Grafana 10
// and later). Panels take their size as hidden fields w and h; layout()
// places them and numbers them.
{
  // Every panel and query reads the data source chosen in the dashboard.
  datasource:: { type: 'prometheus', uid: '${datasource}' },

  // A query. instant: one value per series (stats, tables, bar gauges).
  target(expr, legend='', instant=false, table=false):: {
    datasource: $.datasource,
    expr: expr,
    legendFormat: legend,
    range: !instant,
    instant: instant,
    format: if table then 'table' else 'time_series',
  },

  // Threshold steps: base colour, then [value, colour] pairs.
  thresholds(base, steps=[]):: {
    mode: 'absolute',
    steps: [{ color: base, value: null }] + [{ color: s[1], value: s[0] } for s in steps],
  },

  local withRefIDs(targets) = [
    targets[i] { refId: std.char(std.codepoint('A') + i) }
    for i in std.range(0, std.length(targets) - 1)
  ],

  local base(type, title, description, targets, w, h) = {
    type: type,
    title: title,
    description: description,
    datasource: $.datasource,
    targets: withRefIDs(targets),
    w:: w,
    h:: h,
  },

  timeseries(title, description, targets, unit='short', w=12, h=8, min=null, max=null, thresholds=null, stack=false, bars=false):: base('timeseries', title, description, targets, w, h) {
    fieldConfig: {
      defaults: {
                  unit: unit,
                  color: { mode: 'palette-classic' },
                  custom: {
                    drawStyle: if bars then 'bars' else 'line',
                    lineWidth: 1,
                    fillOpacity: if bars then 80 else 10,
                    showPoints: 'never',
                    spanNulls: false,
                    stacking: { mode: if stack then 'normal' else 'none', group: 'A' },
                    thresholdsStyle: { mode: if thresholds == null then 'off' else 'line' },
                  },
                  thresholds: if thresholds == null then $.thresholds('green') else thresholds,
                } + (if min == null then {} else { min: min })
                + (if max == null then {} else { max: max }),
      overrides: [],
    },
    options: {
      legend: { displayMode: 'list', placement: 'bottom', showLegend: true },
      tooltip: { mode: 'multi', sort: 'desc' },
    },
  },

  stat(title, description, targets, unit='short', w=4, h=4, thresholds=null, mappings=[], color=null):: base('stat', title, description, targets, w, h) {
    fieldConfig: {
      defaults: {
        unit: unit,
        mappings: mappings,
        thresholds: if thresholds == null then $.thresholds('text') else thresholds,
        color: if color == null then { mode: 'thresholds' } else { mode: 'fixed', fixedColor: color },
      },
      overrides: [],
    },
    options: {
      reduceOptions: { calcs: ['lastNotNull'], fields: '', values: false },
      colorMode: 'value',
      graphMode: 'none',
      justifyMode: 'auto',
      orientation: 'auto',
      textMode: 'auto',
    },
  },

  gauge(title, description, targets, unit='percentunit', w=6, h=8, min=0, max=1, thresholds=null):: base('gauge', title, description, targets, w, h) {
    fieldConfig: {
      defaults: {
        unit: unit,
        min: min,
        max: max,
        thresholds: if thresholds == null then $.thresholds('green') else thresholds,
        color: { mode: 'thresholds' },
      },
      overrides: [],
    },
    options: {
      reduceOptions: { calcs: ['lastNotNull'], fields: '', values: false },
      showThresholdLabels: false,
      showThresholdMarkers: true,
    },
  },

  bargauge(title, description, targets, unit='short', w=8, h=8, min=0, max=null, thresholds=null, links=[]):: base('bargauge', title, description, targets, w, h) {
    fieldConfig: {
      defaults: {
        unit: unit,
        min: min,
        thresholds: if thresholds == null then $.thresholds('green') else thresholds,
        color: { mode: 'thresholds' },
        links: links,
      } + (if max == null then {} else { max: max }),
      overrides: [],
    },
    options: {
      displayMode: 'gradient',
      orientation: 'horizontal',
      reduceOptions: { calcs: ['lastNotNull'], fields: '', values: false },
      showUnfilled: true,
      valueMode: 'color',
    },
  },

  // A table of instant queries merged into one row per series.
  // columns: [label or 'Value #X', display name] in order; hidden: labels
  // kept for links but not shown; overrides: more field overrides.
  table(title, description, targets, columns, unit='short', w=12, h=8, hidden=[], overrides=[], sortBy=null):: base('table', title, description, targets, w, h) {
    local shown = [col[0] for col in columns],
    fieldConfig: {
      defaults: { unit: unit, custom: { align: 'auto', filterable: false }, thresholds: $.thresholds('text') },
      overrides: [
        { matcher: { id: 'byName', options: f }, properties: [{ id: 'custom.hidden', value: true }] }
        for f in hidden
      ] + overrides,
    },
    options: {
      showHeader: true,
      cellHeight: 'sm',
      footer: { show: false, reducer: ['sum'], fields: '' },
    } + (if sortBy == null then {} else { sortBy: [{ displayName: sortBy, desc: true }] }),
    transformations: [
      { id: 'merge', options: {} },
      {
        id: 'organize',
        options: {
          // Only the columns asked for (and the hidden ones, for links).
          excludeByName: { Time: true, __name__: true },
          indexByName: { [shown[i]]: i for i in std.range(0, std.length(shown) - 1) },
          renameByName: { [col[0]]: col[1] for col in columns if col[0] != col[1] },
        },
      },
      {
        id: 'filterFieldsByName',
        options: { include: { names: [col[1] for col in columns] + hidden } },
      },
    ],
  },

  stateTimeline(title, description, targets, unit='none', w=12, h=6, mappings=[]):: base('state-timeline', title, description, targets, w, h) {
    fieldConfig: {
      defaults: {
        unit: unit,
        mappings: mappings,
        thresholds: $.thresholds('red', [[1, 'green']]),
        color: { mode: 'thresholds' },
        custom: { fillOpacity: 70, lineWidth: 0 },
      },
      overrides: [],
    },
    options: {
      showValue: 'never',
      mergeValues: true,
      rowHeight: 0.9,
      legend: { displayMode: 'list', placement: 'bottom', showLegend: false },
      tooltip: { mode: 'single', sort: 'none' },
    },
  },

  // A field override on the field named name.
  override(name, properties):: {
    matcher: { id: 'byName', options: name },
    properties: [{ id: p[0], value: p[1] } for p in properties],
  },

  // A data link.
  link(title, url):: { title: title, url: url },

  // Value mappings of 0 and 1 to text and colour.
  boolMappings(zero, one, zeroColor='red', oneColor='green'):: [{
    type: 'value',
    options: {
      '0': { text: zero, color: zeroColor, index: 0 },
      '1': { text: one, color: oneColor, index: 1 },
    },
  }],

  // Places rows of panels on the 24-column grid, left to right, wrapping
  // when a row is full, and numbers every panel. rows: [{title, panels}].
  layout(rows)::
    local placeRow(acc, row) =
      local header = {
        type: 'row',
        title: row.title,
        collapsed: false,
        panels: [],
        id: acc.id,
        gridPos: { x: 0, y: acc.y, w: 24, h: 1 },
      };
      local placed = std.foldl(
        function(a, p)
          local wrap = a.x + p.w > 24;
          local x = if wrap then 0 else a.x;
          local y = if wrap then a.y + a.lineH else a.y;
          {
            x: x + p.w,
            y: y,
            lineH: if wrap then p.h else std.max(a.lineH, p.h),
            id: a.id + 1,
            panels: a.panels + [p { id: a.id, gridPos: { x: x, y: y, w: p.w, h: p.h } }],
          },
        row.panels,
        { x: 0, y: acc.y + 1, lineH: 0, id: acc.id + 1, panels: [] },
      );
      { y: placed.y + placed.lineH, id: placed.id, panels: acc.panels + [header] + placed.panels };
    std.foldl(placeRow, rows, { y: 0, id: 1, panels: [] }).panels,

  datasourceVariable:: {
    name: 'datasource',
    label: 'Data source',
    type: 'datasource',
    query: 'prometheus',
    current: {},
    hide: 0,
    includeAll: false,
    multi: false,
    options: [],
    refresh: 1,
    regex: '',
    skipUrlSync: false,
  },

  // A variable of the values of a label: query is label_values(...).
  queryVariable(name, label, query, multi=false, includeAll=false, allValue=null, hide=0):: {
    name: name,
    label: label,
    type: 'query',
    datasource: $.datasource,
    definition: query,
    query: { query: query, refId: 'PrometheusVariableQueryEditor-VariableQuery' },
    current: {},
    hide: hide,
    includeAll: includeAll,
    multi: multi,
    options: [],
    refresh: 2,
    regex: '',
    skipUrlSync: false,
    sort: 1,
  } + (if allValue == null then {} else { allValue: allValue }),

  // A dashboard. annotations: Prometheus annotation queries, each
  // {name, expr, title, text, tags, color}.
  dashboard(uid, title, description, tags, refresh, timezone, time, variables, rows, annotations=[], links=[]):: {
    uid: uid,
    title: title,
    description: description,
    tags: tags,
    // Provisioned from files: changes belong in the mixin, not in Grafana
    // (dashboard-linter's uneditable-dashboard rule).
    editable: false,
    graphTooltip: 1,
    schemaVersion: 39,
    version: 1,
    refresh: refresh,
    time: { from: time, to: 'now' },
    timepicker: {},
    timezone: timezone,
    fiscalYearStartMonth: 0,
    liveNow: false,
    links: links,
    annotations: {
      list: [{
        builtIn: 1,
        datasource: { type: 'grafana', uid: '-- Grafana --' },
        enable: true,
        hide: true,
        iconColor: 'rgba(0, 211, 255, 1)',
        name: 'Annotations & Alerts',
        type: 'dashboard',
      }] + [
        {
          name: a.name,
          datasource: $.datasource,
          enable: true,
          hide: false,
          iconColor: a.color,
          expr: a.expr,
          step: '60s',
          titleFormat: a.title,
          textFormat: a.text,
          tagKeys: a.tags,
          useValueForTime: false,
        }
        for a in annotations
      ],
    },
    templating: { list: variables },
    panels: $.layout(rows),
  },
}
