package controller

import (
	"context"
	"errors"

	batchv1 "k8s.io/api/batch/v1"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/labels"
	"k8s.io/apimachinery/pkg/types"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/builder"
	"sigs.k8s.io/controller-runtime/pkg/cache"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/handler"
	"sigs.k8s.io/controller-runtime/pkg/predicate"
	"sigs.k8s.io/controller-runtime/pkg/reconcile"

	"ptah.run/operator/internal/runner"
	v1alpha1 "ptah.run/operator/operator/api/v1alpha1"
)

// Name is the controller's name, and the reporting controller of its Events.
const Name = "ptah-operator"

// New builds the PtahSchema reconciler from a manager's clients.
func New(mgr ctrl.Manager, b Binding, plainHTTP []string) *SchemaReconciler {
	return &SchemaReconciler{engine: newEngine(mgr, b, plainHTTP)}
}

// CacheOptions keeps only the Jobs and Pods of this manager's operations in
// its cache; namespaces, when given, limit everything it watches to them,
// and selector, when given, limits the PtahSchemas and PtahMigrations it
// reconciles to those it selects: one install per team.
func CacheOptions(namespaces []string, selector labels.Selector) cache.Options {
	managed := labels.SelectorFromSet(labels.Set{LabelManagedBy: ManagedBy})
	o := cache.Options{ByObject: map[client.Object]cache.ByObject{&batchv1.Job{}: {Label: managed}, &corev1.Pod{}: {Label: managed}}}
	if selector != nil && !selector.Empty() {
		// Every kind the manager reconciles: a selector that scoped one
		// would leave two installs both running the other.
		o.ByObject[&v1alpha1.PtahSchema{}] = cache.ByObject{Label: selector}
		o.ByObject[&v1alpha1.PtahMigration{}] = cache.ByObject{Label: selector}
	}
	if len(namespaces) > 0 {
		o.DefaultNamespaces = map[string]cache.Config{}
		for _, ns := range namespaces {
			o.DefaultNamespaces[ns] = cache.Config{}
		}
	}
	return o
}

// SetupWithManager reconciles a schema when its spec changes, when one of
// its Jobs does, when a result record names it, when an approval does, when
// its verification policy's ConfigMap does, or when record admission in its
// namespace changes verdict (r.Admission, which it needs).
// Its own status writes do not wake it: every write is followed by a requeue.
func (r *SchemaReconciler) SetupWithManager(mgr ctrl.Manager) error {
	if r.Admission == nil {
		return errors.New("the PtahSchema reconciler needs the record admission check (Admission): add NewRecordAdmission to the manager and hand it to both reconcilers")
	}
	return ctrl.NewControllerManagedBy(mgr).
		Named("ptahschema").
		For(&v1alpha1.PtahSchema{}, builder.WithPredicates(predicate.GenerationChangedPredicate{})).
		Owns(&batchv1.Job{}).
		Watches(&v1alpha1.PtahResultRecord{}, handler.EnqueueRequestsFromMapFunc(recordSubject)).
		Watches(&v1alpha1.PtahSchemaApproval{}, handler.EnqueueRequestsFromMapFunc(approvalSubject)).
		Watches(&corev1.Pod{}, handler.EnqueueRequestsFromMapFunc(podSubject)).
		Watches(&corev1.ConfigMap{}, handler.EnqueueRequestsFromMapFunc(r.policySubjects)).
		WatchesRawSource(r.Admission.source(func(ctx context.Context, ns string) []reconcile.Request {
			return inNamespace(ctx, r.Client, ns, &v1alpha1.PtahSchemaList{})
		})).
		Complete(r)
}

func recordSubject(_ context.Context, o client.Object) []reconcile.Request {
	rec, ok := o.(*v1alpha1.PtahResultRecord)
	if !ok || rec.Spec.Subject.Kind != v1alpha1.KindPtahSchema {
		return nil
	}
	return []reconcile.Request{{NamespacedName: types.NamespacedName{Namespace: rec.Namespace, Name: rec.Spec.Subject.Name}}}
}

// podSubject maps an operation's Pod to its schema, so a Pod that cannot
// be configured is diagnosed as soon as the kubelet says so.
func podSubject(_ context.Context, o client.Object) []reconcile.Request {
	name := o.GetLabels()[runner.LabelSchema]
	if name == "" {
		return nil
	}
	return []reconcile.Request{{NamespacedName: types.NamespacedName{Namespace: o.GetNamespace(), Name: name}}}
}

func approvalSubject(_ context.Context, o client.Object) []reconcile.Request {
	a, ok := o.(*v1alpha1.PtahSchemaApproval)
	if !ok {
		return nil
	}
	return []reconcile.Request{{NamespacedName: types.NamespacedName{Namespace: a.Namespace, Name: a.Spec.SchemaName}}}
}
