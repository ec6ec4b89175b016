package runner

import (
	"context"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"ptah.run/operator/internal/testenv"
	v1alpha1 "ptah.run/operator/operator/api/v1alpha1"
	"ptah.run/operator/operator/report"
)

func TestMigrationCommands(t *testing.T) {
	op := &Operation{OCIRef: "oci://r/m@sha256:" + strings.Repeat("a", 64), PlainHTTP: true, LockTimeout: "30s", ConnectTimeout: "5s",
		ExpectSequence: []int64{3, 4}}
	pull := "migrations pull " + op.OCIRef + " --dir migrations --plain-http --json"
	for _, tc := range []struct {
		typ         string
		lockTimeout string
		target      int64
		want        []string
	}{
		{OpMigrationObserve, "", 0, []string{pull, "migrations status --dir migrations --connect-timeout 5s --json"}},
		// The reading that may settle an unresolved run waits for the writer lock.
		{OpMigrationObserve, "30s", 0, []string{pull, "migrations status --dir migrations --lock-timeout 30s --connect-timeout 5s --json"}},
		{OpMigrationApply, "30s", 0, []string{pull, "migrations up --dir migrations --expect-sequence 3,4 --lock-timeout 30s --connect-timeout 5s --json"}},
		{OpMigrationApply, "30s", 4, []string{pull, "migrations up --dir migrations --expect-sequence 3,4 --lock-timeout 30s --to 4 --connect-timeout 5s --json"}},
	} {
		op.Type, op.LockTimeout, op.TargetVersion = tc.typ, tc.lockTimeout, tc.target
		var got []string
		for _, args := range commands(op) {
			got = append(got, strings.Join(args, " "))
		}
		if !slices.Equal(got, tc.want) {
			t.Errorf("%s:\n got %q\nwant %q", tc.typ, got, tc.want)
		}
	}
	if _, err := parseOperation(`{"type":"migration-apply","id":"a","digest":"d","schema":"s","kind":"PtahMigration","ociRef":"oci://r/m:v1"}`); err == nil ||
		!strings.Contains(err.Error(), "names no versions") {
		t.Errorf("a migration Apply without versions: %v, want refused", err)
	}
	if _, err := parseOperation(`{"type":"migration-observe","id":"a","digest":"d","schema":"s","kind":"Secret","ociRef":"oci://r/m:v1"}`); err == nil ||
		!strings.Contains(err.Error(), `"Secret"`) {
		t.Errorf("an unknown subject kind: %v, want refused", err)
	}
}

// TestMigrationOperations runs the migration operations as a Job's runner
// would, with the real ptah, a real registry and a real PostgreSQL: the
// reading pins pending checksums, an Apply applies exactly its versions, a
// run that fails part-way says what it committed, and an applied file
// edited afterwards is refused before anything runs.
func TestMigrationOperations(t *testing.T) {
	pg := testenv.StartPostgres(t)
	reg := testenv.StartRegistry(t)
	ptah := filepath.Join(t.TempDir(), "ptah")
	build := exec.Command("go", "build", "-o", ptah, "./cmd/ptah")
	build.Dir = filepath.Join("..", "..")
	if out, err := build.CombinedOutput(); err != nil {
		t.Fatalf("go build ./cmd/ptah: %v\n%s", err, out)
	}
	dbURL := pg.CreateDatabase(t, "shop")
	environ := []string{"PATH=" + os.Getenv("PATH"), "PTAH_DB_URL=" + dbURL,
		"PTAH_OCI_REGISTRY=" + reg.Host, "PTAH_OCI_USERNAME=" + reg.Username, "PTAH_OCI_PASSWORD=" + reg.Password}
	var log strings.Builder
	cfg := Config{Environ: environ, Ptah: ptah, WorkDir: t.TempDir(), Log: &log}

	files := map[string]string{
		"0001_accounts.up.sql": "CREATE TABLE accounts (id bigserial PRIMARY KEY);\n",
		"0002_entries.up.sql":  "CREATE TABLE entries (id bigserial PRIMARY KEY, account_id bigint REFERENCES accounts(id));\n",
	}
	push := func(tag string, files map[string]string) string {
		t.Helper()
		dir := t.TempDir()
		for n, s := range files {
			if err := os.WriteFile(filepath.Join(dir, n), []byte(s), 0o644); err != nil {
				t.Fatal(err)
			}
		}
		ref := "oci://" + reg.Host + "/shop/migrations:" + tag
		for _, args := range [][]string{{"migrations", "hash", "--dir", dir}, {"migrations", "push", ref, "--dir", dir, "--plain-http"}} {
			cmd := exec.Command(ptah, args...)
			cmd.Env = environ
			if out, err := cmd.CombinedOutput(); err != nil {
				t.Fatalf("ptah %v: %v\n%s", args, err, out)
			}
		}
		return ref
	}
	run := func(op Operation) *Outcome {
		t.Helper()
		op.ID, op.Digest, op.Schema, op.Kind, op.PlainHTTP = "op", "d", "shop", v1alpha1.KindPtahMigration, true
		out := &Outcome{}
		execute(context.Background(), cfg, nil, nil, &op, out)
		for _, secret := range []string{dbURL, reg.Password} {
			if strings.Contains(log.String(), secret) || strings.Contains(string(out.Report), secret) {
				t.Fatalf("a credential reached the runner's log or report")
			}
		}
		return out
	}
	migrations := func(out *Outcome) *v1alpha1.MigrationResult {
		t.Helper()
		if out.Fields == nil || out.Fields.Migrations == nil {
			t.Fatalf("no migration result: error %+v, child %+v, report %s", out.Error, out.ChildError, out.Report)
		}
		return out.Fields.Migrations
	}

	v1 := push("v1", files)
	m := migrations(run(Operation{Type: OpMigrationObserve, OCIRef: v1}))
	if m.Status != v1alpha1.MigrationPending || m.Current != 0 || len(m.Pending) != 2 || m.Pending[0].Version != 1 ||
		!strings.HasPrefix(m.Pending[1].Checksum, "sha256:") {
		t.Fatalf("first reading: %+v", m)
	}
	empty := m.HistoryDigest

	// The plan named only version 1: a different pending set runs nothing.
	out := run(Operation{Type: OpMigrationApply, OCIRef: v1, ExpectSequence: []int64{1}})
	if out.ChildError == nil || out.ChildError.Code != string(report.SequenceMismatch) {
		t.Fatalf("an Apply of a stale plan: %+v %+v", out.Error, out.ChildError)
	}
	if m := migrations(out); len(m.AppliedNow) != 0 || m.Current != 0 {
		t.Fatalf("an Apply refused for its sequence committed %+v", m)
	}

	m = migrations(run(Operation{Type: OpMigrationApply, OCIRef: v1, ExpectSequence: []int64{1, 2}}))
	if m.Status != v1alpha1.MigrationApplied || !slices.Equal(m.AppliedNow, []int64{1, 2}) || m.Current != 2 {
		t.Fatalf("Apply: %+v", m)
	}
	m = migrations(run(Operation{Type: OpMigrationObserve, OCIRef: v1}))
	if m.Status != v1alpha1.MigrationUpToDate || m.Current != 2 || len(m.Pending) != 0 || m.HistoryDigest == empty {
		t.Fatalf("proof reading: %+v (empty history %s)", m, empty)
	}

	// Version 3 commits, version 4 fails: Partial, naming what committed.
	more := map[string]string{"0003_note.up.sql": "ALTER TABLE entries ADD COLUMN note text;\n",
		"0004_broken.up.sql": "ALTER TABLE nowhere ADD COLUMN x int;\n"}
	for n, s := range files {
		more[n] = s
	}
	v2 := push("v2", more)
	out = run(Operation{Type: OpMigrationApply, OCIRef: v2, ExpectSequence: []int64{3, 4}})
	m = migrations(out)
	if out.Error == nil || m.Status != v1alpha1.MigrationPartial || !slices.Equal(m.AppliedNow, []int64{3}) ||
		m.FailedVersion == nil || *m.FailedVersion != 4 || m.Current != 3 {
		t.Fatalf("a run failing at 4: error %+v, %+v", out.Error, m)
	}

	// Version 1 edited after it was applied: refused, nothing runs.
	edited := map[string]string{"0001_accounts.up.sql": "CREATE TABLE accounts (id bigserial PRIMARY KEY, owner text);\n"}
	for n, s := range more {
		if _, ok := edited[n]; !ok && n != "0004_broken.up.sql" {
			edited[n] = s
		}
	}
	v3 := push("v3", edited)
	for _, typ := range []string{OpMigrationObserve, OpMigrationApply} {
		out = run(Operation{Type: typ, OCIRef: v3, ExpectSequence: []int64{4}})
		if out.ChildError == nil || out.ChildError.Code != string(report.HistoryModified) || !strings.Contains(out.ChildError.Message, "migration 1") {
			t.Fatalf("%s of an edited applied migration: %+v %+v", typ, out.Error, out.ChildError)
		}
	}
	// The refused runs changed nothing: the unedited artifact reads the same history.
	fixed := map[string]string{"0004_broken.up.sql": "ALTER TABLE accounts ADD COLUMN x int;\n"}
	for n, s := range more {
		if _, ok := fixed[n]; !ok {
			fixed[n] = s
		}
	}
	m = migrations(run(Operation{Type: OpMigrationObserve, OCIRef: push("v4", fixed)}))
	if m.Current != 3 || len(m.Pending) != 1 || m.Pending[0].Version != 4 {
		t.Fatalf("after the refusals: %+v", m)
	}
}
