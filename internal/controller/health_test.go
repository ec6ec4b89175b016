package controller

import (
	"os"
	"path/filepath"
	"testing"
	"time"

	lua "github.com/yuin/gopher-lua"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime"
	"sigs.k8s.io/cli-utils/pkg/kstatus/status"
	"sigs.k8s.io/yaml"

	v1alpha1 "ptah.run/operator/operator/api/v1alpha1"
)

// healthScript is the shipped Argo CD health check of kind, in the
// resource_customizations layout.
func healthScript(kind string) string {
	return filepath.Join("..", "..", "operator", "argocd", "operator.ptah.run", kind, "health.lua")
}

// argoHealthOf runs kind's health check on obj the way Argo CD does: the
// object as a Lua table in the global obj, the script's returned table read
// for status and message.
func argoHealthOf(t *testing.T, kind string, obj map[string]any) (string, string) {
	t.Helper()
	script, err := os.ReadFile(healthScript(kind))
	must(t, err)
	L := lua.NewState(lua.Options{SkipOpenLibs: true})
	defer L.Close()
	for _, open := range []lua.LGFunction{lua.OpenBase, lua.OpenTable, lua.OpenString, lua.OpenMath} {
		open(L)
	}
	L.SetGlobal("obj", toLua(L, obj))
	must(t, L.DoString(string(script)))
	hs, ok := L.Get(-1).(*lua.LTable)
	if !ok {
		t.Fatalf("%s health.lua returned %s, not a table", kind, L.Get(-1).Type())
	}
	return hs.RawGetString("status").String(), hs.RawGetString("message").String()
}

// TestArgoHealthTestsInUpstreamFormat runs each kind's health_test.yaml,
// the format of Argo CD's resource_customizations (a list of tests, each an
// input object under testdata and the status and message it must give), so
// the scripts can be proposed upstream as they are.
func TestArgoHealthTestsInUpstreamFormat(t *testing.T) {
	for _, kind := range []string{v1alpha1.KindPtahSchema, v1alpha1.KindPtahMigration} {
		dir := filepath.Dir(healthScript(kind))
		raw, err := os.ReadFile(filepath.Join(dir, "health_test.yaml"))
		must(t, err)
		var suite struct {
			Tests []struct {
				HealthStatus struct{ Status, Message string } `json:"healthStatus"`
				InputPath    string                           `json:"inputPath"`
			} `json:"tests"`
		}
		must(t, yaml.UnmarshalStrict(raw, &suite))
		if len(suite.Tests) == 0 {
			t.Errorf("%s: health_test.yaml holds no test", kind)
		}
		for _, tc := range suite.Tests {
			in, err := os.ReadFile(filepath.Join(dir, tc.InputPath))
			must(t, err)
			var obj map[string]any
			must(t, yaml.Unmarshal(in, &obj))
			if obj["kind"] != kind {
				t.Errorf("%s: %s is a %v", kind, tc.InputPath, obj["kind"])
			}
			st, msg := argoHealthOf(t, kind, obj)
			if st != tc.HealthStatus.Status || msg != tc.HealthStatus.Message {
				t.Errorf("%s %s: %s %q, want %s %q", kind, tc.InputPath, st, msg, tc.HealthStatus.Status, tc.HealthStatus.Message)
			}
		}
	}
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

// gitopsHealth is what a GitOps tool reads of an object: kstatus's status and
// the shipped Argo CD health check's.
type gitopsHealth struct {
	kstatus status.Status
	argo    string
}

// assertHealth computes kstatus (what Flux and kstatus-based tools use) and
// kind's Argo CD health check on o and holds them to want; a kstatus
// Failed must say why.
func assertHealth(t *testing.T, kind string, o subject, want gitopsHealth) {
	t.Helper()
	obj, err := runtime.DefaultUnstructuredConverter.ToUnstructured(o)
	must(t, err)
	u := &unstructured.Unstructured{Object: obj}
	u.SetAPIVersion(v1alpha1.GroupVersion.String())
	u.SetKind(kind)
	ks, err := status.Compute(u)
	must(t, err)
	if ks.Status != want.kstatus {
		t.Errorf("kstatus %s (%s), want %s; conditions %s", ks.Status, ks.Message, want.kstatus, conditions(o))
	}
	if want.kstatus == status.FailedStatus && ks.Message == "" {
		t.Errorf("kstatus Failed without a reason")
	}
	if argo, msg := argoHealthOf(t, kind, obj); argo != want.argo {
		t.Errorf("Argo CD health %s (%s), want %s; conditions %s", argo, msg, want.argo, conditions(o))
	}
}

// TestHealthInEveryPhase: kstatus and the shipped Argo CD health check,
// computed on real objects the pipeline left in each phase, say what a
// GitOps rollout should do there.
func TestHealthInEveryPhase(t *testing.T) {
	t.Parallel()
	cases := []struct {
		name  string
		reach func(t *testing.T, e *env) *v1alpha1.PtahSchema
		want  gitopsHealth
	}{
		{"InSync", func(t *testing.T, e *env) *v1alpha1.PtahSchema { e.schema(); return inSync(e) }, gitopsHealth{status.CurrentStatus, "Healthy"}},
		{"AwaitingApproval", func(t *testing.T, e *env) *v1alpha1.PtahSchema { e.schema(onApproval); return awaitApprovalOf(e) }, gitopsHealth{status.FailedStatus, "Suspended"}},
		{"Blocked", func(t *testing.T, e *env) *v1alpha1.PtahSchema {
			e.schema()
			inSync(e)
			e.update("shop", func(s *v1alpha1.PtahSchema) { s.Spec.Desired.OCIRef = shared.refV2 })
			return e.await("shop", "Blocked", converge, func(s *v1alpha1.PtahSchema) bool {
				return s.Status.Phase == v1alpha1.PhaseBlocked && condition(v1alpha1.ConditionReady, metav1.ConditionFalse, v1alpha1.ReasonPolicyBlocked)(s)
			})
		}, gitopsHealth{status.FailedStatus, "Degraded"}},
		{"ConfigurationError", func(t *testing.T, e *env) *v1alpha1.PtahSchema {
			e.schema(func(s *v1alpha1.PtahSchema) { s.Spec.Target.URLFrom.Name = "nowhere" })
			return e.await("shop", "ConfigurationError", converge, condition(v1alpha1.ConditionReconciliationFailed, metav1.ConditionTrue, v1alpha1.ReasonConfigurationError))
		}, gitopsHealth{status.FailedStatus, "Degraded"}},
		{"OperationFailed", func(t *testing.T, e *env) *v1alpha1.PtahSchema {
			e.schema(func(s *v1alpha1.PtahSchema) { s.Spec.Target.URLFrom.Name = "shop-db-broken" })
			return e.await("shop", "OperationFailed", converge, condition(v1alpha1.ConditionReconciliationFailed, metav1.ConditionTrue, v1alpha1.ReasonOperationFailed))
		}, gitopsHealth{status.InProgressStatus, "Progressing"}},
		{"Applying", func(t *testing.T, e *env) *v1alpha1.PtahSchema {
			e.schema(func(s *v1alpha1.PtahSchema) { s.Spec.Policy.LockTimeout = &metav1.Duration{Duration: 2 * time.Minute} })
			_, unlock := lockedApply(t, e)
			t.Cleanup(unlock)
			return e.await("shop", "Applying", converge, func(s *v1alpha1.PtahSchema) bool { return s.Status.Phase == v1alpha1.PhaseApplying })
		}, gitopsHealth{status.InProgressStatus, "Progressing"}},
		{"Suspended", func(t *testing.T, e *env) *v1alpha1.PtahSchema {
			e.schema(func(s *v1alpha1.PtahSchema) { s.Spec.Suspend = true })
			return e.await("shop", "Suspended", converge, condition(v1alpha1.ConditionSuspended, metav1.ConditionTrue, v1alpha1.ReasonSuspendedBySpec))
		}, gitopsHealth{status.FailedStatus, "Suspended"}},
		{"ReadyToApply under Never", func(t *testing.T, e *env) *v1alpha1.PtahSchema {
			e.schema(func(s *v1alpha1.PtahSchema) { s.Spec.Policy.Apply = v1alpha1.ApplyNever })
			return e.await("shop", "ReadyToApply", converge, func(s *v1alpha1.PtahSchema) bool {
				return s.Status.Phase == v1alpha1.PhaseReadyToApply && s.Status.ActiveOperation == nil
			})
		}, gitopsHealth{status.FailedStatus, "Degraded"}},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			e := newEnv(t)
			assertHealth(t, v1alpha1.KindPtahSchema, tc.reach(t, e), tc.want)
		})
	}
}

// TestMigrationHealthInEveryPhase: kstatus and the shipped Argo CD health
// check, computed on real PtahMigrations the pipeline left in each phase,
// say what a GitOps rollout should do there. Waiting for an approval is
// Failed to kstatus (Stalled=True, AwaitingApproval), as for PtahSchema: a
// rollout waiting on it (Flux's wait: true) stops at once, naming the
// approval, instead of running into its timeout.
func TestMigrationHealthInEveryPhase(t *testing.T) {
	t.Parallel()
	cases := []struct {
		name  string
		reach func(t *testing.T, e *env) *v1alpha1.PtahMigration
		want  gitopsHealth
	}{
		{"InSync", func(t *testing.T, e *env) *v1alpha1.PtahMigration {
			e.migration(pushMigrations(t, "h-sync-"+e.ns, migrationsV1))
			return migrated(e, 3)
		}, gitopsHealth{status.CurrentStatus, "Healthy"}},
		{"AwaitingApproval", func(t *testing.T, e *env) *v1alpha1.PtahMigration {
			e.migration(pushMigrations(t, "h-approval-"+e.ns, migrationsV1), func(m *v1alpha1.PtahMigration) { m.Spec.Policy.Apply = v1alpha1.ApplyOnApproval })
			return e.awaitMigration("AwaitingApproval", converge, func(m *v1alpha1.PtahMigration) bool {
				return m.Status.Phase == v1alpha1.PhaseAwaitingApproval && m.Status.ActiveOperation == nil
			})
		}, gitopsHealth{status.FailedStatus, "Suspended"}},
		{"Blocked", func(t *testing.T, e *env) *v1alpha1.PtahMigration {
			e.migration(pushMigrations(t, "h-blocked-"+e.ns, migrationsV1))
			migrated(e, 3)
			edited := pushMigrations(t, "h-blocked2-"+e.ns, with(migrationsV1, "0002_orders.up.sql", "CREATE TABLE orders (id bigint PRIMARY KEY);\n"))
			e.updateMigration(func(m *v1alpha1.PtahMigration) { m.Spec.Migrations.OCIRef = edited })
			return e.awaitMigration("Blocked", converge, func(m *v1alpha1.PtahMigration) bool {
				return m.Status.Phase == v1alpha1.PhaseBlocked && m.Status.ActiveOperation == nil && m.Status.ObservedGeneration == m.Generation
			})
		}, gitopsHealth{status.FailedStatus, "Degraded"}},
		{"OperationFailed", func(t *testing.T, e *env) *v1alpha1.PtahMigration {
			e.migration(pushMigrations(t, "h-failed-"+e.ns, migrationsV1), func(m *v1alpha1.PtahMigration) { m.Spec.Target.URLFrom.Name = "shop-db-broken" })
			return e.awaitMigration("OperationFailed", converge, migrationCondition(v1alpha1.ConditionReconciliationFailed, metav1.ConditionTrue, v1alpha1.ReasonOperationFailed))
		}, gitopsHealth{status.InProgressStatus, "Progressing"}},
		{"Suspended", func(t *testing.T, e *env) *v1alpha1.PtahMigration {
			e.migration(pushMigrations(t, "h-suspended-"+e.ns, migrationsV1), func(m *v1alpha1.PtahMigration) { m.Spec.Suspend = true })
			return e.awaitMigration("Suspended", converge, migrationCondition(v1alpha1.ConditionSuspended, metav1.ConditionTrue, v1alpha1.ReasonSuspendedBySpec))
		}, gitopsHealth{status.FailedStatus, "Suspended"}},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			e := newEnv(t)
			assertHealth(t, v1alpha1.KindPtahMigration, tc.reach(t, e), tc.want)
		})
	}
}

// TestBlockedMigrationHasAReasonOfItsOwn: a PtahMigration in phase Blocked
// whose conditions name no refusal reads Stalled=True (MigrationBlocked),
// never another refusal's reason; one whose PlanReady or Ready names the
// refusal carries that reason.
func TestBlockedMigrationHasAReasonOfItsOwn(t *testing.T) {
	for _, tc := range []struct {
		name       string
		conditions []metav1.Condition
		want       string
	}{
		{"no refusal named", nil, v1alpha1.ReasonMigrationBlocked},
		{"Ready names it", []metav1.Condition{{Type: v1alpha1.ConditionReady, Status: metav1.ConditionFalse, Reason: v1alpha1.ReasonAppliedMigrationMissing}}, v1alpha1.ReasonAppliedMigrationMissing},
		{"PlanReady names it", []metav1.Condition{
			{Type: v1alpha1.ConditionReady, Status: metav1.ConditionFalse, Reason: v1alpha1.ReasonConfigurationError},
			{Type: v1alpha1.ConditionPlanReady, Status: metav1.ConditionFalse, Reason: v1alpha1.ReasonAppliedMigrationModified},
		}, v1alpha1.ReasonAppliedMigrationModified},
	} {
		m := &v1alpha1.PtahMigration{Status: v1alpha1.PtahMigrationStatus{OperationStatus: v1alpha1.OperationStatus{Phase: v1alpha1.PhaseBlocked, Conditions: tc.conditions}}}
		migrationHealth(m)
		if c := meta.FindStatusCondition(m.Status.Conditions, v1alpha1.ConditionStalled); c == nil || c.Status != metav1.ConditionTrue || c.Reason != tc.want {
			t.Errorf("%s: Stalled %+v, want True (%s)", tc.name, c, tc.want)
		}
	}
}
