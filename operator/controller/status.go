package controller

import (
	"fmt"
	"unicode/utf8"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
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
