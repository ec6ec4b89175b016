package controller

import (
	"context"
	"fmt"
	"maps"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/client/interceptor"
	"sigs.k8s.io/controller-runtime/pkg/controller/controllerutil"

	"ptah.run/operator/internal/runner"
	v1alpha1 "ptah.run/operator/operator/api/v1alpha1"
	"ptah.run/operator/operator/artifact"
	"ptah.run/operator/operator/migrate"
)

// What a reviewer with cases of their own would try against PtahMigration:
// approvals that must not apply, targets that do not exist, annotations a
// user forged, failures that must not loop. Each runs the real runner and
// ptah against PostgreSQL through the envtest API server.

// approveAs creates bob's approval name of the migration's plan (name,
// fingerprint), through the admission policies.
func approveAs(t *testing.T, e *env, name string, plan *v1alpha1.MigrationPlanSummary) {
	t.Helper()
	a := &v1alpha1.PtahMigrationApproval{ObjectMeta: metav1.ObjectMeta{Name: name, Namespace: e.ns},
		Spec: v1alpha1.PtahMigrationApprovalSpec{MigrationName: "shop", PlanName: plan.Name, PlanFingerprint: plan.Fingerprint}}
	must(t, bobClient(t).Create(context.Background(), a))
	if a.ApprovedBy == nil || a.ApprovedBy.Username != "bob" {
		t.Fatalf("admission did not stamp bob on approval %s: %+v", name, a.ApprovedBy)
	}
}

func consumedBy(t *testing.T, e *env, approval string) string {
	t.Helper()
	var a v1alpha1.PtahMigrationApproval
	must(t, shared.c.Get(context.Background(), client.ObjectKey{Namespace: e.ns, Name: approval}, &a))
	return a.Annotations[AnnotationConsumedBy]
}

// reread edits the interval, which makes the migration read its history
// again from Resolve, and waits for that generation's reading to settle
// with ok.
func reread(e *env, interval time.Duration, what string, ok func(*v1alpha1.PtahMigration) bool) *v1alpha1.PtahMigration {
	e.t.Helper()
	e.updateMigration(func(m *v1alpha1.PtahMigration) { m.Spec.Interval = &metav1.Duration{Duration: interval} })
	return e.awaitMigration(what+" at the edited generation", converge, func(m *v1alpha1.PtahMigration) bool {
		return m.Status.ObservedGeneration == m.Generation && m.Status.ActiveOperation == nil && ok(m)
	})
}

// TestMigrationNeverAppliesWhateverIsApproved: under policy.apply Never a
// plan is published and nothing is applied, even with a stamped approval
// made by hand for that very plan, through a fresh reading of the history.
func TestMigrationNeverAppliesWhateverIsApproved(t *testing.T) {
	t.Parallel()
	e := newEnv(t)
	e.migration(pushMigrations(t, "never-"+e.ns, migrationsV1), func(m *v1alpha1.PtahMigration) { m.Spec.Policy.Apply = v1alpha1.ApplyNever })
	blocked := migrationCondition(v1alpha1.ConditionReady, metav1.ConditionFalse, v1alpha1.ReasonPolicyBlocked)
	m := e.awaitMigration("Ready=False (PolicyBlocked)", converge, blocked)
	if m.Status.Phase != v1alpha1.PhaseReadyToApply || m.Status.Plan == nil || versionList(m.Status.Plan.Versions) != "1,2,3" {
		t.Fatalf("under Never: phase %s, plan %+v", m.Status.Phase, m.Status.Plan)
	}
	approveAs(t, e, "by-hand", m.Status.Plan)
	time.Sleep(2 * time.Second) // the approval's watch wakes the migration
	m = reread(e, 40*time.Second, "Ready=False (PolicyBlocked)", blocked)
	if !conditionIs(m, v1alpha1.ConditionApprovalRequired, metav1.ConditionFalse, v1alpha1.ReasonNotRequired) {
		t.Errorf("under Never an approval is asked for: %s", conditions(m))
	}
	if applies := e.jobs("ptah-apply-"); len(applies) != 0 {
		t.Errorf("Apply Jobs %v under Never", names(applies))
	}
	if h := e.history(); h != "" {
		t.Errorf("history %q under Never", h)
	}
	if by := consumedBy(t, e, "by-hand"); by != "" {
		t.Errorf("the approval was consumed under Never by %s", by)
	}
	if ev := e.migrationEvents(v1alpha1.EventMigrationRunFinished); len(ev) != 0 {
		t.Errorf("MigrationRunFinished under Never: %q", ev)
	}
}

// TestMigrationStaleApprovalIsRefused: a plan is approved after the
// database moved on (version 1 applied by hand), so its Apply is refused
// before it runs anything; the approval, consumed, does not approve the
// next plan; an approval of that plan given after the artifact changed
// applies nothing; only an approval of the current plan applies, its
// exact versions, once.
func TestMigrationStaleApprovalIsRefused(t *testing.T) {
	t.Parallel()
	e := newEnv(t)
	dir := t.TempDir()
	for n, s := range migrationsV1 {
		must(t, os.WriteFile(filepath.Join(dir, n), []byte(s), 0o644))
	}
	e.migration(pushMigrations(t, "stale-"+e.ns, migrationsV1), func(m *v1alpha1.PtahMigration) { m.Spec.Policy.Apply = v1alpha1.ApplyOnApproval })
	awaiting := migrationCondition(v1alpha1.ConditionApprovalRequired, metav1.ConditionTrue, v1alpha1.ReasonAwaitingApproval)
	first := e.awaitMigration("ApprovalRequired=True", converge, awaiting).Status.Plan

	// The database moves on: someone applies version 1 with ptah by hand.
	for _, args := range [][]string{{"migrations", "hash", "--dir", dir}, {"migrations", "up", "--dir", dir, "--to", "1", "--url", shared.pg.URL(e.db, e.password, e.db)}} {
		if out, err := exec.Command(shared.ptah, args...).CombinedOutput(); err != nil {
			t.Fatalf("ptah %s: %v\n%s", args[1], err, out)
		}
	}
	if h := e.history(); h != "1" {
		t.Fatalf("history %q after applying version 1 by hand", h)
	}
	approveAs(t, e, "first", first)
	second := e.awaitMigration("a new plan over version 1 awaiting approval", converge, func(m *v1alpha1.PtahMigration) bool {
		return awaiting(m) && m.Status.Plan != nil && m.Status.Plan.Name != first.Name && m.Status.ActiveOperation == nil
	}).Status.Plan
	if versionList(second.Versions) != "2,3" {
		t.Errorf("the plan after the database moved on applies %s, want 2,3", versionList(second.Versions))
	}
	// Each plan says what it was computed against.
	var p1, p2 v1alpha1.PtahMigrationPlan
	must(t, shared.c.Get(context.Background(), client.ObjectKey{Namespace: e.ns, Name: first.Name}, &p1))
	must(t, shared.c.Get(context.Background(), client.ObjectKey{Namespace: e.ns, Name: second.Name}, &p2))
	if p1.Spec.BaseVersion != 0 || p2.Spec.BaseVersion != 1 || p1.Spec.HistoryDigest == p2.Spec.HistoryDigest ||
		p1.Spec.ArtifactDigest != p2.Spec.ArtifactDigest || len(p2.Spec.Pending) != 2 ||
		p2.Spec.Pending[0].Checksum != "sha256:"+hexDigest(migrationsV1["0002_orders.up.sql"]) || p2.Spec.Pending[1].Checksum != p1.Spec.Pending[2].Checksum {
		t.Errorf("the plans before and after the database moved on:\n%+v\n%+v", p1.Spec, p2.Spec)
	}
	if h := e.history(); h != "1" {
		t.Fatalf("the stale approval applied something: history %q", h)
	}
	refused := e.migrationEvents(v1alpha1.EventMigrationRunFinished)
	if len(refused) != 1 || !strings.HasPrefix(refused[0], corev1.EventTypeWarning) || !strings.Contains(refused[0], "nothing was applied") {
		t.Errorf("the stale plan's Apply: MigrationRunFinished %q, want one Warning saying nothing was applied", refused)
	}
	if consumedBy(t, e, "first") == "" {
		t.Errorf("the stale plan's approval was handed back, so it could be consumed again")
	}

	// The artifact changes before the second plan is approved.
	files := with(migrationsV1, "0004_notes.up.sql", "ALTER TABLE orders ADD COLUMN note text;\n")
	moved := pushMigrations(t, "stale2-"+e.ns, files)
	e.updateMigration(func(m *v1alpha1.PtahMigration) { m.Spec.Migrations.OCIRef = moved })
	third := e.awaitMigration("the plan of the new artifact awaiting approval", converge, func(m *v1alpha1.PtahMigration) bool {
		return awaiting(m) && m.Status.ObservedGeneration == m.Generation && m.Status.Plan != nil && m.Status.Plan.Name != second.Name && m.Status.ActiveOperation == nil
	}).Status.Plan
	approveAs(t, e, "second", second)
	time.Sleep(3 * time.Second) // the approval's watch wakes the migration
	if h, applies := e.history(), e.jobs("ptah-apply-shop-"); h != "1" || len(applies) != 1 {
		t.Fatalf("an approval of the plan before the artifact changed: history %q, Apply Jobs %v", h, names(applies))
	}
	if by := consumedBy(t, e, "second"); by != "" {
		t.Errorf("an approval of a stale plan was consumed by %s", by)
	}
	e.awaitMigration("the stale approval named as not consumed", 10*time.Second, func(m *v1alpha1.PtahMigration) bool {
		return strings.Contains(conditionMessage(m, v1alpha1.ConditionApprovalRequired), "not consumed second: written for another plan")
	})
	approveAs(t, e, "third", third)
	migrated(e, 4)
	if h, n := e.history(), e.query("SELECT count(*)::text FROM audit"); h != "1 2 3 4" || n != "1" {
		t.Errorf("history %q, migration 3 ran %s times", h, n)
	}
	if applies := e.jobs("ptah-apply-shop-"); len(applies) != 2 {
		t.Errorf("Apply Jobs %v, want the refused one and the approved one", names(applies))
	}
	finished := e.migrationEvents(v1alpha1.EventMigrationRunFinished)
	if len(finished) != 2 || !slices.ContainsFunc(finished, func(s string) bool {
		return strings.Contains(s, "Applied: versions 2,3,4 committed, from version 1 to 4")
	}) {
		t.Errorf("MigrationRunFinished %q, want the refusal and then versions 2,3,4", finished)
	}
}

// TestMigrationTargetVersion: a named target that is not a version of the
// artifact is refused by name and applies nothing; a named one that is
// applies up to it; moving it up applies only the new ones; a target below
// the applied version applies nothing and says so.
func TestMigrationTargetVersion(t *testing.T) {
	t.Parallel()
	e := newEnv(t)
	gapped := migrationsGapped
	e.migration(pushMigrations(t, "target-"+e.ns, gapped), func(m *v1alpha1.PtahMigration) { m.Spec.TargetVersion = "4" })
	missing := func(version string) func(*v1alpha1.PtahMigration) bool {
		return func(m *v1alpha1.PtahMigration) bool {
			return migrationCondition(v1alpha1.ConditionReady, metav1.ConditionFalse, v1alpha1.ReasonConfigurationError)(m) &&
				strings.Contains(conditionMessage(m, v1alpha1.ConditionReady), "targetVersion "+version+" is not a version of")
		}
	}
	m := e.awaitMigration("Ready=False (ConfigurationError) naming target 4", converge, missing("4"))
	if m.Status.Plan != nil || conditionIs(m, v1alpha1.ConditionInSync, metav1.ConditionTrue, v1alpha1.ReasonScopedConverged) ||
		!conditionIs(m, v1alpha1.ConditionStalled, metav1.ConditionTrue, v1alpha1.ReasonConfigurationError) {
		t.Errorf("a missing target: plan %+v, %s", m.Status.Plan, conditions(m))
	}
	if h, applies := e.history(), e.jobs("ptah-apply-"); h != "" || len(applies) != 0 {
		t.Errorf("a missing target applied: history %q, Apply Jobs %v", h, names(applies))
	}

	e.updateMigration(func(m *v1alpha1.PtahMigration) { m.Spec.TargetVersion = "2" })
	migrated(e, 2)
	if h := e.history(); h != "1 2" {
		t.Errorf("history %q under target 2", h)
	}
	// Above the applied version, still not in the artifact.
	e.updateMigration(func(m *v1alpha1.PtahMigration) { m.Spec.TargetVersion = "3" })
	e.awaitMigration("Ready=False (ConfigurationError) naming target 3", converge, missing("3"))
	if h := e.history(); h != "1 2" {
		t.Errorf("history %q under the missing target 3", h)
	}

	e.updateMigration(func(m *v1alpha1.PtahMigration) { m.Spec.TargetVersion = v1alpha1.TargetVersionLatest })
	migrated(e, 5)
	e.awaitMigrationEvent(v1alpha1.EventMigrationRunFinished, 10*time.Second, func(msg string) bool {
		return strings.Contains(msg, "Applied: versions 5 committed, from version 2 to 5")
	})
	if h, n := e.history(), e.query("SELECT count(*)::text FROM audit"); h != "1 2 5" || n != "1" {
		t.Errorf("history %q, migration 5 ran %s times", h, n)
	}

	e.updateMigration(func(m *v1alpha1.PtahMigration) { m.Spec.TargetVersion = "1" })
	m = e.awaitMigration("the reading of target 1", converge, func(m *v1alpha1.PtahMigration) bool {
		return m.Status.ObservedGeneration == m.Generation && m.Status.ActiveOperation == nil && m.Status.Phase == v1alpha1.PhaseInSync &&
			strings.Contains(conditionMessage(m, v1alpha1.ConditionInSync), "above target 1")
	})
	if msg := conditionMessage(m, v1alpha1.ConditionInSync); !strings.Contains(msg, "version 5 is applied, above target 1") || !strings.Contains(msg, "nothing is applied") {
		t.Errorf("a target below the applied version says %q", msg)
	}
	if h, applies := e.history(), e.jobs("ptah-apply-shop-"); h != "1 2 5" || len(applies) != 2 {
		t.Errorf("a target below the applied version: history %q, Apply Jobs %v", h, names(applies))
	}
}

// TestMigrationForgedUnresolvedRunAnnotation: a user writes the
// unresolved-run annotation by hand, as garbage, as a run the API server's
// schema refuses, and as a run that looks real. None makes the migration
// stop reconciling, none applies anything twice, and a run that looks real
// is settled by the next reading.
func TestMigrationForgedUnresolvedRunAnnotation(t *testing.T) {
	t.Parallel()
	e := newEnv(t)
	e.migration(pushMigrations(t, "forged-"+e.ns, migrationsV1), func(m *v1alpha1.PtahMigration) {
		m.Annotations = map[string]string{AnnotationUnresolvedRun: `{"operation":"forged"}`}
	})
	forge := func(annotation string) {
		e.updateMigration(func(m *v1alpha1.PtahMigration) {
			if m.Annotations == nil {
				m.Annotations = map[string]string{}
			}
			m.Annotations[AnnotationUnresolvedRun] = annotation
		})
	}
	m := migrated(e, 3)
	if ev := e.migrationEvents(v1alpha1.EventUnresolvedRunRestored); len(ev) != 0 {
		t.Errorf("a run the schema refuses was restored: %q", ev)
	}
	if a, ok := m.Annotations[AnnotationUnresolvedRun]; ok {
		t.Errorf("the forged annotation %q lingers", a)
	}
	for _, forged := range []string{
		"not json at all",
		`{"operation":"` + strings.Repeat("x", 300) + `","attempt":1,"reason":"r"}`,
	} {
		forge(forged)
		m := reread(e, 30*time.Second+time.Duration(len(forged))*time.Microsecond, "InSync=True (ScopedConverged)",
			migrationCondition(v1alpha1.ConditionInSync, metav1.ConditionTrue, v1alpha1.ReasonScopedConverged))
		if m.Status.UnresolvedRun != nil {
			t.Errorf("annotation %.40q restored a run: %.200v", forged, m.Status.UnresolvedRun)
		}
		if _, ok := m.Annotations[AnnotationUnresolvedRun]; ok {
			t.Errorf("annotation %.40q lingers", forged)
		}
		if ev := e.migrationEvents(v1alpha1.EventUnresolvedRunRestored); len(ev) != 0 {
			t.Errorf("annotation %.40q was restored: %.200q", forged, ev)
		}
	}
	// A run that looks real: restored, then settled by the reading, which
	// finds its versions applied; nothing runs twice.
	forge(`{"operation":"forged-2","jobName":"ptah-apply-shop-forged","attempt":1,"fromVersion":0,"versions":[1,2,3],"reason":"made up","database":"Secret shop-db key url"}`)
	m = reread(e, 45*time.Second, "the forged run settled", func(m *v1alpha1.PtahMigration) bool {
		return migrationCondition(v1alpha1.ConditionUnresolvedRun, metav1.ConditionFalse, v1alpha1.ReasonRunSettled)(m) &&
			migrationCondition(v1alpha1.ConditionInSync, metav1.ConditionTrue, v1alpha1.ReasonScopedConverged)(m)
	})
	if m.Status.UnresolvedRun != nil || m.Annotations[AnnotationUnresolvedRun] != "" {
		t.Errorf("the forged run outlived the reading: %+v, annotation %q", m.Status.UnresolvedRun, m.Annotations[AnnotationUnresolvedRun])
	}
	if h, n, applies := e.history(), e.query("SELECT count(*)::text FROM audit"), e.jobs("ptah-apply-shop-"); h != "1 2 3" || n != "1" || len(applies) != 1 {
		t.Errorf("history %q, migration 3 ran %s times, Apply Jobs %v", h, n, names(applies))
	}
}

// TestMigrationRetriesStopAtTheBound: a migration that fails is tried
// again with OperationRetried naming each attempt, up to the bound, then
// OperationFailed, and no further attempt is made before the interval; an
// artifact that fixes it converges.
func TestMigrationRetriesStopAtTheBound(t *testing.T) {
	t.Parallel()
	e := newEnv(t)
	broken := with(migrationsV1, "0001_customers.up.sql", "CREATE TABLE customers (id bigint PRIMARY KEY);\nSELECT 1/0;\n")
	e.migration(pushMigrations(t, "bound-"+e.ns, broken))
	failed := e.awaitMigrationEvent(v1alpha1.EventOperationFailed, converge, func(msg string) bool { return strings.Contains(msg, "attempt 3 of 3") })
	assertEvent(t, failed, "shop")
	retried := e.migrationEvents(v1alpha1.EventOperationRetried)
	said := func(want string) bool {
		return slices.ContainsFunc(retried, func(s string) bool { return strings.Contains(s, want) })
	}
	if len(retried) != 2 || !said("attempt 1 of 3 of the Apply operation failed, attempt 2 follows") ||
		!said("attempt 2 of 3 of the Apply operation failed, attempt 3 follows") {
		t.Errorf("OperationRetried %q, want attempts 1 and 2 of 3 of the Apply", retried)
	}
	time.Sleep(15 * time.Second) // longer than the failure retry interval
	if applies := e.jobs("ptah-apply-shop-"); len(applies) != 3 {
		t.Errorf("Apply Jobs %v, want the three attempts and no more before the interval", names(applies))
	}
	m := e.getMigration()
	if m.Status.ActiveOperation != nil || m.Status.Phase != v1alpha1.PhaseFailed || m.Status.LastFailure == nil ||
		!strings.Contains(m.Status.LastFailure.Message, "version 1 failed") || e.history() != "" {
		t.Errorf("past the bound: phase %s, active %+v, lastFailure %+v, history %q", m.Status.Phase, m.Status.ActiveOperation, m.Status.LastFailure, e.history())
	}
	fixed := pushMigrations(t, "bound2-"+e.ns, migrationsV1)
	e.updateMigration(func(m *v1alpha1.PtahMigration) { m.Spec.Migrations.OCIRef = fixed })
	migrated(e, 3)
	if h := e.history(); h != "1 2 3" {
		t.Errorf("history %q after the fix", h)
	}
}

// TestMigrationsOnOneDatabase: two PtahMigrations apply the same artifact
// to one database at once. The advisory lock lets one Apply run; each
// version runs once, and both end in sync at version 3, neither claiming
// to have applied what the other did.
func TestMigrationsOnOneDatabase(t *testing.T) {
	t.Parallel()
	e := newEnv(t)
	ref := pushMigrations(t, "twice-"+e.ns, migrationsV1)
	first := e.migration(ref)
	second := first.DeepCopy()
	second.ObjectMeta = metav1.ObjectMeta{Name: "shop-too", Namespace: e.ns}
	second.Status = v1alpha1.PtahMigrationStatus{}
	must(t, shared.c.Create(context.Background(), second))
	migrated(e, 3)
	deadline := time.Now().Add(converge)
	for {
		var m v1alpha1.PtahMigration
		must(t, shared.c.Get(context.Background(), client.ObjectKey{Namespace: e.ns, Name: "shop-too"}, &m))
		if holds(&m, v1alpha1.ConditionInSync, metav1.ConditionTrue, v1alpha1.ReasonScopedConverged) && m.Status.AppliedVersion == 3 && m.Status.ActiveOperation == nil {
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("shop-too did not converge: phase %s, %s\nevents:\n%s", m.Status.Phase, conditions(&m), e.eventLines())
		}
		time.Sleep(200 * time.Millisecond)
	}
	if h, n := e.history(), e.query("SELECT count(*)::text FROM audit"); h != "1 2 3" || n != "1" {
		t.Errorf("history %q, migration 3 ran %s times", h, n)
	}
	applied := 0
	for _, ev := range e.events() {
		if ev.Reason == v1alpha1.EventMigrationRunFinished && strings.Contains(ev.Message, "Applied: versions 1,2,3 committed") {
			applied++
		}
	}
	if applied != 1 {
		t.Errorf("%d runs say they applied versions 1,2,3; events:\n%s", applied, e.eventLines())
	}
}

// pushByHand publishes files as an artifact of artifactType with the
// artifact client, without ptah's checks, and returns its pinned reference.
func pushByHand(t *testing.T, tag, artifactType, layerType string, files map[string]string) string {
	t.Helper()
	c := &artifact.Client{Credentials: artifact.Credentials{Registry: shared.reg.Host, Username: shared.reg.Username, Password: shared.reg.Password}, PlainHTTP: true}
	var layers []artifact.File
	for _, n := range slices.Sorted(maps.Keys(files)) {
		layers = append(layers, artifact.File{Name: n, Data: []byte(files[n])})
	}
	p, err := c.Push(context.Background(), "oci://"+shared.reg.Host+"/shop/migrations:"+tag, artifactType, layerType, layers, nil)
	must(t, err)
	return p.Reference
}

// hashed is files plus the ptah.sum ptah migrations hash writes for them.
func hashed(t *testing.T, files map[string]string) map[string]string {
	t.Helper()
	dir := t.TempDir()
	for n, s := range files {
		must(t, os.WriteFile(filepath.Join(dir, n), []byte(s), 0o644))
	}
	if out, err := exec.Command(shared.ptah, "migrations", "hash", "--dir", dir).CombinedOutput(); err != nil {
		t.Fatalf("ptah migrations hash: %v\n%s", err, out)
	}
	sum, err := os.ReadFile(filepath.Join(dir, migrate.SumFile))
	must(t, err)
	return with(files, migrate.SumFile, string(sum))
}

// TestMigrationArtifactRefusedBeforeAnythingRuns: a digest the registry
// does not hold, a schema artifact, a migrations artifact whose file was
// edited after its ptah.sum was written, and a registry that refuses the
// credentials are each refused by the reading, named in status, with
// nothing applied and the database not reported unreachable; the
// artifact as pushed by ptah then converges.
func TestMigrationArtifactRefusedBeforeAnythingRuns(t *testing.T) {
	t.Parallel()
	e := newEnv(t, func(o *envOption) { o.migration = func(r *MigrationReconciler) { r.MaxAttempts = 1 } })
	good := pushMigrations(t, "refused-"+e.ns, migrationsV1)
	missing := artifact.Pinned(good, "sha256:"+strings.Repeat("0", 64))
	schema := pushByHand(t, "refused-schema-"+e.ns, artifact.SchemaArtifactType, artifact.SchemaLayerMediaType, map[string]string{"schema.sql": schemaV1})
	tampered := hashed(t, migrationsV1)
	tampered["0002_orders.up.sql"] = "DROP TABLE customers;\n"
	edited := pushByHand(t, "refused-edited-"+e.ns, artifact.MigrationsArtifactType, artifact.MigrationLayerMediaType, tampered)
	must(t, shared.c.Create(context.Background(), &corev1.Secret{ObjectMeta: metav1.ObjectMeta{Name: "registry-forgot", Namespace: e.ns}, Type: corev1.SecretTypeBasicAuth,
		StringData: map[string]string{"username": shared.reg.Username, "password": "not-the-password"}}))

	e.migration(missing)
	for i, tc := range []struct {
		what, ref, auth, code, says, condition, reason string
	}{
		{"a digest the registry does not hold", missing, "registry", "not_found", "not found", v1alpha1.ConditionArtifactResolved, v1alpha1.ReasonResolveFailed},
		{"a schema artifact", schema, "registry", "artifact_type", artifact.SchemaArtifactType, v1alpha1.ConditionArtifactVerified, v1alpha1.ReasonVerificationRefused},
		{"a file edited after hashing", edited, "registry", "checksum_mismatch", "0002_orders.up.sql changed", v1alpha1.ConditionArtifactVerified, v1alpha1.ReasonVerificationRefused},
		{"credentials the registry refuses", good, "registry-forgot", "auth", "the registry refused access", v1alpha1.ConditionArtifactResolved, v1alpha1.ReasonResolveFailed},
	} {
		if i > 0 {
			e.updateMigration(func(m *v1alpha1.PtahMigration) {
				m.Spec.Migrations.OCIRef, m.Spec.Migrations.RegistryAuthFrom.Name = tc.ref, tc.auth
			})
		}
		m := e.awaitMigration(tc.what+" refused", converge, func(m *v1alpha1.PtahMigration) bool {
			return m.Status.ObservedGeneration == m.Generation && m.Status.ActiveOperation == nil && m.Status.LastFailure != nil &&
				migrationCondition(v1alpha1.ConditionReconciliationFailed, metav1.ConditionTrue, v1alpha1.ReasonOperationFailed)(m)
		})
		if f := m.Status.LastFailure; !strings.Contains(f.Message, tc.code) || !strings.Contains(f.Message, tc.says) {
			t.Errorf("%s: lastFailure %q, want %s naming %q", tc.what, f.Message, tc.code, tc.says)
		}
		if !holds(m, tc.condition, metav1.ConditionFalse, tc.reason) || !strings.Contains(conditionMessage(m, tc.condition), tc.says) ||
			!holds(m, v1alpha1.ConditionReady, metav1.ConditionFalse, tc.reason) {
			t.Errorf("%s: want %s=False and Ready=False (%s) naming %q: %s %q", tc.what, tc.condition, tc.reason, tc.says, conditions(m), conditionMessage(m, tc.condition))
		}
		if conditionIs(m, v1alpha1.ConditionDatabaseReachable, metav1.ConditionFalse, v1alpha1.ReasonConnectionFailed) {
			t.Errorf("%s: the database is reported unreachable: %q", tc.what, conditionMessage(m, v1alpha1.ConditionDatabaseReachable))
		}
		if m.Status.Plan != nil || conditionIs(m, v1alpha1.ConditionReady, metav1.ConditionTrue, v1alpha1.ReasonScopedConverged) {
			t.Errorf("%s: plan %+v, %s", tc.what, m.Status.Plan, conditions(m))
		}
		if h, applies := e.history(), e.jobs("ptah-apply-"); h != "" || len(applies) != 0 {
			t.Fatalf("%s: history %q, Apply Jobs %v", tc.what, h, names(applies))
		}
	}
	e.updateMigration(func(m *v1alpha1.PtahMigration) { m.Spec.Migrations.RegistryAuthFrom.Name = "registry" })
	m := migrated(e, 3)
	if !conditionIs(m, v1alpha1.ConditionArtifactResolved, metav1.ConditionTrue, v1alpha1.ReasonResolved) || !conditionIs(m, v1alpha1.ConditionArtifactVerified, metav1.ConditionTrue, v1alpha1.ReasonNoPolicy) {
		t.Errorf("after a good pull: %s", conditions(m))
	}
	if n := e.query("SELECT count(*)::text FROM customers"); n != "0" {
		t.Errorf("customers has %s rows", n)
	}
}

// TestMigrationForeignPlanIsRefused: someone who may create plans takes the
// name of the plan the first reading will compute (it is derived from the
// fingerprint), with the fingerprint and versions it will have and another
// checksum for version 2. The manager does not offer that plan for
// approval, an approval of it applies nothing, and once both are deleted
// the manager's own plan is published, approved and applied.
func TestMigrationForeignPlanIsRefused(t *testing.T) {
	t.Parallel()
	e := newEnv(t)
	ctx := context.Background()
	ref := pushMigrations(t, "foreign-"+e.ns, migrationsV1)
	var pending []v1alpha1.PendingMigration
	for _, f := range []string{"0001_customers.up.sql", "0002_orders.up.sql", "0003_audit.up.sql"} {
		v, name, _ := strings.Cut(strings.TrimSuffix(f, ".up.sql"), "_")
		version, err := strconv.ParseInt(v, 10, 64)
		must(t, err)
		pending = append(pending, v1alpha1.PendingMigration{Version: version, Name: name, Checksum: "sha256:" + hexDigest(migrationsV1[f])})
	}
	digest := ref[strings.LastIndex(ref, "@")+1:]
	history := runner.HistoryDigest(nil)
	fp := "sha256:" + hexDigest(struct {
		Artifact string                      `json:"artifact"`
		History  string                      `json:"history"`
		Base     int64                       `json:"base"`
		Pending  []v1alpha1.PendingMigration `json:"pending"`
	}{digest, history, 0, pending})
	forged := slices.Clone(pending)
	forged[1].Checksum = "sha256:" + hexDigest("DROP TABLE customers;\n")
	plan := &v1alpha1.PtahMigrationPlan{ObjectMeta: metav1.ObjectMeta{Name: planName("shop", fp), Namespace: e.ns},
		Spec: v1alpha1.PtahMigrationPlanSpec{MigrationRef: v1alpha1.LocalRef{Name: "shop"}, Fingerprint: fp, ArtifactDigest: digest,
			HistoryDigest: history, Pending: forged}}
	must(t, shared.c.Create(ctx, plan))

	e.migration(ref, func(m *v1alpha1.PtahMigration) { m.Spec.Policy.Apply = v1alpha1.ApplyOnApproval })
	m := e.awaitMigration("PlanReady=False (ConfigurationError) naming the foreign plan", converge, func(m *v1alpha1.PtahMigration) bool {
		return migrationCondition(v1alpha1.ConditionPlanReady, metav1.ConditionFalse, v1alpha1.ReasonConfigurationError)(m) &&
			strings.Contains(conditionMessage(m, v1alpha1.ConditionPlanReady), plan.Name)
	})
	if m.Status.Plan != nil || conditionIs(m, v1alpha1.ConditionApprovalRequired, metav1.ConditionTrue, v1alpha1.ReasonAwaitingApproval) {
		t.Errorf("the foreign plan is offered for approval: plan %+v, %s", m.Status.Plan, conditions(m))
	}
	approveAs(t, e, "foreign", &v1alpha1.MigrationPlanSummary{Name: plan.Name, Fingerprint: fp})
	time.Sleep(3 * time.Second) // the approval's watch wakes the migration
	if h, applies := e.history(), e.jobs("ptah-apply-"); h != "" || len(applies) != 0 {
		t.Fatalf("an approval of the foreign plan applied: history %q, Apply Jobs %v", h, names(applies))
	}

	// Whoever reads the refusal deletes the plan and the approval given
	// for it (its fingerprint is the one the manager's plan will have).
	must(t, shared.c.Delete(ctx, plan))
	must(t, shared.c.Delete(ctx, &v1alpha1.PtahMigrationApproval{ObjectMeta: metav1.ObjectMeta{Name: "foreign", Namespace: e.ns}}))
	m = reread(e, 31*time.Second, "ApprovalRequired=True", migrationCondition(v1alpha1.ConditionApprovalRequired, metav1.ConditionTrue, v1alpha1.ReasonAwaitingApproval))
	var own v1alpha1.PtahMigrationPlan
	must(t, shared.c.Get(ctx, client.ObjectKey{Namespace: e.ns, Name: m.Status.Plan.Name}, &own))
	if !slices.Equal(own.Spec.Pending, pending) || m.Status.Plan.Fingerprint != fp {
		t.Errorf("the manager's plan: %+v, fingerprint %s; want %+v under %s", own.Spec.Pending, m.Status.Plan.Fingerprint, pending, fp)
	}
	approveAs(t, e, "own", m.Status.Plan)
	migrated(e, 3)
	if h := e.history(); h != "1 2 3" {
		t.Errorf("history %q", h)
	}
}

// TestMigrationHistoryRefusalsApplyNothing: over versions 1, 2 and 5
// applied, an artifact that adds version 3 (below the applied 5) and one
// that lost the applied version 2 (and adds 6) are each refused with the
// version named, nothing is planned and nothing new is applied after
// them, not even the version above; the artifact as applied plus 6 goes
// on. (The reasons these refusals carry are not asserted here.)
func TestMigrationHistoryRefusalsApplyNothing(t *testing.T) {
	t.Parallel()
	e := newEnv(t)
	applied := migrationsGapped
	six := "ALTER TABLE customers ADD COLUMN six text;\n"
	e.migration(pushMigrations(t, "refusals-"+e.ns, applied))
	migrated(e, 5)
	lost := with(applied, "0006_six.up.sql", six)
	delete(lost, "0002_orders.up.sql")
	for _, tc := range []struct{ what, tag, says string }{
		{"a new version below the applied one", "refusals-below-", "migration 3"},
		{"an applied version that lost its file", "refusals-lost-", "migration 2"},
	} {
		files := with(applied, "0003_late.up.sql", "ALTER TABLE customers ADD COLUMN late text;\n")
		if tc.tag == "refusals-lost-" {
			files = lost
		}
		ref := pushMigrations(t, tc.tag+e.ns, files)
		e.updateMigration(func(m *v1alpha1.PtahMigration) { m.Spec.Migrations.OCIRef = ref })
		m := e.awaitMigration(tc.what+" refused", converge, func(m *v1alpha1.PtahMigration) bool {
			c := meta.FindStatusCondition(m.Status.Conditions, v1alpha1.ConditionReady)
			return m.Status.ObservedGeneration == m.Generation && m.Status.ActiveOperation == nil && c != nil &&
				c.ObservedGeneration == m.Generation && c.Status == metav1.ConditionFalse && strings.Contains(c.Message, tc.says)
		})
		if m.Status.Plan != nil || m.Status.AppliedVersion != 5 {
			t.Errorf("%s: plan %+v, applied version %d", tc.what, m.Status.Plan, m.Status.AppliedVersion)
		}
		time.Sleep(2 * time.Second) // anything the refusal would start has started
		if h, applies := e.history(), e.jobs("ptah-apply-shop-"); h != "1 2 5" || len(applies) != 1 {
			t.Errorf("%s: history %q, Apply Jobs %v", tc.what, h, names(applies))
		}
	}
	cols := e.query("SELECT string_agg(column_name, ' ') FROM information_schema.columns WHERE table_name = 'customers'")
	if strings.Contains(cols, "late") || strings.Contains(cols, "six") {
		t.Errorf("a refused artifact's migration ran: customers has %s", cols)
	}
	ref := pushMigrations(t, "refusals-ok-"+e.ns, with(applied, "0006_six.up.sql", six))
	e.updateMigration(func(m *v1alpha1.PtahMigration) { m.Spec.Migrations.OCIRef = ref })
	migrated(e, 6)
	if h := e.history(); h != "1 2 5 6" {
		t.Errorf("history %q", h)
	}
}

// TestMigrationAndSchemaOnOneDatabase: a PtahSchema (whose scope is the
// whole database) and a PtahMigration keep one database under Always. The
// schema's plan would drop the migration's table, so it is destructive and
// held by the policy, and the schema says so rather than claim to be in
// sync; it never plans the migration history (ptah's own schema); the
// migration's table, rows and history stay, and the migration is in sync.
func TestMigrationAndSchemaOnOneDatabase(t *testing.T) {
	t.Parallel()
	e := newEnv(t)
	e.schema()
	e.migration(pushMigrations(t, "beside-"+e.ns, map[string]string{
		"0001_ledger.up.sql": "CREATE TABLE ledger (id bigint PRIMARY KEY, amount numeric NOT NULL);\nINSERT INTO ledger VALUES (1, 10);\n",
	}))
	migrated(e, 1)
	// A reading of each after both have run.
	e.update("shop", func(s *v1alpha1.PtahSchema) { s.Spec.Interval = &metav1.Duration{Duration: 31 * time.Second} })
	s := e.await("shop", "Ready=False (PolicyBlocked) after the migration ran", converge, func(s *v1alpha1.PtahSchema) bool {
		return s.Status.ActiveOperation == nil && condition(v1alpha1.ConditionReady, metav1.ConditionFalse, v1alpha1.ReasonPolicyBlocked)(s)
	})
	if holds(s, v1alpha1.ConditionInSync, metav1.ConditionTrue, v1alpha1.ReasonScopedConverged) || s.Status.Plan == nil {
		t.Errorf("the PtahSchema beside the migration's table: plan %+v, %s", s.Status.Plan, conditions(s))
	} else {
		var p v1alpha1.PtahSchemaPlan
		must(t, shared.c.Get(context.Background(), client.ObjectKey{Namespace: e.ns, Name: s.Status.Plan.Name}, &p))
		text := fmt.Sprintf("%+v", p.Spec.Statements)
		if !p.Spec.Destructive || !strings.Contains(text, "ledger") || strings.Contains(text, "migration_revisions") {
			t.Errorf("the PtahSchema's plan (destructive %v): %s", p.Spec.Destructive, text)
		}
	}
	m := reread(e, 31*time.Second, "InSync=True (ScopedConverged)", migrationCondition(v1alpha1.ConditionInSync, metav1.ConditionTrue, v1alpha1.ReasonScopedConverged))
	if m.Status.AppliedVersion != 1 {
		t.Errorf("the migration's applied version %d", m.Status.AppliedVersion)
	}
	if h, n := e.history(), e.query("SELECT count(*)::text FROM ledger"); h != "1" || n != "1" {
		t.Errorf("the migration's history %q, ledger rows %s", h, n)
	}
}

// TestMigrationSuspendedStartsNothing: a suspended migration starts no
// operation, not for a new artifact either; unsuspended, it applies only
// the new version.
func TestMigrationSuspendedStartsNothing(t *testing.T) {
	t.Parallel()
	e := newEnv(t)
	e.migration(pushMigrations(t, "suspended-"+e.ns, migrationsV1))
	migrated(e, 3)
	e.updateMigration(func(m *v1alpha1.PtahMigration) { m.Spec.Suspend = true })
	suspended := func(m *v1alpha1.PtahMigration) bool {
		return m.Status.Phase == v1alpha1.PhaseSuspended && m.Status.ActiveOperation == nil && m.Status.ObservedGeneration == m.Generation &&
			migrationCondition(v1alpha1.ConditionSuspended, metav1.ConditionTrue, v1alpha1.ReasonSuspendedBySpec)(m)
	}
	e.awaitMigration("Suspended", 30*time.Second, suspended)
	before := len(e.jobs("ptah-"))
	ref := pushMigrations(t, "suspended2-"+e.ns, with(migrationsV1, "0004_notes.up.sql", "ALTER TABLE orders ADD COLUMN note text;\n"))
	e.updateMigration(func(m *v1alpha1.PtahMigration) { m.Spec.Migrations.OCIRef = ref })
	e.awaitMigration("Suspended at the new artifact's generation", 30*time.Second, suspended)
	time.Sleep(3 * time.Second) // anything the edit would start has started
	if jobs := e.jobs("ptah-"); len(jobs) != before || e.history() != "1 2 3" {
		t.Errorf("while suspended: Jobs %v (were %d), history %q", names(jobs), before, e.history())
	}
	e.updateMigration(func(m *v1alpha1.PtahMigration) { m.Spec.Suspend = false })
	migrated(e, 4)
	if h, applies := e.history(), e.jobs("ptah-apply-shop-"); h != "1 2 3 4" || len(applies) != 2 {
		t.Errorf("unsuspended: history %q, Apply Jobs %v", h, names(applies))
	}
	e.awaitMigrationEvent(v1alpha1.EventMigrationRunFinished, 10*time.Second, func(msg string) bool {
		return strings.Contains(msg, "Applied: versions 4 committed, from version 3 to 4")
	})
}

// TestMigrationUnresolvedRunOutlivesAForgedAnnotation: while a run is
// unresolved, a user overwrites its annotation copy with a run of another
// operation and acknowledges that one. Nothing is settled: status keeps
// the real run, the copy is put back, and only an acknowledgment of the
// real operation settles it.
func TestMigrationUnresolvedRunOutlivesAForgedAnnotation(t *testing.T) {
	t.Parallel()
	var failing atomic.Bool
	e, m := unresolvedRun(t, &failing)
	real := m.Status.UnresolvedRun.Operation
	awaitCopy(e)
	e.updateMigration(func(m *v1alpha1.PtahMigration) {
		m.Annotations[AnnotationUnresolvedRun] = `{"operation":"forged","attempt":1,"fromVersion":0,"versions":[1,2,3],"reason":"made up"}`
	})
	acknowledge(t, e, "forged", v1alpha1.RunApplied)
	// The next reading's retry passes through the pipeline.
	e.awaitMigrationEvent(v1alpha1.EventOperationRetried, converge, func(msg string) bool { return strings.Contains(msg, "attempt 2") })
	m = awaitCopy(e)
	if m.Status.UnresolvedRun == nil || m.Status.UnresolvedRun.Operation != real {
		t.Fatalf("the forged annotation changed the unresolved run: %+v", m.Status.UnresolvedRun)
	}
	if ev := e.migrationEvents(v1alpha1.EventUnresolvedRunAcknowledged); len(ev) != 0 {
		t.Errorf("an acknowledgment of the forged operation settled something: %q", ev)
	}
	assertNothingPlanned(t, e, m, m.Status.UnresolvedRun.JobName)
	must(t, shared.c.Delete(context.Background(), &v1alpha1.PtahMigrationRunAcknowledgment{ObjectMeta: metav1.ObjectMeta{Name: "settled", Namespace: e.ns}}))
	acknowledge(t, e, real, v1alpha1.RunNotApplied)
	e.awaitMigrationEvent(v1alpha1.EventUnresolvedRunAcknowledged, 30*time.Second, func(msg string) bool { return strings.Contains(msg, real) })
	failing.Store(false)
	migrated(e, 3)
	if h := e.history(); h != "1 2 3" {
		t.Errorf("history %q", h)
	}
}

// TestMigrationNeverWhileTheApplyIsDispatched: the spec is changed to
// policy.apply Never while the manager dispatches an Apply it decided on
// under Always, after it read the spec and before it created the Job: as
// it puts its finalizer on (whose patch answers with the new generation)
// or as it creates the Apply's credential. The interceptor makes the edit
// at that moment, a race that cannot be provoked at will otherwise. No
// Apply Job is created, and the migration ends blocked by the policy with
// nothing applied.
func TestMigrationNeverWhileTheApplyIsDispatched(t *testing.T) {
	t.Parallel()
	for _, at := range []string{"finalizer", "credential"} {
		t.Run("at the "+at, func(t *testing.T) {
			t.Parallel()
			var edited atomic.Bool
			var ns string
			edit := func(ctx context.Context) error {
				var m v1alpha1.PtahMigration
				if err := shared.c.Get(ctx, client.ObjectKey{Namespace: ns, Name: "shop"}, &m); err != nil || edited.Load() ||
					m.Status.ActiveOperation == nil || m.Status.ActiveOperation.Type != v1alpha1.OperationApply {
					return err
				}
				m.Spec.Policy.Apply = v1alpha1.ApplyNever
				if err := shared.c.Update(ctx, &m); err != nil {
					return err
				}
				edited.Store(true)
				return nil
			}
			e := newEnv(t, func(o *envOption) {
				o.migration = func(r *MigrationReconciler) {
					r.Client = interceptor.NewClient(noWatch{r.Client}, interceptor.Funcs{
						Patch: func(ctx context.Context, c client.WithWatch, o client.Object, p client.Patch, opts ...client.PatchOption) error {
							if _, ok := o.(*v1alpha1.PtahMigration); ok && at == "finalizer" {
								if err := edit(ctx); err != nil {
									return err
								}
							}
							return c.Patch(ctx, o, p, opts...)
						},
						Create: func(ctx context.Context, c client.WithWatch, o client.Object, opts ...client.CreateOption) error {
							if _, ok := o.(*corev1.ServiceAccount); ok && at == "credential" {
								if err := edit(ctx); err != nil {
									return err
								}
							}
							return c.Create(ctx, o, opts...)
						},
					})
				}
			})
			ns = e.ns
			e.migration(pushMigrations(t, "racing-"+at+"-"+e.ns, migrationsV1))
			m := e.awaitMigration("Ready=False (PolicyBlocked) after the edit", converge, func(m *v1alpha1.PtahMigration) bool {
				return edited.Load() && m.Status.ActiveOperation == nil && migrationCondition(v1alpha1.ConditionReady, metav1.ConditionFalse, v1alpha1.ReasonPolicyBlocked)(m)
			})
			if h, applies := e.history(), e.jobs("ptah-apply-"); h != "" || len(applies) != 0 {
				t.Errorf("an Apply decided under Always ran after the spec said Never: history %q, Apply Jobs %v", h, names(applies))
			}
			if m.Status.Plan == nil || m.Status.Phase != v1alpha1.PhaseReadyToApply {
				t.Errorf("under Never: phase %s, plan %+v", m.Status.Phase, m.Status.Plan)
			}
		})
	}
}

// TestMigrationUnstampedApprovalIsRefused: where the admission policies do
// not run, an approval can name the plan with no approver; it is refused
// by name and not consumed, and nothing is applied.
func TestMigrationUnstampedApprovalIsRefused(t *testing.T) {
	t.Parallel()
	e := newEnv(t, func(o *envOption) { o.noAdmission = true })
	e.migration(pushMigrations(t, "unstamped-"+e.ns, migrationsV1), func(m *v1alpha1.PtahMigration) { m.Spec.Policy.Apply = v1alpha1.ApplyOnApproval })
	m := e.awaitMigration("ApprovalRequired=True", converge, migrationCondition(v1alpha1.ConditionApprovalRequired, metav1.ConditionTrue, v1alpha1.ReasonAwaitingApproval))
	must(t, shared.c.Create(context.Background(), &v1alpha1.PtahMigrationApproval{ObjectMeta: metav1.ObjectMeta{Name: "unstamped", Namespace: e.ns},
		Spec: v1alpha1.PtahMigrationApprovalSpec{MigrationName: "shop", PlanName: m.Status.Plan.Name, PlanFingerprint: m.Status.Plan.Fingerprint}}))
	e.awaitMigration("the unstamped approval refused", 30*time.Second, func(m *v1alpha1.PtahMigration) bool {
		return migrationCondition(v1alpha1.ConditionApprovalRequired, metav1.ConditionTrue, v1alpha1.ReasonAwaitingApproval)(m) &&
			strings.Contains(conditionMessage(m, v1alpha1.ConditionApprovalRequired), "refused unstamped: no approver stamped by admission")
	})
	if by := consumedBy(t, e, "unstamped"); by != "" || len(e.jobs("ptah-apply-")) != 0 || e.history() != "" {
		t.Errorf("an unstamped approval: consumed by %q, Apply Jobs %v, history %q", by, names(e.jobs("ptah-apply-")), e.history())
	}
}

// TestMigrationEditWhileTheFinalizerIsRemoved: after an Apply, the manager
// removes its finalizer; the spec is changed to a new artifact just before
// that patch reaches the API server (the interceptor makes the edit then),
// so the patch answers with a generation whose spec the manager has not
// read. The new generation is still read and applied, well before the
// interval, and status never records it observed with the old artifact.
func TestMigrationEditWhileTheFinalizerIsRemoved(t *testing.T) {
	t.Parallel()
	var edited atomic.Bool
	var ns, next string
	e := newEnv(t, func(o *envOption) {
		o.migration = func(r *MigrationReconciler) {
			r.Client = interceptor.NewClient(noWatch{r.Client}, interceptor.Funcs{
				Patch: func(ctx context.Context, c client.WithWatch, o client.Object, p client.Patch, opts ...client.PatchOption) error {
					if mo, ok := o.(*v1alpha1.PtahMigration); ok && next != "" && !controllerutil.ContainsFinalizer(mo, FinalizerMigration) && !edited.Load() {
						var m v1alpha1.PtahMigration
						if err := shared.c.Get(ctx, client.ObjectKey{Namespace: ns, Name: "shop"}, &m); err != nil {
							return err
						}
						m.Spec.Migrations.OCIRef = next
						if err := shared.c.Update(ctx, &m); err != nil {
							return err
						}
						edited.Store(true)
					}
					return c.Patch(ctx, o, p, opts...)
				},
			})
		}
	})
	ns = e.ns
	ref := pushMigrations(t, "finalizer-"+e.ns, migrationsV1)
	next = pushMigrations(t, "finalizer2-"+e.ns, with(migrationsV1, "0004_notes.up.sql", "ALTER TABLE orders ADD COLUMN note text;\n"))
	e.migration(ref)
	m := e.awaitMigration("the edit made as the finalizer is removed", converge, func(m *v1alpha1.PtahMigration) bool { return edited.Load() })
	m = migrated(e, 4)
	if m.Spec.Migrations.OCIRef != next || m.Status.Source == nil || !strings.HasSuffix(next, m.Status.Source.ResolvedDigest) {
		t.Errorf("status source %+v for spec %s", m.Status.Source, m.Spec.Migrations.OCIRef)
	}
	if h := e.history(); h != "1 2 3 4" {
		t.Errorf("history %q", h)
	}
}
