{{/* The manager's name: the Deployment, its ServiceAccount and ClusterRole. */}}
{{- define "ptah.manager" -}}
{{- printf "%s-manager" .Release.Name | trunc 63 | trimSuffix "-" -}}
{{- end -}}

{{- define "ptah.labels" -}}
app.kubernetes.io/name: {{ include "ptah.manager" . }}
app.kubernetes.io/instance: {{ .Release.Name }}
app.kubernetes.io/version: {{ .Chart.AppVersion | quote }}
app.kubernetes.io/managed-by: {{ .Release.Service }}
helm.sh/chart: {{ printf "%s-%s" .Chart.Name .Chart.Version }}
{{- end -}}

{{- define "ptah.selectorLabels" -}}
app.kubernetes.io/name: {{ include "ptah.manager" . }}
app.kubernetes.io/instance: {{ .Release.Name }}
{{- end -}}

{{- define "ptah.image" -}}
{{- if .Values.image.digest -}}
{{ .Values.image.repository }}@{{ .Values.image.digest }}
{{- else -}}
{{ .Values.image.repository }}:{{ .Values.image.tag | default .Chart.AppVersion }}
{{- end -}}
{{- end -}}

{{- /* How the stamps are installed: "v1" or "v1beta1" (MutatingAdmissionPolicy),
       or "webhook" (the manager's mutating webhook, where neither is served).
       A cluster lists kinds; helm template offline lists only versions and
       says the version it was given with --kube-version. */ -}}
{{- define "ptah.admissionAPI" -}}
{{- $api := .Values.admission.api -}}
{{- if ne $api "auto" -}}
{{- $api -}}
{{- else if .Capabilities.APIVersions.Has "admissionregistration.k8s.io/v1/MutatingAdmissionPolicy" -}}
v1
{{- else if .Capabilities.APIVersions.Has "admissionregistration.k8s.io/v1beta1/MutatingAdmissionPolicy" -}}
v1beta1
{{- else if and (not (.Capabilities.APIVersions.Has "v1/Pod")) (semverCompare ">=1.36.0-0" .Capabilities.KubeVersion.Version) -}}
v1
{{- else -}}
webhook
{{- end -}}
{{- end -}}

{{- /* The stamp webhook's Service and Secret, in the release's namespace. */ -}}
{{- define "ptah.stampWebhook" -}}
{{- printf "%s-stamp" (include "ptah.manager" .) | trunc 63 | trimSuffix "-" -}}
{{- end -}}

{{- /* True when this release serves the stamp webhook. */ -}}
{{- define "ptah.servesStampWebhook" -}}
{{- if and .Values.admission.install (eq (include "ptah.admissionAPI" .) "webhook") }}true{{ end -}}
{{- end -}}
