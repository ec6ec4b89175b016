package main

import (
	"bytes"
	"context"
	"strings"
	"testing"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"ptah.run/operator/internal/runner"
	v1alpha1 "ptah.run/operator/operator/api/v1alpha1"
)

// TestPluginReadsTheKubeconfigsCluster runs the plugin's command line the
// way kubectl does, against a real API server named by KUBECONFIG.
func TestPluginReadsTheKubeconfigsCluster(t *testing.T) {
	api, c, must := cluster(t, "operator.ptah.run_ptahschemas.yaml", "operator.ptah.run_ptahschemaplans.yaml")
	ctx := context.Background()
	var err error
	must(c.Create(ctx, &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: "team"}}))
	r := &v1alpha1.PlanResult{BaseFingerprint: "sha256:base", DesiredFingerprint: "sha256:desired",
		Statements: []v1alpha1.Statement{{SQL: `CREATE TABLE "orders" ("id" bigint)`, Severity: v1alpha1.SeveritySafe, Reason: `create table "orders"`}}}
	r.Digest, err = runner.PlanDigest(r, nil)
	must(err)
	must(c.Create(ctx, &v1alpha1.PtahSchemaPlan{ObjectMeta: metav1.ObjectMeta{Name: "orders-1", Namespace: "team"},
		Spec: v1alpha1.PtahSchemaPlanSpec{SchemaRef: v1alpha1.LocalRef{Name: "orders"}, Fingerprint: r.Digest, BaseFingerprint: r.BaseFingerprint,
			DesiredFingerprint: r.DesiredFingerprint, Digest: r.Digest, Statements: r.Statements}}))
	s := &v1alpha1.PtahSchema{ObjectMeta: metav1.ObjectMeta{Name: "orders", Namespace: "team"}, Spec: v1alpha1.PtahSchemaSpec{
		Target: v1alpha1.Target{URLFrom: v1alpha1.SecretKeyRef{Name: "db", Key: "url"}}, Desired: v1alpha1.Desired{OCIRef: "oci://r.example/orders:v1"}}}
	must(c.Create(ctx, s))
	s.Status = v1alpha1.PtahSchemaStatus{OperationStatus: v1alpha1.OperationStatus{Phase: v1alpha1.PhaseAwaitingApproval}, Plan: &v1alpha1.PlanSummary{Name: "orders-1", Fingerprint: r.Digest, Digest: r.Digest, Statements: 1}}
	must(c.Status().Update(ctx, s))
	t.Setenv("KUBECONFIG", api.Kubeconfig)

	for _, tc := range []struct {
		args []string
		want string
	}{
		{[]string{"plan", "orders", "-n", "team", "-o", "sql"}, "-- safe: create table \"orders\"\nCREATE TABLE \"orders\" (\"id\" bigint);\n"},
		{[]string{"plan", "--namespace=team", "--output", "text", "orders"}, "Statements:        1 (0 destructive)"},
		{[]string{"status", "-n", "team", "orders"}, "Phase:                AwaitingApproval"},
		// Flags before the verb, as kubectl users write them; a flag's value
		// that spells a verb is not taken for one.
		{[]string{"-n", "team", "status", "orders"}, "Phase:                AwaitingApproval"},
		{[]string{"--namespace=team", "-o", "sql", "plan", "orders"}, "CREATE TABLE \"orders\" (\"id\" bigint);"},
	} {
		var out bytes.Buffer
		if err := run(tc.args, &out); err != nil {
			t.Errorf("kubectl ptah %s: %v", strings.Join(tc.args, " "), err)
		} else if !strings.Contains(out.String(), tc.want) {
			t.Errorf("kubectl ptah %s printed:\n%s\nwant it to contain %q", strings.Join(tc.args, " "), out.String(), tc.want)
		}
	}
	for _, tc := range []struct {
		args []string
		want string
	}{
		{[]string{"plan", "orders"}, `ptahschema orders in namespace default`},
		{[]string{"plan", "orders", "-n", "team", "-o", "yaml"}, `output format "yaml"`},
		{[]string{"plan", "-n", "team"}, "one PtahSchema name, got 0"},
		{[]string{"status", "orders", "--applied"}, "flag provided but not defined: -applied"},
		{[]string{"apply", "orders"}, "want a verb"},
		{[]string{"-n", "status", "orders"}, "want a verb"},
	} {
		var out bytes.Buffer
		if err := run(tc.args, &out); err == nil || !strings.Contains(err.Error(), tc.want) {
			t.Errorf("kubectl ptah %s: error %v, want %q", strings.Join(tc.args, " "), err, tc.want)
		}
	}
}
