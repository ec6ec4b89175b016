package database

import (
	"context"
	"os"
	"strings"
	"testing"
	"time"

	"github.com/jackc/pgx/v5"

	"ptah.run/operator/internal/testenv"
	"ptah.run/operator/operator/report"
)

// TestASilentServerEndsTheOperationWithinTheBound cuts a real PostgreSQL
// off from its client mid-operation (its network namespace's link taken
// down: every packet dropped both ways, no refusal, no reset) while a read-only session
// waits on the server for the ptah writer lock, as migrations status does.
// The wait ends with a connection_lost error saying the connection was lost,
// within LostAfter(connect timeout) and some slack, rather than when the
// Job's deadline would end it; after the partition heals, a new session
// works.
func TestASilentServerEndsTheOperationWithinTheBound(t *testing.T) {
	if os.Geteuid() != 0 {
		t.Skip("a network partition needs root (ip netns)")
	}
	part := testenv.NewPartition(t)
	pg := testenv.StartPostgres(t, testenv.Behind(part))
	url := pg.CreateDatabase(t, "shop")
	ctx := context.Background()
	holder, err := pgx.Connect(ctx, url)
	if err != nil {
		t.Fatal(err)
	}
	defer holder.Close(ctx)
	if _, err := holder.Exec(ctx, "SELECT pg_advisory_lock($1)", LockKey); err != nil {
		t.Fatal(err)
	}
	const connectTimeout = 2 * time.Second
	db, err := OpenReadOnly(ctx, url, connectTimeout)
	if err != nil {
		t.Fatal(err)
	}
	defer db.Close()
	conn, err := db.Conn(ctx)
	if err != nil {
		t.Fatal(err)
	}
	done := make(chan error, 1)
	go func() { done <- LockSession(ctx, conn, db.Target, time.Hour) }()
	time.Sleep(time.Second)
	select {
	case err := <-done:
		t.Fatalf("the lock wait ended before the partition: %v", err)
	default:
	}
	cut := time.Now()
	part.Cut()
	bound := LostAfter(connectTimeout)
	select {
	case err := <-done:
		took := time.Since(cut)
		t.Logf("the lock wait ended %s after the cut (bound %s): %v", took.Round(time.Second), bound, err)
		e := report.AsError(err)
		if e.Code != report.ConnectionLost || !strings.Contains(e.Message, "lost mid-operation") {
			t.Fatalf("want a connection_lost error saying the connection was lost mid-operation, got %v", err)
		}
	case <-time.After(bound + 30*time.Second):
		t.Fatalf("the lock wait still hangs %s after the server went silent (bound %s)", bound+30*time.Second, bound)
	}
	conn.Close()
	part.Heal()
	// holder's session is gone with the partition or not: the server is
	// what must answer again.
	again, err := OpenReadOnly(ctx, url, connectTimeout)
	if err != nil {
		t.Fatalf("after the partition healed: %v", err)
	}
	again.Close()
}

// TestAClientCutOffMidTransactionIsEndedByTheServer holds a writer's
// transaction open on a real PostgreSQL (a table locked, the session idle
// in transaction, as an Apply is between two statements or after its lock
// wait ends) and cuts the server off from the client. The server must end
// that backend within LostAfter(connect timeout) and some slack, so its
// transaction rolls back and its lock is released, rather than hold the
// lock until the server's kernel gives up on the peer (two hours by
// default). The server is watched over its unix socket, which the
// partition does not cut.
func TestAClientCutOffMidTransactionIsEndedByTheServer(t *testing.T) {
	if os.Geteuid() != 0 {
		t.Skip("a network partition needs root (ip netns)")
	}
	part := testenv.NewPartition(t)
	pg := testenv.StartPostgres(t, testenv.Behind(part))
	url := pg.CreateDatabase(t, "shop")
	ctx := context.Background()
	const connectTimeout = 2 * time.Second
	db, err := Open(ctx, url, connectTimeout)
	if err != nil {
		t.Fatal(err)
	}
	defer db.Close()
	conn, err := db.Conn(ctx)
	if err != nil {
		t.Fatal(err)
	}
	defer conn.Close()
	var pid int
	for _, q := range []string{"CREATE TABLE customers (id int)", "BEGIN", "LOCK TABLE customers IN ACCESS EXCLUSIVE MODE"} {
		if _, err := conn.ExecContext(ctx, q); err != nil {
			t.Fatalf("%s: %v", q, err)
		}
	}
	if err := conn.QueryRowContext(ctx, "SELECT pg_backend_pid()").Scan(&pid); err != nil {
		t.Fatal(err)
	}
	watch, err := pgx.Connect(ctx, pg.SocketURL("shop"))
	if err != nil {
		t.Fatalf("watch the server over its unix socket: %v", err)
	}
	defer watch.Close(ctx)
	alive := func() bool {
		var n int
		if err := watch.QueryRow(ctx, "SELECT count(*) FROM pg_stat_activity WHERE pid = $1", pid).Scan(&n); err != nil {
			t.Fatal(err)
		}
		return n == 1
	}
	if !alive() {
		t.Fatalf("backend %d is not in pg_stat_activity before the cut", pid)
	}
	cut := time.Now()
	part.Cut()
	defer part.Heal()
	bound := LostAfter(connectTimeout)
	for alive() {
		if time.Since(cut) > bound+30*time.Second {
			t.Fatalf("the backend of the cut-off session still holds its transaction %s after the cut (bound %s)", time.Since(cut).Round(time.Second), bound)
		}
		time.Sleep(500 * time.Millisecond)
	}
	t.Logf("the server ended the cut-off session %s after the cut (bound %s)", time.Since(cut).Round(time.Second), bound)
	// Its lock went with it: another session takes it at once.
	tx, err := watch.Begin(ctx)
	if err != nil {
		t.Fatal(err)
	}
	defer tx.Rollback(ctx)
	if _, err := tx.Exec(ctx, "SET LOCAL lock_timeout = '1s'; LOCK TABLE customers IN ACCESS EXCLUSIVE MODE"); err != nil {
		t.Fatalf("the cut-off session's lock is still held: %v", err)
	}
}
