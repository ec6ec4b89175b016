package observe

import (
	"context"
	"errors"
	"strings"
	"testing"
	"time"

	"github.com/tidwall/gjson"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/client-go/dynamic"
	"k8s.io/client-go/rest"

	"ptah.run/operator/internal/testenv"
)

var widgets = schema.GroupVersionResource{Group: "test.ptah.run", Version: "v1", Resource: "widgets"}

func createWidget(t testing.TB, dyn dynamic.Interface, name string) *unstructured.Unstructured {
	t.Helper()
	u := &unstructured.Unstructured{Object: map[string]any{
		"apiVersion": "test.ptah.run/v1", "kind": "Widget",
		"metadata": map[string]any{"name": name, "namespace": "default"},
		"spec":     map[string]any{"size": int64(1)},
	}}
	out, err := dyn.Resource(widgets).Namespace("default").Create(context.Background(), u, metav1.CreateOptions{})
	if err != nil {
		t.Fatal(err)
	}
	return out
}

func setCondition(t testing.TB, dyn dynamic.Interface, name, typ, status, reason string, observed int64) {
	t.Helper()
	ri := dyn.Resource(widgets).Namespace("default")
	u, err := ri.Get(context.Background(), name, metav1.GetOptions{})
	if err != nil {
		t.Error(err)
		return
	}
	_ = unstructured.SetNestedSlice(u.Object, []any{map[string]any{
		"type": typ, "status": status, "reason": reason, "observedGeneration": observed,
		"lastTransitionTime": time.Now().UTC().Format(time.RFC3339), "message": "set by the test",
	}}, "status", "conditions")
	if _, err := ri.UpdateStatus(context.Background(), u, metav1.UpdateOptions{}); err != nil {
		t.Error(err)
	}
}

func conditionHolds(typ, status, reason string, current bool) func(Object) bool {
	return func(o Object) bool {
		if o.Absent() {
			return false
		}
		c := gjson.GetBytes(o.JSON, `status.conditions.#(type=="`+typ+`")`)
		ok := c.Get("status").String() == status && c.Get("reason").String() == reason
		if current {
			ok = ok && c.Get("observedGeneration").Int() == gjson.GetBytes(o.JSON, "metadata.generation").Int()
		}
		return ok
	}
}

func TestObserver(t *testing.T) {
	api := testenv.StartAPIServer(t, testenv.WithCRDs("testdata/crds"))
	dyn := dynamic.NewForConfigOrDie(api.Config)
	obs, err := New(api.Config, "default")
	if err != nil {
		t.Fatal(err)
	}
	ctx := context.Background()
	createWidget(t, dyn, "gizmo")

	t.Run("kinds resolve as kubectl resolves them", func(t *testing.T) {
		for _, kind := range []string{"Widget", "widget", "widgets", "wd", "widget.test.ptah.run", "widgets.v1.test.ptah.run", "Widget.v1.test.ptah.run"} {
			o, err := obs.Read(ctx, Target{Kind: kind, Name: "gizmo"})
			if err != nil {
				t.Errorf("%s: %v", kind, err)
				continue
			}
			if o.Absent() || o.Resource != "widgets.test.ptah.run" {
				t.Errorf("%s: resolved to %q, absent=%v", kind, o.Resource, o.Absent())
			}
		}
	})

	t.Run("unknown kind is an error, not absent", func(t *testing.T) {
		_, err := obs.Read(ctx, Target{Kind: "gadget", Name: "gizmo"})
		if err == nil || !strings.Contains(err.Error(), `no resource type "gadget"`) {
			t.Errorf("err = %v, want one naming the unknown kind", err)
		}
	})

	t.Run("a kind installed after discovery resolves", func(t *testing.T) {
		if _, err := obs.Read(ctx, Target{Kind: "gadget", Name: "g"}); err == nil {
			t.Fatal("gadget resolved before its CRD exists")
		}
		crd := &unstructured.Unstructured{Object: map[string]any{
			"apiVersion": "apiextensions.k8s.io/v1", "kind": "CustomResourceDefinition",
			"metadata": map[string]any{"name": "gadgets.test.ptah.run"},
			"spec": map[string]any{
				"group": "test.ptah.run", "scope": "Namespaced",
				"names": map[string]any{"kind": "Gadget", "plural": "gadgets", "singular": "gadget"},
				"versions": []any{map[string]any{"name": "v1", "served": true, "storage": true,
					"schema": map[string]any{"openAPIV3Schema": map[string]any{"type": "object", "x-kubernetes-preserve-unknown-fields": true}}}},
			},
		}}
		crds := schema.GroupVersionResource{Group: "apiextensions.k8s.io", Version: "v1", Resource: "customresourcedefinitions"}
		if _, err := dyn.Resource(crds).Create(ctx, crd, metav1.CreateOptions{}); err != nil {
			t.Fatal(err)
		}
		if _, err := obs.Await(ctx, Target{Kind: "crd", Name: "gadgets.test.ptah.run"}, 30*time.Second, conditionHolds("Established", "True", "InitialNamesAccepted", false)); err != nil {
			t.Fatal(err)
		}
		o, err := obs.Read(ctx, Target{Kind: "gadget", Name: "g"})
		if err != nil || !o.Absent() || o.Resource != "gadgets.test.ptah.run" {
			t.Errorf("read gadget after its CRD = %+v, %v", o.Resource, err)
		}
	})

	t.Run("missing object is absent", func(t *testing.T) {
		o, err := obs.Read(ctx, Target{Kind: "widget", Name: "nothing-here"})
		if err != nil || !o.Absent() {
			t.Errorf("read = %v, %v; want absent", o.Absent(), err)
		}
	})

	t.Run("await returns when the condition is set", func(t *testing.T) {
		createWidget(t, dyn, "await-me")
		go func() {
			time.Sleep(300 * time.Millisecond)
			setCondition(t, dyn, "await-me", "Ready", "False", "Pending", 1)
			time.Sleep(200 * time.Millisecond)
			setCondition(t, dyn, "await-me", "Ready", "True", "Done", 1)
		}()
		start := time.Now()
		o, err := obs.Await(ctx, Target{Kind: "wd", Name: "await-me"}, 30*time.Second, conditionHolds("Ready", "True", "Done", true))
		if err != nil {
			t.Fatal(err)
		}
		if got := gjson.GetBytes(o.JSON, `status.conditions.0.reason`).String(); got != "Done" {
			t.Errorf("await returned reason %q, want Done", got)
		}
		t.Logf("await returned %s after start", time.Since(start).Round(time.Millisecond))
	})

	t.Run("a stale condition does not satisfy generation current", func(t *testing.T) {
		w := createWidget(t, dyn, "fenced")
		// Bump the generation with a spec change, then write a condition
		// for the old generation.
		_ = unstructured.SetNestedField(w.Object, int64(2), "spec", "size")
		w, err := dyn.Resource(widgets).Namespace("default").Update(ctx, w, metav1.UpdateOptions{})
		if err != nil {
			t.Fatal(err)
		}
		if w.GetGeneration() != 2 {
			t.Fatalf("generation = %d, want 2", w.GetGeneration())
		}
		setCondition(t, dyn, "fenced", "Ready", "True", "Done", 1)
		_, err = obs.Await(ctx, Target{Kind: "widget", Name: "fenced"}, time.Second, conditionHolds("Ready", "True", "Done", true))
		if !errors.Is(err, ErrTimeout) {
			t.Fatalf("await of a stale condition = %v, want a timeout", err)
		}
		go func() {
			time.Sleep(200 * time.Millisecond)
			setCondition(t, dyn, "fenced", "Ready", "True", "Done", 2)
		}()
		if _, err := obs.Await(ctx, Target{Kind: "widget", Name: "fenced"}, 30*time.Second, conditionHolds("Ready", "True", "Done", true)); err != nil {
			t.Errorf("await after the current generation was observed: %v", err)
		}
	})

	t.Run("await absence returns on delete", func(t *testing.T) {
		createWidget(t, dyn, "doomed")
		go func() {
			time.Sleep(200 * time.Millisecond)
			_ = dyn.Resource(widgets).Namespace("default").Delete(ctx, "doomed", metav1.DeleteOptions{})
		}()
		o, err := obs.Await(ctx, Target{Kind: "widget", Name: "doomed"}, 30*time.Second, Object.Absent)
		if err != nil || !o.Absent() {
			t.Errorf("await absent = %v, %v", o.Absent(), err)
		}
	})

	t.Run("timeout returns the object as it was", func(t *testing.T) {
		o, err := obs.Await(ctx, Target{Kind: "widget", Name: "gizmo"}, 300*time.Millisecond, conditionHolds("Ready", "True", "Done", false))
		if !errors.Is(err, ErrTimeout) || o.Absent() {
			t.Errorf("await = absent %v, %v; want the present object and a timeout", o.Absent(), err)
		}
	})
}

func TestServerThatDoesNotAnswerIsAnError(t *testing.T) {
	cfg := &rest.Config{Host: "https://127.0.0.1:1", Timeout: 2 * time.Second}
	obs, err := New(cfg, "default")
	if err != nil {
		t.Fatal(err)
	}
	if o, err := obs.Read(context.Background(), Target{Kind: "configmap", Name: "x"}); err == nil {
		t.Errorf("read against a dead server = absent %v, nil error; want an error", o.Absent())
	}
	if _, err := obs.Await(context.Background(), Target{Kind: "configmap", Name: "x"}, time.Second, Object.Absent); err == nil || errors.Is(err, ErrTimeout) {
		t.Errorf("await absent against a dead server = %v; want a connection error", err)
	}
}
