package controller

import (
	"context"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"

	v1alpha1 "ptah.run/operator/operator/api/v1alpha1"
)

// TestEventMigrationRunFinished: three migrations applied in order under
// Always (Normal, Applied), a target version that stops at 3 of 4, then the
// fourth alone, then a run that commits one version and fails the next
// (Warning, Partial). The history and the DDL say each ran exactly once.
func TestEventMigrationRunFinished(t *testing.T) {
	t.Parallel()
	e := newEnv(t)
	v1 := pushMigrations(t, "finished-"+e.ns, migrationsV1)
	e.migration(v1)
	m := migrated(e, 3)
	ev := e.awaitMigrationEvent(v1alpha1.EventMigrationRunFinished, 5*time.Second, nil)
	assertEvent(t, ev, "shop")
	if ev.Type != corev1.EventTypeNormal || !strings.Contains(ev.Message, "Applied: versions 1,2,3 committed, from version 0 to 3") {
		t.Errorf("MigrationRunFinished after the first run: %s %q", ev.Type, ev.Message)
	}
	if h := e.history(); h != "1 2 3" {
		t.Errorf("history %q, want 1 2 3", h)
	}
	if n := e.query("SELECT count(*)::text FROM audit"); n != "1" {
		t.Errorf("migration 3 ran %s times", n)
	}
	if !conditionIs(m, v1alpha1.ConditionReady, metav1.ConditionTrue, v1alpha1.ReasonScopedConverged) || m.Status.Phase != v1alpha1.PhaseInSync {
		t.Errorf("converged migration: phase %s, %s", m.Status.Phase, conditions(m))
	}
	// Nothing a deletion would lose: no finalizer holds it for a manager.
	if len(m.Finalizers) != 0 {
		t.Errorf("a converged migration keeps finalizers %v", m.Finalizers)
	}
	// The plan that was applied: immutable, with the checksums it pinned and
	// what it was computed against.
	var plans v1alpha1.PtahMigrationPlanList
	must(t, shared.c.List(context.Background(), &plans, client.InNamespace(e.ns)))
	if len(plans.Items) != 1 {
		t.Fatalf("%d plans, want 1", len(plans.Items))
	}
	p := plans.Items[0]
	if p.Spec.BaseVersion != 0 || len(p.Spec.Pending) != 3 || !strings.HasPrefix(p.Spec.Pending[0].Checksum, "sha256:") ||
		p.Spec.ArtifactDigest != m.Status.Source.ResolvedDigest || !strings.HasPrefix(p.Spec.HistoryDigest, "sha256:") {
		t.Errorf("plan %s: %+v", p.Name, p.Spec)
	}
	p.Spec.Pending = p.Spec.Pending[:1]
	if err := shared.c.Update(context.Background(), &p); err == nil {
		t.Errorf("a PtahMigrationPlan was changed after it was published")
	}

	v2 := pushMigrations(t, "finished2-"+e.ns, with(with(migrationsV1, "0004_notes.up.sql", "ALTER TABLE orders ADD COLUMN note text;\n"),
		"0005_more.up.sql", "ALTER TABLE orders ADD COLUMN more text;\n"))
	e.updateMigration(func(m *v1alpha1.PtahMigration) { m.Spec.Migrations.OCIRef = v2; m.Spec.TargetVersion = "4" })
	migrated(e, 4)
	e.awaitMigrationEvent(v1alpha1.EventMigrationRunFinished, 5*time.Second, func(msg string) bool {
		return strings.Contains(msg, "Applied: versions 4 committed, from version 3 to 4")
	})
	if h := e.history(); h != "1 2 3 4" {
		t.Errorf("history after target 4: %q", h)
	}

	v3 := pushMigrations(t, "finished3-"+e.ns, with(with(migrationsV1, "0004_notes.up.sql", "ALTER TABLE orders ADD COLUMN note text;\n"),
		"0005_more.up.sql", "ALTER TABLE orders ADD COLUMN more text;\nALTER TABLE nowhere ADD COLUMN x int;\n"))
	e.updateMigration(func(m *v1alpha1.PtahMigration) { m.Spec.Migrations.OCIRef = v3; m.Spec.TargetVersion = "latest" })
	partial := e.awaitMigrationEvent(v1alpha1.EventMigrationRunFinished, converge, func(msg string) bool { return strings.Contains(msg, "finished Failed") })
	assertEvent(t, partial, "shop")
	if partial.Type != corev1.EventTypeWarning || !strings.Contains(partial.Message, "version 5 failed and was rolled back") {
		t.Errorf("MigrationRunFinished of a failed run: %s %q", partial.Type, partial.Message)
	}
	if h := e.history(); h != "1 2 3 4" {
		t.Errorf("history after a failed version 5: %q", h)
	}
	if !slices.Contains(strings.Fields(e.query("SELECT string_agg(column_name, ' ') FROM information_schema.columns WHERE table_name = 'orders'")), "note") {
		t.Errorf("version 4's column is missing")
	}
}

// TestMigrationApprovedVersionsAppliedByHandAreUpToDate: a plan awaits its
// approval while a person applies its versions with ptah by hand. The
// approved Apply then finds nothing pending: MigrationRunFinished is Normal
// and says UpToDate, nothing runs twice, and the resource converges.
func TestMigrationApprovedVersionsAppliedByHandAreUpToDate(t *testing.T) {
	t.Parallel()
	e := newEnv(t)
	e.migration(pushMigrations(t, "byhand-"+e.ns, migrationsV1), func(m *v1alpha1.PtahMigration) { m.Spec.Policy.Apply = v1alpha1.ApplyOnApproval })
	m := e.awaitMigration("ApprovalRequired=True", converge, migrationCondition(v1alpha1.ConditionApprovalRequired, metav1.ConditionTrue, v1alpha1.ReasonAwaitingApproval))

	dir := t.TempDir()
	for n, s := range migrationsV1 {
		must(t, os.WriteFile(filepath.Join(dir, n), []byte(s), 0o644))
	}
	for _, args := range [][]string{{"migrations", "hash", "--dir", dir}, {"migrations", "up", "--dir", dir, "--url", shared.pg.URL(e.db, e.password, e.db)}} {
		if out, err := exec.Command(shared.ptah, args...).CombinedOutput(); err != nil {
			t.Fatalf("ptah %v by hand: %v\n%s", args, err, out)
		}
	}
	must(t, bobClient(t).Create(context.Background(), &v1alpha1.PtahMigrationApproval{ObjectMeta: metav1.ObjectMeta{Name: "ok", Namespace: e.ns},
		Spec: v1alpha1.PtahMigrationApprovalSpec{MigrationName: "shop", PlanName: m.Status.Plan.Name, PlanFingerprint: m.Status.Plan.Fingerprint}}))
	ev := e.awaitMigrationEvent(v1alpha1.EventMigrationRunFinished, converge, nil)
	assertEvent(t, ev, "shop")
	if ev.Type != corev1.EventTypeNormal || !strings.Contains(ev.Message, "UpToDate: nothing was pending; the history is at version 3") {
		t.Errorf("MigrationRunFinished of an approved run whose versions were applied by hand: %s %q", ev.Type, ev.Message)
	}
	migrated(e, 3)
	if n := e.query("SELECT count(*)::text FROM audit"); n != "1" {
		t.Errorf("migration 3 ran %s times", n)
	}
	if failed := e.migrationEvents(v1alpha1.EventOperationFailed); len(failed) != 0 {
		t.Errorf("an Apply that found its versions applied failed: %q", failed)
	}
}
