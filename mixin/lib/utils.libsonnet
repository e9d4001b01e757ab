// Small helpers shared by the rules, the alerts and the dashboards.
{
  // '10m' -> '10 minutes', '1h' -> '1 hour'; anything else as it is.
  durationText(d)::
    local units = { s: 'second', m: 'minute', h: 'hour', d: 'day', w: 'week' };
    local unit = std.substr(d, std.length(d) - 1, 1);
    local num = std.substr(d, 0, std.length(d) - 1);
    local digits = std.length(num) > 0 && std.all([std.member('0123456789', ch) for ch in std.stringChars(num)]);
    if std.objectHas(units, unit) && digits then
      num + ' ' + units[unit] + (if num == '1' then '' else 's')
    else d,

  // 7200 -> '2h', 90 -> '90s': the shortest exact Prometheus duration.
  secondsDuration(s)::
    if s % 86400 == 0 then '%dd' % (s / 86400)
    else if s % 3600 == 0 then '%dh' % (s / 3600)
    else if s % 60 == 0 then '%dm' % (s / 60)
    else '%ds' % s,

  // A number as PromQL reads it, in the fewest digits: 0.85 -> '0.85'
  // (std.toString writes 0.84999999999999998).
  num(x)::
    if x == std.floor(x) then '%d' % x
    else
      local exact = [s for s in [('%.' + n + 'f') % x for n in std.range(1, 15)] if std.parseJson(s) == x];
      if std.length(exact) > 0 then exact[0] else std.toString(x),

  // 0.85 -> '85%'.
  percent(x):: '%d%%' % std.round(x * 100),

  // A selector's matchers followed by more: joins the non-empty ones.
  matchers(list):: std.join(', ', [m for m in list if m != '']),
}
