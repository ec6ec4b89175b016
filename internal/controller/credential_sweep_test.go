package controller

import (
	"context"
	"fmt"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	rbacv1 "k8s.io/api/rbac/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/client/interceptor"

	"ptah.run/operator/internal/runner"
	v1alpha1 "ptah.run/operator/operator/api/v1alpha1"
)

// TestCredentialsAKilledManagerOwedAreRevokedByTheNext: on the lab, the
// manager SIGKILLed during a Plan had consumed the Plan's record and written
// the Apply's claim, and died before it revoked the Plan's credential: its
// ServiceAccount, Role and RoleBinding stayed (every later row of the fault
// table found "serviceaccount ptah-op-... left behind"), as no claim names
// them any more. Here the first manager's revocations never reach the API
// server, as for a manager killed right after each status write; the one
// started after it revokes the credential of every finished operation.
func TestCredentialsAKilledManagerOwedAreRevokedByTheNext(t *testing.T) {
	t.Parallel()
	e := newEnv(t, func(o *envOption) {
		o.reconcile = func(r *SchemaReconciler) {
			r.Client = interceptor.NewClient(noWatch{r.Client}, interceptor.Funcs{
				Delete: func(ctx context.Context, c client.WithWatch, o client.Object, opts ...client.DeleteOption) error {
					switch o.(type) {
					case *corev1.ServiceAccount, *rbacv1.Role, *rbacv1.RoleBinding:
						return fmt.Errorf("delete %s: the manager was killed before it reached the API server", o.GetName())
					}
					return c.Delete(ctx, o, opts...)
				},
			})
		}
	})
	e.schema()
	inSync(e)
	if left := operationCredentials(t, e); len(left) < 5 {
		t.Fatalf("the first manager's credentials were revoked after all (%v): the fault was not provoked", left)
	}
	e.stop()
	e.startManager(nil)
	e.update("shop", func(s *v1alpha1.PtahSchema) { s.Spec.Interval = &metav1.Duration{Duration: 20 * time.Minute} })
	e.await("shop", "InSync=True (ScopedConverged) at the new generation", converge, func(s *v1alpha1.PtahSchema) bool {
		return condition(v1alpha1.ConditionInSync, metav1.ConditionTrue, v1alpha1.ReasonScopedConverged)(s) &&
			s.Status.ObservedGeneration == s.Generation && s.Status.ActiveOperation == nil
	})
	credentialsRevoked(t, e)
}

// credentialsRevoked waits for every credential of an ended operation of
// the schema to be revoked. The status that ends an operation is written
// before its credential is revoked (finish), so a read right after it can
// still find that credential; one the sweep never reaches stays for good.
func credentialsRevoked(t *testing.T, e *env) {
	t.Helper()
	deadline := time.Now().Add(30 * time.Second)
	for {
		keep := ""
		if c := e.get("shop").Status.ActiveOperation; c != nil {
			keep = credentialName(c)
		}
		var left []string
		for _, o := range operationCredentials(t, e) {
			if !strings.HasSuffix(o, " "+keep) || keep == "" {
				left = append(left, o)
			}
		}
		if len(left) == 0 {
			return
		}
		if time.Now().After(deadline) {
			t.Fatalf("credentials of ended operations left behind: %v", left)
		}
		time.Sleep(200 * time.Millisecond)
	}
}

// operationCredentials lists the schema's operation ServiceAccounts, Roles
// and RoleBindings.
func operationCredentials(t *testing.T, e *env) []string {
	t.Helper()
	ctx := context.Background()
	sel := []client.ListOption{client.InNamespace(e.ns), client.MatchingLabels{runner.LabelSchema: "shop"}}
	var out []string
	var sas corev1.ServiceAccountList
	must(t, shared.c.List(ctx, &sas, sel...))
	for _, o := range sas.Items {
		out = append(out, "serviceaccount "+o.Name)
	}
	var roles rbacv1.RoleList
	must(t, shared.c.List(ctx, &roles, sel...))
	for _, o := range roles.Items {
		out = append(out, "role "+o.Name)
	}
	var rbs rbacv1.RoleBindingList
	must(t, shared.c.List(ctx, &rbs, sel...))
	for _, o := range rbs.Items {
		out = append(out, "rolebinding "+o.Name)
	}
	return out
}

// TestCredentialsARevocationFailedAreSweptWithoutARestart: the API server
// does not take the revocation of the second operation's ServiceAccount (it
// was restarting). The same manager sweeps it at the next prune; nothing is
// left once the schema is in sync.
func TestCredentialsARevocationFailedAreSweptWithoutARestart(t *testing.T) {
	t.Parallel()
	var deletes atomic.Int32
	e := newEnv(t, func(o *envOption) {
		o.reconcile = func(r *SchemaReconciler) {
			r.Client = interceptor.NewClient(noWatch{r.Client}, interceptor.Funcs{
				Delete: func(ctx context.Context, c client.WithWatch, o client.Object, opts ...client.DeleteOption) error {
					if _, ok := o.(*corev1.ServiceAccount); ok && deletes.Add(1) == 2 {
						return fmt.Errorf("delete %s: the API server is restarting", o.GetName())
					}
					return c.Delete(ctx, o, opts...)
				},
			})
		}
	})
	e.schema()
	inSync(e)
	if deletes.Load() < 3 {
		t.Fatalf("%d ServiceAccount deletions: the failed one was never tried again", deletes.Load())
	}
	e.await("shop", "no operation active", converge, func(s *v1alpha1.PtahSchema) bool { return s.Status.ActiveOperation == nil })
	credentialsRevoked(t, e)
}
