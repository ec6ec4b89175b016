package database

import (
	"context"
	"os"
	"strings"
	"testing"
	"time"

	"github.com/jackc/pgx/v5"

	"ptah.run/operator/acceptance/testenv"
	"ptah.run/operator/operator/report"
)

// TestASilentServerEndsTheOperationWithinTheBound cuts a real PostgreSQL
// off from its client mid-operation (its network namespace drops every
// packet it sends back: no refusal, no reset) while a read-only session
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
