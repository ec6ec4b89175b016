package controller

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"testing"
	"time"

	batchv1 "k8s.io/api/batch/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/runtime/schema"

	v1alpha1 "ptah.run/operator/operator/api/v1alpha1"
)

// TestNoRecordDecisions reads noRecord as a table: what becomes of an
// operation whose Job ended without a result record, for each operation
// type, Job outcome and reason the record is missing.
func TestNoRecordDecisions(t *testing.T) {
	ended := time.Date(2026, 12, 5, 10, 0, 0, 0, time.UTC)
	bound := 15 * time.Second
	failedJob := &batchv1.JobCondition{Type: batchv1.JobFailed, Reason: "BackoffLimitExceeded", Message: "Job has reached the specified backoff limit"}
	for _, tc := range []struct {
		name    string
		typ     v1alpha1.OperationType
		failed  *batchv1.JobCondition
		why     string
		now     time.Time
		wait    time.Duration
		events  []string // reasons, in order
		unknown bool
		code    string
	}{
		{name: "a completed Plan whose record may still arrive waits the rest of the bound", typ: v1alpha1.OperationPlan, now: ended.Add(5 * time.Second), wait: 10 * time.Second},
		{name: "a completed Plan past the bound timed out and is tried again", typ: v1alpha1.OperationPlan, now: ended.Add(bound), events: []string{v1alpha1.EventResultReadTimedOut}, code: "result_read_timeout"},
		{name: "a failed Plan does not wait", typ: v1alpha1.OperationPlan, failed: failedJob, now: ended, code: "job_failed"},
		{name: "a failed Plan whose record could not be delivered says why", typ: v1alpha1.OperationPlan, failed: failedJob, why: "the credential was refused", now: ended, events: []string{v1alpha1.EventResultReadFailed}, code: "result_undelivered"},
		{name: "a completed Apply past the bound has an unknown outcome", typ: v1alpha1.OperationApply, now: ended.Add(time.Minute), unknown: true},
		{name: "a failed Apply has an unknown outcome", typ: v1alpha1.OperationApply, failed: failedJob, now: ended, unknown: true},
		{name: "a failed Apply whose record could not be delivered says why, and its outcome is unknown", typ: v1alpha1.OperationApply, failed: failedJob, why: "no route to the API server", now: ended, events: []string{v1alpha1.EventResultReadFailed}, unknown: true},
		{name: "a completed Apply still within the bound waits", typ: v1alpha1.OperationApply, now: ended.Add(time.Second), wait: 14 * time.Second},
	} {
		t.Run(tc.name, func(t *testing.T) {
			c := &v1alpha1.ActiveOperation{Type: tc.typ, JobName: "ptah-op-1"}
			d := noRecord(c, tc.failed, tc.why, runnerOp(tc.typ), "next", ended, tc.now, bound)
			var reasons []string
			for _, n := range d.events {
				reasons = append(reasons, n.reason)
			}
			if d.wait != tc.wait || fmt.Sprint(reasons) != fmt.Sprint(tc.events) || (d.unknown != "") != tc.unknown || d.failure.code != tc.code {
				t.Errorf("got wait %s, events %v, unknown %q, failure %q; want wait %s, events %v, unknown %t, failure %q",
					d.wait, reasons, d.unknown, d.failure.code, tc.wait, tc.events, tc.unknown, tc.code)
			}
			if tc.why != "" && (len(d.events) == 0 || !strings.Contains(d.events[0].message, tc.why)) {
				t.Errorf("the Event does not say why: %+v", d.events)
			}
		})
	}
}

// TestUnreadableDecisions: a read that ran out of time is a timeout unless
// the reconcile itself was cancelled; anything else a failed read.
func TestUnreadableDecisions(t *testing.T) {
	timeout := apierrors.NewTimeoutError("read", 1)
	for _, tc := range []struct {
		name      string
		err       error
		cancelled bool
		want      string
	}{
		{"its own deadline", fmt.Errorf("get: %w", context.DeadlineExceeded), false, v1alpha1.EventResultReadTimedOut},
		{"the API server's timeout", timeout, false, v1alpha1.EventResultReadTimedOut},
		{"the reconcile cancelled", context.DeadlineExceeded, true, v1alpha1.EventResultReadFailed},
		{"forbidden", apierrors.NewForbidden(schema.GroupResource{Resource: "ptahresultrecords"}, "r", errors.New("no")), false, v1alpha1.EventResultReadFailed},
	} {
		if got := unreadable(tc.err, tc.cancelled, "plan", "ptah-op-1", time.Second); got.reason != tc.want {
			t.Errorf("%s: %s, want %s", tc.name, got.reason, tc.want)
		}
	}
}
