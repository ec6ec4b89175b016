package controller

import (
	"fmt"
	"unicode/utf8"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"

	v1alpha1 "ptah.run/operator/operator/api/v1alpha1"
)

// Message bounds: an Event's note is cut at maxEventNote (events.k8s.io
// refuses longer ones); a condition message at the API's own limit. The full
// failure text stays on status.lastFailure.
const (
	maxEventNote        = 1024
	maxConditionMessage = 32768
)

// setCondition is the only way conditions are written: it stamps the
// generation the decision was made at, so a reader can tell a fresh verdict
// from an old one.
func setCondition(s subject, typ string, status metav1.ConditionStatus, reason, message string) {
	meta.SetStatusCondition(s.SubjectConditions(), metav1.Condition{
		Type:               typ,
		Status:             status,
		Reason:             reason,
		Message:            bound(message, maxConditionMessage),
		ObservedGeneration: s.GetGeneration(),
	})
}

// conditionIs reports whether typ is set with this status and reason.
func conditionIs(s subject, typ string, status metav1.ConditionStatus, reason string) bool {
	c := meta.FindStatusCondition(*s.SubjectConditions(), typ)
	return c != nil && c.Status == status && c.Reason == reason
}

// bound cuts s to at most n bytes on a rune boundary, marking the cut.
func bound(s string, n int) string {
	if len(s) <= n {
		return s
	}
	const mark = " [truncated; full text on status]"
	cut := n - len(mark)
	for cut > 0 && !utf8.RuneStart(s[cut]) {
		cut--
	}
	return s[:cut] + mark
}

// eventSink is where Events go: client-go's events.EventRecorder satisfies it.
type eventSink interface {
	Eventf(regarding runtime.Object, related runtime.Object, eventtype, reason, action, note string, args ...interface{})
}

// emit records one Event with a bounded note. The note is formatted here so
// that the bound applies to the text a reader sees.
func emit(sink eventSink, on runtime.Object, typ, reason, action, format string, args ...any) {
	sink.Eventf(on, nil, typ, reason, action, "%s", bound(fmt.Sprintf(format, args...), maxEventNote))
}

func normal(sink eventSink, on runtime.Object, reason, action, format string, args ...any) {
	emit(sink, on, corev1.EventTypeNormal, reason, action, format, args...)
}

func warning(sink eventSink, on runtime.Object, reason, action, format string, args ...any) {
	emit(sink, on, corev1.EventTypeWarning, reason, action, format, args...)
}

// health derives the kstatus conditions from the phase and the conditions
// the pipeline keeps, so generic tools read a PtahSchema correctly: Current
// once InSync; InProgress with Reconciling=True while an operation runs or a
// failed one waits for its retry; Failed with Stalled=True and the reason
// when nothing will change without a person: Blocked, a configuration
// error, a plan awaiting approval, drift reported under apply: Never, or
// spec.suspend. A GitOps rollout should stop there with the reason rather
// than wait for its timeout (Argo CD's health check says Suspended for the
// approval and the suspension, Degraded for the rest).
func health(s *v1alpha1.PtahSchema) {
	reconciling, stalled := "", ""
	var why string
	switch {
	case conditionIs(s, v1alpha1.ConditionReconciliationFailed, metav1.ConditionTrue, v1alpha1.ReasonConfigurationError):
		stalled, why = v1alpha1.ReasonConfigurationError, message(s, v1alpha1.ConditionReconciliationFailed)
	case s.Status.ActiveOperation != nil && s.Status.Phase != v1alpha1.PhaseFailed:
		reconciling, why = v1alpha1.ReasonProgressing, fmt.Sprintf("%s operation %s", s.Status.ActiveOperation.Type, s.Status.ActiveOperation.JobName)
	case s.Status.Phase == v1alpha1.PhaseBlocked:
		stalled, why = reasonOf(s, v1alpha1.ConditionReady, v1alpha1.ReasonPolicyBlocked), message(s, v1alpha1.ConditionReady)
	case s.Status.Phase == v1alpha1.PhaseAwaitingApproval:
		stalled, why = v1alpha1.ReasonAwaitingApproval, message(s, v1alpha1.ConditionApprovalRequired)
	case s.Status.Phase == v1alpha1.PhaseFailed:
		reconciling, why = v1alpha1.ReasonOperationFailed, message(s, v1alpha1.ConditionReconciliationFailed)
	case s.Status.Phase == v1alpha1.PhaseReadyToApply:
		stalled, why = reasonOf(s, v1alpha1.ConditionReady, v1alpha1.ReasonPolicyBlocked), message(s, v1alpha1.ConditionReady)
	case s.Status.Phase == v1alpha1.PhaseSuspended:
		stalled, why = v1alpha1.ReasonSuspendedBySpec, message(s, v1alpha1.ConditionSuspended)
	case s.Status.Phase == v1alpha1.PhaseInSync:
	default:
		reconciling, why = v1alpha1.ReasonProgressing, fmt.Sprintf("phase %s", s.Status.Phase)
	}
	set := func(typ, reason, idle string) {
		if reason != "" {
			setCondition(s, typ, metav1.ConditionTrue, reason, why)
			return
		}
		setCondition(s, typ, metav1.ConditionFalse, idle, fmt.Sprintf("phase %s", s.Status.Phase))
	}
	set(v1alpha1.ConditionReconciling, reconciling, v1alpha1.ReasonIdle)
	set(v1alpha1.ConditionStalled, stalled, v1alpha1.ReasonNotStalled)
}

func message(s *v1alpha1.PtahSchema, typ string) string {
	if c := meta.FindStatusCondition(s.Status.Conditions, typ); c != nil {
		return c.Message
	}
	return ""
}

func reasonOf(s *v1alpha1.PtahSchema, typ, def string) string {
	if c := meta.FindStatusCondition(s.Status.Conditions, typ); c != nil && c.Status == metav1.ConditionFalse {
		return c.Reason
	}
	return def
}
