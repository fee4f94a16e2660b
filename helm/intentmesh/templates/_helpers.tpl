{{/* Chart name, truncated to the DNS label limit. */}}
{{- define "intentmesh.name" -}}
{{- default .Chart.Name .Values.nameOverride | trunc 63 | trimSuffix "-" }}
{{- end }}

{{/* Release-qualified base name: <release> or <release>-<chart>. */}}
{{- define "intentmesh.fullname" -}}
{{- if .Values.fullnameOverride }}
{{- .Values.fullnameOverride | trunc 63 | trimSuffix "-" }}
{{- else if contains (include "intentmesh.name" .) .Release.Name }}
{{- .Release.Name | trunc 63 | trimSuffix "-" }}
{{- else }}
{{- printf "%s-%s" .Release.Name (include "intentmesh.name" .) | trunc 63 | trimSuffix "-" }}
{{- end }}
{{- end }}

{{/* Name of one service's objects: <fullname>-<service>. Call with (dict "root" $ "name" $name). */}}
{{- define "intentmesh.serviceFullname" -}}
{{- printf "%s-%s" (include "intentmesh.fullname" .root) .name | trunc 63 | trimSuffix "-" }}
{{- end }}

{{- define "intentmesh.labels" -}}
helm.sh/chart: {{ printf "%s-%s" .Chart.Name .Chart.Version | replace "+" "_" | trunc 63 | trimSuffix "-" }}
app.kubernetes.io/name: {{ include "intentmesh.name" . }}
app.kubernetes.io/instance: {{ .Release.Name }}
app.kubernetes.io/version: {{ .Chart.AppVersion | quote }}
app.kubernetes.io/managed-by: {{ .Release.Service }}
{{- end }}

{{/* Selector labels of one service. Call with (dict "root" $ "name" $name). */}}
{{- define "intentmesh.selectorLabels" -}}
app.kubernetes.io/name: {{ include "intentmesh.name" .root }}
app.kubernetes.io/instance: {{ .root.Release.Name }}
app.kubernetes.io/component: {{ .name }}
{{- end }}

{{- define "intentmesh.image" -}}
{{- printf "%s:%s" .Values.image.repository (.Values.image.tag | default .Chart.AppVersion) }}
{{- end }}

{{/*
Secret and key holding one backing service's DATABASE_URL: the service's own database setting,
else the shared one. Call with (dict "root" $ "name" $name "svc" $svc); fails when neither is set.
*/}}
{{- define "intentmesh.databaseSecretName" -}}
{{- $own := dig "database" (dict) .svc }}
{{- $shared := .root.Values.database }}
{{- if and (dig "url" "" $own) (dig "existingSecret" "" $own) }}
{{- fail (printf "services.%s.database: set only one of url and existingSecret" .name) }}
{{- else if dig "existingSecret" "" $own }}
{{- $own.existingSecret }}
{{- else if dig "url" "" $own }}
{{- printf "%s-database" (include "intentmesh.serviceFullname" (dict "root" .root "name" .name)) }}
{{- else if and $shared.url $shared.existingSecret }}
{{- fail "database: set only one of url and existingSecret" }}
{{- else if $shared.existingSecret }}
{{- $shared.existingSecret }}
{{- else if $shared.url }}
{{- printf "%s-database" (include "intentmesh.fullname" .root) }}
{{- else }}
{{- fail (printf "the %s service needs PostgreSQL: set services.%s.database.url (or .existingSecret), or database.url (or database.existingSecret)" .name .name) }}
{{- end }}
{{- end }}

{{- define "intentmesh.databaseSecretKey" -}}
{{- $own := dig "database" (dict) .svc }}
{{- if dig "existingSecret" "" $own }}{{ dig "existingSecretKey" "DATABASE_URL" $own }}
{{- else if dig "url" "" $own }}DATABASE_URL
{{- else if .root.Values.database.existingSecret }}{{ .root.Values.database.existingSecretKey }}
{{- else }}DATABASE_URL
{{- end }}
{{- end }}

{{/* Secret and key holding the API keys JSON; fails when none is configured. */}}
{{- define "intentmesh.apiKeysSecretName" -}}
{{- if and .Values.apiKeys.keys .Values.apiKeys.existingSecret }}
{{- fail "set only one of apiKeys.keys and apiKeys.existingSecret" }}
{{- else if .Values.apiKeys.existingSecret }}
{{- .Values.apiKeys.existingSecret }}
{{- else if .Values.apiKeys.keys }}
{{- printf "%s-api-keys" (include "intentmesh.fullname" .) }}
{{- else }}
{{- fail "the gateway needs API keys: set apiKeys.keys or apiKeys.existingSecret" }}
{{- end }}
{{- end }}

{{- define "intentmesh.apiKeysSecretKey" -}}
{{- if .Values.apiKeys.existingSecret }}{{ .Values.apiKeys.existingSecretKey }}{{ else }}api-keys.json{{ end }}
{{- end }}

{{/* The Secret holding NATS credentials, or "" when NATS asks for none. */}}
{{- define "intentmesh.natsSecretName" -}}
{{- $auth := .Values.nats.auth }}
{{- if $auth.existingSecret }}
{{- $auth.existingSecret }}
{{- else if or $auth.user $auth.token }}
{{- printf "%s-nats" (include "intentmesh.fullname" .) }}
{{- end }}
{{- end }}

{{/* Whether a service has a HorizontalPodAutoscaler. Call with (dict "root" $ "svc" $svc). */}}
{{- define "intentmesh.autoscaled" -}}
{{- if dig "autoscaling" "enabled" .root.Values.autoscaling.enabled .svc }}true{{ end }}
{{- end }}
