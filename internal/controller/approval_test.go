package controller

import (
	"context"
	"sync/atomic"
	"testing"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/client/interceptor"

	v1alpha1 "ptah.run/operator/operator/api/v1alpha1"
)

// faulty replaces the reconciler's client with a direct one whose calls go
// through funcs: a write the API server would refuse (a conflict) is
// provoked where no real client can be made to lose that race on cue.
func faulty(funcs interceptor.Funcs) func(*envOption) {
	return func(o *envOption) {
		o.reconcile = func(r *SchemaReconciler) {
			ww, err := client.NewWithWatch(shared.api.Config, client.Options{Scheme: shared.sch})
			if err != nil {
				panic(err)
			}
			r.Client = interceptor.NewClient(ww, funcs)
		}
	}
}

var conflict = apierrors.NewConflict(schema.GroupResource{Group: v1alpha1.GroupVersion.Group, Resource: "ptahschemas"}, "shop", nil)

// TestApprovalIsConsumedWithItsClaim: whichever of the two writes that
// consume an approval (the Apply claim in status, the consumed-by mark on
// the approval) loses a conflict, the approval is consumed by the claim that
// applies the plan, exactly once, and never reported revoked.
func TestApprovalIsConsumedWithItsClaim(t *testing.T) {
	t.Parallel()
	cases := map[string]func(failed *atomic.Bool) interceptor.Funcs{
		"the claim's write conflicts": func(failed *atomic.Bool) interceptor.Funcs {
			return interceptor.Funcs{SubResourceUpdate: func(ctx context.Context, c client.Client, sub string, obj client.Object, opts ...client.SubResourceUpdateOption) error {
				s, ok := obj.(*v1alpha1.PtahSchema)
				if ok && s.Status.ActiveOperation != nil && s.Status.ActiveOperation.Approval != "" && failed.CompareAndSwap(false, true) {
					return conflict
				}
				return c.SubResource(sub).Update(ctx, obj, opts...)
			}}
		},
		"the approval's mark conflicts": func(failed *atomic.Bool) interceptor.Funcs {
			return interceptor.Funcs{Patch: func(ctx context.Context, c client.WithWatch, obj client.Object, patch client.Patch, opts ...client.PatchOption) error {
				if _, ok := obj.(*v1alpha1.PtahSchemaApproval); ok && failed.CompareAndSwap(false, true) {
					return conflict
				}
				return c.Patch(ctx, obj, patch, opts...)
			}}
		},
	}
	for name, funcs := range cases {
		t.Run(name, func(t *testing.T) {
			t.Parallel()
			var failed atomic.Bool
			e := newEnv(t, faulty(funcs(&failed)))
			e.schema(onApproval)
			s := awaitApprovalOf(e)
			approvalFor(e, "ok", s.Status.Plan.Name, s.Status.Plan.Fingerprint)
			inSync(e)
			if !failed.Load() {
				t.Fatal("the fault was never provoked")
			}
			if revoked := e.eventsOf(v1alpha1.EventApprovalRevoked); len(revoked) > 0 {
				t.Errorf("ApprovalRevoked for a valid approval: %v", revoked)
			}
			applies := e.jobs("ptah-apply-shop-")
			if len(applies) != 1 {
				t.Fatalf("%d Apply Jobs, want one: %v", len(applies), names(applies))
			}
			var rec v1alpha1.PtahResultRecord
			must(t, shared.c.Get(context.Background(), client.ObjectKey{Namespace: e.ns, Name: applies[0].Name}, &rec))
			var a v1alpha1.PtahSchemaApproval
			must(t, shared.c.Get(context.Background(), client.ObjectKey{Namespace: e.ns, Name: "ok"}, &a))
			if got := a.Annotations[AnnotationConsumedBy]; got != rec.Spec.OperationID {
				t.Errorf("approval consumed by %q, want the Apply that ran (%s)", got, rec.Spec.OperationID)
			}
		})
	}
}
