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

// podLogFinished settles a finished Job of the Pod-log result transport:
// its result is read from its Pod's log, or an Apply's from its Pod's
// termination summary (readLegacy says when). An Apply established by
// neither is recorded as unresolved; a reading is run again.
func (r *MigrationReconciler) podLogFinished(ctx context.Context, m *v1alpha1.PtahMigration, c *v1alpha1.ActiveOperation, j *batchv1.Job, finished time.Time) (reconcile.Result, error) {
	rec, lr, err := jobResult(ctx, r.APIReader, r.APIReader, r.Admission, r.Logs, r.resultTimeout(), m, c, j, finished, r.clock())
	if err != nil {
		if (errors.Is(err, context.DeadlineExceeded) || apierrors.IsTimeout(err) || apierrors.IsServerTimeout(err)) && ctx.Err() == nil {
			warning(r.Events, m, v1alpha1.EventResultReadTimedOut, "ReadResult",
				"reading the container log of legacy %s Job %s exceeded its time bound of %s, retrying in %s", c.Type, c.JobName, r.resultTimeout(), resultReadRetry)
		} else {
			warning(r.Events, m, v1alpha1.EventResultReadFailed, "ReadResult",
				"reading the result of legacy %s Job %s from its container log failed, retrying in %s: %v", c.Type, c.JobName, resultReadRetry, err)
		}
		return reconcile.Result{RequeueAfter: resultReadRetry}, nil
	}
	switch {
	case rec != nil:
		return r.consume(ctx, m, c, rec)
	case lr.Refused != "":
		summaryRefused(r.Events, m, c, lr.Refused)
		return r.uncertain(ctx, m, c, fmt.Sprintf("legacy Apply Job %s: %s, and its termination summary was refused", c.JobName, lr.Refused))
	case lr.Unknown != "":
		return r.uncertain(ctx, m, c, fmt.Sprintf("legacy Apply Job %s: %s", c.JobName, lr.Unknown))
	}
	warning(r.Events, m, v1alpha1.EventResultReadFailed, "ReadResult",
		"legacy %s Job %s: %s; the operation is tried again", c.Type, c.JobName, lr.Unreadable)
	return r.failed(ctx, m, c, failure{code: "result_unreadable", message: fmt.Sprintf("legacy Job %s: %s", c.JobName, lr.Unreadable), quiet: true})
}
