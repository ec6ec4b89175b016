package controller

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"strings"
	"time"

	"k8s.io/apimachinery/pkg/api/equality"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	ctrl "sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/reconcile"

	"ptah.run/operator/internal/runner"
	v1alpha1 "ptah.run/operator/operator/api/v1alpha1"
	"ptah.run/operator/operator/report"
)

// consume settles the active operation with its record and claims the next.
func (r *MigrationReconciler) consume(ctx context.Context, m *v1alpha1.PtahMigration, c *v1alpha1.ActiveOperation, rec *v1alpha1.PtahResultRecord) (reconcile.Result, error) {
	var mr *v1alpha1.MigrationResult
	if rec.Spec.Result != nil {
		mr = rec.Spec.Result.Migrations
	}
	if c.Type == v1alpha1.OperationApply {
		return r.applyFinished(ctx, m, c, rec, mr)
	}
	if rec.Spec.Error != nil {
		return r.readingFailed(ctx, m, c, rec)
	}
	if mr == nil {
		return r.failed(ctx, m, c, failure{code: runner.ErrOperation, message: fmt.Sprintf("%s reported no migration history", c.Type)})
	}
	setCondition(m, v1alpha1.ConditionReconciliationFailed, metav1.ConditionFalse, v1alpha1.ReasonSucceeded, fmt.Sprintf("%s operation completed", c.Type))
	return r.observed(ctx, m, c, mr)
}

// observed turns a reading of the history into the next step: a reading
// settles an unresolved run, then the plan goes through the policy gate.
func (r *MigrationReconciler) observed(ctx context.Context, m *v1alpha1.PtahMigration, c *v1alpha1.ActiveOperation, mr *v1alpha1.MigrationResult) (reconcile.Result, error) {
	r.resolve(m) // the artifact was pulled: a refusal of an earlier pull no longer holds
	setCondition(m, v1alpha1.ConditionDatabaseReachable, metav1.ConditionTrue, v1alpha1.ReasonConnected, fmt.Sprintf("the %s operation read the migration history", c.Type))
	m.Status.AppliedVersion = mr.Current
	if m.Status.UnresolvedRun != nil {
		if err := r.settleByReading(ctx, m, mr); err != nil {
			return reconcile.Result{}, err
		}
	}
	target := targetVersion(m)
	if target > mr.Current && !slices.ContainsFunc(mr.Pending, func(p v1alpha1.PendingMigration) bool { return p.Version == target }) {
		return r.targetMissing(ctx, m, c, mr, target)
	}
	var pending []v1alpha1.PendingMigration
	for _, p := range mr.Pending {
		if target == 0 || p.Version <= target {
			pending = append(pending, p)
		}
	}
	if len(pending) == 0 {
		m.Status.Plan = nil
		msg := fmt.Sprintf("a fresh reading of the history at generation %d shows version %d applied and nothing pending up to target %s", m.Generation, mr.Current, targetName(m))
		if target > 0 && mr.Current > target {
			msg = fmt.Sprintf("version %d is applied, above target %d: migrations only go up, so nothing is applied", mr.Current, target)
		}
		setCondition(m, v1alpha1.ConditionInSync, metav1.ConditionTrue, v1alpha1.ReasonScopedConverged, msg)
		setCondition(m, v1alpha1.ConditionReady, metav1.ConditionTrue, v1alpha1.ReasonScopedConverged, msg)
		setCondition(m, v1alpha1.ConditionApprovalRequired, metav1.ConditionFalse, v1alpha1.ReasonNotRequired, "nothing to apply")
		setCondition(m, v1alpha1.ConditionPlanReady, metav1.ConditionFalse, v1alpha1.ReasonNotRequired, "nothing is pending")
		m.Status.Phase = v1alpha1.PhaseInSync
		return r.finish(ctx, m, c, "", 0, r.interval(m))
	}
	p, err := r.publish(ctx, m, mr, pending)
	if foreign := (*foreignPlan)(nil); errors.As(err, &foreign) {
		return r.planRefused(ctx, m, c, foreign.Error())
	}
	if err != nil {
		return reconcile.Result{}, err
	}
	versions := make([]int64, len(pending))
	for i, v := range pending {
		versions[i] = v.Version
	}
	m.Status.Plan = &v1alpha1.MigrationPlanSummary{Name: p.Name, Fingerprint: p.Spec.Fingerprint, Versions: versions}
	pendingMsg := fmt.Sprintf("plan %s applies versions %s over version %d", p.Name, versionList(versions), mr.Current)
	setCondition(m, v1alpha1.ConditionPlanReady, metav1.ConditionTrue, v1alpha1.ReasonPlanPublished, pendingMsg)
	setCondition(m, v1alpha1.ConditionInSync, metav1.ConditionFalse, v1alpha1.ReasonChangesPending, pendingMsg)
	switch m.Spec.Policy.Apply {
	case v1alpha1.ApplyNever:
		m.Status.Phase = v1alpha1.PhaseReadyToApply
		setCondition(m, v1alpha1.ConditionReady, metav1.ConditionFalse, v1alpha1.ReasonPolicyBlocked, pendingMsg+"; spec.policy.apply is Never")
		setCondition(m, v1alpha1.ConditionApprovalRequired, metav1.ConditionFalse, v1alpha1.ReasonNotRequired, "spec.policy.apply is Never")
		return r.finish(ctx, m, c, "", 0, r.interval(m))
	case v1alpha1.ApplyAlways:
		setCondition(m, v1alpha1.ConditionApprovalRequired, metav1.ConditionFalse, v1alpha1.ReasonNotRequired, "spec.policy.apply is Always")
		return r.finish(ctx, m, c, v1alpha1.OperationApply, 1, time.Time{})
	default: // OnApproval
		m.Status.Phase = v1alpha1.PhaseAwaitingApproval
		msg := fmt.Sprintf("%s; it needs a PtahMigrationApproval naming plan %s and fingerprint %s", pendingMsg, p.Name, p.Spec.Fingerprint)
		setCondition(m, v1alpha1.ConditionApprovalRequired, metav1.ConditionTrue, v1alpha1.ReasonAwaitingApproval, msg)
		setCondition(m, v1alpha1.ConditionReady, metav1.ConditionFalse, v1alpha1.ReasonAwaitingApproval, msg)
		res, err := r.finish(ctx, m, c, "", 0, time.Time{})
		if err != nil {
			return res, err
		}
		return r.awaitApproval(ctx, m)
	}
}

// targetMissing refuses a named target version above the applied one that
// the artifact does not hold: applying up to it would report in sync at a
// version nobody declared. Nothing is planned until the spec or the
// artifact changes.
func (r *MigrationReconciler) targetMissing(ctx context.Context, m *v1alpha1.PtahMigration, c *v1alpha1.ActiveOperation, mr *v1alpha1.MigrationResult, target int64) (reconcile.Result, error) {
	above := make([]int64, len(mr.Pending))
	for i, p := range mr.Pending {
		above[i] = p.Version
	}
	msg := fmt.Sprintf("spec.targetVersion %d is not a version of artifact %s (its versions above the applied %d: %s), so nothing is applied; set spec.targetVersion to one of them or to latest",
		target, m.Status.Source.ResolvedDigest, mr.Current, versionList(above))
	return r.blocked(ctx, m, c, "target_version_missing", v1alpha1.ReasonConfigurationError, msg)
}

// blocked stops at a configuration nothing may be planned from until the
// spec, the artifact or the objects it names change: failure code and
// message, and inSync the reason InSync=False gives.
func (r *MigrationReconciler) blocked(ctx context.Context, m *v1alpha1.PtahMigration, c *v1alpha1.ActiveOperation, code, inSync, msg string) (reconcile.Result, error) {
	m.Status.Plan = nil
	m.Status.LastFailure = &v1alpha1.Failure{Code: code, Message: msg, Operation: c.Type, Time: metav1.Time{Time: r.clock()}}
	setCondition(m, v1alpha1.ConditionReconciliationFailed, metav1.ConditionTrue, v1alpha1.ReasonConfigurationError, msg)
	setCondition(m, v1alpha1.ConditionPlanReady, metav1.ConditionFalse, v1alpha1.ReasonConfigurationError, msg)
	setCondition(m, v1alpha1.ConditionInSync, metav1.ConditionFalse, inSync, msg)
	setCondition(m, v1alpha1.ConditionReady, metav1.ConditionFalse, v1alpha1.ReasonConfigurationError, msg)
	setCondition(m, v1alpha1.ConditionApprovalRequired, metav1.ConditionFalse, v1alpha1.ReasonNotRequired, "nothing is planned")
	m.Status.Phase = v1alpha1.PhaseBlocked
	return r.finish(ctx, m, c, "", 0, r.interval(m))
}

func targetName(m *v1alpha1.PtahMigration) string {
	if t := targetVersion(m); t > 0 {
		return fmt.Sprint(t)
	}
	return v1alpha1.TargetVersionLatest
}

// publish creates the immutable PtahMigrationPlan for the pending versions
// of a reading, or finds it already there. Its fingerprint covers what it
// was computed against: the artifact, the history and the target.
func (r *MigrationReconciler) publish(ctx context.Context, m *v1alpha1.PtahMigration, mr *v1alpha1.MigrationResult, pending []v1alpha1.PendingMigration) (*v1alpha1.PtahMigrationPlan, error) {
	digest := m.Status.Source.ResolvedDigest
	fp := "sha256:" + hexDigest(struct {
		Artifact string                      `json:"artifact"`
		History  string                      `json:"history"`
		Base     int64                       `json:"base"`
		Pending  []v1alpha1.PendingMigration `json:"pending"`
	}{digest, mr.HistoryDigest, mr.Current, pending})
	p := &v1alpha1.PtahMigrationPlan{
		ObjectMeta: metav1.ObjectMeta{Name: planName(m.Name, fp), Namespace: m.Namespace,
			Labels: map[string]string{LabelManagedBy: ManagedBy, runner.LabelMigration: m.Name}, OwnerReferences: ownedBy(m)},
		Spec: v1alpha1.PtahMigrationPlanSpec{
			MigrationRef:   v1alpha1.LocalRef{Name: m.Name},
			Fingerprint:    fp,
			ArtifactDigest: digest,
			BaseVersion:    mr.Current,
			HistoryDigest:  mr.HistoryDigest,
			Pending:        pending,
		},
	}
	err := r.Client.Create(ctx, p)
	if apierrors.IsAlreadyExists(err) {
		var have v1alpha1.PtahMigrationPlan
		if err := r.APIReader.Get(ctx, types.NamespacedName{Namespace: p.Namespace, Name: p.Name}, &have); err != nil {
			return nil, fmt.Errorf("read PtahMigrationPlan %s/%s: %w", p.Namespace, p.Name, err)
		}
		// The name is derived from the fingerprint, so anyone who may
		// create plans can take it first: a plan is only taken as this
		// reading's when it says exactly what the reading computed.
		if !equality.Semantic.DeepEqual(have.Spec, p.Spec) {
			return nil, &foreignPlan{name: p.Name}
		}
		return &have, nil
	}
	if err != nil {
		return nil, fmt.Errorf("publish PtahMigrationPlan %s/%s for PtahMigration %s: %w", p.Namespace, p.Name, m.Name, err)
	}
	return p, nil
}

// foreignPlan is a PtahMigrationPlan under the name of the plan a reading
// computed that does not hold that plan.
type foreignPlan struct{ name string }

func (f *foreignPlan) Error() string {
	return fmt.Sprintf("PtahMigrationPlan %s exists and does not hold the plan this reading computed under its name (the manager did not publish it); nothing is planned or applied until it is deleted", f.name)
}

// planRefused stops at a plan object nobody may approve: what it shows is
// not what an Apply would run.
func (r *MigrationReconciler) planRefused(ctx context.Context, m *v1alpha1.PtahMigration, c *v1alpha1.ActiveOperation, msg string) (reconcile.Result, error) {
	warning(r.Events, m, v1alpha1.EventOperationFailed, "Plan", "%s", msg)
	return r.blocked(ctx, m, c, "plan_foreign", v1alpha1.ReasonChangesPending, msg)
}

// readingFailed decides on a reading's error record: a history that refuses
// the artifact blocks until the artifact changes; anything else is tried
// again.
func (r *MigrationReconciler) readingFailed(ctx context.Context, m *v1alpha1.PtahMigration, c *v1alpha1.ActiveOperation, rec *v1alpha1.PtahResultRecord) (reconcile.Result, error) {
	e, child := rec.Spec.Error, rec.Spec.ChildError
	f := failure{code: e.Code, message: e.Message, detail: child}
	childCode := ""
	if child != nil {
		childCode = child.Code
	}
	pulled := !r.artifactRefused(m, rec)
	switch report.Code(childCode) {
	case report.HistoryModified, report.HistoryMissing, report.OutOfOrder, report.Dirty, report.NotTransactional, report.PinnedSetting:
		return r.historyRefused(ctx, m, c, child)
	case report.LockTimeout:
		if u := m.Status.UnresolvedRun; u != nil {
			warning(r.Events, m, v1alpha1.EventTargetLockReleaseOwed, "Observe",
				"the ptah writer lock on the database (%s) was not released: the reading that settles Apply operation %s (Job %s) was not granted it (%s), so a session of that run may still hold it; the release it owes is waited for again in %s",
				u.Database, u.Operation, u.JobName, child.Message, durationOr(m.Spec.Execution.FailureRetryInterval, defaultRetry))
		}
	case report.Connection, report.Auth, report.ConnectionLost:
		if pulled {
			reason, _ := unreachable(report.Code(child.Code))
			setCondition(m, v1alpha1.ConditionDatabaseReachable, metav1.ConditionFalse, reason, child.Code+": "+child.Message)
		}
	}
	if e.Code == runner.ErrProtocolMismatch {
		warning(r.Events, m, v1alpha1.EventRunnerProtocolMismatch, "Run",
			"the runner of %s Job %s refused it before starting ptah: %s", c.Type, c.JobName, e.Message)
	}
	return r.failed(ctx, m, c, f)
}

// refusalReasons gives each refusal of a reading its condition reason.
var refusalReasons = map[report.Code]string{
	report.HistoryModified:  v1alpha1.ReasonAppliedMigrationModified,
	report.HistoryMissing:   v1alpha1.ReasonAppliedMigrationMissing,
	report.OutOfOrder:       v1alpha1.ReasonMigrationOutOfOrder,
	report.Dirty:            v1alpha1.ReasonMigrationRunDirty,
	report.NotTransactional: v1alpha1.ReasonMigrationNotTransactional,
	report.PinnedSetting:    v1alpha1.ReasonMigrationPinnedSetting,
}

// historyRefused stops at a history that does not describe a prefix of the
// artifact, or at an artifact holding a migration ptah refuses to run:
// nothing is planned from it. The message names the version.
func (r *MigrationReconciler) historyRefused(ctx context.Context, m *v1alpha1.PtahMigration, c *v1alpha1.ActiveOperation, child *v1alpha1.OperationError) (reconcile.Result, error) {
	reason := refusalReasons[report.Code(child.Code)]
	msg := fmt.Sprintf("the migration history refuses artifact %s, so nothing is planned: %s", m.Status.Source.ResolvedDigest, child.Message)
	if reason == v1alpha1.ReasonMigrationNotTransactional || reason == v1alpha1.ReasonMigrationPinnedSetting {
		msg = fmt.Sprintf("artifact %s holds a migration ptah refuses to run, so nothing is planned: %s", m.Status.Source.ResolvedDigest, child.Message)
	}
	warning(r.Events, m, v1alpha1.EventOperationFailed, "Observe", "%s: %s", child.Code, msg)
	m.Status.Plan = nil
	m.Status.LastFailure = &v1alpha1.Failure{Code: child.Code, Message: child.Message, Operation: c.Type, Time: metav1.Time{Time: r.clock()}}
	setCondition(m, v1alpha1.ConditionDatabaseReachable, metav1.ConditionTrue, v1alpha1.ReasonConnected, "the observe operation read the migration history")
	setCondition(m, v1alpha1.ConditionPlanReady, metav1.ConditionFalse, reason, msg)
	setCondition(m, v1alpha1.ConditionReady, metav1.ConditionFalse, reason, msg)
	setCondition(m, v1alpha1.ConditionInSync, metav1.ConditionFalse, reason, msg)
	setCondition(m, v1alpha1.ConditionReconciliationFailed, metav1.ConditionTrue, v1alpha1.ReasonOperationFailed, child.Code+": "+bound(child.Message, maxCause))
	m.Status.Phase = v1alpha1.PhaseBlocked
	return r.finish(ctx, m, c, "", 0, r.interval(m))
}

// applyFinished reads what an Apply did, records MigrationRunFinished, and
// decides the next step: the read-only proof, a retry, or an unresolved run.
func (r *MigrationReconciler) applyFinished(ctx context.Context, m *v1alpha1.PtahMigration, c *v1alpha1.ActiveOperation, rec *v1alpha1.PtahResultRecord, mr *v1alpha1.MigrationResult) (reconcile.Result, error) {
	e, child := rec.Spec.Error, rec.Spec.ChildError
	if e != nil && e.Code == runner.ErrProtocolMismatch {
		warning(r.Events, m, v1alpha1.EventRunnerProtocolMismatch, "Run",
			"the runner of Apply Job %s refused it before starting ptah: %s; nothing ran, and the Apply still owes its read-only proof", c.JobName, e.Message)
		setCondition(m, v1alpha1.ConditionApplying, metav1.ConditionFalse, v1alpha1.ReasonJobCompleted, "the runner refused the Apply: "+e.Message)
		return r.failedApply(ctx, m, c, failure{code: e.Code, message: e.Message, quiet: true}, false)
	}
	from := m.Status.AppliedVersion
	status := v1alpha1.MigrationFailed
	if mr != nil {
		status = mr.Status
	}
	// ptah reports the history it found with a refusal that ran nothing
	// (a changed history, another pending set, the lock not granted).
	ranNothing := mr == nil || e != nil && (status == v1alpha1.MigrationUpToDate || status == v1alpha1.MigrationPending)
	if ranNothing {
		status = v1alpha1.MigrationFailed
	}
	why := ""
	if child != nil {
		why = child.Code + ": " + child.Message
	} else if e != nil {
		why = e.Code + ": " + e.Message
	}
	if child != nil {
		// A run that could not reach the database, or lost it, says so
		// rather than leave an earlier Connected standing.
		if reason, ok := unreachable(report.Code(child.Code)); ok {
			setCondition(m, v1alpha1.ConditionDatabaseReachable, metav1.ConditionFalse, reason, why)
		}
	}
	var now []int64
	current := from
	if mr != nil {
		now, current = mr.AppliedNow, mr.Current
	}
	var said string
	switch status {
	case v1alpha1.MigrationApplied:
		said = fmt.Sprintf("Applied: versions %s committed, from version %d to %d", versionList(now), from, current)
	case v1alpha1.MigrationUpToDate:
		said = fmt.Sprintf("UpToDate: nothing was pending; the history is at version %d", current)
	case v1alpha1.MigrationPartial:
		said = fmt.Sprintf("Partial: versions %s committed, from version %d to %d, then version %d failed and was rolled back: %s", versionList(now), from, current, deref(mr.FailedVersion), why)
	case v1alpha1.MigrationUnknown:
		said = fmt.Sprintf("Unknown: versions %s committed, then the connection was lost where version %d may or may not have committed: %s", versionList(now), deref(mr.FailedVersion), why)
	default:
		if mr != nil && mr.FailedVersion != nil {
			said = fmt.Sprintf("Failed: version %d failed and was rolled back, nothing was committed: %s", *mr.FailedVersion, why)
		} else {
			said = "Failed: nothing was applied: " + why
		}
	}
	msg := fmt.Sprintf("Apply Job %s (attempt %d of plan %s) finished %s", c.JobName, c.Attempt, migrationPlanRef(m), said)
	if status == v1alpha1.MigrationApplied || status == v1alpha1.MigrationUpToDate {
		normal(r.Events, m, v1alpha1.EventMigrationRunFinished, "Apply", "%s", msg)
	} else {
		warning(r.Events, m, v1alpha1.EventMigrationRunFinished, "Apply", "%s", msg)
	}
	m.Status.AppliedVersion = current
	setCondition(m, v1alpha1.ConditionApplying, metav1.ConditionFalse, v1alpha1.ReasonJobCompleted, msg)
	switch status {
	case v1alpha1.MigrationApplied, v1alpha1.MigrationUpToDate:
		setCondition(m, v1alpha1.ConditionReconciliationFailed, metav1.ConditionFalse, v1alpha1.ReasonSucceeded, "apply operation completed")
		if r.outdated(m) {
			_, err := r.finish(ctx, m, c, "", 0, time.Time{})
			return reconcile.Result{Requeue: err == nil}, err
		}
		m.Status.Phase = v1alpha1.PhaseVerifyingConvergence
		return r.finish(ctx, m, c, v1alpha1.OperationProof, 1, time.Time{})
	case v1alpha1.MigrationUnknown:
		return r.uncertainFrom(ctx, m, c, from, fmt.Sprintf("ptah reported the outcome of version %d unknown: %s", deref(mr.FailedVersion), why))
	case v1alpha1.MigrationPartial:
		// The history changed: what follows is planned from a fresh reading.
		return r.failedApply(ctx, m, c, failure{code: "migration_partial", message: said, detail: child}, false)
	}
	retry := true
	if child != nil && (child.Code == string(report.SequenceMismatch) || child.Code == string(report.HistoryModified) ||
		child.Code == string(report.HistoryMissing) || child.Code == string(report.OutOfOrder) || child.Code == string(report.Dirty) ||
		child.Code == string(report.NotTransactional) || child.Code == string(report.PinnedSetting)) {
		retry = false // the plan no longer matches the history: read it again
	}
	f := failure{code: "migration_failed", message: said, detail: child}
	if e != nil && child == nil {
		f.code = e.Code
	}
	return r.failedApply(ctx, m, c, f, retry)
}

func deref(v *int64) int64 {
	if v == nil {
		return 0
	}
	return *v
}

// failedApply settles an Apply that committed nothing (retry: the same plan
// is tried again, up to the bound) or whose plan no longer holds (a fresh
// reading follows).
func (r *MigrationReconciler) failedApply(ctx context.Context, m *v1alpha1.PtahMigration, c *v1alpha1.ActiveOperation, f failure, retry bool) (reconcile.Result, error) {
	if !retry || r.outdated(m) {
		r.recordFailure(m, c, f)
		if !f.quiet {
			warning(r.Events, m, v1alpha1.EventOperationFailed, "Fail", "%s", f.summary())
		}
		m.Status.Phase = v1alpha1.PhaseFailed
		at := r.clock().Add(durationOr(m.Spec.Execution.FailureRetryInterval, defaultRetry))
		return r.finish(ctx, m, c, v1alpha1.OperationObserve, 1, at)
	}
	return r.failed(ctx, m, c, f)
}

// failed records a failure in full on status and tries the operation again
// after the failure interval, with OperationRetried naming the attempt,
// up to the bound; past it, OperationFailed, and the history is read again
// at the interval.
func (r *MigrationReconciler) failed(ctx context.Context, m *v1alpha1.PtahMigration, c *v1alpha1.ActiveOperation, f failure) (reconcile.Result, error) {
	r.recordFailure(m, c, f)
	m.Status.Phase = v1alpha1.PhaseFailed
	retryAt := r.clock().Add(durationOr(m.Spec.Execution.FailureRetryInterval, defaultRetry))
	if c.Attempt < r.maxAttempts() {
		warning(r.Events, m, v1alpha1.EventOperationRetried, "Retry", "attempt %d of %d of the %s operation failed, attempt %d follows in %s: %s",
			c.Attempt, r.maxAttempts(), c.Type, c.Attempt+1, durationOr(m.Spec.Execution.FailureRetryInterval, defaultRetry), f.summary())
		r.ended(m, c, "failed")
		next := newClaim(&r.engine, m, c.Type, c.Attempt+1)
		next.Approval = c.Approval
		if _, err := claim(ctx, &r.engine, r, m, next, retryAt); err != nil {
			return reconcile.Result{}, err
		}
		r.revoke(ctx, m, c)
		return reconcile.Result{RequeueAfter: retryAt.Sub(r.clock())}, nil
	}
	if !f.quiet {
		warning(r.Events, m, v1alpha1.EventOperationFailed, "Fail", "%s (attempt %d of %d; the history is read again in %s)",
			f.summary(), c.Attempt, r.maxAttempts(), durationOr(m.Spec.Interval, defaultInterval))
	}
	return r.finish(ctx, m, c, "", 0, r.interval(m))
}

// finish ends operation c (nil: none was active) with the outcome its
// status shows (the engine's finish).
func (r *MigrationReconciler) finish(ctx context.Context, m *v1alpha1.PtahMigration, c *v1alpha1.ActiveOperation, next v1alpha1.OperationType, attempt int32, at time.Time) (reconcile.Result, error) {
	r.ended(m, c, migrationOutcome(m, c))
	return finish(ctx, &r.engine, r, m, c, next, attempt, at)
}

// migrationOutcome is how operation c ended, as the status it leaves says:
// an Apply whose outcome is not established is unknown; a refusal blocks;
// a failure fails.
func migrationOutcome(m *v1alpha1.PtahMigration, c *v1alpha1.ActiveOperation) string {
	switch {
	case c != nil && m.Status.UnresolvedRun != nil && m.Status.UnresolvedRun.Operation == c.ID:
		return "unknown"
	case m.Status.Phase == v1alpha1.PhaseBlocked:
		return "refused"
	case m.Status.Phase == v1alpha1.PhaseFailed:
		return "failed"
	}
	return "succeeded"
}

// applyInputs checks, just before an Apply Job is created, that what allowed
// it still holds: the approval (consumed by this claim now) and the plan
// object, whose versions are the ones the Job will be told to apply.
func (r *MigrationReconciler) applyInputs(ctx context.Context, m *v1alpha1.PtahMigration, c *v1alpha1.ActiveOperation) (bool, error) {
	if m.Spec.Policy.Apply != v1alpha1.ApplyAlways {
		why, err := r.consumeApproval(ctx, m, c)
		if err != nil {
			return false, err
		}
		if why != "" {
			msg := fmt.Sprintf("the approval recorded for plan %s cannot be consumed (%s), so no Apply Job was created", migrationPlanRef(m), why)
			r.revoke(ctx, m, c)
			m.Status.ActiveOperation = nil
			m.Status.Phase = v1alpha1.PhaseAwaitingApproval
			setCondition(m, v1alpha1.ConditionApprovalRequired, metav1.ConditionTrue, v1alpha1.ReasonAwaitingApproval, msg)
			setCondition(m, v1alpha1.ConditionApplying, metav1.ConditionFalse, v1alpha1.ReasonClaimRetired, msg)
			return false, r.save(ctx, m)
		}
	}
	var p v1alpha1.PtahMigrationPlan
	err := r.APIReader.Get(ctx, types.NamespacedName{Namespace: m.Namespace, Name: migrationPlanRef(m)}, &p)
	if err != nil && !apierrors.IsNotFound(err) {
		return false, fmt.Errorf("read PtahMigrationPlan %s/%s: %w", m.Namespace, migrationPlanRef(m), err)
	}
	var have []int64
	for _, v := range p.Spec.Pending {
		have = append(have, v.Version)
	}
	if err == nil && m.Status.Plan != nil && p.Spec.Fingerprint == m.Status.Plan.Fingerprint && slices.Equal(have, m.Status.Plan.Versions) {
		return true, nil
	}
	why := fmt.Sprintf("PtahMigrationPlan %s is gone or no longer what status recorded", migrationPlanRef(m))
	r.revoke(ctx, m, c)
	r.returnApproval(ctx, m, c)
	setCondition(m, v1alpha1.ConditionPlanReady, metav1.ConditionFalse, v1alpha1.ReasonPlanStale, why)
	setCondition(m, v1alpha1.ConditionApplying, metav1.ConditionFalse, v1alpha1.ReasonClaimRetired, why+", so no Apply Job was created")
	m.Status.Plan = nil
	m.Status.Phase = v1alpha1.PhaseObserving
	_, err = claimNew(ctx, &r.engine, r, m, v1alpha1.OperationObserve, 1, time.Time{})
	return false, err
}

// awaitApproval accepts an approval, stamped by admission, naming the
// current plan and its fingerprint.
func (r *MigrationReconciler) awaitApproval(ctx context.Context, m *v1alpha1.PtahMigration) (reconcile.Result, error) {
	if m.Status.Plan == nil || m.Status.ActiveOperation != nil {
		return reconcile.Result{}, nil
	}
	var list v1alpha1.PtahMigrationApprovalList
	if err := r.Client.List(ctx, &list, ctrl.InNamespace(m.Namespace)); err != nil {
		return reconcile.Result{}, fmt.Errorf("list PtahMigrationApprovals in %s: %w", m.Namespace, err)
	}
	var accepted *v1alpha1.PtahMigrationApproval
	var unstamped, stale []string
	for i := range list.Items {
		a := &list.Items[i]
		if a.Spec.MigrationName != m.Name || a.Annotations[AnnotationConsumedBy] != "" {
			continue
		}
		if a.Spec.PlanName != m.Status.Plan.Name || a.Spec.PlanFingerprint != m.Status.Plan.Fingerprint {
			stale = append(stale, a.Name)
			continue
		}
		// Only admission stamps an approver; an approval without one was
		// not written through the cluster's approval policies.
		if a.ApprovedBy == nil || a.ApprovedBy.Username == "" {
			unstamped = append(unstamped, a.Name)
			continue
		}
		accepted = a
		break
	}
	if accepted == nil {
		if len(unstamped) == 0 && len(stale) == 0 {
			return reconcile.Result{}, nil
		}
		// The approvals that will not be consumed are named, so that no one
		// waits on one.
		msg := fmt.Sprintf("plan %s (versions %s) needs a PtahMigrationApproval naming plan %s and fingerprint %s",
			m.Status.Plan.Name, versionList(m.Status.Plan.Versions), m.Status.Plan.Name, m.Status.Plan.Fingerprint)
		if len(unstamped) > 0 {
			msg += fmt.Sprintf("; refused %s: no approver stamped by admission", approvalNames(unstamped))
		}
		if len(stale) > 0 {
			msg += fmt.Sprintf("; not consumed %s: written for another plan", approvalNames(stale))
		}
		if cur := meta.FindStatusCondition(m.Status.Conditions, v1alpha1.ConditionApprovalRequired); cur != nil && cur.Message == msg {
			return reconcile.Result{}, nil
		}
		setCondition(m, v1alpha1.ConditionApprovalRequired, metav1.ConditionTrue, v1alpha1.ReasonAwaitingApproval, msg)
		return reconcile.Result{}, r.save(ctx, m)
	}
	// The claim names the approval before the approval is marked consumed,
	// and dispatch completes the marking, as for schemas.
	next := newClaim(&r.engine, m, v1alpha1.OperationApply, 1)
	next.Approval = accepted.Name
	setCondition(m, v1alpha1.ConditionApprovalRequired, metav1.ConditionFalse, v1alpha1.ReasonApproved,
		fmt.Sprintf("approval %s by %s accepted for plan %s", accepted.Name, accepted.ApprovedBy.Username, m.Status.Plan.Name))
	return claim(ctx, &r.engine, r, m, next, time.Time{})
}

// approvalNames lists names in order, the first ten of them.
func approvalNames(names []string) string {
	slices.Sort(names)
	if len(names) > 10 {
		return fmt.Sprintf("%s and %d more", strings.Join(names[:10], ", "), len(names)-10)
	}
	return strings.Join(names, ", ")
}

// consumeApproval marks the approval Apply claim c names as consumed by it.
// A retry of the same plan carries the approval its first attempt consumed.
func (r *MigrationReconciler) consumeApproval(ctx context.Context, m *v1alpha1.PtahMigration, c *v1alpha1.ActiveOperation) (string, error) {
	if c.Approval == "" {
		return "no approval is recorded for the claim", nil
	}
	var a v1alpha1.PtahMigrationApproval
	err := r.APIReader.Get(ctx, types.NamespacedName{Namespace: m.Namespace, Name: c.Approval}, &a)
	if apierrors.IsNotFound(err) {
		return fmt.Sprintf("approval %s is gone", c.Approval), nil
	}
	if err != nil {
		return "", fmt.Errorf("read PtahMigrationApproval %s/%s: %w", m.Namespace, c.Approval, err)
	}
	by := a.Annotations[AnnotationConsumedBy]
	switch {
	case !a.DeletionTimestamp.IsZero():
		return fmt.Sprintf("approval %s is being deleted", a.Name), nil
	case m.Status.Plan == nil || a.Spec.MigrationName != m.Name || a.Spec.PlanName != m.Status.Plan.Name || a.Spec.PlanFingerprint != m.Status.Plan.Fingerprint:
		return fmt.Sprintf("approval %s no longer names plan %s", a.Name, migrationPlanRef(m)), nil
	case a.ApprovedBy == nil || a.ApprovedBy.Username == "":
		return fmt.Sprintf("approval %s has no approver stamped by admission", a.Name), nil
	case by == c.ID, by != "" && c.Attempt > 1:
		return "", nil
	case by != "":
		return fmt.Sprintf("approval %s was consumed by another operation", a.Name), nil
	}
	patch := ctrl.MergeFrom(a.DeepCopy())
	if a.Annotations == nil {
		a.Annotations = map[string]string{}
	}
	a.Annotations[AnnotationConsumedBy] = c.ID
	if err := r.Client.Patch(ctx, &a, patch); err != nil {
		return "", fmt.Errorf("mark PtahMigrationApproval %s/%s consumed: %w", a.Namespace, a.Name, err)
	}
	return "", nil
}

// returnApproval hands back the approval of an Apply claim retired before
// its Job was created.
func (r *MigrationReconciler) returnApproval(ctx context.Context, m *v1alpha1.PtahMigration, c *v1alpha1.ActiveOperation) {
	if c.Approval == "" || c.Attempt > 1 {
		return
	}
	var a v1alpha1.PtahMigrationApproval
	if err := r.APIReader.Get(ctx, types.NamespacedName{Namespace: m.Namespace, Name: c.Approval}, &a); err != nil {
		return
	}
	if a.Annotations[AnnotationConsumedBy] != c.ID {
		return
	}
	patch := ctrl.MergeFrom(a.DeepCopy())
	delete(a.Annotations, AnnotationConsumedBy)
	_ = r.Client.Patch(ctx, &a, patch) // a failure leaves it consumed: a person approves again
}
