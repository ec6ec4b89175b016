package main

import (
	"bytes"
	"context"
	"crypto/sha256"
	"encoding/json"
	"fmt"
	"net/url"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"ptah.run/operator/internal/testenv"
	"ptah.run/operator/operator/database"
	"ptah.run/operator/operator/devdb"
	"ptah.run/operator/operator/migrate"
	"ptah.run/operator/operator/report"
)

// cli runs ptah in-process and checks that no planted secret reaches its output.
type cli struct {
	t       *testing.T
	secrets []string
}

type outcome struct {
	code           int
	doc            map[string]any
	stdout, stderr string
}

func (c *cli) run(args ...string) outcome {
	c.t.Helper()
	var stdout, stderr bytes.Buffer
	code := run(context.Background(), args, &stdout, &stderr)
	o := outcome{code: code, stdout: stdout.String(), stderr: stderr.String()}
	for _, s := range c.secrets {
		if strings.Contains(o.stdout+o.stderr, s) {
			c.t.Fatalf("ptah %s printed the secret %q:\n%s%s", strings.Join(args, " "), s, o.stdout, o.stderr)
		}
	}
	if hasJSONFlag(args) {
		if strings.Count(o.stdout, "\n") != 1 {
			c.t.Fatalf("ptah %s: want one JSON line on stdout, got:\n%s", strings.Join(args, " "), o.stdout)
		}
		if err := json.Unmarshal([]byte(o.stdout), &o.doc); err != nil {
			c.t.Fatalf("ptah %s: stdout is not JSON: %v\n%s", strings.Join(args, " "), err, o.stdout)
		}
		if o.doc["exitCode"] != float64(code) || o.doc["apiVersion"] != report.APIVersion {
			c.t.Fatalf("ptah %s: document says exit %v, process %d:\n%s", strings.Join(args, " "), o.doc["exitCode"], code, o.stdout)
		}
	}
	return o
}

// want checks the exit code and, for exit 2, the error code.
func (o outcome) want(t *testing.T, exit int, code report.Code) outcome {
	t.Helper()
	if o.code != exit {
		t.Fatalf("exit %d, want %d\nstdout: %s\nstderr: %s", o.code, exit, o.stdout, o.stderr)
	}
	if code != "" {
		e, _ := o.doc["error"].(map[string]any)
		if e == nil || e["code"] != string(code) {
			t.Fatalf("error %v, want code %s\nstdout: %s", o.doc["error"], code, o.stdout)
		}
	}
	return o
}

func (o outcome) result() map[string]any {
	r, _ := o.doc["result"].(map[string]any)
	return r
}

func (o outcome) message() string {
	e, _ := o.doc["error"].(map[string]any)
	s, _ := e["message"].(string)
	return s
}

func mustPassword(t *testing.T, dbURL string) string {
	t.Helper()
	u, err := url.Parse(dbURL)
	if err != nil {
		t.Fatal(err)
	}
	p, _ := u.User.Password()
	return p
}

func write(t *testing.T, dir, name, text string) string {
	t.Helper()
	p := filepath.Join(dir, name)
	if err := os.WriteFile(p, []byte(text), 0o644); err != nil {
		t.Fatal(err)
	}
	return p
}

const customers = "CREATE TABLE customers (\n  id bigserial PRIMARY KEY,\n  email text NOT NULL,\n  name text\n);\n"
const orders = "CREATE TABLE orders (\n  id bigserial PRIMARY KEY,\n  customer_id bigint NOT NULL REFERENCES customers(id)\n);\n"

func TestVersion(t *testing.T) {
	c := &cli{t: t}
	o := c.run("version", "--json").want(t, 0, "")
	if o.result()["version"] != "dev" {
		t.Fatalf("version: %s", o.stdout)
	}
	c.run("nonsense", "--json").want(t, 2, report.Usage)
	c.run("schema", "plan", "--no-such-flag", "--json").want(t, 2, report.Usage)
}

func TestSchemaCommands(t *testing.T) {
	pg := testenv.StartPostgres(t)
	reg := testenv.StartRegistry(t)
	dbURL := pg.CreateDatabase(t, "shop")
	u, _ := url.Parse(dbURL)
	password, _ := u.User.Password()
	c := &cli{t: t, secrets: []string{password, reg.Password, pg.SuperPassword}}
	t.Setenv(database.URLEnv, dbURL)
	t.Setenv("PTAH_OCI_REGISTRY", reg.Host)
	t.Setenv("PTAH_OCI_USERNAME", reg.Username)
	t.Setenv("PTAH_OCI_PASSWORD", reg.Password)
	dir := t.TempDir()
	target := u.Host
	// The dev database is a server of its own, reached as a role that may
	// create databases and roles (each run's own).
	devPG := testenv.StartPostgres(t)
	devURL := devPG.CreateDatabase(t, "dev")
	devPG.Exec(t, "postgres", "ALTER ROLE dev CREATEDB CREATEROLE")
	t.Setenv(devdb.URLEnv, devURL)
	c.secrets = append(c.secrets, devPG.SuperPassword, mustPassword(t, devURL))

	t.Run("a connection failure names host and port, never user or password", func(t *testing.T) {
		planted := "planted-" + password
		bad := pg.URL("shop", planted, "shop")
		c.secrets = append(c.secrets, planted)
		o := c.run("schema", "drift", "--schema-file", write(t, dir, "c.sql", customers), "--url", bad, "--json").want(t, 2, report.Auth)
		if !strings.Contains(o.message(), target) || strings.Contains(o.stdout+o.stderr, "shop") {
			t.Fatalf("message: %s", o.message())
		}
		closed := strings.Replace(dbURL, target, "127.0.0.1:1", 1)
		o = c.run("schema", "drift", "--schema-file", write(t, dir, "c.sql", customers), "--url", closed, "--json").want(t, 2, report.Connection)
		if !strings.Contains(o.message(), "127.0.0.1:1") || strings.Contains(o.stdout+o.stderr, "shop") {
			t.Fatalf("message: %s", o.message())
		}
	})

	ref := "oci://" + reg.Host + "/schemas/shop:v1"
	pushed := c.run("schema", "push", ref, "--schema-file", write(t, dir, "01_customers.sql", customers),
		"--schema-file", write(t, dir, "02_orders.sql", orders), "--plain-http", "--json").want(t, 0, "")
	digestRef := pushed.result()["reference"].(string)
	desired := filepath.Join(dir, "desired.sql")

	t.Run("push, resolve, pull round trip", func(t *testing.T) {
		res := c.run("oci", "resolve", ref, "--plain-http", "--json").want(t, 0, "")
		if res.result()["reference"] != digestRef || res.result()["artifactType"] != "application/vnd.ptah.schema.v1" {
			t.Fatalf("resolve: %s", res.stdout)
		}
		c.run("schema", "pull", digestRef, "--out", desired, "--plain-http", "--json").want(t, 0, "")
		b, _ := os.ReadFile(desired)
		if !strings.Contains(string(b), customers) || !strings.Contains(string(b), orders) || strings.Index(string(b), "customers (") > strings.Index(string(b), "orders (") {
			t.Fatalf("pulled:\n%s", b)
		}
		t.Setenv("PTAH_OCI_PASSWORD", "wrong")
		c.run("oci", "inspect", ref, "--plain-http", "--json").want(t, 2, report.Auth)
		t.Setenv("PTAH_OCI_PASSWORD", reg.Password)
		c.run("oci", "resolve", "oci://"+reg.Host+"/schemas/shop@sha256:"+strings.Repeat("a", 64), "--plain-http", "--json").want(t, 2, report.NotFound)
	})

	t.Run("verify refuses with findings", func(t *testing.T) {
		ok := write(t, dir, "ok.yaml", "allowedArtifactTypes: [application/vnd.ptah.schema.v1]\nallowedRepositoryPrefixes: ["+reg.Host+"/schemas/]\n")
		o := c.run("oci", "verify", digestRef, "--policy", ok, "--plain-http", "--json").want(t, 0, "")
		if o.result()["verified"] != true {
			t.Fatalf("verify: %s", o.stdout)
		}
		bad := write(t, dir, "bad.yaml", "maxSizeBytes: 10\nrequiredAnnotations: {org.opencontainers.image.revision: \"\"}\n")
		o = c.run("oci", "verify", digestRef, "--policy", bad, "--plain-http", "--json").want(t, 2, report.PolicyRefused)
		if f, _ := o.result()["findings"].([]any); len(f) != 2 || o.result()["verified"] != false {
			t.Fatalf("findings: %s", o.stdout)
		}
	})

	plan := filepath.Join(dir, "plan.json")
	t.Run("plan is byte-identical when run twice, then applies", func(t *testing.T) {
		a := c.run("schema", "plan", "--schema-file", desired, "--output", plan, "--json").want(t, 0, "")
		first, _ := os.ReadFile(plan)
		b := c.run("schema", "plan", "--schema-file", desired, "--output", plan, "--json").want(t, 0, "")
		second, _ := os.ReadFile(plan)
		if a.stdout != b.stdout || string(first) != string(second) {
			t.Fatalf("plans differ:\n%s\n%s", a.stdout, b.stdout)
		}
		r := a.result()
		if r["destructive"] != false || len(r["statements"].([]any)) < 2 || r["digest"] == "" || r["baseFingerprint"] == r["desiredFingerprint"] {
			t.Fatalf("plan: %s", a.stdout)
		}
		c.run("schema", "apply", "--plan", plan, "--json").want(t, 2, report.ApprovalRequired)
		o := c.run("schema", "apply", "--plan", plan, "--auto-approve", "--dry-run", "--json").want(t, 0, "")
		if o.result()["applied"] != false {
			t.Fatalf("dry run applied: %s", o.stdout)
		}
		o = c.run("schema", "apply", "--plan", plan, "--auto-approve", "--json").want(t, 0, "")
		if o.result()["applied"] != true || o.result()["planDigest"] != r["digest"] || o.result()["converged"] != true {
			t.Fatalf("apply: %s", o.stdout)
		}
		c.run("schema", "drift", "--schema-file", desired, "--json").want(t, 0, "")
	})

	t.Run("apply of a plan whose base changed is stale", func(t *testing.T) {
		c.run("schema", "apply", "--plan", plan, "--auto-approve", "--json").want(t, 2, report.StalePlan)
	})

	t.Run("destructive plan needs consent; protected table refused with no plan written", func(t *testing.T) {
		narrower := write(t, dir, "narrower.sql", strings.Replace(customers, ",\n  name text", "", 1)+orders)
		refused := filepath.Join(dir, "refused.json")
		c.run("schema", "plan", "--schema-file", narrower, "--protected-table", "customers", "--output", refused, "--json").want(t, 2, report.ProtectedTable)
		if _, err := os.Stat(refused); !os.IsNotExist(err) {
			t.Fatalf("a refused plan was written: %v", err)
		}
		drop := filepath.Join(dir, "drop.json")
		o := c.run("schema", "plan", "--schema-file", narrower, "--output", drop, "--json").want(t, 0, "")
		st := o.result()["statements"].([]any)[0].(map[string]any)
		if o.result()["destructive"] != true || st["severity"] != "destructive" || !strings.Contains(st["sql"].(string), "DROP COLUMN") {
			t.Fatalf("plan: %s", o.stdout)
		}
		c.run("schema", "apply", "--plan", drop, "--auto-approve", "--json").want(t, 2, report.DestructiveRefused)
		d := c.run("schema", "drift", "--schema-file", narrower, "--show-objects", "--json").want(t, 1, "")
		if d.result()["highestSeverity"] != "destructive" || d.result()["categories"].(map[string]any)["column_unexpected"] != float64(1) {
			t.Fatalf("drift: %s", d.stdout)
		}
		c.run("schema", "apply", "--plan", drop, "--auto-approve", "--allow-destructive", "--json").want(t, 0, "")
		c.run("schema", "drift", "--schema-file", narrower, "--json").want(t, 0, "")
	})

	t.Run("a role that may not create schemas plans, the desired SQL never reaching its database", func(t *testing.T) {
		// The app role owns its tables but may not create schemas in its database.
		pg.Exec(t, "postgres", `CREATE ROLE app LOGIN PASSWORD 'app-secret-1f2e'`)
		pg.Exec(t, "postgres", `CREATE DATABASE app OWNER postgres`)
		pg.Exec(t, "app", `GRANT USAGE, CREATE ON SCHEMA public TO app`)
		c.secrets = append(c.secrets, "app-secret-1f2e")
		appURL := pg.URL("app", "app-secret-1f2e", "app")
		desired := write(t, dir, "app.sql", customers)
		appPlan := filepath.Join(dir, "app-plan.json")
		c.run("schema", "plan", "--url", appURL, "--schema-file", desired, "--output", appPlan, "--json").want(t, 0, "")
		c.run("schema", "apply", "--url", appURL, "--plan", appPlan, "--auto-approve", "--json").want(t, 0, "")
		c.run("schema", "drift", "--url", appURL, "--dev-url", devURL, "--schema-file", desired, "--json").want(t, 0, "")
	})

	t.Run("no dev database is a usage error that names the flags", func(t *testing.T) {
		t.Setenv(devdb.URLEnv, "")
		for _, cmd := range []string{"plan", "drift"} {
			o := c.run("schema", cmd, "--schema-file", desired, "--json").want(t, 2, report.Usage)
			if !strings.Contains(o.message(), "--dev-url") || !strings.Contains(o.message(), "--dev-throwaway") {
				t.Fatalf("message: %s", o.message())
			}
		}
		c.run("schema", "plan", "--schema-file", desired, "--dev-url", devURL, "--dev-throwaway", "--json").want(t, 2, report.Usage)
	})

	t.Run("a dev server that is the target's is refused", func(t *testing.T) {
		o := c.run("schema", "plan", "--schema-file", desired, "--dev-url", pg.CreateDatabase(t, "samesrv"), "--json").want(t, 2, "")
		if !strings.Contains(o.message(), "target's own server") && !strings.Contains(o.message(), "CREATEDB") {
			t.Fatalf("message: %s", o.message())
		}
	})

	t.Run("hostile desired schemas leave the target identical, with --dev-url and --dev-throwaway", func(t *testing.T) {
		pg.Exec(t, "postgres", `CREATE ROLE victim LOGIN PASSWORD 'victim-secret-77aa'`)
		pg.Exec(t, "postgres", `CREATE DATABASE victim OWNER victim`)
		pg.SeedVictim(t, "victim", "victim")
		c.secrets = append(c.secrets, "victim-secret-77aa")
		victimURL := pg.URL("victim", "victim-secret-77aa", "victim")
		marker := filepath.Join(os.TempDir(), "ptah-cli-hostile")
		os.Remove(marker)
		before := pg.Snapshot(t, "victim")
		for i, h := range testenv.HostileSchemas("victim", "victim", marker) {
			f := write(t, dir, "hostile.sql", h.SQL)
			dev := []string{"--dev-url", devURL}
			if i == 0 { // the issue's own case, on a server ptah starts (initdb costs seconds)
				dev = []string{"--dev-throwaway"}
			}
			for _, cmd := range []string{"plan", "drift"} {
				o := c.run(append([]string{"schema", cmd, "--url", victimURL, "--schema-file", f, "--json"}, dev...)...)
				if o.code == 2 && (o.message() == "" || strings.Contains(o.message(), "no dev database")) {
					t.Fatalf("%s: %s %v: %s", h.Name, cmd, dev, o.stdout)
				}
			}
			if after := pg.Snapshot(t, "victim"); after != before {
				t.Fatalf("%s changed the managed database:\nbefore:\n%s\nafter:\n%s", h.Name, before, after)
			}
			if _, err := os.Stat(marker); err == nil {
				t.Fatalf("%s created %s", h.Name, marker)
			}
		}
	})

	t.Run("hazards are printed; --schema keeps other schemas; --concurrent-indexes builds outside the transaction", func(t *testing.T) {
		hzURL := pg.CreateDatabase(t, "hazards")
		c.secrets = append(c.secrets, mustPassword(t, hzURL))
		schemas := []string{"--url", hzURL, "--schema", "public", "--schema", "billing"}
		v1 := write(t, dir, "billing1.sql", "CREATE SCHEMA billing;\nCREATE TABLE billing.inv (id int PRIMARY KEY, total int);\n")
		p1 := filepath.Join(dir, "billing1.json")
		o := c.run(append([]string{"schema", "plan", "--schema-file", v1, "--output", p1, "--json"}, schemas...)...).want(t, 0, "")
		if s, _ := o.result()["schemas"].([]any); len(s) != 2 {
			t.Fatalf("plan schemas: %s", o.stdout)
		}
		c.run("schema", "apply", "--url", hzURL, "--plan", p1, "--auto-approve", "--json").want(t, 0, "")
		v2 := write(t, dir, "billing2.sql", "CREATE SCHEMA billing;\nCREATE TABLE billing.inv (id int PRIMARY KEY, total int NOT NULL);\nCREATE INDEX inv_total ON billing.inv (total);\n")
		p2 := filepath.Join(dir, "billing2.json")
		o = c.run(append([]string{"schema", "plan", "--schema-file", v2, "--concurrent-indexes", "--output", p2}, schemas...)...)
		for _, want := range []string{"-- plan sha256:", "--   hazards: may-fail, access-exclusive-lock\nALTER TABLE \"billing\".\"inv\"", "--   runs outside the transaction\nCREATE INDEX CONCURRENTLY"} {
			if o.code != 0 || !strings.Contains(o.stdout, want) {
				t.Fatalf("text plan (exit %d) lacks %q:\n%s%s", o.code, want, o.stdout, o.stderr)
			}
		}
		c.run("schema", "apply", "--url", hzURL, "--plan", p2, "--auto-approve", "--json").want(t, 0, "")
		c.run(append([]string{"schema", "drift", "--schema-file", v2, "--json"}, schemas...)...).want(t, 0, "")
		// Without --schema billing, the desired SQL declares a schema ptah
		// would not keep.
		c.run("schema", "plan", "--url", hzURL, "--schema-file", v2, "--json").want(t, 2, report.UnmanagedObject)
	})

	t.Run("malformed SQL names file and line", func(t *testing.T) {
		bad := write(t, dir, "broken.sql", "CREATE TABLE a (id int);\n\nCREATE TABLE b (id int,,);\n")
		o := c.run("schema", "plan", "--schema-file", bad, "--json").want(t, 2, report.Parse)
		if !strings.Contains(o.message(), "broken.sql:3") {
			t.Fatalf("message: %s", o.message())
		}
		o = c.run("schema", "plan", "--schema-file", bad)
		if o.code != 2 || !strings.Contains(o.stderr, "parse: "+bad+":3") {
			t.Fatalf("text mode: %d %s", o.code, o.stderr)
		}
	})
}

func TestMigrationCommands(t *testing.T) {
	pg := testenv.StartPostgres(t)
	reg := testenv.StartRegistry(t)
	dbURL := pg.CreateDatabase(t, "ledger")
	u, _ := url.Parse(dbURL)
	password, _ := u.User.Password()
	c := &cli{t: t, secrets: []string{password, reg.Password}}
	t.Setenv(database.URLEnv, dbURL)
	t.Setenv("PTAH_OCI_REGISTRY", reg.Host)
	t.Setenv("PTAH_OCI_USERNAME", reg.Username)
	t.Setenv("PTAH_OCI_PASSWORD", reg.Password)

	src := t.TempDir()
	write(t, src, "0000000001_accounts.up.sql", "CREATE TABLE accounts (id bigserial PRIMARY KEY);\n")
	write(t, src, "0000000002_entries.up.sql", "CREATE TABLE entries (id bigserial PRIMARY KEY, account_id bigint REFERENCES accounts(id));\n")
	c.run("migrations", "up", "--dir", src, "--json").want(t, 2, report.ChecksumMismatch)
	c.run("migrations", "hash", "--dir", src, "--json").want(t, 0, "")

	ref := "oci://" + reg.Host + "/migrations/ledger:v1"
	pushed := c.run("migrations", "push", ref, "--dir", src, "--plain-http", "--json").want(t, 0, "")
	dir := filepath.Join(t.TempDir(), "pulled")
	pulled := c.run("migrations", "pull", pushed.result()["reference"].(string), "--dir", dir, "--plain-http", "--json").want(t, 0, "")
	if m, _ := pulled.result()["migrations"].([]any); len(m) != 2 {
		t.Fatalf("pulled: %s", pulled.stdout)
	}
	c.run("schema", "pull", ref, "--out", filepath.Join(dir, "x.sql"), "--plain-http", "--json").want(t, 2, report.ArtifactType)

	st := c.run("migrations", "status", "--dir", dir, "--json").want(t, 0, "")
	if st.result()["status"] != "Pending" {
		t.Fatalf("status: %s", st.stdout)
	}
	c.run("migrations", "up", "--dir", dir, "--expect-sequence", "1", "--json").want(t, 2, report.SequenceMismatch)
	o := c.run("migrations", "up", "--dir", dir, "--expect-sequence", "1,2", "--json").want(t, 0, "")
	if o.result()["status"] != "Applied" || o.result()["current"] != float64(2) {
		t.Fatalf("up: %s", o.stdout)
	}
	o = c.run("migrations", "up", "--dir", dir, "--expect-sequence", "none", "--json").want(t, 0, "")
	if o.result()["status"] != "UpToDate" {
		t.Fatalf("second up: %s", o.stdout)
	}

	// A history edited by hand: the recorded checksum of version 1 no longer matches.
	pg.Exec(t, "ledger", `UPDATE ptah.migration_revisions SET checksum = 'sha256:edited' WHERE version = 1`)
	c.run("migrations", "status", "--dir", dir, "--json").want(t, 2, report.HistoryModified)
	c.run("migrations", "up", "--dir", dir, "--json").want(t, 2, report.HistoryModified)
}

// TestMigrationsRefuseTransactionControl: a migration file that would
// commit part of itself is refused by hash (so it cannot be pushed), and a
// directory hashed by hand is refused by status and by up before any
// pending version runs; a lone CREATE INDEX CONCURRENTLY is applied, mixed
// with another statement it is refused.
func TestMigrationsRefuseTransactionControl(t *testing.T) {
	pg := testenv.StartPostgres(t)
	dbURL := pg.CreateDatabase(t, "shop")
	c := &cli{t: t, secrets: []string{mustPassword(t, dbURL)}}
	t.Setenv(database.URLEnv, dbURL)
	ctx := context.Background()
	db, err := database.Open(ctx, dbURL, 5*time.Second)
	if err != nil {
		t.Fatal(err)
	}
	defer db.Close()
	tables := func() string {
		var s string
		if err := db.QueryRow(`SELECT coalesce(string_agg(table_name, ',' ORDER BY table_name), '') FROM information_schema.tables WHERE table_schema = 'public'`).Scan(&s); err != nil {
			t.Fatal(err)
		}
		return s
	}

	dir := t.TempDir()
	write(t, dir, "0001_items.up.sql", "CREATE TABLE items (id int, sku text);\n")
	write(t, dir, "0002_half.up.sql", "CREATE TABLE half (id int);\nCOMMIT;\nDROP TABLE items;\n")
	o := c.run("migrations", "hash", "--dir", dir, "--json").want(t, 2, report.NotTransactional)
	if !strings.Contains(o.message(), "0002_half.up.sql:2") || !strings.Contains(o.message(), "remove the COMMIT at line 2, or split the file into two migrations") {
		t.Fatalf("hash: %s", o.message())
	}
	c.run("migrations", "push", "oci://127.0.0.1:1/m:v1", "--dir", dir, "--json").want(t, 2, report.ChecksumMismatch)

	// The checksum file an older ptah (or a person) would have written.
	var sum strings.Builder
	for _, n := range []string{"0001_items.up.sql", "0002_half.up.sql"} {
		b, _ := os.ReadFile(filepath.Join(dir, n))
		fmt.Fprintf(&sum, "sha256:%x  %s\n", sha256.Sum256(b), n)
	}
	write(t, dir, migrate.SumFile, sum.String()+fmt.Sprintf("total sha256:%x\n", sha256.Sum256([]byte(sum.String()))))
	o = c.run("migrations", "status", "--dir", dir, "--json").want(t, 2, report.NotTransactional)
	if !strings.Contains(o.message(), "migration 2 refused") {
		t.Fatalf("status: %s", o.message())
	}
	o = c.run("migrations", "up", "--dir", dir, "--json").want(t, 2, report.NotTransactional)
	var revisions int
	if err := db.QueryRow(`SELECT count(*) FROM ptah.migration_revisions`).Scan(&revisions); err != nil {
		t.Fatal(err)
	}
	if o.result()["status"] != "Failed" || tables() != "" || revisions != 0 {
		t.Fatalf("up ran part of a refused run: tables %q, %d history rows\n%s", tables(), revisions, o.stdout)
	}

	dir = t.TempDir()
	write(t, dir, "0001_items.up.sql", "BEGIN;\nCREATE TABLE items (id int, sku text);\nCOMMIT;\n")
	write(t, dir, "0002_sku.up.sql", "CREATE INDEX CONCURRENTLY items_sku ON items (sku);\n")
	c.run("migrations", "hash", "--dir", dir, "--json").want(t, 0, "")
	o = c.run("migrations", "up", "--dir", dir, "--json").want(t, 0, "")
	var valid bool
	if err := db.QueryRow(`SELECT indisvalid FROM pg_index WHERE indexrelid = 'items_sku'::regclass`).Scan(&valid); err != nil || !valid || o.result()["current"] != float64(2) {
		t.Fatalf("up: index valid %t (%v)\n%s", valid, err, o.stdout)
	}
	write(t, dir, "0003_more.up.sql", "ALTER TABLE items ADD COLUMN note text;\nCREATE INDEX CONCURRENTLY items_note ON items (note);\n")
	o = c.run("migrations", "hash", "--dir", dir, "--json").want(t, 2, report.NotTransactional)
	if !strings.Contains(o.message(), "0003_more.up.sql:2: CREATE INDEX CONCURRENTLY cannot run inside a transaction block") || !strings.Contains(o.message(), "move it to a migration of its own") {
		t.Fatalf("hash of a mixed file: %s", o.message())
	}
}
