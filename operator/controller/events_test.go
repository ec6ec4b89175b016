package controller

import (
	"context"
	"fmt"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	batchv1 "k8s.io/api/batch/v1"
	coordinationv1 "k8s.io/api/coordination/v1"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/meta"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/utils/ptr"
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
	if !strings.HasPrefix(ev.Message, "child_exit: ptah exited with code 2: ") {
		t.Errorf("OperationFailed says %q, want the head child_exit: ptah exited with code 2 and ptah's cause", ev.Message)
	}
}

// approvalFor creates an approval as alice, through the admission
// policies, claiming to be someone else: admission stamps alice instead.
func approvalFor(e *env, name, plan, fingerprint string) *v1alpha1.PtahSchemaApproval {
	e.t.Helper()
	a := &v1alpha1.PtahSchemaApproval{
		ObjectMeta: metav1.ObjectMeta{Name: name, Namespace: e.ns},
		Spec:       v1alpha1.PtahSchemaApprovalSpec{SchemaName: "shop", PlanName: plan, PlanFingerprint: fingerprint},
		ApprovedBy: &v1alpha1.Approver{Username: "admin", Groups: []string{"system:masters"}},
	}
	must(e.t, shared.alice.Create(context.Background(), a))
	if a.ApprovedBy == nil || a.ApprovedBy.Username != "alice" {
		e.t.Fatalf("admission did not stamp alice as the approver: %+v", a.ApprovedBy)
	}
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
	if !strings.Contains(ev.Message, "by alice ") || !strings.Contains(ev.Message, s.Status.Plan.Name) {
		t.Errorf("ApprovalAccepted does not name the stamped approver alice and plan %s: %q", s.Status.Plan.Name, ev.Message)
	}
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

// policy creates an immutable verification-policy ConfigMap allowing only
// artifacts whose repository starts with prefix.
func policy(e *env, name, prefix string) {
	e.t.Helper()
	must(e.t, shared.c.Create(context.Background(), &corev1.ConfigMap{
		ObjectMeta: metav1.ObjectMeta{Name: name, Namespace: e.ns}, Immutable: ptr.To(true),
		Data: map[string]string{policyKey: fmt.Sprintf(`{"allowedRepositoryPrefixes": [%q]}`, prefix)},
	}))
}

func verifiedBy(name string) schemaOption {
	return func(s *v1alpha1.PtahSchema) { s.Spec.Desired.VerificationPolicyFrom = &v1alpha1.LocalRef{Name: name} }
}

func (e *env) plans() []v1alpha1.PtahSchemaPlan {
	var list v1alpha1.PtahSchemaPlanList
	must(e.t, shared.c.List(context.Background(), &list, client.InNamespace(e.ns)))
	return list.Items
}

func TestEventArtifactVerificationRefused(t *testing.T) {
	t.Parallel()
	e := newEnv(t)
	policy(e, "policy", shared.reg.Host+"/elsewhere/")
	e.schema(verifiedBy("policy"))
	ev := e.awaitEvent(v1alpha1.EventArtifactVerificationRefused, converge)
	assertEvent(t, ev, "shop")
	s := e.await("shop", "ArtifactVerified=False (VerificationRefused)", 10*time.Second,
		condition(v1alpha1.ConditionArtifactVerified, metav1.ConditionFalse, v1alpha1.ReasonVerificationRefused))
	if !strings.Contains(ev.Message, s.Status.Source.ResolvedDigest) {
		t.Errorf("ArtifactVerificationRefused does not name the resolved artifact %s: %q", s.Status.Source.ResolvedDigest, ev.Message)
	}
	// No plan is produced from it: no plan Job ran, nothing was published.
	if n := len(e.jobs("ptah-plan-")) + len(e.jobs("ptah-observe-")) + len(e.jobs("ptah-apply-")); n != 0 {
		t.Errorf("%d Observe, Plan or Apply Jobs ran for a refused artifact", n)
	}
	if len(e.plans()) != 0 || s.Status.Plan != nil {
		t.Errorf("a plan was published from a refused artifact: %d objects, status.plan %+v", len(e.plans()), s.Status.Plan)
	}
	if s.Status.Phase != v1alpha1.PhaseBlocked {
		t.Errorf("phase %s, want Blocked", s.Status.Phase)
	}
}

func TestEventVerificationPolicyInvalidated(t *testing.T) {
	t.Parallel()
	e := newEnv(t)
	policy(e, "policy", shared.reg.Host+"/shop/")
	e.schema(verifiedBy("policy"), onApproval)
	s := awaitApprovalOf(e)
	if !s.Status.Source.Verified || s.Status.Source.PolicyDigest == "" {
		t.Fatalf("status.source = %+v, want verified under a recorded policy digest", s.Status.Source)
	}
	// The ConfigMap is immutable: a new policy is a new ConfigMap of the name.
	must(t, shared.c.Delete(context.Background(), &corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Name: "policy", Namespace: e.ns}}))
	policy(e, "policy", shared.reg.Host+"/elsewhere/")
	ev := e.awaitEvent(v1alpha1.EventVerificationPolicyInvalidated, 30*time.Second)
	assertEvent(t, ev, "shop")
	if !strings.Contains(ev.Message, "ConfigMap policy") {
		t.Errorf("VerificationPolicyInvalidated does not name the ConfigMap: %q", ev.Message)
	}
	// Verified again under the new policy, which refuses the artifact.
	s = e.await("shop", "ArtifactVerified=False (VerificationRefused)", converge,
		condition(v1alpha1.ConditionArtifactVerified, metav1.ConditionFalse, v1alpha1.ReasonVerificationRefused))
	if s.Status.Plan != nil || conditionIs(s, v1alpha1.ConditionPlanReady, metav1.ConditionTrue, v1alpha1.ReasonPlanPublished) {
		t.Errorf("the plan verified under the old policy still stands: status.plan %+v, %s", s.Status.Plan, conditions(s))
	}
}

func TestEventPlanStale(t *testing.T) {
	t.Parallel()
	t.Run("the database changed after planning", func(t *testing.T) {
		t.Parallel()
		e := newEnv(t)
		e.schema(onApproval)
		s := awaitApprovalOf(e)
		old := *s.Status.Plan
		// Someone creates one of the plan's tables by hand in the meantime.
		shared.pg.Exec(t, e.db, "CREATE TABLE customers (id bigint PRIMARY KEY, email text NOT NULL); ALTER TABLE customers OWNER TO "+e.db)
		approvalFor(e, "ok", old.Name, old.Fingerprint)
		ev := e.awaitEvent(v1alpha1.EventPlanStale, converge)
		assertEvent(t, ev, "shop")
		if !strings.Contains(ev.Message, old.Name) {
			t.Errorf("PlanStale does not name plan %s: %q", old.Name, ev.Message)
		}
		// Nothing applied it: orders, which only the plan creates, is absent.
		shared.pg.Exec(t, e.db, `DO $$ BEGIN IF to_regclass('public.orders') IS NOT NULL THEN RAISE EXCEPTION 'the stale plan was applied'; END IF; END $$`)
		s = e.await("shop", "a new plan awaiting approval", converge, func(s *v1alpha1.PtahSchema) bool {
			return condition(v1alpha1.ConditionApprovalRequired, metav1.ConditionTrue, v1alpha1.ReasonAwaitingApproval)(s) &&
				s.Status.Plan != nil && s.Status.Plan.Name != old.Name
		})
		if s.Status.Plan.Statements >= old.Statements {
			t.Errorf("the new plan has %d statements, the stale one %d: the hand-made table is not accounted for", s.Status.Plan.Statements, old.Statements)
		}
	})
	t.Run("the plan object is gone at Apply dispatch", func(t *testing.T) {
		t.Parallel()
		e := newEnv(t)
		e.schema(onApproval)
		s := awaitApprovalOf(e)
		must(t, shared.c.Delete(context.Background(), &v1alpha1.PtahSchemaPlan{ObjectMeta: metav1.ObjectMeta{Name: s.Status.Plan.Name, Namespace: e.ns}}))
		approvalFor(e, "ok", s.Status.Plan.Name, s.Status.Plan.Fingerprint)
		ev := e.awaitEvent(v1alpha1.EventPlanStale, converge)
		assertEvent(t, ev, "shop")
		if n := len(e.jobs("ptah-apply-")); n != 0 {
			t.Errorf("%d Apply Jobs for a plan that is gone", n)
		}
		awaitApprovalOf(e)
	})
}

func TestEventResultReadTimedOut(t *testing.T) {
	t.Parallel()
	var lost atomic.Bool
	e := newEnv(t, func(o *envOption) {
		// The first Resolve Job completes, and its record never arrives.
		o.kubelet.Complete = func(j *batchv1.Job) bool {
			return strings.HasPrefix(j.Name, "ptah-resolve-") && lost.CompareAndSwap(false, true)
		}
		o.reconcile = func(r *SchemaReconciler) { r.ResultTimeout = time.Second }
	})
	e.schema()
	ev := e.awaitEvent(v1alpha1.EventResultReadTimedOut, converge)
	assertEvent(t, ev, "shop")
	if !strings.Contains(ev.Message, "within 1s") {
		t.Errorf("ResultReadTimedOut does not carry its time bound: %q", ev.Message)
	}
	// It is retried: a second Resolve, and the schema converges.
	inSync(e)
	if n := len(e.jobs("ptah-resolve-")); n != 2 {
		t.Errorf("%d Resolve Jobs, want the lost one and its retry", n)
	}
}

func TestEventLeaseContinuityLost(t *testing.T) {
	t.Parallel()
	var taken atomic.Bool
	var e *env
	e = newEnv(t, func(o *envOption) {
		// While the first Plan runs, another holder takes the database lease.
		o.kubelet.Hold = func(ctx context.Context, j *batchv1.Job) {
			if !strings.HasPrefix(j.Name, "ptah-plan-") || !taken.CompareAndSwap(false, true) {
				return
			}
			for {
				var l coordinationv1.Lease
				if err := shared.c.Get(ctx, client.ObjectKey{Namespace: j.Namespace, Name: leaseName(e.get("shop"))}, &l); err != nil {
					t.Errorf("the Plan Job runs without the database Lease: %v", err)
					return
				}
				now := metav1.NowMicro()
				l.Spec.HolderIdentity, l.Spec.AcquireTime, l.Spec.RenewTime = ptr.To("another-manager"), &now, &now
				l.Spec.LeaseDurationSeconds = ptr.To[int32](1)
				err := shared.c.Update(ctx, &l)
				if err == nil {
					return
				}
				if !apierrors.IsConflict(err) {
					t.Errorf("take the Lease: %v", err)
					return
				}
			}
		}
	})
	e.schema()
	ev := e.awaitEvent(v1alpha1.EventLeaseContinuityLost, converge)
	assertEvent(t, ev, "shop")
	if !strings.Contains(ev.Message, "another-manager") {
		t.Errorf("LeaseContinuityLost does not say who holds the lease: %q", ev.Message)
	}
	inSync(e)
	// The plan made without the lease was discarded: the proof restarted
	// with an Observe and a second Plan, and only then was anything applied.
	// The Plan Job that lost the lease may be deleted: count what was started.
	started := map[string]int{}
	for _, m := range e.eventsOf(v1alpha1.EventOperationStarted) {
		op, _, _ := strings.Cut(m, " ")
		started[op]++
	}
	plans, applies := e.jobs("ptah-plan-"), e.jobs("ptah-apply-")
	if started["Plan"] != 2 || started["Observe"] != 2 || started["Apply"] != 1 || len(applies) != 1 {
		t.Fatalf("Plan, Observe, Apply Jobs started: %d, %d, %d; want 2, 2, 1", started["Plan"], started["Observe"], started["Apply"])
	}
	for _, p := range plans {
		if applies[0].CreationTimestamp.Before(&p.CreationTimestamp) {
			t.Errorf("Apply %s was created before Plan %s", applies[0].Name, p.Name)
		}
	}
}

func TestEventAdmissionSnapshotRefreshed(t *testing.T) {
	t.Parallel()
	stopAfterClaim := func(claims *[]*v1alpha1.ActiveOperation) func(*SchemaReconciler) {
		return func(r *SchemaReconciler) {
			r.afterClaim = func(ctx context.Context, s *v1alpha1.PtahSchema) error {
				*claims = append(*claims, s.Status.ActiveOperation.DeepCopy())
				<-ctx.Done() // killed before the Job is created
				return errStopped
			}
		}
	}
	release := func(name string, then func(*SchemaReconciler)) func(*SchemaReconciler) {
		return func(r *SchemaReconciler) {
			r.newRelease = func(j *batchv1.Job) { j.Spec.Template.Annotations["example.com/release"] = name }
			if then != nil {
				then(r)
			}
		}
	}
	t.Run("once, and the claim stands", func(t *testing.T) {
		t.Parallel()
		var claims []*v1alpha1.ActiveOperation
		e := newEnv(t, func(o *envOption) { o.reconcile = stopAfterClaim(&claims) })
		e.schema()
		e.await("shop", "a claim in status", 20*time.Second, func(s *v1alpha1.PtahSchema) bool { return s.Status.ActiveOperation != nil })
		e.restart(release("next", nil))
		ev := e.awaitEvent(v1alpha1.EventAdmissionSnapshotRefreshed, 30*time.Second)
		assertEvent(t, ev, "shop")
		inSync(e)
		resolves := e.jobs("ptah-resolve-")
		if len(resolves) != 1 || len(claims) != 1 || resolves[0].Name != claims[0].JobName {
			t.Fatalf("Resolve Jobs %v, want only the claimed one", names(resolves))
		}
		if resolves[0].Spec.Template.Annotations["example.com/release"] != "next" {
			t.Errorf("the Job was not built from the refreshed template: %v", resolves[0].Spec.Template.Annotations)
		}
	})
	t.Run("a second change retires the claim", func(t *testing.T) {
		t.Parallel()
		var claims []*v1alpha1.ActiveOperation
		e := newEnv(t, func(o *envOption) { o.reconcile = stopAfterClaim(&claims) })
		e.schema()
		e.await("shop", "a claim in status", 20*time.Second, func(s *v1alpha1.PtahSchema) bool { return s.Status.ActiveOperation != nil })
		e.restart(release("next", stopAfterClaim(&claims)))
		e.awaitEvent(v1alpha1.EventAdmissionSnapshotRefreshed, 30*time.Second)
		e.await("shop", "the refreshed snapshot", 20*time.Second, func(s *v1alpha1.PtahSchema) bool {
			return s.Status.ActiveOperation != nil && s.Status.ActiveOperation.SnapshotRefreshed
		})
		e.restart(release("after-next", nil))
		inSync(e)
		resolves := e.jobs("ptah-resolve-")
		if len(resolves) != 1 || resolves[0].Name == claims[0].JobName {
			t.Errorf("Resolve Jobs %v: want one, not the retired claim's %s", names(resolves), claims[0].JobName)
		}
		refreshed := 0
		for _, ev := range e.events() {
			if ev.Reason == v1alpha1.EventAdmissionSnapshotRefreshed {
				refreshed++
			}
		}
		if refreshed != 1 {
			t.Errorf("%d AdmissionSnapshotRefreshed Events, want 1 for the one claim refreshed", refreshed)
		}
	})
}

func TestApprovalWithoutStampedApproverIsRefused(t *testing.T) {
	t.Parallel()
	e := newEnv(t, func(o *envOption) { o.noAdmission = true })
	e.schema(onApproval)
	s := awaitApprovalOf(e)
	// Without the admission policies, an approval can be written with no
	// approver at all.
	must(t, shared.c.Create(context.Background(), &v1alpha1.PtahSchemaApproval{
		ObjectMeta: metav1.ObjectMeta{Name: "unstamped", Namespace: e.ns},
		Spec:       v1alpha1.PtahSchemaApprovalSpec{SchemaName: "shop", PlanName: s.Status.Plan.Name, PlanFingerprint: s.Status.Plan.Fingerprint},
	}))
	e.await("shop", "the unstamped approval refused", 30*time.Second, func(s *v1alpha1.PtahSchema) bool {
		c := meta.FindStatusCondition(s.Status.Conditions, v1alpha1.ConditionApprovalRequired)
		return c != nil && c.Status == metav1.ConditionTrue && strings.Contains(c.Message, "refused unstamped: no approver stamped by admission")
	})
	var a v1alpha1.PtahSchemaApproval
	must(t, shared.c.Get(context.Background(), client.ObjectKey{Namespace: e.ns, Name: "unstamped"}, &a))
	if a.Annotations[AnnotationConsumedBy] != "" || len(e.jobs("ptah-apply-")) != 0 {
		t.Errorf("an unstamped approval was consumed (annotations %v, %d Apply Jobs)", a.Annotations, len(e.jobs("ptah-apply-")))
	}
	for _, ev := range e.events() {
		if ev.Reason == v1alpha1.EventApprovalAccepted {
			t.Errorf("ApprovalAccepted for an unstamped approval: %q", ev.Message)
		}
	}
}
