package controller

import (
	"context"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	batchv1 "k8s.io/api/batch/v1"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"

	v1alpha1 "ptah.run/operator/operator/api/v1alpha1"
)

// One test per Event reason of the reference that concerns PtahSchema. Each
// provokes the reason's trigger against the real API server and checks the
// Event's reason, type and the object it is recorded on.

func inSync(e *env) *v1alpha1.PtahSchema {
	e.t.Helper()
	return e.await("shop", "InSync=True (ScopedConverged)", converge, condition(v1alpha1.ConditionInSync, metav1.ConditionTrue, v1alpha1.ReasonScopedConverged))
}

func TestEventOperationStarted(t *testing.T) {
	t.Parallel()
	e := newEnv(t)
	e.schema()
	ev := e.awaitEvent(v1alpha1.EventOperationStarted, converge)
	assertEvent(t, ev, "shop")
	if !strings.HasPrefix(ev.Message, "Resolve Job ptah-resolve-shop-") || !strings.HasSuffix(ev.Message, " started") {
		t.Errorf("OperationStarted says %q", ev.Message)
	}
	job := strings.TrimSuffix(strings.TrimPrefix(ev.Message, "Resolve Job "), " started")
	if len(e.jobs(job)) != 1 {
		t.Errorf("the Event names Job %s, which does not exist", job)
	}
}

func TestEventOperationCompleted(t *testing.T) {
	t.Parallel()
	e := newEnv(t)
	e.schema()
	inSync(e)
	ev := e.awaitEvent(v1alpha1.EventOperationCompleted, time.Second)
	assertEvent(t, ev, "shop")
	var ops []string
	for _, ev := range e.events() {
		if ev.Reason == v1alpha1.EventOperationCompleted {
			ops = append(ops, ev.Message)
		}
	}
	for _, want := range []string{"resolve operation completed", "apply operation completed", "proof operation completed"} {
		if !contains(ops, want) {
			t.Errorf("no OperationCompleted %q among %q", want, ops)
		}
	}
}

func TestEventOperationFailed(t *testing.T) {
	t.Parallel()
	e := newEnv(t)
	e.schema(func(s *v1alpha1.PtahSchema) { s.Spec.Target.URLFrom.Name = "shop-db-broken" })
	ev := e.awaitEvent(v1alpha1.EventOperationFailed, converge)
	assertEvent(t, ev, "shop")
	if ev.Message != "child_exit: ptah exited with code 2" {
		t.Errorf("OperationFailed says %q", ev.Message)
	}
}

func approvalFor(e *env, name, plan, fingerprint string) *v1alpha1.PtahSchemaApproval {
	a := &v1alpha1.PtahSchemaApproval{
		ObjectMeta: metav1.ObjectMeta{Name: name, Namespace: e.ns},
		Spec:       v1alpha1.PtahSchemaApprovalSpec{SchemaName: "shop", PlanName: plan, PlanFingerprint: fingerprint},
		// Admission stamps this in a cluster; envtest runs no admission for it.
		ApprovedBy: &v1alpha1.Approver{Username: "alice@example.com"},
	}
	must(e.t, shared.c.Create(context.Background(), a))
	return a
}

func onApproval(s *v1alpha1.PtahSchema) { s.Spec.Policy.Apply = v1alpha1.ApplyOnApproval }

func awaitApprovalOf(e *env) *v1alpha1.PtahSchema {
	e.t.Helper()
	return e.await("shop", "ApprovalRequired=True", converge, condition(v1alpha1.ConditionApprovalRequired, metav1.ConditionTrue, v1alpha1.ReasonAwaitingApproval))
}

func TestEventApprovalRequired(t *testing.T) {
	t.Parallel()
	e := newEnv(t)
	e.schema(onApproval)
	s := awaitApprovalOf(e)
	if s.Status.Phase != v1alpha1.PhaseAwaitingApproval {
		t.Errorf("phase %s, want AwaitingApproval", s.Status.Phase)
	}
	ev := e.awaitEvent(v1alpha1.EventApprovalRequired, 5*time.Second)
	assertEvent(t, ev, "shop")
	if !strings.Contains(ev.Message, s.Status.Plan.Name) {
		t.Errorf("ApprovalRequired does not name plan %s: %q", s.Status.Plan.Name, ev.Message)
	}
	if n := len(e.jobs("ptah-apply-")); n != 0 {
		t.Errorf("%d Apply Jobs before any approval", n)
	}
}

func TestEventApprovalAccepted(t *testing.T) {
	t.Parallel()
	e := newEnv(t)
	e.schema(onApproval)
	s := awaitApprovalOf(e)
	approvalFor(e, "ok", s.Status.Plan.Name, s.Status.Plan.Fingerprint)
	ev := e.awaitEvent(v1alpha1.EventApprovalAccepted, converge)
	assertEvent(t, ev, "shop")
	inSync(e)
	var a v1alpha1.PtahSchemaApproval
	must(t, shared.c.Get(context.Background(), client.ObjectKey{Namespace: e.ns, Name: "ok"}, &a))
	if a.Annotations[AnnotationConsumedBy] == "" {
		t.Errorf("the accepted approval is not marked consumed: %v", a.Annotations)
	}
}

func TestEventApprovalStale(t *testing.T) {
	t.Parallel()
	e := newEnv(t)
	e.schema(onApproval)
	s := awaitApprovalOf(e)
	approvalFor(e, "old", s.Name+"-0000000000000000", "sha256:"+strings.Repeat("0", 64))
	ev := e.awaitEvent(v1alpha1.EventApprovalStale, 30*time.Second)
	assertEvent(t, ev, "old")
	if ev.InvolvedObject.Kind != v1alpha1.KindPtahSchemaApproval {
		t.Errorf("ApprovalStale recorded on %s", ev.InvolvedObject.Kind)
	}
	time.Sleep(2 * time.Second)
	var a v1alpha1.PtahSchemaApproval
	must(t, shared.c.Get(context.Background(), client.ObjectKey{Namespace: e.ns, Name: "old"}, &a))
	if a.Annotations[AnnotationConsumedBy] != "" || len(e.jobs("ptah-apply-")) != 0 {
		t.Errorf("a stale approval was consumed (annotations %v, %d Apply Jobs)", a.Annotations, len(e.jobs("ptah-apply-")))
	}
}

func TestEventApprovalRevoked(t *testing.T) {
	t.Parallel()
	stopAtApply := func(r *SchemaReconciler) {
		r.afterClaim = func(ctx context.Context, s *v1alpha1.PtahSchema) error {
			if s.Status.ActiveOperation.Type == v1alpha1.OperationApply {
				<-ctx.Done() // killed before the Job is created
				return errStopped
			}
			return nil
		}
	}
	e := newEnv(t, func(o *envOption) { o.reconcile = stopAtApply })
	e.schema(onApproval)
	s := awaitApprovalOf(e)
	approvalFor(e, "ok", s.Status.Plan.Name, s.Status.Plan.Fingerprint)
	e.await("shop", "the Apply claim", converge, func(s *v1alpha1.PtahSchema) bool {
		return s.Status.ActiveOperation != nil && s.Status.ActiveOperation.Type == v1alpha1.OperationApply
	})
	e.stop()
	must(t, shared.c.Delete(context.Background(), &v1alpha1.PtahSchemaApproval{ObjectMeta: metav1.ObjectMeta{Name: "ok", Namespace: e.ns}}))
	e.restart(nil)
	ev := e.awaitEvent(v1alpha1.EventApprovalRevoked, 30*time.Second)
	assertEvent(t, ev, "shop")
	if n := len(e.jobs("ptah-apply-")); n != 0 {
		t.Errorf("%d Apply Jobs were created for a revoked approval", n)
	}
	awaitApprovalOf(e)
}

func TestEventProtectedTableRefused(t *testing.T) {
	t.Parallel()
	e := newEnv(t)
	shared.pg.Exec(t, e.db, "CREATE TABLE orders (id bigint PRIMARY KEY); ALTER TABLE orders OWNER TO "+e.db)
	e.schema(func(s *v1alpha1.PtahSchema) { s.Spec.Policy.ProtectedTables = []string{"orders"} })
	ev := e.awaitEvent(v1alpha1.EventProtectedTableRefused, converge)
	assertEvent(t, ev, "shop")
	s := e.await("shop", "PlanReady=False (ProtectedTableRefused)", 10*time.Second,
		condition(v1alpha1.ConditionPlanReady, metav1.ConditionFalse, v1alpha1.ReasonProtectedTableRefused))
	var plans v1alpha1.PtahSchemaPlanList
	must(t, shared.c.List(context.Background(), &plans, client.InNamespace(e.ns)))
	if len(plans.Items) != 0 || s.Status.Plan != nil {
		t.Errorf("a plan was published despite the refusal: %d objects, status.plan %+v", len(plans.Items), s.Status.Plan)
	}
}

func TestEventExecutionBindingChanged(t *testing.T) {
	t.Parallel()
	e := newEnv(t)
	e.schema()
	inSync(e)
	e.restart(func(r *SchemaReconciler) { r.Binding.ExecutorImage = "ptah-executor:next" })
	ev := e.awaitEvent(v1alpha1.EventExecutionBindingChanged, 30*time.Second)
	assertEvent(t, ev, "shop")
	e.await("shop", "the new binding in status", 30*time.Second, func(s *v1alpha1.PtahSchema) bool {
		return s.Status.ExecutionBinding != nil && s.Status.ExecutionBinding.ExecutorImage == "ptah-executor:next"
	})
	inSync(e)
}

func TestEventRunnerProtocolMismatch(t *testing.T) {
	t.Parallel()
	e := newEnv(t, func(o *envOption) {
		o.reconcile = func(r *SchemaReconciler) { r.Binding.Protocol = "ptah.run/runner/v0" }
	})
	e.schema()
	ev := e.awaitEvent(v1alpha1.EventRunnerProtocolMismatch, converge)
	assertEvent(t, ev, "shop")
	s := e.await("shop", "ReconciliationFailed=True", 10*time.Second, condition(v1alpha1.ConditionReconciliationFailed, metav1.ConditionTrue, v1alpha1.ReasonOperationFailed))
	if s.Status.ActiveOperation == nil || s.Status.ActiveOperation.Attempt != 2 {
		t.Errorf("a read-only operation refused for its protocol is not retried: %+v", s.Status.ActiveOperation)
	}
}

// quota refuses creations of resource in the namespace: the quota's status
// says it is used up (no quota controller runs in envtest to compute it).
func quota(e *env, resourceName corev1.ResourceName) *corev1.ResourceQuota {
	q := &corev1.ResourceQuota{ObjectMeta: metav1.ObjectMeta{Name: "none", Namespace: e.ns},
		Spec: corev1.ResourceQuotaSpec{Hard: corev1.ResourceList{resourceName: resource.MustParse("0")}}}
	must(e.t, shared.c.Create(context.Background(), q))
	q.Status = corev1.ResourceQuotaStatus{Hard: q.Spec.Hard, Used: corev1.ResourceList{resourceName: resource.MustParse("0")}}
	must(e.t, shared.c.Status().Update(context.Background(), q))
	return q
}

func TestEventResultCredentialFailed(t *testing.T) {
	t.Parallel()
	e := newEnv(t)
	q := quota(e, "count/serviceaccounts")
	e.schema()
	ev := e.awaitEvent(v1alpha1.EventResultCredentialFailed, 30*time.Second)
	assertEvent(t, ev, "shop")
	if n := len(e.jobs("")); n != 0 {
		t.Errorf("%d Jobs were created without a result credential", n)
	}
	must(t, shared.c.Delete(context.Background(), q))
	inSync(e)
}

func TestEventPodAdmissionRefused(t *testing.T) {
	t.Parallel()
	e := newEnv(t)
	q := quota(e, "count/pods")
	e.schema()
	ev := e.awaitEvent(v1alpha1.EventPodAdmissionRefused, converge)
	assertEvent(t, ev, "shop")
	if !strings.Contains(ev.Message, "forbidden") {
		t.Errorf("PodAdmissionRefused does not carry the refusal: %q", ev.Message)
	}
	must(t, shared.c.Delete(context.Background(), q))
	inSync(e)
}

func TestEventApplyOutcomeUnknown(t *testing.T) {
	t.Parallel()
	var failed atomic.Bool
	e := newEnv(t, func(o *envOption) {
		o.kubelet.Fail = func(j *batchv1.Job) (string, string, bool) {
			if strings.HasPrefix(j.Name, "ptah-apply-") && failed.CompareAndSwap(false, true) {
				return batchv1.JobReasonDeadlineExceeded, "Job was active longer than specified deadline", true
			}
			return "", "", false
		}
	})
	e.schema()
	ev := e.awaitEvent(v1alpha1.EventApplyOutcomeUnknown, converge)
	assertEvent(t, ev, "shop")
	// The read-only observation that follows finds the database unchanged,
	// and the schema converges through a second Apply.
	inSync(e)
	if len(e.jobs("ptah-observe-")) < 2 {
		t.Errorf("no Observe followed the unknown Apply outcome")
	}
}

func TestEventResultReadFailed(t *testing.T) {
	t.Parallel()
	forged := false
	var e *env
	e = newEnv(t, func(o *envOption) {
		o.reconcile = func(r *SchemaReconciler) {
			r.afterClaim = func(_ context.Context, s *v1alpha1.PtahSchema) error {
				if forged {
					return nil
				}
				forged = true
				c := s.Status.ActiveOperation
				// A record under the claim's name for another operation.
				return shared.c.Create(context.Background(), &v1alpha1.PtahResultRecord{
					ObjectMeta: metav1.ObjectMeta{Name: c.JobName, Namespace: s.Namespace},
					Spec: v1alpha1.PtahResultRecordSpec{
						Subject:     v1alpha1.ResultSubject{Kind: v1alpha1.KindPtahSchema, Name: s.Name},
						OperationID: "sha256:" + strings.Repeat("f", 64), Digest: c.CoordinationDigest,
						Result: &v1alpha1.OperationResult{ResolvedDigest: "sha256:" + strings.Repeat("e", 64)},
					},
				})
			}
		}
	})
	e.schema()
	ev := e.awaitEvent(v1alpha1.EventResultReadFailed, 30*time.Second)
	assertEvent(t, ev, "shop")
	s := e.get("shop")
	if s.Status.Source != nil && s.Status.Source.ResolvedDigest == "sha256:"+strings.Repeat("e", 64) {
		t.Errorf("the forged record was consumed: %+v", s.Status.Source)
	}
}
