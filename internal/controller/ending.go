package controller

import (
	"context"
	"errors"
	"fmt"
	"time"

	batchv1 "k8s.io/api/batch/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"sigs.k8s.io/controller-runtime/pkg/reconcile"

	v1alpha1 "ptah.run/operator/operator/api/v1alpha1"
)

// The decisions about an operation whose result cannot be read, or whose
// Job ended with none, are pure functions of what was observed; the engine
// reads, asks them, and writes what they say.

// notice is an Event to record: its reason and message.
type notice struct{ reason, message string }

// unreadable decides about a result record that could not be read: a read
// that ran out of its time bound (and not because the reconcile itself was
// cancelled) is a timeout, any other error a failed read. Both are retried
// after resultReadRetry.
func unreadable(err error, cancelled bool, name, job string, bound time.Duration) notice {
	if (errors.Is(err, context.DeadlineExceeded) || apierrors.IsTimeout(err) || apierrors.IsServerTimeout(err)) && !cancelled {
		return notice{v1alpha1.EventResultReadTimedOut, fmt.Sprintf("reading the PtahResultRecord of %s operation %s exceeded its time bound of %s, retrying in %s", name, job, bound, resultReadRetry)}
	}
	return notice{v1alpha1.EventResultReadFailed, fmt.Sprintf("reading the result of %s operation %s failed, retrying in %s: %v", name, job, resultReadRetry, err)}
}

// recordless is what becomes of an operation whose Job ended, at ended,
// without a record, as of now.
type recordless struct {
	// wait, when above 0, is how long the record may still take.
	wait time.Duration
	// events are recorded in order.
	events []notice
	// unknown, for an Apply, is why its outcome is unknown; otherwise
	// the operation failed as failure says.
	unknown string
	failure failure
}

// noRecord decides about a Job that ended without a result record. failed
// is its JobFailed condition (nil when it completed), why what kept its
// record from being delivered ("" when nothing says), name the operation
// as messages name it, and applyNext what happens to an Apply next. A
// completed Job's record gets bound to arrive.
func noRecord(c *v1alpha1.ActiveOperation, failed *batchv1.JobCondition, why, name, applyNext string, ended, now time.Time, bound time.Duration) recordless {
	if failed == nil {
		// The runner exits 0 only after its record was created: give the
		// API a moment before deciding the read timed out.
		if wait := ended.Add(bound).Sub(now); wait > 0 {
			return recordless{wait: wait}
		}
	}
	var d recordless
	if why != "" {
		next := "the operation is tried again"
		if c.Type == v1alpha1.OperationApply {
			next = applyNext
		}
		d.events = append(d.events, notice{v1alpha1.EventResultReadFailed, fmt.Sprintf("%s operation %s has no result to read: %s; %s. Check the Job's result transport: the runner's way to the API server and its permission to create the record", name, c.JobName, why, next)})
	}
	switch {
	case c.Type == v1alpha1.OperationApply:
		d.unknown = fmt.Sprintf("Apply Job %s ended with no result record", c.JobName)
		if why != "" {
			d.unknown += " (" + why + ")"
		}
	case why != "":
		d.failure = failure{code: "result_undelivered", message: fmt.Sprintf("Job %s failed: %s", c.JobName, why), quiet: true}
	case failed != nil:
		d.failure = failure{code: "job_failed", message: fmt.Sprintf("Job %s failed (%s): %s", c.JobName, failed.Reason, failed.Message)}
	default:
		d.events = append(d.events, notice{v1alpha1.EventResultReadTimedOut, fmt.Sprintf("no PtahResultRecord %s arrived within %s of its Job completing; the %s operation is tried again", c.JobName, bound, name)})
		d.failure = failure{code: "result_read_timeout", message: fmt.Sprintf("Job %s completed but no result record arrived within %s", c.JobName, bound), quiet: true}
	}
	return d
}

// readFailed records why the active claim's record could not be read, and
// looks again after resultReadRetry.
func (e *engine) readFailed(ctx context.Context, s subject, name string, c *v1alpha1.ActiveOperation, err error) (reconcile.Result, error) {
	n := unreadable(err, ctx.Err() != nil, name, c.JobName, e.resultTimeout())
	warning(e.Events, s, n.reason, "ReadResult", "%s", n.message)
	return reconcile.Result{RequeueAfter: resultReadRetry}, nil
}

// noResult settles a finished Job that delivered no record (noRecord): an
// Apply's unknown outcome goes to unknown, any other operation's failure to
// fail.
func (e *engine) noResult(ctx context.Context, s subject, name, applyNext string, c *v1alpha1.ActiveOperation, j *batchv1.Job, ended time.Time,
	unknown func(msg string) (reconcile.Result, error), fail func(failure) (reconcile.Result, error)) (reconcile.Result, error) {
	failed := jobFailed(j)
	why := ""
	if failed != nil {
		why = undelivered(ctx, e.APIReader, j)
	}
	d := noRecord(c, failed, why, name, applyNext, ended, e.clock(), e.resultTimeout())
	if d.wait > 0 {
		return reconcile.Result{RequeueAfter: d.wait}, nil
	}
	for _, n := range d.events {
		warning(e.Events, s, n.reason, "ReadResult", "%s", n.message)
	}
	if d.unknown != "" {
		return unknown(d.unknown)
	}
	return fail(d.failure)
}
