package devdb_test

import (
	"context"
	"errors"
	"fmt"
	"net/url"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/jackc/pgx/v5"

	"ptah.run/operator/internal/testenv"
	"ptah.run/operator/operator/database"
	"ptah.run/operator/operator/devdb"
	"ptah.run/operator/operator/report"
	"ptah.run/operator/operator/schema"
)

// devServer is a dev server under test: url is what ptah is given, inspect
// reads the server's catalog (as its superuser where one can log in, else
// as ptah's own role), and control runs SQL with the dev URL's privileges.
type devServer struct {
	name, url, inspect string
	// super: inspect is a superuser, so pg_file_settings (ALTER SYSTEM's
	// file) is read too.
	super bool
}

// devServers are the three kinds of dev server desired SQL meets: a second
// server on the same host reached as its superuser, the same reached as a
// role with only CREATEDB and CREATEROLE, and the throwaway server of
// --dev-throwaway. The operator's sidecar runs the very script StartLocal
// runs (devdb.Script, server.sh), so the throwaway case covers it too.
func devServers(t *testing.T) []devServer {
	t.Helper()
	pg := testenv.StartPostgres(t)
	owner := pg.CreateDatabase(t, "devowner")
	pg.Exec(t, "postgres", "ALTER ROLE devowner CREATEDB CREATEROLE")
	local, err := devdb.StartLocal(context.Background())
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(local.Stop)
	return []devServer{
		{name: "superuser dev URL", url: pg.SuperURL("postgres"), inspect: pg.SuperURL("postgres"), super: true},
		{name: "CREATEDB CREATEROLE dev URL", url: owner, inspect: pg.SuperURL("postgres"), super: true},
		{name: "throwaway (and sidecar) server", url: local.URL, inspect: local.URL},
	}
}

// victim is the target: a database of its own server, seeded with rows.
type victim struct {
	pg *testenv.Postgres
	db *database.DB
}

func newVictim(t *testing.T) *victim {
	t.Helper()
	pg := testenv.StartPostgres(t)
	u := pg.CreateDatabase(t, "victim")
	pg.SeedVictim(t, "victim", "victim")
	db, err := database.OpenReadOnly(context.Background(), u, 5*time.Second)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { db.Close() })
	return &victim{pg: pg, db: db}
}

// markerDir is a directory the dev server's system user may write in: a
// file appears in it only if desired SQL reached the server's filesystem.
func markerDir(t *testing.T) string {
	t.Helper()
	dir, err := os.MkdirTemp("", "ptah-escape-")
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { os.RemoveAll(dir) })
	if err := os.Chmod(dir, 0o777); err != nil {
		t.Fatal(err)
	}
	return dir
}

func filesIn(t testing.TB, dir string) []string {
	t.Helper()
	entries, err := os.ReadDir(dir)
	if err != nil {
		t.Fatal(err)
	}
	var names []string
	for _, e := range entries {
		names = append(names, e.Name())
	}
	return names
}

// devState is what desired SQL may not change on the dev server: its
// roles with their attributes, memberships, databases, per-role and
// per-database settings and, read as the superuser, ALTER SYSTEM's file.
func devState(t testing.TB, d devServer) string {
	t.Helper()
	s := readDevState(t, d)
	if !strings.Contains(s, "superusers postgres\n") {
		t.Fatalf("%s: postgres is not the one superuser:\n%s", d.name, s)
	}
	return s
}

// readDevState is devState without its check of the superusers.
func readDevState(t testing.TB, d devServer) string {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	conn, err := pgx.Connect(ctx, d.inspect)
	if err != nil {
		t.Fatalf("inspect %s: %v", d.name, err)
	}
	defer conn.Close(context.Background())
	qs := []string{
		`SELECT string_agg(format('role %s super=%s login=%s createrole=%s createdb=%s repl=%s bypassrls=%s inherit=%s connlimit=%s',
			rolname, rolsuper, rolcanlogin, rolcreaterole, rolcreatedb, rolreplication, rolbypassrls, rolinherit, rolconnlimit), E'\n' ORDER BY rolname) FROM pg_roles`,
		`SELECT coalesce(string_agg(format('member %s of %s', member::regrole, roleid::regrole), E'\n' ORDER BY member::regrole::text, roleid::regrole::text), '') FROM pg_auth_members`,
		`SELECT string_agg(format('database %s owner=%s acl=%s conns=%s allow=%s', datname, datdba::regrole, datacl, datconnlimit, datallowconn), E'\n' ORDER BY datname) FROM pg_database`,
		`SELECT coalesce(string_agg(format('setting %s %s %s', setdatabase, setrole, setconfig), E'\n' ORDER BY setdatabase, setrole), '') FROM pg_db_role_setting`,
		`SELECT format('superusers %s', string_agg(rolname, ',' ORDER BY rolname)) FROM pg_roles WHERE rolsuper`,
	}
	if d.super {
		qs = append(qs, `SELECT coalesce(string_agg(format('auto.conf %s=%s', name, setting), E'\n' ORDER BY name), '') FROM pg_file_settings WHERE sourcefile LIKE '%auto.conf'`)
	}
	var b strings.Builder
	for _, q := range qs {
		var s string
		if err := conn.QueryRow(ctx, q).Scan(&s); err != nil {
			t.Fatalf("inspect %s: %s: %v", d.name, q, err)
		}
		b.WriteString(s + "\n")
	}
	// The victim's own role, which a plan makes on the dev server as the
	// target has it (MirrorRoles), able to do nothing: any attribute or
	// login given to it shows, as the line differs.
	return strings.Replace(b.String(), mirroredVictim+"\n", "", 1)
}

// mirroredVictim is the victim's role as MirrorRoles makes it.
const mirroredVictim = "role victim super=f login=f createrole=f createdb=f repl=f bypassrls=f inherit=t connlimit=-1"

// escape is desired SQL that needs more than a database owner may do.
type escape struct {
	name, sql string
	// control: the dev URL's superuser, running it, leaves a trace the
	// checks see (a file, a changed dev server, rows read from the server's
	// files); false for what this host cannot run at all.
	control bool
}

// escapes are the privileged statements desired SQL may try, each with a
// follow-up that leaves a trace if the privilege was gained. m is a file
// path the server's system user may create.
func escapes(m string) []escape {
	// The program reads its input: PostgreSQL fails the COPY if the pipe
	// closes before it has written the row.
	touch := "COPY (SELECT 1) TO PROGRAM 'touch " + m + "; cat >/dev/null'"
	return []escape{
		{"copy to program", touch + ";", true},
		{"copy to program, touch alone", "COPY (SELECT 1) TO PROGRAM 'touch " + m + "';", false},
		{"copy to file", "CREATE TABLE t AS SELECT 1 AS x; COPY t TO '" + m + "';", true},
		{"pg_read_file", "CREATE TABLE loot AS SELECT pg_read_file('/etc/passwd') AS f;", true},
		{"pg_ls_dir", "CREATE TABLE loot AS SELECT pg_ls_dir('.') AS f;", true},
		{"pg_read_binary_file", "CREATE TABLE x AS SELECT pg_read_binary_file('postgresql.conf') AS f;", true},
		{"server-side lo_import", "CREATE TABLE loot AS SELECT lo_import('/etc/passwd') AS o;", true},
		// As the superuser too this one fails: its snapshot does not see the
		// large object it creates. The next does what it means.
		{"server-side lo_export, one statement", "SELECT lo_export(lo_from_bytea(0, 'x'), '" + m + "');", false},
		{"server-side lo_export", "SELECT lo_from_bytea(4242, 'x'); SELECT lo_export(4242, '" + m + "');", true},
		// Not installed on this host: refused either way, kept for hosts that have them.
		{"create language plperlu", "CREATE LANGUAGE plperlu; CREATE FUNCTION f() RETURNS int LANGUAGE plperlu AS 'system(\"touch " + m + "\"); 1'; SELECT f();", false},
		{"create extension plpython3u", "CREATE EXTENSION plpython3u;", false},
		{"create extension file_fdw", "CREATE EXTENSION file_fdw; CREATE SERVER files FOREIGN DATA WRAPPER file_fdw; CREATE FOREIGN TABLE passwd (line text) SERVER files OPTIONS (filename '/etc/passwd'); CREATE TABLE loot AS SELECT * FROM passwd;", true},
		{"create extension adminpack", "CREATE EXTENSION adminpack; SELECT pg_catalog.pg_file_write('" + m + "', 'x', false);", true},
		{"create extension dblink", "CREATE EXTENSION dblink; SELECT dblink_exec(format('host=%s port=%s dbname=postgres user=postgres', current_setting('unix_socket_directories'), current_setting('port')), 'CREATE ROLE evil SUPERUSER');", true},
		{"alter system", "COMMIT; ALTER SYSTEM SET max_connections = 7;", true},
		{"create role superuser", "CREATE ROLE evil SUPERUSER;", true},
		{"alter role current_user superuser", "ALTER ROLE CURRENT_USER SUPERUSER; " + touch + ";", true},
		{"reset role, set role postgres", "RESET ROLE; SET ROLE postgres; " + touch + ";", true},
		{"set session authorization postgres", "SET SESSION AUTHORIZATION postgres; " + touch + ";", true},
		{"grant pg_execute_server_program", "GRANT pg_execute_server_program TO CURRENT_USER; SET ROLE pg_execute_server_program; " + touch + ";", true},
	}
}

// TestPrivilegedEscapesAreRefused loads each escape as desired SQL through
// a plan, on each kind of dev server: the plan is refused, the target is
// unchanged, no file is written, the dev server keeps the roles, databases
// and settings it had (no comparison role or database left) and its
// superuser.
func TestPrivilegedEscapesAreRefused(t *testing.T) {
	ctx := context.Background()
	v := newVictim(t)
	before := v.pg.Snapshot(t, "victim")
	for _, d := range devServers(t) {
		t.Run(d.name, func(t *testing.T) {
			srv, err := devdb.Open(ctx, d.url, 5*time.Second)
			if err != nil {
				t.Fatal(err)
			}
			defer srv.Close()
			dir := markerDir(t)
			state := devState(t, d)
			for _, e := range escapes(filepath.Join(dir, "marker")) {
				t.Run(e.name, func(t *testing.T) {
					_, err := schema.ComputePlan(ctx, v.db, []schema.File{{Name: "escape.sql", Text: e.sql}}, schema.Options{Dev: srv})
					if err == nil {
						t.Errorf("planned; want a refusal")
					} else {
						t.Logf("refused: %v", err)
					}
					checkUntouched(t, v, before, d, state, dir)
				})
			}
		})
	}
}

// checkUntouched fails t if the target, the dev server or the marker
// directory changed.
func checkUntouched(t testing.TB, v *victim, before string, d devServer, state, dir string) {
	t.Helper()
	if after := v.pg.Snapshot(t, "victim"); after != before {
		t.Errorf("the target changed:\nbefore:\n%s\nafter:\n%s", before, after)
	}
	if f := filesIn(t, dir); len(f) > 0 {
		t.Errorf("the dev server wrote %v", f)
	}
	if after := devState(t, d); after != state {
		t.Errorf("the dev server changed:\nbefore:\n%s\nafter:\n%s", state, after)
	}
}

// TestEscapesWorkWithTheDevURLsPrivileges is the control of
// TestPrivilegedEscapesAreRefused: run with the privileges of a superuser
// dev URL (as ptah ran desired SQL before it made a role per comparison),
// each escape leaves the trace that test looks for, so its checks can fail.
func TestEscapesWorkWithTheDevURLsPrivileges(t *testing.T) {
	ctx := context.Background()
	pg := testenv.StartPostgres(t)
	d := devServer{name: "superuser", inspect: pg.SuperURL("postgres"), super: true}
	dir := markerDir(t)
	state := devState(t, d)
	for i, e := range escapes(filepath.Join(dir, "marker")) {
		if !e.control {
			continue
		}
		t.Run(e.name, func(t *testing.T) {
			db := fmt.Sprintf("control%d", i)
			pg.Exec(t, "postgres", "CREATE DATABASE "+db)
			t.Cleanup(func() {
				pg.Exec(t, "postgres", "DROP DATABASE IF EXISTS "+db+" WITH (FORCE)")
				os.RemoveAll(dir)
				_ = os.Mkdir(dir, 0o777)
				_ = os.Chmod(dir, 0o777)
				pg.Exec(t, "postgres", "ALTER SYSTEM RESET ALL")
				pg.Exec(t, "postgres", "DROP ROLE IF EXISTS evil")
				pg.Exec(t, "postgres", "REVOKE pg_execute_server_program FROM postgres")
				if after := devState(t, d); after != state {
					t.Errorf("control left the server changed:\n%s\n%s", state, after)
				}
			})
			conn, err := pgx.Connect(ctx, pg.SuperURL(db))
			if err != nil {
				t.Fatal(err)
			}
			// Outside a transaction block, as the loader's COMMIT leaves it.
			if _, err := conn.Exec(ctx, strings.TrimPrefix(e.sql, "COMMIT; ")); err != nil {
				t.Fatalf("as the superuser: %v", err)
			}
			var read int
			if err := conn.QueryRow(ctx, `SELECT count(*) FROM pg_class WHERE relname IN ('loot', 'x') AND relkind = 'r'`).Scan(&read); err != nil {
				t.Fatal(err)
			}
			conn.Close(ctx)
			pg.Exec(t, "postgres", "DROP DATABASE "+db+" WITH (FORCE)")
			files := filesIn(t, dir)
			changed := readDevState(t, d) != state
			t.Logf("files %v, dev server changed %v, rows read %d", files, changed, read)
			if len(files) == 0 && !changed && read == 0 {
				t.Fatalf("no trace: the escape checks could not see it")
			}
		})
	}
}

// TestComparisonRoleIsUnprivileged opens a comparison database on each kind
// of dev server and asks, on the connection desired SQL is loaded through,
// who it is: the comparison's own role, logged in as itself, no superuser,
// no CREATEDB, CREATEROLE, REPLICATION or BYPASSRLS, member of no role
// (holding, by PostgreSQL's own rule, only its database's
// pg_database_owner), owner of its database, which PUBLIC may not connect
// to. Both are gone once dropped.
func TestComparisonRoleIsUnprivileged(t *testing.T) {
	ctx := context.Background()
	v := newVictim(t)
	for _, d := range devServers(t) {
		t.Run(d.name, func(t *testing.T) {
			state := devState(t, d)
			srv, err := devdb.Open(ctx, d.url, 5*time.Second)
			if err != nil {
				t.Fatal(err)
			}
			defer srv.Close()
			db, drop, err := srv.Fresh(ctx, v.db)
			if err != nil {
				t.Fatal(err)
			}
			// The probe runs as desired SQL does, in the loader's transaction.
			if _, err := db.ExecContext(ctx, `CREATE TABLE probe AS SELECT current_user::text AS u, session_user::text AS s,
	r.rolsuper AS su, r.rolcreatedb AS cdb, r.rolcreaterole AS cr, r.rolreplication AS repl, r.rolbypassrls AS bypass, r.rolinherit AS inherit, r.rolconnlimit AS connlimit,
	(SELECT count(*) FROM pg_auth_members m WHERE m.member = r.oid) AS memberships,
	(SELECT datdba::regrole::text FROM pg_database WHERE datname = current_database()) AS owner,
	current_database()::text AS db,
	has_database_privilege('public', current_database(), 'CONNECT') AS public_connect,
	(SELECT count(*) FROM pg_database WHERE datdba = r.oid) AS owns,
	(SELECT count(*) FROM pg_roles o WHERE pg_has_role(r.oid, o.oid, 'MEMBER') AND o.oid NOT IN (r.oid, 'pg_database_owner'::regrole)) AS roles
FROM pg_roles r WHERE r.rolname = current_user`); err != nil {
				t.Fatal(err)
			}
			var u, s, owner, name string
			var su, cdb, cr, repl, bypass, inherit, publicConnect bool
			var connlimit, memberships, owns, roles int
			if err := db.QueryRowContext(ctx, "SELECT u, s, su, cdb, cr, repl, bypass, inherit, connlimit, memberships, owner, db, public_connect, owns, roles FROM probe").
				Scan(&u, &s, &su, &cdb, &cr, &repl, &bypass, &inherit, &connlimit, &memberships, &owner, &name, &publicConnect, &owns, &roles); err != nil {
				t.Fatal(err)
			}
			t.Logf("current_user %s session_user %s super=%v createdb=%v createrole=%v repl=%v bypassrls=%v inherit=%v connlimit=%d memberships=%d roles held besides itself and pg_database_owner %d owner=%s db=%s public connect=%v owns %d",
				u, s, su, cdb, cr, repl, bypass, inherit, connlimit, memberships, roles, owner, name, publicConnect, owns)
			if !strings.HasPrefix(s, devdb.RolePrefix) || u != s || name != s || owner != s {
				t.Errorf("session_user %s, current_user %s, database %s owned by %s: want one comparison role, its own database's owner", s, u, name, owner)
			}
			if su || cdb || cr || repl || bypass || memberships != 0 || roles != 0 || owns != 1 || connlimit < 1 || connlimit > 10 || publicConnect {
				t.Errorf("the comparison role is privileged: see above")
			}
			// RESET ROLE and SESSION AUTHORIZATION lead back to the same role.
			// Only a SCRAM verifier of the password ever reached the server.
			if d.super {
				conn, err := pgx.Connect(ctx, d.inspect)
				if err != nil {
					t.Fatal(err)
				}
				var verifier bool
				if err := conn.QueryRow(ctx, `SELECT rolpassword LIKE 'SCRAM-SHA-256$4096:%' FROM pg_authid WHERE rolname = $1`, s).Scan(&verifier); err != nil || !verifier {
					t.Errorf("the role's password is not stored as a SCRAM verifier (%v)", err)
				}
				conn.Close(ctx)
			}
			c, err := db.Conn(ctx)
			if err != nil {
				t.Fatal(err)
			}
			var after, afterCurrent string
			for _, q := range []string{"RESET ROLE", "RESET SESSION AUTHORIZATION"} {
				if _, err := c.ExecContext(ctx, q); err != nil {
					t.Fatalf("%s: %v", q, err)
				}
			}
			if err := c.QueryRowContext(ctx, "SELECT session_user::text, current_user::text").Scan(&after, &afterCurrent); err != nil || after != s || afterCurrent != s {
				t.Errorf("after RESET: session_user %s, current_user %s (%v)", after, afterCurrent, err)
			}
			c.Close()
			drop()
			if got := devState(t, d); got != state {
				t.Errorf("left on the dev server:\nbefore:\n%s\nafter:\n%s", state, got)
			}
		})
	}
}

// TestDesiredSQLRunsAsTheComparisonRole asserts, inside a plan's load, that
// the session loading desired SQL is no superuser and a member of no role:
// the desired SQL raises otherwise, and the plan fails.
func TestDesiredSQLRunsAsTheComparisonRole(t *testing.T) {
	ctx := context.Background()
	v := newVictim(t)
	const assert = `DO $$ BEGIN
  IF session_user::text NOT LIKE 'ptah\_dev\_%' OR current_user <> session_user
     OR (SELECT rolsuper OR rolcreaterole OR rolcreatedb FROM pg_roles WHERE rolname = current_user)
     OR EXISTS (SELECT 1 FROM pg_auth_members m JOIN pg_roles r ON r.oid = m.member WHERE r.rolname = current_user)
  THEN RAISE EXCEPTION 'desired SQL runs privileged';
  END IF;
END $$;
CREATE TABLE canary (id int);`
	for _, d := range devServers(t) {
		t.Run(d.name, func(t *testing.T) {
			srv, err := devdb.Open(ctx, d.url, 5*time.Second)
			if err != nil {
				t.Fatal(err)
			}
			defer srv.Close()
			p, err := schema.ComputePlan(ctx, v.db, []schema.File{{Name: "assert.sql", Text: assert}}, schema.Options{Dev: srv})
			if err != nil {
				t.Fatal(err)
			}
			var canary bool
			for _, st := range p.Statements {
				canary = canary || strings.Contains(st.SQL, `CREATE TABLE "public"."canary"`)
			}
			if !canary {
				t.Fatalf("want the plan to create canary: %+v", p.Statements)
			}
			// The same assertion fails where it should.
			_, err = schema.ComputePlan(ctx, v.db, []schema.File{{Name: "fail.sql", Text: strings.Replace(assert, "NOT LIKE", "LIKE", 1)}}, schema.Options{Dev: srv})
			if err == nil || !strings.Contains(err.Error(), "desired SQL runs privileged") {
				t.Fatalf("the inverted assertion did not fail the plan: %v", err)
			}
		})
	}
}

// TestDevRoleWithoutCreateRoleIsRefused: a dev URL whose role may create
// databases but not roles is refused before any desired SQL runs, told to
// grant CREATEROLE, and nothing is made on the dev server. The message
// names the server, never the role or its password.
func TestDevRoleWithoutCreateRoleIsRefused(t *testing.T) {
	ctx := context.Background()
	v := newVictim(t)
	pg := testenv.StartPostgres(t)
	devURL := pg.CreateDatabase(t, "onlycreatedb_7f3a")
	pg.Exec(t, "postgres", "ALTER ROLE onlycreatedb_7f3a CREATEDB")
	d := devServer{name: "CREATEDB only", inspect: pg.SuperURL("postgres"), super: true}
	state := devState(t, d)
	srv, err := devdb.Open(ctx, devURL, 5*time.Second)
	if err != nil {
		t.Fatal(err)
	}
	defer srv.Close()
	_, err = schema.ComputePlan(ctx, v.db, []schema.File{{Name: "a.sql", Text: "CREATE TABLE a (id int);"}}, schema.Options{Dev: srv})
	var e *report.Error
	if !errors.As(err, &e) || e.Code != report.Permission {
		t.Fatalf("want a permission error, got %v", err)
	}
	t.Logf("%s", e.Message)
	u, _ := url.Parse(devURL)
	password, _ := u.User.Password()
	if !strings.Contains(e.Message, "CREATEROLE") || !strings.Contains(e.Message, srv.Target) ||
		strings.Contains(e.Message, "onlycreatedb") || strings.Contains(e.Message, password) {
		t.Fatalf("message: %s", e.Message)
	}
	if got := devState(t, d); got != state {
		t.Fatalf("the dev server changed:\n%s\n%s", state, got)
	}
}

// TestRefusedLoginIsExplained: a dev server whose pg_hba.conf lets the dev
// URL's role in but not the comparison's role refuses the plan before any
// desired SQL runs, saying what pg_hba.conf must allow, and drops the role
// it made. The dev URL is a superuser's: had ptah fallen back to it, the
// desired SQL would have written the marker.
func TestRefusedLoginIsExplained(t *testing.T) {
	ctx := context.Background()
	v := newVictim(t)
	pg := testenv.StartPostgres(t)
	conn, err := pgx.Connect(ctx, pg.SuperURL("postgres"))
	if err != nil {
		t.Fatal(err)
	}
	var hba string
	if err := conn.QueryRow(ctx, "SELECT current_setting('hba_file')").Scan(&hba); err != nil {
		t.Fatal(err)
	}
	old, err := os.ReadFile(hba)
	if err != nil {
		t.Fatal(err)
	}
	// The superuser keeps its login; every role on a database of its own
	// name (the comparison's) is rejected.
	if err := os.WriteFile(hba, append([]byte("host all postgres 127.0.0.1/32 scram-sha-256\nhost sameuser all 127.0.0.1/32 reject\n"), old...), 0o600); err != nil {
		t.Fatal(err)
	}
	if _, err := conn.Exec(ctx, "SELECT pg_reload_conf()"); err != nil {
		t.Fatal(err)
	}
	conn.Close(ctx)
	time.Sleep(200 * time.Millisecond) // the postmaster rereads pg_hba.conf on SIGHUP
	d := devServer{name: "pg_hba refuses", inspect: pg.SuperURL("postgres"), super: true}
	state := devState(t, d)
	before := v.pg.Snapshot(t, "victim")
	dir := markerDir(t)
	srv, err := devdb.Open(ctx, pg.SuperURL("postgres"), 5*time.Second)
	if err != nil {
		t.Fatal(err)
	}
	defer srv.Close()
	_, err = schema.ComputePlan(ctx, v.db, []schema.File{{Name: "a.sql", Text: "COPY (SELECT 1) TO PROGRAM 'touch " + filepath.Join(dir, "m") + "';"}}, schema.Options{Dev: srv})
	var e *report.Error
	if !errors.As(err, &e) || e.Code != report.Permission {
		t.Fatalf("want a permission error, got %v", err)
	}
	t.Logf("%s", e.Message)
	for _, want := range []string{srv.Target, "pg_hba", "scram-sha-256", "sameuser", devdb.RolePrefix} {
		if !strings.Contains(e.Message, want) {
			t.Errorf("message lacks %q: %s", want, e.Message)
		}
	}
	if strings.Contains(e.Message, pg.SuperPassword) || strings.Contains(e.Message, "postgres:") || strings.Contains(e.Message, "postgres@") {
		t.Errorf("message names the dev URL's credentials: %s", e.Message)
	}
	checkUntouched(t, v, before, d, state, dir)
}

// TestThrowawayServerAdmitsTheComparisonRoleToItsOwnDatabaseOnly: on the
// throwaway (and sidecar) server, pg_hba.conf lets a comparison's role in
// by password to its own database and nowhere else, and the superuser
// nowhere, password or not.
func TestThrowawayServerAdmitsTheComparisonRoleToItsOwnDatabaseOnly(t *testing.T) {
	ctx := context.Background()
	v := newVictim(t)
	local, err := devdb.StartLocal(ctx)
	if err != nil {
		t.Fatal(err)
	}
	defer local.Stop()
	srv, err := devdb.Open(ctx, local.URL, 5*time.Second)
	if err != nil {
		t.Fatal(err)
	}
	defer srv.Close()
	db, drop, err := srv.Fresh(ctx, v.db)
	if err != nil {
		t.Fatal(err)
	}
	defer drop()
	// Desired SQL may set its role's password; still only its database.
	var role string
	if err := db.QueryRowContext(ctx, "SELECT current_user::text").Scan(&role); err != nil {
		t.Fatal(err)
	}
	if _, err := db.ExecContext(ctx, "ALTER ROLE CURRENT_USER PASSWORD 'known-7c1e'"); err != nil {
		t.Fatal(err)
	}
	as := func(user, password, dbname string) error {
		u, _ := url.Parse(local.URL)
		if password == "" {
			u.User = url.User(user)
		} else {
			u.User = url.UserPassword(user, password)
		}
		u.Path = "/" + dbname
		c, err := pgx.Connect(ctx, u.String())
		if err == nil {
			c.Close(ctx)
		}
		return err
	}
	if err := as(role, "known-7c1e", role); err != nil {
		t.Errorf("the comparison role cannot log in to its own database: %v", err)
	}
	if err := as(role, "wrong", role); err == nil {
		t.Errorf("the comparison role logged in with a wrong password")
	}
	for _, other := range []string{"postgres", "template1"} {
		if err := as(role, "known-7c1e", other); err == nil {
			t.Errorf("the comparison role logged in to %s", other)
		}
	}
	for _, dbname := range []string{"postgres", role, "template1"} {
		for _, pw := range []string{"", "postgres"} {
			if err := as("postgres", pw, dbname); err == nil {
				t.Errorf("the superuser logged in to %s (password %q)", dbname, pw)
			}
		}
	}
}

// TestAStatementNeedingASuperuserIsExplained loads, through a superuser
// dev URL, a desired schema that only a superuser could load (a LEAKPROOF
// function, as one case of sqldef's suite has): the plan is refused, and
// the message says why desired SQL cannot do that and where it belongs.
func TestAStatementNeedingASuperuserIsExplained(t *testing.T) {
	ctx := context.Background()
	v := newVictim(t)
	d := devServers(t)[0]
	srv, err := devdb.Open(ctx, d.url, 5*time.Second)
	if err != nil {
		t.Fatal(err)
	}
	defer srv.Close()
	_, err = schema.ComputePlan(ctx, v.db, []schema.File{{Name: "internal.sql", Text: "CREATE FUNCTION f(cstring) RETURNS int LANGUAGE internal IMMUTABLE AS 'int4in';"}}, schema.Options{Dev: srv})
	if err == nil {
		t.Fatal("a function in the untrusted language internal loaded: the desired SQL ran as a superuser")
	}
	for _, want := range []string{"internal.sql:1", "no superuser", "keep it in a migration"} {
		if !strings.Contains(err.Error(), want) {
			t.Errorf("the refusal does not say %q: %v", want, err)
		}
	}
}

// TestLeakproofNeedsASuperuserToMark: a LEAKPROOF function of desired SQL
// is loaded by the comparison's role without LEAKPROOF and marked by the
// dev server's own session, which must be a superuser's: through a
// CREATEDB CREATEROLE dev URL, or the sidecar's server (no superuser can
// log in to it), the plan is refused saying so; through a superuser's dev
// URL it is planned, and the victim is untouched either way.
func TestLeakproofNeedsASuperuserToMark(t *testing.T) {
	ctx := context.Background()
	v := newVictim(t)
	before := v.pg.Snapshot(t, "victim")
	desired := []schema.File{{Name: "leakproof.sql", Text: "CREATE FUNCTION f(int) RETURNS int LANGUAGE sql IMMUTABLE LEAKPROOF AS 'SELECT $1';"}}
	for i, d := range devServers(t) {
		srv, err := devdb.Open(ctx, d.url, 5*time.Second)
		if err != nil {
			t.Fatal(err)
		}
		p, err := schema.ComputePlan(ctx, v.db, desired, schema.Options{Dev: srv})
		srv.Close()
		if i == 0 {
			if err != nil {
				t.Errorf("%s: want a plan creating f LEAKPROOF: %v", d.name, err)
				continue
			}
			created := false
			for _, st := range p.Statements {
				created = created || strings.Contains(st.SQL, "FUNCTION public.f(integer)") && strings.Contains(st.SQL, "LEAKPROOF")
			}
			if !created {
				t.Errorf("%s: want a plan creating f LEAKPROOF, got %v", d.name, p.Statements)
			}
			continue
		}
		if err == nil {
			t.Fatalf("%s: a LEAKPROOF function was planned though no superuser could mark it", d.name)
		}
		for _, want := range []string{"LEAKPROOF", "no superuser", "in a migration"} {
			if !strings.Contains(err.Error(), want) {
				t.Errorf("%s: the refusal does not say %q: %v", d.name, want, err)
			}
		}
	}
	if after := v.pg.Snapshot(t, "victim"); after != before {
		t.Fatal("the victim changed")
	}
}
