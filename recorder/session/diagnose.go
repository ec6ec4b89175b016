package session

import (
	"context"
	"fmt"
	"sort"
	"strings"
	"time"

	"github.com/tidwall/gjson"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/fields"
	"k8s.io/client-go/kubernetes"

	"ptah.run/operator/recorder/check"
	"ptah.run/operator/recorder/scenario"
)

const controllerLogLines = 30

// diagnose describes what a reader of a failure needs: the object's
// conditions with their transition times, the Events on it since the step
// began, and the controller's recent log when the lab names the controller.
// It never fails: what it cannot read it says it could not read.
func (ru *run) diagnose(ctx context.Context, o *scenario.Observation, since time.Time) string {
	ctx, cancel := context.WithTimeout(ctx, 20*time.Second)
	defer cancel()
	var b strings.Builder
	var cs *kubernetes.Clientset
	if ru.Config != nil {
		cs, _ = kubernetes.NewForConfig(ru.Config)
	}
	if o != nil && ru.Observer != nil {
		ru.describeObject(ctx, &b, cs, *o, since)
	}
	if cs != nil && ru.Lab != nil {
		ru.controllerLog(ctx, &b, cs, since)
	}
	return b.String()
}

func (ru *run) describeObject(ctx context.Context, b *strings.Builder, cs *kubernetes.Clientset, o scenario.Observation, since time.Time) {
	obj, err := ru.Observer.Read(ctx, check.Target(o))
	name := strings.ToLower(o.Kind) + "/" + o.Name
	switch {
	case err != nil:
		fmt.Fprintf(b, "  %s: could not read: %v\n", name, err)
		return
	case obj.Absent():
		fmt.Fprintf(b, "  %s: absent\n", name)
		return
	}
	doc := gjson.ParseBytes(obj.JSON)
	fmt.Fprintf(b, "  %s (generation %d) conditions:\n", name, doc.Get("metadata.generation").Int())
	conds := doc.Get("status.conditions").Array()
	if len(conds) == 0 {
		b.WriteString("    none\n")
	}
	for _, c := range conds {
		fmt.Fprintf(b, "    %s=%s (%s) since %s, observedGeneration %d: %s\n",
			c.Get("type"), c.Get("status"), c.Get("reason"), c.Get("lastTransitionTime"), c.Get("observedGeneration").Int(), c.Get("message"))
	}
	if cs == nil {
		return
	}
	ns := obj.Unstructured.GetNamespace()
	if ns == "" {
		ns = metav1.NamespaceDefault
	}
	evs, err := cs.CoreV1().Events(ns).List(ctx, metav1.ListOptions{
		FieldSelector: fields.Set{"involvedObject.name": o.Name, "involvedObject.uid": string(obj.Unstructured.GetUID())}.String(),
	})
	if err != nil {
		fmt.Fprintf(b, "  events on %s: could not list: %v\n", name, err)
		return
	}
	var recent []corev1.Event
	for _, e := range evs.Items {
		if eventTime(e).After(since.Add(-time.Second)) {
			recent = append(recent, e)
		}
	}
	sort.SliceStable(recent, func(i, j int) bool { return eventTime(recent[i]).Before(eventTime(recent[j])) })
	fmt.Fprintf(b, "  events on %s since the step began: %d\n", name, len(recent))
	for _, e := range recent {
		fmt.Fprintf(b, "    %s %s %s: %s\n", eventTime(e).UTC().Format(time.RFC3339), e.Type, e.Reason, e.Message)
	}
}

func eventTime(e corev1.Event) time.Time {
	for _, t := range []time.Time{e.EventTime.Time, e.LastTimestamp.Time, e.FirstTimestamp.Time, e.CreationTimestamp.Time} {
		if !t.IsZero() {
			return t
		}
	}
	return time.Time{}
}

func (ru *run) controllerLog(ctx context.Context, b *strings.Builder, cs *kubernetes.Clientset, since time.Time) {
	name, _ := ru.Lab.Lookup("CONTROLLER")
	ns, _ := ru.Lab.Lookup("OPERATOR_NAMESPACE")
	if name == "" || ns == "" {
		return
	}
	dep, err := cs.AppsV1().Deployments(ns).Get(ctx, name, metav1.GetOptions{})
	if err != nil {
		fmt.Fprintf(b, "  controller %s/%s: could not read: %v\n", ns, name, err)
		return
	}
	sel, err := metav1.LabelSelectorAsSelector(dep.Spec.Selector)
	if err != nil {
		fmt.Fprintf(b, "  controller %s/%s: selector: %v\n", ns, name, err)
		return
	}
	pods, err := cs.CoreV1().Pods(ns).List(ctx, metav1.ListOptions{LabelSelector: sel.String()})
	if err != nil {
		fmt.Fprintf(b, "  controller %s/%s: could not list pods: %v\n", ns, name, err)
		return
	}
	tail := int64(controllerLogLines)
	st := metav1.NewTime(since)
	for _, p := range pods.Items {
		raw, err := cs.CoreV1().Pods(ns).GetLogs(p.Name, &corev1.PodLogOptions{TailLines: &tail, SinceTime: &st}).DoRaw(ctx)
		if err != nil {
			fmt.Fprintf(b, "  controller pod %s: could not read its log: %v\n", p.Name, err)
			continue
		}
		fmt.Fprintf(b, "  controller pod %s, last %d lines since the step began:\n", p.Name, tail)
		for _, l := range strings.Split(strings.TrimRight(string(raw), "\n"), "\n") {
			if l != "" {
				b.WriteString("    " + l + "\n")
			}
		}
	}
}
