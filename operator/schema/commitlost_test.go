package schema

import (
	"context"
	"os"
	"strings"
	"testing"
	"time"

	"github.com/jackc/pgx/v5"

	"ptah.run/operator/internal/testenv"
	"ptah.run/operator/operator/database"
	"ptah.run/operator/operator/devdb"
	"ptah.run/operator/operator/report"
)

// TestAnApplyCutOffInCommitSaysItsOutcomeIsUnknown lands a real partition
// between an Apply and its PostgreSQL while the Apply's COMMIT has been
// written on the server and waits for a synchronous standby that never
// connects (the moment a client cannot know the answer). The Apply must
// end within the session bound with outcome_unknown, saying nothing was
// rolled back, because the change did commit: the database, read over its
// unix socket, holds the column.
func TestAnApplyCutOffInCommitSaysItsOutcomeIsUnknown(t *testing.T) {
	if os.Geteuid() != 0 {
		t.Skip("a network partition needs root (ip netns)")
	}
	part := testenv.NewPartition(t)
	pg := testenv.StartPostgres(t, testenv.Behind(part))
	url := pg.CreateDatabase(t, "shop")
	ctx := context.Background()
	local, err := devdb.StartLocal(ctx)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(local.Stop)
	dev, err := local.Open(ctx, 5*time.Second)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(dev.Close)
	const connectTimeout = 2 * time.Second
	db, err := database.Open(ctx, url, connectTimeout)
	if err != nil {
		t.Fatal(err)
	}
	defer db.Close()
	mustApply(t, db, mustPlan(t, db, files(`CREATE TABLE customers (id bigint PRIMARY KEY);`), Options{Dev: dev}), ApplyOptions{})
	p := mustPlan(t, db, files(`CREATE TABLE customers (id bigint PRIMARY KEY, email text);`), Options{Dev: dev})

	watch, err := pgx.Connect(ctx, pg.SocketURL("shop"))
	if err != nil {
		t.Fatalf("watch the server over its unix socket: %v", err)
	}
	defer watch.Close(ctx)
	// The test server commits asynchronously; this database's sessions do not.
	for _, q := range []string{`ALTER DATABASE shop SET synchronous_commit = on`,
		`ALTER SYSTEM SET synchronous_standby_names = 'never_connects'`, `SELECT pg_reload_conf()`} {
		if _, err := watch.Exec(ctx, q); err != nil {
			t.Fatal(err)
		}
	}
	defer func() {
		for _, q := range []string{`ALTER SYSTEM RESET synchronous_standby_names`, `SELECT pg_reload_conf()`} {
			_, _ = watch.Exec(ctx, q)
		}
	}()
	// A session of its own, opened after the settings, which a session
	// reads when it starts.
	writer, err := database.Open(ctx, url, connectTimeout)
	if err != nil {
		t.Fatal(err)
	}
	defer writer.Close()
	done := make(chan error, 1)
	go func() {
		_, err := Apply(ctx, writer, p, ApplyOptions{LockTimeout: 10 * time.Second})
		done <- err
	}()
	deadline := time.Now().Add(30 * time.Second)
	for {
		var n int
		if err := watch.QueryRow(ctx, `SELECT count(*) FROM pg_stat_activity WHERE wait_event = 'SyncRep'`).Scan(&n); err != nil {
			t.Fatal(err)
		}
		if n == 1 {
			break
		}
		select {
		case err := <-done:
			t.Fatalf("the Apply ended before its COMMIT waited: %v", err)
		default:
		}
		if time.Now().After(deadline) {
			t.Fatal("the Apply's COMMIT never waited for the standby")
		}
		time.Sleep(100 * time.Millisecond)
	}
	cut := time.Now()
	part.Cut()
	defer part.Heal()
	bound := database.LostAfter(connectTimeout)
	select {
	case err := <-done:
		t.Logf("the Apply ended %s after the cut (bound %s): %v", time.Since(cut).Round(time.Second), bound, err)
		e := wantCode(t, err, report.OutcomeUnknown)
		if !strings.Contains(e.Message, "whether it did is unknown") || !strings.Contains(e.Message, "lost mid-operation") || strings.Contains(e.Message, "rolled back") || strings.Contains(e.Message, "nothing was applied") {
			t.Errorf("the message must say the outcome is unknown and claim nothing: %s", e.Message)
		}
	case <-time.After(bound + 30*time.Second):
		t.Fatalf("the Apply still waits %s after the cut (bound %s)", bound+30*time.Second, bound)
	}
	// A commit waiting for its standby is not yet visible to others: end
	// the wait, then read what the database holds.
	for _, q := range []string{`ALTER SYSTEM RESET synchronous_standby_names`, `SELECT pg_reload_conf()`} {
		if _, err := watch.Exec(ctx, q); err != nil {
			t.Fatal(err)
		}
	}
	for deadline := time.Now().Add(30 * time.Second); ; time.Sleep(100 * time.Millisecond) {
		var n int
		if err := watch.QueryRow(ctx, `SELECT count(*) FROM pg_stat_activity WHERE wait_event = 'SyncRep'`).Scan(&n); err != nil {
			t.Fatal(err)
		}
		if n == 0 {
			break
		}
		if time.Now().After(deadline) {
			t.Fatal("the commit still waits for its standby 30s after synchronous_standby_names was reset")
		}
	}
	var has bool
	if err := watch.QueryRow(ctx, `SELECT EXISTS (SELECT FROM information_schema.columns WHERE table_name = 'customers' AND column_name = 'email')`).Scan(&has); err != nil {
		t.Fatal(err)
	}
	if !has {
		t.Fatal("the column is not in the database: the COMMIT had not been written, so this test did not reach the moment it is about")
	}
}
