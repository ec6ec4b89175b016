package main

import (
	"bytes"
	"context"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"

	v1alpha1 "ptah.run/operator/operator/api/v1alpha1"
)

// TestPluginShowsMigrations reads a PtahMigration, its plan and its
// unresolved run from a real API server, as the manager would have written
// them, and refuses a plan that is not the one its status names.
func TestPluginShowsMigrations(t *testing.T) {
	api, c, must := cluster(t, "operator.ptah.run_ptahmigrations.yaml", "operator.ptah.run_ptahmigrationplans.yaml",
		"operator.ptah.run_ptahmigrationapprovals.yaml", "operator.ptah.run_ptahmigrationrunacknowledgments.yaml")
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
	m.Status = v1alpha1.PtahMigrationStatus{AppliedVersion: 2,
		Plan: &v1alpha1.MigrationPlanSummary{Name: "ledger-1", Fingerprint: "f1", Versions: []int64{3, 4}},
		UnresolvedRun: &v1alpha1.UnresolvedRun{Operation: "sha256:abcdef0123456789", JobName: "ptah-migration-apply-ledger-1", Attempt: 1,
			FromVersion: 2, Versions: []int64{3, 4}, Reason: "Apply Job ended with no result record", Database: "Secret db key url"},
		OperationStatus: v1alpha1.OperationStatus{Phase: v1alpha1.PhaseObserving,
			Conditions: []metav1.Condition{{Type: v1alpha1.ConditionUnresolvedRun, Status: metav1.ConditionTrue, Reason: v1alpha1.ReasonRunOutcomeUnknown,
				Message: "an Apply ended without establishing what it committed", LastTransitionTime: metav1.Now(), ObservedGeneration: 1}}}}
	must(c.Status().Update(ctx, m))
	t.Setenv("KUBECONFIG", api.Kubeconfig)

	var out bytes.Buffer
	if err := run([]string{"migration", "ledger", "-n", "team"}, &out); err != nil {
		t.Fatalf("kubectl ptah migration: %v", err)
	}
	for _, want := range []string{
		"Applied version:   2",
		"Current plan: ledger-1 (from version 2",
		"3        entries_note   " + sum,
		"Unresolved run: operation sha256:abcdef0123456789 (attempt 1, Job ptah-migration-apply-ledger-1)",
		"versions 3, 4 after version 2 to Secret db key url",
		"kind: PtahMigrationRunAcknowledgment",
		"operation: sha256:abcdef0123456789",
		"UnresolvedRun  True    RunOutcomeUnknown",
		"Pending versions:  not known until the unresolved run below is settled",
	} {
		if !strings.Contains(out.String(), want) {
			t.Errorf("kubectl ptah migration printed:\n%s\nwant it to contain %q", out.String(), want)
		}
	}

	// The acknowledgment as printed, from its kubectl line to its EOF line,
	// pasted into a shell, is created and names the run, and the shell
	// reads no further than the printed command.
	printed := out.String()
	start := strings.Index(printed, "kubectl apply")
	if start < 0 {
		t.Fatalf("no kubectl apply command printed:\n%s", printed)
	}
	script := printed[strings.LastIndex(printed[:start], "\n")+1:]
	for i, line := range strings.SplitAfter(script, "\n") {
		if strings.TrimSpace(line) == "EOF" {
			script = strings.Join(strings.SplitAfter(script, "\n")[:i+1], "")
			break
		}
	}
	kubectl, err := exec.LookPath("kubectl")
	if err != nil {
		t.Fatal("kubectl is not on PATH; the printed command needs it")
	}
	sh := exec.Command("bash", "-c", script+"echo pasted-on")
	sh.Env = append(os.Environ(), "KUBECONFIG="+api.Kubeconfig, "PATH="+filepath.Dir(kubectl)+":"+os.Getenv("PATH"))
	shOut, err := sh.CombinedOutput()
	if err != nil || strings.Contains(string(shOut), "warning") || !strings.Contains(string(shOut), "pasted-on") {
		t.Errorf("the printed acknowledgment, pasted into bash: %v\n%s\nprinted:\n%s", err, shOut, script)
	}
	var pasted v1alpha1.PtahMigrationRunAcknowledgment
	if err := c.Get(ctx, client.ObjectKey{Namespace: "team", Name: "ledger-ack-abcdef012345"}, &pasted); err != nil {
		t.Errorf("the printed acknowledgment was not created: %v", err)
	} else if pasted.Spec.MigrationName != "ledger" || pasted.Spec.Operation != "sha256:abcdef0123456789" {
		t.Errorf("the printed acknowledgment names %+v", pasted.Spec)
	}

	// Settled: the plan's versions are what is pending.
	m.Status.UnresolvedRun = nil
	must(c.Status().Update(ctx, m))
	out.Reset()
	if err := run([]string{"migration", "ledger", "-n", "team"}, &out); err != nil || !strings.Contains(out.String(), "Pending versions:  3, 4 (plan ledger-1)") ||
		strings.Contains(out.String(), "Unresolved run") {
		t.Errorf("kubectl ptah migration, the run settled: %v\n%s", err, out.String())
	}
	out.Reset()
	if err := run([]string{"migration", "plan", "ledger", "-n", "team"}, &out); err != nil || !strings.HasPrefix(out.String(), "\nCurrent plan: ledger-1 (from version 2") ||
		!strings.Contains(out.String(), "4        entries_index  "+sum) || strings.Contains(out.String(), "Applied version") {
		t.Errorf("kubectl ptah migration plan: %v\n%s", err, out.String())
	}

	// Events: the migration's and its acknowledgment's, oldest first; not
	// another migration's.
	must(c.Create(ctx, &v1alpha1.PtahMigrationRunAcknowledgment{ObjectMeta: metav1.ObjectMeta{Name: "ledger-ack", Namespace: "team"},
		Spec: v1alpha1.PtahMigrationRunAcknowledgmentSpec{MigrationName: "ledger", Operation: "sha256:abcdef0123456789", Outcome: v1alpha1.RunNotApplied}}))
	base := time.Now().Add(-time.Minute)
	for i, ev := range []struct{ kind, name, typ, reason, msg string }{
		{"PtahMigration", "ledger", corev1.EventTypeWarning, v1alpha1.EventTerminationSummaryRefused, "the summary was cut short"},
		{"PtahMigration", "other", corev1.EventTypeNormal, v1alpha1.EventMigrationRunFinished, "not ledger's"},
		{"PtahMigrationRunAcknowledgment", "ledger-ack", corev1.EventTypeNormal, "Seen", "the acknowledgment's own"},
		{"PtahMigration", "ledger", corev1.EventTypeNormal, v1alpha1.EventUnresolvedRunAcknowledged, "bob acknowledged it"},
	} {
		must(c.Create(ctx, &corev1.Event{ObjectMeta: metav1.ObjectMeta{Name: fmt.Sprintf("ev-%d", i), Namespace: "team"},
			InvolvedObject: corev1.ObjectReference{Kind: ev.kind, Name: ev.name, Namespace: "team", APIVersion: v1alpha1.GroupVersion.String()},
			Type:           ev.typ, Reason: ev.reason, Message: ev.msg, LastTimestamp: metav1.NewTime(base.Add(time.Duration(i) * time.Second))}))
	}
	out.Reset()
	if err := run([]string{"migration", "events", "ledger", "-n", "team"}, &out); err != nil {
		t.Fatalf("kubectl ptah migration events: %v", err)
	}
	got := out.String()
	refused, ack, acked := strings.Index(got, "TerminationSummaryRefused"), strings.Index(got, "the acknowledgment's own"), strings.Index(got, "UnresolvedRunAcknowledged")
	if refused < 0 || ack < 0 || acked < 0 || !(refused < ack && ack < acked) || strings.Contains(got, "not ledger's") {
		t.Errorf("kubectl ptah migration events printed:\n%s\nwant ledger's and its acknowledgment's Events, oldest first, and no other's", got)
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
