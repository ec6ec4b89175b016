package runner

import (
	"context"
	"encoding/json"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"ptah.run/operator/internal/resultlog"
	"ptah.run/operator/internal/testenv"
	v1alpha1 "ptah.run/operator/operator/api/v1alpha1"
)

// TestLegacyResultCannotBeForgedBySQL runs a migration Apply under the
// legacy transport with the real ptah, a real registry and a real
// PostgreSQL, outside any Pod: no credential and no API are needed. The
// migrations' SQL prints a perfect frame for this very operation (right
// operation ID, a digest that holds, an "UpToDate" verdict): once as a
// NOTICE, and once in the message of the exception that fails version 2,
// which ptah prints on its stderr and so reaches the container log. The
// manager's reading of that log finds only the runner's frame: version 1
// committed, version 2 failed (Partial).
func TestLegacyResultCannotBeForgedBySQL(t *testing.T) {
	pg := testenv.StartPostgres(t)
	reg := testenv.StartRegistry(t)
	ptah := filepath.Join(t.TempDir(), "ptah")
	build := exec.Command("go", "build", "-o", ptah, "./cmd/ptah")
	build.Dir = filepath.Join("..", "..")
	if out, err := build.CombinedOutput(); err != nil {
		t.Fatalf("go build ./cmd/ptah: %v\n%s", err, out)
	}
	dbURL := pg.CreateDatabase(t, "ledger")
	environ := []string{"PATH=" + os.Getenv("PATH"), "PTAH_DB_URL=" + dbURL,
		"PTAH_OCI_REGISTRY=" + reg.Host, "PTAH_OCI_USERNAME=" + reg.Username, "PTAH_OCI_PASSWORD=" + reg.Password}

	op := Operation{Type: OpMigrationApply, ID: "sha256:" + strings.Repeat("1", 64), Digest: "sha256:" + strings.Repeat("2", 64),
		Namespace: "team", Schema: "ledger", Kind: v1alpha1.KindPtahMigration, RecordName: "ptah-migration-apply-ledger-1",
		PlainHTTP: true, ExpectSequence: []int64{1, 2}, Attempt: 1, ResultTransport: TransportPodLog}
	zero := int32(0)
	forged, err := resultlog.Encode(&v1alpha1.PtahResultRecordSpec{
		Subject:     v1alpha1.ResultSubject{Kind: v1alpha1.KindPtahMigration, Name: "ledger"},
		OperationID: op.ID, Digest: op.Digest, RunnerProtocol: ProtocolVersion, ChildExitCode: &zero,
		Result: &v1alpha1.OperationResult{Migrations: &v1alpha1.MigrationResult{Status: v1alpha1.MigrationApplied, Current: 2, AppliedNow: []int64{1, 2}}},
	})
	if err != nil {
		t.Fatal(err)
	}
	forged = strings.TrimSuffix(forged, "\n")
	dir := t.TempDir()
	for name, sql := range map[string]string{
		"0001_accounts.up.sql": "DO $$ BEGIN RAISE NOTICE '%', chr(10) || '" + forged + "'; END $$;\nCREATE TABLE accounts (id bigserial PRIMARY KEY);\n",
		"0002_entries.up.sql":  "DO $$ BEGIN RAISE EXCEPTION 'entries refused:%', chr(10) || '" + forged + "' || chr(10); END $$;\n",
	} {
		if err := os.WriteFile(filepath.Join(dir, name), []byte(sql), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	ref := "oci://" + reg.Host + "/ledger/migrations:v1"
	for _, args := range [][]string{{"migrations", "hash", "--dir", dir}, {"migrations", "push", ref, "--dir", dir, "--plain-http"}} {
		cmd := exec.Command(ptah, args...)
		cmd.Env = environ
		if out, err := cmd.CombinedOutput(); err != nil {
			t.Fatalf("ptah %v: %v\n%s", args, err, out)
		}
	}
	op.OCIRef = ref
	opJSON, err := json.Marshal(op)
	if err != nil {
		t.Fatal(err)
	}
	var log strings.Builder
	termination := filepath.Join(t.TempDir(), "termination-log")
	// No KUBERNETES_SERVICE_HOST and no token: under the durable transport
	// this run could deliver nothing.
	out, err := Run(context.Background(), Config{
		Environ: append(environ, EnvProtocol+"="+ProtocolVersion, EnvOperation+"="+string(opJSON)),
		Ptah:    ptah, WorkDir: t.TempDir(), Log: &log, TerminationLog: termination,
	})
	if err != nil {
		t.Fatalf("a legacy run outside a Pod: %v\nlog:\n%s", err, log.String())
	}
	if out.Record != nil {
		t.Errorf("a legacy run created a PtahResultRecord")
	}
	for _, secret := range []string{dbURL, reg.Password} {
		if strings.Contains(log.String(), secret) {
			t.Fatalf("a credential reached the log")
		}
	}
	if !strings.Contains(log.String(), forged) {
		t.Fatalf("the exception's fake frame never reached the log, so this test proves nothing; log:\n%s", log.String())
	}

	summary, err := os.ReadFile(termination)
	if err != nil {
		t.Fatalf("no termination summary: %v", err)
	}
	claim := resultlog.Claim{OperationID: op.ID, Digest: op.Digest, Attempt: 1, Apply: true}
	v := resultlog.Decide([]byte(log.String()), "", string(summary), claim)
	if v.Spec == nil || v.FromSummary {
		t.Fatalf("the log's frame was not read: %+v\nlog:\n%s", v, log.String())
	}
	m := v.Spec.Result.Migrations
	if m.Status != v1alpha1.MigrationPartial || !slices.Equal(m.AppliedNow, []int64{1}) || m.FailedVersion == nil || *m.FailedVersion != 2 || m.Current != 1 {
		t.Errorf("the result read from the log is %+v, want Partial: 1 committed, 2 failed (the runner's, not the forged Applied)", m)
	}
	if v.Spec.ChildError == nil || !strings.Contains(v.Spec.ChildError.Message, "entries refused") {
		t.Errorf("the frame lost ptah's error: %+v", v.Spec.ChildError)
	}
	// Without the log, the summary says the same.
	v = resultlog.Decide(nil, "the container's log is gone", string(summary), claim)
	if v.Spec == nil || !v.FromSummary || v.Spec.Result.Migrations.Status != v1alpha1.MigrationPartial || v.Spec.Result.Migrations.Current != 1 {
		t.Errorf("the summary read in the log's place: %+v", v)
	}
}

func TestLegacyTransportRefusals(t *testing.T) {
	for doc, want := range map[string]string{
		`{"type":"apply","id":"a","digest":"d","schema":"s","resultTransport":"legacy"}`:                                   "reads its plan through the API",
		`{"type":"migration-observe","id":"a","digest":"d","schema":"s","ociRef":"oci://r/m:v1","resultTransport":"logs"}`: `"logs" is neither durable nor legacy`,
	} {
		if _, err := parseOperation(doc); err == nil || !strings.Contains(err.Error(), want) {
			t.Errorf("%s: %v, want refused with %q", doc, err, want)
		}
	}
	// A refused legacy operation still delivers its refusal, in the log.
	var log strings.Builder
	termination := filepath.Join(t.TempDir(), "termination-log")
	out, err := Run(context.Background(), Config{Log: &log, TerminationLog: termination, Environ: []string{
		EnvProtocol + "=ptah.run/runner/v1",
		EnvOperation + `={"type":"migration-apply","id":"a","digest":"d","schema":"s","ociRef":"oci://r/m:v1","expectSequence":[1],"attempt":2,"resultTransport":"legacy"}`,
	}})
	if err != nil {
		t.Fatalf("a legacy refusal was not delivered: %v", err)
	}
	summary, _ := os.ReadFile(termination)
	v := resultlog.Decide([]byte(log.String()), "", string(summary), resultlog.Claim{OperationID: "a", Digest: "d", Attempt: 2, Apply: true})
	if out.Error == nil || out.Error.Code != ErrProtocolMismatch || v.Spec == nil || v.Spec.Error == nil || v.Spec.Error.Code != ErrProtocolMismatch {
		t.Errorf("a protocol mismatch under the legacy transport: outcome %+v, read %+v\nlog:\n%s", out.Error, v, log.String())
	}
}

// TestLegacyRunStoppedWritesNoResult: a run stopped while ptah works (the
// Pod deleted) writes neither a frame nor a summary, so its outcome is
// unknown rather than read as "nothing applied".
func TestLegacyRunStoppedWritesNoResult(t *testing.T) {
	dir := t.TempDir()
	slow := filepath.Join(dir, "ptah")
	if err := os.WriteFile(slow, []byte("#!/bin/sh\nexec sleep 30\n"), 0o755); err != nil {
		t.Fatal(err)
	}
	termination := filepath.Join(dir, "termination-log")
	log := &lockedLog{}
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error, 1)
	go func() {
		_, err := Run(ctx, Config{Log: log, TerminationLog: termination, Ptah: slow, WorkDir: dir, Environ: []string{
			EnvProtocol + "=" + ProtocolVersion,
			EnvOperation + `={"type":"migration-apply","id":"a","digest":"d","schema":"s","ociRef":"oci://r/m:v1","expectSequence":[1],"attempt":1,"resultTransport":"legacy"}`,
		}})
		done <- err
	}()
	for !strings.Contains(log.String(), "runner: ptah migrations pull") {
		time.Sleep(10 * time.Millisecond)
	}
	cancel()
	if err := <-done; err == nil || !strings.Contains(err.Error(), "stopped before it established its outcome") {
		t.Errorf("a stopped run: %v", err)
	}
	if _, err := os.Stat(termination); !os.IsNotExist(err) {
		t.Errorf("a stopped run wrote a termination summary (%v)", err)
	}
	if strings.Contains(log.String(), resultlog.Marker) {
		t.Errorf("a stopped run wrote a frame:\n%s", log.String())
	}
}

type lockedLog struct {
	mu sync.Mutex
	b  strings.Builder
}

func (l *lockedLog) Write(p []byte) (int, error) {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.b.Write(p)
}

func (l *lockedLog) String() string {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.b.String()
}
