package describe_test

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"path/filepath"
	"strings"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"ptah.run/operator/internal/runner"
	"ptah.run/operator/internal/testenv"
	v1alpha1 "ptah.run/operator/operator/api/v1alpha1"
	"ptah.run/operator/operator/describe"
)

// CRDs lists the definitions the views read.
func CRDs() testenv.APIServerOption {
	dir := filepath.Join("..", "config", "crd", "bases")
	return testenv.WithCRDs(filepath.Join(dir, "operator.ptah.run_ptahschemas.yaml"), filepath.Join(dir, "operator.ptah.run_ptahschemaplans.yaml"))
}

type fixture struct {
	c         client.Client
	schema    *v1alpha1.PtahSchema
	current   *v1alpha1.PtahSchemaPlan
	appliedPl *v1alpha1.PtahSchemaPlan
}

// plan publishes a PtahSchemaPlan as the manager does, with ptah's digest.
func plan(t *testing.T, c client.Client, ns, name, schema string, stmts ...v1alpha1.Statement) *v1alpha1.PtahSchemaPlan {
	t.Helper()
	r := &v1alpha1.PlanResult{BaseFingerprint: "sha256:base-" + name, DesiredFingerprint: "sha256:desired-" + name, Statements: stmts}
	for _, s := range stmts {
		r.Destructive = r.Destructive || s.Severity == v1alpha1.SeverityDestructive
	}
	var err error
	if r.Digest, err = runner.PlanDigest(r, nil); err != nil {
		t.Fatal(err)
	}
	p := &v1alpha1.PtahSchemaPlan{
		ObjectMeta: metav1.ObjectMeta{Name: name, Namespace: ns},
		Spec: v1alpha1.PtahSchemaPlanSpec{SchemaRef: v1alpha1.LocalRef{Name: schema}, Fingerprint: r.Digest,
			BaseFingerprint: r.BaseFingerprint, DesiredFingerprint: r.DesiredFingerprint, Digest: r.Digest,
			Destructive: r.Destructive, Statements: append([]v1alpha1.Statement{}, stmts...),
			ArtifactDigest: "sha256:" + strings.Repeat("a", 64)},
	}
	if err := c.Create(context.Background(), p); err != nil {
		t.Fatalf("create plan %s: %v", name, err)
	}
	return p
}

// StartFixture serves a PtahSchema "orders" in namespace "team" with an
// applied plan, a current destructive plan and a tampered plan.
func StartFixture(t *testing.T) (*testenv.APIServer, *fixture) {
	api := testenv.StartAPIServer(t, CRDs())
	scheme := runtime.NewScheme()
	if err := v1alpha1.AddToScheme(scheme); err != nil {
		t.Fatal(err)
	}
	if err := corev1.AddToScheme(scheme); err != nil {
		t.Fatal(err)
	}
	c, err := client.New(api.Config, client.Options{Scheme: scheme})
	if err != nil {
		t.Fatal(err)
	}
	ctx := context.Background()
	if err := c.Create(ctx, &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: "team"}}); err != nil {
		t.Fatal(err)
	}
	f := &fixture{c: c}
	f.appliedPl = plan(t, c, "team", "orders-applied", "orders",
		v1alpha1.Statement{SQL: `CREATE TABLE "orders" ("id" bigint NOT NULL, PRIMARY KEY ("id"))`, Severity: v1alpha1.SeveritySafe, Reason: `create table "orders"`})
	f.current = plan(t, c, "team", "orders-current", "orders",
		v1alpha1.Statement{SQL: `ALTER TABLE "orders" ADD COLUMN "note" text NULL`, Severity: v1alpha1.SeveritySafe, Reason: `add column "note"`,
			Hazards: []v1alpha1.Hazard{v1alpha1.HazardAccessExclusiveLock}},
		v1alpha1.Statement{SQL: `ALTER TABLE "orders" DROP COLUMN "legacy"`, Severity: v1alpha1.SeverityDestructive, Reason: `drop column "legacy": its data is lost`,
			Hazards: []v1alpha1.Hazard{v1alpha1.HazardDeletesData, v1alpha1.HazardAccessExclusiveLock}})
	s := &v1alpha1.PtahSchema{
		ObjectMeta: metav1.ObjectMeta{Name: "orders", Namespace: "team"},
		Spec: v1alpha1.PtahSchemaSpec{
			Target:  v1alpha1.Target{URLFrom: v1alpha1.SecretKeyRef{Name: "orders-db", Key: "url"}},
			Desired: v1alpha1.Desired{OCIRef: "oci://registry.example:5000/schemas/orders:v2"},
		},
	}
	if err := c.Create(ctx, s); err != nil {
		t.Fatalf("create ptahschema: %v", err)
	}
	now := metav1.NewTime(time.Now().Truncate(time.Second))
	next := metav1.NewTime(now.Add(4 * time.Minute))
	s.Status = v1alpha1.PtahSchemaStatus{OperationStatus: v1alpha1.OperationStatus{
		ObservedGeneration: s.Generation,
		Phase:              v1alpha1.PhaseBlocked,
		Conditions: []metav1.Condition{
			{Type: v1alpha1.ConditionReady, Status: metav1.ConditionFalse, Reason: v1alpha1.ReasonPolicyBlocked, Message: "plan orders-current is destructive and spec.policy.allowDestructive is false", ObservedGeneration: s.Generation, LastTransitionTime: now},
			{Type: v1alpha1.ConditionInSync, Status: metav1.ConditionFalse, Reason: v1alpha1.ReasonChangesPending, Message: "plan orders-current has changes", ObservedGeneration: s.Generation, LastTransitionTime: now},
		},
		Source:                 &v1alpha1.Source{ResolvedDigest: "sha256:" + strings.Repeat("a", 64), Verified: true},
		LastAttemptTime:        &now,
		NextReconciliationTime: &next,
	},
		Plan:    &v1alpha1.PlanSummary{Name: f.current.Name, Fingerprint: f.current.Spec.Fingerprint, Digest: f.current.Spec.Digest, Destructive: true, Statements: 2},
		Applied: &v1alpha1.Applied{ArtifactDigest: "sha256:" + strings.Repeat("b", 64), PlanFingerprint: f.appliedPl.Spec.Fingerprint},
	}
	if err := c.Status().Update(ctx, s); err != nil {
		t.Fatalf("write ptahschema status: %v", err)
	}
	f.schema = s
	return api, f
}

func TestPlanAndStatusViews(t *testing.T) {
	_, f := StartFixture(t)
	ctx := context.Background()
	r := describe.Reader{Client: f.c, Namespace: "team"}
	out := func(t *testing.T, applied bool, format string) string {
		t.Helper()
		var b bytes.Buffer
		if err := r.Plan(ctx, &b, "orders", applied, format); err != nil {
			t.Fatalf("plan (applied %v, %s): %v", applied, format, err)
		}
		return b.String()
	}

	t.Run("text shows the current plan, each statement with severity and reason", func(t *testing.T) {
		got := out(t, false, describe.FormatText)
		for _, want := range []string{"orders-current (current plan of ptahschema/orders)", f.current.Spec.Digest + " (verified)",
			"Statements:        2 (1 destructive)", `1. [safe] add column "note"`, `2. [destructive] drop column "legacy": its data is lost`,
			`   ALTER TABLE "orders" DROP COLUMN "legacy"`, "   hazards: access-exclusive-lock\n", "   hazards: deletes-data, access-exclusive-lock\n"} {
			if !strings.Contains(got, want) {
				t.Errorf("text lacks %q:\n%s", want, got)
			}
		}
	})
	t.Run("sql is runnable statements with their verdicts as comments", func(t *testing.T) {
		want := "-- ptahschemaplan orders-current, digest " + f.current.Spec.Digest + " (verified)\n" +
			"-- safe: add column \"note\"\n--   hazards: access-exclusive-lock\nALTER TABLE \"orders\" ADD COLUMN \"note\" text NULL;\n" +
			"-- destructive: drop column \"legacy\": its data is lost\n--   hazards: deletes-data, access-exclusive-lock\nALTER TABLE \"orders\" DROP COLUMN \"legacy\";\n"
		if got := out(t, false, describe.FormatSQL); got != want {
			t.Errorf("sql:\n%s\nwant:\n%s", got, want)
		}
	})
	t.Run("json is the stored plan", func(t *testing.T) {
		var p v1alpha1.PtahSchemaPlan
		if err := json.Unmarshal([]byte(out(t, false, describe.FormatJSON)), &p); err != nil {
			t.Fatal(err)
		}
		if p.Name != "orders-current" || p.Spec.Digest != f.current.Spec.Digest || len(p.Spec.Statements) != 2 {
			t.Errorf("json plan %s digest %s with %d statements", p.Name, p.Spec.Digest, len(p.Spec.Statements))
		}
	})
	t.Run("--applied shows the plan status.applied names", func(t *testing.T) {
		got := out(t, true, describe.FormatSQL)
		if !strings.Contains(got, "orders-applied") || !strings.Contains(got, `CREATE TABLE "orders"`) || strings.Contains(got, "DROP") {
			t.Errorf("applied plan:\n%s", got)
		}
	})
	t.Run("admission refuses a severity its hazards contradict", func(t *testing.T) {
		for i, st := range []v1alpha1.Statement{
			{SQL: "DROP TABLE x", Severity: v1alpha1.SeveritySafe, Hazards: []v1alpha1.Hazard{v1alpha1.HazardDeletesData}},
			{SQL: "ALTER TABLE x ALTER COLUMN c SET NOT NULL", Severity: v1alpha1.SeverityDestructive, Hazards: []v1alpha1.Hazard{v1alpha1.HazardMayFail}},
		} {
			bad := f.current.DeepCopy()
			bad.ObjectMeta = metav1.ObjectMeta{Name: fmt.Sprintf("orders-contradicted-%d", i), Namespace: "team"}
			bad.Spec.Statements = []v1alpha1.Statement{st}
			bad.Spec.Destructive = st.Severity == v1alpha1.SeverityDestructive
			if err := f.c.Create(ctx, bad); err == nil || !strings.Contains(err.Error(), "deletes-data") {
				t.Errorf("%s marked %s with hazards %v: admitted (%v)", st.SQL, st.Severity, st.Hazards, err)
			}
		}
	})
	t.Run("a plan that no longer matches its digest is refused", func(t *testing.T) {
		// Plans are immutable at admission, so a tampered one is a new
		// object that status is pointed at.
		bad := f.current.DeepCopy()
		bad.ObjectMeta = metav1.ObjectMeta{Name: "orders-tampered", Namespace: "team"}
		bad.Spec.Statements[0].SQL = `DROP TABLE "orders"`
		bad.Spec.Statements[0].Severity = v1alpha1.SeverityDestructive
		bad.Spec.Statements[0].Hazards = []v1alpha1.Hazard{v1alpha1.HazardDeletesData}
		if err := f.c.Create(ctx, bad); err != nil {
			t.Fatal(err)
		}
		s := f.schema.DeepCopy()
		if err := f.c.Get(ctx, client.ObjectKeyFromObject(s), s); err != nil {
			t.Fatal(err)
		}
		s.Status.Plan.Name = bad.Name
		if err := f.c.Status().Update(ctx, s); err != nil {
			t.Fatal(err)
		}
		var b bytes.Buffer
		err := r.Plan(ctx, &b, "orders", false, describe.FormatSQL)
		if err == nil || !strings.Contains(err.Error(), "orders-tampered refused") {
			t.Errorf("tampered plan: error %v, want a refusal", err)
		}
		if b.Len() != 0 {
			t.Errorf("printed %q for a tampered plan", b.String())
		}
		s.Status.Plan.Name = f.current.Name
		if err := f.c.Status().Update(ctx, s); err != nil {
			t.Fatal(err)
		}
	})
	t.Run("status shows phase, conditions with reasons, plans and the next reconciliation", func(t *testing.T) {
		var b bytes.Buffer
		if err := r.Status(ctx, &b, "orders", f.schema.Status.LastAttemptTime.Time.Add(time.Minute)); err != nil {
			t.Fatal(err)
		}
		got := b.String()
		for _, want := range []string{"PtahSchema:           team/orders", "Phase:                Blocked (observed generation 1 of 1)",
			"Current plan:         orders-current: 2 statements, destructive",
			"Last applied:         artifact sha256:" + strings.Repeat("b", 64) + ", plan " + f.appliedPl.Spec.Fingerprint,
			"(in 3m0s)", "Ready   False   PolicyBlocked", "InSync  False   ChangesPending"} {
			if !strings.Contains(got, want) {
				t.Errorf("status lacks %q:\n%s", want, got)
			}
		}
	})
	t.Run("a schema with no plan says so", func(t *testing.T) {
		s := &v1alpha1.PtahSchema{ObjectMeta: metav1.ObjectMeta{Name: "fresh", Namespace: "team"}, Spec: f.schema.Spec}
		if err := f.c.Create(ctx, s); err != nil {
			t.Fatal(err)
		}
		var b bytes.Buffer
		if err := r.Plan(ctx, &b, "fresh", false, describe.FormatText); err == nil || !strings.Contains(err.Error(), "no current plan (phase not yet reconciled)") {
			t.Errorf("plan of a fresh schema: %v", err)
		}
		if err := r.Plan(ctx, &b, "fresh", true, describe.FormatText); err == nil || !strings.Contains(err.Error(), "no applied plan yet") {
			t.Errorf("applied plan of a fresh schema: %v", err)
		}
	})
}
