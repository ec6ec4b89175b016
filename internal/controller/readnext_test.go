package controller

import (
	"testing"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"pgregory.net/rapid"

	"ptah.run/operator/operator/api/v1alpha1"
)

// TestSkippedObserveCouldOnlyHavePlanned: after Resolve or Verify, the
// Observe is left out only where, whatever it found, it would have led to a
// Plan; where it could have let the schema rest it still runs. Statuses are
// generated around the edges of a proof: resolved or not, applied or not,
// the same artifact or another, InSync at this generation or an older one,
// True or not, there or not.
func TestSkippedObserveCouldOnlyHavePlanned(t *testing.T) {
	digests := []string{"sha256:aaa", "sha256:bbb"}
	var skipped, kept int
	rapid.Check(t, func(t *rapid.T) {
		// A proved status, then each part of the proof broken or not (one
		// time in four), so that both sides of the edge are generated.
		gen := rapid.Int64Range(1, 3).Draw(t, "generation")
		s := &v1alpha1.PtahSchema{}
		s.Generation = gen
		s.Status.Source = &v1alpha1.Source{ResolvedDigest: digests[0]}
		s.Status.Applied = &v1alpha1.Applied{ArtifactDigest: digests[0], PlanFingerprint: "f"}
		in := metav1.Condition{Type: v1alpha1.ConditionInSync, Status: metav1.ConditionTrue, ObservedGeneration: gen, Reason: v1alpha1.ReasonScopedConverged}
		intact := true
		broken := func(what string) bool {
			b := rapid.IntRange(0, 3).Draw(t, what) == 0
			intact = intact && !b
			return b
		}
		if broken("otherArtifact") {
			s.Status.Source.ResolvedDigest = digests[1]
		}
		if broken("neverResolved") {
			s.Status.Source = nil
		}
		if broken("neverApplied") {
			s.Status.Applied = nil
		}
		if broken("inSyncNotTrue") {
			in.Status = rapid.SampledFrom([]metav1.ConditionStatus{metav1.ConditionFalse, metav1.ConditionUnknown}).Draw(t, "inSync")
		}
		if broken("inSyncOtherGeneration") {
			in.ObservedGeneration = rapid.Int64Range(0, gen-1).Draw(t, "inSyncGeneration")
		}
		if !broken("noInSync") {
			s.Status.Conditions = append(s.Status.Conditions, in)
		}
		// A Resolve plans in its own Pod only where, whatever digest it
		// finds, its reading goes on to a Plan; where one digest could lead
		// to an Observe it plans nothing.
		plans, restable := plansAfterResolve(s, v1alpha1.OperationResolve), false
		for _, d := range append(digests, "sha256:ccc") {
			after := s.DeepCopy()
			resolvedTo(after, d)
			switch readNext(after) {
			case v1alpha1.OperationPlan:
			case v1alpha1.OperationObserve:
				restable = true
				if plans {
					t.Fatalf("the Resolve of %+v was told to plan, but finding %s its reading goes on to an Observe", s.Status, d)
				}
			}
		}
		if !plans && !restable {
			t.Fatalf("the Resolve of %+v was not told to plan, yet every digest it could find leads to a Plan", s.Status)
		}
		for _, other := range []v1alpha1.OperationType{v1alpha1.OperationVerify, v1alpha1.OperationObserve, v1alpha1.OperationPlan, v1alpha1.OperationApply, v1alpha1.OperationProof} {
			if plansAfterResolve(s, other) {
				t.Fatalf("a %s was told to plan after resolving", other)
			}
		}
		// Only an intact proof lets an Observe decide anything.
		if want := map[bool]v1alpha1.OperationType{true: v1alpha1.OperationObserve, false: v1alpha1.OperationPlan}[intact]; readNext(s) != want {
			t.Fatalf("readNext(%+v) = %q, want %q", s.Status, readNext(s), want)
		}
		switch readNext(s) {
		case v1alpha1.OperationPlan:
			skipped++
			for _, drift := range []bool{false, true} {
				if got := afterObserve(s, drift); got != v1alpha1.OperationPlan {
					t.Fatalf("Observe skipped for %+v, but one finding drift=%v would have led to %q, not a Plan", s.Status, drift, got)
				}
			}
		case v1alpha1.OperationObserve:
			kept++
			if got := afterObserve(s, false); got != "" {
				t.Fatalf("Observe kept for %+v, but finding no drift it leads to %q: it cannot let the schema rest", s.Status, got)
			}
		default:
			t.Fatalf("readNext(%+v) = %q, want Observe or Plan", s.Status, readNext(s))
		}
	})
	if skipped == 0 || kept == 0 {
		t.Errorf("generated %d statuses that skip the Observe and %d that keep it; both must occur", skipped, kept)
	}
}
