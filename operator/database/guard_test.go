package database

import (
	"context"
	"database/sql"
	"strings"
	"testing"
	"time"

	"ptah.run/operator/internal/testenv"
	"ptah.run/operator/operator/catalogread"
	"ptah.run/operator/operator/report"
)

// TestReadOnlySessionRefusesUnreviewedStatements sends a read-only session
// statements that are not catalogread's by every way database/sql has (a
// query, an exec, a prepared statement, in a transaction, on a pinned
// connection): each is refused with an internal error, and the server's
// statement log shows none of them, while a reviewed read goes through.
func TestReadOnlySessionRefusesUnreviewedStatements(t *testing.T) {
	pg := testenv.StartPostgres(t)
	url := pg.CreateDatabase(t, "shop")
	pg.LogStatements(t)
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	db, err := OpenReadOnly(ctx, url, 10*time.Second)
	if err != nil {
		t.Fatal(err)
	}
	defer db.Close()
	const marker = "ptah_unreviewed_marker"
	refused := func(how string, err error) {
		t.Helper()
		if err == nil {
			t.Fatalf("%s: an unreviewed statement was sent", how)
		}
		if e := report.AsError(err); e.Code != report.Internal || !strings.Contains(e.Message, "catalogread") {
			t.Fatalf("%s: want an internal error naming catalogread, got %v", how, err)
		}
	}
	_, err = db.QueryContext(ctx, "SELECT pg_sleep(0) /* "+marker+" */")
	refused("query", err)
	_, err = db.ExecContext(ctx, "SELECT set_config('x.y', '"+marker+"', false)")
	refused("exec", err)
	_, err = db.PrepareContext(ctx, "SELECT '"+marker+"'")
	refused("prepare", err)
	tx, err := db.BeginTx(ctx, &sql.TxOptions{ReadOnly: true})
	if err != nil {
		t.Fatal(err)
	}
	_, err = tx.ExecContext(ctx, "SELECT pg_terminate_backend(1) -- "+marker)
	refused("in a transaction", err)
	tx.Rollback()
	conn, err := db.Conn(ctx)
	if err != nil {
		t.Fatal(err)
	}
	_, err = conn.ExecContext(ctx, "SELECT $1::text", marker)
	refused("on a connection, with an argument", err)
	var exists bool
	if err := conn.QueryRowContext(ctx, catalogread.SchemaExists, "public").Scan(&exists); err != nil || !exists {
		t.Fatalf("a reviewed read: %v %v", exists, err)
	}
	conn.Close()
	pg.SyncLog(t)
	if strings.Contains(pg.Log(), marker) {
		t.Fatalf("the server received an unreviewed statement:\n%s", pg.Log())
	}
	if !strings.Contains(pg.Log(), "pg_namespace WHERE nspname = $1") {
		t.Fatalf("the reviewed read is not in the server's log: the log is not the oracle it is taken for:\n%s", pg.Log())
	}
}
