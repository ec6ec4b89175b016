package controller

import (
	"context"
	"database/sql"
	"fmt"
	"io"
	"net"
	"net/url"
	"strings"
	"sync"
	"testing"
	"time"

	"k8s.io/apimachinery/pkg/api/meta"
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
	ctx := context.Background()
	gate := gatedMigration(t, e, 1, "lost")

	// The Apply's session waits at the gate inside version 2; it is cut.
	deadline := time.Now().Add(converge)
	for {
		var n int
		must(t, gate.QueryRowContext(ctx, "SELECT count(pg_terminate_backend(pid)) FROM pg_stat_activity WHERE datname = current_database() AND wait_event_type = 'Lock' AND query LIKE '%pg_advisory_xact_lock(7161, 1)%'").Scan(&n))
		if n == 1 {
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("no Apply session waited at version 2's gate; events:\n%s", e.eventLines())
		}
		time.Sleep(200 * time.Millisecond)
	}
	_, err := gate.ExecContext(ctx, "SELECT pg_advisory_unlock(7161, 1)")
	must(t, err)

	m := e.awaitMigration("UnresolvedRun=True (RunOutcomeUnknown), the reading refusing the dirty history", converge, func(m *v1alpha1.PtahMigration) bool {
		return migrationCondition(v1alpha1.ConditionUnresolvedRun, metav1.ConditionTrue, v1alpha1.ReasonRunOutcomeUnknown)(m) &&
			migrationCondition(v1alpha1.ConditionPlanReady, metav1.ConditionFalse, v1alpha1.ReasonMigrationRunDirty)(m) && m.Status.ActiveOperation == nil
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

// TestResultDeliveredAcrossAnAPIServerOutage: the API server cannot be
// reached from the Apply's Pod when ptah has finished and the runner
// creates its record, as when the kube-apiserver restarts in the middle of a
// run (the fault table's row "kube-apiserver killed / PtahMigration
// mid-run": its record was refused with 503 while the restarted server did
// not yet serve its custom resources, the Job failed, and the run was
// recorded uncertain though every version had committed). The record is
// sent again until the API server takes it: the run is not uncertain and
// converges through its own result. The shared envtest API server cannot be
// restarted under the tests running beside this one, so the outage is made
// on the Pods' path to it: a relay that drops every connection while cut.
func TestResultDeliveredAcrossAnAPIServerOutage(t *testing.T) {
	t.Parallel()
	u, err := url.Parse(shared.api.Config.Host)
	must(t, err)
	rl := startRelay(t, u.Host)
	e := newEnv(t, func(o *envOption) { o.kubelet.APIServer = rl.addr() })
	ctx := context.Background()
	gate := gatedMigration(t, e, 2, "outage")
	deadline := time.Now().Add(converge)
	for e.query("SELECT count(*)::text FROM pg_stat_activity WHERE datname = current_database() AND wait_event_type = 'Lock' AND query LIKE '%pg_advisory_xact_lock(7161, 2)%'") != "1" {
		if time.Now().After(deadline) {
			t.Fatalf("no Apply session waited at version 2's gate; events:\n%s", e.eventLines())
		}
		time.Sleep(200 * time.Millisecond)
	}
	rl.cut()
	_, err = gate.ExecContext(ctx, "SELECT pg_advisory_unlock(7161, 2)")
	must(t, err)
	// ptah commits the three versions; the runner's record is refused.
	for e.history() != "1 2 3" || rl.dropped() < 3 {
		if time.Now().After(deadline) {
			t.Fatalf("history %q, %d connections dropped: the run did not finish behind the outage", e.history(), rl.dropped())
		}
		time.Sleep(200 * time.Millisecond)
	}
	rl.restore()
	m := migrated(e, 3)
	if got := e.migrationEvents(v1alpha1.EventMigrationRunUncertain); len(got) > 0 {
		t.Errorf("the run was recorded uncertain though its record could be delivered after the outage: %v", got)
	}
	if c := meta.FindStatusCondition(m.Status.Conditions, v1alpha1.ConditionUnresolvedRun); c != nil && c.Status == metav1.ConditionTrue {
		t.Errorf("UnresolvedRun=True: %s", c.Message)
	}
	finished := e.migrationEvents(v1alpha1.EventMigrationRunFinished)
	if len(finished) != 1 || !strings.Contains(finished[0], "Applied: versions 1,2,3 committed, from version 0 to 3") {
		t.Errorf("MigrationRunFinished: %v, want the Apply's own result, versions 1,2,3", finished)
	}
	if n := e.query("SELECT count(*)::text FROM audit"); n != "1" {
		t.Errorf("version 3 ran %s times", n)
	}
}

// relay forwards TCP connections to target; cut drops every connection,
// open or new, until restore.
type relay struct {
	ln     net.Listener
	target string
	mu     sync.Mutex
	down   bool
	open   map[net.Conn]bool
	drops  int
}

func startRelay(t *testing.T, target string) *relay {
	t.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	must(t, err)
	r := &relay{ln: ln, target: target, open: map[net.Conn]bool{}}
	t.Cleanup(func() { ln.Close() })
	go func() {
		for {
			c, err := ln.Accept()
			if err != nil {
				return
			}
			go r.serve(c)
		}
	}()
	return r
}

func (r *relay) addr() string { return r.ln.Addr().String() }

func (r *relay) serve(c net.Conn) {
	r.mu.Lock()
	if r.down {
		r.drops++
		r.mu.Unlock()
		c.Close()
		return
	}
	r.mu.Unlock()
	up, err := net.Dial("tcp", r.target)
	if err != nil {
		c.Close()
		return
	}
	r.mu.Lock()
	r.open[c], r.open[up] = true, true
	r.mu.Unlock()
	go func() { io.Copy(up, c); up.Close() }()
	io.Copy(c, up)
	c.Close()
	r.mu.Lock()
	delete(r.open, c)
	delete(r.open, up)
	r.mu.Unlock()
}

func (r *relay) cut() {
	r.mu.Lock()
	defer r.mu.Unlock()
	r.down = true
	for c := range r.open {
		c.Close()
	}
}

func (r *relay) restore() {
	r.mu.Lock()
	defer r.mu.Unlock()
	r.down = false
}

func (r *relay) dropped() int {
	r.mu.Lock()
	defer r.mu.Unlock()
	return r.drops
}

// gatedMigration holds advisory lock (7161, key) on a session of its own and
// creates the migration of migrationsV1 whose version 2 waits for that lock
// inside its transaction; the returned session releases it.
func gatedMigration(t *testing.T, e *env, key int, name string) *sql.Conn {
	t.Helper()
	ctx := context.Background()
	db, err := sql.Open("pgx", shared.pg.SuperURL(e.db))
	must(t, err)
	t.Cleanup(func() { db.Close() })
	gate, err := db.Conn(ctx)
	must(t, err)
	t.Cleanup(func() { gate.Close() })
	_, err = gate.ExecContext(ctx, "SELECT pg_advisory_lock(7161, $1)", key)
	must(t, err)
	files := with(migrationsV1, "0002_orders.up.sql", fmt.Sprintf("CREATE TABLE orders (id bigint PRIMARY KEY, customer_id bigint NOT NULL REFERENCES customers (id));\n"+
		"SET LOCAL lock_timeout = 0;\nSELECT pg_advisory_xact_lock(7161, %d);\n", key))
	e.migration(pushMigrations(t, name+"-"+e.ns, files))
	return gate
}
