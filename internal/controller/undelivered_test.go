package controller

import (
	"context"
	"strings"
	"testing"

	corev1 "k8s.io/api/core/v1"

	"ptah.run/operator/internal/runner"
	v1alpha1 "ptah.run/operator/operator/api/v1alpha1"
)

// TestAnUndeliveredRecordIsTheFailedRead: the API server refuses the
// runner's PtahResultRecord (a quota of none), so the runner exits without
// delivering it and says why in its termination message. The manager
// reports the read that cannot succeed, naming the Pod and the refusal,
// and tries the read-only operation again; once records may be created,
// the schema converges.
func TestAnUndeliveredRecordIsTheFailedRead(t *testing.T) {
	t.Parallel()
	e := newEnv(t)
	q := quota(e, corev1.ResourceName("count/ptahresultrecords."+v1alpha1.GroupVersion.Group))
	e.schema()
	ev := e.awaitEvent(v1alpha1.EventResultReadFailed, converge)
	assertEvent(t, ev, "shop")
	for _, want := range []string{"delivered no PtahResultRecord", "exceeded quota", "result transport", "tried again"} {
		if !strings.Contains(ev.Message, want) {
			t.Errorf("ResultReadFailed says %q, want %q in it", ev.Message, want)
		}
	}
	if strings.Contains(ev.Message, runner.UndeliveredPrefix) {
		t.Errorf("the runner's marker is passed on verbatim: %q", ev.Message)
	}
	// The Event is emitted before the status that records the failure is
	// written, so the status is awaited, not read once.
	e.await("shop", "status.lastFailure result_undelivered", converge, func(s *v1alpha1.PtahSchema) bool {
		return s.Status.LastFailure != nil && s.Status.LastFailure.Code == "result_undelivered"
	})
	must(t, shared.c.Delete(context.Background(), q))
	inSync(e)
}
