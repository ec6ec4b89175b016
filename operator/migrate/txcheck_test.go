package migrate

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"ptah.run/operator/internal/testenv"
	"ptah.run/operator/operator/database"
	"ptah.run/operator/operator/report"
)

// handHashed writes files and a checksum file for them without Hash's
// checks, as an older ptah or a person would have.
func handHashed(t *testing.T, files map[string]string) string {
	t.Helper()
	dir := t.TempDir()
	raw := map[string][]byte{}
	for name, text := range files {
		raw[name] = []byte(text)
		if err := os.WriteFile(filepath.Join(dir, name), []byte(text), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	if err := os.WriteFile(filepath.Join(dir, SumFile), sumOf(raw), 0o644); err != nil {
		t.Fatal(err)
	}
	return dir
}

// writeSum writes dir's checksum file without Hash's checks.
func writeSum(t *testing.T, dir string) {
	t.Helper()
	files, err := sqlFiles(dir)
	if err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(dir, SumFile), sumOf(files), 0o644); err != nil {
		t.Fatal(err)
	}
}

// history renders the revision table as "1 2!" (! for a dirty row), read
// from PostgreSQL.
func history(t *testing.T, db *database.DB) string {
	t.Helper()
	var exists bool
	if err := db.QueryRow(`SELECT to_regclass('ptah.migration_revisions') IS NOT NULL`).Scan(&exists); err != nil {
		t.Fatal(err)
	}
	if !exists {
		return ""
	}
	var s string
	if err := db.QueryRow(`SELECT coalesce(string_agg(version || CASE WHEN dirty THEN '!' ELSE '' END, ' ' ORDER BY version), '') FROM ptah.migration_revisions`).Scan(&s); err != nil {
		t.Fatal(err)
	}
	return s
}

// TestCommitInsideAMigrationCannotCommitHalfOfIt: a file that commits part
// of itself and then fails must not leave that part committed while the
// history says the version was not applied (and a retry applies it again).
func TestCommitInsideAMigrationCannotCommitHalfOfIt(t *testing.T) {
	f := &fixture{pg: testenv.StartPostgres(t)}
	ctx := context.Background()
	db := f.db(t)
	dir := handHashed(t, map[string]string{
		"0001_half.up.sql": "CREATE TABLE half (id int);\nCOMMIT;\nCREATE TABLE other (id int);\nALTER TABLE nosuch ADD COLUMN x int;\n",
	})
	_, err := Up(ctx, db, read(t, dir), UpOptions{LockTimeout: 5 * time.Second})
	if err == nil {
		t.Fatal("up applied a migration that fails")
	}
	tbl, h := tables(t, db), history(t, db)
	if tbl != "" && h == "" {
		t.Fatalf("the history records no version, but the migration committed tables %q: %v", tbl, err)
	}
	e := wantCode(t, err, report.NotTransactional)
	if !strings.Contains(e.Message, "0001_half.up.sql:2: \"COMMIT\"") || !strings.Contains(e.Message, "remove the COMMIT at line 2") {
		t.Fatalf("the refusal does not name the file, line and statement: %s", e.Message)
	}
	if tbl != "" || h != "" {
		t.Fatalf("a refused run left tables %q, history %q", tbl, h)
	}
}

// TestWrappedMigrationRunsInPtahsTransaction: a file wrapped whole in
// BEGIN ... COMMIT (golang-migrate and Flyway habits) runs as its body in
// ptah's own transaction: the history row commits in the same transaction
// as the body, once, and a failing body leaves nothing.
func TestWrappedMigrationRunsInPtahsTransaction(t *testing.T) {
	f := &fixture{pg: testenv.StartPostgres(t)}
	ctx := context.Background()

	db := f.db(t)
	dir := migrations(t, map[string]string{
		"0001_wrapped.up.sql": "-- the usual wrapper\nBEGIN;\nCREATE TABLE wrapped (id int);\nCOMMIT;\n",
		"0002_start.up.sql":   "START TRANSACTION;\nCREATE TABLE started (id int);\nEND;\n",
	})
	r := up(t, db, dir)
	if r.Status != Applied || history(t, db) != "1 2" || tables(t, db) != "started,wrapped" {
		t.Fatalf("report %+v, history %q, tables %q", r, history(t, db), tables(t, db))
	}
	var same bool
	if err := db.QueryRow(`SELECT (SELECT xmin::text FROM pg_class WHERE relname = 'wrapped') = (SELECT xmin::text FROM ptah.migration_revisions WHERE version = 1)`).Scan(&same); err != nil {
		t.Fatal(err)
	}
	if !same {
		t.Fatal("version 1's history row was committed by another transaction than its body: the file's COMMIT ended ptah's transaction")
	}
	if r := up(t, db, dir); r.Status != UpToDate {
		t.Fatalf("second up: %+v", r)
	}

	db = f.db(t)
	dir = migrations(t, map[string]string{
		"0001_wrapped.up.sql": "BEGIN;\nCREATE TABLE wrapped (id int);\n\nALTER TABLE nosuch ADD COLUMN x int;\nCOMMIT;\n",
	})
	r, err := Up(ctx, db, read(t, dir), UpOptions{LockTimeout: 5 * time.Second})
	e := wantCode(t, err, report.Execution)
	if !strings.Contains(e.Message, "0001_wrapped.up.sql:4") {
		t.Fatalf("the line is not the file's: %s", e.Message)
	}
	if r.Status != Failed || tables(t, db) != "" || history(t, db) != "" {
		t.Fatalf("a failing wrapped migration left: status %s, tables %q, history %q", r.Status, tables(t, db), history(t, db))
	}
}

// TestTransactionControlIsRefused: every other transaction-control form is
// refused at hash, by name and line; a directory hashed without the check
// is refused by status and by up before any pending version runs, while an
// applied file is held only to its checksum.
func TestTransactionControlIsRefused(t *testing.T) {
	for _, c := range []struct {
		text, stmt string
		line       int
	}{
		{"CREATE TABLE a (id int);\nCOMMIT;\n", "COMMIT", 2},
		{"CREATE TABLE a (id int);\nEND;\nCREATE TABLE b (id int);\n", "COMMIT", 2},
		{"CREATE TABLE a (id int);\nROLLBACK;\n", "ROLLBACK", 2},
		{"CREATE TABLE a (id int);\nABORT;\n", "ROLLBACK", 2},
		{"CREATE TABLE a (id int);\nBEGIN;\nCREATE TABLE b (id int);\n", "BEGIN", 2},
		{"CREATE TABLE a (id int);\nSAVEPOINT mine;\n", "SAVEPOINT", 2},
		{"CREATE TABLE a (id int);\nRELEASE SAVEPOINT ptah_script;\n", "RELEASE", 2},
		{"CREATE TABLE a (id int);\nROLLBACK TO SAVEPOINT ptah_script;\n", "ROLLBACK TO", 2},
		{"CREATE TABLE a (id int);\nPREPARE TRANSACTION 'mine';\n", "PREPARE TRANSACTION", 2},
		{"CREATE TABLE a (id int);\nCOMMIT PREPARED 'theirs';\n", "COMMIT PREPARED", 2},
		{"CREATE TABLE a (id int);\nROLLBACK PREPARED 'theirs';\n", "ROLLBACK PREPARED", 2},
		{"CREATE TABLE a (id int);\nSET TRANSACTION ISOLATION LEVEL SERIALIZABLE;\n", "SET TRANSACTION", 2},
		{"CREATE TABLE a (id int);\nSET SESSION CHARACTERISTICS AS TRANSACTION READ ONLY;\n", "SET SESSION CHARACTERISTICS", 2},
		{"CREATE TABLE a (id int);\nSET default_transaction_read_only = on;\n", "SET default_transaction_read_only", 2},
		// Not the plain wrapper: options, a chain, a second BEGIN or COMMIT, a BEGIN left open.
		{"CREATE TABLE a (id int);\nBEGIN ISOLATION LEVEL SERIALIZABLE;\nCOMMIT;\n", "BEGIN", 2},
		{"BEGIN;\nCREATE TABLE a (id int);\nCOMMIT AND CHAIN;\n", "BEGIN", 1},
		{"BEGIN;\nCREATE TABLE a (id int);\nCOMMIT;\nCOMMIT;\n", "COMMIT", 3},
		{"BEGIN;\nBEGIN;\nCREATE TABLE a (id int);\nCOMMIT;\n", "BEGIN", 2},
		{"CREATE TABLE a (id int);\nBEGIN;\n", "BEGIN", 2},
	} {
		dir := t.TempDir()
		os.WriteFile(filepath.Join(dir, "0001_tx.up.sql"), []byte(c.text), 0o644)
		_, err := Hash(dir)
		e := wantCode(t, err, report.NotTransactional)
		if !strings.Contains(e.Message, fmt.Sprintf("0001_tx.up.sql:%d:", c.line)) || !strings.Contains(e.Message, fmt.Sprintf("remove the %s at line %d", c.stmt, c.line)) {
			t.Errorf("%q: the refusal does not name line %d and %s: %s", c.text, c.line, c.stmt, e.Message)
		}
		if _, err := os.Stat(filepath.Join(dir, SumFile)); err == nil {
			t.Errorf("%q: hash wrote %s for a refused file", c.text, SumFile)
		}
	}

	f := &fixture{pg: testenv.StartPostgres(t)}
	ctx := context.Background()
	db := f.db(t)
	dir := handHashed(t, map[string]string{
		"0001_first.up.sql":  "CREATE TABLE first (id int);\n",
		"0002_second.up.sql": "CREATE TABLE second (id int);\n",
		"0003_commit.up.sql": "CREATE TABLE third (id int);\nCOMMIT;\nDROP TABLE first;\n",
	})
	st, err := Status(ctx, db, read(t, dir))
	if e := wantCode(t, err, report.NotTransactional); !strings.Contains(e.Message, "migration 3") || st == nil || st.Status != Pending {
		t.Fatalf("status: %+v %v", st, err)
	}
	r, err := Up(ctx, db, read(t, dir), UpOptions{LockTimeout: 5 * time.Second})
	if e := wantCode(t, err, report.NotTransactional); !strings.Contains(e.Message, "nothing was applied") {
		t.Fatalf("up: %s", e.Message)
	}
	if len(r.AppliedNow) != 0 || tables(t, db) != "" || history(t, db) != "" {
		t.Fatalf("versions before the refused one ran: applied %v, tables %q, history %q", versions(r.AppliedNow), tables(t, db), history(t, db))
	}
	// --to below the refused version leaves it out of the run.
	if r, err := Up(ctx, db, read(t, dir), UpOptions{LockTimeout: 5 * time.Second, To: 2}); err != nil || r.Status != Applied || history(t, db) != "1 2" {
		t.Fatalf("up --to 2: %+v %v, history %q", r, err, history(t, db))
	}

	// An applied file (recorded by an older ptah) is held only to its checksum.
	db = f.db(t)
	old := read(t, dir)
	up(t, db, handHashed(t, map[string]string{"0001_first.up.sql": "CREATE TABLE first (id int);\n"}))
	if _, err := db.Exec(`INSERT INTO ptah.migration_revisions (version, name, checksum) VALUES (2, 'second', $1), (3, 'commit', $2)`, old.Migrations[1].Checksum, old.Migrations[2].Checksum); err != nil {
		t.Fatal(err)
	}
	if st, err := Status(ctx, db, old); err != nil || st.Status != UpToDate {
		t.Fatalf("status with the file applied: %+v %v", st, err)
	}
}

// TestDollarQuotedBodiesAreNotRefused: COMMIT in a function or procedure
// body, a DO block, a string or a comment is not a statement of the file. A
// CALL of a procedure that commits fails inside ptah's transaction by
// itself, and rolls back whole.
func TestDollarQuotedBodiesAreNotRefused(t *testing.T) {
	f := &fixture{pg: testenv.StartPostgres(t)}
	ctx := context.Background()
	db := f.db(t)
	dir := migrations(t, map[string]string{
		"0001_bodies.up.sql": `CREATE TABLE log (msg text);
CREATE FUNCTION note() RETURNS void LANGUAGE plpgsql AS $$
BEGIN
  -- COMMIT;
  INSERT INTO log VALUES ('COMMIT; ROLLBACK;');
END
$$;
CREATE PROCEDURE batch() LANGUAGE plpgsql AS $body$
BEGIN
  INSERT INTO log VALUES ('batch');
  COMMIT;
END
$body$;
CREATE FUNCTION one() RETURNS int LANGUAGE sql
BEGIN ATOMIC
  SELECT 1;
END;
DO $$ BEGIN PERFORM note(); END $$;
/* COMMIT; */ SELECT 'ROLLBACK';
`,
	})
	if r := up(t, db, dir); r.Status != Applied || history(t, db) != "1" {
		t.Fatalf("up: %+v", r)
	}
	var n int
	db.QueryRow(`SELECT count(*) FROM log`).Scan(&n)
	if n != 1 {
		t.Fatalf("log has %d rows, want the DO block's one", n)
	}

	dir = migrations(t, with(map[string]string{"0001_bodies.up.sql": read(t, dir).Migrations[0].text}, "0002_call.up.sql", "CREATE TABLE before_call (id int);\nCALL batch();\n"))
	r, err := Up(ctx, db, read(t, dir), UpOptions{LockTimeout: 5 * time.Second})
	e := wantCode(t, err, report.Execution)
	if !strings.Contains(e.Message, "invalid transaction termination") || r.Status != Failed {
		t.Fatalf("CALL of a committing procedure: %+v %s", r, e.Message)
	}
	db.QueryRow(`SELECT count(*) FROM log`).Scan(&n)
	if tables(t, db) != "log" || history(t, db) != "1" || n != 1 {
		t.Fatalf("the failed CALL left tables %q, history %q, %d log rows", tables(t, db), history(t, db), n)
	}
}

// TestStatementsOutsideATransaction: a migration that is one CREATE INDEX
// CONCURRENTLY (or VACUUM) runs on its own between its dirty row and the
// row's clearing; mixed with another statement it is refused at hash; a
// failing build is Failed with its row deleted and names the INVALID index
// it left; a session lost during the build leaves the row dirty.
func TestStatementsOutsideATransaction(t *testing.T) {
	f := &fixture{pg: testenv.StartPostgres(t)}
	ctx := context.Background()
	base := map[string]string{
		"0001_items.up.sql": "CREATE TABLE items (id int, sku text);\nINSERT INTO items VALUES (1, 'a'), (2, 'a');\n",
	}

	db := f.db(t)
	dir := migrations(t, with(with(base, "0002_index.up.sql", "-- built without blocking writes\nCREATE INDEX CONCURRENTLY items_sku ON items (sku);\n"), "0003_vacuum.up.sql", "VACUUM (ANALYZE) items;\n"))
	if r := up(t, db, dir); r.Status != Applied || history(t, db) != "1 2 3" {
		t.Fatalf("up: %+v, history %q", r, history(t, db))
	}
	var valid bool
	if err := db.QueryRow(`SELECT indisvalid FROM pg_index WHERE indexrelid = 'items_sku'::regclass`).Scan(&valid); err != nil || !valid {
		t.Fatalf("items_sku valid %t: %v", valid, err)
	}

	for _, text := range []string{
		"CREATE TABLE more (id int);\nCREATE INDEX CONCURRENTLY items_id ON items (id);\n",
		"CREATE INDEX CONCURRENTLY items_id ON items (id);\nCREATE TABLE more (id int);\n",
		"BEGIN;\nCREATE INDEX CONCURRENTLY items_id ON items (id);\nCOMMIT;\n",
	} {
		d := t.TempDir()
		os.WriteFile(filepath.Join(d, "0002_mixed.up.sql"), []byte(text), 0o644)
		_, err := Hash(d)
		if e := wantCode(t, err, report.NotTransactional); !strings.Contains(e.Message, "CREATE INDEX CONCURRENTLY") || !strings.Contains(e.Message, "0002_mixed.up.sql:") {
			t.Errorf("%q: %s", text, e.Message)
		}
	}
	d := t.TempDir()
	os.WriteFile(filepath.Join(d, "0002_mixed.up.sql"), []byte("CREATE TABLE more (id int);\nDROP INDEX CONCURRENTLY items_sku;\n"), 0o644)
	if _, err := Hash(d); !strings.Contains(wantCode(t, err, report.NotTransactional).Message, "0002_mixed.up.sql:2: DROP INDEX CONCURRENTLY cannot run inside a transaction block, so ptah runs it only as the single statement of a migration; move it to a migration of its own") {
		t.Errorf("mixed DROP INDEX CONCURRENTLY: %v", err)
	}

	// A unique build over duplicates fails; PostgreSQL leaves the index INVALID.
	db = f.db(t)
	dir = migrations(t, with(base, "0002_unique.up.sql", "CREATE UNIQUE INDEX CONCURRENTLY items_sku_unique ON items (sku);\n"))
	r, err := Up(ctx, db, read(t, dir), UpOptions{LockTimeout: 5 * time.Second})
	e := wantCode(t, err, report.Execution)
	if r.Status != Partial || r.FailedVersion.Version != 2 || history(t, db) != "1" || !strings.Contains(e.Message, "INVALID index") || !strings.Contains(e.Message, "0002_unique.up.sql:1") {
		t.Fatalf("a failing concurrent build: %+v, history %q, %s", r, history(t, db), e.Message)
	}
	if err := db.QueryRow(`SELECT indisvalid FROM pg_index WHERE indexrelid = 'items_sku_unique'::regclass`).Scan(&valid); err != nil || valid {
		t.Fatalf("the failed build left no INVALID index (valid %t, %v)", valid, err)
	}

	// The build's session is cut while it waits: whether it finished is unknown.
	db = f.db(t)
	dir = migrations(t, with(base, "0002_index.up.sql", "CREATE INDEX CONCURRENTLY items_sku ON items (sku);\n"))
	up(t, db, migrations(t, base))
	holder, err := db.Conn(ctx)
	if err != nil {
		t.Fatal(err)
	}
	defer holder.Close()
	if _, err := holder.ExecContext(ctx, "BEGIN; LOCK TABLE items IN SHARE UPDATE EXCLUSIVE MODE"); err != nil {
		t.Fatal(err)
	}
	go func() {
		for range 200 {
			var n int
			row := db.QueryRow(`SELECT count(pg_terminate_backend(pid)) FROM pg_stat_activity WHERE query LIKE 'CREATE INDEX CONCURRENTLY%' AND wait_event_type = 'Lock' AND pid <> pg_backend_pid()`)
			if row.Scan(&n) == nil && n > 0 {
				return
			}
			time.Sleep(50 * time.Millisecond)
		}
	}()
	r, err = Up(ctx, db, read(t, dir), UpOptions{LockTimeout: 30 * time.Second})
	wantCode(t, err, report.Connection)
	holder.ExecContext(ctx, "ROLLBACK")
	if r.Status != Unknown || r.FailedVersion.Version != 2 || history(t, db) != "1 2!" {
		t.Fatalf("a cut build: %+v, history %q", r, history(t, db))
	}
}

// TestHashNamesTheLineOfASyntaxError: a file PostgreSQL's parser cannot
// read is refused at hash with its line, counted in characters past
// multi-byte text.
func TestHashNamesTheLineOfASyntaxError(t *testing.T) {
	dir := t.TempDir()
	os.WriteFile(filepath.Join(dir, "0001_bad.up.sql"), []byte("-- déjà vu, naïve café: ünïcödé ✓✓✓✓✓✓✓✓✓✓✓✓✓✓✓✓\nCREATE TABLE a (id int);\nCREATE TABLE b (id int,,);\n"), 0o644)
	_, err := Hash(dir)
	if e := wantCode(t, err, report.Parse); !strings.Contains(e.Message, "0001_bad.up.sql:3: syntax error") {
		t.Fatalf("message: %s", e.Message)
	}
}

// BenchmarkPrepare measures reading a migration with PostgreSQL's parser,
// as status and up do for each pending file (the first call in a process
// also compiles the parser's WebAssembly module).
func BenchmarkPrepare(b *testing.B) {
	m := Migration{path: "0001_b.up.sql", text: "BEGIN;\nCREATE TABLE a (id int);\nCREATE FUNCTION f() RETURNS void LANGUAGE plpgsql AS $$ BEGIN PERFORM 1; END $$;\nCOMMIT;\n"}
	for b.Loop() {
		if _, err := prepare(m); err != nil {
			b.Fatal(err)
		}
	}
}

// TestTheRunDecidesAsTheParser: status and up skip the parser for a text
// without a word that can mark a refused or lone statement. On every form
// the parser refuses or runs alone, in any case and next to comments and
// punctuation, the run's check decides as the parser does; plain DDL is
// not parsed at all, and runs as written.
func TestTheRunDecidesAsTheParser(t *testing.T) {
	forms := []string{
		"CREATE TABLE a (id int);\ncommit;\n", "CREATE TABLE a (id int);/**/End;", "CREATE TABLE a (id int);\nRollBack;\n",
		"CREATE TABLE a (id int);\nabort;\n", "CREATE TABLE a (id int);\nbegin;\n", "CREATE TABLE a (id int);\nstart transaction;\n",
		"CREATE TABLE a (id int);\nSAVEPOINT s;\n", "CREATE TABLE a (id int);\nrelease ptah_script;\n",
		"CREATE TABLE a (id int);\nPREPARE TRANSACTION 'x';\n", "CREATE TABLE a (id int);\nSET LOCAL transaction_isolation = 'serializable';\n",
		"CREATE TABLE a (id int);\nSET \"default_transaction_read_only\" = on;\n",
		"create index concurrently i on a (id)", "CREATE TABLE b (id int);\ndrop index concurrently i;\n", "REINDEX (CONCURRENTLY) TABLE a",
		"REINDEX SYSTEM", "ALTER TABLE p DETACH PARTITION p1 CONCURRENTLY", "vacuum", "CLUSTER", "CREATE DATABASE x", "DROP DATABASE x",
		"ALTER DATABASE x SET TABLESPACE t", "CREATE TABLESPACE t LOCATION '/x'", "DROP TABLESPACE t", "ALTER SYSTEM SET work_mem = '1MB'",
		"DROP SUBSCRIPTION s", "DISCARD ALL",
		// Spelled with Unicode escapes, which only "U&" gives away.
		"CREATE TABLE a (id int);\nSET LOCAL U&\"\\0074ransaction_isolation\" = 'serializable';\n",
		// psql's meta-commands PostgreSQL cannot read.
		"CREATE TABLE a (id int);\n\\set x 1\nSELECT :x;\n", "CREATE TABLE a (id int);\n\\i other.sql\n",
	}
	forms = append(forms, pinnedForms...)
	for _, text := range forms {
		m := Migration{Version: 1, File: "0001_x.up.sql", path: "0001_x.up.sql", text: text}
		want, werr := prepare(m)
		got, gerr := checkPending([]Migration{m})
		if werr == nil && want.mode == inTransaction {
			t.Errorf("%q: the parser neither refuses it nor runs it alone; the form is not one of these", text)
			continue
		}
		switch {
		case (werr == nil) != (gerr == nil):
			t.Errorf("%q: the parser says %v, the run %v", text, werr, gerr)
		case werr == nil && (got[0].mode != want.mode || got[0].text != want.text):
			t.Errorf("%q: the parser runs it %+v, the run %+v", text, want, got[0])
		}
	}
	for _, text := range []string{
		"CREATE TABLE orders (id bigint PRIMARY KEY, committed_at timestamptz, started boolean);\n",
		"ALTER TABLE orders ADD COLUMN note text; -- no special word here\nCREATE INDEX orders_note ON orders (note);\n",
	} {
		got, err := checkPending([]Migration{{Version: 1, File: "0001_x.up.sql", text: text}})
		if err != nil || got[0].mode != inTransaction || got[0].text != text || special.MatchString(text) {
			t.Errorf("%q: plain DDL is checked as %+v, %v", text, got, err)
		}
	}
}

// pinnedForms change, as written, a setting PostgreSQL reads SQL text
// under: each is refused, on line 2 of its file.
var pinnedForms = []string{
	"SET standard_conforming_strings = off",
	"SET standard_conforming_strings TO DEFAULT",
	"RESET standard_conforming_strings",
	"SET LOCAL standard_conforming_strings = off",
	`SET SESSION "Standard_Conforming_Strings" = off`,
	`SET U&"standard\005fconforming_strings" = off`,
	"SET backslash_quote = on",
	"set Backslash_Quote to off",
	"SET client_encoding = 'LATIN1'",
	"SET NAMES 'LATIN1'",
	"RESET client_encoding",
	"RESET ALL",
	"SELECT set_config('standard_conforming_strings', 'off', false)",
	"SELECT pg_catalog.set_config('client_encoding'::text, 'SQL_ASCII', true)",
	`SELECT set_config(E'backslash\137quote', 'on', false)`,
	`SELECT set_config(U&'backslash\005fquote', 'on', false)`,
	`SELECT U&"set\005fconfig"('standard_conforming_strings', 'off', false)`,
	"SELECT set_config('standard_conforming_strings', current_setting('x.y'), false)",
	"INSERT INTO a SELECT length(set_config('STANDARD_CONFORMING_STRINGS', 'off', false))",
	"UPDATE pg_settings SET setting = 'off' WHERE name = 'standard_conforming_strings'",
	"WITH x AS (UPDATE pg_catalog.pg_settings SET setting = 'off' WHERE name = E'standard\\137conforming_strings' RETURNING 1) SELECT 1",
}

// TestPinnedSettingsAreRefused: a file that changes a setting PostgreSQL
// reads SQL text under is refused at hash, naming file, line and
// statement, and by the run's check (special matches each); setting one to
// the pinned value (pg_dump's header does), a function's SET clause, ALTER
// ROLE ... SET and a computed name are not refused.
func TestPinnedSettingsAreRefused(t *testing.T) {
	for _, form := range pinnedForms {
		text := "CREATE TABLE a (id int);\n" + form + ";\n"
		dir := t.TempDir()
		os.WriteFile(filepath.Join(dir, "0001_x.up.sql"), []byte(text), 0o644)
		_, err := Hash(dir)
		e := wantCode(t, err, report.PinnedSetting)
		if !strings.Contains(e.Message, "0001_x.up.sql:2: ") || !strings.Contains(e.Message, "remove the statement at line 2") ||
			!strings.Contains(e.Message, "standard_conforming_strings=on, backslash_quote=safe_encoding, client_encoding=UTF8") {
			t.Errorf("%q: %s", form, e.Message)
		}
		if !special.MatchString(text) {
			t.Errorf("%q: special does not match, the run would not parse it", form)
		}
		if _, err := checkPending([]Migration{{Version: 1, path: "0001_x.up.sql", text: text}}); err == nil || report.AsError(err).Code != report.PinnedSetting {
			t.Errorf("%q: the run's check says %v", form, err)
		}
	}
	e := wantCode(t, func() error {
		_, err := prepare(Migration{path: "x.sql", text: "SELECT 1;\n\n  RESET ALL;"})
		return err
	}(), report.PinnedSetting)
	if want := `x.sql:3: "RESET ALL" resets every setting to the session's default, standard_conforming_strings, backslash_quote and client_encoding included: PostgreSQL reads the text of SQL by these settings, and ptah runs every migration as its parser reads it, under standard_conforming_strings=on, backslash_quote=safe_encoding, client_encoding=UTF8 (set again before each migration); remove the statement at line 3 (write a string with backslash escapes as E'...'; migration files are UTF-8)`; e.Message != want {
		t.Errorf("message:\n%s\nwant\n%s", e.Message, want)
	}
	for _, text := range []string{
		// pg_dump's header.
		"SET statement_timeout = 0;\nSET lock_timeout = 0;\nSET client_encoding = 'UTF8';\nSET standard_conforming_strings = on;\nSELECT pg_catalog.set_config('search_path', '', false);\nSET check_function_bodies = false;\nSET client_min_messages = warning;\n",
		"SET client_encoding TO 'utf-8'; SET NAMES 'UTF8'; SET NAMES 'unicode'; SET backslash_quote = safe_encoding; SET standard_conforming_strings = true;",
		"SELECT set_config('standard_conforming_strings', 'on', true), set_config('search_path', 'x', false);",
		"CREATE FUNCTION f() RETURNS int LANGUAGE sql SET standard_conforming_strings = off AS 'SELECT 1';",
		"ALTER ROLE CURRENT_USER SET standard_conforming_strings = off; ALTER DATABASE postgres SET client_encoding = 'LATIN1';",
		"SELECT set_config(lower('STANDARD_CONFORMING_STRINGS'), 'off', false);",
		"UPDATE settings SET setting = 'off' WHERE name = 'standard_conforming_strings';",
	} {
		if s, err := prepare(Migration{path: "0001_x.up.sql", text: text}); err != nil || s.mode != inTransaction {
			t.Errorf("%q: %v", text, err)
		}
	}
}
