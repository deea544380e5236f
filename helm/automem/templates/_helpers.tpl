{{/*
Helpers shared by the templates. Keep to the Go-template subset that tests/helm_template.py
renders (the chart tests cannot run `helm` here): no `tpl`, `template`, `.Capabilities`.
*/}}

{{/* The chart's name, cut to a DNS label. */}}
{{- define "automem.name" -}}
{{- default .Chart.Name .Values.nameOverride | trunc 63 | trimSuffix "-" }}
{{- end }}

{{/* The release's full name: the release name when it already contains the chart's name. */}}
{{- define "automem.fullname" -}}
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

{{- define "automem.chart" -}}
{{- printf "%s-%s" .Chart.Name .Chart.Version | replace "+" "_" | trunc 63 | trimSuffix "-" }}
{{- end }}

{{/* Labels of every object; call with (dict "ctx" . "component" "api"). */}}
{{- define "automem.labels" -}}
helm.sh/chart: {{ include "automem.chart" .ctx }}
{{ include "automem.selectorLabels" . }}
app.kubernetes.io/version: {{ .ctx.Chart.AppVersion | quote }}
app.kubernetes.io/managed-by: {{ .ctx.Release.Service }}
{{- with .ctx.Values.additionalLabels }}
{{ toYaml . }}
{{- end }}
{{- end }}

{{/* Selector labels: name, instance and component; call with (dict "ctx" . "component" "api"). */}}
{{- define "automem.selectorLabels" -}}
app.kubernetes.io/name: {{ include "automem.name" .ctx }}
app.kubernetes.io/instance: {{ .ctx.Release.Name }}
app.kubernetes.io/component: {{ .component }}
{{- end }}

{{- define "automem.serviceAccountName" -}}
{{- if .Values.serviceAccount.create }}
{{- default (include "automem.fullname" .) .Values.serviceAccount.name }}
{{- else }}
{{- default "default" .Values.serviceAccount.name }}
{{- end }}
{{- end }}

{{- define "automem.image" -}}
{{- printf "%s:%s" .Values.image.repository (default .Chart.AppVersion .Values.image.tag) }}
{{- end }}

{{/* The Secret the pods read: the chart's own, or secrets.existingSecret. */}}
{{- define "automem.secretName" -}}
{{- default (include "automem.fullname" .) .Values.secrets.existingSecret }}
{{- end }}

{{/* The official qdrant chart's full name as a subchart of this release (its qdrant.fullname). */}}
{{- define "automem.qdrant.fullname" -}}
{{- if .Values.qdrant.fullnameOverride }}
{{- .Values.qdrant.fullnameOverride | trunc 63 | trimSuffix "-" }}
{{- else }}
{{- $name := default "qdrant" .Values.qdrant.nameOverride }}
{{- if contains $name .Release.Name }}
{{- .Release.Name | trunc 63 | trimSuffix "-" }}
{{- else }}
{{- printf "%s-%s" .Release.Name $name | trunc 63 | trimSuffix "-" }}
{{- end }}
{{- end }}
{{- end }}

{{- define "automem.qdrant.url" -}}
{{- if .Values.qdrant.enabled }}
{{- printf "http://%s:6333" (include "automem.qdrant.fullname" .) }}
{{- else }}
{{- required "qdrant.enabled=false needs externalQdrant.url" .Values.externalQdrant.url }}
{{- end }}
{{- end }}

{{/*
Environment of the api and worker containers: every setting from the ConfigMap and the Secret,
then the connection settings the chart derives (explicit `env` wins over `envFrom`).
*/}}
{{- define "automem.env" -}}
envFrom:
  - configMapRef:
      name: {{ include "automem.fullname" . }}
  - secretRef:
      name: {{ include "automem.secretName" . }}
env:
  - name: AUTOMEM_VECTOR_BACKEND
    value: qdrant
  - name: QDRANT_URL
    value: {{ include "automem.qdrant.url" . | quote }}
  {{- if and .Values.qdrant.enabled .Values.qdrant.apiKey }}
  - name: QDRANT_API_KEY
    valueFrom:
      secretKeyRef:
        name: {{ include "automem.qdrant.fullname" . }}-apikey
        key: api-key
  {{- end }}
  {{- if .Values.falkordb.enabled }}
  - name: FALKORDB_HOST
    value: {{ include "automem.fullname" . }}-falkordb
  - name: FALKORDB_PORT
    value: "6379"
  {{- else if .Values.externalFalkordb.host }}
  - name: FALKORDB_HOST
    value: {{ .Values.externalFalkordb.host | quote }}
  - name: FALKORDB_PORT
    value: {{ .Values.externalFalkordb.port | quote }}
  {{- else if not (or .Values.secrets.FALKORDB_URL .Values.secrets.existingSecret) }}
  {{- fail "falkordb.enabled=false needs externalFalkordb.host or secrets.FALKORDB_URL" }}
  {{- end }}
  {{- if .Values.redis.enabled }}
  {{- if .Values.redis.auth.enabled }}
  - name: REDIS_PASSWORD
    valueFrom:
      secretKeyRef:
        name: {{ include "automem.secretName" . }}
        key: REDIS_PASSWORD
  - name: REDIS_URL
    value: "redis://:$(REDIS_PASSWORD)@{{ include "automem.fullname" . }}-redis:6379/0"
  {{- else }}
  - name: REDIS_URL
    value: "redis://{{ include "automem.fullname" . }}-redis:6379/0"
  {{- end }}
  {{- end }}
  {{- with .Values.extraEnv }}
  {{- toYaml . | nindent 2 }}
  {{- end }}
{{- end }}

{{/* Pod annotations that roll the pods when the settings change. */}}
{{- define "automem.podAnnotations" -}}
checksum/config: {{ include (print .Template.BasePath "/configmap.yaml") . | sha256sum }}
{{- if not .Values.secrets.existingSecret }}
checksum/secret-values: {{ toYaml .Values.secrets | sha256sum }}
{{- end }}
{{- with .Values.podAnnotations }}
{{ toYaml . }}
{{- end }}
{{- end }}

{{/* An HTTP probe on GET /health; call with the probe's values. */}}
{{- define "automem.healthProbe" -}}
httpGet:
  path: /health
  port: http
initialDelaySeconds: {{ .initialDelaySeconds }}
periodSeconds: {{ .periodSeconds }}
timeoutSeconds: {{ .timeoutSeconds }}
failureThreshold: {{ .failureThreshold }}
successThreshold: {{ .successThreshold }}
{{- end }}

{{/* An exec probe running `automem worker --check`; call with the probe's values. */}}
{{- define "automem.workerProbe" -}}
exec:
  command: ["automem", "worker", "--check"]
initialDelaySeconds: {{ .initialDelaySeconds }}
periodSeconds: {{ .periodSeconds }}
timeoutSeconds: {{ .timeoutSeconds }}
failureThreshold: {{ .failureThreshold }}
successThreshold: {{ .successThreshold }}
{{- end }}

{{/* Volumes of the api and worker pods: a writable /tmp (the root filesystem is read-only). */}}
{{- define "automem.volumes" -}}
volumes:
  - name: tmp
    emptyDir: {}
  {{- with .Values.additionalVolumes }}
  {{- toYaml . | nindent 2 }}
  {{- end }}
{{- end }}

{{- define "automem.volumeMounts" -}}
volumeMounts:
  - name: tmp
    mountPath: /tmp
  {{- with .Values.additionalVolumeMounts }}
  {{- toYaml . | nindent 2 }}
  {{- end }}
{{- end }}
