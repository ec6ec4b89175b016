package testenv

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"fmt"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/jackc/pgx/v5"
)

// Hostile is a desired-schema artifact written to change the server it is
// loaded on: loaded into the managed database, each would change its
// catalog, its rows or its server.
type Hostile struct {
	Name string
	SQL  string
}

// HostileSchemas are artifacts aimed at the managed database db, owned by
// role, holding the table customers with rows (see SeedVictim). marker is a
// file path COPY ... TO PROGRAM tries to create.
func HostileSchemas(db, role, marker string) []Hostile {
	q := pgx.Identifier{db}.Sanitize()
	r := pgx.Identifier{role}.Sanitize()
	return []Hostile{
		{"commit then drop", "CREATE TABLE customers (id int);\nCOMMIT;\nDROP TABLE public.customers;"},
		{"commit then drop, unqualified", "COMMIT; DROP TABLE customers CASCADE;"},
		{"rollback then delete", "ROLLBACK; DELETE FROM customers;"},
		{"end then truncate", "END; TRUNCATE public.customers;"},
		{"release the loader's savepoint", "RELEASE SAVEPOINT ptah_script; COMMIT; UPDATE customers SET name = 'pwned';"},
		{"savepoint games", "SAVEPOINT a; ROLLBACK TO SAVEPOINT a; COMMIT AND CHAIN; DROP TABLE customers;"},
		{"begin inside", "BEGIN; DROP TABLE customers; COMMIT;"},
		{"schema-qualified writes", "INSERT INTO public.customers (name) VALUES ('intruder'); ALTER TABLE public.customers ADD COLUMN pwned int;"},
		{"other schema", "CREATE SCHEMA IF NOT EXISTS evil; CREATE TABLE evil.loot AS SELECT * FROM public.customers;"},
		{"DO block", "DO $$ BEGIN EXECUTE 'DROP TABLE customers'; END $$;"},
		{"DO block after commit", "COMMIT; DO $$ BEGIN DELETE FROM public.customers; END $$;"},
		{"function with side effects called at load", `CREATE FUNCTION wipe() RETURNS int LANGUAGE sql AS 'DELETE FROM public.customers; SELECT 1';
SELECT wipe();
CREATE TABLE t (x int DEFAULT wipe());
INSERT INTO t DEFAULT VALUES;`},
		{"trigger fired at load", `CREATE FUNCTION tg() RETURNS trigger LANGUAGE plpgsql AS $$BEGIN DELETE FROM public.customers; RETURN NEW; END$$;
CREATE TABLE bait (x int);
CREATE TRIGGER tg AFTER INSERT ON bait FOR EACH ROW EXECUTE FUNCTION tg();
INSERT INTO bait VALUES (1);`},
		{"search_path set", "SET search_path = public; DROP TABLE IF EXISTS customers;"},
		{"search_path by set_config", "SELECT set_config('search_path', 'public', false); COMMIT; DROP TABLE customers;"},
		{"reset all", "RESET ALL; COMMIT; DROP TABLE customers;"},
		{"read-only off", "SET default_transaction_read_only = off; SET transaction_read_only = off; COMMIT; DROP TABLE customers;"},
		{"set role", "COMMIT; SET ROLE postgres; DROP TABLE customers;"},
		{"set session authorization", "COMMIT; SET SESSION AUTHORIZATION postgres; DROP TABLE customers;"},
		{"reset session authorization", "COMMIT; RESET SESSION AUTHORIZATION; RESET ROLE; DROP TABLE customers;"},
		{"alter system", "COMMIT; ALTER SYSTEM SET max_connections = 7; SELECT pg_reload_conf();"},
		{"create role", "COMMIT; CREATE ROLE intruder SUPERUSER LOGIN PASSWORD 'x';"},
		{"alter role", "COMMIT; ALTER ROLE " + r + " PASSWORD 'changed'; ALTER ROLE " + r + " SET search_path = evil;"},
		{"drop role", "COMMIT; DROP OWNED BY " + r + " CASCADE; DROP ROLE " + r + ";"},
		{"alter database", "COMMIT; ALTER DATABASE " + q + " SET default_transaction_read_only = on; ALTER DATABASE " + q + " CONNECTION LIMIT 0;"},
		{"drop database", "COMMIT; DROP DATABASE " + q + " WITH (FORCE);"},
		{"drop database, alone", "DROP DATABASE " + q + ";"},
		{"copy to program", "COPY (SELECT 1) TO PROGRAM 'touch " + marker + "';"},
		{"copy to file", "COPY customers TO '" + marker + "';"},
		{"terminate backends", "SELECT pg_terminate_backend(pid) FROM pg_stat_activity WHERE pid <> pg_backend_pid();"},
		{"cancel backends", "SELECT pg_cancel_backend(pid) FROM pg_stat_activity WHERE pid <> pg_backend_pid();"},
		{"dblink", "CREATE EXTENSION IF NOT EXISTS dblink; SELECT dblink_exec('dbname=" + db + "', 'DROP TABLE customers');"},
		{"postgres_fdw", "CREATE EXTENSION IF NOT EXISTS postgres_fdw;"},
		{"advisory lock held", "SELECT pg_advisory_lock(hashtext('ptah.run/writer'));"},
		{"prepared transaction", "PREPARE TRANSACTION 'ptah'; COMMIT PREPARED 'ptah';"},
		{"large object export", "SELECT lo_export(lo_from_bytea(0, 'x'), '" + marker + "');"},
		{"event trigger", "CREATE FUNCTION et() RETURNS event_trigger LANGUAGE plpgsql AS $$BEGIN RAISE EXCEPTION 'no'; END$$; CREATE EVENT TRIGGER et ON ddl_command_start EXECUTE FUNCTION et();"},
		{"grant and default privileges", "COMMIT; GRANT ALL ON ALL TABLES IN SCHEMA public TO PUBLIC; ALTER DEFAULT PRIVILEGES GRANT ALL ON TABLES TO PUBLIC;"},
		{"rename and comment", "COMMIT; ALTER TABLE customers RENAME TO gone; COMMENT ON SCHEMA public IS 'pwned';"},
		{"psql meta-command", "\\! touch " + marker + "\n\\c " + db},
		{"lock and sleep", "LOCK TABLE customers IN ACCESS EXCLUSIVE MODE; SELECT pg_sleep(0.1);"},
		{"vacuum and checkpoint", "COMMIT; VACUUM FULL customers; CHECKPOINT;"},
	}
}

// SeedVictim gives database db (owned by role) the table customers with
// rows and a view, the state HostileSchemas try to change.
func (p *Postgres) SeedVictim(t testing.TB, db, role string) {
	t.Helper()
	p.Exec(t, db, `CREATE TABLE customers (id bigserial PRIMARY KEY, name text NOT NULL);
INSERT INTO customers (name) SELECT 'customer ' || g FROM generate_series(1, 50) g;
CREATE VIEW customer_names AS SELECT name FROM customers;
ALTER TABLE customers OWNER TO `+pgx.Identifier{role}.Sanitize()+`;
ALTER VIEW customer_names OWNER TO `+pgx.Identifier{role}.Sanitize())
}

// Snapshot is what a read-only operation may not change on db and its
// server: pg_dump's schema and data of db, a checksum of every table's rows,
// the roles, the databases with their settings, the server's settings
// (ALTER SYSTEM included), and whether its sessions are still alive.
func (p *Postgres) Snapshot(t testing.TB, db string) string {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	var b strings.Builder
	dump := exec.CommandContext(ctx, filepath.Join(PostgresBinDir, "pg_dump"), "--no-sync", "--dbname", p.SuperURL(db))
	out, err := dump.Output()
	if err != nil {
		t.Fatalf("testenv: pg_dump %s: %v", db, err)
	}
	// pg_dump 15.14 and later fence the dump with a random \restrict key.
	var kept []string
	for _, line := range strings.Split(string(out), "\n") {
		if !strings.HasPrefix(line, `\restrict `) && !strings.HasPrefix(line, `\unrestrict `) {
			kept = append(kept, line)
		}
	}
	out = []byte(strings.Join(kept, "\n"))
	sum := sha256.Sum256(out)
	fmt.Fprintf(&b, "pg_dump %s: %s (%d bytes)\n", db, hex.EncodeToString(sum[:]), len(out))
	conn, err := pgx.Connect(ctx, p.SuperURL(db))
	if err != nil {
		t.Fatalf("testenv: connect to %s: %v", db, err)
	}
	defer conn.Close(context.Background())
	var tables []string
	rows, err := conn.Query(ctx, `SELECT format('%I.%I', n.nspname, c.relname) FROM pg_class c JOIN pg_namespace n ON n.oid = c.relnamespace
WHERE c.relkind IN ('r','p') AND n.nspname NOT IN ('pg_catalog','information_schema') ORDER BY 1`)
	if err != nil {
		t.Fatalf("testenv: list tables: %v", err)
	}
	for rows.Next() {
		var n string
		_ = rows.Scan(&n)
		tables = append(tables, n)
	}
	rows.Close()
	for _, tbl := range tables {
		var n int64
		var md5 *string
		if err := conn.QueryRow(ctx, "SELECT count(*), md5(string_agg(x::text, ',' ORDER BY x::text)) FROM "+tbl+" x").Scan(&n, &md5); err != nil {
			t.Fatalf("testenv: checksum %s: %v", tbl, err)
		}
		fmt.Fprintf(&b, "rows %s: %d %v\n", tbl, n, deref(md5))
	}
	for _, q := range []string{
		`SELECT string_agg(format('%s super=%s login=%s createrole=%s createdb=%s pw=%s', rolname, rolsuper, rolcanlogin, rolcreaterole, rolcreatedb, md5(coalesce(rolpassword,''))), E'\n' ORDER BY rolname) FROM pg_authid`,
		`SELECT string_agg(format('%s owner=%s conns=%s allow=%s', datname, datdba::regrole, datconnlimit, datallowconn), E'\n' ORDER BY datname) FROM pg_database`,
		`SELECT coalesce(string_agg(format('%s %s %s', setdatabase, setrole, setconfig), E'\n' ORDER BY setdatabase, setrole), '') FROM pg_db_role_setting`,
		`SELECT coalesce(string_agg(format('%s=%s', name, setting), E'\n' ORDER BY name), '') FROM pg_file_settings WHERE sourcefile LIKE '%auto.conf'`,
		`SELECT string_agg(format('%s=%s', name, setting), ',' ORDER BY name) FROM pg_settings WHERE name IN ('max_connections','search_path','default_transaction_read_only')`,
		`SELECT format('prepared xacts=%s', count(*)) FROM pg_prepared_xacts`,
		`SELECT format('event triggers=%s', count(*)) FROM pg_event_trigger`,
	} {
		var s string
		if err := conn.QueryRow(ctx, q).Scan(&s); err != nil {
			t.Fatalf("testenv: snapshot %s: %v", q, err)
		}
		b.WriteString(s + "\n")
	}
	return b.String()
}

func deref(s *string) string {
	if s == nil {
		return "<none>"
	}
	return *s
}
