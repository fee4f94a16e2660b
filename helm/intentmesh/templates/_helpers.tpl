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

{{/* Secret and key holding DATABASE_URL; fails when no database is configured. */}}
{{- define "intentmesh.databaseSecretName" -}}
{{- if and .Values.database.url .Values.database.existingSecret }}
{{- fail "set only one of database.url and database.existingSecret" }}
{{- else if .Values.database.existingSecret }}
{{- .Values.database.existingSecret }}
{{- else if .Values.database.url }}
{{- printf "%s-database" (include "intentmesh.fullname" .) }}
{{- else }}
{{- fail "a PostgreSQL database is required: set database.url or database.existingSecret" }}
{{- end }}
{{- end }}

{{- define "intentmesh.databaseSecretKey" -}}
{{- if .Values.database.existingSecret }}{{ .Values.database.existingSecretKey }}{{ else }}DATABASE_URL{{ end }}
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
