package schema

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"ptah.run/operator/internal/testenv"
	"ptah.run/operator/operator/database"
	"ptah.run/operator/operator/devdb"
	"ptah.run/operator/operator/report"
)

const shop = `
CREATE TABLE customers (
  id bigserial PRIMARY KEY,
  email varchar(200) NOT NULL UNIQUE,
  name text
);
CREATE TABLE orders (
  id bigserial PRIMARY KEY,
  customer_id bigint NOT NULL REFERENCES customers(id),
  total numeric(12,2) NOT NULL DEFAULT 0
);
CREATE INDEX orders_customer_idx ON orders (customer_id);
`

// engine is one PostgreSQL server shared by the subtests of a test, each
// subtest on its own database owned by its own role.
type engine struct {
	pg  *testenv.Postgres
	dev *devdb.Server
	n   int
}

// newEngine starts the target's server and a throwaway dev server, as
// ptah schema plan --dev-throwaway does.
func newEngine(t testing.TB) *engine {
	t.Helper()
	e := &engine{pg: testenv.StartPostgres(t)}
	local, err := devdb.StartLocal(context.Background())
	if err != nil {
		t.Fatalf("start the dev server: %v", err)
	}
	t.Cleanup(local.Stop)
	if e.dev, err = local.Open(context.Background(), 5*time.Second); err != nil {
		t.Fatalf("open the dev server: %v", err)
	}
	t.Cleanup(e.dev.Close)
	return e
}

// o is opts comparing on the engine's dev server.
func (e *engine) o(opts Options) Options {
	opts.Dev = e.dev
	return opts
}

func (e *engine) db(t *testing.T) (*database.DB, string) {
	t.Helper()
	e.n++
	name := fmt.Sprintf("db%d", e.n)
	url := e.pg.CreateDatabase(t, name)
	db, err := database.Open(context.Background(), url, 5*time.Second)
	if err != nil {
		t.Fatalf("open %s: %v", name, err)
	}
	t.Cleanup(func() { db.Close() })
	return db, name
}

func files(sqls ...string) []File {
	var fs []File
	for i, s := range sqls {
		fs = append(fs, File{Name: "f" + string(rune('0'+i)) + ".sql", Text: s})
	}
	return fs
}

func mustPlan(t *testing.T, db *database.DB, fs []File, opts Options) *Plan {
	t.Helper()
	p, err := ComputePlan(context.Background(), db, fs, opts)
	if err != nil {
		t.Fatalf("plan: %v", err)
	}
	return p
}

func mustApply(t *testing.T, db *database.DB, p *Plan, opts ApplyOptions) *Applied {
	t.Helper()
	if opts.LockTimeout == 0 {
		opts.LockTimeout = 10 * time.Second
	}
	res, err := Apply(context.Background(), db, p, opts)
	if err != nil {
		t.Fatalf("apply: %v", err)
	}
	return res
}

func wantCode(t *testing.T, err error, code report.Code) *report.Error {
	t.Helper()
	var e *report.Error
	if !errors.As(err, &e) || e.Code != code {
		t.Fatalf("want error code %s, got %v", code, err)
	}
	return e
}

func columns(t *testing.T, db *database.DB, table string) string {
	t.Helper()
	rows, err := db.Query(`SELECT column_name FROM information_schema.columns WHERE table_schema='public' AND table_name=$1 ORDER BY ordinal_position`, table)
	if err != nil {
		t.Fatal(err)
	}
	defer rows.Close()
	var cols []string
	for rows.Next() {
		var c string
		rows.Scan(&c)
		cols = append(cols, c)
	}
	return strings.Join(cols, ",")
}

// strangeSchemas counts the schemas of db besides public and the system's:
// planning never creates one there.
func strangeSchemas(t *testing.T, db *database.DB) int {
	t.Helper()
	var n int
	if err := db.QueryRow(`SELECT count(*) FROM pg_namespace WHERE nspname NOT IN ('public', 'information_schema') AND nspname NOT LIKE 'pg\_%'`).Scan(&n); err != nil {
		t.Fatal(err)
	}
	return n
}

func TestSchemaEngine(t *testing.T) {
	e := newEngine(t)

	t.Run("create tables with a foreign key, then apply twice", func(t *testing.T) {
		db, _ := e.db(t)
		p := mustPlan(t, db, files(shop), e.o(Options{}))
		if p.Destructive || len(p.Statements) < 3 {
			t.Fatalf("want a safe plan of at least 3 statements, got %+v", p)
		}
		joined := ""
		for _, s := range p.Statements {
			if s.Severity != Safe || s.Reason == "" {
				t.Errorf("statement %q: severity %s reason %q", s.SQL, s.Severity, s.Reason)
			}
			joined += s.SQL + "\n"
		}
		for _, want := range []string{`CREATE TABLE "public"."customers"`, `CREATE TABLE "public"."orders"`, `CREATE INDEX "orders_customer_idx"`} {
			if !strings.Contains(joined, want) {
				t.Errorf("plan lacks %s:\n%s", want, joined)
			}
		}
		// The foreign key is added once both tables exist, as pg_dump does.
		if last := p.Statements[len(p.Statements)-1]; last.SQL != "ALTER TABLE orders ADD CONSTRAINT orders_customer_id_fkey FOREIGN KEY (customer_id) REFERENCES customers(id)" {
			t.Errorf("last statement: %+v", last)
		}
		if idx := p.Statements[len(p.Statements)-2]; !strings.HasPrefix(idx.SQL, "CREATE INDEX") || idx.Reason != "creates an index of new table orders" {
			t.Errorf("index statement: %+v", idx)
		}
		if strings.Contains(joined, "ptah_dev_") {
			t.Errorf("plan names the comparison database:\n%s", joined)
		}
		res := mustApply(t, db, p, ApplyOptions{})
		if !res.Applied || !res.Converged || res.PlanDigest != p.Digest {
			t.Fatalf("apply: %+v", res)
		}
		if got := columns(t, db, "orders"); got != "id,customer_id,total" {
			t.Fatalf("orders columns: %s", got)
		}
		again := mustPlan(t, db, files(shop), e.o(Options{}))
		if len(again.Statements) != 0 || again.BaseFingerprint != again.DesiredFingerprint {
			t.Fatalf("second plan is not a no-op: %+v", again)
		}
		res = mustApply(t, db, again, ApplyOptions{})
		if !res.Applied || res.Statements != 0 || !res.Converged {
			t.Fatalf("second apply: %+v", res)
		}
		if n := strangeSchemas(t, db); n != 0 {
			t.Fatalf("%d schemas left behind", n)
		}
	})

	t.Run("plan twice gives the same bytes", func(t *testing.T) {
		db, _ := e.db(t)
		exec(t, db, `CREATE TABLE customers (id bigserial PRIMARY KEY, legacy text)`)
		a, _ := mustPlan(t, db, files(shop), e.o(Options{})).Marshal()
		b, _ := mustPlan(t, db, files(shop), e.o(Options{})).Marshal()
		if string(a) != string(b) {
			t.Fatalf("plans differ:\n%s\n---\n%s", a, b)
		}
	})

	t.Run("add a column is safe", func(t *testing.T) {
		db, _ := e.db(t)
		mustApply(t, db, mustPlan(t, db, files(shop), e.o(Options{})), ApplyOptions{})
		p := mustPlan(t, db, files(strings.Replace(shop, "name text", "name text,\n  phone varchar(40)", 1)), e.o(Options{}))
		if len(p.Statements) != 1 || p.Destructive || !strings.Contains(p.Statements[0].SQL, `ADD COLUMN "phone"`) {
			t.Fatalf("plan: %+v", p.Statements)
		}
		mustApply(t, db, p, ApplyOptions{})
		if got := columns(t, db, "customers"); got != "id,email,name,phone" {
			t.Fatalf("customers columns: %s", got)
		}
	})

	t.Run("drop a column is destructive and needs consent", func(t *testing.T) {
		db, _ := e.db(t)
		mustApply(t, db, mustPlan(t, db, files(shop), e.o(Options{})), ApplyOptions{})
		p := mustPlan(t, db, files(strings.Replace(shop, ",\n  name text", "", 1)), e.o(Options{}))
		if len(p.Statements) != 1 || !p.Destructive || p.Statements[0].Severity != Destructive ||
			!strings.Contains(p.Statements[0].SQL, `DROP COLUMN "name"`) || !strings.Contains(p.Statements[0].Reason, "customers.name") {
			t.Fatalf("plan: %+v", p)
		}
		_, err := Apply(context.Background(), db, p, ApplyOptions{LockTimeout: time.Second})
		wantCode(t, err, report.DestructiveRefused)
		if got := columns(t, db, "customers"); got != "id,email,name" {
			t.Fatalf("refused apply changed customers: %s", got)
		}
		mustApply(t, db, p, ApplyOptions{AllowDestructive: true})
		if got := columns(t, db, "customers"); got != "id,email" {
			t.Fatalf("customers columns: %s", got)
		}
	})

	t.Run("narrowing and NOT NULL without default may fail but delete nothing, widening is safe", func(t *testing.T) {
		db, _ := e.db(t)
		mustApply(t, db, mustPlan(t, db, files(`CREATE TABLE t (a integer, b varchar(100), c text);`), e.o(Options{})), ApplyOptions{})
		cases := []struct {
			desired string
			mayFail bool
		}{
			{`CREATE TABLE t (a bigint, b varchar(100), c text);`, false},
			{`CREATE TABLE t (a integer, b varchar(200), c text);`, false},
			{`CREATE TABLE t (a integer, b varchar(20), c text);`, true},
			{`CREATE TABLE t (a smallint, b varchar(100), c text);`, true},
			{`CREATE TABLE t (a integer, b varchar(100), c text, d int NOT NULL);`, true},
			{`CREATE TABLE t (a integer, b varchar(100), c text, d int NOT NULL DEFAULT 0);`, false},
			{`CREATE TABLE t (a integer, b varchar(100), c text NOT NULL);`, true},
		}
		for _, c := range cases {
			p := mustPlan(t, db, files(c.desired), e.o(Options{}))
			if len(p.Statements) != 1 || p.Statements[0].Severity != Safe || p.Destructive || slices.Contains(p.Statements[0].Hazards, HazardMayFail) != c.mayFail {
				t.Errorf("%s: want one safe statement (may fail: %v), got %+v", c.desired, c.mayFail, p.Statements)
			}
		}
	})

	t.Run("a protected table is refused", func(t *testing.T) {
		db, _ := e.db(t)
		mustApply(t, db, mustPlan(t, db, files(shop), e.o(Options{})), ApplyOptions{})
		_, err := ComputePlan(context.Background(), db, files(strings.Replace(shop, ",\n  name text", "", 1)), e.o(Options{Protected: []string{"cust*"}}))
		refused := wantCode(t, err, report.ProtectedTable)
		if !strings.Contains(refused.Message, "customers") {
			t.Fatalf("message does not name the table: %s", refused.Message)
		}
		if _, err := ComputePlan(context.Background(), db, files(shop+"CREATE TABLE notes (id int);"), e.o(Options{Protected: []string{"customers"}})); err != nil {
			t.Fatalf("a plan leaving the protected table alone was refused: %v", err)
		}
	})

	t.Run("apply against a database changed after planning is stale", func(t *testing.T) {
		db, _ := e.db(t)
		p := mustPlan(t, db, files(shop), e.o(Options{}))
		exec(t, db, `CREATE TABLE audit (id int)`)
		_, err := Apply(context.Background(), db, p, ApplyOptions{LockTimeout: time.Second})
		wantCode(t, err, report.StalePlan)
		if got := columns(t, db, "customers"); got != "" {
			t.Fatalf("stale plan executed: customers has %s", got)
		}
	})

	t.Run("rows written after planning do not make the plan stale", func(t *testing.T) {
		db, _ := e.db(t)
		base := `CREATE TABLE events (id int GENERATED ALWAYS AS IDENTITY PRIMARY KEY, seq bigserial, body text);`
		mustApply(t, db, mustPlan(t, db, files(base), e.o(Options{})), ApplyOptions{})
		p := mustPlan(t, db, files(base+`CREATE TABLE extra (id int);`), e.o(Options{}))
		exec(t, db, `INSERT INTO events (body) SELECT 'x' FROM generate_series(1, 50)`)
		if res := mustApply(t, db, p, ApplyOptions{}); !res.Converged {
			t.Fatalf("apply: %+v", res)
		}
	})

	t.Run("a failing statement rolls back the whole plan", func(t *testing.T) {
		db, _ := e.db(t)
		mustApply(t, db, mustPlan(t, db, files(shop), e.o(Options{})), ApplyOptions{})
		exec(t, db, `INSERT INTO customers (email) VALUES ('a@example.com')`)
		p := mustPlan(t, db, files(shop+`CREATE TABLE audit (id int);`+"\n"+`ALTER TABLE customers ADD COLUMN tier int NOT NULL;`), e.o(Options{}))
		if len(p.Statements) != 2 || p.Destructive || !slices.ContainsFunc(p.Statements, func(s Statement) bool { return slices.Contains(s.Hazards, HazardMayFail) }) {
			t.Fatalf("plan: %+v", p.Statements)
		}
		_, err := Apply(context.Background(), db, p, ApplyOptions{AllowDestructive: true, LockTimeout: time.Second})
		if e := wantCode(t, err, report.Execution); !strings.Contains(e.Message, "rolled back") {
			t.Fatalf("message: %s", e.Message)
		}
		if got := columns(t, db, "audit") + columns(t, db, "customers"); got != "id,email,name" {
			t.Fatalf("a statement of the failed plan was committed: %s", got)
		}
	})

	t.Run("an edited plan is refused", func(t *testing.T) {
		db, _ := e.db(t)
		p := mustPlan(t, db, files(shop), e.o(Options{}))
		b, _ := p.Marshal()
		_, err := ReadPlan("plan.json", []byte(strings.Replace(string(b), "CREATE TABLE", "CREATE UNLOGGED TABLE", 1)))
		wantCode(t, err, report.PlanInvalid)
		if _, err := ReadPlan("plan.json", b); err != nil {
			t.Fatalf("unedited plan refused: %v", err)
		}
	})

	t.Run("malformed SQL names the file and line and applies nothing", func(t *testing.T) {
		db, _ := e.db(t)
		bad := "CREATE TABLE a (id int);\n\nCREATE TABLE b (\n  id int,\n  oops nosuchtype\n);\n"
		_, err := ComputePlan(context.Background(), db, []File{{Name: "good.sql", Text: shop}, {Name: "bad.sql", Text: bad}}, e.o(Options{}))
		parseErr := wantCode(t, err, report.Parse)
		if !strings.Contains(parseErr.Message, "bad.sql:5:") || !strings.Contains(parseErr.Message, "nosuchtype") {
			t.Fatalf("message: %s", parseErr.Message)
		}
		_, err = ComputePlan(context.Background(), db, []File{{Name: "syntax.sql", Text: "CREATE TABLE a (id int);\nCREATE TABLEX b (id int);\n"}}, e.o(Options{}))
		if e := wantCode(t, err, report.Parse); !strings.Contains(e.Message, "syntax.sql:2:") {
			t.Fatalf("message: %s", e.Message)
		}
		if got := columns(t, db, "customers") + columns(t, db, "a"); got != "" || strangeSchemas(t, db) != 0 {
			t.Fatalf("malformed SQL left objects behind: %q, %d schemas", got, strangeSchemas(t, db))
		}
	})

	t.Run("concurrent applies are serialised by the lock", func(t *testing.T) {
		db, _ := e.db(t)
		p := mustPlan(t, db, files(shop), e.o(Options{}))
		var wg sync.WaitGroup
		errs := make([]error, 4)
		for i := range errs {
			wg.Add(1)
			go func() {
				defer wg.Done()
				_, errs[i] = Apply(context.Background(), db, p, ApplyOptions{LockTimeout: 30 * time.Second})
			}()
		}
		wg.Wait()
		applied := 0
		for _, err := range errs {
			if err == nil {
				applied++
				continue
			}
			// Serialised, every later apply finds the state changed; without
			// the lock one would fail on "relation already exists".
			wantCode(t, err, report.StalePlan)
		}
		if applied != 1 {
			t.Fatalf("%d applies succeeded, want exactly 1: %v", applied, errs)
		}
	})

	t.Run("a lock held by another session times out", func(t *testing.T) {
		db, _ := e.db(t)
		p := mustPlan(t, db, files(shop), e.o(Options{}))
		holder, err := db.Conn(context.Background())
		if err != nil {
			t.Fatal(err)
		}
		defer holder.Close()
		if _, err := holder.ExecContext(context.Background(), "SELECT pg_advisory_lock($1)", database.LockKey); err != nil {
			t.Fatal(err)
		}
		_, err = Apply(context.Background(), db, p, ApplyOptions{LockTimeout: 300 * time.Millisecond})
		wantCode(t, err, report.LockTimeout)
		if got := columns(t, db, "customers"); got != "" {
			t.Fatalf("apply ran without the lock: %s", got)
		}
		holder.ExecContext(context.Background(), "SELECT pg_advisory_unlock($1)", database.LockKey)
		mustApply(t, db, p, ApplyOptions{LockTimeout: time.Second})
	})

	t.Run("drift of a hand-made DROP COLUMN", func(t *testing.T) {
		db, _ := e.db(t)
		fs := files(shop)
		mustApply(t, db, mustPlan(t, db, fs, e.o(Options{})), ApplyOptions{})
		d, err := ComputeDrift(context.Background(), db, fs, e.o(Options{}), false)
		if err != nil || d.Drift || d.Changes != 0 {
			t.Fatalf("no drift expected: %+v %v", d, err)
		}
		exec(t, db, `ALTER TABLE customers DROP COLUMN name`)
		exec(t, db, `ALTER TABLE orders ADD COLUMN note text`)
		d, err = ComputeDrift(context.Background(), db, fs, e.o(Options{}), true)
		if err != nil {
			t.Fatal(err)
		}
		if !d.Drift || d.Changes != 2 || d.Categories["column_missing"] != 1 || d.Categories["column_unexpected"] != 1 || d.HighestSeverity != Destructive {
			t.Fatalf("drift: %+v", d)
		}
		if len(d.Objects) != 2 || d.Objects[0].Object != "customers.name" || d.Objects[0].Severity != Safe || d.Objects[1].Object != "orders.note" || d.Objects[1].Severity != Destructive {
			t.Fatalf("objects: %+v", d.Objects)
		}
		exec(t, db, `ALTER TABLE orders DROP COLUMN note`)
		d, _ = ComputeDrift(context.Background(), db, fs, e.o(Options{}), false)
		if d.Categories["column_missing"] != 1 || d.Changes != 1 || d.HighestSeverity != Safe || d.Objects != nil {
			t.Fatalf("drift: %+v", d)
		}
	})

	t.Run("excluded tables are neither compared nor changed", func(t *testing.T) {
		db, _ := e.db(t)
		exec(t, db, `CREATE TABLE legacy_audit (id int)`)
		p := mustPlan(t, db, files(shop), e.o(Options{Exclude: []string{"legacy_*"}}))
		for _, s := range p.Statements {
			if strings.Contains(s.SQL, "legacy_audit") {
				t.Fatalf("excluded table planned: %s", s.SQL)
			}
		}
		mustApply(t, db, p, ApplyOptions{})
		if got := columns(t, db, "legacy_audit"); got != "id" {
			t.Fatalf("legacy_audit: %s", got)
		}
	})
}

// exec changes db by hand as its owner, as a person with the app's role would.
func exec(t *testing.T, db *database.DB, q string) {
	t.Helper()
	if _, err := db.Exec(q); err != nil {
		t.Fatalf("%s: %v", q, err)
	}
}
