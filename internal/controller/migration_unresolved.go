package controller

import (
	"context"
	"encoding/json"
	"fmt"
	"slices"
	"time"

	batchv1 "k8s.io/api/batch/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	ctrl "sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/controller/controllerutil"
	"sigs.k8s.io/controller-runtime/pkg/log"
	"sigs.k8s.io/controller-runtime/pkg/reconcile"

	v1alpha1 "ptah.run/operator/operator/api/v1alpha1"
)

// An unresolved run is an Apply that ended without establishing what it
// committed. It is recorded in status.unresolvedRun and, so that a restore
// which drops status does not lose it, copied to an annotation. While one is
// recorded nothing is planned; a clean reading of the history settles it
// (each version's history row is committed in the version's own
// transaction, so the history says exactly what committed), and so does a
// person's PtahMigrationRunAcknowledgment. Deleting the resource discards
// it, with an Event; a finalizer is kept while one is recorded so that the
// Event is recorded.
const (
	AnnotationUnresolvedRun = "operator.ptah.run/unresolved-run"
	FinalizerMigration      = "operator.ptah.run/migration"
)

// migrationDatabase names the target as the manager knows it: by its Secret
// reference, never by a URL it does not read.
func migrationDatabase(m *v1alpha1.PtahMigration) string {
	u := m.Spec.Target.URLFrom
	return fmt.Sprintf("Secret %s key %s", u.Name, u.Key)
}

// uncertain records that Apply c ended without establishing what it
// committed, and reads the history read-only.
func (r *MigrationReconciler) uncertain(ctx context.Context, m *v1alpha1.PtahMigration, c *v1alpha1.ActiveOperation, why string) (reconcile.Result, error) {
	return r.uncertainFrom(ctx, m, c, m.Status.AppliedVersion, why)
}

// uncertainFrom is uncertain for a run that began at version from: a
// result that reports some versions committed has moved
// status.appliedVersion past where the run began.
func (r *MigrationReconciler) uncertainFrom(ctx context.Context, m *v1alpha1.PtahMigration, c *v1alpha1.ActiveOperation, from int64, why string) (reconcile.Result, error) {
	run := &v1alpha1.UnresolvedRun{
		Operation:   c.ID,
		JobName:     c.JobName,
		Attempt:     c.Attempt,
		FromVersion: from,
		Versions:    slices.Clone(planVersions(m)),
		Reason:      bound(why, 4096),
		Database:    migrationDatabase(m),
		Time:        metav1.Time{Time: r.clock()},
	}
	m.Status.UnresolvedRun = run
	setUnresolvedCondition(m)
	msg := fmt.Sprintf("Apply Job %s (operation %s, versions %s over version %d, database %s) ended without establishing what it committed: %s; nothing is planned until a reading of the history or a PtahMigrationRunAcknowledgment naming the operation settles it",
		c.JobName, c.ID, versionList(run.Versions), run.FromVersion, run.Database, why)
	warning(r.Events, m, v1alpha1.EventMigrationRunUncertain, "Apply", "%s", msg)
	setCondition(m, v1alpha1.ConditionReconciliationFailed, metav1.ConditionTrue, v1alpha1.ReasonApplyOutcomeUnknown, why)
	setCondition(m, v1alpha1.ConditionApplying, metav1.ConditionFalse, v1alpha1.ReasonJobCompleted, why)
	setCondition(m, v1alpha1.ConditionReady, metav1.ConditionFalse, v1alpha1.ReasonRunOutcomeUnknown, msg)
	setCondition(m, v1alpha1.ConditionInSync, metav1.ConditionUnknown, v1alpha1.ReasonRunOutcomeUnknown, msg)
	m.Status.LastFailure = &v1alpha1.Failure{Code: "run_outcome_unknown", Message: why, Operation: c.Type, Time: run.Time}
	m.Status.Plan = nil
	m.Status.Phase = v1alpha1.PhaseObserving
	res, err := r.finish(ctx, m, c, v1alpha1.OperationObserve, 1, time.Time{})
	if err != nil {
		return res, err
	}
	return res, r.keepMetadata(ctx, m)
}

func setUnresolvedCondition(m *v1alpha1.PtahMigration) {
	u := m.Status.UnresolvedRun
	setCondition(m, v1alpha1.ConditionUnresolvedRun, metav1.ConditionTrue, v1alpha1.ReasonRunOutcomeUnknown, fmt.Sprintf(
		"Apply operation %s (Job %s, versions %s over version %d) ended without establishing what it committed: %s; a reading of the history or a PtahMigrationRunAcknowledgment with spec.operation %s settles it",
		u.Operation, u.JobName, versionList(u.Versions), u.FromVersion, u.Reason, u.Operation))
}

// settleByReading settles the unresolved run with a clean reading of the
// history (ptah refuses a history with a row left dirty, so this one has
// none): the versions of the run the history shows are those it committed.
func (r *MigrationReconciler) settleByReading(ctx context.Context, m *v1alpha1.PtahMigration, mr *v1alpha1.MigrationResult) error {
	u := m.Status.UnresolvedRun
	var committed []int64
	for _, v := range u.Versions {
		if v <= mr.Current && !slices.ContainsFunc(mr.Pending, func(p v1alpha1.PendingMigration) bool { return p.Version == v }) {
			committed = append(committed, v)
		}
	}
	outcome := v1alpha1.RunPartial
	switch len(committed) {
	case 0:
		outcome = v1alpha1.RunNotApplied
	case len(u.Versions):
		outcome = v1alpha1.RunApplied
	}
	return r.settle(ctx, m, fmt.Sprintf("a reading of the history settled Apply operation %s: outcome %s, versions %s committed, the history at version %d",
		u.Operation, outcome, versionList(committed), mr.Current))
}

// settle clears the unresolved run: the annotation first, so that a crash
// in between leaves the run recorded (and its copy put back) rather than a
// copy that would be restored after the run was settled.
func (r *MigrationReconciler) settle(ctx context.Context, m *v1alpha1.PtahMigration, msg string) error {
	if _, ok := m.Annotations[AnnotationUnresolvedRun]; ok {
		if err := r.patchMetadata(ctx, m, func(o *v1alpha1.PtahMigration) { delete(o.Annotations, AnnotationUnresolvedRun) }); err != nil {
			return fmt.Errorf("remove the %s annotation of PtahMigration %s/%s: %w", AnnotationUnresolvedRun, m.Namespace, m.Name, err)
		}
	}
	m.Status.UnresolvedRun = nil
	setCondition(m, v1alpha1.ConditionUnresolvedRun, metav1.ConditionFalse, v1alpha1.ReasonRunSettled, msg)
	return nil
}

// acknowledged settles the unresolved run with a person's acknowledgment
// naming its operation, stamped by admission, and reads the history again
// before anything is planned.
func (r *MigrationReconciler) acknowledged(ctx context.Context, m *v1alpha1.PtahMigration) (bool, error) {
	u := m.Status.UnresolvedRun
	var list v1alpha1.PtahMigrationRunAcknowledgmentList
	if err := r.Client.List(ctx, &list, ctrl.InNamespace(m.Namespace)); err != nil {
		return false, fmt.Errorf("list PtahMigrationRunAcknowledgments in %s: %w", m.Namespace, err)
	}
	var ack *v1alpha1.PtahMigrationRunAcknowledgment
	for i := range list.Items {
		a := &list.Items[i]
		if a.Spec.MigrationName == m.Name && a.Spec.Operation == u.Operation && a.AcknowledgedBy != nil && a.AcknowledgedBy.Username != "" {
			ack = a
			break
		}
	}
	if ack == nil {
		return false, nil
	}
	what := string(ack.Spec.Outcome)
	if v := ack.Spec.LastCommittedVersion; v != nil {
		what += fmt.Sprintf(", last committed version %d", *v)
	}
	msg := fmt.Sprintf("%s acknowledged Apply operation %s (Job %s, versions %s over version %d) in %s: outcome %s; the history is read again before anything is planned",
		ack.AcknowledgedBy.Username, u.Operation, u.JobName, versionList(u.Versions), u.FromVersion, ack.Name, what)
	if c := m.Status.ActiveOperation; c != nil {
		// A reading that was waiting for its retry: a fresh one follows.
		r.deleteJob(ctx, m, c)
		r.revoke(ctx, m, c)
		m.Status.ActiveOperation = nil
	}
	if err := r.settle(ctx, m, msg); err != nil {
		return false, err
	}
	normal(r.Events, m, v1alpha1.EventUnresolvedRunAcknowledged, "Acknowledge", "%s", msg)
	m.Status.Phase = v1alpha1.PhaseObserving
	_, err := claimNew(ctx, &r.engine, r, m, v1alpha1.OperationObserve, 1, time.Time{})
	return true, err
}

// keepMetadata keeps the finalizer on the migration while a deletion would
// lose something (an Apply claimed, whose Job must not be collected before
// it ends, or an unresolved run, whose discarding gets an Event), and the
// annotation a copy of status.unresolvedRun while one is recorded. Without
// either, a PtahMigration is deleted whether or not a manager runs.
func (r *MigrationReconciler) keepMetadata(ctx context.Context, m *v1alpha1.PtahMigration) error {
	u := m.Status.UnresolvedRun
	c := m.Status.ActiveOperation
	finalizer := u != nil || c != nil && c.Type == v1alpha1.OperationApply
	copied := ""
	if u != nil {
		b, err := json.Marshal(u)
		if err != nil {
			return err
		}
		copied = string(b)
	}
	if finalizer == controllerutil.ContainsFinalizer(m, FinalizerMigration) && (u == nil || m.Annotations[AnnotationUnresolvedRun] == copied) {
		return nil
	}
	err := r.patchMetadata(ctx, m, func(o *v1alpha1.PtahMigration) {
		if finalizer {
			controllerutil.AddFinalizer(o, FinalizerMigration)
		} else {
			controllerutil.RemoveFinalizer(o, FinalizerMigration)
		}
		if u != nil {
			if o.Annotations == nil {
				o.Annotations = map[string]string{}
			}
			o.Annotations[AnnotationUnresolvedRun] = copied
		}
	})
	if err != nil {
		return fmt.Errorf("keep the finalizer and the %s annotation of PtahMigration %s/%s: %w", AnnotationUnresolvedRun, m.Namespace, m.Name, err)
	}
	return nil
}

// patchMetadata patches what mutate changes in m's metadata and takes the
// metadata the API server answers with, keeping the status m holds: it may
// carry decisions not yet written. An answer of another generation means
// the spec changed since m was read: m's spec is not that generation's, so
// a conflict sends the reconcile back to read it, rather than let m carry
// the new generation with the old spec (decided on, and recorded as
// observed, under the new number).
func (r *MigrationReconciler) patchMetadata(ctx context.Context, m *v1alpha1.PtahMigration, mutate func(*v1alpha1.PtahMigration)) error {
	o := m.DeepCopy()
	patch := ctrl.MergeFrom(o.DeepCopy())
	mutate(o)
	if err := r.Client.Patch(ctx, o, patch); err != nil {
		return err
	}
	if o.Generation != m.Generation {
		return apierrors.NewConflict(v1alpha1.GroupVersion.WithResource("ptahmigrations").GroupResource(), m.Name,
			fmt.Errorf("the spec changed to generation %d while generation %d was reconciled", o.Generation, m.Generation))
	}
	m.ObjectMeta = o.ObjectMeta
	return nil
}

// restore puts back the unresolved run of a resource that came back with
// the annotation but without the run in its status. An annotation that
// holds no run status could record was not written by a manager (every copy
// is of a recorded run): it is removed, so that a hand-written one neither
// stops the migration nor lingers.
func (r *MigrationReconciler) restore(ctx context.Context, m *v1alpha1.PtahMigration) (bool, error) {
	copied, ok := m.Annotations[AnnotationUnresolvedRun]
	if !ok || m.Status.UnresolvedRun != nil {
		return false, nil
	}
	u, why := parseUnresolvedRun(copied)
	if u == nil {
		log.FromContext(ctx).Info("the unresolved-run annotation holds no run a manager recorded; it is removed", "annotation", AnnotationUnresolvedRun, "why", why)
		if err := r.patchMetadata(ctx, m, func(o *v1alpha1.PtahMigration) { delete(o.Annotations, AnnotationUnresolvedRun) }); err != nil {
			return false, fmt.Errorf("remove the unreadable %s annotation of PtahMigration %s/%s: %w", AnnotationUnresolvedRun, m.Namespace, m.Name, err)
		}
		return false, nil
	}
	m.Status.UnresolvedRun = u
	setUnresolvedCondition(m)
	setCondition(m, v1alpha1.ConditionReady, metav1.ConditionFalse, v1alpha1.ReasonRunOutcomeUnknown, "an unresolved run was restored from the "+AnnotationUnresolvedRun+" annotation")
	if err := r.save(ctx, m); err != nil {
		return false, err
	}
	warning(r.Events, m, v1alpha1.EventUnresolvedRunRestored, "Restore",
		"PtahMigration %s came back without the record of Apply operation %s (Job %s, versions %s over version %d, database %s) in its status, as a restore that drops status does; it was put back from its %s annotation, and nothing is planned until a reading or a PtahMigrationRunAcknowledgment settles it",
		m.Name, u.Operation, u.JobName, versionList(u.Versions), u.FromVersion, u.Database, AnnotationUnresolvedRun)
	return true, nil
}

// parseUnresolvedRun reads the annotation copy of an unresolved run, and
// refuses one that status.unresolvedRun's schema (the markers on
// v1alpha1.UnresolvedRun) would refuse, saying why: a write of it would
// fail at every reconcile.
func parseUnresolvedRun(copied string) (*v1alpha1.UnresolvedRun, string) {
	var u v1alpha1.UnresolvedRun
	if err := json.Unmarshal([]byte(copied), &u); err != nil {
		return nil, "not a run: " + err.Error()
	}
	switch {
	case u.Operation == "" || len(u.Operation) > 128:
		return nil, "operation is empty or longer than 128"
	case len(u.JobName) > 63:
		return nil, "jobName is longer than 63"
	case u.Attempt < 1:
		return nil, "attempt is below 1"
	case u.FromVersion < 0:
		return nil, "fromVersion is negative"
	case len(u.Versions) > 4096:
		return nil, "more than 4096 versions"
	case len(u.Reason) > 4096:
		return nil, "reason is longer than 4096"
	case len(u.Database) > 512:
		return nil, "database is longer than 512"
	}
	return &u, ""
}

// deleting waits for a running Apply to end (the finalizer keeps its Job
// from being collected with the migration), records the discarding of an
// unresolved run, if one is recorded, and lets the deletion go on.
func (r *MigrationReconciler) deleting(ctx context.Context, m *v1alpha1.PtahMigration) (reconcile.Result, error) {
	if !controllerutil.ContainsFinalizer(m, FinalizerMigration) {
		return reconcile.Result{}, nil
	}
	u := m.Status.UnresolvedRun
	if c := m.Status.ActiveOperation; c != nil && c.Type == v1alpha1.OperationApply {
		var j batchv1.Job
		err := r.APIReader.Get(ctx, types.NamespacedName{Namespace: m.Namespace, Name: c.JobName}, &j)
		if err != nil && !apierrors.IsNotFound(err) {
			return reconcile.Result{}, fmt.Errorf("read Job %s/%s of the Apply of PtahMigration %s being deleted: %w", m.Namespace, c.JobName, m.Name, err)
		}
		if err == nil && metav1.IsControlledBy(&j, m) {
			if finished, _ := jobFinished(&j); !finished {
				log.FromContext(ctx).Info("the PtahMigration is being deleted while its Apply runs; the deletion waits for the Job to end", "job", c.JobName)
				return reconcile.Result{RequeueAfter: podAdmissionRecheck}, nil
			}
			if rec, err := readRecord(ctx, r.APIReader, r.APIReader, r.Admission, r.resultTimeout(), m, c); err != nil || rec == nil {
				u = &v1alpha1.UnresolvedRun{Operation: c.ID, JobName: c.JobName, Attempt: c.Attempt, FromVersion: m.Status.AppliedVersion,
					Versions: planVersions(m), Database: migrationDatabase(m)}
			}
		}
	}
	if u == nil {
		if copied, ok := m.Annotations[AnnotationUnresolvedRun]; ok {
			u, _ = parseUnresolvedRun(copied)
		}
	}
	if u != nil {
		warning(r.Events, m, v1alpha1.EventUnresolvedRunDiscarded, "Delete",
			"deleting PtahMigration %s discarded the record of Apply operation %s (Job %s) nobody accounted for: outcome unknown, versions %s over version %d, database %s",
			m.Name, u.Operation, u.JobName, versionList(u.Versions), u.FromVersion, u.Database)
	}
	err := r.patchMetadata(ctx, m, func(o *v1alpha1.PtahMigration) { controllerutil.RemoveFinalizer(o, FinalizerMigration) })
	if ctrl.IgnoreNotFound(err) != nil {
		return reconcile.Result{}, fmt.Errorf("remove finalizer %s from PtahMigration %s/%s: %w", FinalizerMigration, m.Namespace, m.Name, err)
	}
	return reconcile.Result{}, nil
}
