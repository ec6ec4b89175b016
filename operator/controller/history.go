package controller

import (
	"context"
	"time"

	batchv1 "k8s.io/api/batch/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	ctrl "sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/log"

	v1alpha1 "ptah.run/operator/operator/api/v1alpha1"
	"ptah.run/operator/operator/runner"
)

// Finished Jobs and result records are kept a while so a person can read
// what an operation did, then deleted so they do not pile up: a schema
// re-reads its database every interval, one Job and record each time.
const defaultRetention = time.Hour

func (r *SchemaReconciler) retention() time.Duration {
	if r.Retention > 0 {
		return r.Retention
	}
	return defaultRetention
}

// prune deletes the finished Jobs and the result records of s's ended
// operations once they are older than the retention. The active claim's
// Job and record are never touched.
func (r *SchemaReconciler) prune(ctx context.Context, s *v1alpha1.PtahSchema) {
	active := ""
	if c := s.Status.ActiveOperation; c != nil {
		active = c.JobName
	}
	cutoff := r.clock().Add(-r.retention())
	mine := ctrl.MatchingLabels{runner.LabelSchema: s.Name}
	var jobs batchv1.JobList
	if err := r.Client.List(ctx, &jobs, ctrl.InNamespace(s.Namespace), mine, ctrl.MatchingLabels{LabelManagedBy: ManagedBy}); err != nil {
		log.FromContext(ctx).Error(err, "list finished Jobs to prune; they are pruned at the next operation")
		return
	}
	for i := range jobs.Items {
		j := &jobs.Items[i]
		if done, at := jobFinished(j); done && j.Name != active && at.Before(cutoff) && metav1.IsControlledBy(j, s) {
			r.delete(ctx, j)
		}
	}
	var recs v1alpha1.PtahResultRecordList
	if err := r.Client.List(ctx, &recs, ctrl.InNamespace(s.Namespace), mine); err != nil {
		log.FromContext(ctx).Error(err, "list result records to prune; they are pruned at the next operation")
		return
	}
	for i := range recs.Items {
		rec := &recs.Items[i]
		if rec.Name != active && rec.Spec.Subject.Kind == v1alpha1.KindPtahSchema && rec.Spec.Subject.Name == s.Name && rec.CreationTimestamp.Time.Before(cutoff) {
			r.delete(ctx, rec)
		}
	}
}

func (r *SchemaReconciler) delete(ctx context.Context, o ctrl.Object) {
	if err := r.Client.Delete(ctx, o, ctrl.PropagationPolicy(metav1.DeletePropagationBackground)); ctrl.IgnoreNotFound(err) != nil {
		log.FromContext(ctx).Error(err, "prune a finished operation's object; it is pruned at the next operation", "name", o.GetName())
	}
}
