package migrate

import (
	"context"
	"fmt"
	"io"
	"os"
	"strings"
	"testing"
	"time"

	"github.com/jackc/pgx/v5"

	"ptah.run/operator/internal/testenv"
	"ptah.run/operator/operator/database"
)

// logPrefix starts every line PostgreSQL logs, naming the database; a line
// of a logged statement's text that follows a newline starts with a tab.
const logPrefix = "@@@%d@@@ "

// loggedServer is a PostgreSQL 15 logging every statement it is sent, each
// test case on a database of its own, the log read as the oracle.
type loggedServer struct {
	pg    *testenv.Postgres
	super *pgx.Conn
	n     int
}

func startLogged(t testing.TB) *loggedServer {
	t.Helper()
	pg := testenv.StartPostgres(t, testenv.Settings("log_statement=all", "log_line_prefix="+logPrefix, "log_min_error_statement=error"))
	ctx := context.Background()
	super, err := pgx.Connect(ctx, pg.SuperURL("postgres"))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { super.Close(ctx) })
	password := "owner-pw"
	if _, err := super.Exec(ctx, "CREATE ROLE owner LOGIN PASSWORD '"+password+"'"); err != nil {
		t.Fatal(err)
	}
	return &loggedServer{pg: pg, super: super}
}

// plantedRows are the rows of the table every case starts with, written
// before its migrations run: a failed version must leave them as they are.
const plantedRows = "1:one,2:two,3:three"

// caseDB is one case's database, owned by the role "owner", holding the
// planted table; settings are the database's defaults (ALTER DATABASE ...
// SET), which a session starts with.
type caseDB struct {
	*database.DB
	name string
	srv  *loggedServer
}

func (s *loggedServer) db(t fataler, settings ...string) *caseDB {
	t.Helper()
	ctx := context.Background()
	s.n++
	name := fmt.Sprintf("c%d", s.n)
	if _, err := s.super.Exec(ctx, "CREATE DATABASE "+name+" OWNER owner"); err != nil {
		t.Fatal(err)
	}
	for _, kv := range settings {
		k, v, _ := strings.Cut(kv, "=")
		if _, err := s.super.Exec(ctx, fmt.Sprintf("ALTER DATABASE %s SET %s = '%s'", name, k, v)); err != nil {
			t.Fatal(err)
		}
	}
	db, err := database.Open(ctx, s.pg.URL("owner", "owner-pw", name), 5*time.Second)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := db.Exec("CREATE TABLE planted (id int PRIMARY KEY, note text NOT NULL); INSERT INTO planted VALUES (1, 'one'), (2, 'two'), (3, 'three')"); err != nil {
		t.Fatal(err)
	}
	c := &caseDB{DB: db, name: name, srv: s}
	return c
}

// drop removes the case's database (the long generator run makes
// thousands).
func (c *caseDB) drop(t fataler) {
	c.Close()
	if _, err := c.srv.super.Exec(context.Background(), "DROP DATABASE "+c.name+" WITH (FORCE)"); err != nil {
		t.Fatal(err)
	}
}

// logSize is where the log ends now: what a run logs comes after it.
func (s *loggedServer) logSize(t fataler) int64 {
	fi, err := os.Stat(s.pg.LogFile)
	if err != nil {
		t.Fatal(err)
	}
	return fi.Size()
}

// logEntry is one message PostgreSQL logged for a database: its level
// (LOG, ERROR, STATEMENT, DETAIL ...) and text, lines joined by "\n".
type logEntry struct{ level, text string }

// entries reads the log from offset, the entries of database db.
func (s *loggedServer) entries(t fataler, db string, offset int64) []logEntry {
	t.Helper()
	f, err := os.Open(s.pg.LogFile)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	if _, err := f.Seek(offset, io.SeekStart); err != nil {
		t.Fatal(err)
	}
	b, err := io.ReadAll(f)
	if err != nil {
		t.Fatal(err)
	}
	var out []logEntry
	mine := false
	for _, line := range strings.Split(string(b), "\n") {
		switch {
		case strings.HasPrefix(line, "@@@"):
			rest := line[3:]
			name, msg, ok := strings.Cut(rest, "@@@ ")
			mine = ok && name == db
			if !mine {
				continue
			}
			level, text, _ := strings.Cut(msg, ":  ")
			out = append(out, logEntry{level: level, text: text})
		case strings.HasPrefix(line, "\t") && mine && len(out) > 0:
			out[len(out)-1].text += "\n" + line[1:]
		}
	}
	return out
}

// sent is what the session sent, as the log says: each simple-protocol
// Query ("statement: ...") and extended-protocol execution ("execute
// NAME: ..."), and each error ("ERROR: message") with the statement it
// was raised in, when PostgreSQL could not log it before (a syntax error).
type sentItem struct {
	kind string // "query", "execute" or "error"
	text string // the SQL sent, or the error's message
	stmt string // for an error: the statement PostgreSQL names
}

func sentOf(entries []logEntry) []sentItem {
	var out []sentItem
	for _, e := range entries {
		switch {
		case e.level == "LOG" && strings.HasPrefix(e.text, "statement: "):
			out = append(out, sentItem{kind: "query", text: strings.TrimPrefix(e.text, "statement: ")})
		case e.level == "LOG" && strings.HasPrefix(e.text, "execute "):
			_, sql, _ := strings.Cut(e.text, ": ")
			out = append(out, sentItem{kind: "execute", text: sql})
		case e.level == "ERROR" || e.level == "FATAL":
			out = append(out, sentItem{kind: "error", text: e.text})
		case e.level == "STATEMENT" && len(out) > 0 && out[len(out)-1].kind == "error":
			out[len(out)-1].stmt = e.text
		}
	}
	return out
}

// transactionWarnings are the warnings PostgreSQL logs when a
// transaction-control statement finds none, or one, open: after a COMMIT
// inside a script, ptah's own ROLLBACK or COMMIT warns so.
func transactionWarnings(entries []logEntry) error {
	for _, e := range entries {
		if e.level == "WARNING" && strings.Contains(e.text, "transaction in progress") {
			return fmt.Errorf("PostgreSQL warned %q: a transaction ended where ptah did not end it", e.text)
		}
	}
	return nil
}

// ptahsOwn are the statements ptah sends around the migrations: a refused
// run sends only these.
var ptahsOwn = []string{
	"-- ping", "SELECT set_config('lock_timeout', $1, $2)", "SELECT pg_advisory_lock(", "SELECT pg_advisory_unlock(",
	"CREATE SCHEMA IF NOT EXISTS ptah", "CREATE TABLE IF NOT EXISTS ptah.migration_revisions ",
	"SELECT to_regclass(", "SELECT version, name, checksum, applied_at, dirty FROM ptah.migration_revisions",
}

// refusedBeforeRunning checks that the log shows nothing of any migration:
// only ptah's reading of the history.
func refusedBeforeRunning(items []sentItem) error {
	for _, it := range items {
		own := false
		for _, p := range ptahsOwn {
			own = own || strings.HasPrefix(it.text, p)
		}
		if !own {
			return fmt.Errorf("a refused run sent %s %q", it.kind, it.text)
		}
	}
	return nil
}

// transaction is what the log shows of one version's run.
type transaction struct {
	end   string // COMMIT or ROLLBACK
	error string // the error PostgreSQL raised in it, if any
}

// transactions cuts the log into the versions' runs, and checks each is
// exactly: the pinning, the dirty row's INSERT, BEGIN, the script (texts[i],
// in one statement), then the row's UPDATE and COMMIT, or an error and
// ROLLBACK and the row's DELETE. Nothing but ptah's reading of the history
// is outside them.
func transactions(items []sentItem, texts []string) ([]transaction, error) {
	var out []transaction
	i := 0
	next := func() (sentItem, bool) {
		if i >= len(items) {
			return sentItem{}, false
		}
		i++
		return items[i-1], true
	}
	for v, text := range texts {
		// Up to the pinning: ptah's reading of the history only.
		for {
			it, ok := next()
			if !ok {
				return out, fmt.Errorf("version %d: the log ends before its run (%d runs seen)", v+1, len(out))
			}
			if it.kind == "query" && strings.HasPrefix(it.text, "SET standard_conforming_strings = 'on'; SET backslash_quote = 'safe_encoding'; SET client_encoding = 'UTF8'") {
				break
			}
			if err := refusedBeforeRunning([]sentItem{it}); err != nil {
				return out, fmt.Errorf("version %d: before its run: %v", v+1, err)
			}
		}
		if it, _ := next(); it.kind != "execute" || !strings.HasPrefix(it.text, "INSERT INTO ptah.migration_revisions ") {
			return out, fmt.Errorf("version %d: after the pinning, %s %q, not the dirty row's INSERT", v+1, it.kind, it.text)
		}
		if it, _ := next(); it.kind != "query" || it.text != "BEGIN" {
			return out, fmt.Errorf("version %d: after the dirty row, %s %q, not BEGIN", v+1, it.kind, it.text)
		}
		var tx transaction
		it, _ := next()
		switch {
		case it.kind == "query" && it.text == text:
		case it.kind == "error" && it.stmt == text: // a syntax error: PostgreSQL did not log it before
			tx.error = it.text
		default:
			return out, fmt.Errorf("version %d: after BEGIN, %s %q, not its script in one statement (%q)", v+1, it.kind, it.text, text)
		}
		if tx.error == "" {
			if peek, ok := next(); ok && peek.kind == "error" && peek.stmt == text {
				tx.error = peek.text
			} else if ok {
				i--
			}
		}
		if tx.error == "" {
			if it, _ := next(); it.kind != "execute" || !strings.HasPrefix(it.text, "UPDATE ptah.migration_revisions SET dirty = false") {
				return out, fmt.Errorf("version %d: after its script, %s %q, not the row's UPDATE", v+1, it.kind, it.text)
			}
			it, _ := next()
			if it.kind == "error" { // raised at COMMIT (a deferred constraint)
				tx.error = it.text
				if it.stmt != "COMMIT" {
					return out, fmt.Errorf("version %d: error %q raised in %q after its UPDATE", v+1, it.text, it.stmt)
				}
				tx.end = "ROLLBACK"
			} else if it.kind != "query" || it.text != "COMMIT" {
				return out, fmt.Errorf("version %d: after the row's UPDATE, %s %q, not COMMIT", v+1, it.kind, it.text)
			} else {
				tx.end = "COMMIT"
				if peek, ok := next(); ok && peek.kind == "error" && peek.stmt == "COMMIT" {
					tx.error, tx.end = peek.text, "ROLLBACK"
				} else if ok {
					i--
				}
			}
		} else {
			if it, _ := next(); it.kind != "query" || it.text != "ROLLBACK" {
				return out, fmt.Errorf("version %d: after the error %q, %s %q, not ROLLBACK", v+1, tx.error, it.kind, it.text)
			}
			tx.end = "ROLLBACK"
		}
		if tx.end == "ROLLBACK" {
			if it, _ := next(); it.kind != "execute" || !strings.HasPrefix(it.text, "DELETE FROM ptah.migration_revisions ") {
				return out, fmt.Errorf("version %d: after ROLLBACK, %s %q, not the row's DELETE", v+1, it.kind, it.text)
			}
		}
		out = append(out, tx)
		if tx.end == "ROLLBACK" {
			break // the run stops at a failed version
		}
	}
	if err := refusedBeforeRunning(items[i:]); err != nil {
		return out, fmt.Errorf("after the runs: %v", err)
	}
	return out, nil
}

// rows renders a case's planted table, "id:note,...".
func (c *caseDB) rows(t fataler) string {
	t.Helper()
	var s string
	if err := c.QueryRow(`SELECT string_agg(id || ':' || note, ',' ORDER BY id) FROM planted`).Scan(&s); err != nil {
		t.Fatal(err)
	}
	return s
}

// objects lists what exists in the case's database besides the planted
// table and ptah's history: relations, functions, procedures and types.
func (c *caseDB) objects(t fataler) string {
	t.Helper()
	var s string
	if err := c.QueryRow(`SELECT coalesce(string_agg(what, ',' ORDER BY what), '') FROM (
		SELECT 'relation ' || relname AS what FROM pg_class WHERE relnamespace = 'public'::regnamespace AND relname NOT IN ('planted', 'planted_pkey')
		UNION ALL SELECT 'function ' || proname FROM pg_proc WHERE pronamespace = 'public'::regnamespace
		UNION ALL SELECT 'type ' || typname FROM pg_type WHERE typnamespace = 'public'::regnamespace AND typrelid = 0 AND typelem = 0) o`).Scan(&s); err != nil {
		t.Fatal(err)
	}
	return s
}

// history renders the case's revision table as "1 2!" (! for dirty).
func (c *caseDB) history(t fataler) string {
	t.Helper()
	var s string
	if err := c.QueryRow(`SELECT coalesce(string_agg(version || CASE WHEN dirty THEN '!' ELSE '' END, ' ' ORDER BY version), '') FROM ptah.migration_revisions WHERE to_regclass('ptah.migration_revisions') IS NOT NULL`).Scan(&s); err != nil {
		if strings.Contains(err.Error(), "does not exist") {
			return ""
		}
		t.Fatal(err)
	}
	return s
}

// fataler is what the helpers need of a *testing.T or a *rapid.T.
type fataler interface {
	Helper()
	Fatal(args ...any)
	Fatalf(format string, args ...any)
}
