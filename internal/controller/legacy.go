package controller

import (
	"context"
	"fmt"
	"time"

	batchv1 "k8s.io/api/batch/v1"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/kubernetes"
	"k8s.io/utils/ptr"
	ctrl "sigs.k8s.io/controller-runtime/pkg/client"

	"ptah.run/operator/internal/resultlog"
	"ptah.run/operator/internal/runner"
	v1alpha1 "ptah.run/operator/operator/api/v1alpha1"
)

// The result transport is a manager setting (--migration-result-transport),
// not a field of spec.execution: whether an operation's Pod can reach the
// API server with an operation-bound credential is a property of the
// cluster the operator is installed in (its network policies, its admission
// of projected tokens), decided by whoever installs it. As a spec field it
// would let any resource's author trade the authenticated durable record
// for a log read. Each Job records the transport it was dispatched under
// (runner.AnnotationResultTransport), and its result is read the way its Job
// says, whatever the manager's setting is by then: a durable Job's missing
// record is never replaced by its log or its termination summary. A legacy
// Job's Pod is the durable one's, account and credential included: the
// transport changes where the runner writes its result, never what the Pod
// may do.

// jobTransport is the result transport c's Job j was dispatched under.
func jobTransport(j *batchv1.Job) string {
	if j.Annotations[runner.AnnotationResultTransport] == runner.TransportPodLog {
		return runner.TransportPodLog
	}
	return runner.TransportDurable
}

// PodLogs reads a container's log. ClientsetLogs is the manager's; tests
// without a kubelet serve the log the runner wrote through another.
type PodLogs interface {
	ContainerLog(ctx context.Context, namespace, pod, container string) ([]byte, error)
}

// ClientsetLogs reads logs through the API server's pods/log subresource.
type ClientsetLogs struct{ Clientset kubernetes.Interface }

// legacyTail bounds a log read: the frame is the runner's last line, so the
// tail holds it, and a log of any length costs the manager the same.
const (
	legacyTailLines  = 200
	legacyLimitBytes = 8 << 20
)

// ContainerLog reads the tail of a container's log.
func (l ClientsetLogs) ContainerLog(ctx context.Context, namespace, pod, container string) ([]byte, error) {
	return l.Clientset.CoreV1().Pods(namespace).GetLogs(pod, &corev1.PodLogOptions{
		Container: container, TailLines: ptr.To[int64](legacyTailLines), LimitBytes: ptr.To[int64](legacyLimitBytes),
	}).DoRaw(ctx)
}

// legacyRead is what a finished legacy Job's Pod established: a result to
// consume (rec), or a verdict saying why there is none.
type legacyRead struct {
	resultlog.Verdict
	rec *v1alpha1.PtahResultRecord
}

// readLegacy reads the result of claim c from its finished legacy Job j:
// the frame in its Pod's log or, for an Apply whose log holds none, the
// summary in its termination message, under the checks of resultlog.Decide.
// A log that cannot be read is an error (ResultReadFailed or
// ResultReadTimedOut, and read again) until timeout has passed since the
// Job finished: then the log counts as lost, which only a summary can make
// up for. The result is returned as the record the runner would have
// created, so it is consumed as one.
func readLegacy(ctx context.Context, api ctrl.Reader, logs PodLogs, timeout time.Duration, s subject, c *v1alpha1.ActiveOperation, j *batchv1.Job, finished, now time.Time) (*legacyRead, error) {
	var pods corev1.PodList
	rctx, cancel := context.WithTimeout(ctx, timeout)
	defer cancel()
	if err := api.List(rctx, &pods, ctrl.InNamespace(j.Namespace), ctrl.MatchingLabels{"batch.kubernetes.io/controller-uid": string(j.UID)}); err != nil {
		return nil, fmt.Errorf("list the Pods of legacy Job %s/%s to read its result: %w", j.Namespace, j.Name, err)
	}
	claim := resultlog.Claim{OperationID: c.ID, Digest: c.CoordinationDigest, Attempt: c.Attempt, Apply: !readOnly(c.Type)}
	var pod *corev1.Pod
	for i := range pods.Items {
		if p := &pods.Items[i]; terminated(p) != nil && (pod == nil || p.CreationTimestamp.After(pod.CreationTimestamp.Time)) {
			pod = p
		}
	}
	if pod == nil {
		return &legacyRead{Verdict: resultlog.Decide(nil, fmt.Sprintf("Job %s has no Pod whose runner container terminated", j.Name), "", claim)}, nil
	}
	state := terminated(pod)
	log, err := logs.ContainerLog(rctx, pod.Namespace, pod.Name, runnerContainer)
	lost := ""
	if err != nil {
		if now.Before(finished.Add(timeout)) {
			return nil, fmt.Errorf("read the log of Pod %s/%s, where legacy Job %s writes its result: %w", pod.Namespace, pod.Name, j.Name, err)
		}
		lost = fmt.Sprintf("the log of Pod %s could not be read within %s of the Job finishing: %v", pod.Name, timeout, err)
	}
	v := resultlog.Decide(log, lost, state.Message, claim)
	out := &legacyRead{Verdict: v}
	if v.Spec == nil {
		return out, nil
	}
	if v.Spec.Subject.Kind == "" && v.FromSummary {
		v.Spec.Subject = v1alpha1.ResultSubject{Kind: s.SubjectKind(), Name: s.GetName()}
	}
	if v.Spec.Subject.Kind != s.SubjectKind() || v.Spec.Subject.Name != s.GetName() {
		// The frame names the operation, so this is a runner told another
		// subject than the claim's: nothing the manager would dispatch.
		why := fmt.Sprintf("the log of Pod %s holds a different frame: it names %s %s", pod.Name, v.Spec.Subject.Kind, v.Spec.Subject.Name)
		if claim.Apply {
			return &legacyRead{Verdict: resultlog.Verdict{Refused: why}}, nil
		}
		return &legacyRead{Verdict: resultlog.Verdict{Unreadable: why}}, nil
	}
	// The record's creation time is when its run ended: the lease
	// continuity check reads it.
	out.rec = &v1alpha1.PtahResultRecord{
		ObjectMeta: metav1.ObjectMeta{Name: c.JobName, Namespace: s.GetNamespace(), CreationTimestamp: state.FinishedAt},
		Spec:       *v.Spec,
	}
	return out, nil
}

// terminated is the runner container's terminated state, or nil.
func terminated(p *corev1.Pod) *corev1.ContainerStateTerminated {
	for _, cs := range p.Status.ContainerStatuses {
		if cs.Name == runnerContainer && cs.State.Terminated != nil {
			return cs.State.Terminated
		}
	}
	return nil
}

// summaryRefused records on s that the termination summary of c's Pod was
// not read in place of its log, and why; the caller records the run as
// unknown.
func summaryRefused(sink eventSink, s subject, c *v1alpha1.ActiveOperation, why string) {
	warning(sink, s, v1alpha1.EventTerminationSummaryRefused, "ReadResult",
		"legacy Apply %s (attempt %d): %s; the run is recorded as unknown", c.JobName, c.Attempt, why)
}

// jobResult reads the result of claim c from its finished Job j the way
// the Job records: a durable Job's result is its PtahResultRecord or
// nothing (never its log, never its summary); a legacy Job's is what
// readLegacy establishes, its verdict returned when it yields no record.
func jobResult(ctx context.Context, rd, api ctrl.Reader, adm *RecordAdmission, logs PodLogs, timeout time.Duration, s subject, c *v1alpha1.ActiveOperation, j *batchv1.Job, finished, now time.Time) (*v1alpha1.PtahResultRecord, *legacyRead, error) {
	if jobTransport(j) != runner.TransportPodLog {
		rec, err := readRecord(ctx, rd, api, adm, timeout, s, c)
		return rec, nil, err
	}
	if logs == nil {
		return nil, nil, fmt.Errorf("Job %s/%s delivers its result in its Pod's log, and this manager was given no log reader", j.Namespace, j.Name)
	}
	lr, err := readLegacy(ctx, api, logs, timeout, s, c, j, finished, now)
	if err != nil {
		return nil, nil, err
	}
	return lr.rec, lr, nil
}
