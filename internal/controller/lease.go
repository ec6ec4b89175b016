package controller

import (
	"context"
	"fmt"
	"time"

	coordinationv1 "k8s.io/api/coordination/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/utils/ptr"
	"sigs.k8s.io/controller-runtime/pkg/log"
	"sigs.k8s.io/controller-runtime/pkg/reconcile"

	v1alpha1 "ptah.run/operator/operator/api/v1alpha1"
)

// The database lease: one coordination.k8s.io Lease per database (named from
// the Secret reference that reaches it, since the manager never reads the
// URL) guards the operations whose result depends on nobody else changing
// the database meanwhile: Plan, Proof, Apply and a Resolve that plans. Its
// holder is the claim's operation id. A result is accepted only if the claim
// held the lease without a break from dispatch to the record.

const (
	defaultLeaseDuration = time.Minute
	leaseRecheck         = 5 * time.Second
)

// guarded claims run under the database lease: Plan, Proof, Apply, and a
// Resolve that plans after it resolves.
func guarded(c *v1alpha1.ActiveOperation) bool {
	return c.Type == v1alpha1.OperationPlan || c.Type == v1alpha1.OperationProof || c.Type == v1alpha1.OperationApply ||
		c.Type == v1alpha1.OperationResolve && c.ThenPlan
}

// leaseName names the lease of the database s targets.
func leaseName(s subject) string {
	u := s.SubjectTarget().URLFrom
	return "ptah-db-" + hexDigest(s.GetNamespace() + "/" + u.Name + "/" + u.Key)[:16]
}

func (r *SchemaReconciler) leaseDuration() time.Duration {
	if r.LeaseDuration > 0 {
		return r.LeaseDuration
	}
	return defaultLeaseDuration
}

// expired reports whether l's holder let it lapse before at.
func expired(l *coordinationv1.Lease, at time.Time) bool {
	if l.Spec.RenewTime == nil || l.Spec.LeaseDurationSeconds == nil {
		return true
	}
	return l.Spec.RenewTime.Add(time.Duration(*l.Spec.LeaseDurationSeconds) * time.Second).Before(at)
}

func holder(l *coordinationv1.Lease) string { return ptr.Deref(l.Spec.HolderIdentity, "") }

func (r *SchemaReconciler) readLease(ctx context.Context, s *v1alpha1.PtahSchema) (*coordinationv1.Lease, error) {
	var l coordinationv1.Lease
	err := r.APIReader.Get(ctx, types.NamespacedName{Namespace: s.Namespace, Name: leaseName(s)}, &l)
	if apierrors.IsNotFound(err) {
		return nil, nil
	}
	if err != nil {
		return nil, fmt.Errorf("read the database Lease %s/%s: %w", s.Namespace, leaseName(s), err)
	}
	return &l, nil
}

// acquire takes the database lease for claim c before its Job is created.
// It returns how long to wait when another operation holds it.
func (r *SchemaReconciler) acquire(ctx context.Context, s *v1alpha1.PtahSchema, c *v1alpha1.ActiveOperation) (time.Duration, error) {
	now := r.clock()
	secs := int32(r.leaseDuration().Seconds())
	l, err := r.readLease(ctx, s)
	if err != nil {
		return 0, err
	}
	if l == nil {
		l = &coordinationv1.Lease{
			ObjectMeta: metav1.ObjectMeta{Name: leaseName(s), Namespace: s.Namespace, Labels: map[string]string{LabelManagedBy: ManagedBy},
				OwnerReferences: []metav1.OwnerReference{leaseOwner(s)}},
			Spec: coordinationv1.LeaseSpec{HolderIdentity: ptr.To(c.ID), LeaseDurationSeconds: ptr.To(secs),
				AcquireTime: &metav1.MicroTime{Time: now}, RenewTime: &metav1.MicroTime{Time: now}},
		}
		if err := r.Client.Create(ctx, l); err != nil {
			return 0, fmt.Errorf("create the database Lease %s/%s: %w", s.Namespace, l.Name, err)
		}
		return 0, nil
	}
	h := holder(l)
	if h != "" && h != c.ID && !expired(l, now) {
		// Look again soon: a holder that finishes releases the lease early.
		left := l.Spec.RenewTime.Add(time.Duration(*l.Spec.LeaseDurationSeconds) * time.Second).Sub(now)
		return min(max(time.Second, left), leaseRecheck), nil
	}
	if h != c.ID {
		l.Spec.HolderIdentity = ptr.To(c.ID)
		l.Spec.AcquireTime = &metav1.MicroTime{Time: now}
		l.Spec.LeaseTransitions = ptr.To(ptr.Deref(l.Spec.LeaseTransitions, 0) + 1)
	}
	l.Spec.LeaseDurationSeconds = ptr.To(secs)
	l.Spec.RenewTime = &metav1.MicroTime{Time: now}
	if err := r.Client.Update(ctx, l); err != nil {
		return 0, fmt.Errorf("take the database Lease %s/%s: %w", s.Namespace, l.Name, err)
	}
	return 0, nil
}

// leaseOwner makes the schema that creates a database's lease its owner, so
// the lease goes with it. Owners are not added when another schema takes
// the lease (changing owner references needs delete on leases, which the
// manager otherwise never uses); a lease collected while another schema
// still uses it is simply created again by its next operation.
func leaseOwner(s subject) metav1.OwnerReference {
	return metav1.OwnerReference{APIVersion: v1alpha1.GroupVersion.String(), Kind: s.SubjectKind(), Name: s.GetName(), UID: s.GetUID()}
}

// reclaim takes the lease back for a running Apply whose hold lapsed (the
// manager was away longer than the lease), where nobody else took it
// meanwhile. The Apply is never stopped for the lapse.
func (r *SchemaReconciler) reclaim(ctx context.Context, s *v1alpha1.PtahSchema, c *v1alpha1.ActiveOperation, why string) error {
	l, err := r.readLease(ctx, s)
	if err != nil {
		return err
	}
	if l != nil && holder(l) != "" && holder(l) != c.ID && !expired(l, r.clock()) {
		return nil // another operation holds it: the record's continuity check decides
	}
	warning(r.Events, s, v1alpha1.EventLeaseContinuityLost, "Coordinate",
		"database lock ownership lapsed during Apply operation %s (%s); a running Apply is never stopped, so its Job runs on, the lease is taken back, and its result is proved by a fresh plan", c.JobName, why)
	_, err = r.acquire(ctx, s, c)
	return err
}

// renew extends the lease while c's Job runs. It reports a break: the lease
// is held by another, or it lapsed before this renewal.
func (r *SchemaReconciler) renew(ctx context.Context, s *v1alpha1.PtahSchema, c *v1alpha1.ActiveOperation) (lost string, err error) {
	now := r.clock()
	l, err := r.readLease(ctx, s)
	if err != nil {
		return "", err
	}
	if why := continuity(l, c, now); why != "" {
		return why, nil
	}
	l.Spec.RenewTime = &metav1.MicroTime{Time: now}
	if err := r.Client.Update(ctx, l); err != nil {
		return "", fmt.Errorf("renew the database Lease %s/%s: %w", s.Namespace, l.Name, err)
	}
	return "", nil
}

// continuity says why c did not hold l without a break up to at, or "".
func continuity(l *coordinationv1.Lease, c *v1alpha1.ActiveOperation, at time.Time) string {
	switch {
	case l == nil:
		return "the database Lease was deleted"
	case holder(l) != c.ID:
		return fmt.Sprintf("the database Lease %s is now held by %q", l.Name, holder(l))
	case expired(l, at):
		return fmt.Sprintf("the database Lease %s was last renewed at %s and lapsed before %s", l.Name,
			l.Spec.RenewTime.UTC().Format(time.RFC3339), at.UTC().Format(time.RFC3339))
	}
	return ""
}

// release hands the lease back if c still holds it.
func (r *SchemaReconciler) release(ctx context.Context, s *v1alpha1.PtahSchema, c *v1alpha1.ActiveOperation) {
	if !guarded(c) {
		return
	}
	l, err := r.readLease(ctx, s)
	if err != nil || l == nil || holder(l) != c.ID {
		return
	}
	l.Spec.HolderIdentity = nil
	if err := r.Client.Update(ctx, l); err != nil && !apierrors.IsConflict(err) {
		log.FromContext(ctx).Error(err, "release the database Lease; it lapses by itself", "lease", l.Name)
	}
}

// leaseLost discards the result of c, which was produced without continuous
// ownership of the database, and restarts the read-only proof (from the
// Resolve, when c was a Resolve that planned).
func (r *SchemaReconciler) leaseLost(ctx context.Context, s *v1alpha1.PtahSchema, c *v1alpha1.ActiveOperation, why string) (reconcile.Result, error) {
	r.ended(s, c, "discarded")
	warning(r.Events, s, v1alpha1.EventLeaseContinuityLost, "Coordinate",
		"database lock ownership was not continuous during %s operation %s (%s), so its result is discarded and the proof restarts", runnerOp(c.Type), c.JobName, why)
	if c.Type == v1alpha1.OperationApply {
		setCondition(s, v1alpha1.ConditionApplying, metav1.ConditionFalse, v1alpha1.ReasonJobCompleted, "the Apply's result was discarded: "+why)
	}
	if c.Type == v1alpha1.OperationResolve {
		// Its digest went with its plan: the reading starts over.
		s.Status.Phase = v1alpha1.PhaseResolving
		return r.finish(ctx, s, c, v1alpha1.OperationResolve, 1, time.Time{})
	}
	s.Status.Phase = v1alpha1.PhaseObserving
	return r.finish(ctx, s, c, v1alpha1.OperationObserve, 1, time.Time{})
}
