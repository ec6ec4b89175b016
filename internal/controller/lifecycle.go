package controller

import (
	"context"
	"fmt"
	"time"

	batchv1 "k8s.io/api/batch/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/log"
	"sigs.k8s.io/controller-runtime/pkg/reconcile"

	v1alpha1 "ptah.run/operator/operator/api/v1alpha1"
)

// kind is what the engine asks of each kind to run the lifecycle of its
// operations (claim, snapshot, dispatch, finish, retire): the objects only
// the kind can make and the decisions only it can take. Everything else is
// written once, below.
type kind[S subject] interface {
	turns[S]
	save(ctx context.Context, s S) error
	// job is the Job that runs claim c.
	job(s S, c *v1alpha1.ActiveOperation) *batchv1.Job
	// admit is what must hold before c's credential is issued (for an
	// Apply, its approval consumed and its plan current; for a guarded
	// operation, the database's lease); false stops dispatch with res.
	admit(ctx context.Context, s S, c *v1alpha1.ActiveOperation) (bool, reconcile.Result, error)
	// issue creates c's operation-bound credential.
	issue(ctx context.Context, s S, c *v1alpha1.ActiveOperation) error
	// confirm is asked last before c's Job is created; false stops
	// dispatch and looks again.
	confirm(ctx context.Context, s S, c *v1alpha1.ActiveOperation) (bool, error)
	// started records on s what c's Job, now created, means.
	started(s S, c *v1alpha1.ActiveOperation)
	// release lets go what c held besides its credential.
	release(ctx context.Context, s S, c *v1alpha1.ActiveOperation)
	// prune deletes what s's ended operations left past retention.
	prune(ctx context.Context, s S)
	// deleteJob deletes c's Job, if it was dispatched.
	deleteJob(ctx context.Context, s S, c *v1alpha1.ActiveOperation)
	// returnApproval hands back the approval Apply claim c consumed.
	returnApproval(ctx context.Context, s S, c *v1alpha1.ActiveOperation)
	// retiring records on s that the evidence it holds is retired: its
	// spec changed, or the execution binding did (old, now b).
	retiring(ctx context.Context, s S, old *v1alpha1.ExecutionBinding, b v1alpha1.ExecutionBinding)
	// first is the operation a reading of s starts with; it may record on s
	// what it decided from the spec alone.
	first(s S) v1alpha1.OperationType
	// admissionDown holds s while record admission is not enforcing in its
	// namespace (problem says why).
	admissionDown(ctx context.Context, s S, problem string) (reconcile.Result, error)
	// revise settles what the kind settles once the evidence is current
	// and before the active operation is followed; true: s was claimed
	// anew, look again.
	revise(ctx context.Context, s S) (bool, error)
	// rest is where s waits with no operation active and not suspended.
	rest(ctx context.Context, s S) (reconcile.Result, error)
}

// pipeline is what every reconcile of a live object runs. No record's stamp
// means anything while record admission is not enforcing in its namespace,
// so nothing starts and nothing is consumed until it is. A dispatched Apply
// runs to its end: spec edits (suspend included), binding changes, lease
// lapses and restarts wait for its result. Then evidence the spec or
// binding no longer supports is retired, and the active operation is
// followed, or s is held by spec.suspend, or it rests.
func pipeline[S subject](ctx context.Context, e *engine, k kind[S], s S) (reconcile.Result, error) {
	if p := e.Admission.Problem(ctx, s.GetNamespace()); p != "" {
		return k.admissionDown(ctx, s, p)
	}
	if admissionLapsed(s) {
		if err := admissionRestored(ctx, e.Client, e.APIReader, e.Events, s); err != nil {
			return reconcile.Result{}, err
		}
		return reconcile.Result{Requeue: true}, k.save(ctx, s)
	}
	if running, err := applyRunning(ctx, e.APIReader, s, s.Operation().ActiveOperation); running || err != nil {
		if err != nil {
			return reconcile.Result{}, err
		}
		return follow(ctx, e, k, s)
	}
	for _, settle := range []func() (bool, error){
		func() (bool, error) { return retire(ctx, e, k, s) },
		func() (bool, error) { return k.revise(ctx, s) },
	} {
		if restarted, err := settle(); restarted || err != nil {
			return reconcile.Result{Requeue: err == nil}, err
		}
	}
	if s.Operation().ActiveOperation != nil {
		return follow(ctx, e, k, s)
	}
	if s.SubjectSuspended() {
		return hold(ctx, k, s)
	}
	return k.rest(ctx, s)
}

// reconcileOne reads the object req names into s and runs live on it, or
// deleting while it is being deleted. A write that lost to another is not
// an error: the object is read again.
func reconcileOne[S subject](ctx context.Context, e *engine, req reconcile.Request, s S, forget func(namespace, name string), live, deleting func(context.Context, S) (reconcile.Result, error)) (reconcile.Result, error) {
	if err := e.Client.Get(ctx, req.NamespacedName, s); err != nil {
		if apierrors.IsNotFound(err) {
			forget(req.Namespace, req.Name)
		}
		return reconcile.Result{}, client.IgnoreNotFound(err)
	}
	run := live
	if !s.GetDeletionTimestamp().IsZero() {
		run = deleting
	}
	res, err := run(ctx, s)
	if apierrors.IsConflict(err) {
		return reconcile.Result{Requeue: true}, nil
	}
	return res, err
}

// newClaim is the claim of attempt attempt of operation typ on s as s now is.
func newClaim(e *engine, s subject, typ v1alpha1.OperationType, attempt int32) *v1alpha1.ActiveOperation {
	c := subjectClaim(s, s.SubjectSpec(), s.SubjectPlanFingerprint(), typ, attempt, e.Binding.of(s), e.clock())
	// Decided once, when claimed: the Job, the lease and the reading of the
	// result all follow the claim, whatever the status does meanwhile.
	if ps, ok := s.(*v1alpha1.PtahSchema); ok {
		c.ThenPlan = plansAfterResolve(ps, typ)
	}
	return c
}

// templateDigest is the digest of the Pod template k would dispatch for c:
// what a claim's admission snapshot records.
func templateDigest[S subject](k kind[S], s S, c *v1alpha1.ActiveOperation) string {
	return "sha256:" + hexDigest(k.job(s, c).Spec.Template)
}

// hold records, once, that spec.suspend holds every new operation of s.
func hold[S subject](ctx context.Context, k kind[S], s S) (reconcile.Result, error) {
	if suspended(s) {
		return reconcile.Result{}, nil
	}
	markSuspended(s)
	return reconcile.Result{}, k.save(ctx, s)
}

// claim writes c, the claim for the next operation, to status before
// anything is created for it, then dispatches it unless it waits until at.
// The result is dispatch's: a claim that has to wait (for the database
// lease the operation that just ended still holds, or for its credential)
// is looked at again then, not left to an event that may never come.
func claim[S subject](ctx context.Context, e *engine, k kind[S], s S, c *v1alpha1.ActiveOperation, at time.Time) (reconcile.Result, error) {
	setClaim(s, c, templateDigest(k, s, c), at)
	if err := k.save(ctx, s); err != nil {
		return reconcile.Result{}, err
	}
	if !at.IsZero() {
		return reconcile.Result{}, nil
	}
	return dispatch(ctx, e, k, s)
}

// claimNew claims attempt attempt of operation typ on s, to be dispatched
// at at (now when zero).
func claimNew[S subject](ctx context.Context, e *engine, k kind[S], s S, typ v1alpha1.OperationType, attempt int32, at time.Time) (reconcile.Result, error) {
	return claim(ctx, e, k, s, newClaim(e, s, typ, attempt), at)
}

// due claims s's first operation once its rest is over.
func due[S subject](ctx context.Context, e *engine, k kind[S], s S) (reconcile.Result, error) {
	if wait := e.untilNext(s); wait > 0 {
		return reconcile.Result{RequeueAfter: wait}, nil
	}
	_, err := claimNew(ctx, e, k, s, k.first(s), 1, time.Time{})
	return reconcile.Result{Requeue: true}, err
}

// dispatch creates the active claim's credential and Job, unless the claim
// waits: for its time, spec.suspend, a Pod template that changed under it,
// or what the kind admits it on.
func dispatch[S subject](ctx context.Context, e *engine, k kind[S], s S) (reconcile.Result, error) {
	c := s.Operation().ActiveOperation
	if wait := e.untilNext(s); wait > 0 {
		return reconcile.Result{RequeueAfter: wait}, nil
	}
	if s.SubjectSuspended() {
		return hold(ctx, k, s)
	}
	if current, err := snapshot(ctx, e, k, s, c); !current || err != nil {
		return reconcile.Result{Requeue: err == nil}, err
	}
	if ok, res, err := k.admit(ctx, s, c); !ok || err != nil {
		return res, err
	}
	if err := k.issue(ctx, s, c); err != nil {
		warning(e.Events, s, v1alpha1.EventResultCredentialFailed, "IssueCredential",
			"issuing the result credential %s for %s operation %s failed, retrying in %s: %v", credentialName(c), runnerOp(c.Type), c.JobName, credentialRetry, err)
		return reconcile.Result{RequeueAfter: credentialRetry}, nil
	}
	if ok, err := k.confirm(ctx, s, c); !ok || err != nil {
		return reconcile.Result{Requeue: err == nil}, err
	}
	j := k.job(s, c)
	err := e.Client.Create(ctx, j)
	switch {
	case apierrors.IsAlreadyExists(err):
		// A manager before this one created it: this is a resume, not a start.
		if err := e.APIReader.Get(ctx, types.NamespacedName{Namespace: s.GetNamespace(), Name: c.JobName}, j); err != nil {
			return reconcile.Result{}, fmt.Errorf("read Job %s/%s for the %s operation of %s %s: %w", s.GetNamespace(), c.JobName, c.Type, s.SubjectKind(), s.GetName(), err)
		}
	case err != nil:
		return reconcile.Result{}, fmt.Errorf("create Job %s/%s for the %s operation of %s %s: %w", s.GetNamespace(), c.JobName, c.Type, s.SubjectKind(), s.GetName(), err)
	default:
		normal(e.Events, s, v1alpha1.EventOperationStarted, "Dispatch", "%s Job %s started", c.Type, c.JobName)
		jobsCreated.WithLabelValues(s.GetNamespace(), s.SubjectKind(), string(c.Type)).Inc()
	}
	c.JobUID = string(j.UID)
	st := s.Operation()
	st.Phase = phaseOf(c.Type)
	st.LastAttemptTime = &metav1.Time{Time: e.clock()}
	st.NextReconciliationTime = nil
	k.started(s, c)
	return reconcile.Result{}, k.save(ctx, s)
}

// snapshot checks, before c's Job is created, that the Pod template this
// manager would dispatch is the one the claim recorded. A different one
// (usually a new manager release) is taken once, with an Event; a template
// that changes again retires the claim and claims the operation anew,
// with the approval it carried. It reports whether dispatch goes on with c.
func snapshot[S subject](ctx context.Context, e *engine, k kind[S], s S, c *v1alpha1.ActiveOperation) (bool, error) {
	d := templateDigest(k, s, c)
	switch {
	case c.PodTemplateDigest == d:
		return true, nil
	case c.PodTemplateDigest == "":
		c.PodTemplateDigest = d // a claim written before snapshots were kept
		return true, nil
	case !c.SnapshotRefreshed:
		normal(e.Events, s, v1alpha1.EventAdmissionSnapshotRefreshed, "Dispatch",
			"the Pod template of %s Job %s differs from the one its claim recorded (%s, now %s), usually because a new manager release took over; the claim stands and its admission snapshot is refreshed once",
			c.Type, c.JobName, c.PodTemplateDigest, d)
		c.PodTemplateDigest, c.SnapshotRefreshed = d, true
		return true, k.save(ctx, s)
	}
	log.FromContext(ctx).Info("the Pod template changed again after its admission snapshot was refreshed; the claim is retired and the operation claimed anew",
		"job", c.JobName, "recorded", c.PodTemplateDigest, "now", d)
	e.revoke(ctx, s, c)
	k.release(ctx, s, c)
	// The approval the retired claim consumed is handed back for the new
	// claim, which consumes it under its own ID.
	k.returnApproval(ctx, s, c)
	next := newClaim(e, s, c.Type, c.Attempt)
	next.Approval = c.Approval
	_, err := claim(ctx, e, k, s, next, time.Time{})
	return false, err
}

// finish ends operation c (nil: none was active): the next claim, if
// next names one, is written with the status, then what c held is let go.
func finish[S subject](ctx context.Context, e *engine, k kind[S], s S, c *v1alpha1.ActiveOperation, next v1alpha1.OperationType, attempt int32, at time.Time) (reconcile.Result, error) {
	var res reconcile.Result
	var err error
	if next == "" {
		st := s.Operation()
		st.ActiveOperation = nil
		st.NextReconciliationTime = nil
		if !at.IsZero() {
			st.NextReconciliationTime = &metav1.Time{Time: at}
		}
		err = k.save(ctx, s)
	} else {
		// A next claim guarded like c waits for c's lease, released below.
		res, err = claim(ctx, e, k, s, newClaim(e, s, next, attempt), at)
	}
	if err != nil {
		return reconcile.Result{}, err
	}
	if c != nil {
		e.revoke(ctx, s, c)
		k.release(ctx, s, c)
	}
	k.prune(ctx, s)
	if !at.IsZero() {
		return reconcile.Result{RequeueAfter: at.Sub(e.clock())}, nil
	}
	return res, nil
}

// retire starts s again from its first operation when its spec changed or
// the execution binding its evidence was produced under did. It reports
// whether it did.
func retire[S subject](ctx context.Context, e *engine, k kind[S], s S) (bool, error) {
	st := s.Operation()
	b := e.Binding.of(s)
	old := st.ExecutionBinding
	if old != nil && *old == b && st.ObservedGeneration == s.GetGeneration() {
		return false, nil
	}
	k.retiring(ctx, s, old, b)
	discard(ctx, e, k, s)
	st.ExecutionBinding = &b
	st.ObservedGeneration = s.GetGeneration()
	st.NextReconciliationTime = nil
	if s.SubjectSuspended() {
		markSuspended(s)
		return true, k.save(ctx, s)
	}
	setCondition(s, v1alpha1.ConditionSuspended, metav1.ConditionFalse, v1alpha1.ReasonNotSuspended, "spec.suspend is false")
	st.Phase = v1alpha1.PhasePending
	_, err := claim(ctx, e, k, s, newClaim(e, s, k.first(s), 1), time.Time{})
	return true, err
}

// discard drops s's active claim before it ended: its Job (if
// dispatched), its credential and lease, and the approval an Apply claim
// consumed. It is never called for a dispatched Apply (see applyRunning).
func discard[S subject](ctx context.Context, e *engine, k kind[S], s S) {
	c := s.Operation().ActiveOperation
	if c == nil {
		return
	}
	k.deleteJob(ctx, s, c)
	e.revoke(ctx, s, c)
	k.release(ctx, s, c)
	e.ended(s, c, "discarded")
	if c.Type == v1alpha1.OperationApply {
		k.returnApproval(ctx, s, c)
		setCondition(s, v1alpha1.ConditionApplying, metav1.ConditionFalse, v1alpha1.ReasonClaimRetired, "the Apply claim was retired before its Job was created: its inputs changed")
	}
	s.Operation().ActiveOperation = nil
}

// watchPod keeps s's phase that of its running operation c and, while the
// Pod of c's Job j does not run, reports each admission refusal of it once.
func watchPod[S subject](ctx context.Context, e *engine, k kind[S], s S, c *v1alpha1.ActiveOperation, j *batchv1.Job) (reconcile.Result, error) {
	if st := s.Operation(); st.Phase != phaseOf(c.Type) {
		st.Phase = phaseOf(c.Type)
		if err := k.save(ctx, s); err != nil {
			return reconcile.Result{}, err
		}
	}
	if j.Status.Active > 0 || j.Status.Ready != nil && *j.Status.Ready > 0 {
		return reconcile.Result{}, nil
	}
	reportPodRefusals(ctx, e.APIReader, e.Events, s, c, j, &e.refusals)
	return reconcile.Result{RequeueAfter: podAdmissionRecheck}, nil
}

// outdated reports whether s's spec or execution binding changed since its
// active claim was made: a running Apply's result is then recorded, but
// what follows belongs to the new generation.
func (e *engine) outdated(s subject) bool {
	st := s.Operation()
	return st.ObservedGeneration != s.GetGeneration() || st.ExecutionBinding != nil && *st.ExecutionBinding != e.Binding.of(s)
}

// ended records how long s's dispatched operation c took to settle.
func (e *engine) ended(s subject, c *v1alpha1.ActiveOperation, outcome string) {
	operationEnded(s.SubjectKind(), s.GetNamespace(), c, s.Operation().LastAttemptTime, outcome, e.clock())
}

// recordFailure records failure f of operation c on s: in full as
// status.lastFailure, its summary on ReconciliationFailed.
func (e *engine) recordFailure(s subject, c *v1alpha1.ActiveOperation, f failure) {
	full := f.message
	if f.detail != nil {
		full += " (ptah: " + f.detail.Code + ": " + f.detail.Message + ")"
	}
	s.Operation().LastFailure = &v1alpha1.Failure{Code: f.code, Message: full, Operation: c.Type, Time: metav1.Time{Time: e.clock()}}
	reason := v1alpha1.ReasonOperationFailed
	if f.configuration {
		reason = v1alpha1.ReasonConfigurationError
	}
	setCondition(s, v1alpha1.ConditionReconciliationFailed, metav1.ConditionTrue, reason, f.summary())
}
