package main

import (
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

	out, errOut, code := ptah("migration", "ledger", "-n", "team")
	if code != 0 {
		t.Fatalf("kubectl ptah migration: exit %d: %s", code, errOut)
	}
	for _, want := range []string{
		"Applied version:   2",
		"Current plan: ledger-1 (from version 2",
		"3        entries_note   " + sum,
		"Unresolved run: operation sha256:abcdef0123456789 (attempt 1, Job ptah-migration-apply-ledger-1)",
		"versions 3, 4 after version 2 to Secret db key url",
		"\nkubectl ptah migration acknowledge ledger -n team --outcome Partial --last-committed-version 3 --note 'how this was established'\n",
		"kind: PtahMigrationRunAcknowledgment",
		"operation: sha256:abcdef0123456789",
		"UnresolvedRun  True    RunOutcomeUnknown",
		"Pending versions:  not known until the unresolved run below is settled",
	} {
		if !strings.Contains(out, want) {
			t.Errorf("kubectl ptah migration printed:\n%s\nwant it to contain %q", out, want)
		}
	}

	// The acknowledgment as printed, from its kubectl line to its EOF line,
	// pasted into a shell, is created and names the run, and the shell
	// reads no further than the printed command.
	printed := out
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

	// acknowledge creates what the printed command would have: the same
	// default name, so the pasted one is found already there.
	for _, tc := range []struct {
		args []string
		want string
	}{
		{[]string{"--outcome", "NotApplied"}, "ptahmigrationrunacknowledgment team/ledger-ack-abcdef012345 already exists"},
		{[]string{"--outcome", "Partial", "--last-committed-version", "9"}, "version 9 is not one the unresolved run of ptahmigration ledger was to apply (3, 4)"},
		{[]string{"-n", "default"}, "read ptahmigration ledger in namespace default"},
	} {
		args := append([]string{"migration", "acknowledge", "ledger", "-n", "team", "--outcome", "Applied"}, tc.args...)
		if _, errOut, code := ptah(args...); code != 1 || !strings.Contains(errOut, tc.want) {
			t.Errorf("kubectl ptah %s: exit %d %s, want exit 1 and %q", strings.Join(args, " "), code, errOut, tc.want)
		}
	}
	out, errOut, code = ptah("migration", "acknowledge", "ledger", "-n", "team", "--outcome", "Partial", "--last-committed-version", "3", "--note", "read the history", "--name", "ledger-ack-2")
	var created v1alpha1.PtahMigrationRunAcknowledgment
	if code != 0 || out != "ptahmigrationrunacknowledgment.operator.ptah.run/ledger-ack-2 created: operation sha256:abcdef0123456789 Partial, acknowledged (not stamped: the acknowledgment admission policies are not installed, so the operator will not consume it)\n" {
		t.Errorf("migration acknowledge: exit %d, printed %q %s", code, out, errOut)
	} else if must(c.Get(ctx, client.ObjectKey{Namespace: "team", Name: "ledger-ack-2"}, &created)); created.Spec.MigrationName != "ledger" || created.Spec.Operation != "sha256:abcdef0123456789" ||
		created.Spec.Outcome != v1alpha1.RunPartial || created.Spec.LastCommittedVersion == nil || *created.Spec.LastCommittedVersion != 3 || created.Spec.Note != "read the history" {
		t.Errorf("migration acknowledge created %+v", created.Spec)
	}
	if out, errOut, code := ptah("migration", "acknowledge", "ledger", "-n", "team", "--outcome", "Applied", "--name", "ledger-ack-3", "-o", "yaml"); code != 0 ||
		!strings.Contains(out, "kind: PtahMigrationRunAcknowledgment\n") || !strings.Contains(out, "outcome: Applied\n") {
		t.Errorf("migration acknowledge -o yaml: exit %d, printed %s%s", code, out, errOut)
	}

	// kubectl's printers on the migration's objects.
	for _, tc := range []struct {
		args []string
		want string
	}{
		{[]string{"migration", "ledger", "-o", "jsonpath={.status.appliedVersion}"}, "2"},
		{[]string{"migration", "status", "ledger", "-o", "name"}, "ptahmigration.operator.ptah.run/ledger\n"},
		{[]string{"migration", "plan", "ledger", "-o", "jsonpath={.kind} {.spec.pending[*].version}"}, "PtahMigrationPlan 3 4"},
	} {
		if out, errOut, code := ptah(append(tc.args, "-n", "team")...); code != 0 || out != tc.want {
			t.Errorf("kubectl ptah %s: exit %d, printed %q %s, want %q", strings.Join(tc.args, " "), code, out, errOut, tc.want)
		}
	}
	for _, tc := range []struct {
		args []string
		want []string
	}{
		{[]string{"__complete", "-n", "team", "migration", ""}, []string{"ledger\n", "approve\t", "acknowledge\t"}},
		{[]string{"__complete", "-n", "team", "migration", "acknowledge", "l"}, []string{"ledger\n"}},
		{[]string{"__complete", "-n", "team", "migration", "acknowledge", "ledger", "--outcome", ""}, []string{"Applied\n", "NotApplied\n", "Partial\n"}},
	} {
		if out, errOut, code := ptah(tc.args...); code != 0 || !containsAll(out, tc.want) {
			t.Errorf("kubectl ptah %s: exit %d, printed %q %s, want %q", strings.Join(tc.args, " "), code, out, errOut, tc.want)
		}
	}

	// Settled: the plan's versions are what is pending.
	m.Status.UnresolvedRun = nil
	must(c.Status().Update(ctx, m))
	if out, errOut, code := ptah("migration", "ledger", "-n", "team"); code != 0 || !strings.Contains(out, "Pending versions:  3, 4 (plan ledger-1)") ||
		strings.Contains(out, "Unresolved run") {
		t.Errorf("kubectl ptah migration, the run settled: exit %d %s\n%s", code, errOut, out)
	}
	if out, errOut, code := ptah("migration", "plan", "ledger", "-n", "team"); code != 0 || !strings.HasPrefix(out, "\nCurrent plan: ledger-1 (from version 2") ||
		!strings.Contains(out, "4        entries_index  "+sum) || strings.Contains(out, "Applied version") {
		t.Errorf("kubectl ptah migration plan: exit %d %s\n%s", code, errOut, out)
	}
	if _, errOut, code := ptah("migration", "acknowledge", "ledger", "-n", "team", "--outcome", "Applied"); code != 1 || !strings.Contains(errOut, "records no unresolved run: nothing to acknowledge") {
		t.Errorf("migration acknowledge, the run settled: exit %d %s", code, errOut)
	}

	// approve: only a plan awaited, only the plan status names.
	if _, errOut, code := ptah("migration", "approve", "ledger", "-n", "team"); code != 1 || !strings.Contains(errOut, "ptahmigration team/ledger awaits no approval (phase Observing)") {
		t.Errorf("migration approve, nothing awaited: exit %d %s", code, errOut)
	}
	m.Status.Phase = v1alpha1.PhaseAwaitingApproval
	must(c.Status().Update(ctx, m))
	out, errOut, code = ptah("migration", "approve", "ledger", "-n", "team")
	var ma v1alpha1.PtahMigrationApproval
	if code != 0 || out != "ptahmigrationapproval.operator.ptah.run/ledger-f1 created: plan ledger-1 approved (not stamped: the approval admission policies are not installed, so the operator will not consume it)\n" {
		t.Errorf("migration approve: exit %d, printed %q %s", code, out, errOut)
	} else if must(c.Get(ctx, client.ObjectKey{Namespace: "team", Name: "ledger-f1"}, &ma)); ma.Spec != (v1alpha1.PtahMigrationApprovalSpec{MigrationName: "ledger", PlanName: "ledger-1", PlanFingerprint: "f1"}) {
		t.Errorf("migration approve created %+v", ma.Spec)
	}
	if _, errOut, code := ptah("migration", "approve", "ledger", "-n", "team"); code != 1 || !strings.Contains(errOut, "ptahmigrationapproval team/ledger-f1 already exists") {
		t.Errorf("migration approve again: exit %d %s", code, errOut)
	}
	if out, errOut, code := ptah("migration", "approve", "ledger", "-n", "team", "--name", "ledger-again", "-o", "name"); code != 0 || out != "ptahmigrationapproval.operator.ptah.run/ledger-again\n" {
		t.Errorf("migration approve -o name: exit %d, printed %q %s", code, out, errOut)
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
	got, errOut, code := ptah("migration", "events", "ledger", "-n", "team")
	if code != 0 {
		t.Fatalf("kubectl ptah migration events: exit %d %s", code, errOut)
	}
	refused, ack, acked := strings.Index(got, "TerminationSummaryRefused"), strings.Index(got, "the acknowledgment's own"), strings.Index(got, "UnresolvedRunAcknowledged")
	if refused < 0 || ack < 0 || acked < 0 || !(refused < ack && ack < acked) || strings.Contains(got, "not ledger's") {
		t.Errorf("kubectl ptah migration events printed:\n%s\nwant ledger's and its acknowledgment's Events, oldest first, and no other's", got)
	}
	if out, errOut, code := ptah("migration", "events", "ledger", "-n", "team", "-o", "name"); code != 0 || out != "event/ev-0\nevent/ev-2\nevent/ev-3\n" {
		t.Errorf("migration events -o name: exit %d, printed %q %s", code, out, errOut)
	}

	// A status naming a plan under a fingerprint the plan does not have.
	m.Status.Plan.Fingerprint = "f2"
	must(c.Status().Update(ctx, m))
	for _, tc := range []struct {
		args []string
		code int
		want string
	}{
		{[]string{"migration", "ledger", "-n", "team"}, 1, "refusing to print it"},
		{[]string{"migration", "plan", "ledger", "-n", "team", "-o", "json"}, 1, "refusing to print it"},
		{[]string{"migration", "approve", "ledger", "-n", "team", "--name", "ledger-stale"}, 1, "ptahmigrationplan ledger-1 does not match what ptahmigration ledger records"},
		{[]string{"migration", "-n", "team"}, 2, "one PtahMigration name, got 0"},
		{[]string{"migration", "ledger"}, 1, "ptahmigration ledger in namespace default"},
	} {
		if out, errOut, code := ptah(tc.args...); code != tc.code || !strings.Contains(errOut, tc.want) {
			t.Errorf("kubectl ptah %s: exit %d, printed %q %s, want exit %d and %q", strings.Join(tc.args, " "), code, out, errOut, tc.code, tc.want)
		}
	}
}

func containsAll(s string, subs []string) bool {
	for _, sub := range subs {
		if !strings.Contains(s, sub) {
			return false
		}
	}
	return true
}
