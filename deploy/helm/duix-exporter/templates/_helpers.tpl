{{/*
The chart's name: the app.kubernetes.io/name label, and the scrape job of
the ServiceMonitor.
*/}}
{{- define "duix-exporter.name" -}}
{{- default .Chart.Name .Values.nameOverride | trunc 63 | trimSuffix "-" }}
{{- end }}

{{/*
The objects' name: the release name, followed by the chart's name unless the
release name already contains it.
*/}}
{{- define "duix-exporter.fullname" -}}
{{- if .Values.fullnameOverride }}
{{- .Values.fullnameOverride | trunc 63 | trimSuffix "-" }}
{{- else }}
{{- $name := default .Chart.Name .Values.nameOverride }}
{{- if contains $name .Release.Name }}
{{- .Release.Name | trunc 63 | trimSuffix "-" }}
{{- else }}
{{- printf "%s-%s" .Release.Name $name | trunc 63 | trimSuffix "-" }}
{{- end }}
{{- end }}
{{- end }}

{{- define "duix-exporter.chart" -}}
{{- printf "%s-%s" .Chart.Name .Chart.Version | replace "+" "_" | trunc 63 | trimSuffix "-" }}
{{- end }}

{{- define "duix-exporter.selectorLabels" -}}
app.kubernetes.io/name: {{ include "duix-exporter.name" . }}
app.kubernetes.io/instance: {{ .Release.Name }}
{{- end }}

{{- define "duix-exporter.labels" -}}
helm.sh/chart: {{ include "duix-exporter.chart" . }}
{{ include "duix-exporter.selectorLabels" . }}
app.kubernetes.io/version: {{ .Chart.AppVersion | quote }}
app.kubernetes.io/managed-by: {{ .Release.Service }}
app.kubernetes.io/part-of: duix-exporter
{{- with .Values.commonLabels }}
{{ toYaml . }}
{{- end }}
{{- end }}

{{- define "duix-exporter.serviceAccountName" -}}
{{- if .Values.serviceAccount.create }}
{{- default (include "duix-exporter.fullname" .) .Values.serviceAccount.name }}
{{- else }}
{{- default "default" .Values.serviceAccount.name }}
{{- end }}
{{- end }}

{{- define "duix-exporter.image" -}}
{{- if .Values.image.digest }}
{{- printf "%s@%s" .Values.image.repository .Values.image.digest }}
{{- else }}
{{- printf "%s:%s" .Values.image.repository (default .Chart.AppVersion .Values.image.tag) }}
{{- end }}
{{- end }}

{{/* Where the pod finds its files. */}}
{{- define "duix-exporter.configDir" -}}/etc/duix_exporter/config{{- end }}
{{- define "duix-exporter.keysDir" -}}/etc/duix_exporter/keys{{- end }}

{{/*
The name of the Secret holding the app keys, after checking that the keys
come from exactly one place and, for the chart's own Secret, that there is
one key per app and no key for an unknown app. Empty when there are no apps
and no Secret. The messages name apps, never keys.
*/}}
{{- define "duix-exporter.keysSecretName" -}}
{{- $apps := .Values.config.apps | default list }}
{{- if and .Values.existingSecret .Values.secret.create }}
{{- fail "set either existingSecret or secret.create, not both" }}
{{- end }}
{{- if .Values.secret.create }}
{{- $keys := .Values.secret.keys | default dict }}
{{- $names := dict }}
{{- range $apps }}
{{- $_ := set $names .name true }}
{{- if not (get $keys .name) }}
{{- fail (printf "secret.keys has no key for app %q of config.apps" .name) }}
{{- end }}
{{- end }}
{{- range $name, $_ := $keys }}
{{- if not (hasKey $names $name) }}
{{- fail (printf "secret.keys names %q, which is not an app of config.apps" $name) }}
{{- end }}
{{- end }}
{{- printf "%s-keys" (include "duix-exporter.fullname" .) }}
{{- else if .Values.existingSecret }}
{{- .Values.existingSecret }}
{{- else if $apps }}
{{- fail "config.apps lists apps but no Secret holds their keys: set existingSecret to the name of a Secret with one entry <app name>.key per app, or secret.create=true with secret.keys" }}
{{- end }}
{{- end }}

{{/*
The exporter's configuration file: values.config, each app reading its key
from the file the keys' Secret is mounted as.
*/}}
{{- define "duix-exporter.configFile" -}}
{{- $cfg := dict }}
{{- with .Values.config.api }}
{{- $_ := set $cfg "api" . }}
{{- end }}
{{- with .Values.config.sessions }}
{{- $_ := set $cfg "sessions" . }}
{{- end }}
{{- $apps := list }}
{{- $keysDir := include "duix-exporter.keysDir" . }}
{{- $seen := dict }}
{{- range .Values.config.apps }}
{{- if hasKey $seen .name }}
{{- fail (printf "config.apps: app %q is listed twice" .name) }}
{{- end }}
{{- $_ := set $seen .name true }}
{{- $app := deepCopy . }}
{{- $_ := set $app "app_key_file" (printf "%s/%s.key" $keysDir .name) }}
{{- $apps = append $apps $app }}
{{- end }}
{{- $_ := set $cfg "apps" $apps }}
{{- toYaml $cfg }}
{{- end }}

{{/*
GOMEMLIMIT: goMemLimit when set, else 90% of resources.limits.memory in MiB
(so that the Go runtime collects harder before the kernel kills the
container), else nothing.
*/}}
{{- define "duix-exporter.goMemLimit" -}}
{{- if .Values.goMemLimit }}
{{- .Values.goMemLimit }}
{{- else if (.Values.resources.limits).memory }}
{{- $limit := .Values.resources.limits.memory }}
{{- if kindIs "float64" $limit }}
{{- $limit = int64 $limit }}
{{- end }}
{{- $limit = toString $limit }}
{{- $re := "^([0-9]+(\\.[0-9]+)?)(Ki|Mi|Gi|Ti|k|M|G|T)?$" }}
{{- if not (regexMatch $re $limit) }}
{{- fail (printf "resources.limits.memory %q: expected a number with an optional suffix Ki, Mi, Gi, Ti, k, M, G or T (or set goMemLimit)" $limit) }}
{{- end }}
{{- $number := regexReplaceAll $re $limit "${1}" | float64 }}
{{- $unit := get (dict "" 1.0 "k" 1e3 "M" 1e6 "G" 1e9 "T" 1e12 "Ki" 1024.0 "Mi" 1048576.0 "Gi" 1073741824.0 "Ti" 1099511627776.0) (regexReplaceAll $re $limit "${3}") }}
{{- $mib := divf (mulf $number $unit 0.9) 1048576.0 | floor | int64 }}
{{- if lt $mib 1 }}
{{- fail (printf "resources.limits.memory %q is too small for the exporter" $limit) }}
{{- end }}
{{- printf "%dMiB" $mib }}
{{- end }}
{{- end }}
