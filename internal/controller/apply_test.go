package controller

import (
	"context"
	"database/sql"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	_ "github.com/jackc/pgx/v5/stdlib"
	batchv1 "k8s.io/api/batch/v1"
	coordinationv1 "k8s.io/api/coordination/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/client/interceptor"

	v1alpha1 "ptah.run/operator/operator/api/v1alpha1"
)

// schemaV3 is v1 plus a column: a safe change whose Apply needs a lock on customers.
const schemaV3 = `CREATE TABLE customers (id bigint PRIMARY KEY, email text NOT NULL, name text);
CREATE TABLE orders (id bigint PRIMARY KEY, customer_id bigint NOT NULL REFERENCES customers (id), note text);
`

// lockedApply converges the schema on v1, then holds a lock on customers in
// a session of its own (ACCESS SHARE: reads pass, ALTER TABLE waits) and moves the schema to v3, and returns once the
// Apply Job's statement waits on that lock. unlock releases it.
func lockedApply(t *testing.T, e *env) (apply batchv1.Job, unlock func()) {
	t.Helper()
	inSync(e)
	refV3 := push(t, "v3-"+e.ns, schemaV3)
	db, err := sql.Open("pgx", shared.pg.SuperURL(e.db))
	must(t, err)
	t.Cleanup(func() { db.Close() })
	ctx := context.Background()
	tx, err := db.BeginTx(ctx, nil)
	must(t, err)
	_, err = tx.ExecContext(ctx, "LOCK TABLE customers IN ACCESS SHARE MODE")
	must(t, err)
	e.update("shop", func(s *v1alpha1.PtahSchema) { s.Spec.Desired.OCIRef = refV3 })
	deadline := time.Now().Add(converge)
	for {
		var waiting int
		must(t, db.QueryRowContext(ctx, "SELECT count(*) FROM pg_locks l JOIN pg_class c ON c.oid = l.relation WHERE NOT l.granted AND c.relname = 'customers'").Scan(&waiting))
		if jobs := e.jobs("ptah-apply-shop-"); waiting > 0 && len(jobs) == 2 {
			for _, j := range jobs {
				if finished, _ := jobFinished(&j); !finished {
					apply = j
				}
			}
			if apply.Name != "" {
				break
			}
		}
		if time.Now().After(deadline) {
			t.Fatalf("no Apply Job waiting on the lock within %s; phase %s, conditions %s\nevents:\n%s", converge, e.get("shop").Status.Phase, conditions(e.get("shop")), e.eventLines())
		}
		time.Sleep(200 * time.Millisecond)
	}
	return apply, func() { must(t, tx.Commit()) }
}

// alive fails the test when the Job is gone or being deleted.
func alive(t *testing.T, e *env, j batchv1.Job) {
	t.Helper()
	var now batchv1.Job
	err := shared.c.Get(context.Background(), client.ObjectKey{Namespace: e.ns, Name: j.Name}, &now)
	if apierrors.IsNotFound(err) || err == nil && (now.DeletionTimestamp != nil || now.UID != j.UID) {
		t.Fatalf("the running Apply Job %s was deleted; events:\n%s", j.Name, e.eventLines())
	}
	must(t, err)
}

// appliedOnce checks the database got v3's column, and that one Apply Job
// ran for the v3 plan: the Apply was neither lost nor repeated.
func appliedOnce(t *testing.T, e *env, first batchv1.Job) {
	t.Helper()
	shared.pg.Exec(t, e.db, "SELECT name FROM customers")
	applies := e.jobs("ptah-apply-shop-")
	if len(applies) != 2 {
		t.Errorf("%d Apply Jobs, want 2 (v1 and v3, each once): %v", len(applies), names(applies))
	}
	for _, j := range applies {
		if j.Name == first.Name && j.UID != first.UID {
			t.Errorf("the Apply Job %s was recreated", j.Name)
		}
	}
}

// TestRunningApplyIsNeverKilled: an Apply waiting on a lock another session
// holds is left to finish whatever happens meanwhile; once the lock is
// released it commits, once, and the status records it.
func TestRunningApplyIsNeverKilled(t *testing.T) {
	t.Parallel()
	lockTimeout := func(s *v1alpha1.PtahSchema) { s.Spec.Policy.LockTimeout = &metav1.Duration{Duration: 2 * time.Minute} }

	t.Run("suspended", func(t *testing.T) {
		t.Parallel()
		e := newEnv(t)
		e.schema(lockTimeout)
		apply, unlock := lockedApply(t, e)
		e.update("shop", func(s *v1alpha1.PtahSchema) { s.Spec.Suspend = true })
		time.Sleep(5 * time.Second) // several reconciles: each one used to delete the Job
		alive(t, e, apply)
		unlock()
		s := e.await("shop", "Suspended=True after the Apply's end", converge, condition(v1alpha1.ConditionSuspended, metav1.ConditionTrue, v1alpha1.ReasonSuspendedBySpec))
		if s.Status.Phase != v1alpha1.PhaseSuspended {
			t.Errorf("phase %s, want Suspended", s.Status.Phase)
		}
		appliedOnce(t, e, apply)
		if c := findCondition(s, v1alpha1.ConditionApplying); c.Reason != v1alpha1.ReasonJobCompleted || c.Status != metav1.ConditionFalse {
			t.Errorf("Applying is %s (%s): %s, want False (JobCompleted) for the Apply that finished", c.Status, c.Reason, c.Message)
		}
		if n := len(e.eventsOf(v1alpha1.EventApplyOutcomeUnknown)); n != 0 {
			t.Errorf("%d ApplyOutcomeUnknown Events for an Apply whose record was read", n)
		}
		// Resumed, the schema is proved in sync with a fresh plan.
		e.update("shop", func(s *v1alpha1.PtahSchema) { s.Spec.Suspend = false })
		inSync(e)
	})

	t.Run("spec edited", func(t *testing.T) {
		t.Parallel()
		e := newEnv(t)
		e.schema(lockTimeout)
		apply, unlock := lockedApply(t, e)
		e.update("shop", func(s *v1alpha1.PtahSchema) { s.Spec.Interval = &metav1.Duration{Duration: 10 * time.Minute} })
		time.Sleep(5 * time.Second)
		alive(t, e, apply)
		unlock()
		s := inSync(e)
		appliedOnce(t, e, apply)
		if s.Status.Applied == nil || s.Status.Applied.ArtifactDigest != s.Status.Source.ResolvedDigest {
			t.Errorf("status.applied %+v does not name the v3 artifact %s", s.Status.Applied, s.Status.Source.ResolvedDigest)
		}
	})

	t.Run("manager away longer than the lease", func(t *testing.T) {
		t.Parallel()
		short := func(r *SchemaReconciler) { r.LeaseDuration = 3 * time.Second }
		e := newEnv(t, func(o *envOption) { o.reconcile = short })
		e.schema(lockTimeout)
		apply, unlock := lockedApply(t, e)
		e.stop()
		time.Sleep(8 * time.Second) // the lease lapses with nobody renewing it
		e.startManager(short)
		time.Sleep(5 * time.Second)
		alive(t, e, apply)
		unlock()
		inSync(e)
		appliedOnce(t, e, apply)
	})
}

// unrecordedApply fails, once, the status write that records a created
// Apply Job, as a manager stopped between the two writes would leave it.
func unrecordedApply(failed *atomic.Bool) interceptor.Funcs {
	return interceptor.Funcs{SubResourceUpdate: func(ctx context.Context, c client.Client, sub string, obj client.Object, opts ...client.SubResourceUpdateOption) error {
		s, ok := obj.(*v1alpha1.PtahSchema)
		if ok && s.Status.ActiveOperation != nil && s.Status.ActiveOperation.Type == v1alpha1.OperationApply &&
			s.Status.ActiveOperation.JobUID != "" && failed.CompareAndSwap(false, true) {
			return conflict
		}
		return c.SubResource(sub).Update(ctx, obj, opts...)
	}}
}

// TestUnrecordedApplyIsAdopted: the manager created the Apply Job but its
// status never said so; a suspend arriving next must not take the Job for
// an undispatched claim and delete it. The Apply runs to its end, once.
func TestUnrecordedApplyIsAdopted(t *testing.T) {
	t.Parallel()
	var unrecorded atomic.Bool
	release := make(chan struct{})
	var held atomic.Bool
	e := newEnv(t, func(o *envOption) {
		o.reconcile = func(r *SchemaReconciler) {
			r.Client = interceptor.NewClient(noWatch{r.Client}, unrecordedApply(&unrecorded))
		}
		o.kubelet.Hold = func(ctx context.Context, j *batchv1.Job) {
			if strings.HasPrefix(j.Name, "ptah-apply-") && held.CompareAndSwap(false, true) {
				select {
				case <-release:
				case <-ctx.Done():
				}
			}
		}
	})
	e.schema()
	deadline := time.Now().Add(converge)
	for !unrecorded.Load() || len(e.jobs("ptah-apply-shop-")) == 0 {
		if time.Now().After(deadline) {
			t.Fatalf("no Apply Job was created; events:\n%s", e.eventLines())
		}
		time.Sleep(100 * time.Millisecond)
	}
	apply := e.jobs("ptah-apply-shop-")[0]
	e.update("shop", func(s *v1alpha1.PtahSchema) { s.Spec.Suspend = true })
	time.Sleep(3 * time.Second)
	alive(t, e, apply)
	close(release)
	e.await("shop", "Suspended=True after the Apply's end", converge, condition(v1alpha1.ConditionSuspended, metav1.ConditionTrue, v1alpha1.ReasonSuspendedBySpec))
	shared.pg.Exec(t, e.db, "SELECT id, email FROM customers")
	if applies := e.jobs("ptah-apply-shop-"); len(applies) != 1 || applies[0].UID != apply.UID {
		t.Errorf("Apply Jobs %v, want only %s", names(applies), apply.Name)
	}
}

// eventsOf lists the namespace's Events of reason.
func (e *env) eventsOf(reason string) []string {
	var out []string
	for _, ev := range e.events() {
		if ev.Reason == reason {
			out = append(out, ev.Message)
		}
	}
	return out
}

// TestManagerBackWhileTheApplyStillHoldsTheLease: the manager stops while an
// Apply waits on a lock, and the Apply commits and its Job ends before the
// manager is back, within the lease. The new manager reads the result and
// claims the Proof while the Apply's lease still holds; nothing else will
// happen in the namespace (the Job has ended), so the Proof must be
// dispatched without waiting for an event: found by the lab's fault table
// (the kube-apiserver killed while an Apply committed).
func TestManagerBackWhileTheApplyStillHoldsTheLease(t *testing.T) {
	t.Parallel()
	e := newEnv(t)
	e.schema(func(s *v1alpha1.PtahSchema) { s.Spec.Policy.LockTimeout = &metav1.Duration{Duration: 2 * time.Minute} })
	apply, unlock := lockedApply(t, e)
	e.stop()
	unlock()
	deadline := time.Now().Add(converge)
	for {
		var j batchv1.Job
		must(t, shared.c.Get(context.Background(), client.ObjectKey{Namespace: e.ns, Name: apply.Name}, &j))
		if finished, _ := jobFinished(&j); finished {
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("the Apply Job %s did not finish with the manager away", apply.Name)
		}
		time.Sleep(200 * time.Millisecond)
	}
	var l coordinationv1.Lease
	must(t, shared.c.Get(context.Background(), client.ObjectKey{Namespace: e.ns, Name: leaseName(e.get("shop"))}, &l))
	if expired(&l, time.Now()) || holder(&l) != e.get("shop").Status.ActiveOperation.ID {
		t.Fatalf("the Apply's lease is not held unexpired when the manager comes back: holder %q, renewed %s", holder(&l), l.Spec.RenewTime)
	}
	e.startManager(nil)
	e.await("shop", "InSync=True (ScopedConverged) proved by the Proof", time.Minute, func(s *v1alpha1.PtahSchema) bool {
		return condition(v1alpha1.ConditionInSync, metav1.ConditionTrue, v1alpha1.ReasonScopedConverged)(s) && s.Status.ActiveOperation == nil
	})
	appliedOnce(t, e, apply)
	if proofs := e.jobs("ptah-proof-shop-"); len(proofs) != 2 {
		t.Errorf("%d Proof Jobs, want 2 (v1's and v3's): %v", len(proofs), names(proofs))
	}
}
