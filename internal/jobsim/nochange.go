package jobsim

import (
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"ptah.run/operator/operator/report"
	"ptah.run/operator/operator/schema"
)

// NoChangePtah writes a stand-in for ptah and returns its path, for
// benchmarks only: running the real ptah hundreds of times measures ptah,
// not the manager. It never reads a database or a registry; each command
// prints the --json report the real ptah prints for an artifact that
// resolves to digest and a database already in the desired state: resolve
// gives digest, pull writes an empty schema file, drift finds none, and
// plan writes a plan with no statements. The runner around it is the real
// one: it waits for its credential and delivers its record through the API.
func NoChangePtah(t testing.TB, digest string) string {
	t.Helper()
	fp := "sha256:" + strings.Repeat("0", 64)
	plan := &schema.Plan{APIVersion: schema.PlanAPIVersion, Schema: schema.Managed, Exclude: []string{},
		BaseFingerprint: fp, DesiredFingerprint: fp, Statements: []schema.Statement{}}
	var err error
	if plan.Digest, err = plan.ComputeDigest(); err != nil {
		t.Fatalf("jobsim: %v", err)
	}
	planJSON, err := json.Marshal(plan)
	if err != nil {
		t.Fatalf("jobsim: %v", err)
	}
	doc := func(command string, result any) string {
		b, err := json.Marshal(report.New(command, result, false, nil))
		if err != nil {
			t.Fatalf("jobsim: %v", err)
		}
		return shellQuote(string(b))
	}
	script := fmt.Sprintf(`#!/bin/sh
# A stand-in for ptah (jobsim.NoChangePtah): no database, no registry.
cmd="$1 $2"; out=""
while [ $# -gt 0 ]; do
  case "$1" in --out|--output) out="$2"; shift ;; esac
  shift
done
case "$cmd" in
"oci resolve") echo %s ;;
"schema pull") : > "$out"; echo %s ;;
"schema drift") echo %s ;;
"schema plan") printf '%%s\n' %s > "$out"; echo %s ;;
*) echo "jobsim no-change ptah: $cmd is not simulated" >&2; exit 2 ;;
esac
`, doc("oci resolve", map[string]string{"digest": digest}),
		doc("schema pull", map[string]any{}),
		doc("schema drift", schema.Drift{Categories: map[string]int{}, BaseFingerprint: fp, DesiredFingerprint: fp}),
		shellQuote(string(planJSON)),
		doc("schema plan", map[string]any{"statements": 0}))
	path := filepath.Join(t.TempDir(), "ptah")
	if err := os.WriteFile(path, []byte(script), 0o755); err != nil {
		t.Fatalf("jobsim: %v", err)
	}
	return path
}

func shellQuote(s string) string { return "'" + strings.ReplaceAll(s, "'", `'\''`) + "'" }
