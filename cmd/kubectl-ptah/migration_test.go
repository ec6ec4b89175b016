package main

import (
	"bytes"
	"context"
	"strings"
	"testing"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	v1alpha1 "ptah.run/operator/operator/api/v1alpha1"
)

// TestPluginShowsMigrations reads a PtahMigration, its plan and its
// unresolved run from a real API server, as the manager would have written
// them, and refuses a plan that is not the one its status names.
func TestPluginShowsMigrations(t *testing.T) {
	api, c, must := cluster(t, "operator.ptah.run_ptahmigrations.yaml", "operator.ptah.run_ptahmigrationplans.yaml")
	ctx := context.Background()
	const sum = "sha256:0123456789abcdef0123456789abcdef0123456789abcdef0123456789abcdef"
	must(c.Create(ctx, &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: "team"}}))
	must(c.Create(ctx, &v1alpha1.PtahMigrationPlan{ObjectMeta: metav1.ObjectMeta{Name: "ledger-1", Namespace: "team"},
		Spec: v1alpha1.PtahMigrationPlanSpec{MigrationRef: v1alpha1.LocalRef{Name: "ledger"}, Fingerprint: "f1", ArtifactDigest: sum,
			BaseVersion: 2, HistoryDigest: sum, Pending: []v1alpha1.PendingMigration{
				{Version: 3, Name: "entries_note", Checksum: sum}, {Version: 4, Name: "entries_index", Checksum: sum}}}}))
	m := &v1alpha1.PtahMigration{ObjectMeta: metav1.ObjectMeta{Name: "ledger", Namespace: "team"}, Spec: v1alpha1.PtahMigrationSpec{
		Target: v1alpha1.Target{URLFrom: v1alpha1.SecretKeyRef{Name: "db", Key: "url"}}, Migrations: v1alpha1.MigrationsSource{OCIRef: "oci://r.example/ledger@" + sum}}}
	must(c.Create(ctx, m))
	m.Status = v1alpha1.PtahMigrationStatus{Phase: v1alpha1.PhaseObserving, AppliedVersion: 2,
		Plan: &v1alpha1.MigrationPlanSummary{Name: "ledger-1", Fingerprint: "f1", Versions: []int64{3, 4}},
		UnresolvedRun: &v1alpha1.UnresolvedRun{Operation: "sha256:abcdef0123456789", JobName: "ptah-migration-apply-ledger-1", Attempt: 1,
			FromVersion: 2, Versions: []int64{3, 4}, Reason: "Apply Job ended with no result record", Database: "Secret db key url"},
		Conditions: []metav1.Condition{{Type: v1alpha1.ConditionUnresolvedRun, Status: metav1.ConditionTrue, Reason: v1alpha1.ReasonRunOutcomeUnknown,
			Message: "an Apply ended without establishing what it committed", LastTransitionTime: metav1.Now(), ObservedGeneration: 1}}}
	must(c.Status().Update(ctx, m))
	t.Setenv("KUBECONFIG", api.Kubeconfig)

	var out bytes.Buffer
	if err := run([]string{"migration", "ledger", "-n", "team"}, &out); err != nil {
		t.Fatalf("kubectl ptah migration: %v", err)
	}
	for _, want := range []string{
		"Applied version:  2",
		"Current plan: ledger-1 (from version 2",
		"3        entries_note   " + sum,
		"Unresolved run: operation sha256:abcdef0123456789 (attempt 1, Job ptah-migration-apply-ledger-1)",
		"versions 3, 4 after version 2 to Secret db key url",
		"kind: PtahMigrationRunAcknowledgment",
		"operation: sha256:abcdef0123456789",
		"UnresolvedRun  True    RunOutcomeUnknown",
	} {
		if !strings.Contains(out.String(), want) {
			t.Errorf("kubectl ptah migration printed:\n%s\nwant it to contain %q", out.String(), want)
		}
	}

	// A status naming a plan under a fingerprint the plan does not have.
	m.Status.Plan.Fingerprint = "f2"
	must(c.Status().Update(ctx, m))
	out.Reset()
	if err := run([]string{"migration", "ledger", "-n", "team"}, &out); err == nil || !strings.Contains(err.Error(), "refusing to print it") {
		t.Errorf("a plan that is not the one status names: error %v, printed:\n%s", err, out.String())
	}
	for _, tc := range []struct {
		args []string
		want string
	}{
		{[]string{"migration", "-n", "team"}, "one PtahMigration name, got 0"},
		{[]string{"migration", "ledger"}, "ptahmigration ledger in namespace default"},
	} {
		if err := run(tc.args, &out); err == nil || !strings.Contains(err.Error(), tc.want) {
			t.Errorf("kubectl ptah %s: error %v, want %q", strings.Join(tc.args, " "), err, tc.want)
		}
	}
}
