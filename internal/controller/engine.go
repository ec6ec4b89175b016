package controller

import (
	"context"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/utils/clock"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/client"

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
