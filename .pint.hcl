# cloudflare/pint's configuration for the rules the mixin renders
# (deploy/prometheus/rules.yml). `make pint-test` runs pint's offline
# checks with it; `make e2e-test` runs every check, the online ones too
# (series, labels and rule dependencies), against a Prometheus 3 that
# scrapes the exporter, with a `prometheus` block added. Both fail on a
# finding of any severity, information included.

rule {
  match {
    kind = "alerting"
  }

  # The monitoring-mixins conventions: a static summary (one sentence, no
  # template), the details in the description, and a runbook.
  annotation "summary" {
    severity = "bug"
    required = true
    value    = "[A-Z][^{}]*\\."
    comment  = "A static summary: one sentence, capitalised, no template (the details go in description)."
  }
  annotation "description" {
    severity = "bug"
    required = true
    value    = ".*\\{\\{.+\\}\\}.*"
    comment  = "The description carries the details: the app, the instance, the values."
  }
  annotation "runbook_url" {
    severity = "bug"
    required = true
    value    = "https://.+#(?i){{ $alert }}"
    comment  = "Every alert links to its section of docs/runbooks.md."
  }
  label "severity" {
    severity = "bug"
    required = true
    values   = ["info", "warning", "critical"]
  }
  name "Duix[A-Za-z]+" {
    severity = "bug"
  }
}

rule {
  match {
    kind = "recording"
  }

  # level:metric:operations (https://prometheus.io/docs/practices/rules/).
  name "[a-z_]+:duix_[a-z_]+:[a-z0-9_]+" {
    severity = "bug"
  }
}

rule {
  # An aggregation keeps the job, so that every result can be traced back
  # to its scrape job (and the exporter or probe behind it).
  aggregate ".+" {
    severity = "bug"
    keep     = ["job"]
  }

  # Labels hold no URLs and no keys with spaces.
  reject "https?://.+" {
    label_keys   = true
    label_values = true
  }
  reject ".* +.*" {
    label_keys      = true
    annotation_keys = true
  }
}
