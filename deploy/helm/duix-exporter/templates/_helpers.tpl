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

{{/*
An image reference from {registry, repository, tag, digest}: global.imageRegistry
or registry, then repository; the digest over the tag; the tag defaults to
the chart's appVersion. Called with (list $ imageValues).
*/}}
{{- define "duix-exporter.imageRef" -}}
{{- $root := index . 0 }}
{{- $img := index . 1 }}
{{- $registry := default $img.registry ((($root.Values.global).imageRegistry)) }}
{{- $name := $img.repository }}
{{- if $registry }}
{{- $name = printf "%s/%s" (trimSuffix "/" $registry) $img.repository }}
{{- end }}
{{- if $img.digest }}
{{- printf "%s@%s" $name $img.digest }}
{{- else }}
{{- printf "%s:%s" $name (default $root.Chart.AppVersion ($img.tag | toString)) }}
{{- end }}
{{- end }}

{{- define "duix-exporter.image" -}}
{{- include "duix-exporter.imageRef" (list . .Values.image) }}
{{- end }}

{{/*
The web configuration: "true" when --web.config.file is given, from the
chart's Secret (webConfig.config) or the user's (webConfig.existingSecret).
*/}}
{{- define "duix-exporter.webConfigSecret" -}}
{{- if and .Values.webConfig.config .Values.webConfig.existingSecret }}
{{- fail "webConfig: set either config or existingSecret, not both" }}
{{- end }}
{{- range $user, $hash := (.Values.webConfig.config).basic_auth_users }}
{{- if not (regexMatch "^\\$2[aby]?\\$[0-9]{2}\\$[./A-Za-z0-9]{53}$" $hash) }}
{{- fail (printf "webConfig.config.basic_auth_users.%s is not a bcrypt hash: give the hash of the password (htpasswd -nBC 10 \"\" | tr -d ':'), never the password" $user) }}
{{- end }}
{{- end }}
{{- if .Values.webConfig.config }}
{{- printf "%s-web-config" (include "duix-exporter.fullname" .) }}
{{- else }}
{{- .Values.webConfig.existingSecret }}
{{- end }}
{{- end }}

{{/* "true" when the chart's web configuration serves TLS. */}}
{{- define "duix-exporter.webTLS" -}}
{{- if (.Values.webConfig.config).tls_server_config }}true{{ end }}
{{- end }}

{{/* The scheme of the ServiceMonitors' endpoints. */}}
{{- define "duix-exporter.scrapeScheme" -}}
{{- if .Values.serviceMonitor.scheme }}
{{- .Values.serviceMonitor.scheme }}
{{- else if include "duix-exporter.webTLS" . }}
{{- "https" }}
{{- else }}
{{- "http" }}
{{- end }}
{{- end }}

{{/*
A probe of the exporter's container, from (list $ probe name): a probe
with tcpSocket, exec or grpc loses the default httpGet; an httpGet
probe gets scheme HTTPS when the chart's web configuration serves TLS, and
is refused when it has basic auth users and the probe sends no
Authorization header (the exporter would answer 401).
*/}}
{{- define "duix-exporter.probe" -}}
{{- $root := index . 0 }}
{{- $probe := deepCopy (index . 1) }}
{{- $name := index . 2 }}
{{- /* Values merge into the defaults: another handler replaces httpGet. */}}
{{- if or $probe.tcpSocket $probe.exec $probe.grpc }}
{{- $_ := unset $probe "httpGet" }}
{{- end }}
{{- with $probe.httpGet }}
{{- if and (include "duix-exporter.webTLS" $root) (not .scheme) }}
{{- $_ := set . "scheme" "HTTPS" }}
{{- end }}
{{- if ($root.Values.webConfig.config).basic_auth_users }}
{{- $auth := false }}
{{- range .httpHeaders }}
{{- if eq (lower .name) "authorization" }}{{ $auth = true }}{{ end }}
{{- end }}
{{- if not $auth }}
{{- fail (printf "%s: webConfig.config has basic_auth_users, so the exporter answers 401 to this httpGet probe: use a tcpSocket probe (or httpGet with an Authorization header)" $name) }}
{{- end }}
{{- end }}
{{- end }}
{{- toYaml $probe }}
{{- end }}

{{/* The names of the apps of config.apps, as a dict name: true. */}}
{{- define "duix-exporter.appNames" -}}
{{- $names := dict }}
{{- range .Values.config.apps }}
{{- $_ := set $names .name true }}
{{- end }}
{{- toYaml $names }}
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
{{- with .Values.config.janitor }}
{{- $_ := set $cfg "janitor" . }}
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

{{/* The scheme and credentials of a ServiceMonitor endpoint. */}}
{{- define "duix-exporter.endpointAuth" -}}
{{- $sm := .Values.serviceMonitor -}}
scheme: {{ include "duix-exporter.scrapeScheme" . }}
{{- with $sm.tlsConfig }}
tlsConfig:
  {{- toYaml . | nindent 2 }}
{{- end }}
{{- with $sm.bearerTokenFile }}
bearerTokenFile: {{ . }}
{{- end }}
{{- with $sm.basicAuth }}
basicAuth:
  {{- toYaml . | nindent 2 }}
{{- end }}
{{- with $sm.authorization }}
authorization:
  {{- toYaml . | nindent 2 }}
{{- end }}
{{- end }}

{{/*
The chart's labels with more label maps over them, from (list $ map...):
one map, so that a label given twice (commonLabels and
serviceMonitor.labels, say) is one key; the selector labels stay the
chart's.
*/}}
{{- define "duix-exporter.labelsWith" -}}
{{- $root := index . 0 }}
{{- $labels := include "duix-exporter.labels" $root | fromYaml }}
{{- range rest . }}
{{- $labels = mergeOverwrite $labels (. | default dict) }}
{{- end }}
{{- $labels = mergeOverwrite $labels (include "duix-exporter.selectorLabels" $root | fromYaml) }}
{{- toYaml $labels }}
{{- end }}
