package controller

import (
	"context"
	"errors"
	"fmt"

	batchv1 "k8s.io/api/batch/v1"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/builder"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/event"
	"sigs.k8s.io/controller-runtime/pkg/handler"
	"sigs.k8s.io/controller-runtime/pkg/predicate"
	"sigs.k8s.io/controller-runtime/pkg/reconcile"

	"ptah.run/operator/internal/runner"
	v1alpha1 "ptah.run/operator/operator/api/v1alpha1"
)

// NewMigration builds the PtahMigration reconciler from a manager's clients.
func NewMigration(mgr ctrl.Manager, b Binding, plainHTTP []string) *MigrationReconciler {
	return &MigrationReconciler{engine: newEngine(mgr, b, plainHTTP)}
}

// SetupWithManager reconciles a migration when its spec changes, when it is
// being deleted, when one of its Jobs or Pods does, when a result record,
// an approval or an acknowledgment names it, or when record admission in
// its namespace changes verdict (r.Admission, which it needs). Its own
// writes do not wake it: every write is followed by a requeue.
func (r *MigrationReconciler) SetupWithManager(mgr ctrl.Manager) error {
	if r.Admission == nil {
		return errors.New("the PtahMigration reconciler needs the record admission check (Admission): add NewRecordAdmission to the manager and hand it to both reconcilers")
	}
	deleting := predicate.Funcs{UpdateFunc: func(e event.UpdateEvent) bool { return !e.ObjectNew.GetDeletionTimestamp().IsZero() }}
	return ctrl.NewControllerManagedBy(mgr).
		Named("ptahmigration").
		For(&v1alpha1.PtahMigration{}, builder.WithPredicates(predicate.Or[client.Object](predicate.GenerationChangedPredicate{}, deleting))).
		Owns(&batchv1.Job{}).
		Watches(&v1alpha1.PtahResultRecord{}, handler.EnqueueRequestsFromMapFunc(migrationRecordSubject)).
		Watches(&v1alpha1.PtahMigrationApproval{}, handler.EnqueueRequestsFromMapFunc(func(_ context.Context, o client.Object) []reconcile.Request {
			a, ok := o.(*v1alpha1.PtahMigrationApproval)
			if !ok {
				return nil
			}
			return named(a.Namespace, a.Spec.MigrationName)
		})).
		Watches(&v1alpha1.PtahMigrationRunAcknowledgment{}, handler.EnqueueRequestsFromMapFunc(func(_ context.Context, o client.Object) []reconcile.Request {
			a, ok := o.(*v1alpha1.PtahMigrationRunAcknowledgment)
			if !ok {
				return nil
			}
			return named(a.Namespace, a.Spec.MigrationName)
		})).
		Watches(&corev1.Pod{}, handler.EnqueueRequestsFromMapFunc(func(_ context.Context, o client.Object) []reconcile.Request {
			return named(o.GetNamespace(), o.GetLabels()[runner.LabelMigration])
		})).
		WatchesRawSource(r.Admission.source(func(ctx context.Context, ns string) []reconcile.Request {
			return inNamespace(ctx, r.Client, ns, &v1alpha1.PtahMigrationList{})
		})).
		Complete(r)
}

func named(namespace, name string) []reconcile.Request {
	if name == "" {
		return nil
	}
	return []reconcile.Request{{NamespacedName: types.NamespacedName{Namespace: namespace, Name: name}}}
}

func migrationRecordSubject(_ context.Context, o client.Object) []reconcile.Request {
	rec, ok := o.(*v1alpha1.PtahResultRecord)
	if !ok || rec.Spec.Subject.Kind != v1alpha1.KindPtahMigration {
		return nil
	}
	return named(rec.Namespace, rec.Spec.Subject.Name)
}

// prune deletes the finished Jobs and the result records of m's ended
// operations once they are older than the retention. Plans stay: each is
// one reading's pending set, and a migration publishes one per change of
// its history.
func (r *MigrationReconciler) prune(ctx context.Context, m *v1alpha1.PtahMigration) {
	r.engine.prune(ctx, m)
}

// migrationHealth derives the kstatus conditions, as health does for a
// schema: an unresolved run, a refused history, an approval awaited, Never
// and suspend stall; a running or retried operation reconciles.
func migrationHealth(m *v1alpha1.PtahMigration) {
	reconciling, stalled := "", ""
	why := fmt.Sprintf("phase %s", m.Status.Phase)
	switch {
	case m.Status.UnresolvedRun != nil && m.Status.ActiveOperation == nil:
		stalled = v1alpha1.ReasonRunOutcomeUnknown
	case conditionIs(m, v1alpha1.ConditionReconciliationFailed, metav1.ConditionTrue, v1alpha1.ReasonConfigurationError):
		stalled = v1alpha1.ReasonConfigurationError
	case m.Status.ActiveOperation != nil:
		reconciling, why = v1alpha1.ReasonProgressing, fmt.Sprintf("%s operation %s", m.Status.ActiveOperation.Type, m.Status.ActiveOperation.JobName)
	case m.Status.Phase == v1alpha1.PhaseBlocked:
		// The refusal that blocks (which history or file), as PlanReady or
		// Ready names it; never another refusal's reason.
		stalled = v1alpha1.ReasonMigrationBlocked
		for _, typ := range []string{v1alpha1.ConditionReady, v1alpha1.ConditionPlanReady} {
			if c := meta.FindStatusCondition(m.Status.Conditions, typ); c != nil && c.Status == metav1.ConditionFalse && c.Reason != "" {
				stalled = c.Reason
			}
		}
	case m.Status.Phase == v1alpha1.PhaseAwaitingApproval:
		stalled = v1alpha1.ReasonAwaitingApproval
	case m.Status.Phase == v1alpha1.PhaseReadyToApply:
		stalled = v1alpha1.ReasonPolicyBlocked
	case m.Status.Phase == v1alpha1.PhaseSuspended:
		stalled = v1alpha1.ReasonSuspendedBySpec
	case m.Status.Phase == v1alpha1.PhaseFailed:
		reconciling = v1alpha1.ReasonOperationFailed
	case m.Status.Phase == v1alpha1.PhaseInSync:
	default:
		reconciling = v1alpha1.ReasonProgressing
	}
	set := func(typ, reason, idle string) {
		if reason != "" {
			setCondition(m, typ, metav1.ConditionTrue, reason, why)
			return
		}
		setCondition(m, typ, metav1.ConditionFalse, idle, fmt.Sprintf("phase %s", m.Status.Phase))
	}
	set(v1alpha1.ConditionReconciling, reconciling, v1alpha1.ReasonIdle)
	set(v1alpha1.ConditionStalled, stalled, v1alpha1.ReasonNotStalled)
}
