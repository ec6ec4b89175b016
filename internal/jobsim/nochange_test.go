package jobsim_test

import (
	"encoding/json"
	"os"
	"os/exec"
	"path/filepath"
	"testing"

	"ptah.run/operator/internal/jobsim"
	"ptah.run/operator/operator/report"
	"ptah.run/operator/operator/schema"
)

// The stand-in answers the runner's command lines with documents ptah's own
// types read: a digest, no drift, and a valid plan with no statements.
func TestNoChangePtahSpeaksPtahsReports(t *testing.T) {
	digest := "sha256:" + "12345678901234567890123456789012345678901234567890123456789abcde"
	bin := jobsim.NoChangePtah(t, digest)
	dir := t.TempDir()
	run := func(args ...string) map[string]any {
		t.Helper()
		cmd := exec.Command(bin, args...)
		cmd.Dir = dir
		out, err := cmd.Output()
		if err != nil {
			t.Fatalf("%v: %v", args, err)
		}
		var d struct {
			APIVersion string         `json:"apiVersion"`
			ExitCode   int            `json:"exitCode"`
			Result     map[string]any `json:"result"`
		}
		if err := json.Unmarshal(out, &d); err != nil || d.APIVersion != report.APIVersion || d.ExitCode != 0 {
			t.Fatalf("%v printed %s (%v), want a ptah report exiting 0", args, out, err)
		}
		return d.Result
	}
	if got := run("oci", "resolve", "oci://r/x:v1", "--plain-http", "--json")["digest"]; got != digest {
		t.Errorf("resolve gives digest %v, want %s", got, digest)
	}
	run("schema", "pull", "oci://r/x@"+digest, "--out", "desired.sql", "--plain-http", "--json")
	if _, err := os.Stat(filepath.Join(dir, "desired.sql")); err != nil {
		t.Errorf("pull wrote no schema file: %v", err)
	}
	if got := run("schema", "drift", "--schema-file", "desired.sql", "--json")["drift"]; got != false {
		t.Errorf("drift = %v, want false", got)
	}
	run("schema", "plan", "--schema-file", "desired.sql", "--output", "plan.json", "--json")
	b, err := os.ReadFile(filepath.Join(dir, "plan.json"))
	if err != nil {
		t.Fatal(err)
	}
	p, err := schema.ReadPlan("plan.json", b)
	if err != nil {
		t.Fatalf("the plan does not read as ptah's: %v", err)
	}
	if len(p.Statements) != 0 {
		t.Errorf("the plan has %d statements, want none", len(p.Statements))
	}
	if err := exec.Command(bin, "schema", "apply", "--plan", "plan.json").Run(); err == nil {
		t.Error("apply exited 0: the stand-in must refuse what it does not simulate")
	}
}
