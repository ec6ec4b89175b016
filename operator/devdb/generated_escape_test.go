package devdb_test

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"pgregory.net/rapid"

	"ptah.run/operator/internal/testenv"
	"ptah.run/operator/operator/devdb"
	"ptah.run/operator/operator/schema"
)

// An atom is one privileged statement desired SQL may try, in the forms it
// may take (unqualified, schema-qualified, quoted identifiers). m is a file
// path the dev server's system user may create.
type atom struct {
	name  string
	forms []string
}

func atoms(m string) []atom {
	touch := "COPY (SELECT 1) TO PROGRAM 'touch " + m + "'"
	return []atom{
		{"copy to program", []string{touch, `COPY (SELECT 1) TO PROGRAM 'sh -c "touch ` + m + `"'`}},
		{"copy to file", []string{"COPY (SELECT 1) TO '" + m + "'", "COPY pg_catalog.pg_class TO '" + m + "' WITH (FORMAT csv)"}},
		{"read a file", []string{"SELECT pg_read_file('/etc/passwd')", "SELECT pg_catalog.pg_read_file('/etc/passwd')", `SELECT "pg_catalog"."pg_read_file"('/etc/passwd', 0, 100)`,
			// Its content would be in the error message.
			"SELECT pg_read_file('/etc/passwd')::int",
			// Or in the plan, as a table's name.
			"DO $leak$ BEGIN EXECUTE format('CREATE TABLE %I (x int)', left(pg_read_file('/etc/passwd'), 30)); END $leak$"}},
		{"list a directory", []string{"SELECT pg_ls_dir('.')", "SELECT pg_catalog.pg_ls_dir('/etc')", `SELECT "pg_catalog"."pg_ls_waldir"()`}},
		{"read a binary file", []string{"CREATE TABLE IF NOT EXISTS conf AS SELECT pg_read_binary_file('postgresql.conf') AS f", `SELECT "pg_catalog"."pg_read_binary_file"('postgresql.auto.conf')`}},
		{"lo_import", []string{"SELECT lo_import('/etc/passwd')", "SELECT pg_catalog.lo_import('/etc/passwd', 4343)", `SELECT "pg_catalog"."lo_import"('/etc/passwd')`}},
		{"lo_export", []string{"SELECT lo_export(lo_from_bytea(0, 'x'), '" + m + "')", "SELECT pg_catalog.lo_export(4242, '" + m + "')", `SELECT "lo_export"(4242, '` + m + `')`}},
		// Allowed to any role: lo_export above has an object to write.
		{"large object", []string{"SELECT lo_from_bytea(4242, 'x')"}},
		{"untrusted language", []string{"CREATE LANGUAGE plperlu", `CREATE LANGUAGE "plpython3u"`, "CREATE EXTENSION plpython3u", "CREATE TRUSTED LANGUAGE evil HANDLER plpgsql_call_handler"}},
		{"untrusted extension", []string{"CREATE EXTENSION file_fdw", `CREATE EXTENSION "adminpack"`, "CREATE EXTENSION IF NOT EXISTS dblink", "CREATE EXTENSION postgres_fdw"}},
		{"file_fdw", []string{"CREATE SERVER files FOREIGN DATA WRAPPER file_fdw", "CREATE FOREIGN TABLE passwd (line text) SERVER files OPTIONS (filename '/etc/passwd')"}},
		{"adminpack", []string{"SELECT pg_catalog.pg_file_write('" + m + "', 'x', false)", `SELECT "pg_file_write"('` + m + `', 'x', true)`}},
		{"dblink", []string{"SELECT dblink_exec(format('host=%s port=%s dbname=postgres user=postgres', current_setting('unix_socket_directories'), current_setting('port')), 'CREATE ROLE evil SUPERUSER')",
			"SELECT public.dblink_connect_u(format('host=%s port=%s dbname=postgres user=ptah', current_setting('unix_socket_directories'), current_setting('port')))"}},
		{"alter system", []string{"ALTER SYSTEM SET max_connections = 7", `ALTER SYSTEM SET "work_mem" = '64MB'`, "ALTER SYSTEM RESET ALL"}},
		{"create a role", []string{"CREATE ROLE evil SUPERUSER", `CREATE ROLE "evil" SUPERUSER LOGIN`, "CREATE USER evil WITH PASSWORD 'x'", "CREATE ROLE evil IN ROLE pg_execute_server_program"}},
		{"alter its role", []string{"ALTER ROLE CURRENT_USER SUPERUSER", "ALTER ROLE SESSION_USER WITH SUPERUSER", "ALTER USER CURRENT_USER CREATEROLE",
			"ALTER ROLE CURRENT_USER CREATEDB", "ALTER ROLE CURRENT_USER BYPASSRLS REPLICATION", "ALTER ROLE postgres NOSUPERUSER", `ALTER ROLE "postgres" PASSWORD 'x'`}},
		{"set role", []string{"RESET ROLE", "SET ROLE postgres", `SET ROLE "postgres"`, "SELECT set_config('role', 'postgres', false)",
			"SET ROLE pg_execute_server_program", `SET ROLE "ptah"`, "SET LOCAL ROLE pg_write_server_files"}},
		{"session authorization", []string{"SET SESSION AUTHORIZATION postgres", `SET SESSION AUTHORIZATION "postgres"`,
			"SELECT set_config('session_authorization', 'postgres', false)", "RESET SESSION AUTHORIZATION", "SET SESSION AUTHORIZATION DEFAULT"}},
		{"grant a role", []string{"GRANT pg_execute_server_program TO CURRENT_USER", `GRANT "pg_read_server_files" TO SESSION_USER`,
			"GRANT pg_write_server_files TO CURRENT_USER WITH ADMIN OPTION", "GRANT postgres TO CURRENT_USER", `GRANT "ptah" TO CURRENT_USER`}},
		{"another database", []string{"ALTER DATABASE postgres CONNECTION LIMIT 0", "ALTER DATABASE template1 OWNER TO CURRENT_USER", "COMMENT ON DATABASE postgres IS 'pwned'"}},
		{"the escape itself", []string{touch}},
	}
}

// wrap puts stmt in one of the shapes desired SQL can give it; k keeps
// the names and dollar-quote tags of one file apart.
func wrap(shape, stmt string, k int) string {
	q := fmt.Sprintf("$q%d$%s$q%d$", k, stmt, k)
	switch shape {
	case "plain":
		return stmt + ";"
	case "after commit":
		return "COMMIT; " + stmt + ";"
	case "do execute":
		return fmt.Sprintf("DO $w%d$ BEGIN EXECUTE %s; END $w%d$;", k, q, k)
	case "do execute, error swallowed":
		return fmt.Sprintf("DO $w%d$ BEGIN EXECUTE %s; EXCEPTION WHEN OTHERS THEN NULL; END $w%d$;", k, q, k)
	case "column default":
		return fmt.Sprintf("CREATE FUNCTION f%d() RETURNS int LANGUAGE plpgsql AS $w%d$ BEGIN EXECUTE %s; RETURN 1; END $w%d$;\nCREATE TABLE t%d (x int DEFAULT f%d());\nINSERT INTO t%d DEFAULT VALUES;", k, k, q, k, k, k, k)
	case "column default, error swallowed":
		return fmt.Sprintf("CREATE FUNCTION f%d() RETURNS int LANGUAGE plpgsql AS $w%d$ BEGIN EXECUTE %s; RETURN 1; EXCEPTION WHEN OTHERS THEN RETURN 0; END $w%d$;\nCREATE TABLE t%d (x int DEFAULT f%d());\nINSERT INTO t%d DEFAULT VALUES;", k, k, q, k, k, k, k)
	case "security definer":
		return fmt.Sprintf("CREATE FUNCTION f%d() RETURNS int LANGUAGE plpgsql SECURITY DEFINER AS $w%d$ BEGIN EXECUTE %s; RETURN 1; EXCEPTION WHEN OTHERS THEN RETURN 0; END $w%d$;\nSELECT f%d();", k, k, q, k, k)
	}
	panic(shape)
}

var shapes = []string{"plain", "after commit", "do execute", "do execute, error swallowed", "column default", "column default, error swallowed", "security definer"}

// escapeRun is one kind of dev server, opened, with what it and the target
// held before any desired SQL ran.
type escapeRun struct {
	d            devServer
	srv          *devdb.Server
	state, dir   string
	v            *victim
	targetBefore string
}

func newEscapeRuns(t *testing.T) []*escapeRun {
	t.Helper()
	v := newVictim(t)
	before := v.pg.Snapshot(t, "victim")
	var runs []*escapeRun
	for _, d := range devServers(t) {
		srv, err := devdb.Open(context.Background(), d.url, 5*time.Second)
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(srv.Close)
		runs = append(runs, &escapeRun{d: d, srv: srv, state: devState(t, d), dir: markerDir(t), v: v, targetBefore: before})
	}
	return runs
}

// check plans (or reads drift from) files on r's dev server and returns
// what went wrong: a leaked file content, a changed target or dev server,
// a file written. t is the test's own, for failures of the harness.
func (r *escapeRun) check(t *testing.T, files []schema.File, drift bool) (problems []string, planErr error) {
	t.Helper()
	ctx := context.Background()
	var text string
	if drift {
		var d *schema.Drift
		d, planErr = schema.ComputeDrift(ctx, r.v.db, files, schema.Options{Dev: r.srv}, true)
		if d != nil {
			text = fmt.Sprintf("%+v", *d)
		}
	} else {
		var p *schema.Plan
		p, planErr = schema.ComputePlan(ctx, r.v.db, files, schema.Options{Dev: r.srv})
		if p != nil {
			text = fmt.Sprintf("%+v", *p)
		}
	}
	if planErr != nil {
		text += planErr.Error()
	}
	// /etc/passwd's first line, on any Debian or Alpine host.
	if strings.Contains(text, "root:x:0:0") || strings.Contains(text, "root:/root") {
		problems = append(problems, "the answer holds /etc/passwd: "+text)
	}
	if after := r.v.pg.Snapshot(t, "victim"); after != r.targetBefore {
		problems = append(problems, "the target changed:\n"+after)
	}
	if f := filesIn(t, r.dir); len(f) > 0 {
		problems = append(problems, fmt.Sprintf("the dev server wrote %v", f))
		for _, n := range f {
			os.Remove(filepath.Join(r.dir, n))
		}
	}
	if after := readDevState(t, r.d); after != r.state {
		problems = append(problems, "the dev server changed:\nbefore:\n"+r.state+"\nafter:\n"+after)
	}
	return problems, planErr
}

// escapeChecks is how many desired files TestGeneratedEscapes tries by
// default: enough for a run of about half a minute. A long run names its
// own count: RAPID_CHECKS=2000 go test ./operator/devdb/ -run TestGeneratedEscapes
// (or -args -rapid.checks=2000), with RAPID_SEED to repeat one.
const escapeChecks = 20

// TestGeneratedEscapes combines the privileged statements of atoms, in the
// forms and shapes desired SQL may give them, into desired files and plans
// them on a dev server of each kind: whatever the plan answers, the target
// is unchanged, no file is written, nothing the server holds is in the
// answer, and the dev server has the roles, databases and settings it had.
func TestGeneratedEscapes(t *testing.T) {
	testenv.RapidChecks(t, escapeChecks)
	runs := newEscapeRuns(t)
	marker := map[*escapeRun]string{}
	for _, r := range runs {
		marker[r] = filepath.Join(r.dir, "marker")
	}
	start := time.Now()
	cases, refused := 0, 0
	rapid.Check(t, func(rt *rapid.T) {
		r := runs[rapid.IntRange(0, len(runs)-1).Draw(rt, "dev server (superuser URL, CREATEDB CREATEROLE URL, throwaway)")]
		all := atoms(marker[r])
		nFiles := rapid.IntRange(1, 2).Draw(rt, "files")
		var files []schema.File
		k := 0
		for i := 0; i < nFiles; i++ {
			var b strings.Builder
			if rapid.Bool().Draw(rt, "benign table first") {
				fmt.Fprintf(&b, "CREATE TABLE IF NOT EXISTS benign%d (id int);\n", i)
			}
			for n := rapid.IntRange(1, 4).Draw(rt, "statements"); n > 0; n-- {
				a := rapid.SampledFrom(all).Draw(rt, "atom")
				form := rapid.SampledFrom(a.forms).Draw(rt, "form")
				shape := rapid.SampledFrom(shapes).Draw(rt, "shape")
				k++
				b.WriteString(wrap(shape, form, k) + "\n")
			}
			files = append(files, schema.File{Name: fmt.Sprintf("f%d.sql", i), Text: b.String()})
		}
		drift := rapid.Bool().Draw(rt, "drift instead of plan")
		problems, err := r.check(t, files, drift)
		cases++
		if err != nil {
			refused++
		}
		if len(problems) > 0 {
			for _, f := range files {
				rt.Logf("%s:\n%s", f.Name, f.Text)
			}
			rt.Fatalf("on the %s (answer: %v):\n%s", r.d.name, err, strings.Join(problems, "\n"))
		}
	})
	t.Logf("%d generated desired files (%d refused, %d planned without effect) in %s", cases, refused, cases-refused, time.Since(start).Round(time.Millisecond))
}

// TestGeneratedEscapeSeeds are files of the kind TestGeneratedEscapes
// draws, kept as regular cases: escapes whose errors are swallowed, so the
// load goes on and the plan succeeds, and escapes hidden in DO blocks,
// column defaults and quoted, schema-qualified names.
func TestGeneratedEscapeSeeds(t *testing.T) {
	runs := newEscapeRuns(t)
	for _, r := range runs {
		m := filepath.Join(r.dir, "marker")
		touch := "COPY (SELECT 1) TO PROGRAM 'touch " + m + "; cat >/dev/null'"
		seeds := []struct {
			name, sql string
			planned   bool // the errors are swallowed: the plan succeeds
		}{
			{"swallowed set role, then copy to program", wrap("do execute, error swallowed", "RESET ROLE", 1) + wrap("do execute, error swallowed", "SET ROLE postgres", 2) +
				wrap("do execute, error swallowed", touch, 3) + "CREATE TABLE benign (id int);", true},
			{"grant, set role and copy in column defaults, swallowed", wrap("column default, error swallowed", "GRANT pg_execute_server_program TO CURRENT_USER", 1) +
				wrap("column default, error swallowed", "SET ROLE pg_execute_server_program", 2) + wrap("column default, error swallowed", touch, 3), true},
			{"quoted qualified read, cast to leak", wrap("column default", `SELECT "pg_catalog"."pg_read_file"('/etc/passwd')::int`, 1), false},
			{"read into a table name", wrap("do execute", "DO $leak$ BEGIN EXECUTE format('CREATE TABLE %I (x int)', left(pg_read_file('/etc/passwd'), 30)); END $leak$", 1), false},
			{"large object written out, in a DO block", wrap("plain", "SELECT lo_from_bytea(4242, 'x')", 1) + wrap("do execute", `SELECT "pg_catalog"."lo_export"(4242, '`+m+`')`, 2), false},
			{"superuser by session authorization, after commit", wrap("after commit", "SET SESSION AUTHORIZATION postgres", 1) + wrap("plain", touch, 2), false},
			{"security definer role games", wrap("security definer", "ALTER ROLE CURRENT_USER SUPERUSER", 1) + wrap("security definer", "CREATE ROLE evil SUPERUSER", 2) +
				wrap("do execute, error swallowed", "ALTER SYSTEM SET max_connections = 7", 3) + "CREATE TABLE benign (id int);", true},
		}
		for _, s := range seeds {
			t.Run(r.d.name+"/"+s.name, func(t *testing.T) {
				problems, err := r.check(t, []schema.File{{Name: "seed.sql", Text: s.sql}}, false)
				t.Logf("answer: %v", err)
				for _, p := range problems {
					t.Error(p)
				}
				if s.planned != (err == nil) {
					t.Errorf("planned %v, want %v (%v)", err == nil, s.planned, err)
				}
			})
		}
	}
}
