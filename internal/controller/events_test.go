package controller

import (
	"context"
	"fmt"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	batchv1 "k8s.io/api/batch/v1"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/meta"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/utils/ptr"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"ptah.run/operator/internal/runner"
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

// TestEventApprovalStale: a reviewer approves the plan they read, after the
// spec changed and a new plan replaced it.
func TestEventApprovalStale(t *testing.T) {
	t.Parallel()
	e := newEnv(t)
	e.schema(onApproval)
	earlier := *awaitApprovalOf(e).Status.Plan
	e.update("shop", func(s *v1alpha1.PtahSchema) { s.Spec.Desired.OCIRef = shared.refV2 })
	s := e.await("shop", "a new plan awaiting approval", converge, func(s *v1alpha1.PtahSchema) bool {
		return condition(v1alpha1.ConditionApprovalRequired, metav1.ConditionTrue, v1alpha1.ReasonAwaitingApproval)(s) &&
			s.Status.Plan != nil && s.Status.Plan.Name != earlier.Name
	})
	var p v1alpha1.PtahSchemaPlan
	must(t, shared.c.Get(context.Background(), client.ObjectKey{Namespace: e.ns, Name: earlier.Name}, &p))
	if p.Spec.Fingerprint != earlier.Fingerprint {
		t.Fatalf("the earlier plan %s has fingerprint %s, status said %s", p.Name, p.Spec.Fingerprint, earlier.Fingerprint)
	}
	approvalFor(e, "old", earlier.Name, earlier.Fingerprint)
	ev := e.awaitEvent(v1alpha1.EventApprovalStale, 30*time.Second)
	assertEvent(t, ev, "old")
	if !strings.Contains(ev.Message, earlier.Name) || !strings.Contains(ev.Message, s.Status.Plan.Name) {
		t.Errorf("ApprovalStale does not name the approved plan %s and the current one %s: %q", earlier.Name, s.Status.Plan.Name, ev.Message)
	}
	time.Sleep(2 * time.Second)
	var a v1alpha1.PtahSchemaApproval
	must(t, shared.c.Get(context.Background(), client.ObjectKey{Namespace: e.ns, Name: "old"}, &a))
	if a.Annotations[AnnotationConsumedBy] != "" || len(e.jobs("ptah-apply-")) != 0 {
		t.Errorf("a stale approval was consumed (annotations %v, %d Apply Jobs)", a.Annotations, len(e.jobs("ptah-apply-")))
	}
	if s := e.get("shop"); !conditionIs(s, v1alpha1.ConditionApprovalRequired, metav1.ConditionTrue, v1alpha1.ReasonAwaitingApproval) {
		t.Errorf("after a stale approval: %s, want the new plan still awaiting approval", conditions(s))
	}
}

func TestEventApprovalRevoked(t *testing.T) {
	t.Parallel()
	// The manager is stopped between the Apply claim and its Job.
	stopAtApply := failJobCreates(func(j *batchv1.Job) bool { return strings.HasPrefix(j.Name, "ptah-apply-") })
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
	// A first apply has no Observe (nothing proved yet, Resolve goes to a
	// Plan), so any Observe Job is the reading that followed the outcome.
	if len(e.jobs("ptah-observe-")) == 0 {
		t.Errorf("no Observe followed the unknown Apply outcome")
	}
}

// TestEventResultReadFailed: the manager's permission to read result records
// is revoked while an operation runs, and that operation's record was lost,
// so the manager must read it from the API server, which refuses.
func TestEventResultReadFailed(t *testing.T) {
	t.Parallel()
	var id *managerIdentity
	var lost atomic.Bool
	finishing, revoked := make(chan struct{}), make(chan struct{})
	e := newEnv(t, func(o *envOption) {
		o.config = asShippedRole(&id)
		o.reconcile = func(r *SchemaReconciler) { r.ResultTimeout = 2 * time.Second }
		// The first Resolve Job completes once the permission is revoked,
		// without its record.
		o.kubelet.Complete = func(j *batchv1.Job) bool {
			if !strings.HasPrefix(j.Name, "ptah-resolve-") || !lost.CompareAndSwap(false, true) {
				return false
			}
			close(finishing)
			<-revoked
			return true
		}
	})
	release := sync.OnceFunc(func() { close(revoked) })
	t.Cleanup(release) // before the kubelet's, which waits for the Job
	e.schema()
	select {
	case <-finishing:
	case <-time.After(converge):
		t.Fatalf("no Resolve Job ran; events:\n%s", e.eventLines())
	}
	id.revoke(t, e.ns, v1alpha1.GroupVersion.Group, "ptahresultrecords", "get", "list", "watch")
	release()
	ev := e.awaitEvent(v1alpha1.EventResultReadFailed, converge)
	assertEvent(t, ev, "shop")
	s := e.get("shop")
	c := s.Status.ActiveOperation
	if c == nil || c.Type != v1alpha1.OperationResolve || !strings.Contains(ev.Message, "PtahResultRecord "+e.ns+"/"+c.JobName) || !strings.Contains(ev.Message, "forbidden") {
		t.Errorf("ResultReadFailed does not identify the refused read of the active Resolve's record (%+v): %q", c, ev.Message)
	}
	if s.Status.Source != nil {
		t.Errorf("a result was consumed while the manager could not read it: status.source %+v", s.Status.Source)
	}
	// Once it may read again, the lost record is found missing and the
	// operation is tried again.
	id.restore(t, e.ns, v1alpha1.GroupVersion.Group, "ptahresultrecords", "get")
	inSync(e)
	if n := len(e.jobs("ptah-resolve-")); n != 2 {
		t.Errorf("%d Resolve Jobs, want the one whose record was lost and its retry", n)
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
	// The Resolve refused it: no plan is produced from it, no plan Job ran,
	// nothing was published.
	if n := len(e.jobs("ptah-plan-")) + len(e.jobs("ptah-observe-")) + len(e.jobs("ptah-apply-")) + len(e.jobs("ptah-verify-")); n != 0 {
		t.Errorf("%d Verify, Observe, Plan or Apply Jobs ran for an artifact its Resolve refused", n)
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

// TestEventResultReadTimedOut: the API server is slow. The runner's record is
// written, but the manager's watch delivers it late and its direct read of the
// record is answered after the time bound.
func TestEventResultReadTimedOut(t *testing.T) {
	t.Parallel()
	api := startSlowAPI(t, "ptahresultrecords", 4*time.Second)
	e := newEnv(t, func(o *envOption) {
		o.config = api.config
		o.reconcile = func(r *SchemaReconciler) { r.ResultTimeout = time.Second }
	})
	api.slow.Store(true)
	e.schema()
	ev := e.awaitEvent(v1alpha1.EventResultReadTimedOut, converge)
	api.slow.Store(false)
	assertEvent(t, ev, "shop")
	if !strings.Contains(ev.Message, "exceeded its time bound of 1s") || !strings.Contains(ev.Message, "ptah-resolve-shop-") {
		t.Errorf("ResultReadTimedOut does not name the read of the Resolve's record and its time bound: %q", ev.Message)
	}
	// The record was slow, not lost: it is consumed, with no second Resolve.
	inSync(e)
	if n := len(e.jobs("ptah-resolve-")); n != 1 {
		t.Errorf("%d Resolve Jobs, want the one whose record was late", n)
	}
}

// TestEventLeaseContinuityLost: the manager is stopped while a Plan runs and
// stays away longer than the database lease, so nothing renews it; the Plan's
// record is written after the lease lapsed.
func TestEventLeaseContinuityLost(t *testing.T) {
	t.Parallel()
	const lease = 4 * time.Second
	withLease := func(r *SchemaReconciler) { r.LeaseDuration = lease }
	started, resume := make(chan string, 1), make(chan struct{})
	var held atomic.Bool
	e := newEnv(t, func(o *envOption) {
		o.reconcile = withLease
		o.kubelet.Hold = func(ctx context.Context, j *batchv1.Job) {
			// The first Resolve, which plans too.
			if !strings.HasPrefix(j.Name, "ptah-resolve-") || !held.CompareAndSwap(false, true) {
				return
			}
			started <- j.Name
			select {
			case <-resume:
			case <-ctx.Done():
			}
		}
	})
	e.schema()
	var plan string
	select {
	case plan = <-started:
	case <-time.After(converge):
		t.Fatalf("no Resolve Job ran; events:\n%s", e.eventLines())
	}
	e.stop()
	time.Sleep(2*lease + 2*time.Second)
	close(resume)
	ctx, cancel := context.WithTimeout(context.Background(), converge)
	defer cancel()
	if run, err := e.kubelet.Wait(ctx, e.ns, plan); err != nil || run.Outcome == nil {
		t.Fatalf("the Resolve Job %s did not deliver its record: %v %+v", plan, err, run)
	}
	e.startManager(withLease)
	ev := e.awaitEvent(v1alpha1.EventLeaseContinuityLost, converge)
	assertEvent(t, ev, "shop")
	if !strings.Contains(ev.Message, plan) || !strings.Contains(ev.Message, "lapsed before") {
		t.Errorf("LeaseContinuityLost does not say the lease of Resolve %s lapsed: %q", plan, ev.Message)
	}
	inSync(e)
	// The plan made after the lapse was discarded: the reading restarted
	// and planned again, and only then was anything applied.
	applies := e.jobs("ptah-apply-")
	if len(applies) != 1 {
		t.Fatalf("%d Apply Jobs, want 1", len(applies))
	}
	later := 0
	for _, p := range append(e.jobs("ptah-plan-"), e.jobs("ptah-resolve-")...) {
		if p.Name != plan && !applies[0].CreationTimestamp.Before(&p.CreationTimestamp) &&
			(strings.HasPrefix(p.Name, "ptah-plan-") || jobOperation(t, p).ThenPlan) {
			later++
		}
	}
	if later == 0 {
		t.Errorf("Apply %s was not preceded by a plan other than the one %s made", applies[0].Name, plan)
	}
}

// managerRelease is a manager release installed with --plain-http-registries
// plainHTTP (a release input that changes the Pod template but not the
// execution binding), adjusted by mods.
func managerRelease(plainHTTP []string, mods ...func(*SchemaReconciler)) func(*SchemaReconciler) {
	return func(r *SchemaReconciler) {
		r.PlainHTTP = plainHTTP
		for _, m := range mods {
			m(r)
		}
	}
}

// TestEventAdmissionSnapshotRefreshed: a manager writes a claim and is
// stopped before it creates the Job; another, installed with a different
// --plain-http-registries (a release input that changes the Pod template but
// not the execution binding), takes over.
func TestEventAdmissionSnapshotRefreshed(t *testing.T) {
	t.Parallel()
	plain, tls := []string{shared.reg.Host}, []string(nil)
	stopped := failJobCreates(anyJob)
	claimOf := func(e *env) v1alpha1.ActiveOperation {
		return *e.await("shop", "a claim in status", 20*time.Second, func(s *v1alpha1.PtahSchema) bool { return s.Status.ActiveOperation != nil }).Status.ActiveOperation
	}
	operation := func(j batchv1.Job) string {
		for _, v := range j.Spec.Template.Spec.Containers[0].Env {
			if v.Name == runner.EnvOperation {
				return v.Value
			}
		}
		return ""
	}
	t.Run("once, and the claim stands", func(t *testing.T) {
		t.Parallel()
		e := newEnv(t, func(o *envOption) { o.reconcile = managerRelease(tls, stopped) })
		e.schema()
		claimed := claimOf(e)
		e.restart(managerRelease(plain))
		ev := e.awaitEvent(v1alpha1.EventAdmissionSnapshotRefreshed, 30*time.Second)
		assertEvent(t, ev, "shop")
		if !strings.Contains(ev.Message, claimed.JobName) || !strings.Contains(ev.Message, claimed.PodTemplateDigest) {
			t.Errorf("AdmissionSnapshotRefreshed does not name the claim %s and its recorded template %s: %q", claimed.JobName, claimed.PodTemplateDigest, ev.Message)
		}
		inSync(e)
		resolves := e.jobs("ptah-resolve-")
		if len(resolves) != 1 || resolves[0].Name != claimed.JobName {
			t.Fatalf("Resolve Jobs %v, want only the claimed %s", names(resolves), claimed.JobName)
		}
		if op := operation(resolves[0]); !strings.Contains(op, `"plainHTTP":true`) {
			t.Errorf("the Job was not built from the new manager's template: %s", op)
		}
	})
	t.Run("a second change retires the claim", func(t *testing.T) {
		t.Parallel()
		e := newEnv(t, func(o *envOption) { o.reconcile = managerRelease(plain, stopped) })
		e.schema()
		claimed := claimOf(e)
		e.restart(managerRelease(tls, stopped))
		e.awaitEvent(v1alpha1.EventAdmissionSnapshotRefreshed, 30*time.Second)
		e.await("shop", "the refreshed snapshot", 20*time.Second, func(s *v1alpha1.PtahSchema) bool {
			return s.Status.ActiveOperation != nil && s.Status.ActiveOperation.SnapshotRefreshed
		})
		e.restart(managerRelease(plain))
		inSync(e)
		resolves := e.jobs("ptah-resolve-")
		if len(resolves) != 1 || resolves[0].Name == claimed.JobName {
			t.Errorf("Resolve Jobs %v: want one, not the retired claim's %s", names(resolves), claimed.JobName)
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
