package controller

import (
	"context"
	"database/sql"
	"strings"
	"testing"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	v1alpha1 "ptah.run/operator/operator/api/v1alpha1"
)

// TestConnectionLostMidRunRecordsWhereTheRunBegan: the Apply of versions
// 1, 2 and 3 loses its database session inside version 2's transaction
// (version 1 committed), as when PostgreSQL is stopped in the middle of a
// run (the fault table's row "PostgreSQL stopped / PtahMigration mid-run").
// ptah reports version 2's outcome unknown, and the unresolved run must say
// the run began at version 0, where it did: the person who settles it reads
// "versions 1,2,3 over version 0", not over version 1, the version its
// result moved status to. Then the person does what the stop asks: the
// dirty row of version 2, which rolled back, deleted and the run
// acknowledged Partial up to version 1; the migration converges without
// applying version 1 again.
func TestConnectionLostMidRunRecordsWhereTheRunBegan(t *testing.T) {
	t.Parallel()
	e := newEnv(t)
	db, err := sql.Open("pgx", shared.pg.SuperURL(e.db))
	must(t, err)
	defer db.Close()
	ctx := context.Background()
	gate, err := db.Conn(ctx)
	must(t, err)
	defer gate.Close()
	_, err = gate.ExecContext(ctx, "SELECT pg_advisory_lock(7161, 1)")
	must(t, err)
	files := with(migrationsV1, "0002_orders.up.sql", "CREATE TABLE orders (id bigint PRIMARY KEY, customer_id bigint NOT NULL REFERENCES customers (id));\n"+
		"SET LOCAL lock_timeout = 0;\nSELECT pg_advisory_xact_lock(7161, 1);\n")
	e.migration(pushMigrations(t, "lost-"+e.ns, files))

	// The Apply's session waits at the gate inside version 2; it is cut.
	deadline := time.Now().Add(converge)
	for {
		var n int
		must(t, db.QueryRowContext(ctx, "SELECT count(pg_terminate_backend(pid)) FROM pg_stat_activity WHERE datname = current_database() AND wait_event_type = 'Lock' AND query LIKE '%pg_advisory_xact_lock(7161, 1)%'").Scan(&n))
		if n == 1 {
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("no Apply session waited at version 2's gate; events:\n%s", e.eventLines())
		}
		time.Sleep(200 * time.Millisecond)
	}
	_, err = gate.ExecContext(ctx, "SELECT pg_advisory_unlock(7161, 1)")
	must(t, err)

	m := e.awaitMigration("UnresolvedRun=True (RunOutcomeUnknown), the reading refusing the dirty history", converge, func(m *v1alpha1.PtahMigration) bool {
		return migrationCondition(v1alpha1.ConditionUnresolvedRun, metav1.ConditionTrue, v1alpha1.ReasonRunOutcomeUnknown)(m) &&
			migrationCondition(v1alpha1.ConditionPlanReady, metav1.ConditionFalse, v1alpha1.ReasonAppliedMigrationModified)(m) && m.Status.ActiveOperation == nil
	})
	u := m.Status.UnresolvedRun
	if u == nil || u.FromVersion != 0 || versionList(u.Versions) != "1,2,3" || !strings.Contains(u.Reason, "outcome of version 2 unknown") {
		t.Fatalf("status.unresolvedRun %+v, want versions 1,2,3 over version 0, version 2's outcome unknown", u)
	}
	if msg := conditionMessage(m, v1alpha1.ConditionUnresolvedRun); !strings.Contains(msg, "versions 1,2,3 over version 0") {
		t.Errorf("UnresolvedRun says %q, want the run over version 0, where it began", msg)
	}
	ev := e.awaitMigrationEvent(v1alpha1.EventMigrationRunUncertain, 10*time.Second, nil)
	if !strings.Contains(ev.Message, "versions 1,2,3 over version 0") {
		t.Errorf("MigrationRunUncertain says %q, want the run over version 0, where it began", ev.Message)
	}
	if h := e.history(); h != "1 2!" {
		t.Fatalf("history %q, want version 1 applied and version 2 left dirty", h)
	}
	if got := e.query("SELECT (to_regclass('public.orders') IS NULL)::text"); got != "true" {
		t.Fatalf("version 2's table exists: its transaction committed")
	}

	// The person: version 2 rolled back, its row goes; the run was Partial.
	e.query("WITH d AS (DELETE FROM ptah.migration_revisions WHERE version = 2 AND dirty RETURNING version) SELECT count(*)::text FROM d")
	one := int64(1)
	a := &v1alpha1.PtahMigrationRunAcknowledgment{
		ObjectMeta: metav1.ObjectMeta{Name: "settled", Namespace: e.ns},
		Spec: v1alpha1.PtahMigrationRunAcknowledgmentSpec{MigrationName: "shop", Operation: u.Operation, Outcome: v1alpha1.RunPartial,
			LastCommittedVersion: &one, Note: "orders absent, so version 2 rolled back; its dirty row deleted"},
	}
	must(t, bobClient(t).Create(ctx, a))
	migrated(e, 3)
	if h, n := e.history(), e.query("SELECT count(*)::text FROM audit"); h != "1 2 3" || n != "1" {
		t.Errorf("after the acknowledgment: history %q, version 3 ran %s times", h, n)
	}
}
