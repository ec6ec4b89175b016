package controller

import (
	"context"
	"testing"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/labels"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/client"

	v1alpha1 "ptah.run/operator/operator/api/v1alpha1"
)

// TestSelectorScopesEveryKind: a manager started with the selector
// team=a, as --selector gives it, reconciles the PtahSchema and the
// PtahMigration labelled team=a, and never touches those labelled team=b
// (another install's): no status, no finalizer, no Job. The selector
// scoped PtahSchemas alone, so two installs in one namespace both ran
// every migration.
func TestSelectorScopesEveryKind(t *testing.T) {
	t.Parallel()
	e := newEnv(t, func(o *envOption) {
		o.manager = func(opts *ctrl.Options) {
			sel, err := labels.Parse("team=a")
			if err != nil {
				t.Fatal(err)
			}
			c := CacheOptions(nil, sel)
			c.DefaultNamespaces = opts.Cache.DefaultNamespaces
			opts.Cache = c
		}
	})
	team := func(name string) func(*metav1.ObjectMeta) {
		return func(m *metav1.ObjectMeta) { m.Name, m.Labels = name, map[string]string{"team": name[len(name)-1:]} }
	}
	// team b's first, so the manager sees them before team a's.
	e.schema(func(s *v1alpha1.PtahSchema) { team("shop-b")(&s.ObjectMeta) })
	e.migration(pushMigrations(t, "selector-"+e.ns, migrationsV1), func(m *v1alpha1.PtahMigration) {
		team("mig-b")(&m.ObjectMeta)
		m.Spec.Target.URLFrom.Name = "shop-db-broken"
	})
	e.schema(func(s *v1alpha1.PtahSchema) { team("shop-a")(&s.ObjectMeta) })
	e.migration(pushMigrations(t, "selector-"+e.ns, migrationsV1), func(m *v1alpha1.PtahMigration) {
		team("mig-a")(&m.ObjectMeta)
		m.Spec.Target.URLFrom.Name = "shop-db-broken"
	})
	ctx := context.Background()
	reconciled := func(o client.Object, conditions func() []metav1.Condition) bool {
		must(t, shared.c.Get(ctx, client.ObjectKeyFromObject(o), o))
		return len(conditions()) > 0
	}
	var sa, sb v1alpha1.PtahSchema
	var ma, mb v1alpha1.PtahMigration
	sa.Namespace, sa.Name, sb.Namespace, sb.Name = e.ns, "shop-a", e.ns, "shop-b"
	ma.Namespace, ma.Name, mb.Namespace, mb.Name = e.ns, "mig-a", e.ns, "mig-b"
	deadline := time.Now().Add(converge)
	for !reconciled(&sa, func() []metav1.Condition { return sa.Status.Conditions }) || !reconciled(&ma, func() []metav1.Condition { return ma.Status.Conditions }) {
		if time.Now().After(deadline) {
			t.Fatalf("team a's objects were not reconciled within %s: PtahSchema conditions %v, PtahMigration conditions %v", converge, sa.Status.Conditions, ma.Status.Conditions)
		}
		time.Sleep(200 * time.Millisecond)
	}
	// Give the manager the time it took for team a once more.
	time.Sleep(5 * time.Second)
	for _, o := range []struct {
		kind       string
		obj        client.Object
		conditions func() []metav1.Condition
	}{{"PtahSchema", &sb, func() []metav1.Condition { return sb.Status.Conditions }}, {"PtahMigration", &mb, func() []metav1.Condition { return mb.Status.Conditions }}} {
		if reconciled(o.obj, o.conditions) || len(o.obj.GetFinalizers()) > 0 {
			t.Errorf("%s %s, labelled team=b, was reconciled by the team=a manager: conditions %v, finalizers %v",
				o.kind, o.obj.GetName(), o.conditions(), o.obj.GetFinalizers())
		}
	}
	for _, j := range e.jobs("") {
		for _, ref := range j.OwnerReferences {
			if ref.Name == "shop-b" || ref.Name == "mig-b" {
				t.Errorf("Job %s belongs to %s %s, labelled team=b", j.Name, ref.Kind, ref.Name)
			}
		}
	}
}
