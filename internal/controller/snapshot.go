package controller

import (
	"context"
	"time"

	"sigs.k8s.io/controller-runtime/pkg/log"

	v1alpha1 "ptah.run/operator/operator/api/v1alpha1"
)

// snapshot checks, before c's Job is created, that the Pod template this
// manager would dispatch is the one the claim recorded. A different one
// (usually a new manager release) is taken once, with an Event; a template
// that changes again retires the claim and claims the operation anew.
// It reports whether dispatch goes on with c.
func (r *SchemaReconciler) snapshot(ctx context.Context, s *v1alpha1.PtahSchema, c *v1alpha1.ActiveOperation) (bool, error) {
	d := r.templateDigest(s, c)
	switch {
	case c.PodTemplateDigest == d:
		return true, nil
	case c.PodTemplateDigest == "":
		c.PodTemplateDigest = d // a claim written before snapshots were kept
		return true, nil
	case !c.SnapshotRefreshed:
		normal(r.Events, s, v1alpha1.EventAdmissionSnapshotRefreshed, "Dispatch",
			"the Pod template of %s Job %s differs from the one its claim recorded (%s, now %s), usually because a new manager release took over; the claim stands and its admission snapshot is refreshed once",
			c.Type, c.JobName, c.PodTemplateDigest, d)
		c.PodTemplateDigest, c.SnapshotRefreshed = d, true
		return true, r.save(ctx, s)
	}
	log.FromContext(ctx).Info("the Pod template changed again after its admission snapshot was refreshed; the claim is retired and the operation claimed anew",
		"job", c.JobName, "recorded", c.PodTemplateDigest, "now", d)
	r.revoke(ctx, s, c)
	_, err := r.claim(ctx, s, c.Type, c.Attempt, time.Time{})
	return false, err
}
