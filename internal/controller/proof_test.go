package controller

import (
	"strings"
	"testing"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	v1alpha1 "ptah.run/operator/operator/api/v1alpha1"
)

// TestRefusedProofIsNotInSync: a schema in sync drifts in a fact the
// planner's model does not read (a column's statistics target), so the
// planner alone finds no drift; ptah's proof refuses the claim with
// unplanned_difference, and the PtahSchema says so: InSync=False,
// Ready=False, DriftDetected=True and the failure naming the differing
// line, never the InSync=True of the proof before.
func TestRefusedProofIsNotInSync(t *testing.T) {
	t.Parallel()
	e := newEnv(t)
	e.schema(func(s *v1alpha1.PtahSchema) { s.Spec.Interval = &metav1.Duration{Duration: 30 * time.Second} })
	inSync(e)
	shared.pg.Exec(t, e.db, "ALTER TABLE orders ALTER COLUMN note SET STATISTICS 500")
	s := e.await("shop", "InSync=False (ChangesPending) after the refused Observe", converge,
		condition(v1alpha1.ConditionInSync, metav1.ConditionFalse, v1alpha1.ReasonChangesPending))
	if !conditionIs(s, v1alpha1.ConditionDriftDetected, metav1.ConditionTrue, v1alpha1.ReasonDriftFound) ||
		!conditionIs(s, v1alpha1.ConditionReady, metav1.ConditionFalse, v1alpha1.ReasonChangesPending) ||
		!conditionIs(s, v1alpha1.ConditionReconciliationFailed, metav1.ConditionTrue, v1alpha1.ReasonOperationFailed) {
		t.Fatalf("after an unplanned difference: %s", conditions(s))
	}
	f := s.Status.LastFailure
	if f == nil || !strings.Contains(f.Message, "unplanned_difference") || !strings.Contains(f.Message, "stattarget=500") {
		t.Fatalf("the failure does not name the differing line: %+v", f)
	}
	if s.Status.Phase != v1alpha1.PhaseFailed {
		t.Fatalf("phase %s, want %s", s.Status.Phase, v1alpha1.PhaseFailed)
	}
	t.Logf("%s; %s", conditions(s), f.Message)
}
