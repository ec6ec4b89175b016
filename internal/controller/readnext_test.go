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
// generated around the edges of a proof: applied or not, the same artifact
// or another, InSync at this generation or an older one, True or not.
func TestSkippedObserveCouldOnlyHavePlanned(t *testing.T) {
	digests := []string{"sha256:aaa", "sha256:bbb"}
	var skipped, kept int
	rapid.Check(t, func(t *rapid.T) {
		s := &v1alpha1.PtahSchema{}
		s.Generation = rapid.Int64Range(1, 3).Draw(t, "generation")
		if rapid.Bool().Draw(t, "resolved") {
			s.Status.Source = &v1alpha1.Source{ResolvedDigest: rapid.SampledFrom(digests).Draw(t, "resolvedDigest")}
		}
		if rapid.Bool().Draw(t, "applied") {
			s.Status.Applied = &v1alpha1.Applied{ArtifactDigest: rapid.SampledFrom(digests).Draw(t, "appliedDigest"), PlanFingerprint: "f"}
		}
		if rapid.Bool().Draw(t, "inSyncSet") {
			s.Status.Conditions = append(s.Status.Conditions, metav1.Condition{
				Type:               v1alpha1.ConditionInSync,
				Status:             rapid.SampledFrom([]metav1.ConditionStatus{metav1.ConditionTrue, metav1.ConditionFalse, metav1.ConditionUnknown}).Draw(t, "inSync"),
				ObservedGeneration: rapid.Int64Range(0, 3).Draw(t, "inSyncGeneration"),
				Reason:             v1alpha1.ReasonScopedConverged,
			})
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
