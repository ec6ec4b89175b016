package controller

import (
	"context"
	"crypto/sha256"
	"encoding/json"
	"errors"
	"fmt"
	"maps"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"ptah.run/operator/internal/runner"
	v1alpha1 "ptah.run/operator/operator/api/v1alpha1"
	"ptah.run/operator/operator/artifact"
)

// pushMigrations publishes files as a migrations artifact with the real
// ptah and returns its digest-pinned reference.
func pushMigrations(t *testing.T, tag string, files map[string]string) string {
	t.Helper()
	return pushMigrationFiles(t, tag, files, true)
}

// pushUncheckedMigrations pushes files whose checksum file was written by
// hand, without the checks of ptah migrations hash, as an older ptah or a
// person would have.
func pushUncheckedMigrations(t *testing.T, tag string, files map[string]string) string {
	t.Helper()
	return pushMigrationFiles(t, tag, files, false)
}

func pushMigrationFiles(t *testing.T, tag string, files map[string]string, hash bool) string {
	t.Helper()
	dir := t.TempDir()
	for n, s := range files {
		must(t, os.WriteFile(filepath.Join(dir, n), []byte(s), 0o644))
	}
	environ := append(os.Environ(), "PTAH_OCI_REGISTRY="+shared.reg.Host, "PTAH_OCI_USERNAME="+shared.reg.Username, "PTAH_OCI_PASSWORD="+shared.reg.Password)
	ptah := func(args ...string) []byte {
		cmd := exec.Command(shared.ptah, args...)
		cmd.Env = environ
		out, err := cmd.Output()
		if err != nil {
			t.Fatalf("ptah %v: %v\n%s", args, err, out)
		}
		return out
	}
	if hash {
		ptah("migrations", "hash", "--dir", dir)
	} else {
		names := slices.Sorted(maps.Keys(files))
		var sum strings.Builder
		for _, n := range names {
			fmt.Fprintf(&sum, "sha256:%x  %s\n", sha256.Sum256([]byte(files[n])), n)
		}
		must(t, os.WriteFile(filepath.Join(dir, "ptah.sum"), []byte(sum.String()+fmt.Sprintf("total sha256:%x\n", sha256.Sum256([]byte(sum.String())))), 0o644))
	}
	var doc struct {
		Result struct {
			Reference string `json:"reference"`
			Digest    string `json:"digest"`
		} `json:"result"`
	}
	out := ptah("migrations", "push", "oci://"+shared.reg.Host+"/shop/migrations:"+tag, "--dir", dir, "--plain-http", "--json")
	must(t, json.Unmarshal(out, &doc))
	return artifact.Pinned(doc.Result.Reference, doc.Result.Digest)
}

// TestMigrationJobsShareTheMachinery runs a PtahMigration's operations
// through the Job, credential and record code PtahSchema uses, with the
// simulated kubelet running the real runner and ptah against PostgreSQL:
// the Job carries the same hardening, the record is stamped by admission
// and accepted only for the claim, the Pod and the kind it names.
func TestMigrationJobsShareTheMachinery(t *testing.T) {
	t.Parallel()
	e := newEnv(t)
	ctx := context.Background()
	ref := pushMigrations(t, "jobs", map[string]string{
		"0001_customers.up.sql": "CREATE TABLE customers (id bigint PRIMARY KEY);\n",
		"0002_orders.up.sql":    "CREATE TABLE orders (id bigint PRIMARY KEY, customer_id bigint REFERENCES customers (id));\n",
	})
	m := &v1alpha1.PtahMigration{
		ObjectMeta: metav1.ObjectMeta{Name: "shop", Namespace: e.ns},
		Spec: v1alpha1.PtahMigrationSpec{
			Target:     v1alpha1.Target{URLFrom: v1alpha1.SecretKeyRef{Name: "shop-db", Key: "url"}},
			Migrations: v1alpha1.MigrationsSource{OCIRef: ref, RegistryAuthFrom: &v1alpha1.LocalRef{Name: "registry"}},
			// The test plays the manager's part by hand: the running
			// manager, which would revoke credentials no claim of its own
			// names, starts nothing.
			Suspend: true,
		},
	}
	must(t, shared.c.Create(ctx, m))
	binding := e.rec.Binding.of(m)

	// run claims typ for m, issues its credential and Job as the schema
	// reconciler does, and returns the claim once the Job finished.
	run := func(typ v1alpha1.OperationType, attempt int32, op runner.Operation) *v1alpha1.ActiveOperation {
		t.Helper()
		c := subjectClaim(m, m.Spec, "", typ, attempt, binding, time.Now())
		op.ID, op.Digest, op.Namespace, op.Schema, op.SchemaUID = c.ID, c.CoordinationDigest, m.Namespace, m.Name, string(m.UID)
		op.Kind, op.RecordName, op.OCIRef, op.PlainHTTP = v1alpha1.KindPtahMigration, c.JobName, ref, true
		must(t, issueCredential(ctx, shared.c, m, c))
		j := job(m, c, binding, op)
		if ct := j.Spec.Template.Spec; *ct.AutomountServiceAccountToken || ct.ServiceAccountName != credentialName(c) ||
			j.OwnerReferences[0].Kind != v1alpha1.KindPtahMigration || j.Labels[runner.LabelMigration] != m.Name {
			t.Fatalf("the migration Job is not built like a schema's: %+v", j.ObjectMeta)
		}
		for _, ev := range j.Spec.Template.Spec.Containers[0].Env {
			if ev.Name == runner.EnvDatabaseURL && (ev.Value != "" || ev.ValueFrom.SecretKeyRef.Name != "shop-db") {
				t.Fatalf("the database URL reaches the Pod other than by secretKeyRef: %+v", ev)
			}
		}
		must(t, shared.c.Create(ctx, j))
		c.JobUID = string(j.UID)
		wctx, cancel := context.WithTimeout(ctx, time.Minute)
		defer cancel()
		if _, err := e.kubelet.Wait(wctx, e.ns, j.Name); err != nil {
			t.Fatal(err)
		}
		return c
	}
	result := func(c *v1alpha1.ActiveOperation) *v1alpha1.MigrationResult {
		t.Helper()
		rec, err := readRecord(ctx, shared.c, shared.c, nil, 10*time.Second, m, c)
		if err != nil || rec == nil {
			t.Fatalf("the record of %s: %v (%v)\n%s", c.JobName, rec, err, e.runLogs(1))
		}
		if rec.Spec.Result == nil || rec.Spec.Result.Migrations == nil {
			t.Fatalf("record %s has no migration result: %+v", rec.Name, rec.Spec)
		}
		return rec.Spec.Result.Migrations
	}

	observe := run(v1alpha1.OperationObserve, 1, runner.Operation{Type: runner.OpMigrationObserve})
	r := result(observe)
	if r.Status != v1alpha1.MigrationPending || len(r.Pending) != 2 || r.Current != 0 {
		t.Fatalf("the first reading: %+v", r)
	}

	apply := run(v1alpha1.OperationApply, 1, runner.Operation{Type: runner.OpMigrationApply, ExpectSequence: []int64{1, 2}, LockTimeout: "10s"})
	if r := result(apply); r.Status != v1alpha1.MigrationApplied || !slices.Equal(r.AppliedNow, []int64{1, 2}) || r.Current != 2 {
		t.Fatalf("the Apply: %+v", r)
	}
	proof := run(v1alpha1.OperationProof, 1, runner.Operation{Type: runner.OpMigrationObserve})
	if r := result(proof); r.Status != v1alpha1.MigrationUpToDate || r.Current != 2 || len(r.Pending) != 0 {
		t.Fatalf("the proof: %+v", r)
	}

	// Hostile readings: the Apply's record read for another claim, or for
	// a PtahSchema of the same name, is not its result.
	var bad *foreignRecord
	other := *apply
	other.ID = observe.ID
	if _, err := readRecord(ctx, shared.c, shared.c, nil, 10*time.Second, m, &other); !errors.As(err, &bad) {
		t.Errorf("the Apply's record read for another operation: %v, want refused", err)
	}
	schema := &v1alpha1.PtahSchema{ObjectMeta: metav1.ObjectMeta{Name: m.Name, Namespace: m.Namespace, UID: m.UID},
		Spec: v1alpha1.PtahSchemaSpec{Target: m.Spec.Target}}
	if _, err := readRecord(ctx, shared.c, shared.c, nil, 10*time.Second, schema, apply); !errors.As(err, &bad) || !strings.Contains(err.Error(), "PtahMigration") {
		t.Errorf("a migration's record read for a PtahSchema: %v, want refused naming the kind", err)
	}
	// A record its own Pod did not write: admin creates one under the
	// Apply's name for a fresh claim, with no admission stamp of a Pod.
	forged := run(v1alpha1.OperationObserve, 2, runner.Operation{Type: runner.OpMigrationObserve})
	must(t, shared.c.Delete(ctx, &v1alpha1.PtahResultRecord{ObjectMeta: metav1.ObjectMeta{Name: forged.JobName, Namespace: e.ns}}))
	fake := &v1alpha1.PtahResultRecord{ObjectMeta: metav1.ObjectMeta{Name: forged.JobName, Namespace: e.ns},
		Spec: v1alpha1.PtahResultRecordSpec{Subject: v1alpha1.ResultSubject{Kind: v1alpha1.KindPtahMigration, Name: m.Name},
			OperationID: forged.ID, Digest: forged.CoordinationDigest,
			Result: &v1alpha1.OperationResult{Migrations: &v1alpha1.MigrationResult{Status: v1alpha1.MigrationUpToDate, Current: 99}}}}
	if err := shared.c.Create(ctx, fake); err == nil {
		if _, err := readRecord(ctx, shared.c, shared.c, nil, 10*time.Second, m, forged); !errors.As(err, &bad) {
			t.Errorf("a record an admin wrote under the operation's name: %v, want refused", err)
		}
	} else if !apierrors.IsForbidden(err) && !apierrors.IsInvalid(err) {
		t.Fatalf("create a forged record: %v", err)
	}

	// Revoking the credential removes the account the token belongs to.
	revokeCredential(ctx, shared.c, m, proof)
	err := shared.c.Get(ctx, client.ObjectKey{Namespace: e.ns, Name: credentialName(proof)}, &corev1.ServiceAccount{})
	if !apierrors.IsNotFound(err) {
		t.Errorf("the proof's ServiceAccount after revocation: %v, want gone", err)
	}
}
