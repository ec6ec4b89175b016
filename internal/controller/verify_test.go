package controller

import (
	"context"
	"encoding/json"
	"strings"
	"sync/atomic"
	"testing"

	batchv1 "k8s.io/api/batch/v1"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/client/interceptor"

	"ptah.run/operator/internal/runner"
	v1alpha1 "ptah.run/operator/operator/api/v1alpha1"
)

// TestResolveVerifiesInItsOwnPod: under a verification policy the Resolve
// checks what the tag names against the policy in the same inspection, so
// a first apply runs no Verify Pod; the verdict and the policy it was made
// under are recorded as a Verify's would be.
func TestResolveVerifiesInItsOwnPod(t *testing.T) {
	t.Parallel()
	e := newEnv(t)
	policy(e, "policy", shared.reg.Host+"/shop/")
	e.schema(verifiedBy("policy"))
	s := inSync(e)
	if n := len(e.jobs("ptah-verify-")); n != 0 {
		t.Errorf("%d Verify Jobs, want none: the Resolve verifies", n)
	}
	resolves := e.jobs("ptah-resolve-")
	if len(resolves) == 0 {
		t.Fatal("no Resolve Job")
	}
	for _, j := range resolves {
		op, policyEnv := resolveEnv(t, j)
		if !op.Verify || !policyEnv {
			t.Errorf("Resolve Job %s: verify %v, policy from the ConfigMap %v; want both", j.Name, op.Verify, policyEnv)
		}
	}
	var cm corev1.ConfigMap
	must(t, shared.c.Get(context.Background(), client.ObjectKey{Namespace: e.ns, Name: "policy"}, &cm))
	want := "sha256:" + hexDigest(cm.Data[policyKey])
	if src := s.Status.Source; src == nil || !src.Verified || src.PolicyDigest != want {
		t.Errorf("status.source = %+v, want verified under policy %s", src, want)
	}
	if !conditionIs(s, v1alpha1.ConditionArtifactVerified, metav1.ConditionTrue, v1alpha1.ReasonVerified) {
		t.Errorf("ArtifactVerified is not True (Verified): %s", conditions(s))
	}
}

// TestAResolveThatDidNotVerifyIsFollowedByAVerify: a runner that does not
// know to verify while resolving (an older executor image) reports a digest
// and no verdict; the manager then verifies in a Pod of its own, and nothing
// is planned from an artifact no verdict covers.
func TestAResolveThatDidNotVerifyIsFollowedByAVerify(t *testing.T) {
	t.Parallel()
	var stripped atomic.Int32
	e := newEnv(t, func(o *envOption) {
		o.reconcile = func(r *SchemaReconciler) {
			r.Client = interceptor.NewClient(noWatch{r.Client}, interceptor.Funcs{
				Create: func(ctx context.Context, c client.WithWatch, obj client.Object, opts ...client.CreateOption) error {
					if j, ok := obj.(*batchv1.Job); ok && strings.HasPrefix(j.Name, "ptah-resolve-") {
						withoutVerify(t, j)
						stripped.Add(1)
					}
					return c.Create(ctx, obj, opts...)
				},
			})
		}
	})
	policy(e, "policy", shared.reg.Host+"/elsewhere/")
	e.schema(verifiedBy("policy"))
	e.await("shop", "ArtifactVerified=False (VerificationRefused)", converge,
		condition(v1alpha1.ConditionArtifactVerified, metav1.ConditionFalse, v1alpha1.ReasonVerificationRefused))
	if stripped.Load() == 0 {
		t.Fatal("no Resolve Job was created through the interceptor")
	}
	if n := len(e.jobs("ptah-verify-")); n == 0 {
		t.Errorf("no Verify Job after a Resolve that gave no verdict")
	}
	if n := len(e.jobs("ptah-plan-")) + len(e.jobs("ptah-observe-")) + len(e.jobs("ptah-apply-")); n != 0 {
		t.Errorf("%d Observe, Plan or Apply Jobs ran for an artifact the policy refuses", n)
	}
	// The Resolve was still told to plan, and planned an artifact no verdict
	// covered: that plan is not taken.
	for _, j := range e.jobs("ptah-resolve-") {
		if !jobOperation(t, j).ThenPlan {
			t.Errorf("Resolve %s was not told to plan, so its plan's fate is not tested", j.Name)
		}
	}
	if s := e.get("shop"); len(e.plans()) != 0 || s.Status.Plan != nil {
		t.Errorf("a plan made without a verdict was published: %d objects, status.plan %+v", len(e.plans()), s.Status.Plan)
	}
}

// resolveEnv reads a Job's operation and whether it carries the policy.
func resolveEnv(t *testing.T, j batchv1.Job) (runner.Operation, bool) {
	t.Helper()
	var op runner.Operation
	policyEnv := false
	for _, ev := range j.Spec.Template.Spec.Containers[0].Env {
		switch {
		case ev.Name == runner.EnvOperation:
			must(t, json.Unmarshal([]byte(ev.Value), &op))
		case ev.Name == runner.EnvPolicy && ev.ValueFrom != nil && ev.ValueFrom.ConfigMapKeyRef != nil:
			policyEnv = true
		}
	}
	return op, policyEnv
}

// withoutVerify makes j the Job an older manager's runner would run: its
// operation without the verify field.
func withoutVerify(t *testing.T, j *batchv1.Job) {
	env := j.Spec.Template.Spec.Containers[0].Env
	for i, ev := range env {
		if ev.Name != runner.EnvOperation {
			continue
		}
		var op map[string]any
		must(t, json.Unmarshal([]byte(ev.Value), &op))
		delete(op, "verify")
		b, err := json.Marshal(op)
		must(t, err)
		env[i].Value = string(b)
	}
}
