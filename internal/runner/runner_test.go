package runner

import (
	"context"
	"encoding/json"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	v1alpha1 "ptah.run/operator/operator/api/v1alpha1"
)

func TestCommandsPassTheOperationsFlags(t *testing.T) {
	op := &Operation{OCIRef: "oci://r/s:v1", PlainHTTP: true, ProtectedTables: []string{"audit", "public.users"},
		Exclude: []string{"tmp_*"}, AllowDestructive: true, LockTimeout: "30s", ConnectTimeout: "5s"}
	for _, tc := range []struct {
		typ  string
		want []string
	}{
		{OpResolve, []string{"oci resolve oci://r/s:v1 --plain-http --json"}},
		{OpVerify, []string{"oci verify oci://r/s:v1 --policy policy.json --plain-http --json"}},
		{"resolve, verifying", []string{"oci verify oci://r/s:v1 --policy policy.json --plain-http --json"}},
		{OpObserve, []string{"schema pull oci://r/s:v1 --out desired.sql --plain-http --json",
			"schema drift --schema-file desired.sql --connect-timeout 5s --exclude tmp_* --json"}},
		{OpPlan, []string{"schema pull oci://r/s:v1 --out desired.sql --plain-http --json",
			"schema plan --schema-file desired.sql --output plan.json --connect-timeout 5s --exclude tmp_* --protected-table audit --protected-table public.users --json"}},
		{OpApply, []string{"schema apply --plan plan.json --auto-approve --allow-destructive --lock-timeout 30s --connect-timeout 5s --json"}},
	} {
		op.Type, op.Verify = tc.typ, false
		if tc.typ == "resolve, verifying" {
			op.Type, op.Verify = OpResolve, true
		}
		var got []string
		for _, args := range commands(op) {
			got = append(got, strings.Join(args, " "))
		}
		if !slices.Equal(got, tc.want) {
			t.Errorf("%s:\n got %q\nwant %q", tc.typ, got, tc.want)
		}
	}
	op.Type = OpProof
	if got, want := commands(op), commands(&Operation{Type: OpPlan, OCIRef: op.OCIRef, PlainHTTP: true, ProtectedTables: op.ProtectedTables, Exclude: op.Exclude, ConnectTimeout: "5s"}); !slices.EqualFunc(got, want, slices.Equal) {
		t.Errorf("a proof runs %q, want the plan's %q", got, want)
	}
}

func TestParseOperationRefusesWhatItCannotRun(t *testing.T) {
	for name, tc := range map[string]struct {
		json    string
		wantOp  bool
		wantErr string
	}{
		"empty":        {"", false, "is empty"},
		"not json":     {"{", false, "not an operation"},
		"unknown type": {`{"type":"drop","id":"a","digest":"d","schema":"s","recordName":"r"}`, true, `"drop"`},
		"no digest":    {`{"type":"plan","id":"a","schema":"s","ociRef":"oci://r/s:v1"}`, true, "no id, digest or schema"},
		"no ociRef":    {`{"type":"plan","id":"a","digest":"d","schema":"s"}`, true, "needs an ociRef"},
		"apply":        {`{"type":"apply","id":"a","digest":"d","schema":"s"}`, true, ""},
	} {
		op, err := parseOperation(tc.json)
		if (op != nil) != tc.wantOp {
			t.Errorf("%s: operation %+v, want one: %v", name, op, tc.wantOp)
		}
		if tc.wantErr == "" && err != nil || tc.wantErr != "" && (err == nil || !strings.Contains(err.Error(), tc.wantErr)) {
			t.Errorf("%s: error %v, want %q", name, err, tc.wantErr)
		}
	}
}

func TestRunDeliversNothingOutsideAPod(t *testing.T) {
	op, _ := json.Marshal(Operation{Type: OpPlan, ID: "a", Digest: "d", Schema: "s", Namespace: "n", RecordName: "r", OCIRef: "oci://r/s:v1"})
	for name, tc := range map[string]struct {
		environ []string
		want    string
	}{
		"no record to write": {[]string{EnvProtocol + "=" + ProtocolVersion}, "names no record"},
		"no API server":      {[]string{EnvProtocol + "=" + ProtocolVersion, EnvOperation + "=" + string(op)}, ErrCredential + ":"},
	} {
		termination := filepath.Join(t.TempDir(), "termination-log")
		out, err := Run(context.Background(), Config{Environ: tc.environ, Ptah: "/nonexistent/ptah", CredentialTimeout: time.Second, TerminationLog: termination})
		if err == nil || !strings.Contains(err.Error(), tc.want) {
			t.Errorf("%s: error %v, want %q", name, err, tc.want)
		}
		// The Pod's termination message says what failed, for the manager.
		if msg, _ := os.ReadFile(termination); !strings.HasPrefix(string(msg), UndeliveredPrefix) || !strings.Contains(string(msg), tc.want) {
			t.Errorf("%s: termination message %q, want %q and %q", name, msg, UndeliveredPrefix, tc.want)
		}
		if out.ChildExitCode != -1 {
			t.Errorf("%s: ptah ran (exit %d)", name, out.ChildExitCode)
		}
	}
}

func TestPlanDocumentRefusesAnEditedPlan(t *testing.T) {
	r := &v1alpha1.PlanResult{BaseFingerprint: "sha256:a", DesiredFingerprint: "sha256:b",
		Statements: []v1alpha1.Statement{{SQL: `CREATE TABLE "t" ("id" bigint)`, Severity: v1alpha1.SeveritySafe, Reason: "create table t"}}}
	if _, err := PlanDocument(r, nil); err == nil {
		t.Fatal("a plan without its digest was accepted")
	}
	var err error
	if r.Digest, err = planOf(r, nil).ComputeDigest(); err != nil {
		t.Fatal(err)
	}
	doc, err := PlanDocument(r, nil)
	if err != nil {
		t.Fatalf("the plan with its own digest: %v", err)
	}
	if !strings.Contains(string(doc), `"digest": "`+r.Digest+`"`) {
		t.Errorf("document lacks its digest:\n%s", doc)
	}
	r.Statements[0].SQL = `DROP TABLE "t"`
	if _, err := PlanDocument(r, nil); err == nil || !strings.Contains(err.Error(), "changed after planning") {
		t.Errorf("an edited statement: %v, want refused", err)
	}
}
