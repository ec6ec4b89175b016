package controller

import (
	"context"
	"fmt"
	"regexp"
	"strings"

	batchv1 "k8s.io/api/batch/v1"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	ctrl "sigs.k8s.io/controller-runtime/pkg/client"

	v1alpha1 "ptah.run/operator/operator/api/v1alpha1"
)

// The manager never reads a Secret, so a missing Secret or key is seen
// where the kubelet reports it: the operation's container waits in
// CreateContainerConfigError, and its message names the object and key.
// The container never started, so even an Apply changed nothing, and the
// Job is ended at once rather than left to its deadline.
var (
	missingObject = regexp.MustCompile(`^(secret|configmap) "([^"]+)" not found`)
	missingKey    = regexp.MustCompile(`^couldn't find key (\S+) in (Secret|ConfigMap) [^/\s]+/(\S+)`)
)

// misconfigured reports the configuration failure of a Job whose Pod cannot
// be configured, or nil.
func (r *SchemaReconciler) misconfigured(ctx context.Context, s *v1alpha1.PtahSchema, j *batchv1.Job) (*failure, error) {
	var pods corev1.PodList
	if err := r.Client.List(ctx, &pods, ctrl.InNamespace(s.Namespace), ctrl.MatchingLabels{"batch.kubernetes.io/job-name": j.Name}); err != nil {
		return nil, fmt.Errorf("list the Pods of Job %s/%s: %w", s.Namespace, j.Name, err)
	}
	for _, p := range pods.Items {
		if !metav1.IsControlledBy(&p, j) {
			continue
		}
		for _, st := range append(p.Status.InitContainerStatuses, p.Status.ContainerStatuses...) {
			if w := st.State.Waiting; w != nil && w.Reason == "CreateContainerConfigError" && st.LastTerminationState.Terminated == nil {
				f := configurationFailure(s, w.Message)
				return &f, nil
			}
		}
	}
	return nil, nil
}

// configurationFailure turns the kubelet's message into one that names the
// object, the key, the spec field that names it and the fix.
func configurationFailure(s *v1alpha1.PtahSchema, kubelet string) failure {
	if m := missingObject.FindStringSubmatch(kubelet); m != nil {
		return missing(s, kindName(m[1]), m[2], "")
	}
	if m := missingKey.FindStringSubmatch(kubelet); m != nil {
		return missing(s, m[2], m[3], m[1])
	}
	return failure{configuration: true, notStarted: true, code: "pod_configuration", message: "the operation's Pod cannot be configured: " + kubelet}
}

// missing is the configuration failure of a Secret or ConfigMap (kind) the
// spec names that does not exist, or, with key, lacks that key.
func missing(s *v1alpha1.PtahSchema, kind, name, key string) failure {
	f := failure{configuration: true, notStarted: true}
	if key == "" {
		f.code = strings.ToLower(kind) + "_missing"
		f.message = fmt.Sprintf("%s %s/%s, named by %s, does not exist: create it, or name one that does", kind, s.Namespace, name, namedBy(s, kind, name))
		return f
	}
	f.code = strings.ToLower(kind) + "_key_missing"
	f.message = fmt.Sprintf("%s %s/%s, named by %s, has no key %s: add the key, or name the one that holds the value", kind, s.Namespace, name, namedBy(s, kind, name), key)
	return f
}

func kindName(lower string) string {
	if lower == "configmap" {
		return "ConfigMap"
	}
	return "Secret"
}

// namedBy lists the spec fields that name the object.
func namedBy(s *v1alpha1.PtahSchema, kind, name string) string {
	var fields []string
	add := func(field, n string) {
		if n == name {
			fields = append(fields, field)
		}
	}
	switch kind {
	case "Secret":
		add("spec.target.urlFrom", s.Spec.Target.URLFrom.Name)
		if a := s.Spec.Desired.RegistryAuthFrom; a != nil {
			add("spec.desired.registryAuthFrom", a.Name)
		}
		if d := s.Spec.Execution.DevDatabase; d != nil && d.URLFrom != nil {
			add("spec.execution.devDatabase.urlFrom", d.URLFrom.Name)
		}
	case "ConfigMap":
		if p := s.Spec.Desired.VerificationPolicyFrom; p != nil {
			add("spec.desired.verificationPolicyFrom", p.Name)
		}
	}
	if len(fields) == 0 {
		return "the operation's Pod"
	}
	return strings.Join(fields, " and ")
}

// missingPolicy is the configuration failure of a Verify, or of a Resolve
// that verifies, whose policy ConfigMap or key is missing (the manager
// caches ConfigMaps, so this is found before any Job is made; the policy's
// ConfigMap is immutable, so the cache cannot hold a stale copy of its
// content).
func (r *SchemaReconciler) missingPolicy(ctx context.Context, s *v1alpha1.PtahSchema, c *v1alpha1.ActiveOperation) (*failure, error) {
	ref := s.Spec.Desired.VerificationPolicyFrom
	if ref == nil || c.Type != v1alpha1.OperationVerify && c.Type != v1alpha1.OperationResolve {
		return nil, nil
	}
	var cm corev1.ConfigMap
	err := r.Client.Get(ctx, ctrl.ObjectKey{Namespace: s.Namespace, Name: ref.Name}, &cm)
	switch {
	case err != nil && !apierrors.IsNotFound(err):
		return nil, fmt.Errorf("read the verification policy ConfigMap %s/%s: %w", s.Namespace, ref.Name, err)
	case err != nil:
		f := missing(s, "ConfigMap", ref.Name, "")
		return &f, nil
	}
	if _, ok := cm.Data[policyKey]; !ok {
		f := missing(s, "ConfigMap", ref.Name, policyKey)
		return &f, nil
	}
	return nil, nil
}
