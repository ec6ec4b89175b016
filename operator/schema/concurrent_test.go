package schema

import (
	"context"
	"database/sql"
	"slices"
	"strings"
	"testing"
	"time"

	"ptah.run/operator/operator/database"
	"ptah.run/operator/operator/report"
)

// waitFor polls cond until it holds; it fails the test after a minute,
// which is a bound on a hang, not a measurement.
func waitFor(t *testing.T, what string, cond func() bool) {
	t.Helper()
	deadline := time.Now().Add(time.Minute)
	for !cond() {
		if time.Now().After(deadline) {
			t.Fatalf("never saw %s", what)
		}
		time.Sleep(20 * time.Millisecond)
	}
}

// waitingOnLock reports whether a backend running a statement that starts
// with prefix waits for a lock.
func waitingOnLock(t *testing.T, db *database.DB, prefix string) bool {
	t.Helper()
	var n int
	if err := db.QueryRow(`SELECT count(*) FROM pg_stat_activity WHERE datname = current_database() AND query LIKE $1 || '%' AND wait_event_type = 'Lock'`, prefix).Scan(&n); err != nil {
		t.Fatal(err)
	}
	return n > 0
}

func indexValid(t *testing.T, db *database.DB, name string) (exists, valid bool) {
	t.Helper()
	err := db.QueryRow(`SELECT i.indisvalid FROM pg_index i JOIN pg_class c ON c.oid = i.indexrelid WHERE c.relname = $1`, name).Scan(&valid)
	if err == sql.ErrNoRows {
		return false, false
	}
	if err != nil {
		t.Fatal(err)
	}
	return true, valid
}

const concBase = `CREATE TABLE t (id int PRIMARY KEY, c text);`

// TestConcurrentIndexesLetWritesThrough: with ConcurrentIndexes an index on
// an existing table is built with CREATE INDEX CONCURRENTLY outside the
// plan's transaction, and an INSERT from another session completes while
// the build is in progress (held waiting on an open writer, as PostgreSQL
// makes it wait); the same plan built the blocking way makes that INSERT
// wait for a lock.
func TestConcurrentIndexesLetWritesThrough(t *testing.T) {
	e := newEngine(t)
	desired := files(concBase + `CREATE INDEX t_c_idx ON t (c);`)
	ctx := context.Background()

	t.Run("concurrently", func(t *testing.T) {
		db, _ := e.db(t)
		exec(t, db, concBase+`INSERT INTO t SELECT g, 'v' || g FROM generate_series(1, 100) g`)
		p := mustPlan(t, db, desired, e.o(Options{ConcurrentIndexes: true}))
		if len(p.Statements) != 1 || !p.Statements[0].OutsideTransaction || !strings.HasPrefix(p.Statements[0].SQL, "CREATE INDEX CONCURRENTLY") ||
			slices.Contains(p.Statements[0].Hazards, HazardBuildsIndex) {
			t.Fatalf("plan: %+v", p.Statements)
		}
		// An open writer: the build waits for it before it starts.
		writer, err := db.BeginTx(ctx, nil)
		if err != nil {
			t.Fatal(err)
		}
		defer writer.Rollback()
		if _, err := writer.Exec(`INSERT INTO t VALUES (1000, 'open')`); err != nil {
			t.Fatal(err)
		}
		applied := make(chan error, 1)
		go func() {
			_, err := Apply(ctx, db, p, ApplyOptions{LockTimeout: 2 * time.Minute})
			applied <- err
		}()
		waitFor(t, "the concurrent build waiting on the open writer", func() bool { return waitingOnLock(t, db, "CREATE INDEX CONCURRENTLY") })
		// Another session writes while the build is in progress.
		insCtx, cancel := context.WithTimeout(ctx, time.Minute)
		defer cancel()
		if _, err := db.ExecContext(insCtx, `INSERT INTO t VALUES (1001, 'during the build')`); err != nil {
			t.Fatalf("an INSERT during the concurrent build did not complete: %v", err)
		}
		if !waitingOnLock(t, db, "CREATE INDEX CONCURRENTLY") {
			t.Fatalf("the build was no longer in progress when the INSERT completed; the test proves nothing")
		}
		if err := writer.Commit(); err != nil {
			t.Fatal(err)
		}
		if err := <-applied; err != nil {
			t.Fatalf("apply: %v", err)
		}
		if exists, valid := indexValid(t, db, "t_c_idx"); !exists || !valid {
			t.Fatalf("t_c_idx exists %v valid %v", exists, valid)
		}
		if p := mustPlan(t, db, desired, e.o(Options{ConcurrentIndexes: true})); len(p.Statements) != 0 {
			t.Fatalf("not converged: %+v", p.Statements)
		}
		drop := mustPlan(t, db, files(concBase), e.o(Options{ConcurrentIndexes: true}))
		if len(drop.Statements) != 1 || !strings.HasPrefix(drop.Statements[0].SQL, "DROP INDEX CONCURRENTLY") || !drop.Statements[0].OutsideTransaction || len(drop.Statements[0].Hazards) != 0 {
			t.Fatalf("drop plan: %+v", drop.Statements)
		}
		mustApply(t, db, drop, ApplyOptions{})
		if exists, _ := indexValid(t, db, "t_c_idx"); exists {
			t.Fatalf("t_c_idx still exists")
		}
	})

	t.Run("blocking", func(t *testing.T) {
		db, _ := e.db(t)
		exec(t, db, concBase)
		p := mustPlan(t, db, desired, e.o(Options{}))
		if len(p.Statements) != 1 || p.Statements[0].OutsideTransaction || !slices.Contains(p.Statements[0].Hazards, HazardBuildsIndex) {
			t.Fatalf("plan: %+v", p.Statements)
		}
		writer, err := db.BeginTx(ctx, nil)
		if err != nil {
			t.Fatal(err)
		}
		defer writer.Rollback()
		if _, err := writer.Exec(`INSERT INTO t VALUES (1000, 'open')`); err != nil {
			t.Fatal(err)
		}
		applied := make(chan error, 1)
		go func() {
			_, err := Apply(ctx, db, p, ApplyOptions{LockTimeout: 2 * time.Minute})
			applied <- err
		}()
		waitFor(t, "the build waiting on the open writer", func() bool { return waitingOnLock(t, db, "CREATE INDEX") })
		inserted := make(chan error, 1)
		go func() {
			_, err := db.ExecContext(ctx, `INSERT INTO t VALUES (1001, 'during the build')`)
			inserted <- err
		}()
		waitFor(t, "the INSERT waiting behind the build", func() bool { return waitingOnLock(t, db, "INSERT INTO t VALUES (1001") })
		if err := writer.Commit(); err != nil {
			t.Fatal(err)
		}
		if err := <-applied; err != nil {
			t.Fatalf("apply: %v", err)
		}
		if err := <-inserted; err != nil {
			t.Fatalf("insert: %v", err)
		}
	})
}

// TestFailedConcurrentBuildIsPlannedAgain: a concurrent unique build over
// duplicates fails after the statements before it committed, and leaves
// an invalid index of the desired name and definition. The next plan does
// not take that index for the desired one: it drops it and builds it
// again; drift reports it; once the duplicates are gone the plan converges.
func TestFailedConcurrentBuildIsPlannedAgain(t *testing.T) {
	e := newEngine(t)
	ctx := context.Background()
	db, _ := e.db(t)
	exec(t, db, `CREATE TABLE a (id int);`+concBase+`INSERT INTO t VALUES (1, 'same'), (2, 'same')`)
	desired := files(`CREATE TABLE a (id int, note text);` + concBase + `CREATE UNIQUE INDEX t_c_key ON t (c);`)
	opts := e.o(Options{ConcurrentIndexes: true})
	p := mustPlan(t, db, desired, opts)
	if len(p.Statements) != 2 || p.Statements[0].OutsideTransaction || !p.Statements[1].OutsideTransaction ||
		!slices.Contains(p.Statements[1].Hazards, HazardMayFail) {
		t.Fatalf("plan: %+v", p.Statements)
	}
	_, err := Apply(ctx, db, p, ApplyOptions{LockTimeout: time.Minute})
	if e := wantCode(t, err, report.Execution); !strings.Contains(e.Message, "statements 1 to 1") || !strings.Contains(e.Message, "23505") {
		t.Fatalf("message: %s", e.Message)
	}
	if got := columns(t, db, "a"); got != "id,note" {
		t.Fatalf("the statement before the concurrent build was not committed: a has %q", got)
	}
	if exists, valid := indexValid(t, db, "t_c_key"); !exists || valid {
		t.Fatalf("want an invalid t_c_key left by the failed build; exists %v valid %v", exists, valid)
	}
	for _, concurrently := range []bool{true, false} {
		again := mustPlan(t, db, desired, e.o(Options{ConcurrentIndexes: concurrently}))
		if len(again.Statements) != 2 || !strings.Contains(again.Statements[0].SQL, `DROP INDEX`) || !strings.Contains(again.Statements[0].SQL, "t_c_key") ||
			!strings.Contains(again.Statements[1].SQL, "CREATE UNIQUE INDEX") || again.Statements[0].OutsideTransaction != concurrently {
			t.Fatalf("concurrently=%v: the invalid index is not dropped and built again: %+v", concurrently, again.Statements)
		}
	}
	d, err := ComputeDrift(ctx, db, desired, opts, true)
	if err != nil {
		t.Fatal(err)
	}
	if !d.Drift || d.Categories["index_invalid"] != 1 {
		t.Fatalf("drift: %+v", d)
	}
	exec(t, db, `DELETE FROM t WHERE id = 2`)
	again := mustPlan(t, db, desired, opts)
	if res := mustApply(t, db, again, ApplyOptions{}); !res.Converged {
		t.Fatalf("apply: %+v", res)
	}
	if exists, valid := indexValid(t, db, "t_c_key"); !exists || !valid {
		t.Fatalf("t_c_key exists %v valid %v", exists, valid)
	}
	if p := mustPlan(t, db, desired, opts); len(p.Statements) != 0 {
		t.Fatalf("not converged: %+v", p.Statements)
	}
}

// TestPartlyNonTransactionalPlanRefusals: a plan with a concurrent build
// is refused before anything runs when the schema changed since planning
// or another writer holds the ptah lock.
func TestPartlyNonTransactionalPlanRefusals(t *testing.T) {
	e := newEngine(t)
	ctx := context.Background()
	db, _ := e.db(t)
	exec(t, db, concBase)
	desired := files(concBase + `CREATE INDEX t_c_idx ON t (c);`)
	p := mustPlan(t, db, desired, e.o(Options{ConcurrentIndexes: true}))
	if !p.outsideTransaction() {
		t.Fatalf("plan: %+v", p.Statements)
	}
	holder, err := db.Conn(ctx)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := holder.ExecContext(ctx, "SELECT pg_advisory_lock($1)", database.LockKey); err != nil {
		t.Fatal(err)
	}
	_, err = Apply(ctx, db, p, ApplyOptions{LockTimeout: time.Second})
	wantCode(t, err, report.LockTimeout)
	if _, err := holder.ExecContext(ctx, "SELECT pg_advisory_unlock($1)", database.LockKey); err != nil {
		t.Fatal(err)
	}
	holder.Close()
	exec(t, db, `ALTER TABLE t ADD COLUMN extra int`)
	_, err = Apply(ctx, db, p, ApplyOptions{LockTimeout: time.Second})
	wantCode(t, err, report.StalePlan)
	if exists, _ := indexValid(t, db, "t_c_idx"); exists {
		t.Fatalf("a refused plan built its index")
	}
}
