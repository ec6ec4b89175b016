package main

import (
	"bytes"
	"context"
	"encoding/json"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/tools/clientcmd"

	"ptah.run/operator/internal/runner"
	v1alpha1 "ptah.run/operator/operator/api/v1alpha1"
)

// ptah runs the plugin's command line as kubectl does and returns what it
// printed and its exit status.
func ptah(args ...string) (stdout, stderr string, code int) {
	var out, errOut bytes.Buffer
	code = run(args, &out, &errOut)
	return out.String(), errOut.String(), code
}

// TestPluginReadsTheKubeconfigsCluster runs the plugin's command line the
// way kubectl does, against a real API server named by KUBECONFIG.
func TestPluginReadsTheKubeconfigsCluster(t *testing.T) {
	api, c, must := cluster(t, "operator.ptah.run_ptahschemas.yaml", "operator.ptah.run_ptahschemaplans.yaml", "operator.ptah.run_ptahschemaapprovals.yaml")
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
		// kubectl's printers, on the objects the views are of.
		{[]string{"plan", "orders", "-n", "team", "-o", "name"}, "ptahschemaplan.operator.ptah.run/orders-1\n"},
		{[]string{"status", "orders", "-n", "team", "-o", "yaml"}, "kind: PtahSchema\n"},
		{[]string{"status", "orders", "-n", "team", "-o", "jsonpath={.status.phase} {.status.plan.name}"}, "AwaitingApproval orders-1"},
		{[]string{"events", "orders", "-n", "team", "-o", "json"}, `"kind": "List"`},
		{[]string{"events", "orders", "-n", "team"}, "No events on ptahschema orders or its approvals."},
	} {
		out, errOut, code := ptah(tc.args...)
		if code != 0 || !strings.Contains(out, tc.want) {
			t.Errorf("kubectl ptah %s: exit %d, printed:\n%s%s\nwant exit 0 and %q", strings.Join(tc.args, " "), code, out, errOut, tc.want)
		}
	}

	// -o json is the plan as stored and verified, typed as kubectl prints it.
	out, errOut, code := ptah("plan", "orders", "-n", "team", "-o", "json")
	var p v1alpha1.PtahSchemaPlan
	if code != 0 {
		t.Errorf("plan -o json: exit %d: %s", code, errOut)
	} else if err := json.Unmarshal([]byte(out), &p); err != nil {
		t.Errorf("plan -o json printed %s: %v", out, err)
	} else if p.Kind != "PtahSchemaPlan" || p.APIVersion != v1alpha1.GroupVersion.String() || p.Spec.Digest != r.Digest || len(p.ManagedFields) != 0 {
		t.Errorf("plan -o json: %s %s digest %s, %d managed fields", p.APIVersion, p.Kind, p.Spec.Digest, len(p.ManagedFields))
	}

	// The namespace defaults to the context's; --context picks another.
	cfg, err := clientcmd.LoadFromFile(api.Kubeconfig)
	must(err)
	team := *cfg.Contexts[cfg.CurrentContext]
	team.Namespace = "team"
	cfg.Contexts["team"] = &team
	cfg.CurrentContext = "team"
	teamConfig := filepath.Join(t.TempDir(), "kubeconfig")
	must(clientcmd.WriteToFile(*cfg, teamConfig))
	if out, errOut, code := ptah("status", "orders", "--kubeconfig", teamConfig); code != 0 || !strings.Contains(out, "PtahSchema:           team/orders") {
		t.Errorf("status in the context's namespace: exit %d\n%s%s", code, out, errOut)
	}
	other := ""
	for name := range cfg.Contexts {
		if name != "team" {
			other = name
		}
	}
	if _, errOut, code := ptah("status", "orders", "--kubeconfig", teamConfig, "--context", other); code != 1 || !strings.Contains(errOut, "ptahschema orders in namespace default") {
		t.Errorf("status --context %s: exit %d, %s; want exit 1 and ptahschema orders not found in namespace default", other, code, errOut)
	}

	// Completion: verbs and the cluster's names, in the namespace the flags name.
	for _, tc := range []struct {
		args     []string
		want     []string
		dontWant string
	}{
		{[]string{"__complete", "-n", "team", "status", ""}, []string{"orders\n", ":4\n"}, ""},
		{[]string{"__complete", "plan", "--namespace=team", "o"}, []string{"orders\n"}, ""},
		{[]string{"__complete", "plan", "x"}, []string{":4\n"}, "orders"},
		{[]string{"__complete", "-n", "team", "status", "orders", ""}, []string{":4\n"}, "orders"},
		{[]string{"__complete", "-n", ""}, []string{"team\n", "default\n"}, ""},
		{[]string{"__complete", "app"}, []string{"approve\t"}, "orders"},
		{[]string{"__complete", "plan", "-o", ""}, []string{"sql\n", "yaml\n", "jsonpath=\n"}, ""},
	} {
		out, errOut, code := ptah(tc.args...)
		for _, want := range tc.want {
			if code != 0 || !strings.Contains(out, want) || tc.dontWant != "" && strings.Contains(out, tc.dontWant) {
				t.Errorf("kubectl ptah %s: exit %d, printed:\n%s%s\nwant %q, not %q", strings.Join(tc.args, " "), code, out, errOut, want, tc.dontWant)
			}
		}
	}

	// Runtime errors (exit 1): the cluster refuses, or the objects are not there.
	for _, tc := range []struct {
		args []string
		want string
	}{
		{[]string{"plan", "orders"}, `ptahschema orders in namespace default`},
		{[]string{"plan", "orders", "-n", "team", "--applied"}, "has no applied plan yet"},
		{[]string{"status", "orders", "-n", "team", "--as", "alice"}, `User "alice" cannot`},
		{[]string{"status", "orders", "-n", "team", "--request-timeout", "1ns"}, "deadline exceeded"},
		// This server serves no PtahMigration.
		{[]string{"migration", "ledger", "-n", "team"}, "the cluster does not serve operator.ptah.run/v1alpha1; install the operator's CRDs"},
	} {
		out, errOut, code := ptah(tc.args...)
		if code != 1 || !strings.Contains(errOut, tc.want) || out != "" {
			t.Errorf("kubectl ptah %s: exit %d, printed %q and %q; want exit 1 and %q", strings.Join(tc.args, " "), code, out, errOut, tc.want)
		}
	}
}

// TestCommandLine: help exits 0, a command line the plugin cannot run
// exits 2 before any cluster is read, naming what is wrong.
func TestCommandLine(t *testing.T) {
	// No cluster: a usage error must not need one.
	t.Setenv("KUBECONFIG", filepath.Join(t.TempDir(), "none"))
	for _, args := range [][]string{{"--help"}, {"-h"}, {"plan", "--help"}, {"migration", "acknowledge", "-h"}, {"help", "revoke"}, {"-n", "team", "status", "-h"}} {
		if out, errOut, code := ptah(args...); code != 0 || !strings.Contains(out, "Usage:") || errOut != "" {
			t.Errorf("kubectl ptah %s: exit %d, printed %q and %q; want exit 0 and the usage", strings.Join(args, " "), code, out, errOut)
		}
	}
	for _, tc := range []struct {
		args []string
		want string
	}{
		{nil, "want a verb"},
		{[]string{"apply", "orders"}, `unknown verb "apply"`},
		{[]string{"aprove", "orders"}, "did you mean approve?"},
		{[]string{"-n", "status", "orders"}, `unknown verb "orders"`},
		{[]string{"plan", "-n", "team"}, "plan takes one PtahSchema name, got 0 arguments"},
		{[]string{"status", "a", "b"}, "status takes one PtahSchema name, got 2 arguments"},
		{[]string{"status", "orders", "--applied"}, "unknown flag: --applied"},
		{[]string{"plan", "orders", "-o", "xml"}, `output format "xml": use text, sql, json, yaml, name`},
		{[]string{"status", "orders", "-o", "sql"}, `output format "sql": use text, json`},
		{[]string{"status", "orders", "-o", "jsonpath={.status"}, "output format"},
		{[]string{"migration"}, "migration takes one PtahMigration name, got 0 arguments"},
		{[]string{"migration", "stauts", "ledger"}, `unknown migration verb "stauts" (did you mean status?)`},
		{[]string{"migration", "approve"}, "approve takes one PtahMigration name, got 0"},
		{[]string{"migration", "acknowledge", "ledger"}, `--outcome "": say what the run did`},
		{[]string{"migration", "acknowledge", "ledger", "--outcome", "Partial"}, "--outcome Partial needs --last-committed-version"},
		{[]string{"migration", "acknowledge", "ledger", "--outcome", "NotApplied", "--last-committed-version", "3"}, "leave --last-committed-version out"},
		{[]string{"migration", "acknowledge", "ledger", "--outcome", "Applied", "--last-committed-version", "x"}, "invalid argument"},
		{[]string{"version", "extra"}, `unknown command "extra"`},
	} {
		out, errOut, code := ptah(tc.args...)
		if code != 2 || !strings.Contains(errOut, tc.want) || !strings.Contains(errOut, "--help'.") || out != "" {
			t.Errorf("kubectl ptah %s: exit %d, printed %q and %q; want exit 2 and %q", strings.Join(tc.args, " "), code, out, errOut, tc.want)
		}
	}
	// Understood, but there is no cluster to read: exit 1, naming the fix.
	if _, errOut, code := ptah("status", "orders"); code != 1 || !strings.Contains(errOut, "set KUBECONFIG or pass --kubeconfig") {
		t.Errorf("status without a kubeconfig: exit %d, %q", code, errOut)
	}

	if out, _, code := ptah("version"); code != 0 || out != "kubectl-ptah "+buildVersion()+"\n" || buildVersion() == "" {
		t.Errorf("version: exit %d, printed %q", code, out)
	}
	version = "v1.2.3"
	t.Cleanup(func() { version = "" })
	if out, _, code := ptah("version"); code != 0 || out != "kubectl-ptah v1.2.3\n" {
		t.Errorf("version set by -ldflags: exit %d, printed %q", code, out)
	}
	if out, _, code := ptah("completion", "bash"); code != 0 || !strings.Contains(out, "__start_kubectl-ptah") {
		t.Errorf("completion bash: exit %d, printed %.200q", code, out)
	}
}

// TestKubectlCompletionScript: kubectl completes `kubectl ptah` by running
// kubectl_complete-ptah from PATH with the words typed; it must be
// executable and hand them, unchanged, to kubectl-ptah __complete.
func TestKubectlCompletionScript(t *testing.T) {
	script, err := filepath.Abs("kubectl_complete-ptah")
	if err != nil {
		t.Fatal(err)
	}
	if fi, err := os.Stat(script); err != nil || fi.Mode()&0o111 == 0 {
		t.Fatalf("kubectl_complete-ptah: %v, mode %v; want an executable", err, fi.Mode())
	}
	bin := t.TempDir()
	fake := "#!/bin/sh\nfor a in \"$@\"; do printf '[%s]' \"$a\"; done\n"
	if err := os.WriteFile(filepath.Join(bin, "kubectl-ptah"), []byte(fake), 0o755); err != nil {
		t.Fatal(err)
	}
	cmd := exec.Command(script, "-n", "team", "status", "")
	cmd.Env = append(os.Environ(), "PATH="+bin+":"+os.Getenv("PATH"))
	out, err := cmd.CombinedOutput()
	if want := "[__complete][-n][team][status][]"; err != nil || string(out) != want {
		t.Errorf("kubectl_complete-ptah -n team status '': %v, ran %q, want %q", err, out, want)
	}
}
