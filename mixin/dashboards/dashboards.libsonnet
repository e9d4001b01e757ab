// The dashboards, by file name.
{
  grafanaDashboards+:: {},
}
