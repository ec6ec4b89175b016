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
	rbacv1 "k8s.io/api/rbac/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/client/interceptor"
	"sigs.k8s.io/controller-runtime/pkg/metrics"

	v1alpha1 "ptah.run/operator/operator/api/v1alpha1"
)

// The lifecycle is written once for both kinds (lifecycle.go); each test
// here provokes one of its shared paths for a PtahSchema and a
// PtahMigration alike, where the two copies it replaced had drifted apart.

// failSecond fails the second operation credential's object of kind (a
// Role or a RoleBinding) the first time it is created: the first operation
// runs, and the credential of the one its result claims next, dispatched as
// that result is settled, is refused once. tries counts the objects of that
// kind the reconciler tried to create; unbound collects every Job created
// while any part of its Pod's credential (the ServiceAccount, the Role, the
// RoleBinding, all named by the account) did not exist, read from the API
// server at that moment.
func failSecond[T client.Object](tries *atomic.Int32, unbound *syncList) interceptor.Funcs {
	return interceptor.Funcs{
		Create: func(ctx context.Context, c client.WithWatch, o client.Object, opts ...client.CreateOption) error {
			if _, ok := o.(T); ok && tries.Add(1) == 2 {
				return fmt.Errorf("create %T %s: the API server refused it for now", o, o.GetName())
			}
			if j, ok := o.(*batchv1.Job); ok {
				key := client.ObjectKey{Namespace: j.Namespace, Name: j.Spec.Template.Spec.ServiceAccountName}
				for _, part := range []client.Object{&corev1.ServiceAccount{}, &rbacv1.Role{}, &rbacv1.RoleBinding{}} {
					if err := shared.c.Get(ctx, key, part); err != nil {
						unbound.add(fmt.Sprintf("Job %s created while %T %s could not be read: %v", j.Name, part, key.Name, err))
					}
				}
			}
			return c.Create(ctx, o, opts...)
		},
	}
}

// syncList is a list of findings appended to from reconciles.
type syncList struct {
	mu    sync.Mutex
	items []string
}

func (l *syncList) add(s string) { l.mu.Lock(); l.items = append(l.items, s); l.mu.Unlock() }

func (l *syncList) all() []string {
	l.mu.Lock()
	defer l.mu.Unlock()
	return append([]string(nil), l.items...)
}

// TestCredentialRetriedAfterAResult: the credential of the operation a
// result claims next cannot be issued; the refusal is reported, no Job is
// created for an operation whose credential does not exist, and the
// credential is issued again and the subject converges. (The ended Job's
// cleanup may reconcile the subject before the retry dispatch asks for is
// due, so this does not tell that retry from another event's reconcile:
// TestCredentialRefusalIsRetriedByItsRequeue does. Nor may it count Jobs
// after the Event, as the retry may already have run.)
func TestCredentialRetriedAfterAResult(t *testing.T) {
	t.Parallel()
	for name, refuse := range map[string]func(*atomic.Int32, *syncList) interceptor.Funcs{
		"PtahSchema":                      failSecond[*rbacv1.Role],
		"PtahSchema, RoleBinding refused": failSecond[*rbacv1.RoleBinding],
	} {
		t.Run(name, func(t *testing.T) {
			t.Parallel()
			var tries atomic.Int32
			var unbound syncList
			e := newEnv(t, func(o *envOption) {
				o.reconcile = func(r *SchemaReconciler) {
					r.Client = interceptor.NewClient(noWatch{r.Client}, refuse(&tries, &unbound))
				}
			})
			e.schema()
			ev := e.awaitEvent(v1alpha1.EventResultCredentialFailed, converge)
			assertEvent(t, ev, "shop")
			inSync(e)
			if n := tries.Load(); n < 3 {
				t.Errorf("%d creations, want the refused one tried again", n)
			}
			for _, u := range unbound.all() {
				t.Error(u)
			}
		})
	}
	t.Run("PtahMigration", func(t *testing.T) {
		t.Parallel()
		var roles atomic.Int32
		var unbound syncList
		e := newEnv(t, func(o *envOption) {
			o.migration = func(r *MigrationReconciler) {
				r.Client = interceptor.NewClient(noWatch{r.Client}, failSecond[*rbacv1.Role](&roles, &unbound))
			}
		})
		e.migration(pushMigrations(t, "retry-"+e.ns, migrationsV1))
		ev := e.awaitMigrationEvent(v1alpha1.EventResultCredentialFailed, converge, nil)
		assertEvent(t, ev, "shop")
		if !strings.Contains(ev.Message, "apply operation ptah-apply-shop-") {
			t.Errorf("ResultCredentialFailed says %q, want the Apply the Observe's result claimed", ev.Message)
		}
		migrated(e, 3)
		if n := roles.Load(); n < 3 {
			t.Errorf("%d Role creations, want the refused one tried again", n)
		}
		for _, u := range unbound.all() {
			t.Error(u)
		}
	})
}

// refuseAccounts refuses every ServiceAccount creation from the first one
// until window has passed since it, and notes when each was tried.
type refuseAccounts struct {
	window time.Duration
	mu     sync.Mutex
	first  time.Time
	tries  []time.Time
}

func (r *refuseAccounts) funcs() interceptor.Funcs {
	return interceptor.Funcs{
		Create: func(ctx context.Context, c client.WithWatch, o client.Object, opts ...client.CreateOption) error {
			if _, ok := o.(*corev1.ServiceAccount); ok {
				r.mu.Lock()
				now := time.Now()
				r.tries = append(r.tries, now)
				if r.first.IsZero() {
					r.first = now
				}
				refuse := now.Sub(r.first) < r.window
				r.mu.Unlock()
				if refuse {
					return fmt.Errorf("create ServiceAccount %s: the API server refused it for now", o.GetName())
				}
			}
			return c.Create(ctx, o, opts...)
		},
	}
}

// retried is how long after the first refusal the first creation outside
// the window was tried, and how many were tried in all.
func (r *refuseAccounts) retried() (time.Duration, int) {
	r.mu.Lock()
	defer r.mu.Unlock()
	for _, t := range r.tries {
		if t.Sub(r.first) >= r.window {
			return t.Sub(r.first), len(r.tries)
		}
	}
	return 0, len(r.tries)
}

// TestCredentialRefusalIsRetriedByItsRequeue: the first operation's
// credential is refused, so no Job, Pod or record exists whose change could
// reconcile the subject again, and every attempt in the first two seconds
// (an immediate requeue, the claim's own status write) is refused as well.
// The attempt after that can only come from the requeue dispatch asks for
// when it reports the refusal: credentialRetry after the first refusal, and
// not before.
func TestCredentialRefusalIsRetriedByItsRequeue(t *testing.T) {
	t.Parallel()
	check := func(t *testing.T, r *refuseAccounts) {
		t.Helper()
		after, tries := r.retried()
		if after == 0 {
			t.Fatalf("%d ServiceAccount creations, none after the refusals", tries)
		}
		if after < credentialRetry-100*time.Millisecond {
			t.Errorf("the credential was tried again %s after its refusal, want the %s requeue, not an earlier event", after.Round(time.Millisecond), credentialRetry)
		}
	}
	t.Run("PtahSchema", func(t *testing.T) {
		t.Parallel()
		r := &refuseAccounts{window: 2 * time.Second}
		e := newEnv(t, func(o *envOption) {
			o.reconcile = func(sr *SchemaReconciler) { sr.Client = interceptor.NewClient(noWatch{sr.Client}, r.funcs()) }
		})
		e.schema()
		assertEvent(t, e.awaitEvent(v1alpha1.EventResultCredentialFailed, converge), "shop")
		inSync(e)
		check(t, r)
	})
	t.Run("PtahMigration", func(t *testing.T) {
		t.Parallel()
		r := &refuseAccounts{window: 2 * time.Second}
		e := newEnv(t, func(o *envOption) {
			o.migration = func(mr *MigrationReconciler) { mr.Client = interceptor.NewClient(noWatch{mr.Client}, r.funcs()) }
		})
		e.migration(pushMigrations(t, "requeue-"+e.ns, migrationsV1))
		assertEvent(t, e.awaitMigrationEvent(v1alpha1.EventResultCredentialFailed, converge, nil), "shop")
		migrated(e, 3)
		check(t, r)
	})
}

// TestDiscardedOperationsAreObserved: a spec edit while the first
// operation's Job runs discards it; ptah_operation_duration_seconds
// observes it with outcome discarded, for either kind (a PtahSchema's
// discarded operations were not observed when the lifecycle was written
// twice). The subject then converges from a new claim.
func TestDiscardedOperationsAreObserved(t *testing.T) {
	t.Parallel()
	// hold keeps the first Job of prefix from running until release closes.
	hold := func(prefix string, release <-chan struct{}) func(context.Context, *batchv1.Job) {
		var held atomic.Bool
		return func(ctx context.Context, j *batchv1.Job) {
			if strings.HasPrefix(j.Name, prefix) && held.CompareAndSwap(false, true) {
				select {
				case <-release:
				case <-ctx.Done():
				}
			}
		}
	}
	t.Run("PtahSchema", func(t *testing.T) {
		t.Parallel()
		release := make(chan struct{})
		e := newEnv(t, func(o *envOption) { o.kubelet.Hold = hold("ptah-resolve-shop-", release) })
		e.schema()
		held := awaitJob(e, "ptah-resolve-shop-")
		e.update("shop", func(s *v1alpha1.PtahSchema) { s.Spec.Execution.FailureRetryInterval.Duration = 11 * time.Second })
		awaitDiscarded(e, "PtahSchema", "Resolve")
		close(release)
		inSync(e)
		for _, j := range e.jobs("ptah-resolve-shop-") {
			if j.Name == held {
				t.Errorf("the discarded Resolve Job %s is still there", held)
			}
		}
	})
	t.Run("PtahMigration", func(t *testing.T) {
		t.Parallel()
		release := make(chan struct{})
		e := newEnv(t, func(o *envOption) { o.kubelet.Hold = hold("ptah-observe-shop-", release) })
		e.migration(pushMigrations(t, "discard-"+e.ns, migrationsV1))
		awaitJob(e, "ptah-observe-shop-")
		e.updateMigration(func(m *v1alpha1.PtahMigration) {
			m.Spec.Execution.FailureRetryInterval = &metav1.Duration{Duration: 11 * time.Second}
		})
		awaitDiscarded(e, "PtahMigration", "Observe")
		close(release)
		migrated(e, 3)
	})
}

// awaitJob waits for a Job of e's namespace named with prefix and returns
// its name.
func awaitJob(e *env, prefix string) string {
	e.t.Helper()
	for deadline := time.Now().Add(converge); ; time.Sleep(100 * time.Millisecond) {
		if js := e.jobs(prefix); len(js) > 0 {
			return js[0].Name
		}
		if time.Now().After(deadline) {
			e.t.Fatalf("no Job %s* was created; events:\n%s", prefix, e.eventLines())
		}
	}
}

// awaitDiscarded waits for ptah_operation_duration_seconds to hold an
// observation of a discarded typ operation of kind in e's namespace.
func awaitDiscarded(e *env, kind, typ string) {
	e.t.Helper()
	for deadline := time.Now().Add(30 * time.Second); ; time.Sleep(200 * time.Millisecond) {
		families, err := metrics.Registry.Gather()
		must(e.t, err)
		for _, f := range families {
			if f.GetName() != "ptah_operation_duration_seconds" {
				continue
			}
			for _, m := range f.Metric {
				have := map[string]string{}
				for _, lp := range m.Label {
					have[lp.GetName()] = lp.GetValue()
				}
				if have["namespace"] == e.ns && have["kind"] == kind && have["type"] == typ && have["outcome"] == "discarded" && metricValue(m) >= 1 {
					return
				}
			}
		}
		if time.Now().After(deadline) {
			e.t.Fatalf("ptah_operation_duration_seconds has no discarded %s %s in %s; events:\n%s", kind, typ, e.ns, e.eventLines())
		}
	}
}

// TestSecondTemplateChangeKeepsTheApproval: an approved Apply is claimed,
// and its Job is not created before two manager releases with different
// Pod templates take over in turn. The first refreshes the claim's
// snapshot; the second retires the claim and claims the Apply anew, with
// the approval it carried: the plan applies without being approved again
// (a PtahSchema's retired claim dropped its approval when the lifecycle
// was written twice, and the schema waited for a second one).
func TestSecondTemplateChangeKeepsTheApproval(t *testing.T) {
	t.Parallel()
	plain, tls := []string{shared.reg.Host}, []string(nil)
	applyStopped := failJobCreates(func(j *batchv1.Job) bool { return strings.HasPrefix(j.Name, "ptah-apply-") })
	e := newEnv(t, func(o *envOption) { o.reconcile = managerRelease(plain, applyStopped) })
	e.schema(onApproval)
	s := awaitApprovalOf(e)
	approvalFor(e, "ok", s.Status.Plan.Name, s.Status.Plan.Fingerprint)
	claimed := *e.await("shop", "the approved Apply claimed", converge, func(s *v1alpha1.PtahSchema) bool {
		c := s.Status.ActiveOperation
		return c != nil && c.Type == v1alpha1.OperationApply && c.Approval == "ok"
	}).Status.ActiveOperation
	e.restart(managerRelease(tls, applyStopped))
	e.await("shop", "the refreshed snapshot", 30*time.Second, func(s *v1alpha1.PtahSchema) bool {
		c := s.Status.ActiveOperation
		return c != nil && c.ID == claimed.ID && c.SnapshotRefreshed
	})
	e.restart(managerRelease(plain))
	inSync(e)
	applies := e.jobs("ptah-apply-shop-")
	if len(applies) != 1 || applies[0].Name == claimed.JobName {
		t.Errorf("Apply Jobs %v: want one, not the retired claim's %s", names(applies), claimed.JobName)
	}
	if n := len(e.eventsOf(v1alpha1.EventApprovalRequired)); n != 1 {
		t.Errorf("%d ApprovalRequired Events, want the one before the approval", n)
	}
}

// TestRetriedApplyKeepsTheApprovalThroughATemplateChange: the approved
// Apply of a PtahMigration is refused at attempt 1 (another session holds
// the writer lock), so its retry at attempt 2 carries the approval attempt
// 1 consumed. The retry's Job is not created before two manager releases
// with different Pod templates take over in turn: the first refreshes the
// claim's snapshot, the second retires it and claims attempt 2 anew. That
// claim must apply without a second approval (the approval stays consumed
// by attempt 1, which a retry may carry), and every version exactly once.
func TestRetriedApplyKeepsTheApprovalThroughATemplateChange(t *testing.T) {
	t.Parallel()
	var applies atomic.Int32
	var hold atomic.Bool
	hold.Store(true)
	// The first Apply Job is created; later ones are refused while hold is set.
	held := failMigrationJobCreates(func(j *batchv1.Job) bool {
		return strings.HasPrefix(j.Name, "ptah-apply-") && applies.Add(1) > 1 && hold.Load()
	})
	e := newEnv(t, func(o *envOption) { o.migration = held })
	unlock := holdWriterLock(e)
	e.migration(pushMigrations(t, "retried-approval-"+e.ns, migrationsV1), func(m *v1alpha1.PtahMigration) {
		m.Spec.Policy.Apply = v1alpha1.ApplyOnApproval
		m.Spec.Policy.LockTimeout = &metav1.Duration{Duration: time.Second}
	})
	m := e.awaitMigration("ApprovalRequired=True", converge, migrationCondition(v1alpha1.ConditionApprovalRequired, metav1.ConditionTrue, v1alpha1.ReasonAwaitingApproval))
	approveAs(t, e, "ok", m.Status.Plan)
	first := *e.awaitMigration("the approved Apply claimed", converge, func(m *v1alpha1.PtahMigration) bool {
		c := m.Status.ActiveOperation
		return c != nil && c.Type == v1alpha1.OperationApply && c.Attempt == 1 && c.Approval == "ok"
	}).Status.ActiveOperation
	retry := *e.awaitMigration("the Apply retried at attempt 2 with the approval", converge, func(m *v1alpha1.PtahMigration) bool {
		c := m.Status.ActiveOperation
		return c != nil && c.Type == v1alpha1.OperationApply && c.Attempt == 2 && c.Approval == "ok"
	}).Status.ActiveOperation
	if by := consumedBy(t, e, "ok"); by != first.ID {
		t.Fatalf("approval ok consumed by %q, want attempt 1's %s", by, first.ID)
	}
	unlock()

	e.restartMigration(func(r *SchemaReconciler) { r.PlainHTTP = nil }, held)
	e.awaitMigration("the retry's snapshot refreshed", 30*time.Second, func(m *v1alpha1.PtahMigration) bool {
		c := m.Status.ActiveOperation
		return c != nil && c.ID == retry.ID && c.SnapshotRefreshed
	})
	hold.Store(false)
	e.restartMigration(nil, held)
	migrated(e, 3)

	if h, n := e.history(), e.query("SELECT count(*)::text FROM audit"); h != "1 2 3" || n != "1" {
		t.Errorf("history %q, migration 3 ran %s times", h, n)
	}
	jobs := e.jobs("ptah-apply-shop-")
	if len(jobs) != 2 || jobs[0].Name == retry.JobName || jobs[1].Name == retry.JobName {
		t.Errorf("Apply Jobs %v: want attempt 1's and the new attempt 2's, not the retired claim's %s", names(jobs), retry.JobName)
	}
	if by := consumedBy(t, e, "ok"); by != first.ID {
		t.Errorf("approval ok consumed by %q after the retry applied, want attempt 1's %s still", by, first.ID)
	}
}
