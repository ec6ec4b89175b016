package controller

import (
	"context"
	"errors"
	"fmt"
	"time"

	batchv1 "k8s.io/api/batch/v1"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	ctrl "sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/log"
	"sigs.k8s.io/controller-runtime/pkg/reconcile"

	v1alpha1 "ptah.run/operator/operator/api/v1alpha1"
)

// Defaults for durations the API server defaults too; they matter only for
// objects written before the defaults existed.
const (
	defaultInterval     = 5 * time.Minute
	defaultRetry        = time.Minute
	credentialRetry     = 10 * time.Second
	resultReadRetry     = 10 * time.Second
	defaultResultBound  = 15 * time.Second
	podAdmissionRecheck = 10 * time.Second
)

// errStopped is returned by a test's afterClaim hook to end a reconcile the
// way a killed manager would: with the claim written and no Job created.
var errStopped = errors.New("manager stopped after writing the claim")

// SchemaReconciler keeps PtahSchemas where their owners declared them, one
// Job per operation. It never reads a Secret.
type SchemaReconciler struct {
	Client ctrl.Client
	// APIReader reads past the cache, where a stale read would lose a result.
	APIReader ctrl.Reader
	Events    eventSink
	Binding   Binding
	// PlainHTTP lists registry hosts spoken to over plain HTTP.
	PlainHTTP []string
	// ResultTimeout bounds each read of a result record, and how long a
	// completed Job's record may take to arrive (default 15s).
	ResultTimeout time.Duration
	// LeaseDuration is how long the database lease holds unrenewed (default 1m).
	LeaseDuration time.Duration
	// Retention is how long finished Jobs and result records are kept (default 1h).
	Retention time.Duration
	// PlanHistory is how many plans nothing names any more are kept per
	// schema, newest first, past the retention (default 10).
	PlanHistory int
	// DevDatabaseImage is the dev database sidecar's image (default
	// DefaultDevDatabaseImage); spec.execution.devDatabase overrides it.
	DevDatabaseImage string

	now        func() time.Time
	afterClaim func(context.Context, *v1alpha1.PtahSchema) error
	// release stands in, in tests, for a manager release whose Pod template
	// differs from the one before.
	newRelease func(*batchv1.Job)
	// refusals remembers the Pod-creation refusals already reported.
	refusals map[types.UID]bool
}

// Reconcile reads the schema, retires evidence its spec or binding no longer
// supports, then follows the active operation or decides the next one.
func (r *SchemaReconciler) Reconcile(ctx context.Context, req reconcile.Request) (reconcile.Result, error) {
	var s v1alpha1.PtahSchema
	if err := r.Client.Get(ctx, req.NamespacedName, &s); err != nil {
		return reconcile.Result{}, ctrl.IgnoreNotFound(err)
	}
	if !s.DeletionTimestamp.IsZero() {
		return reconcile.Result{}, nil // owner references remove Jobs, plans and credentials
	}
	res, err := r.pipeline(ctx, &s)
	if apierrors.IsConflict(err) {
		return reconcile.Result{Requeue: true}, nil // someone wrote first: read again
	}
	if errors.Is(err, errStopped) {
		return reconcile.Result{}, nil
	}
	return res, err
}

func (r *SchemaReconciler) pipeline(ctx context.Context, s *v1alpha1.PtahSchema) (reconcile.Result, error) {
	if restarted, err := r.retire(ctx, s); restarted || err != nil {
		return reconcile.Result{Requeue: err == nil}, err
	}
	if restarted, err := r.invalidate(ctx, s); restarted || err != nil {
		return reconcile.Result{Requeue: err == nil}, err
	}
	if s.Status.ActiveOperation != nil {
		return r.follow(ctx, s)
	}
	if s.Spec.Suspend {
		return r.hold(ctx, s)
	}
	return r.rest(ctx, s)
}

// retire starts again from Resolve when the spec changed or the execution
// binding the evidence was produced under did.
func (r *SchemaReconciler) retire(ctx context.Context, s *v1alpha1.PtahSchema) (bool, error) {
	b := r.Binding.of(s)
	old := s.Status.ExecutionBinding
	rebound := old != nil && *old != b
	if !rebound && s.Status.ObservedGeneration == s.Generation && old != nil {
		return false, nil
	}
	if rebound {
		warning(r.Events, s, v1alpha1.EventExecutionBindingChanged, "Retire",
			"execution binding changed from %s to %s: approvals of plans made under it no longer apply, and the schema is read again",
			describeBinding(*old), describeBinding(b))
		s.Status.Plan = nil
		if conditionIs(s, v1alpha1.ConditionApprovalRequired, metav1.ConditionTrue, v1alpha1.ReasonAwaitingApproval) {
			setCondition(s, v1alpha1.ConditionApprovalRequired, metav1.ConditionFalse, v1alpha1.ReasonNotRequired, "the plan awaiting approval was retired with its execution binding")
		}
	}
	if s.Status.ObservedGeneration != s.Generation {
		setCondition(s, v1alpha1.ConditionInSync, metav1.ConditionUnknown, v1alpha1.ReasonProgressing, "reading the schema for this generation")
		setCondition(s, v1alpha1.ConditionReady, metav1.ConditionUnknown, v1alpha1.ReasonProgressing, "reading the schema for this generation")
		if s.Status.Plan != nil && s.Status.Phase == v1alpha1.PhaseAwaitingApproval {
			setCondition(s, v1alpha1.ConditionApprovalRequired, metav1.ConditionFalse, v1alpha1.ReasonNotRequired, "the spec changed; a new plan will be computed")
		}
	}
	r.discard(ctx, s)
	s.Status.ExecutionBinding = &b
	s.Status.ObservedGeneration = s.Generation
	s.Status.NextReconciliationTime = nil
	if s.Spec.Suspend {
		return true, r.suspend(ctx, s)
	}
	setCondition(s, v1alpha1.ConditionSuspended, metav1.ConditionFalse, v1alpha1.ReasonNotSuspended, "spec.suspend is false")
	s.Status.Phase = v1alpha1.PhasePending
	return true, r.claim(ctx, s, v1alpha1.OperationResolve, 1, time.Time{})
}

func describeBinding(b v1alpha1.ExecutionBinding) string {
	return fmt.Sprintf("{executor %s, ptah %s, runner %s, state %s}", b.ExecutorImage, b.PtahVersion, b.RunnerProtocol, b.ControllerStateVersion)
}

// discard drops the active claim: its Job (if dispatched) and its credential.
func (r *SchemaReconciler) discard(ctx context.Context, s *v1alpha1.PtahSchema) {
	c := s.Status.ActiveOperation
	if c == nil {
		return
	}
	r.deleteJob(ctx, s, c)
	r.revoke(ctx, s, c)
	r.release(ctx, s, c)
	if c.Type == v1alpha1.OperationApply {
		setCondition(s, v1alpha1.ConditionApplying, metav1.ConditionFalse, v1alpha1.ReasonJobCompleted, "the Apply claim was discarded: its inputs changed")
	}
	s.Status.ActiveOperation = nil
}

// deleteJob deletes c's Job, if it was dispatched.
func (r *SchemaReconciler) deleteJob(ctx context.Context, s *v1alpha1.PtahSchema, c *v1alpha1.ActiveOperation) {
	j := &batchv1.Job{ObjectMeta: metav1.ObjectMeta{Name: c.JobName, Namespace: s.Namespace}}
	if err := r.Client.Delete(ctx, j, ctrl.PropagationPolicy(metav1.DeletePropagationBackground)); err != nil && !apierrors.IsNotFound(err) {
		log.FromContext(ctx).Error(err, "delete the Job of a discarded claim; its owner reference removes it with the schema", "job", c.JobName)
	}
}

// suspend records that spec.suspend holds every new operation.
func (r *SchemaReconciler) suspend(ctx context.Context, s *v1alpha1.PtahSchema) error {
	s.Status.Phase = v1alpha1.PhaseSuspended
	setCondition(s, v1alpha1.ConditionSuspended, metav1.ConditionTrue, v1alpha1.ReasonSuspendedBySpec, "spec.suspend is true: no operation starts")
	return r.save(ctx, s)
}

func (r *SchemaReconciler) hold(ctx context.Context, s *v1alpha1.PtahSchema) (reconcile.Result, error) {
	if s.Status.Phase == v1alpha1.PhaseSuspended && conditionIs(s, v1alpha1.ConditionSuspended, metav1.ConditionTrue, v1alpha1.ReasonSuspendedBySpec) {
		return reconcile.Result{}, nil
	}
	return reconcile.Result{}, r.suspend(ctx, s)
}

// rest is where a schema with no operation waits: for an approval, for its
// interval to re-read drift, or (Blocked) for its spec to change.
func (r *SchemaReconciler) rest(ctx context.Context, s *v1alpha1.PtahSchema) (reconcile.Result, error) {
	r.prune(ctx, s)
	switch s.Status.Phase {
	case v1alpha1.PhaseBlocked:
		return reconcile.Result{}, nil
	case v1alpha1.PhaseAwaitingApproval:
		return r.awaitApproval(ctx, s)
	}
	if next := s.Status.NextReconciliationTime; next != nil {
		if wait := next.Sub(r.clock()); wait > 0 {
			return reconcile.Result{RequeueAfter: wait}, nil
		}
	}
	return reconcile.Result{Requeue: true}, r.claim(ctx, s, v1alpha1.OperationResolve, 1, time.Time{})
}

// claim writes the claim for the next operation to status before anything
// is created for it, then dispatches it unless it waits until at.
func (r *SchemaReconciler) claim(ctx context.Context, s *v1alpha1.PtahSchema, typ v1alpha1.OperationType, attempt int32, at time.Time) error {
	return r.claimOp(ctx, s, newClaim(s, typ, attempt, r.Binding.of(s), r.clock()), at)
}

func (r *SchemaReconciler) claimOp(ctx context.Context, s *v1alpha1.PtahSchema, c *v1alpha1.ActiveOperation, at time.Time) error {
	s.Status.ActiveOperation = c
	c.PodTemplateDigest = r.templateDigest(s, c)
	s.Status.NextReconciliationTime = nil
	if !at.IsZero() {
		s.Status.NextReconciliationTime = &metav1.Time{Time: at}
	}
	if err := r.save(ctx, s); err != nil {
		return err
	}
	if r.afterClaim != nil {
		if err := r.afterClaim(ctx, s); err != nil {
			return err
		}
	}
	if !at.IsZero() {
		return nil
	}
	_, err := r.dispatch(ctx, s)
	return err
}

// follow resumes the active claim: consume its result, create its Job if it
// has none yet, or wait for the Job.
func (r *SchemaReconciler) follow(ctx context.Context, s *v1alpha1.PtahSchema) (reconcile.Result, error) {
	c := s.Status.ActiveOperation
	rec, err := r.record(ctx, r.Client, s, c)
	if err != nil {
		return r.readFailed(ctx, s, c, err)
	}
	if rec != nil {
		return r.accept(ctx, s, c, rec)
	}
	var j batchv1.Job
	err = r.Client.Get(ctx, types.NamespacedName{Namespace: s.Namespace, Name: c.JobName}, &j)
	if apierrors.IsNotFound(err) {
		return r.dispatch(ctx, s)
	}
	if err != nil {
		return reconcile.Result{}, fmt.Errorf("read Job %s/%s of the active operation: %w", s.Namespace, c.JobName, err)
	}
	if finished, at := jobFinished(&j); finished {
		// The cache may not hold a record the runner wrote just before it
		// exited: ask the API server before deciding there is none.
		if rec, err = r.record(ctx, r.APIReader, s, c); err != nil {
			return r.readFailed(ctx, s, c, err)
		}
		if rec != nil {
			return r.accept(ctx, s, c, rec)
		}
		return r.noResult(ctx, s, c, &j, at)
	}
	if guarded(c.Type) {
		lost, err := r.renew(ctx, s, c)
		if err != nil {
			return reconcile.Result{}, err
		}
		if lost != "" {
			r.deleteJob(ctx, s, c)
			return reconcile.Result{}, r.leaseLost(ctx, s, c, lost)
		}
		res, err := r.podAdmission(ctx, s, c, &j)
		if renew := r.leaseDuration() / 3; res.RequeueAfter == 0 || res.RequeueAfter > renew {
			res.RequeueAfter = renew
		}
		return res, err
	}
	return r.podAdmission(ctx, s, c, &j)
}

// accept consumes rec unless it was produced without continuous ownership
// of the database lease its operation needed.
func (r *SchemaReconciler) accept(ctx context.Context, s *v1alpha1.PtahSchema, c *v1alpha1.ActiveOperation, rec *v1alpha1.PtahResultRecord) (reconcile.Result, error) {
	if guarded(c.Type) {
		l, err := r.readLease(ctx, s)
		if err != nil {
			return reconcile.Result{}, err
		}
		if lost := continuity(l, c, rec.CreationTimestamp.Time); lost != "" {
			return reconcile.Result{}, r.leaseLost(ctx, s, c, lost)
		}
	}
	return r.consume(ctx, s, c, rec)
}

// dispatch creates the claim's credential and Job, unless the claim waits.
func (r *SchemaReconciler) dispatch(ctx context.Context, s *v1alpha1.PtahSchema) (reconcile.Result, error) {
	c := s.Status.ActiveOperation
	if next := s.Status.NextReconciliationTime; next != nil {
		if wait := next.Sub(r.clock()); wait > 0 {
			return reconcile.Result{RequeueAfter: wait}, nil
		}
	}
	if s.Spec.Suspend {
		return r.hold(ctx, s)
	}
	if current, err := r.snapshot(ctx, s, c); !current || err != nil {
		return reconcile.Result{Requeue: err == nil}, err
	}
	if f, err := r.missingServiceAccount(ctx, s); f != nil || err != nil {
		if err != nil {
			return reconcile.Result{}, err
		}
		return r.failed(ctx, s, c, *f)
	}
	var plan []byte
	if c.Type == v1alpha1.OperationApply {
		var ok bool
		var err error
		if plan, ok, err = r.applyInputs(ctx, s, c); !ok || err != nil {
			return reconcile.Result{Requeue: err == nil && s.Status.ActiveOperation != nil}, err
		}
	}
	if guarded(c.Type) {
		wait, err := r.acquire(ctx, s, c)
		if err != nil || wait > 0 {
			return reconcile.Result{RequeueAfter: wait}, err
		}
	}
	if err := r.issue(ctx, s, c); err != nil {
		warning(r.Events, s, v1alpha1.EventResultCredentialFailed, "IssueCredential",
			"issuing the result credential %s for %s operation %s failed, retrying in %s: %v", credentialName(c), runnerOp(c.Type), c.JobName, credentialRetry, err)
		return reconcile.Result{RequeueAfter: credentialRetry}, nil
	}
	err := r.Client.Create(ctx, r.job(s, c, plan))
	switch {
	case apierrors.IsAlreadyExists(err):
		// A manager before this one created it: this is a resume, not a start.
	case err != nil:
		return reconcile.Result{}, fmt.Errorf("create Job %s/%s for the %s operation: %w", s.Namespace, c.JobName, runnerOp(c.Type), err)
	default:
		normal(r.Events, s, v1alpha1.EventOperationStarted, "Dispatch", "%s Job %s started", c.Type, c.JobName)
	}
	now := metav1.Time{Time: r.clock()}
	s.Status.Phase = phaseOf(c.Type)
	s.Status.LastAttemptTime = &now
	s.Status.NextReconciliationTime = nil
	if c.Type == v1alpha1.OperationApply {
		setCondition(s, v1alpha1.ConditionApplying, metav1.ConditionTrue, v1alpha1.ReasonApprovedPlan, fmt.Sprintf("applying plan %s", planRef(s)))
	}
	return reconcile.Result{}, r.save(ctx, s)
}

// missingServiceAccount is the configuration failure of a schema whose
// spec.execution.serviceAccountName names no ServiceAccount: its Pod could
// not be created, so no Job is made for it.
func (r *SchemaReconciler) missingServiceAccount(ctx context.Context, s *v1alpha1.PtahSchema) (*failure, error) {
	name := s.Spec.Execution.ServiceAccountName
	if name == "" {
		return nil, nil
	}
	var sa corev1.ServiceAccount
	err := r.APIReader.Get(ctx, types.NamespacedName{Namespace: s.Namespace, Name: name}, &sa)
	if apierrors.IsNotFound(err) {
		return &failure{code: "service_account_missing", configuration: true, message: fmt.Sprintf(
			"spec.execution.serviceAccountName names ServiceAccount %s/%s, which does not exist: create it, or remove the field so each operation runs as an account of its own", s.Namespace, name)}, nil
	}
	if err != nil {
		return nil, fmt.Errorf("read ServiceAccount %s/%s named by spec.execution.serviceAccountName: %w", s.Namespace, name, err)
	}
	return nil, nil
}

// record is the active claim's PtahResultRecord, or nil while there is none.
// A record under the claim's name that names another operation or digest is
// not this operation's result: it is refused, never consumed.
func (r *SchemaReconciler) record(ctx context.Context, rd ctrl.Reader, s *v1alpha1.PtahSchema, c *v1alpha1.ActiveOperation) (*v1alpha1.PtahResultRecord, error) {
	var rec v1alpha1.PtahResultRecord
	ctx, cancel := context.WithTimeout(ctx, r.resultTimeout())
	defer cancel()
	err := rd.Get(ctx, types.NamespacedName{Namespace: s.Namespace, Name: c.JobName}, &rec)
	if apierrors.IsNotFound(err) {
		return nil, nil
	}
	if err != nil {
		return nil, fmt.Errorf("read PtahResultRecord %s/%s: %w", s.Namespace, c.JobName, err)
	}
	if rec.Spec.OperationID != c.ID || rec.Spec.Digest != c.CoordinationDigest ||
		rec.Spec.Subject.Kind != v1alpha1.KindPtahSchema || rec.Spec.Subject.Name != s.Name {
		return nil, fmt.Errorf("PtahResultRecord %s/%s does not carry the active operation's id and digest (it names operation %q); it is not consumed",
			s.Namespace, rec.Name, rec.Spec.OperationID)
	}
	return &rec, nil
}

func (r *SchemaReconciler) readFailed(ctx context.Context, s *v1alpha1.PtahSchema, c *v1alpha1.ActiveOperation, err error) (reconcile.Result, error) {
	if (errors.Is(err, context.DeadlineExceeded) || apierrors.IsTimeout(err) || apierrors.IsServerTimeout(err)) && ctx.Err() == nil {
		warning(r.Events, s, v1alpha1.EventResultReadTimedOut, "ReadResult",
			"reading the PtahResultRecord of %s operation %s exceeded its time bound of %s, retrying in %s", runnerOp(c.Type), c.JobName, r.resultTimeout(), resultReadRetry)
		return reconcile.Result{RequeueAfter: resultReadRetry}, nil
	}
	warning(r.Events, s, v1alpha1.EventResultReadFailed, "ReadResult",
		"reading the result of %s operation %s failed, retrying in %s: %v", runnerOp(c.Type), c.JobName, resultReadRetry, err)
	return reconcile.Result{RequeueAfter: resultReadRetry}, nil
}

// jobFinished reports whether the Job controller finished the Job, and when.
func jobFinished(j *batchv1.Job) (bool, time.Time) {
	for _, cond := range j.Status.Conditions {
		if (cond.Type == batchv1.JobComplete || cond.Type == batchv1.JobFailed) && cond.Status == corev1.ConditionTrue {
			return true, cond.LastTransitionTime.Time
		}
	}
	return false, time.Time{}
}

func jobFailed(j *batchv1.Job) *batchv1.JobCondition {
	for i, cond := range j.Status.Conditions {
		if cond.Type == batchv1.JobFailed && cond.Status == corev1.ConditionTrue {
			return &j.Status.Conditions[i]
		}
	}
	return nil
}

// noResult settles a finished Job that delivered no record.
func (r *SchemaReconciler) noResult(ctx context.Context, s *v1alpha1.PtahSchema, c *v1alpha1.ActiveOperation, j *batchv1.Job, finished time.Time) (reconcile.Result, error) {
	failed := jobFailed(j)
	if failed == nil {
		// The runner exits 0 only after its record was created: give the
		// API a moment before deciding the read timed out.
		if wait := finished.Add(r.resultTimeout()).Sub(r.clock()); wait > 0 {
			return reconcile.Result{RequeueAfter: wait}, nil
		}
	}
	if c.Type == v1alpha1.OperationApply {
		warning(r.Events, s, v1alpha1.EventApplyOutcomeUnknown, "ReadResult",
			"Apply Job %s ended with no result record, so whether it changed the database is unknown; observing the database read-only", c.JobName)
		msg := fmt.Sprintf("Apply Job %s ended with no result record", c.JobName)
		setCondition(s, v1alpha1.ConditionReconciliationFailed, metav1.ConditionTrue, v1alpha1.ReasonApplyOutcomeUnknown, msg)
		setCondition(s, v1alpha1.ConditionApplying, metav1.ConditionFalse, v1alpha1.ReasonJobCompleted, msg)
		s.Status.LastFailure = &v1alpha1.Failure{Code: "apply_outcome_unknown", Message: msg, Operation: c.Type, Time: metav1.Time{Time: r.clock()}}
		s.Status.Phase = v1alpha1.PhaseObserving
		return r.finish(ctx, s, c, v1alpha1.OperationObserve, 1, time.Time{})
	}
	if failed != nil {
		return r.failed(ctx, s, c, failure{code: "job_failed", message: fmt.Sprintf("Job %s failed (%s): %s", c.JobName, failed.Reason, failed.Message)})
	}
	warning(r.Events, s, v1alpha1.EventResultReadTimedOut, "ReadResult",
		"no PtahResultRecord %s arrived within %s of its Job completing; the %s operation is tried again", c.JobName, r.resultTimeout(), runnerOp(c.Type))
	return r.failed(ctx, s, c, failure{code: "result_read_timeout", message: fmt.Sprintf("Job %s completed but no result record arrived within %s", c.JobName, r.resultTimeout()), quiet: true})
}

// podAdmission reports, once per refusal, that the Job controller could not
// create the operation's Pod, and keeps looking while the Job waits.
func (r *SchemaReconciler) podAdmission(ctx context.Context, s *v1alpha1.PtahSchema, c *v1alpha1.ActiveOperation, j *batchv1.Job) (reconcile.Result, error) {
	if s.Status.Phase != phaseOf(c.Type) {
		s.Status.Phase = phaseOf(c.Type)
		if err := r.save(ctx, s); err != nil {
			return reconcile.Result{}, err
		}
	}
	if j.Status.Active > 0 || j.Status.Ready != nil && *j.Status.Ready > 0 {
		return reconcile.Result{}, nil
	}
	var evs corev1.EventList
	if err := r.APIReader.List(ctx, &evs, ctrl.InNamespace(s.Namespace), ctrl.MatchingFields{"involvedObject.name": j.Name}); err != nil {
		log.FromContext(ctx).Error(err, "list the Job's Events to look for Pod admission refusals", "job", j.Name)
		return reconcile.Result{RequeueAfter: podAdmissionRecheck}, nil
	}
	for _, ev := range evs.Items {
		if ev.Reason != "FailedCreate" || ev.InvolvedObject.UID != j.UID || r.refusals[ev.UID] {
			continue
		}
		if r.refusals == nil {
			r.refusals = map[types.UID]bool{}
		}
		r.refusals[ev.UID] = true
		warning(r.Events, s, v1alpha1.EventPodAdmissionRefused, "CreatePod",
			"the API server refused the Pod of %s Job %s; the Job keeps its deadline and the Job controller keeps trying: %s", c.Type, j.Name, ev.Message)
	}
	return reconcile.Result{RequeueAfter: podAdmissionRecheck}, nil
}

func (r *SchemaReconciler) save(ctx context.Context, s *v1alpha1.PtahSchema) error {
	if err := r.Client.Status().Update(ctx, s); err != nil {
		return fmt.Errorf("write status of PtahSchema %s/%s: %w", s.Namespace, s.Name, err)
	}
	return nil
}

func (r *SchemaReconciler) clock() time.Time {
	if r.now != nil {
		return r.now()
	}
	return time.Now()
}

func (r *SchemaReconciler) resultTimeout() time.Duration {
	if r.ResultTimeout > 0 {
		return r.ResultTimeout
	}
	return defaultResultBound
}

func planRef(s *v1alpha1.PtahSchema) string {
	if s.Status.Plan == nil {
		return "(none)"
	}
	return s.Status.Plan.Name
}

func durationOr(d *metav1.Duration, def time.Duration) time.Duration {
	if d == nil || d.Duration <= 0 {
		return def
	}
	return d.Duration
}
