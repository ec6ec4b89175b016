package controller

import (
	"context"
	"strings"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	rbacv1 "k8s.io/api/rbac/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"

	v1alpha1 "ptah.run/operator/operator/api/v1alpha1"
)

const converge = 3 * time.Minute

func TestFirstApplyConverges(t *testing.T) {
	t.Parallel()
	e := newEnv(t)
	e.schema()
	s := e.await("shop", "InSync=True (ScopedConverged)", converge, condition(v1alpha1.ConditionInSync, metav1.ConditionTrue, v1alpha1.ReasonScopedConverged))
	if !condition(v1alpha1.ConditionApplying, metav1.ConditionFalse, v1alpha1.ReasonJobCompleted)(s) {
		t.Errorf("Applying is not False (JobCompleted): %s", conditions(s))
	}
	if !condition(v1alpha1.ConditionReady, metav1.ConditionTrue, v1alpha1.ReasonScopedConverged)(s) {
		t.Errorf("Ready is not True (ScopedConverged): %s", conditions(s))
	}
	if s.Status.Applied == nil || s.Status.Applied.ArtifactDigest == "" || s.Status.Applied.ArtifactDigest != s.Status.Source.ResolvedDigest {
		t.Errorf("status.applied = %+v, want the resolved digest %s", s.Status.Applied, s.Status.Source.ResolvedDigest)
	}
	if s.Status.Phase != v1alpha1.PhaseInSync {
		t.Errorf("phase %s, want InSync", s.Status.Phase)
	}
	// The database has the desired tables: the Apply really ran.
	shared.pg.Exec(t, e.db, "SELECT id, email FROM customers; SELECT id, customer_id, note FROM orders")
	if len(e.jobs("ptah-apply-shop-")) != 1 || len(e.jobs("ptah-proof-shop-")) != 1 {
		t.Errorf("want one Apply and one Proof Job, have %d and %d", len(e.jobs("ptah-apply-shop-")), len(e.jobs("ptah-proof-shop-")))
	}
	// Nothing was proved before, so the Resolve's Pod planned too: an Observe
	// could only have led to that plan, and a Plan Pod would only have made it.
	if n := len(e.jobs("ptah-observe-shop-")) + len(e.jobs("ptah-plan-shop-")); n != 0 {
		t.Errorf("%d Observe and Plan Jobs in a first apply, want none (Resolve with its plan, Apply, Proof)", n)
	}
	for _, j := range e.jobs("ptah-resolve-shop-") {
		if !jobOperation(t, j).ThenPlan {
			t.Errorf("the first Resolve %s was not told to plan", j.Name)
		}
	}
}

// planJobs counts the Jobs that made a plan: Plans, Proofs, and Resolves
// told to plan after they resolve.
func (e *env) planJobs(t *testing.T) int {
	n := len(e.jobs("ptah-plan-")) + len(e.jobs("ptah-proof-"))
	for _, j := range e.jobs("ptah-resolve-") {
		if jobOperation(t, j).ThenPlan {
			n++
		}
	}
	return n
}

// TestSpecChangeIsProvedByAFreshPlan: after a spec change that leaves the
// artifact alone, InSync at the new generation comes only from a new plan.
func TestSpecChangeIsProvedByAFreshPlan(t *testing.T) {
	t.Parallel()
	e := newEnv(t)
	e.schema()
	e.await("shop", "InSync=True (ScopedConverged)", converge, condition(v1alpha1.ConditionInSync, metav1.ConditionTrue, v1alpha1.ReasonScopedConverged))
	plans := e.planJobs(t)
	e.update("shop", func(s *v1alpha1.PtahSchema) { s.Spec.Policy.ProtectedTables = []string{"audit_log"} })
	// condition (through inSync) requires the condition at the current generation.
	s := inSync(e)
	if s.Generation < 2 {
		t.Fatalf("generation %d: the spec change did not land", s.Generation)
	}
	if now := e.planJobs(t); now <= plans {
		t.Errorf("InSync at generation %d without a new plan (%d plan Jobs before, %d after)", s.Generation, plans, now)
	}
}

func TestUnreachableDatabaseFailsThenRecovers(t *testing.T) {
	t.Parallel()
	e := newEnv(t)
	e.schema(func(s *v1alpha1.PtahSchema) { s.Spec.Target.URLFrom.Name = "shop-db-broken" })
	s := e.await("shop", "ReconciliationFailed=True (OperationFailed)", converge,
		condition(v1alpha1.ConditionReconciliationFailed, metav1.ConditionTrue, v1alpha1.ReasonOperationFailed))
	if s.Status.Phase != v1alpha1.PhaseFailed {
		t.Errorf("phase %s, want Failed", s.Status.Phase)
	}
	// The head a machine reads, then ptah's own cause, naming the server
	// (the closed port) and nothing of the URL's credentials.
	const head = "child_exit: ptah exited with code 2: "
	c := findCondition(s, v1alpha1.ConditionReconciliationFailed)
	if !strings.HasPrefix(c.Message, head) || !strings.Contains(c.Message, "127.0.0.1:1") || strings.Contains(c.Message, "\n") || len(c.Message) > len(head)+maxCause {
		t.Errorf("ReconciliationFailed message %q, want %q and ptah's one-line cause naming 127.0.0.1:1", c.Message, head)
	}
	if s.Status.LastFailure == nil || !strings.Contains(s.Status.LastFailure.Message, "ptah exited with code 2") {
		t.Errorf("status.lastFailure = %+v, want the full failure", s.Status.LastFailure)
	}
	ev := e.awaitEvent(v1alpha1.EventOperationFailed, 10*time.Second)
	assertEvent(t, ev, "shop")
	if ev.Message != c.Message {
		t.Errorf("OperationFailed Event says %q, the condition %q", ev.Message, c.Message)
	}
	// The retry is claimed at once with the next attempt, as the replay shows.
	if op := s.Status.ActiveOperation; op == nil || op.Attempt != 2 || op.Type != v1alpha1.OperationPlan {
		t.Errorf("activeOperation = %+v, want the Plan retry at attempt 2", op)
	}

	e.update("shop", func(s *v1alpha1.PtahSchema) { s.Spec.Target.URLFrom.Name = "shop-db" })
	s = e.await("shop", "InSync=True (ScopedConverged)", converge, condition(v1alpha1.ConditionInSync, metav1.ConditionTrue, v1alpha1.ReasonScopedConverged))
	if !condition(v1alpha1.ConditionReconciliationFailed, metav1.ConditionFalse, v1alpha1.ReasonSucceeded)(s) {
		t.Errorf("ReconciliationFailed is not False (Succeeded): %s", conditions(s))
	}
}

func TestDestructivePlanIsBlocked(t *testing.T) {
	t.Parallel()
	e := newEnv(t)
	e.schema()
	e.await("shop", "InSync", converge, condition(v1alpha1.ConditionInSync, metav1.ConditionTrue, v1alpha1.ReasonScopedConverged))
	e.update("shop", func(s *v1alpha1.PtahSchema) { s.Spec.Desired.OCIRef = shared.refV2 })
	s := e.await("shop", "Ready=False (PolicyBlocked)", converge, condition(v1alpha1.ConditionReady, metav1.ConditionFalse, v1alpha1.ReasonPolicyBlocked))
	if s.Status.Phase != v1alpha1.PhaseBlocked {
		t.Errorf("phase %s, want Blocked", s.Status.Phase)
	}
	if s.Status.Plan == nil || !s.Status.Plan.Destructive {
		t.Errorf("status.plan = %+v, want a destructive plan", s.Status.Plan)
	}
	if n := len(e.jobs("ptah-apply-shop-")); n != 1 {
		t.Errorf("%d Apply Jobs, want only the first apply's", n)
	}
	// Allowing it is an input change: the plan is applied.
	e.update("shop", func(s *v1alpha1.PtahSchema) { s.Spec.Policy.AllowDestructive = true })
	e.await("shop", "InSync after allowDestructive", converge, condition(v1alpha1.ConditionInSync, metav1.ConditionTrue, v1alpha1.ReasonScopedConverged))
}

func TestSuspendHolds(t *testing.T) {
	t.Parallel()
	e := newEnv(t)
	e.schema(func(s *v1alpha1.PtahSchema) { s.Spec.Suspend = true })
	s := e.await("shop", "Suspended=True", 20*time.Second, condition(v1alpha1.ConditionSuspended, metav1.ConditionTrue, v1alpha1.ReasonSuspendedBySpec))
	if s.Status.Phase != v1alpha1.PhaseSuspended {
		t.Errorf("phase %s, want Suspended", s.Status.Phase)
	}
	time.Sleep(3 * time.Second) // give a wrong manager the chance to start something
	if n := len(e.jobs("")); n != 0 {
		t.Errorf("%d Jobs while suspended, want none", n)
	}
	e.update("shop", func(s *v1alpha1.PtahSchema) { s.Spec.Suspend = false })
	e.await("shop", "InSync after resume", converge, condition(v1alpha1.ConditionInSync, metav1.ConditionTrue, v1alpha1.ReasonScopedConverged))
}

func TestRestartBetweenClaimAndJobResumes(t *testing.T) {
	t.Parallel()
	// The first manager writes its claim and is stopped before its Job
	// reaches the API server.
	e := newEnv(t, func(o *envOption) { o.reconcile = failJobCreates(anyJob) })
	e.schema()
	s := e.await("shop", "a claim in status", 20*time.Second, func(s *v1alpha1.PtahSchema) bool { return s.Status.ActiveOperation != nil })
	claimed := *s.Status.ActiveOperation
	time.Sleep(time.Second)
	if n := len(e.jobs("")); n != 0 {
		t.Fatalf("the stopped manager created %d Jobs", n)
	}
	e.restart(nil)
	e.await("shop", "the claimed Job's result consumed", converge, func(s *v1alpha1.PtahSchema) bool {
		return s.Status.ActiveOperation == nil || s.Status.ActiveOperation.Type != v1alpha1.OperationResolve
	})
	resolves := e.jobs("ptah-resolve-shop-")
	if len(resolves) != 1 || resolves[0].Name != claimed.JobName {
		t.Errorf("Resolve Jobs %v, want exactly the claimed %s", names(resolves), claimed.JobName)
	}
	e.await("shop", "InSync", converge, condition(v1alpha1.ConditionInSync, metav1.ConditionTrue, v1alpha1.ReasonScopedConverged))
}

func findCondition(s *v1alpha1.PtahSchema, typ string) metav1.Condition {
	for _, c := range s.Status.Conditions {
		if c.Type == typ {
			return c
		}
	}
	return metav1.Condition{}
}

// names lists the names of a list's items (Jobs, ServiceAccounts, ...).
func names[T any, P interface {
	*T
	GetName() string
}](items []T) []string {
	var out []string
	for i := range items {
		out = append(out, P(&items[i]).GetName())
	}
	return out
}

func TestHandMadeDriftIsReappliedUnderAlways(t *testing.T) {
	t.Parallel()
	e := newEnv(t)
	e.schema(func(s *v1alpha1.PtahSchema) { s.Spec.Interval = &metav1.Duration{Duration: 30 * time.Second} })
	inSync(e)
	// Someone drops a column by hand.
	shared.pg.Exec(t, e.db, "ALTER TABLE orders DROP COLUMN note")
	s := e.await("shop", "DriftDetected=True after spec.interval", 30*time.Second+converge,
		condition(v1alpha1.ConditionDriftDetected, metav1.ConditionTrue, v1alpha1.ReasonDriftFound))
	// The re-check of a proved schema is the Observe that found it.
	if len(e.jobs("ptah-observe-shop-")) == 0 {
		t.Errorf("drift found with no Observe Job: the re-check of a proved schema must observe")
	}
	if s.Status.Phase == v1alpha1.PhaseInSync || conditionIs(s, v1alpha1.ConditionInSync, metav1.ConditionTrue, v1alpha1.ReasonScopedConverged) {
		t.Errorf("phase %s, %s while drift is detected", s.Status.Phase, conditions(s))
	}
	s = inSync(e)
	shared.pg.Exec(t, e.db, "SELECT note FROM orders") // the column is back
	if n := len(e.jobs("ptah-apply-shop-")); n != 2 {
		t.Errorf("%d Apply Jobs, want the first apply and the re-apply", n)
	}
	if s.Status.Applied == nil || s.Status.Applied.ArtifactDigest != s.Status.Source.ResolvedDigest {
		t.Errorf("status.applied = %+v after the re-apply", s.Status.Applied)
	}
}

func TestFinishedOperationsArePruned(t *testing.T) {
	t.Parallel()
	e := newEnv(t, func(o *envOption) {
		o.reconcile = func(r *SchemaReconciler) { r.Retention = time.Nanosecond }
	})
	e.schema()
	inSync(e)
	ctx := context.Background()
	deadline := time.Now().Add(30 * time.Second)
	for {
		var recs v1alpha1.PtahResultRecordList
		must(t, shared.c.List(ctx, &recs, client.InNamespace(e.ns)))
		jobs := e.jobs("")
		if len(jobs) == 0 && len(recs.Items) == 0 {
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("after convergence %d Jobs (%v) and %d result records remain, want none", len(jobs), names(jobs), len(recs.Items))
		}
		time.Sleep(200 * time.Millisecond)
	}
	if n := len(e.kubelet.Runs()); n < 3 {
		t.Errorf("the kubelet ran %d Jobs, want at least Resolve (which plans too), Apply, Proof", n)
	}
	// Pruning left the schema's own state alone.
	if s := e.get("shop"); !condition(v1alpha1.ConditionInSync, metav1.ConditionTrue, v1alpha1.ReasonScopedConverged)(s) {
		t.Errorf("after pruning: %s", conditions(s))
	}
}

// TestServiceAccountNameRunsTheOperations: with spec.execution.serviceAccountName
// every operation's Pod runs as the owner's account, the result credential is
// bound to that account only while an operation runs, and the account itself
// is left alone. The account has no permission of its own, so convergence
// proves the runner wrote its results through the operation's binding.
func TestServiceAccountNameRunsTheOperations(t *testing.T) {
	t.Parallel()
	e := newEnv(t)
	ctx := context.Background()
	const identity = "shop-db-identity"
	must(t, shared.c.Create(ctx, &corev1.ServiceAccount{ObjectMeta: metav1.ObjectMeta{Name: identity, Namespace: e.ns}}))
	e.schema(func(s *v1alpha1.PtahSchema) { s.Spec.Execution.ServiceAccountName = identity })
	inSync(e)

	jobs := e.jobs("")
	if len(jobs) < 3 {
		t.Fatalf("%d Jobs, want at least Resolve (which plans too), Apply, Proof", len(jobs))
	}
	for _, j := range jobs {
		if sa := j.Spec.Template.Spec.ServiceAccountName; sa != identity {
			t.Errorf("Job %s runs as %q, want %q", j.Name, sa, identity)
		}
	}
	var pods corev1.PodList
	must(t, shared.c.List(ctx, &pods, client.InNamespace(e.ns)))
	for _, p := range pods.Items {
		if p.Spec.ServiceAccountName != identity {
			t.Errorf("Pod %s ran as %q, want %q", p.Name, p.Spec.ServiceAccountName, identity)
		}
	}
	var sas corev1.ServiceAccountList
	must(t, shared.c.List(ctx, &sas, client.InNamespace(e.ns)))
	if len(sas.Items) != 1 || sas.Items[0].Name != identity {
		t.Errorf("service accounts %v, want only the owner's %s: none created per operation, the owner's kept", names(sas.Items), identity)
	}
	deadline := time.Now().Add(15 * time.Second)
	for {
		var rbs rbacv1.RoleBindingList
		must(t, shared.c.List(ctx, &rbs, client.InNamespace(e.ns)))
		if len(rbs.Items) == 0 {
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("%d RoleBindings remain after convergence (first binds %v): the credential was not revoked", len(rbs.Items), rbs.Items[0].Subjects)
		}
		time.Sleep(200 * time.Millisecond)
	}
}

// TestMissingServiceAccountIsAConfigurationError: naming an account that does
// not exist creates no Job, the schema says why as ConfigurationError, and
// creating the account lets the retry converge with no other change.
func TestMissingServiceAccountIsAConfigurationError(t *testing.T) {
	t.Parallel()
	e := newEnv(t)
	const identity = "shop-db-identity"
	e.schema(func(s *v1alpha1.PtahSchema) {
		s.Spec.Execution.ServiceAccountName = identity
		s.Spec.Execution.FailureRetryInterval = &metav1.Duration{Duration: 10 * time.Second}
	})
	s := e.await("shop", "ReconciliationFailed=True (ConfigurationError)", converge,
		condition(v1alpha1.ConditionReconciliationFailed, metav1.ConditionTrue, v1alpha1.ReasonConfigurationError))
	c := findCondition(s, v1alpha1.ConditionReconciliationFailed)
	if !strings.Contains(c.Message, "ServiceAccount "+e.ns+"/"+identity+", which does not exist") {
		t.Errorf("the condition does not name the missing account: %q", c.Message)
	}
	if s.Status.Phase != v1alpha1.PhaseFailed {
		t.Errorf("phase %s, want Failed", s.Status.Phase)
	}
	if n := len(e.jobs("")); n != 0 {
		t.Errorf("%d Jobs were created for an account that does not exist", n)
	}
	ev := e.awaitEvent(v1alpha1.EventOperationFailed, 10*time.Second)
	assertEvent(t, ev, "shop")
	must(t, shared.c.Create(context.Background(), &corev1.ServiceAccount{ObjectMeta: metav1.ObjectMeta{Name: identity, Namespace: e.ns}}))
	s = inSync(e)
	if !condition(v1alpha1.ConditionReconciliationFailed, metav1.ConditionFalse, v1alpha1.ReasonSucceeded)(s) {
		t.Errorf("after the account was created: %s", conditions(s))
	}
}

// TestPlansNothingNamesArePruned: past the retention, plans nothing names
// (not the current or applied one, no approval) are kept only as the newest
// PlanHistory of them; a plan an approval names is kept whatever its age.
func TestPlansNothingNamesArePruned(t *testing.T) {
	for _, approved := range []bool{false, true} {
		name := "older unnamed plan pruned"
		if approved {
			name = "approved plan kept outside the history"
		}
		t.Run(name, func(t *testing.T) {
			t.Parallel()
			e := newEnv(t, func(o *envOption) {
				o.reconcile = func(r *SchemaReconciler) { r.Retention, r.PlanHistory = time.Nanosecond, 1 }
			})
			e.schema()
			proof := inSync(e).Status.Plan.Name
			var firstChange string
			for _, p := range e.plans() {
				if p.Name != proof {
					firstChange = p.Name
				}
			}
			if firstChange == "" || len(e.plans()) != 2 {
				t.Fatalf("after the first apply: plans %v, want the applied change and the proof %s", e.plans(), proof)
			}
			// Let the next plan be created a second later: creation times order the history.
			time.Sleep(time.Second)
			e.update("shop", func(s *v1alpha1.PtahSchema) { s.Spec.Desired.OCIRef = shared.refV2 })
			blocked := e.await("shop", "Ready=False (PolicyBlocked)", converge, condition(v1alpha1.ConditionReady, metav1.ConditionFalse, v1alpha1.ReasonPolicyBlocked))
			abandoned := blocked.Status.Plan.Name
			if approved {
				approvalFor(e, "keep", abandoned, blocked.Status.Plan.Fingerprint)
			}
			e.update("shop", func(s *v1alpha1.PtahSchema) { s.Spec.Desired.OCIRef = shared.refV1 })
			now := inSync(e)
			have := func() map[string]bool {
				m := map[string]bool{}
				for _, p := range e.plans() {
					m[p.Name] = true
				}
				return m
			}
			// Unnamed: the first change, and the abandoned plan unless approved.
			// The history keeps one: the abandoned plan, or the first change
			// when the approval keeps the abandoned one.
			want := map[string]bool{firstChange: approved, abandoned: true, now.Status.Plan.Name: true}
			if approved {
				// Nothing is to change: give the pruning after the proof its chance.
				time.Sleep(3 * time.Second)
			} else {
				deadline := time.Now().Add(15 * time.Second)
				for have()[firstChange] && time.Now().Before(deadline) {
					time.Sleep(200 * time.Millisecond)
				}
			}
			plans := have()
			for p, kept := range want {
				if plans[p] != kept {
					t.Errorf("plan %s there: %v, want %v (first change %s, abandoned %s, current %s; plans %v)", p, plans[p], kept, firstChange, abandoned, now.Status.Plan.Name, plans)
				}
			}
		})
	}
}
