package controller

import (
	"context"
	"errors"
	"fmt"
	"time"

	batchv1 "k8s.io/api/batch/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/utils/clock"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/reconcile"

	"ptah.run/operator/internal/runner"
	v1alpha1 "ptah.run/operator/operator/api/v1alpha1"
)

// engine is the operation lifecycle both reconcilers run: the clients it
// works through, what its Jobs are bound to, how long results are waited
// for and history kept, the time, and what it remembers across
// reconciles. SchemaReconciler and MigrationReconciler embed it and keep
// only their own decisions.
type engine struct {
	Client client.Client
	// APIReader reads past the cache, where a stale read would lose a result.
	APIReader client.Reader
	Events    eventSink
	Binding   Binding
	// PlainHTTP lists registry hosts spoken to over plain HTTP.
	PlainHTTP []string
	// ResultTimeout bounds each read of a result record, and how long a
	// completed Job's record may take to arrive (default 15s).
	ResultTimeout time.Duration
	// Retention is how long finished Jobs and result records are kept (default 1h).
	Retention time.Duration
	// Admission proves record admission is enforcing in a namespace; both
	// reconcilers consult the same one.
	Admission *RecordAdmission
	// Clock is what the time is read from (nil: the system's).
	Clock clock.PassiveClock

	// refusals remembers the Pod-creation refusals and foreign records
	// already reported.
	refusals uidSet
	// swept remembers the subjects whose finished operations' credentials
	// this manager has revoked (sweepCredentials).
	swept uidSet
}

func newEngine(mgr ctrl.Manager, b Binding, plainHTTP []string) engine {
	return engine{
		Client:    mgr.GetClient(),
		APIReader: mgr.GetAPIReader(),
		Events:    mgr.GetEventRecorder(Name),
		Binding:   b,
		PlainHTTP: plainHTTP,
	}
}

func (e *engine) clock() time.Time {
	if e.Clock != nil {
		return e.Clock.Now()
	}
	return time.Now()
}

func (e *engine) resultTimeout() time.Duration {
	if e.ResultTimeout > 0 {
		return e.ResultTimeout
	}
	return defaultResultBound
}

func (e *engine) retention() time.Duration {
	if e.Retention > 0 {
		return e.Retention
	}
	return defaultRetention
}

// revoke deletes the ended operation c's credential, which invalidates its
// token, and has the next prune sweep s's credentials again: a create whose
// answer was lost (an API server restart) leaves one that no claim names.
func (e *engine) revoke(ctx context.Context, s subject, c *v1alpha1.ActiveOperation) {
	revokeCredential(ctx, e.Client, s, c)
	e.swept.remove(s.GetUID())
}

// sweep revokes s's credentials no claim names (sweepCredentials).
func (e *engine) sweep(ctx context.Context, s subject) {
	sweepCredentials(ctx, e.APIReader, e.Client, s, s.Operation().ActiveOperation, &e.swept)
}

// suspended says whether s already reads as held by spec.suspend.
func suspended(s subject) bool {
	return s.Operation().Phase == v1alpha1.PhaseSuspended && conditionIs(s, v1alpha1.ConditionSuspended, metav1.ConditionTrue, v1alpha1.ReasonSuspendedBySpec)
}

// markSuspended records that spec.suspend holds every new operation.
func markSuspended(s subject) {
	s.Operation().Phase = v1alpha1.PhaseSuspended
	setCondition(s, v1alpha1.ConditionSuspended, metav1.ConditionTrue, v1alpha1.ReasonSuspendedBySpec, "spec.suspend is true: no operation starts")
}

// setClaim records c, whose Pod template digests to template, as the
// active claim, to be dispatched at at (now when zero).
func setClaim(s subject, c *v1alpha1.ActiveOperation, template string, at time.Time) {
	st := s.Operation()
	st.ActiveOperation = c
	c.PodTemplateDigest = template
	st.NextReconciliationTime = nil
	if !at.IsZero() {
		st.NextReconciliationTime = &metav1.Time{Time: at}
	}
}

// untilNext is how long s rests before its next reconciliation is due; 0
// when it is due.
func (e *engine) untilNext(s subject) time.Duration {
	if next := s.Operation().NextReconciliationTime; next != nil {
		if wait := next.Sub(e.clock()); wait > 0 {
			return wait
		}
	}
	return 0
}

// turns is what a kind decides at each turn of following its active
// operation; follow, written once, finds which turn it is.
type turns[S subject] interface {
	// foreign refuses a record that is not the operation's result.
	foreign(ctx context.Context, s S, c *v1alpha1.ActiveOperation, bad *foreignRecord) (reconcile.Result, error)
	// readFailed is a record that could not be read or trusted.
	readFailed(ctx context.Context, s S, c *v1alpha1.ActiveOperation, err error) (reconcile.Result, error)
	// accept takes the operation's result record.
	accept(ctx context.Context, s S, c *v1alpha1.ActiveOperation, rec *v1alpha1.PtahResultRecord) (reconcile.Result, error)
	// vanished is a dispatched Job the API server no longer has.
	vanished(ctx context.Context, s S, c *v1alpha1.ActiveOperation) (reconcile.Result, error)
	// dispatch creates the claim's credential and Job.
	dispatch(ctx context.Context, s S) (reconcile.Result, error)
	// noResult is a Job that ended, at, without a record.
	noResult(ctx context.Context, s S, c *v1alpha1.ActiveOperation, j *batchv1.Job, at time.Time) (reconcile.Result, error)
	// running is a Job still running.
	running(ctx context.Context, s S, c *v1alpha1.ActiveOperation, j *batchv1.Job) (reconcile.Result, error)
}

// podLogTurns is a kind whose Jobs may report through their Pod's log
// (runner.TransportPodLog): such a Job, ended, is read there.
type podLogTurns[S subject] interface {
	podLogFinished(ctx context.Context, s S, c *v1alpha1.ActiveOperation, j *batchv1.Job, at time.Time) (reconcile.Result, error)
}

// follow resumes s's active claim: consume its result, create its Job if it
// has none yet, or wait for the Job.
func follow[S subject](ctx context.Context, e *engine, k turns[S], s S) (reconcile.Result, error) {
	c := s.Operation().ActiveOperation
	read := func(rd client.Reader) (reconcile.Result, bool, error) {
		rec, err := readRecord(ctx, rd, e.APIReader, e.Admission, e.resultTimeout(), s, c)
		if bad := (*foreignRecord)(nil); errors.As(err, &bad) {
			res, err := k.foreign(ctx, s, c, bad)
			return res, true, err
		}
		if err != nil {
			res, err := k.readFailed(ctx, s, c, err)
			return res, true, err
		}
		if rec != nil {
			res, err := k.accept(ctx, s, c, rec)
			return res, true, err
		}
		return reconcile.Result{}, false, nil
	}
	if res, done, err := read(e.Client); done {
		return res, err
	}
	var j batchv1.Job
	key := types.NamespacedName{Namespace: s.GetNamespace(), Name: c.JobName}
	err := e.Client.Get(ctx, key, &j)
	if apierrors.IsNotFound(err) && c.JobUID != "" {
		// The cache may lag the Job's creation: only the API server may say it is gone.
		if err = e.APIReader.Get(ctx, key, &j); apierrors.IsNotFound(err) {
			return k.vanished(ctx, s, c)
		}
	}
	if apierrors.IsNotFound(err) {
		return k.dispatch(ctx, s)
	}
	if err != nil {
		return reconcile.Result{}, fmt.Errorf("read Job %s/%s of the active operation of %s %s: %w", s.GetNamespace(), c.JobName, s.SubjectKind(), s.GetName(), err)
	}
	finished, at := jobFinished(&j)
	if !finished {
		return k.running(ctx, s, c, &j)
	}
	if pl, ok := k.(podLogTurns[S]); ok && jobTransport(&j) == runner.TransportPodLog {
		return pl.podLogFinished(ctx, s, c, &j, at)
	}
	// The cache may not hold a record the runner wrote just before it
	// exited: ask the API server before deciding there is none.
	if res, done, err := read(e.APIReader); done {
		return res, err
	}
	return k.noResult(ctx, s, c, &j, at)
}
