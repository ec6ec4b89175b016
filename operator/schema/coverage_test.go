package schema

import (
	"context"
	"strings"
	"testing"

	"ptah.run/operator/operator/database"
	"ptah.run/operator/operator/report"
)

// TestNoSilentConvergence puts an object of every kind atlas does not plan
// on one side only. A kind ptah plans must converge: applied, the database
// has the desired fingerprint and a second plan is empty. Any other kind
// must be refused by plan and drift, naming the kind and the object, never
// answered with an empty plan.
func TestNoSilentConvergence(t *testing.T) {
	e := newEngine(t)
	base := "CREATE TABLE t (id int PRIMARY KEY, v text);\n"
	fn := "CREATE FUNCTION touch() RETURNS trigger LANGUAGE plpgsql AS $$ BEGIN RETURN NEW; END $$;\n"
	cases := []struct {
		name, extra, kind, object string
		planned                   bool
	}{
		{"view", "CREATE VIEW tv AS SELECT id FROM t;", "view", "tv", true},
		{"materialized view", "CREATE MATERIALIZED VIEW tm AS SELECT id FROM t;", "materialized view", "tm", true},
		{"function", "CREATE FUNCTION add1(i int) RETURNS int LANGUAGE sql AS 'SELECT i + 1';", "function", "add1(i integer)", true},
		{"procedure", "CREATE PROCEDURE noop() LANGUAGE sql AS 'SELECT 1';", "procedure", "noop()", true},
		{"trigger", fn + "CREATE TRIGGER t_touch BEFORE UPDATE ON t FOR EACH ROW EXECUTE FUNCTION touch();", "trigger", "t_touch on t", true},
		{"domain", "CREATE DOMAIN posint AS int CHECK (VALUE > 0);", "domain", "posint", true},
		{"domain checked by a function", "CREATE FUNCTION is_pos(i int) RETURNS bool LANGUAGE sql IMMUTABLE AS 'SELECT i > 0'; CREATE DOMAIN posint AS int CHECK (is_pos(VALUE));", "domain", "posint", true},
		{"composite type", "CREATE TYPE pair AS (a int, b int);", "composite type", "pair", true},
		{"range type", "CREATE TYPE floatrange AS RANGE (subtype = float8);", "range type", "floatrange", true},
		{"aggregate", "CREATE AGGREGATE total(int) (SFUNC = int4pl, STYPE = int, INITCOND = '0');", "aggregate", "total(integer)", true},
		{"grant", "GRANT SELECT, UPDATE (v) ON t TO PUBLIC;", "privileges", "table t", true},
		{"policy", "ALTER TABLE t ENABLE ROW LEVEL SECURITY; CREATE POLICY own ON t USING (v = current_user);", "policy", "own on t", true},
		{"row level security", "ALTER TABLE t ENABLE ROW LEVEL SECURITY;", "row level security", "t", true},
		{"comment on a view", "CREATE VIEW tv AS SELECT id FROM t; COMMENT ON VIEW tv IS 'x';", "view", "tv", true},
		{"comment on a constraint", "COMMENT ON CONSTRAINT t_pkey ON t IS 'the key';", "comment on constraint", "on t", true},
		{"comment on the schema", "COMMENT ON SCHEMA public IS 'ours';", "comment on schema", "public", true},
		{"rule", "CREATE RULE noins AS ON INSERT TO t DO INSTEAD NOTHING;", "rule", "noins on t", false},
		{"unlogged table", "CREATE UNLOGGED TABLE u (id int);", "table property", "u", true},
		{"table made unlogged", "ALTER TABLE t SET UNLOGGED;", "table property", "t", true},
		{"inheriting table", "CREATE TABLE c (w int) INHERITS (t);", "table property", "c", true},
		{"another schema", "CREATE SCHEMA app; CREATE TABLE app.x (id int);", "schema", "app", false},
	}
	for _, c := range cases {
		if c.planned {
			t.Run(c.name+" only desired is planned", func(t *testing.T) {
				db, _ := e.db(t)
				exec(t, db, base)
				converges(t, e, db, base+c.extra)
			})
			t.Run(c.name+" only in the database is planned", func(t *testing.T) {
				db, _ := e.db(t)
				exec(t, db, base+c.extra)
				converges(t, e, db, base)
			})
			continue
		}
		t.Run(c.name+" only desired", func(t *testing.T) {
			db, _ := e.db(t)
			exec(t, db, base)
			_, err := ComputePlan(context.Background(), db, files(base+c.extra), e.o(Options{}))
			wantNamed(t, err, c.kind, c.object)
			_, err = ComputeDrift(context.Background(), db, files(base+c.extra), e.o(Options{}), true)
			wantNamed(t, err, c.kind, c.object)
		})
		if c.kind == "schema" || c.kind == "table property" {
			// Other schemas of the database are not managed; a table's
			// properties go with it (TestPartitions).
			continue
		}
		t.Run(c.name+" only in the database", func(t *testing.T) {
			db, _ := e.db(t)
			exec(t, db, base+c.extra)
			_, err := ComputePlan(context.Background(), db, files(base), e.o(Options{}))
			wantNamed(t, err, c.kind, c.object)
		})
	}
	t.Run("a view defined differently, with a view reading it", func(t *testing.T) {
		db, _ := e.db(t)
		exec(t, db, base+"CREATE VIEW tv AS SELECT id FROM t; CREATE VIEW tw AS SELECT * FROM tv; COMMENT ON VIEW tw IS 'kept';")
		converges(t, e, db, base+"CREATE VIEW tv AS SELECT id, v FROM t; CREATE VIEW tw AS SELECT * FROM tv; COMMENT ON VIEW tw IS 'kept';")
	})
	t.Run("a column a view reads changes type", func(t *testing.T) {
		db, _ := e.db(t)
		exec(t, db, base+"CREATE VIEW tv AS SELECT id, v FROM t;")
		converges(t, e, db, "CREATE TABLE t (id bigint PRIMARY KEY, v text); CREATE VIEW tv AS SELECT id, v FROM t;")
	})
	t.Run("a domain in use changes in place", func(t *testing.T) {
		db, _ := e.db(t)
		exec(t, db, base+"CREATE DOMAIN posint AS int CHECK (VALUE > 0); CREATE TABLE u (n posint);")
		converges(t, e, db, base+"CREATE DOMAIN posint AS int DEFAULT 1 CONSTRAINT big CHECK (VALUE > 1); CREATE TABLE u (n posint);")
	})
	t.Run("a function's return type changes", func(t *testing.T) {
		db, _ := e.db(t)
		exec(t, db, base+"CREATE FUNCTION f() RETURNS int LANGUAGE sql AS 'SELECT 1';")
		converges(t, e, db, base+"CREATE FUNCTION f() RETURNS bigint LANGUAGE sql AS 'SELECT 1';")
	})
	t.Run("a domain of another base type is refused", func(t *testing.T) {
		db, _ := e.db(t)
		exec(t, db, base+"CREATE DOMAIN posint AS int CHECK (VALUE > 0);")
		_, err := ComputePlan(context.Background(), db, files(base+"CREATE DOMAIN posint AS bigint CHECK (VALUE > 0);"), e.o(Options{}))
		wantNamed(t, err, "domain", "posint")
	})
	t.Run("the same on both sides is checked and in sync", func(t *testing.T) {
		db, _ := e.db(t)
		all := base + fn + "CREATE VIEW tv AS SELECT id FROM t; CREATE TRIGGER t_touch BEFORE UPDATE ON t FOR EACH ROW EXECUTE FUNCTION touch(); CREATE DOMAIN posint AS int CHECK (VALUE > 0); COMMENT ON VIEW tv IS 'x';"
		exec(t, db, all)
		p := mustPlan(t, db, files(all), e.o(Options{}))
		if len(p.Statements) != 0 || p.BaseFingerprint != p.DesiredFingerprint {
			t.Fatalf("want an empty plan with equal fingerprints, got %+v", p)
		}
	})
	t.Run("a difference atlas does not see is planned from the catalog", func(t *testing.T) {
		db, _ := e.db(t)
		exec(t, db, "CREATE TABLE s (id int PRIMARY KEY);")
		converges(t, e, db, "CREATE TABLE s (id int PRIMARY KEY DEFERRABLE);")
	})
}

// converges plans db to desired, applies the plan and checks the result is
// the desired state: the fingerprint the plan promised and an empty second
// plan.
func converges(t *testing.T, e *engine, db *database.DB, desired string) {
	t.Helper()
	p := mustPlan(t, db, files(desired), e.o(Options{}))
	if len(p.Statements) == 0 {
		t.Fatal("want statements, got an empty plan")
	}
	res := mustApply(t, db, p, ApplyOptions{AllowDestructive: true})
	if !res.Applied || !res.Converged {
		t.Fatalf("applied %+v; plan %+v", res, p.Statements)
	}
	if again := mustPlan(t, db, files(desired), e.o(Options{})); len(again.Statements) != 0 {
		t.Fatalf("second plan not empty: %+v", again.Statements)
	}
}

// wantNamed checks err is a coverage refusal naming kind and object.
func wantNamed(t *testing.T, err error, kind, object string) {
	t.Helper()
	if err == nil {
		t.Fatalf("want a refusal naming %s %s, got a plan", kind, object)
	}
	e := report.AsError(err)
	if e.Code != report.UnmanagedObject && e.Code != report.UnplannedDifference {
		t.Fatalf("want %s or %s, got %v", report.UnmanagedObject, report.UnplannedDifference, err)
	}
	if !strings.Contains(e.Message, kind+" ") || !strings.Contains(e.Message, object) {
		t.Fatalf("want the message to name %s %s, got %s", kind, object, e.Message)
	}
}

// TestPartitionOwnObjects: what a partition has of its own, not from its
// partitioned table: its indexes, constraints, columns' own NOT NULL,
// defaults and comments and its properties (its persistence too) are
// planned on it, either way; what it inherits keeps planning.
func TestPartitionOwnObjects(t *testing.T) {
	e := newEngine(t)
	const base = `CREATE TABLE r (id bigint PRIMARY KEY);
CREATE TABLE logs (id bigint NOT NULL, at timestamp NOT NULL, v text) PARTITION BY RANGE (at);
CREATE TABLE logs_01 PARTITION OF logs FOR VALUES FROM ('2024-01-01') TO ('2024-02-01');
`
	for name, extra := range map[string]string{
		"index":             "CREATE INDEX logs_01_v ON logs_01 (v);",
		"unnamed index":     "CREATE INDEX ON logs_01 (v);",
		"primary key":       "ALTER TABLE logs_01 ADD CONSTRAINT logs_01_k PRIMARY KEY (id);",
		"unique constraint": "ALTER TABLE logs_01 ADD CONSTRAINT logs_01_u UNIQUE (v);",
		"check constraint":  "ALTER TABLE logs_01 ADD CONSTRAINT logs_01_pos CHECK (id > 0);",
		"unnamed check":     "ALTER TABLE logs_01 ADD CHECK (id > 0);",
		"foreign key":       "ALTER TABLE logs_01 ADD CONSTRAINT logs_01_r FOREIGN KEY (id) REFERENCES r;",
	} {
		t.Run("a partition's own "+name+" is planned, desired", func(t *testing.T) {
			db, _ := e.db(t)
			exec(t, db, base)
			converges(t, e, db, base+extra)
		})
		t.Run("a partition's own "+name+" is planned, in the database", func(t *testing.T) {
			db, _ := e.db(t)
			exec(t, db, base+extra)
			converges(t, e, db, base)
		})
	}
	for name, extra := range map[string]string{
		"column default":    "ALTER TABLE logs_01 ALTER COLUMN v SET DEFAULT 'x';",
		"column not null":   "ALTER TABLE logs_01 ALTER COLUMN v SET NOT NULL;",
		"column comment":    "COMMENT ON COLUMN logs_01.v IS 'note';",
		"table comment":     "COMMENT ON TABLE logs_01 IS 'january';",
		"storage parameter": "ALTER TABLE logs_01 SET (fillfactor = 70);",
		"replica identity":  "ALTER TABLE logs_01 REPLICA IDENTITY FULL;",
	} {
		t.Run("a partition's own "+name+" is planned, desired", func(t *testing.T) {
			db, _ := e.db(t)
			exec(t, db, base)
			converges(t, e, db, base+extra)
		})
		t.Run("a partition's own "+name+" is planned, in the database", func(t *testing.T) {
			db, _ := e.db(t)
			exec(t, db, base+extra)
			converges(t, e, db, base)
		})
	}
	// A partition's persistence is its own: SET UNLOGGED or LOGGED on it.
	const unlogged = "ALTER TABLE logs_01 SET UNLOGGED;"
	t.Run("persistence only desired", func(t *testing.T) {
		db, _ := e.db(t)
		exec(t, db, base)
		converges(t, e, db, base+unlogged)
	})
	t.Run("persistence only in the database", func(t *testing.T) {
		db, _ := e.db(t)
		exec(t, db, base+unlogged)
		converges(t, e, db, base)
	})
	t.Run("an excluded partitioned table takes in its partitions' own objects", func(t *testing.T) {
		db, _ := e.db(t)
		exec(t, db, base+"CREATE INDEX logs_01_v ON logs_01 (v); ALTER TABLE logs_01 ALTER COLUMN v SET DEFAULT 'x';")
		p := mustPlan(t, db, files(base), e.o(Options{Exclude: []string{"logs"}}))
		if len(p.Statements) != 0 {
			t.Fatalf("want an empty plan, got %+v", p.Statements)
		}
	})
	fn := "CREATE FUNCTION touch() RETURNS trigger LANGUAGE plpgsql AS $$ BEGIN RETURN NEW; END $$;\n"
	for name, extra := range map[string]string{
		"trigger": fn + "CREATE TRIGGER t_touch BEFORE UPDATE ON logs_01 FOR EACH ROW EXECUTE FUNCTION touch();",
		"policy":  "ALTER TABLE logs_01 ENABLE ROW LEVEL SECURITY; CREATE POLICY own ON logs_01 USING (v = current_user);",
	} {
		t.Run("a partition's own "+name+" is planned, desired", func(t *testing.T) {
			db, _ := e.db(t)
			exec(t, db, base)
			converges(t, e, db, base+extra)
		})
		t.Run("a partition's own "+name+" is planned, in the database", func(t *testing.T) {
			db, _ := e.db(t)
			exec(t, db, base+extra)
			converges(t, e, db, base)
		})
	}
	const parent = `CREATE TABLE r (id bigint PRIMARY KEY);
CREATE TABLE logs (id bigint NOT NULL, at timestamp NOT NULL, v text DEFAULT 'x', PRIMARY KEY (id, at), UNIQUE (v, id, at),
  CONSTRAINT logs_pos CHECK (id > 0), CONSTRAINT logs_r FOREIGN KEY (id) REFERENCES r) PARTITION BY RANGE (at);
CREATE INDEX logs_at ON logs (at);
COMMENT ON COLUMN logs.v IS 'the value';
`
	const parts = `CREATE TABLE logs_01 PARTITION OF logs FOR VALUES FROM ('2024-01-01') TO ('2024-02-01');
CREATE TABLE logs_02 PARTITION OF logs FOR VALUES FROM ('2024-02-01') TO ('2024-03-01') PARTITION BY HASH (id);
CREATE TABLE logs_02_0 PARTITION OF logs_02 FOR VALUES WITH (MODULUS 2, REMAINDER 0);
CREATE TABLE logs_02_1 PARTITION OF logs_02 FOR VALUES WITH (MODULUS 2, REMAINDER 1);
`
	t.Run("inherited indexes and constraints plan", func(t *testing.T) {
		db, _ := e.db(t)
		exec(t, db, "CREATE TABLE r (id bigint PRIMARY KEY);")
		converges(t, e, db, parent+parts)
	})
	t.Run("partitions added under inherited indexes and constraints plan", func(t *testing.T) {
		db, _ := e.db(t)
		exec(t, db, parent)
		converges(t, e, db, parent+parts)
	})
	t.Run("the partitioned table's default and check change", func(t *testing.T) {
		db, _ := e.db(t)
		exec(t, db, parent+parts)
		changed := strings.NewReplacer("DEFAULT 'x'", "DEFAULT 'y'", "CHECK (id > 0)", "CHECK (id > 1)").Replace(parent)
		converges(t, e, db, changed+parts)
	})
	attached := parent + `CREATE TABLE logs_01 (id bigint NOT NULL, at timestamp NOT NULL, v text DEFAULT 'x', CONSTRAINT logs_pos CHECK (id > 0));
CREATE INDEX logs_01_own_at ON logs_01 (at);
ALTER TABLE logs ATTACH PARTITION logs_01 FOR VALUES FROM ('2024-01-01') TO ('2024-02-01');`
	t.Run("a partition attached with its own matching index and check is in sync", func(t *testing.T) {
		db, _ := e.db(t)
		exec(t, db, attached)
		p := mustPlan(t, db, files(attached), e.o(Options{}))
		if len(p.Statements) != 0 || p.BaseFingerprint != p.DesiredFingerprint {
			t.Fatalf("want an empty plan with equal fingerprints, got %+v", p)
		}
	})
	// pg_dump shows the attached index under its own name, where the
	// desired partition's is PostgreSQL's (logs_01_at_idx): not in sync.
	t.Run("a partition's attached index under another name is a difference", func(t *testing.T) {
		db, _ := e.db(t)
		exec(t, db, attached)
		_, err := ComputePlan(context.Background(), db, files(parent+`CREATE TABLE logs_01 PARTITION OF logs FOR VALUES FROM ('2024-01-01') TO ('2024-02-01');`), e.o(Options{}))
		if err == nil || report.AsError(err).Code != report.UnplannedDifference || !strings.Contains(err.Error(), "logs_01_own_at") {
			t.Fatalf("want unplanned_difference naming logs_01_own_at, got %v", err)
		}
	})
}
