package controller

import (
	"context"
	"fmt"
	"strings"
	"time"

	rbacv1 "k8s.io/api/rbac/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	ctrl "sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/log"
	"sigs.k8s.io/controller-runtime/pkg/reconcile"

	"ptah.run/operator/internal/runner"
	v1alpha1 "ptah.run/operator/operator/api/v1alpha1"
	"ptah.run/operator/operator/artifact"
	"ptah.run/operator/operator/report"
)

// failure is an operation's error as status and Events carry it.
type failure struct {
	code, message string
	// detail is ptah's own error, kept in full on status.lastFailure.
	detail *v1alpha1.OperationError
	// quiet: a more specific Event than OperationFailed was already recorded.
	quiet bool
	// configuration: the spec or what it names cannot work, so the
	// condition's reason is ConfigurationError rather than OperationFailed.
	configuration bool
	// notStarted: the operation's container never started (its Pod could
	// not be configured), so an Apply changed nothing.
	notStarted bool
}

func (f failure) String() string { return f.code + ": " + f.message }

// maxCause bounds the cause from ptah a condition and an Event carry.
const maxCause = 300

// summary is the failure as a condition and an Event carry it: the
// "<code>: <message>" head, then ptah's own first line (it never names a
// credential: ptah's errors name the server's host and port only), bounded.
func (f failure) summary() string {
	if f.detail == nil || f.detail.Message == "" {
		return f.String()
	}
	cause, _, _ := strings.Cut(f.detail.Message, "\n")
	return f.String() + ": " + bound(cause, maxCause)
}

// consume settles the active operation with its record and claims the next.
func (r *SchemaReconciler) consume(ctx context.Context, s *v1alpha1.PtahSchema, c *v1alpha1.ActiveOperation, rec *v1alpha1.PtahResultRecord) (reconcile.Result, error) {
	if e := rec.Spec.Error; e != nil {
		return r.refusedOrFailed(ctx, s, c, rec)
	}
	r.ended(s, c, "succeeded")
	res := rec.Spec.Result
	if res == nil {
		res = &v1alpha1.OperationResult{}
	}
	setCondition(s, v1alpha1.ConditionReconciliationFailed, metav1.ConditionFalse, v1alpha1.ReasonSucceeded, fmt.Sprintf("%s operation completed", runnerOp(c.Type)))
	normal(r.Events, s, v1alpha1.EventOperationCompleted, "Complete", "%s operation completed", runnerOp(c.Type))
	switch c.Type {
	case v1alpha1.OperationResolve:
		return r.resolved(ctx, s, c, res)
	case v1alpha1.OperationVerify:
		return r.verified(ctx, s, c, res)
	case v1alpha1.OperationObserve:
		return r.observed(ctx, s, c, res)
	case v1alpha1.OperationPlan, v1alpha1.OperationProof:
		return r.planned(ctx, s, c, res)
	case v1alpha1.OperationApply:
		if r.outdated(s) {
			// The proof belongs to the generation the spec now has.
			setCondition(s, v1alpha1.ConditionApplying, metav1.ConditionFalse, v1alpha1.ReasonJobCompleted, fmt.Sprintf(
				"plan %s applied; the spec or execution binding changed while it ran, so the schema is read again from Resolve and proved by a fresh plan", planRef(s)))
			_, err := r.finish(ctx, s, c, "", 0, time.Time{})
			return reconcile.Result{Requeue: err == nil}, err
		}
		setCondition(s, v1alpha1.ConditionApplying, metav1.ConditionFalse, v1alpha1.ReasonJobCompleted, fmt.Sprintf("plan %s applied; proving convergence with a fresh plan", planRef(s)))
		return r.finish(ctx, s, c, v1alpha1.OperationProof, 1, time.Time{})
	}
	return r.finish(ctx, s, c, "", 0, time.Time{})
}

func (r *SchemaReconciler) resolved(ctx context.Context, s *v1alpha1.PtahSchema, c *v1alpha1.ActiveOperation, res *v1alpha1.OperationResult) (reconcile.Result, error) {
	if res.ResolvedDigest == "" {
		return r.failed(ctx, s, c, failure{code: runner.ErrOperation, message: "resolve reported no digest"})
	}
	resolvedTo(s, res.ResolvedDigest)
	if s.Spec.Desired.VerificationPolicyFrom == nil {
		unverified(s)
		return r.thenRead(ctx, s, c, res)
	}
	if res.Verified != nil {
		// The Resolve verified what it resolved, in the same inspection.
		return r.verified(ctx, s, c, res)
	}
	policy, err := r.policyDigest(ctx, s)
	if err != nil {
		return reconcile.Result{}, err
	}
	if s.Status.Source.Verified && s.Status.Source.PolicyDigest == policy {
		return r.thenRead(ctx, s, c, res)
	}
	// A runner that does not verify while resolving: a Verify of its own.
	return r.finish(ctx, s, c, v1alpha1.OperationVerify, 1, time.Time{})
}

// resolvedTo records the digest a Resolve found; a new digest's
// verification is to be made afresh.
func resolvedTo(s *v1alpha1.PtahSchema, digest string) {
	sourceIs(s, digest, fmt.Sprintf("%s resolved to %s", s.Spec.Desired.OCIRef, digest))
}

// pinnedDigest is the digest ref pins ("oci://host/repo@sha256:..." or
// "...:tag@sha256:..."), or "" when it names a tag alone.
func pinnedDigest(ref string) string {
	r, err := artifact.ParseRef(ref)
	if err != nil {
		return ""
	}
	d, err := r.Digest()
	if err != nil {
		return ""
	}
	return d.String()
}

// pinnedTo records the digest the spec pins, with no policy to verify it
// against, where a Resolve of that reference would have.
func pinnedTo(s *v1alpha1.PtahSchema, digest string) {
	sourceIs(s, digest, fmt.Sprintf("%s pins %s: nothing to resolve; the registry is read when the artifact is pulled", s.Spec.Desired.OCIRef, digest))
	unverified(s)
}

// unverified records that no policy asks for the source to be verified.
func unverified(s *v1alpha1.PtahSchema) {
	s.Status.Source.Verified = false
	setCondition(s, v1alpha1.ConditionArtifactVerified, metav1.ConditionTrue, v1alpha1.ReasonNoPolicy, "spec.desired.verificationPolicyFrom is not set")
}

func sourceIs(s *v1alpha1.PtahSchema, digest, message string) {
	if s.Status.Source == nil || s.Status.Source.ResolvedDigest != digest {
		s.Status.Source = &v1alpha1.Source{ResolvedDigest: digest}
	}
	setCondition(s, v1alpha1.ConditionArtifactResolved, metav1.ConditionTrue, v1alpha1.ReasonResolved, message)
}

func (r *SchemaReconciler) verified(ctx context.Context, s *v1alpha1.PtahSchema, c *v1alpha1.ActiveOperation, res *v1alpha1.OperationResult) (reconcile.Result, error) {
	if res.Verified == nil || !*res.Verified {
		return r.verificationRefused(ctx, s, c, "verification reported no verdict")
	}
	policy, err := r.policyDigest(ctx, s)
	if err != nil {
		return reconcile.Result{}, err
	}
	s.Status.Source.Verified, s.Status.Source.PolicyDigest = true, policy
	setCondition(s, v1alpha1.ConditionArtifactVerified, metav1.ConditionTrue, v1alpha1.ReasonVerified,
		fmt.Sprintf("%s satisfies the policy in ConfigMap %s", s.Status.Source.ResolvedDigest, s.Spec.Desired.VerificationPolicyFrom.Name))
	return r.thenRead(ctx, s, c, res)
}

// thenRead ends a Resolve or Verify with the read that follows it
// (readNext). When that is a Plan and the Resolve's Pod already made it
// (a claim marked ThenPlan, which held the database lease for it), from the
// digest just recorded and after the verdict about it, the plan is taken as
// a Plan's would be; otherwise the read is claimed. A plan that comes where an Observe is next is not used: only an
// Observe may say a proved schema is still in sync.
func (r *SchemaReconciler) thenRead(ctx context.Context, s *v1alpha1.PtahSchema, c *v1alpha1.ActiveOperation, res *v1alpha1.OperationResult) (reconcile.Result, error) {
	next := readNext(s)
	if next == v1alpha1.OperationPlan && c.Type == v1alpha1.OperationResolve && c.ThenPlan && res.Plan != nil {
		return r.planned(ctx, s, c, res)
	}
	return r.finish(ctx, s, c, next, 1, time.Time{})
}

// readNext is the read that follows Resolve and Verify. An Observe only
// chooses between resting (this artifact proved InSync at this generation and
// nothing drifted) and planning; with nothing proved it can only lead to a
// Plan, so the Plan comes at once and the first apply has one Pod fewer.
func readNext(s *v1alpha1.PtahSchema) v1alpha1.OperationType {
	if proved(s) {
		return v1alpha1.OperationObserve
	}
	return v1alpha1.OperationPlan
}

// afterObserve is what an Observe's finding leads to: a Plan, or rest ("").
func afterObserve(s *v1alpha1.PtahSchema, drift bool) v1alpha1.OperationType {
	if drift || !proved(s) {
		return v1alpha1.OperationPlan
	}
	return ""
}

// proved: a fresh plan showed this artifact converged at the current
// generation. A proof holds for the spec it was made under: after a spec
// change (protected tables, policy, exclusions) only a fresh plan at the
// current generation may say InSync again.
func proved(s *v1alpha1.PtahSchema) bool {
	return provable(s) && s.Status.Source != nil && s.Status.Applied.ArtifactDigest == s.Status.Source.ResolvedDigest
}

// provable: some artifact, the one status.applied names, is proved at the
// current generation, so a Resolve that finds it leads to an Observe.
func provable(s *v1alpha1.PtahSchema) bool {
	c := meta.FindStatusCondition(s.Status.Conditions, v1alpha1.ConditionInSync)
	return s.Status.Applied != nil && c != nil && c.Status == metav1.ConditionTrue && c.ObservedGeneration == s.Generation
}

func (r *SchemaReconciler) observed(ctx context.Context, s *v1alpha1.PtahSchema, c *v1alpha1.ActiveOperation, res *v1alpha1.OperationResult) (reconcile.Result, error) {
	setCondition(s, v1alpha1.ConditionDatabaseReachable, metav1.ConditionTrue, v1alpha1.ReasonConnected, "the observe operation read the database")
	drift := res.DriftDetected != nil && *res.DriftDetected
	if afterObserve(s, drift) == v1alpha1.OperationPlan {
		if drift {
			setCondition(s, v1alpha1.ConditionDriftDetected, metav1.ConditionTrue, v1alpha1.ReasonDriftFound, "the live schema differs from the desired one")
			setCondition(s, v1alpha1.ConditionInSync, metav1.ConditionFalse, v1alpha1.ReasonChangesPending, "the live schema differs from the desired one; planning")
		}
		return r.finish(ctx, s, c, v1alpha1.OperationPlan, 1, time.Time{})
	}
	// Nothing drifted since the last proof of this artifact: still in sync.
	setCondition(s, v1alpha1.ConditionDriftDetected, metav1.ConditionFalse, v1alpha1.ReasonNoDrift, "the live schema matches the desired one")
	s.Status.Phase = v1alpha1.PhaseInSync
	return r.finish(ctx, s, c, "", 0, r.clock().Add(durationOr(s.Spec.Interval, defaultInterval)))
}

// planned publishes the plan and passes it through the policy gate.
func (r *SchemaReconciler) planned(ctx context.Context, s *v1alpha1.PtahSchema, c *v1alpha1.ActiveOperation, res *v1alpha1.OperationResult) (reconcile.Result, error) {
	setCondition(s, v1alpha1.ConditionDatabaseReachable, metav1.ConditionTrue, v1alpha1.ReasonConnected, fmt.Sprintf("the %s operation read the database", runnerOp(c.Type)))
	if res.Plan == nil {
		return r.failed(ctx, s, c, failure{code: runner.ErrOperation, message: fmt.Sprintf("%s reported no plan", runnerOp(c.Type))})
	}
	applied := s.Status.Plan
	p, err := r.publish(ctx, s, res.Plan)
	if err != nil {
		return reconcile.Result{}, err
	}
	s.Status.Plan = &v1alpha1.PlanSummary{Name: p.Name, Fingerprint: p.Spec.Fingerprint, Digest: p.Spec.Digest,
		Destructive: p.Spec.Destructive, Statements: int32(len(p.Spec.Statements))}
	setCondition(s, v1alpha1.ConditionPlanReady, metav1.ConditionTrue, v1alpha1.ReasonPlanPublished,
		fmt.Sprintf("plan %s has %d statements", p.Name, len(p.Spec.Statements)))
	interval := r.clock().Add(durationOr(s.Spec.Interval, defaultInterval))
	switch gate(s.Spec.Policy, s.Status.Plan) {
	case converged:
		proof := s.Status.Plan.Fingerprint
		if c.Type == v1alpha1.OperationProof && applied != nil {
			proof = applied.Fingerprint // the plan the Apply ran, now proved
		}
		s.Status.Applied = &v1alpha1.Applied{ArtifactDigest: s.Status.Source.ResolvedDigest, PlanFingerprint: proof}
		if c.Type == v1alpha1.OperationProof {
			applyProved(s, r.clock())
		}
		msg := fmt.Sprintf("a fresh plan at generation %d has no changes", s.Generation)
		setCondition(s, v1alpha1.ConditionInSync, metav1.ConditionTrue, v1alpha1.ReasonScopedConverged, msg)
		setCondition(s, v1alpha1.ConditionReady, metav1.ConditionTrue, v1alpha1.ReasonScopedConverged, msg)
		setCondition(s, v1alpha1.ConditionDriftDetected, metav1.ConditionFalse, v1alpha1.ReasonNoDrift, "the live schema matches the desired one")
		setCondition(s, v1alpha1.ConditionApprovalRequired, metav1.ConditionFalse, v1alpha1.ReasonNotRequired, "nothing to apply")
		s.Status.Phase = v1alpha1.PhaseInSync
		return r.finish(ctx, s, c, "", 0, interval)
	case blocked:
		s.Status.Phase = v1alpha1.PhaseBlocked
		r.changesPending(s)
		setCondition(s, v1alpha1.ConditionReady, metav1.ConditionFalse, v1alpha1.ReasonPolicyBlocked,
			fmt.Sprintf("plan %s is destructive and spec.policy.allowDestructive is false", p.Name))
		return r.finish(ctx, s, c, "", 0, r.reexamine(s))
	case readyToApply:
		s.Status.Phase = v1alpha1.PhaseReadyToApply
		r.changesPending(s)
		setCondition(s, v1alpha1.ConditionReady, metav1.ConditionFalse, v1alpha1.ReasonPolicyBlocked,
			fmt.Sprintf("plan %s is ready; spec.policy.apply is Never", p.Name))
		return r.finish(ctx, s, c, "", 0, interval)
	case awaitingApproval:
		s.Status.Phase = v1alpha1.PhaseAwaitingApproval
		r.changesPending(s)
		msg := fmt.Sprintf("plan %s (fingerprint %s) needs a PtahSchemaApproval naming it", p.Name, p.Spec.Fingerprint)
		setCondition(s, v1alpha1.ConditionApprovalRequired, metav1.ConditionTrue, v1alpha1.ReasonAwaitingApproval, msg)
		setCondition(s, v1alpha1.ConditionReady, metav1.ConditionFalse, v1alpha1.ReasonAwaitingApproval, msg)
		normal(r.Events, s, v1alpha1.EventApprovalRequired, "Gate", "%s", msg)
		return r.finish(ctx, s, c, "", 0, time.Time{})
	default: // applyNow
		r.changesPending(s)
		setCondition(s, v1alpha1.ConditionApprovalRequired, metav1.ConditionFalse, v1alpha1.ReasonNotRequired, "spec.policy.apply is Always")
		return r.finish(ctx, s, c, v1alpha1.OperationApply, 1, time.Time{})
	}
}

// reexamine is when a Blocked schema is resolved and planned again: every
// spec.interval, so a fixed artifact pushed under the same tag, a protected
// table its owner dropped or a policy that now admits the artifact lifts it
// without a spec edit.
func (r *SchemaReconciler) reexamine(s *v1alpha1.PtahSchema) time.Time {
	return r.clock().Add(durationOr(s.Spec.Interval, defaultInterval))
}

func (r *SchemaReconciler) changesPending(s *v1alpha1.PtahSchema) {
	setCondition(s, v1alpha1.ConditionDriftDetected, metav1.ConditionTrue, v1alpha1.ReasonDriftFound, fmt.Sprintf("plan %s has changes", planRef(s)))
	setCondition(s, v1alpha1.ConditionInSync, metav1.ConditionFalse, v1alpha1.ReasonChangesPending, fmt.Sprintf("plan %s has changes", planRef(s)))
}

// publish creates the immutable PtahSchemaPlan, or finds it already there.
func (r *SchemaReconciler) publish(ctx context.Context, s *v1alpha1.PtahSchema, pr *v1alpha1.PlanResult) (*v1alpha1.PtahSchemaPlan, error) {
	p := &v1alpha1.PtahSchemaPlan{
		ObjectMeta: metav1.ObjectMeta{Name: planName(s.Name, pr.Fingerprint), Namespace: s.Namespace,
			Labels: map[string]string{LabelManagedBy: ManagedBy, runner.LabelSchema: s.Name}, OwnerReferences: ownedBy(s)},
		Spec: v1alpha1.PtahSchemaPlanSpec{
			SchemaRef:          v1alpha1.LocalRef{Name: s.Name},
			Fingerprint:        pr.Fingerprint,
			BaseFingerprint:    pr.BaseFingerprint,
			DesiredFingerprint: pr.DesiredFingerprint,
			Digest:             pr.Digest,
			Destructive:        pr.Destructive,
			Schemas:            pr.Schemas,
			Statements:         pr.Statements,
		},
	}
	if s.Status.Source != nil {
		p.Spec.ArtifactDigest = s.Status.Source.ResolvedDigest
	}
	if p.Spec.Statements == nil {
		p.Spec.Statements = []v1alpha1.Statement{}
	}
	err := r.Client.Create(ctx, p)
	if apierrors.IsAlreadyExists(err) {
		var have v1alpha1.PtahSchemaPlan
		if err := r.APIReader.Get(ctx, types.NamespacedName{Namespace: p.Namespace, Name: p.Name}, &have); err != nil {
			return nil, fmt.Errorf("read PtahSchemaPlan %s/%s: %w", p.Namespace, p.Name, err)
		}
		return &have, nil
	}
	if err != nil {
		return nil, fmt.Errorf("publish PtahSchemaPlan %s/%s: %w", p.Namespace, p.Name, err)
	}
	return p, nil
}

// refusedOrFailed turns an error record into a decision: a refusal the
// runner reported (protected table, verification, stale plan) or a failure
// that is tried again.
func (r *SchemaReconciler) refusedOrFailed(ctx context.Context, s *v1alpha1.PtahSchema, c *v1alpha1.ActiveOperation, rec *v1alpha1.PtahResultRecord) (reconcile.Result, error) {
	e, child := rec.Spec.Error, rec.Spec.ChildError
	f := failure{code: e.Code, message: e.Message, detail: child}
	childCode := ""
	if child != nil {
		childCode = child.Code
	}
	if (childCode == string(report.UnplannedDifference) || childCode == string(report.UnmanagedObject)) &&
		(c.Type == v1alpha1.OperationObserve || c.Type == v1alpha1.OperationPlan || c.Type == v1alpha1.OperationProof) {
		// ptah refused to call the two in sync: whatever was proved
		// before no longer holds. The failure itself is recorded and
		// retried below.
		msg := "the live schema differs from the desired one in a way ptah does not plan: " + child.Code + ": " + child.Message
		setCondition(s, v1alpha1.ConditionInSync, metav1.ConditionFalse, v1alpha1.ReasonChangesPending, msg)
		setCondition(s, v1alpha1.ConditionDriftDetected, metav1.ConditionTrue, v1alpha1.ReasonDriftFound, msg)
		setCondition(s, v1alpha1.ConditionReady, metav1.ConditionFalse, v1alpha1.ReasonChangesPending, msg)
	}
	if reason, ok := unreachable(report.Code(childCode)); ok {
		if c.Type != v1alpha1.OperationResolve && c.Type != v1alpha1.OperationVerify {
			setCondition(s, v1alpha1.ConditionDatabaseReachable, metav1.ConditionFalse, reason, child.Code+": "+child.Message)
		}
	}
	switch {
	case c.Type == v1alpha1.OperationApply && childCode == string(report.OutcomeUnknown):
		// The session ended between the commit and its answer: never
		// apply again on a guess, read what the database holds.
		return r.outcomeUnknown(ctx, s, c, fmt.Sprintf("Apply Job %s lost its database session: %s", c.JobName, child.Message), v1alpha1.ReasonApplyOutcomeUnknown)
	case childCode == string(report.ProtectedTable) && (c.Type == v1alpha1.OperationPlan || c.Type == v1alpha1.OperationProof):
		return r.protectedTableRefused(ctx, s, c, child)
	case c.Type == v1alpha1.OperationResolve && s.Spec.Desired.VerificationPolicyFrom != nil && childCode == string(report.PolicyRefused) &&
		rec.Spec.Result != nil && rec.Spec.Result.ResolvedDigest != "":
		// The policy refused what the Resolve resolved: the refusal names
		// that digest, resolved like any other.
		resolvedTo(s, rec.Spec.Result.ResolvedDigest)
		return r.verificationRefused(ctx, s, c, child.Code+": "+child.Message)
	case c.Type == v1alpha1.OperationVerify && (childCode == string(report.PolicyRefused) ||
		rec.Spec.Result != nil && rec.Spec.Result.Verified != nil && !*rec.Spec.Result.Verified):
		msg := f.String()
		if child != nil {
			msg = child.Code + ": " + child.Message
		}
		return r.verificationRefused(ctx, s, c, msg)
	case c.Type == v1alpha1.OperationApply && childCode == string(report.StalePlan):
		return r.planStale(ctx, s, c, fmt.Sprintf("the database changed since plan %s was computed: %s", planRef(s), child.Message))
	case e.Code == runner.ErrProtocolMismatch:
		warning(r.Events, s, v1alpha1.EventRunnerProtocolMismatch, "Run",
			"the runner of %s Job %s refused it before starting ptah: %s", c.Type, c.JobName, e.Message)
		f.quiet = true
	}
	return r.failed(ctx, s, c, f)
}

// failed records a failure in full on status, a bounded copy in an Event,
// and claims the retry: the same read-only operation, attempt+1, after the
// failure interval; an Apply is followed by a read-only Observe instead.
func (r *SchemaReconciler) failed(ctx context.Context, s *v1alpha1.PtahSchema, c *v1alpha1.ActiveOperation, f failure) (reconcile.Result, error) {
	r.ended(s, c, "failed")
	r.recordFailure(s, c, f)
	msg := f.summary()
	if c.Type == v1alpha1.OperationResolve {
		setCondition(s, v1alpha1.ConditionArtifactResolved, metav1.ConditionFalse, v1alpha1.ReasonResolveFailed, msg)
	}
	if c.Type == v1alpha1.OperationApply {
		applying := v1alpha1.ReasonJobCompleted
		if f.notStarted {
			applying = v1alpha1.ReasonClaimRetired
		}
		setCondition(s, v1alpha1.ConditionApplying, metav1.ConditionFalse, applying, "apply failed: "+msg)
	}
	if !f.quiet {
		warning(r.Events, s, v1alpha1.EventOperationFailed, "Fail", "%s", msg)
	}
	s.Status.Phase = v1alpha1.PhaseFailed
	at := r.clock().Add(durationOr(s.Spec.Execution.FailureRetryInterval, defaultRetry))
	if readOnly(c.Type) {
		return r.finish(ctx, s, c, c.Type, c.Attempt+1, at)
	}
	return r.finish(ctx, s, c, v1alpha1.OperationObserve, 1, at)
}

func (r *SchemaReconciler) protectedTableRefused(ctx context.Context, s *v1alpha1.PtahSchema, c *v1alpha1.ActiveOperation, child *v1alpha1.OperationError) (reconcile.Result, error) {
	r.ended(s, c, "refused")
	msg := fmt.Sprintf("the plan would change a table spec.policy.protectedTables fences off, so no plan is published: %s", child.Message)
	warning(r.Events, s, v1alpha1.EventProtectedTableRefused, "Plan", "%s", msg)
	s.Status.Plan = nil
	s.Status.LastFailure = &v1alpha1.Failure{Code: child.Code, Message: child.Message, Operation: c.Type, Time: metav1.Time{Time: r.clock()}}
	setCondition(s, v1alpha1.ConditionPlanReady, metav1.ConditionFalse, v1alpha1.ReasonProtectedTableRefused, msg)
	setCondition(s, v1alpha1.ConditionReady, metav1.ConditionFalse, v1alpha1.ReasonPolicyBlocked, msg)
	setCondition(s, v1alpha1.ConditionInSync, metav1.ConditionFalse, v1alpha1.ReasonChangesPending, msg)
	setCondition(s, v1alpha1.ConditionReconciliationFailed, metav1.ConditionFalse, v1alpha1.ReasonSucceeded, fmt.Sprintf("%s operation completed with a refusal", runnerOp(c.Type)))
	s.Status.Phase = v1alpha1.PhaseBlocked
	return r.finish(ctx, s, c, "", 0, r.reexamine(s))
}

func (r *SchemaReconciler) verificationRefused(ctx context.Context, s *v1alpha1.PtahSchema, c *v1alpha1.ActiveOperation, why string) (reconcile.Result, error) {
	r.ended(s, c, "refused")
	msg := fmt.Sprintf("verification refused %s, so no plan is produced from it: %s", s.Status.Source.ResolvedDigest, why)
	warning(r.Events, s, v1alpha1.EventArtifactVerificationRefused, "Verify", "%s", msg)
	s.Status.Source.Verified = false
	s.Status.Plan = nil
	s.Status.LastFailure = &v1alpha1.Failure{Code: string(report.PolicyRefused), Message: why, Operation: c.Type, Time: metav1.Time{Time: r.clock()}}
	setCondition(s, v1alpha1.ConditionArtifactVerified, metav1.ConditionFalse, v1alpha1.ReasonVerificationRefused, msg)
	setCondition(s, v1alpha1.ConditionReady, metav1.ConditionFalse, v1alpha1.ReasonPolicyBlocked, msg)
	setCondition(s, v1alpha1.ConditionReconciliationFailed, metav1.ConditionFalse, v1alpha1.ReasonSucceeded, "verify operation completed with a refusal")
	s.Status.Phase = v1alpha1.PhaseBlocked
	return r.finish(ctx, s, c, "", 0, r.reexamine(s))
}

// planStale refuses to apply a plan whose basis no longer holds and reads
// the database again.
func (r *SchemaReconciler) planStale(ctx context.Context, s *v1alpha1.PtahSchema, c *v1alpha1.ActiveOperation, why string) (reconcile.Result, error) {
	r.ended(s, c, "refused")
	warning(r.Events, s, v1alpha1.EventPlanStale, "Apply", "plan %s is stale, so nothing applies it: %s", planRef(s), why)
	setCondition(s, v1alpha1.ConditionPlanReady, metav1.ConditionFalse, v1alpha1.ReasonPlanStale, why)
	setCondition(s, v1alpha1.ConditionApplying, metav1.ConditionFalse, v1alpha1.ReasonJobCompleted, "plan is stale: "+why)
	s.Status.Phase = v1alpha1.PhaseObserving
	return r.finish(ctx, s, c, v1alpha1.OperationObserve, 1, time.Time{})
}

// finish ends operation c (the engine's finish).
func (r *SchemaReconciler) finish(ctx context.Context, s *v1alpha1.PtahSchema, c *v1alpha1.ActiveOperation, next v1alpha1.OperationType, attempt int32, at time.Time) (reconcile.Result, error) {
	return finish(ctx, &r.engine, r, s, c, next, attempt, at)
}

// issue creates the operation-bound credential; an Apply's may also get
// its one plan.
func (r *SchemaReconciler) issue(ctx context.Context, s *v1alpha1.PtahSchema, c *v1alpha1.ActiveOperation) error {
	return issueCredential(ctx, r.Client, s, c, schemaReads(s, c)...)
}

// schemaReads is what a schema operation's credential may read besides
// creating its record: an Apply's plan.
func schemaReads(s *v1alpha1.PtahSchema, c *v1alpha1.ActiveOperation) []rbacv1.PolicyRule {
	p := s.Status.Plan
	if c.Type != v1alpha1.OperationApply || p == nil {
		return nil
	}
	return []rbacv1.PolicyRule{{
		APIGroups:     []string{v1alpha1.GroupVersion.Group},
		Resources:     []string{"ptahschemaplans"},
		ResourceNames: []string{p.Name},
		Verbs:         []string{"get"},
	}}
}

// issueCredential creates the operation-bound credential: ServiceAccount,
// Role and RoleBinding, each owned by the subject, one after another. The
// order is required: the API server checks a RoleBinding against the Role
// it names (a manager without the bind verb may grant only what it holds),
// so a binding created before its Role is refused as not found. Created
// at once, the lab's census failed in 11 of 12 scenarios; envtest's admin
// client skips the check.
func issueCredential(ctx context.Context, cl ctrl.Client, s subject, c *v1alpha1.ActiveOperation, reads ...rbacv1.PolicyRule) error {
	sa, role, rb := credential(s, c, reads...)
	objs := []ctrl.Object{role, rb}
	if sa != nil {
		objs = append([]ctrl.Object{sa}, objs...)
	}
	for _, o := range objs {
		if err := cl.Create(ctx, o); err != nil && !apierrors.IsAlreadyExists(err) {
			return fmt.Errorf("create %T %s/%s: %w", o, o.GetNamespace(), o.GetName(), err)
		}
	}
	return nil
}

// revokeCredential deletes the operation's credential, which invalidates
// its token.
func revokeCredential(ctx context.Context, cl ctrl.Client, s subject, c *v1alpha1.ActiveOperation) {
	sa, role, rb := credential(s, c)
	objs := []ctrl.Object{rb, role}
	if sa != nil {
		objs = append(objs, sa)
	}
	for _, o := range objs {
		if err := cl.Delete(ctx, o); err != nil && !apierrors.IsNotFound(err) {
			log.FromContext(ctx).Error(err, "revoke a result credential; the owner reference removes it later", "name", o.GetName())
		}
	}
}

// Approval annotations the manager writes; an approval's spec is immutable.
const (
	AnnotationConsumedBy = "operator.ptah.run/consumed-by"
	AnnotationStaleFor   = "operator.ptah.run/stale-for"
)

// awaitApproval accepts an approval naming the current plan and fingerprint,
// and marks approvals for any other plan stale.
func (r *SchemaReconciler) awaitApproval(ctx context.Context, s *v1alpha1.PtahSchema) (reconcile.Result, error) {
	if s.Status.Plan == nil {
		return reconcile.Result{}, nil
	}
	var list v1alpha1.PtahSchemaApprovalList
	if err := r.Client.List(ctx, &list, ctrl.InNamespace(s.Namespace)); err != nil {
		return reconcile.Result{}, fmt.Errorf("list PtahSchemaApprovals in %s: %w", s.Namespace, err)
	}
	var accepted *v1alpha1.PtahSchemaApproval
	var unstamped []string
	for i := range list.Items {
		a := &list.Items[i]
		if a.Spec.SchemaName != s.Name || a.Annotations[AnnotationConsumedBy] != "" {
			continue
		}
		if a.Spec.PlanName == s.Status.Plan.Name && a.Spec.PlanFingerprint == s.Status.Plan.Fingerprint {
			// Only admission stamps an approver; an approval without one
			// was not written through the cluster's approval policies.
			switch {
			case a.ApprovedBy == nil || a.ApprovedBy.Username == "":
				unstamped = append(unstamped, a.Name)
			case accepted == nil:
				accepted = a
			}
			continue
		}
		if a.Annotations[AnnotationStaleFor] == s.Status.Plan.Name {
			continue
		}
		warning(r.Events, a, v1alpha1.EventApprovalStale, "Gate",
			"approval names plan %s (fingerprint %s), but the current plan of PtahSchema %s is %s; it will not be consumed",
			a.Spec.PlanName, a.Spec.PlanFingerprint, s.Name, s.Status.Plan.Name)
		if err := r.annotate(ctx, a, AnnotationStaleFor, s.Status.Plan.Name); err != nil {
			return reconcile.Result{}, err
		}
	}
	if accepted == nil {
		if len(unstamped) == 0 {
			return reconcile.Result{}, nil
		}
		msg := fmt.Sprintf("plan %s (fingerprint %s) needs a PtahSchemaApproval naming it; refused %s: no approver stamped by admission",
			s.Status.Plan.Name, s.Status.Plan.Fingerprint, strings.Join(unstamped, ", "))
		if conditionIs(s, v1alpha1.ConditionApprovalRequired, metav1.ConditionTrue, v1alpha1.ReasonAwaitingApproval) &&
			meta.FindStatusCondition(s.Status.Conditions, v1alpha1.ConditionApprovalRequired).Message == msg {
			return reconcile.Result{}, nil
		}
		setCondition(s, v1alpha1.ConditionApprovalRequired, metav1.ConditionTrue, v1alpha1.ReasonAwaitingApproval, msg)
		return reconcile.Result{}, r.save(ctx, s)
	}
	// The claim names the approval before the approval is marked consumed,
	// and dispatch completes the marking: whichever write a conflict or a
	// crash interrupts, no approval ends up consumed by no claim.
	next := newClaim(&r.engine, s, v1alpha1.OperationApply, 1)
	next.Approval = accepted.Name
	setCondition(s, v1alpha1.ConditionApprovalRequired, metav1.ConditionFalse, v1alpha1.ReasonApproved,
		fmt.Sprintf("approval %s by %s accepted for plan %s", accepted.Name, accepted.ApprovedBy.Username, s.Status.Plan.Name))
	setClaim(s, next, templateDigest(r, s, next), time.Time{})
	if err := r.save(ctx, s); err != nil {
		return reconcile.Result{}, err
	}
	normal(r.Events, s, v1alpha1.EventApprovalAccepted, "Gate", "approval %s by %s accepted for plan %s", accepted.Name, accepted.ApprovedBy.Username, s.Status.Plan.Name)
	return r.dispatch(ctx, s)
}

// consumeApproval marks the approval Apply claim c names as consumed by it,
// unless it already is. It returns why the approval cannot be consumed, or "".
func (r *SchemaReconciler) consumeApproval(ctx context.Context, s *v1alpha1.PtahSchema, c *v1alpha1.ActiveOperation) (string, error) {
	if c.Approval == "" {
		return "no approval is recorded for the claim", nil
	}
	var a v1alpha1.PtahSchemaApproval
	err := r.APIReader.Get(ctx, types.NamespacedName{Namespace: s.Namespace, Name: c.Approval}, &a)
	if apierrors.IsNotFound(err) {
		return fmt.Sprintf("approval %s is gone", c.Approval), nil
	}
	if err != nil {
		return "", fmt.Errorf("read PtahSchemaApproval %s/%s: %w", s.Namespace, c.Approval, err)
	}
	by := a.Annotations[AnnotationConsumedBy]
	switch {
	case !a.DeletionTimestamp.IsZero():
		return fmt.Sprintf("approval %s is being deleted", a.Name), nil
	case a.Spec.SchemaName != s.Name || a.Spec.PlanName != planRef(s) || s.Status.Plan == nil || a.Spec.PlanFingerprint != s.Status.Plan.Fingerprint:
		return fmt.Sprintf("approval %s no longer names plan %s", a.Name, planRef(s)), nil
	case a.ApprovedBy == nil || a.ApprovedBy.Username == "":
		return fmt.Sprintf("approval %s has no approver stamped by admission", a.Name), nil
	case by == c.ID:
		return "", nil
	case by != "":
		return fmt.Sprintf("approval %s was consumed by another operation", a.Name), nil
	}
	return "", r.annotate(ctx, &a, AnnotationConsumedBy, c.ID)
}

// returnApproval hands back the approval of an Apply claim retired before
// its Job was created, so it can be consumed again.
func (r *SchemaReconciler) returnApproval(ctx context.Context, s *v1alpha1.PtahSchema, c *v1alpha1.ActiveOperation) {
	if c.Approval == "" {
		return
	}
	var a v1alpha1.PtahSchemaApproval
	if err := r.APIReader.Get(ctx, types.NamespacedName{Namespace: s.Namespace, Name: c.Approval}, &a); err != nil {
		return
	}
	if a.Annotations[AnnotationConsumedBy] != c.ID {
		return
	}
	patch := ctrl.MergeFrom(a.DeepCopy())
	delete(a.Annotations, AnnotationConsumedBy)
	if err := r.Client.Patch(ctx, &a, patch); err != nil && !apierrors.IsNotFound(err) {
		log.FromContext(ctx).Error(err, "hand back the approval of a retired Apply claim", "approval", a.Name)
	}
}

func (r *SchemaReconciler) annotate(ctx context.Context, a *v1alpha1.PtahSchemaApproval, key, value string) error {
	patch := ctrl.MergeFrom(a.DeepCopy())
	if a.Annotations == nil {
		a.Annotations = map[string]string{}
	}
	a.Annotations[key] = value
	if err := r.Client.Patch(ctx, a, patch); err != nil {
		return fmt.Errorf("mark PtahSchemaApproval %s/%s %s: %w", a.Namespace, a.Name, key, err)
	}
	return nil
}

// applyInputs checks, just before an Apply Job is created, that what allowed
// it still holds: the approval (consumed by this claim now, if the write
// that names it was interrupted) and the plan object the runner will read.
func (r *SchemaReconciler) applyInputs(ctx context.Context, s *v1alpha1.PtahSchema, c *v1alpha1.ActiveOperation) (bool, error) {
	if s.Spec.Policy.Apply != v1alpha1.ApplyAlways {
		why, err := r.consumeApproval(ctx, s, c)
		if err != nil {
			return false, err
		}
		if why != "" {
			msg := fmt.Sprintf("the approval recorded for plan %s cannot be consumed (%s), so no Apply Job was created", planRef(s), why)
			warning(r.Events, s, v1alpha1.EventApprovalRevoked, "Gate", "%s", msg)
			r.revoke(ctx, s, c)
			s.Status.ActiveOperation = nil
			s.Status.Phase = v1alpha1.PhaseAwaitingApproval
			setCondition(s, v1alpha1.ConditionApprovalRequired, metav1.ConditionTrue, v1alpha1.ReasonAwaitingApproval, msg)
			setCondition(s, v1alpha1.ConditionApplying, metav1.ConditionFalse, v1alpha1.ReasonClaimRetired, msg)
			return false, r.save(ctx, s)
		}
	}
	var p v1alpha1.PtahSchemaPlan
	err := r.APIReader.Get(ctx, types.NamespacedName{Namespace: s.Namespace, Name: planRef(s)}, &p)
	if err != nil && !apierrors.IsNotFound(err) {
		return false, fmt.Errorf("read PtahSchemaPlan %s/%s: %w", s.Namespace, planRef(s), err)
	}
	if err == nil && p.Spec.Digest == s.Status.Plan.Digest {
		_, err = runner.PlanDocument(&v1alpha1.PlanResult{Fingerprint: p.Spec.Fingerprint, BaseFingerprint: p.Spec.BaseFingerprint,
			DesiredFingerprint: p.Spec.DesiredFingerprint, Digest: p.Spec.Digest, Destructive: p.Spec.Destructive, Schemas: p.Spec.Schemas, Statements: p.Spec.Statements}, nil)
	} else if err == nil {
		err = fmt.Errorf("its digest is %s, status recorded %s", p.Spec.Digest, s.Status.Plan.Digest)
	}
	if err != nil {
		_, err = r.planStale(ctx, s, c, fmt.Sprintf("PtahSchemaPlan %s cannot be applied: %v", planRef(s), err))
		return false, err
	}
	return true, nil
}

// unreachable is the DatabaseReachable=False reason of a ptah error code
// that says the database was not reached, or was lost on the way.
func unreachable(code report.Code) (string, bool) {
	switch code {
	case report.Connection, report.Auth:
		return v1alpha1.ReasonConnectionFailed, true
	case report.ConnectionLost, report.OutcomeUnknown:
		return v1alpha1.ReasonConnectionLost, true
	}
	return "", false
}
