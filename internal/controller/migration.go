package controller

import (
	"context"
	"fmt"
	"slices"
	"strings"
	"time"

	batchv1 "k8s.io/api/batch/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	ctrl "sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/reconcile"

	"ptah.run/operator/internal/runner"
	v1alpha1 "ptah.run/operator/operator/api/v1alpha1"
	"ptah.run/operator/operator/artifact"
	"ptah.run/operator/operator/report"
)

// defaultMaxAttempts bounds how many attempts of one operation a migration
// makes in a row before it reports OperationFailed and waits for its
// interval.
const defaultMaxAttempts = 3

// defaultLockTimeout is spec.policy.lockTimeout's default, for objects
// written before it existed.
const defaultLockTimeout = 30 * time.Second

// MigrationReconciler keeps PtahMigrations applied, in order and each
// version exactly once, with the claim, Job, credential and record
// machinery PtahSchema uses. It never reads a Secret.
//
// The pipeline: the artifact is pinned by digest (admission refuses a tag
// alone), so Resolve is the digest itself and every Job's pull checks the
// content against it; Observe reads the history and verifies the checksums
// of what is applied; the plan is computed from that reading and published
// as an immutable PtahMigrationPlan; the policy gate; one Apply Job, which
// runs `ptah migrations up` under the database's advisory lock; a read-only
// Observe as proof.
type MigrationReconciler struct {
	engine
	// MaxAttempts bounds the attempts of one operation in a row (default 3).
	MaxAttempts int32
	// ResultTransport is the transport new Jobs deliver their result by:
	// runner.TransportDurable (empty) or runner.TransportPodLog (see
	// legacy.go for why it is the manager's to choose). A Job is read by
	// the transport it records, whatever this says by then.
	ResultTransport string
	// Logs reads a legacy Job's Pod log.
	Logs PodLogs
}

// Reconcile reads the migration, keeps the record of an unresolved run,
// retires evidence its spec or binding no longer supports, then follows the
// active operation or decides the next one.
func (r *MigrationReconciler) Reconcile(ctx context.Context, req reconcile.Request) (reconcile.Result, error) {
	return reconcileOne(ctx, &r.engine, req, &v1alpha1.PtahMigration{}, forgetMigration, r.migrationPipeline, r.deleting)
}

func (r *MigrationReconciler) migrationPipeline(ctx context.Context, m *v1alpha1.PtahMigration) (reconcile.Result, error) {
	if restored, err := r.restore(ctx, m); restored || err != nil {
		return reconcile.Result{Requeue: err == nil}, err
	}
	if err := r.keepMetadata(ctx, m); err != nil {
		return reconcile.Result{}, err
	}
	return pipeline(ctx, &r.engine, r, m)
}

// admissionDown holds m while record admission is not enforcing in its
// namespace; a running Apply runs on, holding the database's advisory
// lock itself.
func (r *MigrationReconciler) admissionDown(ctx context.Context, m *v1alpha1.PtahMigration, problem string) (reconcile.Result, error) {
	if holdForAdmission(m, problem) {
		if err := r.save(ctx, m); err != nil {
			return reconcile.Result{}, err
		}
	}
	return reconcile.Result{RequeueAfter: r.Admission.interval()}, nil
}

// revise settles an unresolved run by its acknowledgment, even while a
// reading waits for its retry; the reading is claimed anew.
func (r *MigrationReconciler) revise(ctx context.Context, m *v1alpha1.PtahMigration) (bool, error) {
	if m.Status.UnresolvedRun == nil {
		return false, nil
	}
	return r.acknowledged(ctx, m)
}

// retire starts again from Observe when the spec changed or the execution
// binding did (the engine's retire).
func (r *MigrationReconciler) retire(ctx context.Context, m *v1alpha1.PtahMigration) (bool, error) {
	return retire(ctx, &r.engine, r, m)
}

// first is the operation a migration's generation starts with.
func (r *MigrationReconciler) first(*v1alpha1.PtahMigration) v1alpha1.OperationType {
	return v1alpha1.OperationObserve
}

// retiring records that m's evidence is retired: its plan, and the
// artifact is resolved again from the spec. An unresolved run stays, and
// says so.
func (r *MigrationReconciler) retiring(_ context.Context, m *v1alpha1.PtahMigration, old *v1alpha1.ExecutionBinding, b v1alpha1.ExecutionBinding) {
	rebound := old != nil && *old != b
	if rebound {
		claim := "it held no operation claim"
		if c := m.Status.ActiveOperation; c != nil {
			claim = fmt.Sprintf("its %s claim %s is discarded", c.Type, c.JobName)
		}
		warning(r.Events, m, v1alpha1.EventExecutionBindingChanged, "Retire",
			"execution binding changed from %s to %s: %s, and the migration history is read again",
			describeBinding(*old), describeBinding(b), claim)
	}
	if rebound || m.Status.ObservedGeneration != m.Generation {
		m.Status.Plan = nil
		if conditionIs(m, v1alpha1.ConditionApprovalRequired, metav1.ConditionTrue, v1alpha1.ReasonAwaitingApproval) {
			setCondition(m, v1alpha1.ConditionApprovalRequired, metav1.ConditionFalse, v1alpha1.ReasonNotRequired, "the plan awaiting approval was retired; a new one will be computed")
		}
	}
	if m.Status.ObservedGeneration != m.Generation {
		setCondition(m, v1alpha1.ConditionInSync, metav1.ConditionUnknown, v1alpha1.ReasonProgressing, "reading the migration history for this generation")
		setCondition(m, v1alpha1.ConditionReady, metav1.ConditionUnknown, v1alpha1.ReasonProgressing, "reading the migration history for this generation")
	}
	r.resolve(m)
	if m.Status.UnresolvedRun != nil {
		setUnresolvedCondition(m)
	}
}

// resolve takes the artifact digest from the spec, which admission only
// accepts pinned by digest; each Job's pull checks the content against it.
// There is no verification policy for migrations, so none applies.
func (r *MigrationReconciler) resolve(m *v1alpha1.PtahMigration) {
	ref := m.Spec.Migrations.OCIRef
	digest := ref[strings.LastIndex(ref, "@")+1:]
	if m.Status.Source == nil || m.Status.Source.ResolvedDigest != digest {
		m.Status.Source = &v1alpha1.Source{ResolvedDigest: digest}
	}
	setCondition(m, v1alpha1.ConditionArtifactResolved, metav1.ConditionTrue, v1alpha1.ReasonResolved, fmt.Sprintf("%s is pinned by digest %s", ref, digest))
	setCondition(m, v1alpha1.ConditionArtifactVerified, metav1.ConditionTrue, v1alpha1.ReasonNoPolicy, "a migrations artifact has no verification policy; every pull checks its content against the digest")
}

// artifactRefused records on the artifact's conditions a reading that
// failed pulling the artifact, before ptah reached the database: a digest
// the registry does not hold or a registry that refuses the credentials
// (ArtifactResolved), an artifact of another type or whose files do not
// match its ptah.sum (ArtifactVerified). It reports whether rec is such
// a failure: one that carries no reading of the history, so ptah stopped
// before the database. The registry's answers are told from the
// database's, which share the codes auth and connection, by naming the
// registry host.
func (r *MigrationReconciler) artifactRefused(m *v1alpha1.PtahMigration, rec *v1alpha1.PtahResultRecord) bool {
	child := rec.Spec.ChildError
	if child == nil || rec.Spec.Result != nil && rec.Spec.Result.Migrations != nil {
		return false
	}
	host := registryHost(m.Spec.Migrations.OCIRef)
	cond, reason := v1alpha1.ConditionArtifactResolved, v1alpha1.ReasonResolveFailed
	switch report.Code(child.Code) {
	case report.NotFound:
	case report.ArtifactType, report.ChecksumMismatch:
		cond, reason = v1alpha1.ConditionArtifactVerified, v1alpha1.ReasonVerificationRefused
	case report.Auth, report.Connection:
		if !strings.Contains(child.Message, " on "+host+"/") && !strings.Contains(child.Message, "registry "+host) {
			return false
		}
	default:
		return false
	}
	msg := fmt.Sprintf("pulling %s failed before the database was read: %s: %s", m.Spec.Migrations.OCIRef, child.Code, bound(child.Message, maxCause))
	setCondition(m, cond, metav1.ConditionFalse, reason, msg)
	setCondition(m, v1alpha1.ConditionReady, metav1.ConditionFalse, reason, msg)
	return true
}

// deleteJob deletes the Job of a discarded read-only claim. When the
// deletion cannot be made, the Job is left to the deadline it carries: it
// changes nothing, and its record, under the old claim's name, is never
// consumed.
func (r *MigrationReconciler) deleteJob(ctx context.Context, m *v1alpha1.PtahMigration, c *v1alpha1.ActiveOperation) {
	j := &batchv1.Job{ObjectMeta: metav1.ObjectMeta{Name: c.JobName, Namespace: m.Namespace}}
	err := r.Client.Delete(ctx, j, ctrl.PropagationPolicy(metav1.DeletePropagationBackground))
	if err == nil || apierrors.IsNotFound(err) {
		return
	}
	deadline := "no deadline of its own (spec.execution.deadline is not set), so it runs until it ends"
	if d := m.Spec.Execution.Deadline; d != nil {
		deadline = "its own deadline of " + d.Duration.String()
	}
	warning(r.Events, m, v1alpha1.EventMigrationJobCleanupDeferred, "Cleanup",
		"the cleanup of %s Job %s, whose claim was discarded, could not be scheduled (%v); the Job keeps %s, and its owner reference removes it with the migration",
		c.Type, c.JobName, err, deadline)
}

// rest is where a migration with no operation waits: for an approval, an
// acknowledgment, or its interval to read the history again.
func (r *MigrationReconciler) rest(ctx context.Context, m *v1alpha1.PtahMigration) (reconcile.Result, error) {
	r.prune(ctx, m)
	if m.Status.Phase == v1alpha1.PhaseAwaitingApproval && m.Status.UnresolvedRun == nil {
		return r.awaitApproval(ctx, m)
	}
	return due(ctx, &r.engine, r, m)
}

// accept consumes the operation's result record.
func (r *MigrationReconciler) accept(ctx context.Context, m *v1alpha1.PtahMigration, c *v1alpha1.ActiveOperation, rec *v1alpha1.PtahResultRecord) (reconcile.Result, error) {
	return r.consume(ctx, m, c, rec)
}

// running shows the operation's phase while its Job runs, and reports the
// Pod's admission refusals.
func (r *MigrationReconciler) running(ctx context.Context, m *v1alpha1.PtahMigration, c *v1alpha1.ActiveOperation, j *batchv1.Job) (reconcile.Result, error) {
	return watchPod(ctx, &r.engine, r, m, c, j)
}

// dispatch creates the claim's credential and Job (the engine's dispatch).
func (r *MigrationReconciler) dispatch(ctx context.Context, m *v1alpha1.PtahMigration) (reconcile.Result, error) {
	return dispatch(ctx, &r.engine, r, m)
}

// admit is what an Apply needs before its credential: its approval
// consumed, its plan current, and the finalizer on, so a deletion waits
// for the Apply to end rather than have its Job collected.
func (r *MigrationReconciler) admit(ctx context.Context, m *v1alpha1.PtahMigration, c *v1alpha1.ActiveOperation) (bool, reconcile.Result, error) {
	if c.Type != v1alpha1.OperationApply {
		return true, reconcile.Result{}, nil
	}
	if ok, err := r.applyInputs(ctx, m, c); !ok || err != nil {
		return false, reconcile.Result{Requeue: err == nil && m.Status.ActiveOperation != nil}, err
	}
	return true, reconcile.Result{}, r.keepMetadata(ctx, m)
}

// issue creates the operation-bound credential.
func (r *MigrationReconciler) issue(ctx context.Context, m *v1alpha1.PtahMigration, c *v1alpha1.ActiveOperation) error {
	return issueCredential(ctx, r.Client, m, c)
}

// confirm asks, last before an Apply Job is created, whether the spec is
// still the one the claim was decided under (specCurrent).
func (r *MigrationReconciler) confirm(ctx context.Context, m *v1alpha1.PtahMigration, c *v1alpha1.ActiveOperation) (bool, error) {
	if c.Type != v1alpha1.OperationApply {
		return true, nil
	}
	return r.specCurrent(ctx, m)
}

// started shows an Apply's plan, versions and attempt on Applying once its
// Job exists.
func (r *MigrationReconciler) started(m *v1alpha1.PtahMigration, c *v1alpha1.ActiveOperation) {
	if c.Type == v1alpha1.OperationApply {
		setCondition(m, v1alpha1.ConditionApplying, metav1.ConditionTrue, v1alpha1.ReasonApprovedPlan,
			fmt.Sprintf("applying plan %s (versions %s), attempt %d", migrationPlanRef(m), versionList(planVersions(m)), c.Attempt))
	}
}

// release: a migration's operation holds nothing but its credential; its
// Apply takes the database's advisory lock itself.
func (r *MigrationReconciler) release(context.Context, *v1alpha1.PtahMigration, *v1alpha1.ActiveOperation) {
}

// specCurrent reports whether the spec the API server holds is the
// generation the claim was decided under (status.observedGeneration; a
// metadata patch may have brought m a newer generation number without its
// spec). It is asked last before an Apply Job is created: an edit made
// since the spec was read (policy Never, suspend, a new target) must stop
// the Apply before it exists; the next reconcile reads the edit and
// retires the claim.
func (r *MigrationReconciler) specCurrent(ctx context.Context, m *v1alpha1.PtahMigration) (bool, error) {
	var now v1alpha1.PtahMigration
	if err := r.APIReader.Get(ctx, types.NamespacedName{Namespace: m.Namespace, Name: m.Name}, &now); err != nil {
		return false, fmt.Errorf("read PtahMigration %s/%s before creating its Apply Job: %w", m.Namespace, m.Name, err)
	}
	return now.Generation == m.Status.ObservedGeneration, nil
}

// migrationOperation is what the runner is told to do for claim c.
func migrationOperation(m *v1alpha1.PtahMigration, c *v1alpha1.ActiveOperation, plainHTTP bool) runner.Operation {
	op := runner.Operation{
		Type:       runner.OpMigrationObserve,
		ID:         c.ID,
		Digest:     c.CoordinationDigest,
		Namespace:  m.Namespace,
		Schema:     m.Name,
		SchemaUID:  string(m.UID),
		Kind:       v1alpha1.KindPtahMigration,
		RecordName: c.JobName,
		OCIRef:     m.Spec.Migrations.OCIRef,
		PlainHTTP:  plainHTTP,
	}
	if m.Status.Source != nil && m.Status.Source.ResolvedDigest != "" {
		op.OCIRef = artifact.Pinned(m.Spec.Migrations.OCIRef, m.Status.Source.ResolvedDigest)
	}
	lockTimeout := durationOr(m.Spec.Policy.LockTimeout, defaultLockTimeout).String()
	switch {
	case c.Type == v1alpha1.OperationApply:
		op.Type = runner.OpMigrationApply
		op.ExpectSequence = planVersions(m)
		op.TargetVersion = targetVersion(m)
		op.LockTimeout = lockTimeout
	case m.Status.UnresolvedRun != nil:
		// The reading that may settle an unresolved run waits for the
		// writer lock: a run whose Job is gone may still be committing.
		op.LockTimeout = lockTimeout
	}
	if ct := m.Spec.Execution.ConnectTimeout; ct != nil {
		op.ConnectTimeout = ct.Duration.String()
	}
	return op
}

func (r *MigrationReconciler) job(m *v1alpha1.PtahMigration, c *v1alpha1.ActiveOperation) *batchv1.Job {
	op := migrationOperation(m, c, slices.Contains(r.PlainHTTP, registryHost(m.Spec.Migrations.OCIRef)))
	if r.ResultTransport == runner.TransportPodLog {
		op.ResultTransport = runner.TransportPodLog
	}
	return job(m, c, r.Binding.of(m), op)
}

// foreign refuses a record that is not the operation's result, once per
// record. A running Apply runs to its end and its outcome is then
// unresolved; any other operation is claimed again under a new name.
func (r *MigrationReconciler) foreign(ctx context.Context, m *v1alpha1.PtahMigration, c *v1alpha1.ActiveOperation, bad *foreignRecord) (reconcile.Result, error) {
	if r.refusals.add(bad.rec.UID) {
		warning(r.Events, m, v1alpha1.EventResultReadFailed, "ReadResult",
			"%s operation %s: %v; it is not consumed", c.Type, c.JobName, bad)
	}
	if c.Type == v1alpha1.OperationApply && c.JobUID != "" {
		var j batchv1.Job
		err := r.APIReader.Get(ctx, types.NamespacedName{Namespace: m.Namespace, Name: c.JobName}, &j)
		if apierrors.IsNotFound(err) {
			return r.vanished(ctx, m, c)
		}
		if err != nil {
			return reconcile.Result{}, fmt.Errorf("read Job %s/%s of the active Apply of PtahMigration %s: %w", m.Namespace, c.JobName, m.Name, err)
		}
		if finished, _ := jobFinished(&j); finished {
			return r.uncertain(ctx, m, c, fmt.Sprintf("Apply Job %s ended, and the record under its name is not its result", c.JobName))
		}
		return reconcile.Result{RequeueAfter: resultReadRetry}, nil
	}
	r.deleteJob(ctx, m, c)
	r.revoke(ctx, m, c)
	if bad.unstamped {
		setCondition(m, v1alpha1.ConditionReconciliationFailed, metav1.ConditionTrue, v1alpha1.ReasonConfigurationError, "result_unstamped: "+bad.Error())
	}
	next := newClaim(&r.engine, m, c.Type, c.Attempt)
	next.Approval = c.Approval
	_, err := claim(ctx, &r.engine, r, m, next, r.clock().Add(resultReadRetry))
	return reconcile.Result{RequeueAfter: resultReadRetry}, err
}

func (r *MigrationReconciler) readFailed(ctx context.Context, m *v1alpha1.PtahMigration, c *v1alpha1.ActiveOperation, err error) (reconcile.Result, error) {
	return r.engine.readFailed(ctx, m, string(c.Type), c, err)
}

// vanished settles a dispatched claim whose Job is gone with no record.
func (r *MigrationReconciler) vanished(ctx context.Context, m *v1alpha1.PtahMigration, c *v1alpha1.ActiveOperation) (reconcile.Result, error) {
	msg := fmt.Sprintf("Job %s was deleted before it delivered a result record", c.JobName)
	if c.Type == v1alpha1.OperationApply {
		return r.uncertain(ctx, m, c, msg)
	}
	return r.failed(ctx, m, c, failure{code: "job_deleted", message: msg})
}

// noResult settles a finished Job that delivered no record; an Apply's run
// is recorded as unresolved.
func (r *MigrationReconciler) noResult(ctx context.Context, m *v1alpha1.PtahMigration, c *v1alpha1.ActiveOperation, j *batchv1.Job, finished time.Time) (reconcile.Result, error) {
	return r.engine.noResult(ctx, m, string(c.Type), "the run is recorded as unresolved until a reading or a person settles it", c, j, finished,
		func(msg string) (reconcile.Result, error) { return r.uncertain(ctx, m, c, msg) },
		func(f failure) (reconcile.Result, error) { return r.failed(ctx, m, c, f) })
}

func (r *MigrationReconciler) save(ctx context.Context, m *v1alpha1.PtahMigration) error {
	migrationHealth(m)
	if err := r.Client.Status().Update(ctx, m); err != nil {
		return fmt.Errorf("write status of PtahMigration %s/%s: %w", m.Namespace, m.Name, err)
	}
	publishMigrationState(m)
	return nil
}

func (r *MigrationReconciler) maxAttempts() int32 {
	if r.MaxAttempts > 0 {
		return r.MaxAttempts
	}
	return defaultMaxAttempts
}

func (r *MigrationReconciler) interval(m *v1alpha1.PtahMigration) time.Time {
	return r.clock().Add(durationOr(m.Spec.Interval, defaultInterval))
}

func migrationPlanRef(m *v1alpha1.PtahMigration) string {
	if m.Status.Plan == nil {
		return "(none)"
	}
	return m.Status.Plan.Name
}

func planVersions(m *v1alpha1.PtahMigration) []int64 {
	if m.Status.Plan == nil {
		return []int64{}
	}
	return m.Status.Plan.Versions
}

// targetVersion is spec.targetVersion as a number, 0 for latest.
func targetVersion(m *v1alpha1.PtahMigration) int64 {
	var v int64
	if m.Spec.TargetVersion != "" && m.Spec.TargetVersion != v1alpha1.TargetVersionLatest {
		fmt.Sscan(m.Spec.TargetVersion, &v)
	}
	return v
}

func versionList(vs []int64) string {
	if len(vs) == 0 {
		return "none"
	}
	s := make([]string, len(vs))
	for i, v := range vs {
		s[i] = fmt.Sprint(v)
	}
	return strings.Join(s, ",")
}
