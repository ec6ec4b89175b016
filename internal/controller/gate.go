package controller

import v1alpha1 "ptah.run/operator/operator/api/v1alpha1"

// verdict is what the policy gate decides for a fresh plan.
type verdict int

const (
	// converged: the plan is empty, so it proves the database is in sync.
	converged verdict = iota
	// blocked: destructive without allowDestructive; only an input change lifts it.
	blocked
	// readyToApply: apply is Never; the drift is reported, nothing changes.
	readyToApply
	// awaitingApproval: apply is OnApproval and no approval names the plan yet.
	awaitingApproval
	// applyNow: apply is Always.
	applyNow
)

// gate decides what happens to a plan under a policy. It has no side effects;
// the reconciler turns the verdict into status, Events and the next claim.
func gate(p v1alpha1.Policy, plan *v1alpha1.PlanSummary) verdict {
	switch {
	case plan.Statements == 0:
		return converged
	case plan.Destructive && !p.AllowDestructive:
		return blocked
	case p.Apply == v1alpha1.ApplyNever:
		return readyToApply
	case p.Apply == v1alpha1.ApplyAlways:
		return applyNow
	default: // OnApproval, the default
		return awaitingApproval
	}
}
