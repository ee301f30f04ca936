{{/* The chart name, or nameOverride. */}}
{{- define "watchword.name" -}}
{{- default .Chart.Name .Values.nameOverride | trunc 63 | trimSuffix "-" }}
{{- end }}

{{/* The name of the release's objects: fullnameOverride, else the release name (with the chart name when it does not contain it). */}}
{{- define "watchword.fullname" -}}
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

{{/* Labels every object carries. */}}
{{- define "watchword.labels" -}}
helm.sh/chart: {{ printf "%s-%s" .Chart.Name .Chart.Version | replace "+" "_" | trunc 63 | trimSuffix "-" }}
{{ include "watchword.selectorLabels" . }}
app.kubernetes.io/version: {{ .Chart.AppVersion | quote }}
app.kubernetes.io/managed-by: {{ .Release.Service }}
{{- end }}

{{/* Labels that select the controller's pods. */}}
{{- define "watchword.selectorLabels" -}}
app.kubernetes.io/name: {{ include "watchword.name" . }}
app.kubernetes.io/instance: {{ .Release.Name }}
{{- end }}

{{/* The ServiceAccount the controller runs as. */}}
{{- define "watchword.serviceAccountName" -}}
{{- if .Values.serviceAccount.create }}
{{- default (include "watchword.fullname" .) .Values.serviceAccount.name }}
{{- else }}
{{- required "serviceAccount.name is required when serviceAccount.create is false" .Values.serviceAccount.name }}
{{- end }}
{{- end }}

{{/* The image reference: repository@digest, or repository:tag (appVersion by default). */}}
{{- define "watchword.image" -}}
{{- if .Values.image.digest }}
{{- printf "%s@%s" .Values.image.repository .Values.image.digest }}
{{- else }}
{{- printf "%s:%s" .Values.image.repository (default .Chart.AppVersion .Values.image.tag) }}
{{- end }}
{{- end }}

{{/* Whether leader election is on: asked for, or more than one replica. */}}
{{- define "watchword.leaderElect" -}}
{{- if or .Values.leaderElection.enabled (gt (int .Values.replicas) 1) }}true{{ end }}
{{- end }}

{{/* Whether the refresh endpoint's Service selects the leader's pod by its label watchword.io/leader, which the leader keeps on its own pod: the endpoint with leader election (only the leader listens). */}}
{{- define "watchword.refreshHookLeaderLabel" -}}
{{- if and .Values.refreshHook.enabled (include "watchword.leaderElect" .) }}true{{ end }}
{{- end }}

{{/* The namespaces a namespaced install serves, as a list: namespaced.namespaces, else the release's namespace. Empty when not namespaced. */}}
{{- define "watchword.watchNamespaces" -}}
{{- if .Values.namespaced.enabled }}
{{- default (list .Release.Namespace) .Values.namespaced.namespaces | uniq | join "," }}
{{- end }}
{{- end }}

{{/* The PromQL label matchers that pick the release's metrics in its alerts: metrics.prometheusRule.selector, else the job the ServiceMonitor's scrapes get (the metrics Service's name). */}}
{{- define "watchword.alertSelector" -}}
{{- default (printf "job=%q" (printf "%s-metrics" (include "watchword.fullname" .))) .Values.metrics.prometheusRule.selector }}
{{- end }}
