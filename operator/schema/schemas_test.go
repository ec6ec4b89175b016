package schema

import (
	"context"
	"strings"
	"testing"

	"ptah.run/operator/operator/database"
	"ptah.run/operator/operator/report"
)

const twoSchemas = `
CREATE SCHEMA billing;
CREATE TABLE public.customers (id int PRIMARY KEY, name text NOT NULL);
CREATE TABLE billing.customers (id int PRIMARY KEY, external_ref text);
CREATE TABLE billing.invoices (
  id int PRIMARY KEY,
  customer_id int NOT NULL REFERENCES public.customers (id),
  total numeric(10,2) NOT NULL DEFAULT 0
);
CREATE INDEX invoices_customer_idx ON billing.invoices (customer_id);
CREATE VIEW billing.totals AS
  SELECT c.name, sum(i.total) AS total FROM billing.invoices i JOIN public.customers c ON c.id = i.customer_id GROUP BY c.name;
CREATE VIEW public.big_customers AS SELECT customer_id FROM billing.invoices WHERE total > 100;
CREATE FUNCTION billing.touch() RETURNS trigger LANGUAGE plpgsql AS $$BEGIN RETURN NEW; END$$;
CREATE TRIGGER invoices_touch BEFORE UPDATE ON billing.invoices FOR EACH ROW EXECUTE FUNCTION billing.touch();
COMMENT ON TABLE billing.invoices IS 'one row per invoice';
`

func tableExists(t *testing.T, db *database.DB, qualified string) bool {
	t.Helper()
	var ok bool
	if err := db.QueryRow(`SELECT to_regclass($1) IS NOT NULL`, qualified).Scan(&ok); err != nil {
		t.Fatal(err)
	}
	return ok
}

// TestSchemasOtherThanPublic: a plan keeps the schemas it is told (public
// by default); desired SQL that names public. explicitly plans; two
// schemas holding tables of the same name, a foreign key and views across
// them plan, apply and converge; a schema nobody listed is neither planned
// nor dropped, and desired SQL declaring one is refused.
func TestSchemasOtherThanPublic(t *testing.T) {
	e := newEngine(t)
	ctx := context.Background()
	both := e.o(Options{Schemas: []string{"public", "billing"}})

	t.Run("public-qualified desired SQL, as pg_dump writes it", func(t *testing.T) {
		db, _ := e.db(t)
		desired := files(`CREATE TABLE public.t (id integer NOT NULL, note text);
ALTER TABLE ONLY public.t ADD CONSTRAINT t_pkey PRIMARY KEY (id);
CREATE VIEW public.v AS SELECT t.id FROM public.t;
COMMENT ON COLUMN public.t.note IS 'free text';`)
		p := mustPlan(t, db, desired, e.o(Options{}))
		if p.Schemas != nil || p.Schema != "public" {
			t.Fatalf("a plan of public alone names schemas %v (%s)", p.Schemas, p.Schema)
		}
		if res := mustApply(t, db, p, ApplyOptions{}); !res.Converged {
			t.Fatalf("apply: %+v", res)
		}
		if again := mustPlan(t, db, desired, e.o(Options{})); len(again.Statements) != 0 {
			t.Fatalf("not converged: %+v", again.Statements)
		}
	})

	t.Run("two schemas with a foreign key and views across them converge", func(t *testing.T) {
		db, _ := e.db(t)
		exec(t, db, `CREATE SCHEMA scratch; CREATE TABLE scratch.junk (id int); INSERT INTO scratch.junk VALUES (1);
CREATE TABLE public.customers (id int PRIMARY KEY, name text NOT NULL); INSERT INTO public.customers VALUES (1, 'ada');`)
		p := mustPlan(t, db, files(twoSchemas), both)
		if len(p.Schemas) != 2 || p.Destructive {
			t.Fatalf("plan: schemas %v destructive %v", p.Schemas, p.Destructive)
		}
		var sqls []string
		for _, s := range p.Statements {
			sqls = append(sqls, s.SQL)
			if strings.Contains(s.SQL, "scratch") {
				t.Errorf("an unmanaged schema is planned: %s", s.SQL)
			}
		}
		all := strings.Join(sqls, "\n")
		// The foreign key is pgcatalog's, as PostgreSQL prints it under
		// billing's search path: qualified, since billing.customers
		// shadows public.customers there.
		if !strings.HasPrefix(all, "CREATE SCHEMA billing\n") || !strings.Contains(all, `REFERENCES public.customers(id)`) {
			t.Fatalf("plan:\n%s", all)
		}
		if res := mustApply(t, db, p, ApplyOptions{}); !res.Converged {
			t.Fatalf("apply: %+v\n%s", res, all)
		}
		if again := mustPlan(t, db, files(twoSchemas), both); len(again.Statements) != 0 {
			t.Fatalf("not converged: %+v", again.Statements)
		}
		exec(t, db, `INSERT INTO billing.invoices VALUES (1, 1, 250)`)
		var total string
		if err := db.QueryRow(`SELECT total FROM billing.totals WHERE name = 'ada'`).Scan(&total); err != nil || total != "250.00" {
			t.Fatalf("billing.totals: %q %v", total, err)
		}
		if !tableExists(t, db, "scratch.junk") {
			t.Fatalf("the unmanaged scratch.junk was dropped")
		}

		// Change both schemas: a column on billing.invoices (the views over
		// it are recreated around the change) and billing.customers dropped
		// while public.customers stays.
		next := strings.Replace(twoSchemas, "CREATE TABLE billing.customers (id int PRIMARY KEY, external_ref text);\n", "", 1)
		next = strings.Replace(next, "total numeric(10,2) NOT NULL DEFAULT 0", "total numeric(12,2) NOT NULL DEFAULT 0,\n  note text", 1)
		p = mustPlan(t, db, files(next), both)
		if !p.Destructive {
			t.Fatalf("dropping billing.customers is not destructive: %+v", p.Statements)
		}
		if _, err := ComputePlan(ctx, db, files(next), e.o(Options{Schemas: both.Schemas, Protected: []string{"billing.customers"}})); err == nil {
			t.Fatalf("a plan dropping protected billing.customers was written")
		} else {
			wantCode(t, err, report.ProtectedTable)
		}
		if res := mustApply(t, db, p, ApplyOptions{AllowDestructive: true}); !res.Converged {
			t.Fatalf("apply: %+v", res)
		}
		if again := mustPlan(t, db, files(next), both); len(again.Statements) != 0 {
			t.Fatalf("not converged: %+v", again.Statements)
		}
		if tableExists(t, db, "billing.customers") || !tableExists(t, db, "public.customers") || !tableExists(t, db, "scratch.junk") {
			t.Fatalf("wrong table dropped")
		}
		if err := db.QueryRow(`SELECT total FROM billing.totals WHERE name = 'ada'`).Scan(&total); err != nil || total != "250.00" {
			t.Fatalf("billing.totals after the change: %q %v", total, err)
		}
	})

	t.Run("a new child of a table of another managed schema of the same name as one of its own", func(t *testing.T) {
		db, _ := e.db(t)
		exec(t, db, `CREATE SCHEMA billing; CREATE TABLE billing.base (id int, a text); CREATE TABLE public.base (id int, b text);`)
		desired := files(`CREATE SCHEMA billing; CREATE TABLE billing.base (id int, a text); CREATE TABLE public.base (id int, b text);
CREATE TABLE public.child (x int) INHERITS (billing.base);`)
		p := mustPlan(t, db, desired, both)
		if res := mustApply(t, db, p, ApplyOptions{}); !res.Converged {
			t.Fatalf("apply: %+v", res)
		}
		var parent string
		if err := db.QueryRow("SELECT inhparent::regclass::text FROM pg_inherits WHERE inhrelid = 'public.child'::regclass").Scan(&parent); err != nil || parent != "billing.base" {
			t.Fatalf("child's parent: %q (%v), want billing.base", parent, err)
		}
		if again := mustPlan(t, db, desired, both); len(again.Statements) != 0 {
			t.Fatalf("not converged: %+v", again.Statements)
		}
	})

	// Found on pg-schema-diff's fixtures: with the other managed schemas on
	// each schema's search path, public.t and billing.t printed alike, and
	// statements ran in schema order whatever read what.
	for _, c := range []struct{ name, before, after string }{
		{
			name:   "a foreign key moved to the same-named table of another schema, the old one dropped",
			before: "CREATE SCHEMA billing;\nCREATE TABLE t (k text PRIMARY KEY);\nCREATE TABLE r (id int PRIMARY KEY, k text REFERENCES t);\n",
			after:  "CREATE SCHEMA billing;\nCREATE TABLE billing.t (k text PRIMARY KEY);\nCREATE TABLE r (id int PRIMARY KEY, k text REFERENCES billing.t);\n",
		},
		{
			name:   "a routine whose SQL-standard body calls another schema's, beside a same-named one of its own",
			before: "CREATE SCHEMA billing;\n",
			after: `CREATE SCHEMA billing;
CREATE FUNCTION billing.add(a integer, b integer) RETURNS integer LANGUAGE sql IMMUTABLE RETURN a + b;
CREATE FUNCTION add(a text, b text) RETURNS text LANGUAGE sql IMMUTABLE RETURN a || b;
CREATE FUNCTION total(a integer, b integer) RETURNS integer LANGUAGE sql IMMUTABLE RETURN billing.add(a, b) + 1;
`,
		},
		{
			name: "routines dropped, each before what its body calls",
			before: `CREATE SCHEMA billing;
CREATE FUNCTION billing.add(a integer, b integer) RETURNS integer LANGUAGE sql IMMUTABLE RETURN a + b;
CREATE FUNCTION twice(a integer) RETURNS integer LANGUAGE sql IMMUTABLE RETURN billing.add(a, a);
CREATE FUNCTION "a first"(a integer) RETURNS integer LANGUAGE sql IMMUTABLE RETURN twice(a);
`,
			after: "CREATE SCHEMA billing;\n",
		},
		{
			name:   "a partition in another schema than its parent",
			before: "CREATE SCHEMA billing;\nCREATE TABLE billing.p (id int NOT NULL, k text) PARTITION BY LIST (k);\n",
			after:  "CREATE SCHEMA billing;\nCREATE TABLE billing.p (id int NOT NULL, k text) PARTITION BY LIST (k);\nCREATE TABLE p1 PARTITION OF billing.p FOR VALUES IN ('a');\n",
		},
		{
			name: "partitions of two schemas referencing each other",
			before: `CREATE SCHEMA billing;
CREATE TABLE billing.p (id int NOT NULL, k text NOT NULL, PRIMARY KEY (k, id)) PARTITION BY LIST (k);
CREATE TABLE q (id int NOT NULL, k text NOT NULL, PRIMARY KEY (k, id)) PARTITION BY LIST (k);
`,
			after: `CREATE SCHEMA billing;
CREATE TABLE billing.p (id int NOT NULL, k text NOT NULL, PRIMARY KEY (k, id)) PARTITION BY LIST (k);
CREATE TABLE q (id int NOT NULL, k text NOT NULL, PRIMARY KEY (k, id)) PARTITION BY LIST (k);
CREATE TABLE billing.p1 PARTITION OF billing.p FOR VALUES IN ('a');
CREATE TABLE q1 PARTITION OF q FOR VALUES IN ('a');
ALTER TABLE q1 ADD CONSTRAINT q1_p1 FOREIGN KEY (k, id) REFERENCES billing.p1 (k, id);
ALTER TABLE billing.p1 ADD CONSTRAINT p1_q1 FOREIGN KEY (k, id) REFERENCES q1 (k, id);
`,
		},
		{
			// Creation follows what the desired views read, drops what the
			// live ones read: one order for both had the live reading win.
			name: "views of two schemas whose reading turns round",
			before: `CREATE SCHEMA billing;
CREATE TABLE t (id int);
CREATE VIEW billing.v AS SELECT id FROM public.t;
CREATE VIEW v AS SELECT id FROM billing.v;
`,
			after: `CREATE SCHEMA billing;
CREATE TABLE t (id int, x int);
CREATE VIEW v AS SELECT id, x FROM public.t;
CREATE VIEW billing.v AS SELECT id, x FROM public.v;
`,
		},
		{
			name:   "foreign keys both ways between schemas, one commented",
			before: "CREATE SCHEMA billing;\nCREATE TABLE billing.a (id int PRIMARY KEY);\n",
			after: `CREATE SCHEMA billing;
CREATE TABLE billing.a (id int PRIMARY KEY);
CREATE TABLE b (id int PRIMARY KEY, a_id int);
ALTER TABLE billing.a ADD CONSTRAINT a_b FOREIGN KEY (id) REFERENCES b (id);
ALTER TABLE b ADD CONSTRAINT b_a FOREIGN KEY (a_id) REFERENCES billing.a (id);
COMMENT ON CONSTRAINT a_b ON billing.a IS 'to public';
`,
		},
		{
			name:   "a default and a check calling another schema's function",
			before: "CREATE SCHEMA billing;\nCREATE TABLE t (id int);\n",
			after:  "CREATE SCHEMA billing;\nCREATE FUNCTION billing.next_id() RETURNS int LANGUAGE sql RETURN 42;\nCREATE TABLE t (id int DEFAULT billing.next_id(), note text CHECK (billing.next_id() > 0));\n",
		},
		{
			name:   "a new table's index takes the name of a dropped table's",
			before: "CREATE SCHEMA billing;\nCREATE TABLE old (a int, b int);\nCREATE UNIQUE INDEX ab ON old (a, b);\n",
			after:  "CREATE SCHEMA billing;\nCREATE TABLE fresh (a int, b int);\nCREATE UNIQUE INDEX ab ON fresh (a, b);\n",
		},
		{
			// Relation names are one namespace: found reviewing the case above.
			name:   "a new table takes the name of a dropped table's index",
			before: "CREATE SCHEMA billing;\nCREATE TABLE old (x int);\nCREATE UNIQUE INDEX ab ON old (x);\n",
			after:  "CREATE SCHEMA billing;\nCREATE TABLE ab (x int);\n",
		},
		{
			name:   "an index kept by name over columns that are dropped and added",
			before: "CREATE SCHEMA billing;\nCREATE TABLE t (id int PRIMARY KEY, a int, b int);\nCREATE UNIQUE INDEX t_ab ON t (a, b);\n",
			after:  "CREATE SCHEMA billing;\nCREATE TABLE t (id int PRIMARY KEY, c int, d int);\nCREATE UNIQUE INDEX t_ab ON t (c, d);\n",
		},
	} {
		t.Run(c.name, func(t *testing.T) {
			db, _ := e.db(t)
			exec(t, db, c.before)
			p := mustPlan(t, db, files(c.after), both)
			if res := mustApply(t, db, p, ApplyOptions{AllowDestructive: true}); !res.Converged {
				t.Fatalf("apply: %+v\n%s", res, planText(p))
			}
			// Empty only when the independent rendering agrees.
			if again := mustPlan(t, db, files(c.after), both); len(again.Statements) != 0 {
				t.Fatalf("not converged: %s", planText(again))
			}
		})
	}

	t.Run("a column moved between enums of another managed schema", func(t *testing.T) {
		// Found on migra's fixtures: atlas sees an enum of another schema
		// as a user-defined type, the cast trial looked for it off the
		// search path (and passed), and the plan had no USING; it was
		// marked deletes-data too.
		db, _ := e.db(t)
		const before = `CREATE SCHEMA billing;
CREATE TYPE billing.e1 AS ENUM ('a', 'b', 'c');
CREATE TYPE billing.e2 AS ENUM ('a', 'b', 'c');
CREATE TABLE public.orders (id int PRIMARY KEY, c billing.e1);
`
		exec(t, db, before+`INSERT INTO orders VALUES (1, 'a'), (2, 'c'), (3, NULL);`)
		next := files(strings.Replace(before, "c billing.e1", "c billing.e2", 1))
		p := mustPlan(t, db, next, both)
		if p.Destructive {
			t.Fatalf("moving labels between enums marked destructive: %+v", p.Statements)
		}
		if res := mustApply(t, db, p, ApplyOptions{}); !res.Converged {
			t.Fatalf("apply: %+v", res)
		}
		var got string
		if err := db.QueryRow(`SELECT string_agg(coalesce(c::text, 'null') || ':' || pg_typeof(c)::text, ',' ORDER BY id) FROM orders`).Scan(&got); err != nil || got != "a:billing.e2,c:billing.e2,null:billing.e2" {
			t.Fatalf("values after the apply: %q (%v)", got, err)
		}
		if again := mustPlan(t, db, next, both); len(again.Statements) != 0 {
			t.Fatalf("not converged: %+v", again.Statements)
		}
	})

	t.Run("a schema not listed is not planned, and declaring one is refused", func(t *testing.T) {
		db, _ := e.db(t)
		exec(t, db, `CREATE SCHEMA billing; CREATE TABLE billing.invoices (id int);`)
		p := mustPlan(t, db, files(`CREATE TABLE t (id int);`), e.o(Options{}))
		for _, s := range p.Statements {
			if strings.Contains(s.SQL, "billing") {
				t.Fatalf("public-only plan touches billing: %s", s.SQL)
			}
		}
		_, err := ComputePlan(ctx, db, files(twoSchemas), e.o(Options{}))
		if e := wantCode(t, err, report.UnmanagedObject); !strings.Contains(e.Message, "billing") {
			t.Fatalf("message: %s", e.Message)
		}
	})

	t.Run("a listed schema the desired SQL does not create is emptied and dropped, and nothing else", func(t *testing.T) {
		db, _ := e.db(t)
		exec(t, db, `CREATE SCHEMA billing; CREATE TABLE billing.invoices (id int); INSERT INTO billing.invoices VALUES (1);
CREATE VIEW billing.v AS SELECT id FROM billing.invoices; CREATE SCHEMA scratch; CREATE TABLE scratch.junk (id int);`)
		desired := files(`CREATE TABLE t (id int);`)
		p := mustPlan(t, db, desired, both)
		if !p.Destructive || !strings.HasPrefix(p.Statements[len(p.Statements)-1].SQL, "DROP SCHEMA billing") {
			t.Fatalf("plan: %+v", p.Statements)
		}
		_, err := Apply(ctx, db, p, ApplyOptions{LockTimeout: 5e9})
		wantCode(t, err, report.DestructiveRefused)
		if res := mustApply(t, db, p, ApplyOptions{AllowDestructive: true}); !res.Converged {
			t.Fatalf("apply: %+v", res)
		}
		if tableExists(t, db, "billing.invoices") || !tableExists(t, db, "scratch.junk") || !tableExists(t, db, "public.t") {
			t.Fatalf("wrong tables after the drop")
		}
		if again := mustPlan(t, db, desired, both); len(again.Statements) != 0 {
			t.Fatalf("not converged: %+v", again.Statements)
		}
	})
}
