package controller

import (
	"context"
	"fmt"
	"time"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	ctrl "sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/reconcile"

	v1alpha1 "ptah.run/operator/operator/api/v1alpha1"
)

// policyDigest is a digest of the verification policy s names, or "" when
// the ConfigMap or its key is missing.
func (r *SchemaReconciler) policyDigest(ctx context.Context, s *v1alpha1.PtahSchema) (string, error) {
	ref := s.Spec.Desired.VerificationPolicyFrom
	if ref == nil {
		return "", nil
	}
	var cm corev1.ConfigMap
	err := r.Client.Get(ctx, types.NamespacedName{Namespace: s.Namespace, Name: ref.Name}, &cm)
	if apierrors.IsNotFound(err) {
		return "", nil
	}
	if err != nil {
		return "", fmt.Errorf("read the verification policy ConfigMap %s/%s: %w", s.Namespace, ref.Name, err)
	}
	doc, ok := cm.Data[policyKey]
	if !ok {
		return "", nil
	}
	return "sha256:" + hexDigest(doc), nil
}

// invalidate retires a verification made under a policy that no longer
// digests the same: the artifact and the plan computed from it are
// verified again before anything applies them. An Apply already running
// finishes first (the pipeline follows it before this runs); its proof then
// meets the changed policy.
func (r *SchemaReconciler) invalidate(ctx context.Context, s *v1alpha1.PtahSchema) (bool, error) {
	src := s.Status.Source
	if s.Spec.Desired.VerificationPolicyFrom == nil || src == nil || !src.Verified {
		return false, nil
	}
	now, err := r.policyDigest(ctx, s)
	if err != nil || now == src.PolicyDigest {
		return false, err
	}
	was := src.PolicyDigest
	if now == "" {
		now = "(missing)"
	}
	name := s.Spec.Desired.VerificationPolicyFrom.Name
	msg := fmt.Sprintf("the verification policy in ConfigMap %s changed (%s, was %s) since %s was verified, so artifact and plan verification were invalidated; verifying again",
		name, now, was, src.ResolvedDigest)
	warning(r.Events, s, v1alpha1.EventVerificationPolicyInvalidated, "Verify", "%s", msg)
	discard(ctx, &r.engine, r, s)
	src.Verified, src.PolicyDigest = false, ""
	if s.Status.Phase == v1alpha1.PhaseAwaitingApproval {
		setCondition(s, v1alpha1.ConditionApprovalRequired, metav1.ConditionFalse, v1alpha1.ReasonNotRequired, "the plan awaiting approval was invalidated with its verification")
	}
	s.Status.Plan = nil
	setCondition(s, v1alpha1.ConditionArtifactVerified, metav1.ConditionUnknown, v1alpha1.ReasonPolicyInvalidated, msg)
	setCondition(s, v1alpha1.ConditionPlanReady, metav1.ConditionFalse, v1alpha1.ReasonPolicyInvalidated, msg)
	setCondition(s, v1alpha1.ConditionReady, metav1.ConditionUnknown, v1alpha1.ReasonProgressing, msg)
	s.Status.Phase = v1alpha1.PhasePending
	_, err = claimNew(ctx, &r.engine, r, s, v1alpha1.OperationVerify, 1, time.Time{})
	return true, err
}

// policySubjects maps a ConfigMap to the schemas whose verification policy
// it holds.
func (r *SchemaReconciler) policySubjects(ctx context.Context, o ctrl.Object) []reconcile.Request {
	var list v1alpha1.PtahSchemaList
	if err := r.Client.List(ctx, &list, ctrl.InNamespace(o.GetNamespace())); err != nil {
		return nil
	}
	var out []reconcile.Request
	for _, s := range list.Items {
		if p := s.Spec.Desired.VerificationPolicyFrom; p != nil && p.Name == o.GetName() {
			out = append(out, reconcile.Request{NamespacedName: types.NamespacedName{Namespace: s.Namespace, Name: s.Name}})
		}
	}
	return out
}
