package controller

import (
	"context"
	"sort"
	"strings"
	"time"

	batchv1 "k8s.io/api/batch/v1"
	corev1 "k8s.io/api/core/v1"
	rbacv1 "k8s.io/api/rbac/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	ctrl "sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/log"

	"ptah.run/operator/internal/runner"
	v1alpha1 "ptah.run/operator/operator/api/v1alpha1"
)

// Finished Jobs and result records are kept a while so a person can read
// what an operation did, then deleted so they do not pile up: a schema
// re-reads its database every interval, one Job and record each time. Plans
// that nothing names any more (not the current plan, not the applied one, no
// approval) are kept as history, the newest PlanHistory of them; older ones
// go after the same time: each change of the desired or live schema
// publishes one.
const (
	defaultRetention   = time.Hour
	defaultPlanHistory = 10
)

// prune deletes the finished Jobs and the result records of s's ended
// operations once they are older than the retention, and plans nothing
// names any more past the history kept. The active claim's Job and record
// are never touched.
func (r *SchemaReconciler) prune(ctx context.Context, s *v1alpha1.PtahSchema) {
	if cutoff, ok := r.engine.prune(ctx, s); ok {
		r.prunePlans(ctx, s, cutoff)
	}
}

// prune deletes the finished Jobs and the result records of s's ended
// operations once they are older than the retention (the cutoff it
// returns, with whether it listed them all), and sweeps s's credentials.
// The active claim's Job and record are never touched.
func (e *engine) prune(ctx context.Context, s subject) (time.Time, bool) {
	active := ""
	if c := s.Operation().ActiveOperation; c != nil {
		active = c.JobName
	}
	cutoff := e.clock().Add(-e.retention())
	mine := ctrl.MatchingLabels{subjectLabel(s): s.GetName()}
	var jobs batchv1.JobList
	if err := e.Client.List(ctx, &jobs, ctrl.InNamespace(s.GetNamespace()), mine, ctrl.MatchingLabels{LabelManagedBy: ManagedBy}); err != nil {
		log.FromContext(ctx).Error(err, "list finished Jobs to prune; they are pruned at the next operation")
		return cutoff, false
	}
	e.sweep(ctx, s)
	for i := range jobs.Items {
		j := &jobs.Items[i]
		if done, at := jobFinished(j); done && j.Name != active && at.Before(cutoff) && metav1.IsControlledBy(j, s) {
			e.delete(ctx, j)
		}
	}
	var recs v1alpha1.PtahResultRecordList
	if err := e.Client.List(ctx, &recs, ctrl.InNamespace(s.GetNamespace()), mine); err != nil {
		log.FromContext(ctx).Error(err, "list result records to prune; they are pruned at the next operation")
		return cutoff, false
	}
	for i := range recs.Items {
		rec := &recs.Items[i]
		if rec.Name != active && rec.Spec.Subject.Kind == s.SubjectKind() && rec.Spec.Subject.Name == s.GetName() && rec.CreationTimestamp.Time.Before(cutoff) {
			e.delete(ctx, rec)
		}
	}
	return cutoff, true
}

func (r *SchemaReconciler) planHistory() int {
	if r.PlanHistory > 0 {
		return r.PlanHistory
	}
	return defaultPlanHistory
}

// prunePlans deletes s's plans older than cutoff that neither its status nor
// any approval names, beyond the newest planHistory of them, so what is
// current, what was approved and the recent changes stay readable.
func (r *SchemaReconciler) prunePlans(ctx context.Context, s *v1alpha1.PtahSchema, cutoff time.Time) {
	keep := map[string]bool{}
	if p := s.Status.Plan; p != nil {
		keep[p.Name] = true
	}
	if a := s.Status.Applied; a != nil && a.PlanFingerprint != "" {
		keep[planName(s.Name, a.PlanFingerprint)] = true
	}
	var approvals v1alpha1.PtahSchemaApprovalList
	if err := r.Client.List(ctx, &approvals, ctrl.InNamespace(s.Namespace)); err != nil {
		log.FromContext(ctx).Error(err, "list approvals before pruning plans; plans are pruned at the next operation")
		return
	}
	for _, a := range approvals.Items {
		if a.Spec.SchemaName == s.Name {
			keep[a.Spec.PlanName] = true
		}
	}
	var plans v1alpha1.PtahSchemaPlanList
	if err := r.Client.List(ctx, &plans, ctrl.InNamespace(s.Namespace), ctrl.MatchingLabels{runner.LabelSchema: s.Name}); err != nil {
		log.FromContext(ctx).Error(err, "list plans to prune; they are pruned at the next operation")
		return
	}
	var unnamed []*v1alpha1.PtahSchemaPlan
	for i := range plans.Items {
		if p := &plans.Items[i]; !keep[p.Name] && metav1.IsControlledBy(p, s) {
			unnamed = append(unnamed, p)
		}
	}
	sort.Slice(unnamed, func(i, j int) bool {
		a, b := unnamed[i].CreationTimestamp.Time, unnamed[j].CreationTimestamp.Time
		if a.Equal(b) {
			return unnamed[i].Name > unnamed[j].Name
		}
		return a.After(b)
	})
	for i, p := range unnamed {
		if i >= r.planHistory() && p.CreationTimestamp.Time.Before(cutoff) {
			r.delete(ctx, p)
		}
	}
}

func (e *engine) delete(ctx context.Context, o ctrl.Object) {
	if err := e.Client.Delete(ctx, o, ctrl.PropagationPolicy(metav1.DeletePropagationBackground)); ctrl.IgnoreNotFound(err) != nil {
		log.FromContext(ctx).Error(err, "prune a finished operation's object; it is pruned at the next operation", "name", o.GetName())
	}
}

// sweepCredentials revokes every operation credential of s but the active
// claim's, once per subject in this manager's life and again after each
// revocation (swept): a manager
// killed after it wrote the next claim and before it revoked the ended
// operation's credential leaves that credential behind, and no claim names
// it any more. They are listed past the cache (no informer holds every
// ServiceAccount of the cluster for this).
func sweepCredentials(ctx context.Context, reader ctrl.Reader, cl ctrl.Client, s subject, active *v1alpha1.ActiveOperation, swept *uidSet) {
	if swept.has(s.GetUID()) {
		return
	}
	keep := ""
	if active != nil {
		keep = credentialName(active)
	}
	mine := []ctrl.ListOption{ctrl.InNamespace(s.GetNamespace()), ctrl.MatchingLabels{LabelManagedBy: ManagedBy, subjectLabel(s): s.GetName()}}
	var sas corev1.ServiceAccountList
	var roles rbacv1.RoleList
	var rbs rbacv1.RoleBindingList
	var owed []ctrl.Object
	for _, l := range []ctrl.ObjectList{&rbs, &roles, &sas} {
		if err := reader.List(ctx, l, mine...); err != nil {
			log.FromContext(ctx).Error(err, "list operation credentials to revoke those of ended operations; tried again at the next operation")
			return
		}
	}
	for i := range rbs.Items {
		owed = append(owed, &rbs.Items[i])
	}
	for i := range roles.Items {
		owed = append(owed, &roles.Items[i])
	}
	for i := range sas.Items {
		owed = append(owed, &sas.Items[i])
	}
	for _, o := range owed {
		if o.GetName() == keep || !strings.HasPrefix(o.GetName(), "ptah-op-") || !metav1.IsControlledBy(o, s) {
			continue
		}
		if err := cl.Delete(ctx, o); err != nil && !apierrors.IsNotFound(err) {
			log.FromContext(ctx).Error(err, "revoke the credential of an ended operation; tried again at the next operation, and the owner reference removes it with the subject", "name", o.GetName())
			return
		}
	}
	swept.add(s.GetUID())
}
