package controller

import (
	"context"
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

// SchemaReconciler keeps PtahSchemas where their owners declared them, one
// Job per operation. It never reads a Secret.
type SchemaReconciler struct {
	engine
	// LeaseDuration is how long the database lease holds unrenewed (default 1m).
	LeaseDuration time.Duration
	// PlanHistory is how many plans nothing names any more are kept per
	// schema, newest first, past the retention (default 10).
	PlanHistory int
	// DevDatabaseImage is the dev database sidecar's image (default
	// DefaultDevDatabaseImage); spec.execution.devDatabase overrides it.
	DevDatabaseImage string
}

// Reconcile reads the schema, retires evidence its spec or binding no longer
// supports, then follows the active operation or decides the next one.
func (r *SchemaReconciler) Reconcile(ctx context.Context, req reconcile.Request) (reconcile.Result, error) {
	return reconcileOne(ctx, &r.engine, req, &v1alpha1.PtahSchema{}, forgetSchema, r.pipeline, r.deleting)
}

// deleting leaves a schema being deleted to its owner references, which
// remove its Jobs, plans and credentials.
func (r *SchemaReconciler) deleting(context.Context, *v1alpha1.PtahSchema) (reconcile.Result, error) {
	return reconcile.Result{}, nil
}

func (r *SchemaReconciler) pipeline(ctx context.Context, s *v1alpha1.PtahSchema) (reconcile.Result, error) {
	return pipeline(ctx, &r.engine, r, s)
}

// revise claims a Verify when the verification policy changed under the
// evidence (invalidate).
func (r *SchemaReconciler) revise(ctx context.Context, s *v1alpha1.PtahSchema) (bool, error) {
	return r.invalidate(ctx, s)
}

// admissionDown holds s while record admission is not enforcing in its
// namespace: the condition says why, and a running Plan or Apply keeps its
// database lease (a running Apply is never stopped), so no other operation
// takes the database meanwhile.
func (r *SchemaReconciler) admissionDown(ctx context.Context, s *v1alpha1.PtahSchema, problem string) (reconcile.Result, error) {
	if holdForAdmission(s, problem) {
		if err := r.save(ctx, s); err != nil {
			return reconcile.Result{}, err
		}
	}
	res := reconcile.Result{RequeueAfter: r.Admission.interval()}
	c := s.Status.ActiveOperation
	if c == nil || c.JobUID == "" || !guarded(c) {
		return res, nil
	}
	lost, err := r.renew(ctx, s, c)
	if err != nil {
		return reconcile.Result{}, err
	}
	if lost != "" && c.Type == v1alpha1.OperationApply {
		if err := r.reclaim(ctx, s, c, lost); err != nil {
			return reconcile.Result{}, err
		}
	}
	res.RequeueAfter = min(res.RequeueAfter, r.leaseDuration()/3)
	return res, nil
}

// retire starts again from Resolve when the spec changed or the execution
// binding the evidence was produced under did (the engine's retire).
func (r *SchemaReconciler) retire(ctx context.Context, s *v1alpha1.PtahSchema) (bool, error) {
	return retire(ctx, &r.engine, r, s)
}

// first is the operation a schema's reading starts with: a Resolve, which
// turns the tag into a digest (and verifies it under a policy). A spec that
// pins a digest and names no policy leaves nothing to resolve, so the
// digest is recorded from the spec and the reading starts where a
// Resolve's result would have led it (readNext). The registry is then
// first read by the Observe or Plan that pulls the artifact by that digest.
func (r *SchemaReconciler) first(s *v1alpha1.PtahSchema) v1alpha1.OperationType {
	d := pinnedDigest(s.Spec.Desired.OCIRef)
	if d == "" || s.Spec.Desired.VerificationPolicyFrom != nil {
		return v1alpha1.OperationResolve
	}
	pinnedTo(s, d)
	return readNext(s)
}

// retiring records that s's evidence is retired: a plan made under another
// binding is no longer approvable, and a new generation is read again.
func (r *SchemaReconciler) retiring(_ context.Context, s *v1alpha1.PtahSchema, old *v1alpha1.ExecutionBinding, b v1alpha1.ExecutionBinding) {
	if old != nil && *old != b {
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
}

func describeBinding(b v1alpha1.ExecutionBinding) string {
	return fmt.Sprintf("{executor %s, ptah %s, runner %s, state %s}", b.ExecutorImage, b.PtahVersion, b.RunnerProtocol, b.ControllerStateVersion)
}

// deleteJob deletes c's Job, if it was dispatched.
func (r *SchemaReconciler) deleteJob(ctx context.Context, s *v1alpha1.PtahSchema, c *v1alpha1.ActiveOperation) {
	j := &batchv1.Job{ObjectMeta: metav1.ObjectMeta{Name: c.JobName, Namespace: s.Namespace}}
	if err := r.Client.Delete(ctx, j, ctrl.PropagationPolicy(metav1.DeletePropagationBackground)); err != nil && !apierrors.IsNotFound(err) {
		log.FromContext(ctx).Error(err, "delete the Job of a discarded claim; its owner reference removes it with the schema", "job", c.JobName)
	}
}

// rest is where a schema with no operation waits: for an approval, or for
// its interval to re-read drift (Blocked too: it is resolved and planned
// again, and lifts when the evidence changes).
func (r *SchemaReconciler) rest(ctx context.Context, s *v1alpha1.PtahSchema) (reconcile.Result, error) {
	r.prune(ctx, s)
	switch s.Status.Phase {
	case v1alpha1.PhaseBlocked:
		if s.Status.NextReconciliationTime == nil {
			// Blocked before re-examination existed: from now on, every interval.
			s.Status.NextReconciliationTime = &metav1.Time{Time: r.reexamine(s)}
			return reconcile.Result{RequeueAfter: r.reexamine(s).Sub(r.clock())}, r.save(ctx, s)
		}
	case v1alpha1.PhaseAwaitingApproval:
		return r.awaitApproval(ctx, s)
	}
	return due(ctx, &r.engine, r, s)
}

// running keeps a guarded operation's database lease while its Job runs,
// and reports the Pod's admission refusals.
func (r *SchemaReconciler) running(ctx context.Context, s *v1alpha1.PtahSchema, c *v1alpha1.ActiveOperation, j *batchv1.Job) (reconcile.Result, error) {
	if guarded(c) {
		lost, err := r.renew(ctx, s, c)
		if err != nil {
			return reconcile.Result{}, err
		}
		if lost != "" && c.Type == v1alpha1.OperationApply {
			// The manager never stops a running Apply: it takes the lease
			// back where nobody else holds it, and the continuity check
			// when the record arrives decides what its result proves.
			if err := r.reclaim(ctx, s, c, lost); err != nil {
				return reconcile.Result{}, err
			}
		} else if lost != "" {
			r.deleteJob(ctx, s, c)
			return r.leaseLost(ctx, s, c, lost)
		}
		res, err := r.podAdmission(ctx, s, c, j)
		if renew := r.leaseDuration() / 3; res.RequeueAfter == 0 || res.RequeueAfter > renew {
			res.RequeueAfter = renew
		}
		return res, err
	}
	return r.podAdmission(ctx, s, c, j)
}

// accept consumes rec unless it was produced without continuous ownership
// of the database lease its operation needed.
func (r *SchemaReconciler) accept(ctx context.Context, s *v1alpha1.PtahSchema, c *v1alpha1.ActiveOperation, rec *v1alpha1.PtahResultRecord) (reconcile.Result, error) {
	if guarded(c) {
		l, err := r.readLease(ctx, s)
		if err != nil {
			return reconcile.Result{}, err
		}
		if lost := continuity(l, c, rec.CreationTimestamp.Time); lost != "" {
			return r.leaseLost(ctx, s, c, lost)
		}
	}
	return r.consume(ctx, s, c, rec)
}

// dispatch creates the claim's credential and Job (the engine's dispatch).
func (r *SchemaReconciler) dispatch(ctx context.Context, s *v1alpha1.PtahSchema) (reconcile.Result, error) {
	return dispatch(ctx, &r.engine, r, s)
}

// admit is what a schema's operation needs before its credential: a
// ServiceAccount and policy that exist, an Apply's approval and plan, and
// a guarded operation's database lease.
func (r *SchemaReconciler) admit(ctx context.Context, s *v1alpha1.PtahSchema, c *v1alpha1.ActiveOperation) (bool, reconcile.Result, error) {
	for _, check := range []func(context.Context, *v1alpha1.PtahSchema, *v1alpha1.ActiveOperation) (*failure, error){r.missingServiceAccount, r.missingPolicy} {
		if f, err := check(ctx, s, c); f != nil || err != nil {
			if err != nil {
				return false, reconcile.Result{}, err
			}
			res, err := r.failed(ctx, s, c, *f)
			return false, res, err
		}
	}
	if c.Type == v1alpha1.OperationApply {
		if ok, err := r.applyInputs(ctx, s, c); !ok || err != nil {
			return false, reconcile.Result{Requeue: err == nil && s.Status.ActiveOperation != nil}, err
		}
	}
	if guarded(c) {
		wait, err := r.acquire(ctx, s, c)
		if err != nil || wait > 0 {
			return false, reconcile.Result{RequeueAfter: wait}, err
		}
	}
	return true, reconcile.Result{}, nil
}

// confirm: a schema's claim needs nothing more once its credential exists.
func (r *SchemaReconciler) confirm(context.Context, *v1alpha1.PtahSchema, *v1alpha1.ActiveOperation) (bool, error) {
	return true, nil
}

// started shows an Apply's plan on Applying once its Job exists.
func (r *SchemaReconciler) started(s *v1alpha1.PtahSchema, c *v1alpha1.ActiveOperation) {
	if c.Type == v1alpha1.OperationApply {
		setCondition(s, v1alpha1.ConditionApplying, metav1.ConditionTrue, v1alpha1.ReasonApprovedPlan, fmt.Sprintf("applying plan %s", planRef(s)))
	}
}

// missingServiceAccount is the configuration failure of a schema whose
// spec.execution.serviceAccountName names no ServiceAccount: its Pod could
// not be created, so no Job is made for it.
func (r *SchemaReconciler) missingServiceAccount(ctx context.Context, s *v1alpha1.PtahSchema, _ *v1alpha1.ActiveOperation) (*failure, error) {
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

// foreignRecord is a record under the claim's name that is not the
// operation's result: another operation's, or one its own Pod did not write.
type foreignRecord struct {
	rec *v1alpha1.PtahResultRecord
	why string
	// unstamped: no admission policy stamped it, which is the install's
	// fault rather than an intruder's.
	unstamped bool
}

func (f *foreignRecord) Error() string {
	return fmt.Sprintf("PtahResultRecord %s/%s is not this operation's result: %s", f.rec.Namespace, f.rec.Name, f.why)
}

// readRecord is the active claim c's PtahResultRecord, or nil while there
// is none. A record is the operation's result only when it echoes the claim
// and was created, as admission stamped it, by the operation's own account
// from a Pod of the claim's Job; any other is a *foreignRecord, never
// consumed. rd reads the record (the cache or the API server), api the Pod
// its stamp names, within timeout. A record
// that passes is trusted only after adm proves, right then, that record
// admission is enforcing in its namespace (an *admissionNotEnforcing otherwise).
func readRecord(ctx context.Context, rd, api ctrl.Reader, adm *RecordAdmission, timeout time.Duration, s subject, c *v1alpha1.ActiveOperation) (*v1alpha1.PtahResultRecord, error) {
	var rec v1alpha1.PtahResultRecord
	ctx, cancel := context.WithTimeout(ctx, timeout)
	defer cancel()
	err := rd.Get(ctx, types.NamespacedName{Namespace: s.GetNamespace(), Name: c.JobName}, &rec)
	if apierrors.IsNotFound(err) {
		return nil, nil
	}
	if err != nil {
		return nil, fmt.Errorf("read PtahResultRecord %s/%s: %w", s.GetNamespace(), c.JobName, err)
	}
	if rec.Spec.OperationID != c.ID || rec.Spec.Digest != c.CoordinationDigest ||
		rec.Spec.Subject.Kind != s.SubjectKind() || rec.Spec.Subject.Name != s.GetName() {
		return nil, &foreignRecord{rec: &rec, why: fmt.Sprintf("it names operation %q of %s %s, not the active operation's id and digest",
			rec.Spec.OperationID, rec.Spec.Subject.Kind, rec.Spec.Subject.Name)}
	}
	why, err := creatorMismatch(ctx, api, s, c, &rec)
	if err != nil {
		return nil, err
	}
	if why != "" {
		return nil, &foreignRecord{&rec, why, why == errUnstamped}
	}
	if err := adm.trustRecords(ctx, s.GetNamespace()); err != nil {
		return nil, err
	}
	return &rec, nil
}

const errUnstamped = "it carries no creator stamped by admission: install the record admission policies of operator/config/admission"

// creatorMismatch says why rec's admission stamp does not name the
// operation's account and a Pod of its Job, or "".
func creatorMismatch(ctx context.Context, api ctrl.Reader, s subject, c *v1alpha1.ActiveOperation, rec *v1alpha1.PtahResultRecord) (string, error) {
	by := rec.CreatedBy
	account := "system:serviceaccount:" + s.GetNamespace() + ":" + podServiceAccount(s, c)
	switch {
	case by == nil:
		return errUnstamped, nil
	case by.Username != account:
		return fmt.Sprintf("it was created by %q, not by the operation's account %s", by.Username, account), nil
	case by.PodName == "" || by.PodUID == "":
		return fmt.Sprintf("it was created by %s with a token bound to no Pod", by.Username), nil
	}
	var pod corev1.Pod
	err := api.Get(ctx, types.NamespacedName{Namespace: s.GetNamespace(), Name: by.PodName}, &pod)
	if apierrors.IsNotFound(err) {
		return fmt.Sprintf("the Pod %s that created it no longer exists, so nothing shows it ran Job %s", by.PodName, c.JobName), nil
	}
	if err != nil {
		return "", fmt.Errorf("read Pod %s/%s that created PtahResultRecord %s: %w", s.GetNamespace(), by.PodName, rec.Name, err)
	}
	owner := metav1.GetControllerOf(&pod)
	switch {
	case string(pod.UID) != by.PodUID:
		return fmt.Sprintf("it was created from an earlier Pod named %s", by.PodName), nil
	case owner == nil || owner.Kind != "Job" || owner.Name != c.JobName || c.JobUID != "" && string(owner.UID) != c.JobUID:
		return fmt.Sprintf("it was created from Pod %s, which is not a Pod of Job %s", by.PodName, c.JobName), nil
	}
	return "", nil
}

// foreign refuses a record that is not the operation's result, once per
// record, and claims the operation again under a new name so nothing
// waits on the taken one. A running Apply is not claimed again: its Job
// runs to its end, and since its own record cannot be written under the
// taken name, its outcome is then unknown and read back read-only.
func (r *SchemaReconciler) foreign(ctx context.Context, s *v1alpha1.PtahSchema, c *v1alpha1.ActiveOperation, bad *foreignRecord) (reconcile.Result, error) {
	if r.refusals.add(bad.rec.UID) {
		next := "the operation is claimed again under a new name"
		if c.Type == v1alpha1.OperationApply && c.JobUID != "" {
			next = "the running Apply Job runs to its end, and its outcome is then read back read-only"
		}
		warning(r.Events, s, v1alpha1.EventResultReadFailed, "ReadResult",
			"%s operation %s: %v; it is not consumed, and %s", runnerOp(c.Type), c.JobName, bad, next)
	}
	if c.Type == v1alpha1.OperationApply && c.JobUID != "" {
		var j batchv1.Job
		err := r.APIReader.Get(ctx, types.NamespacedName{Namespace: s.Namespace, Name: c.JobName}, &j)
		if apierrors.IsNotFound(err) {
			return r.vanished(ctx, s, c)
		}
		if err != nil {
			return reconcile.Result{}, fmt.Errorf("read Job %s/%s of the active Apply: %w", s.Namespace, c.JobName, err)
		}
		if finished, _ := jobFinished(&j); finished {
			return r.outcomeUnknown(ctx, s, c, fmt.Sprintf("Apply Job %s ended, and the record under its name is not its result", c.JobName), v1alpha1.ReasonJobCompleted)
		}
		return reconcile.Result{RequeueAfter: r.leaseDuration() / 3}, nil
	}
	r.deleteJob(ctx, s, c)
	r.revoke(ctx, s, c)
	r.release(ctx, s, c)
	if bad.unstamped {
		setCondition(s, v1alpha1.ConditionReconciliationFailed, metav1.ConditionTrue, v1alpha1.ReasonConfigurationError, "result_unstamped: "+bad.Error())
	}
	next := newClaim(&r.engine, s, c.Type, c.Attempt)
	if c.Approval != "" {
		r.returnApproval(ctx, s, c)
		next.Approval = c.Approval
	}
	// Claimed again after the read retry interval, so a cause that
	// persists (a missing policy, a forger at work) is no busy loop.
	at := r.clock().Add(resultReadRetry)
	_, err := claim(ctx, &r.engine, r, s, next, at)
	return reconcile.Result{RequeueAfter: resultReadRetry}, err
}

// vanished settles a dispatched claim whose Job is gone with no record:
// deleted by hand or by a namespace's cleanup, or lost with its node.
func (r *SchemaReconciler) vanished(ctx context.Context, s *v1alpha1.PtahSchema, c *v1alpha1.ActiveOperation) (reconcile.Result, error) {
	msg := fmt.Sprintf("Job %s was deleted before it delivered a result record", c.JobName)
	if c.Type == v1alpha1.OperationApply {
		return r.outcomeUnknown(ctx, s, c, msg, v1alpha1.ReasonApplyOutcomeUnknown)
	}
	return r.failed(ctx, s, c, failure{code: "job_deleted", message: msg})
}

// outcomeUnknown records that an Apply ended with no result to say whether
// it changed the database, and observes the database read-only.
func (r *SchemaReconciler) outcomeUnknown(ctx context.Context, s *v1alpha1.PtahSchema, c *v1alpha1.ActiveOperation, msg, applying string) (reconcile.Result, error) {
	r.ended(s, c, "unknown")
	warning(r.Events, s, v1alpha1.EventApplyOutcomeUnknown, "ReadResult",
		"%s, so whether it changed the database is unknown; observing the database read-only", msg)
	setCondition(s, v1alpha1.ConditionReconciliationFailed, metav1.ConditionTrue, v1alpha1.ReasonApplyOutcomeUnknown, msg)
	setCondition(s, v1alpha1.ConditionApplying, metav1.ConditionFalse, applying, msg)
	s.Status.LastFailure = &v1alpha1.Failure{Code: "apply_outcome_unknown", Message: msg, Operation: c.Type, Time: metav1.Time{Time: r.clock()}}
	s.Status.Phase = v1alpha1.PhaseObserving
	return r.finish(ctx, s, c, v1alpha1.OperationObserve, 1, time.Time{})
}

func (r *SchemaReconciler) readFailed(ctx context.Context, s *v1alpha1.PtahSchema, c *v1alpha1.ActiveOperation, err error) (reconcile.Result, error) {
	return r.engine.readFailed(ctx, s, runnerOp(c.Type), c, err)
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

// noResult settles a finished Job that delivered no record; an Apply's
// outcome is established read-only.
func (r *SchemaReconciler) noResult(ctx context.Context, s *v1alpha1.PtahSchema, c *v1alpha1.ActiveOperation, j *batchv1.Job, finished time.Time) (reconcile.Result, error) {
	return r.engine.noResult(ctx, s, runnerOp(c.Type), "whether it changed the database is established read-only", c, j, finished,
		func(msg string) (reconcile.Result, error) {
			return r.outcomeUnknown(ctx, s, c, msg, v1alpha1.ReasonJobCompleted)
		},
		func(f failure) (reconcile.Result, error) { return r.failed(ctx, s, c, f) })
}

// podAdmission reports, once per refusal, that the Job controller could not
// create the operation's Pod, and keeps looking while the Job waits.
func (r *SchemaReconciler) podAdmission(ctx context.Context, s *v1alpha1.PtahSchema, c *v1alpha1.ActiveOperation, j *batchv1.Job) (reconcile.Result, error) {
	if f, err := r.misconfigured(ctx, s, j); f != nil || err != nil {
		if err != nil {
			return reconcile.Result{}, err
		}
		r.deleteJob(ctx, s, c)
		return r.failed(ctx, s, c, *f)
	}
	return watchPod(ctx, &r.engine, r, s, c, j)
}

// reportPodRefusals records on s, once per refusal (seen), each refusal of
// the Job controller to create the Pod of c's Job j.
func reportPodRefusals(ctx context.Context, api ctrl.Reader, sink eventSink, s subject, c *v1alpha1.ActiveOperation, j *batchv1.Job, seen *uidSet) {
	var evs corev1.EventList
	if err := api.List(ctx, &evs, ctrl.InNamespace(s.GetNamespace()), ctrl.MatchingFields{"involvedObject.name": j.Name}); err != nil {
		log.FromContext(ctx).Error(err, "list the Job's Events to look for Pod admission refusals", "job", j.Name)
		return
	}
	for _, ev := range evs.Items {
		if ev.Reason != "FailedCreate" || ev.InvolvedObject.UID != j.UID || !seen.add(ev.UID) {
			continue
		}
		warning(sink, s, v1alpha1.EventPodAdmissionRefused, "CreatePod",
			"the API server refused the Pod of %s Job %s; the Job keeps its deadline and the Job controller keeps trying: %s", c.Type, j.Name, ev.Message)
	}
}

func (r *SchemaReconciler) save(ctx context.Context, s *v1alpha1.PtahSchema) error {
	health(s)
	if err := r.Client.Status().Update(ctx, s); err != nil {
		return fmt.Errorf("write status of PtahSchema %s/%s: %w", s.Namespace, s.Name, err)
	}
	publishSchemaState(s)
	return nil
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
