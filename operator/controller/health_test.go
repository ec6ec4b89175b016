package controller

import (
	"os"
	"path/filepath"
	"testing"
	"time"

	lua "github.com/yuin/gopher-lua"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime"
	"sigs.k8s.io/cli-utils/pkg/kstatus/status"

	v1alpha1 "ptah.run/operator/operator/api/v1alpha1"
)

var healthScript = filepath.Join("..", "argocd", "operator.ptah.run", "PtahSchema", "health.lua")

// argoHealth runs the shipped Argo CD health check on s the way Argo CD
// does: the object as a Lua table in the global obj, the script's returned
// table read for status and message.
func argoHealth(t *testing.T, s *v1alpha1.PtahSchema) (string, string) {
	t.Helper()
	script, err := os.ReadFile(healthScript)
	must(t, err)
	u, err := runtime.DefaultUnstructuredConverter.ToUnstructured(s)
	must(t, err)
	L := lua.NewState(lua.Options{SkipOpenLibs: true})
	defer L.Close()
	for _, open := range []lua.LGFunction{lua.OpenBase, lua.OpenTable, lua.OpenString, lua.OpenMath} {
		open(L)
	}
	L.SetGlobal("obj", toLua(L, u))
	must(t, L.DoString(string(script)))
	hs, ok := L.Get(-1).(*lua.LTable)
	if !ok {
		t.Fatalf("health.lua returned %s, not a table", L.Get(-1).Type())
	}
	return hs.RawGetString("status").String(), hs.RawGetString("message").String()
}

func toLua(L *lua.LState, v any) lua.LValue {
	switch v := v.(type) {
	case map[string]any:
		t := L.NewTable()
		for k, x := range v {
			t.RawSetString(k, toLua(L, x))
		}
		return t
	case []any:
		t := L.NewTable()
		for _, x := range v {
			t.Append(toLua(L, x))
		}
		return t
	case string:
		return lua.LString(v)
	case bool:
		return lua.LBool(v)
	case int64:
		return lua.LNumber(v)
	case float64:
		return lua.LNumber(v)
	case nil:
		return lua.LNil
	}
	return lua.LString("")
}

// kstatusOf is what Flux and kstatus-based tools compute for s.
func kstatusOf(t *testing.T, s *v1alpha1.PtahSchema) *status.Result {
	t.Helper()
	m, err := runtime.DefaultUnstructuredConverter.ToUnstructured(s)
	must(t, err)
	u := &unstructured.Unstructured{Object: m}
	u.SetAPIVersion(v1alpha1.GroupVersion.String())
	u.SetKind(v1alpha1.KindPtahSchema)
	res, err := status.Compute(u)
	must(t, err)
	return res
}

// TestHealthInEveryPhase: kstatus and the shipped Argo CD health check,
// computed on real objects the pipeline left in each phase, say what a
// GitOps rollout should do there.
func TestHealthInEveryPhase(t *testing.T) {
	t.Parallel()
	type want struct {
		kstatus status.Status
		argo    string
	}
	cases := []struct {
		name  string
		reach func(t *testing.T, e *env) *v1alpha1.PtahSchema
		want  want
	}{
		{"InSync", func(t *testing.T, e *env) *v1alpha1.PtahSchema { e.schema(); return inSync(e) }, want{status.CurrentStatus, "Healthy"}},
		{"AwaitingApproval", func(t *testing.T, e *env) *v1alpha1.PtahSchema { e.schema(onApproval); return awaitApprovalOf(e) }, want{status.FailedStatus, "Suspended"}},
		{"Blocked", func(t *testing.T, e *env) *v1alpha1.PtahSchema {
			e.schema()
			inSync(e)
			e.update("shop", func(s *v1alpha1.PtahSchema) { s.Spec.Desired.OCIRef = shared.refV2 })
			return e.await("shop", "Blocked", converge, func(s *v1alpha1.PtahSchema) bool {
				return s.Status.Phase == v1alpha1.PhaseBlocked && condition(v1alpha1.ConditionReady, metav1.ConditionFalse, v1alpha1.ReasonPolicyBlocked)(s)
			})
		}, want{status.FailedStatus, "Degraded"}},
		{"ConfigurationError", func(t *testing.T, e *env) *v1alpha1.PtahSchema {
			e.schema(func(s *v1alpha1.PtahSchema) { s.Spec.Target.URLFrom.Name = "nowhere" })
			return e.await("shop", "ConfigurationError", converge, condition(v1alpha1.ConditionReconciliationFailed, metav1.ConditionTrue, v1alpha1.ReasonConfigurationError))
		}, want{status.FailedStatus, "Degraded"}},
		{"OperationFailed", func(t *testing.T, e *env) *v1alpha1.PtahSchema {
			e.schema(func(s *v1alpha1.PtahSchema) { s.Spec.Target.URLFrom.Name = "shop-db-broken" })
			return e.await("shop", "OperationFailed", converge, condition(v1alpha1.ConditionReconciliationFailed, metav1.ConditionTrue, v1alpha1.ReasonOperationFailed))
		}, want{status.InProgressStatus, "Progressing"}},
		{"Applying", func(t *testing.T, e *env) *v1alpha1.PtahSchema {
			e.schema(func(s *v1alpha1.PtahSchema) { s.Spec.Policy.LockTimeout = &metav1.Duration{Duration: 2 * time.Minute} })
			_, unlock := lockedApply(t, e)
			t.Cleanup(unlock)
			return e.await("shop", "Applying", converge, func(s *v1alpha1.PtahSchema) bool { return s.Status.Phase == v1alpha1.PhaseApplying })
		}, want{status.InProgressStatus, "Progressing"}},
		{"Suspended", func(t *testing.T, e *env) *v1alpha1.PtahSchema {
			e.schema(func(s *v1alpha1.PtahSchema) { s.Spec.Suspend = true })
			return e.await("shop", "Suspended", converge, condition(v1alpha1.ConditionSuspended, metav1.ConditionTrue, v1alpha1.ReasonSuspendedBySpec))
		}, want{status.FailedStatus, "Suspended"}},
		{"ReadyToApply under Never", func(t *testing.T, e *env) *v1alpha1.PtahSchema {
			e.schema(func(s *v1alpha1.PtahSchema) { s.Spec.Policy.Apply = v1alpha1.ApplyNever })
			return e.await("shop", "ReadyToApply", converge, func(s *v1alpha1.PtahSchema) bool {
				return s.Status.Phase == v1alpha1.PhaseReadyToApply && s.Status.ActiveOperation == nil
			})
		}, want{status.FailedStatus, "Degraded"}},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			e := newEnv(t)
			s := tc.reach(t, e)
			ks := kstatusOf(t, s)
			if ks.Status != tc.want.kstatus {
				t.Errorf("kstatus %s (%s), want %s; conditions %s", ks.Status, ks.Message, tc.want.kstatus, conditions(s))
			}
			argo, msg := argoHealth(t, s)
			if argo != tc.want.argo {
				t.Errorf("Argo CD health %s (%s), want %s; conditions %s", argo, msg, tc.want.argo, conditions(s))
			}
			if tc.want.kstatus == status.FailedStatus && ks.Message == "" {
				t.Errorf("kstatus Failed without a reason")
			}
		})
	}
}
