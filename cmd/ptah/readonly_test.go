package main

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"fmt"
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"testing"

	"github.com/jackc/pgx/v5"
	"pgregory.net/rapid"

	"ptah.run/operator/internal/testenv"
	"ptah.run/operator/operator/catalogread"
	"ptah.run/operator/operator/database"
	"ptah.run/operator/operator/devdb"
	"ptah.run/operator/operator/report"
)

// liveExpressions is the target's schema: one object for each place
// PostgreSQL takes an expression, each with an expression of its own, so
// that a desired file changing any of them makes the planner compare two
// expressions there.
const liveExpressions = `
CREATE FUNCTION tg() RETURNS trigger LANGUAGE plpgsql AS $$BEGIN RETURN NEW; END$$;
CREATE DOMAIN dom AS int CHECK (VALUE > 9);
CREATE TABLE parent (
  id int PRIMARY KEY,
  a int DEFAULT 1,
  b int CHECK (b > 0),
  c int GENERATED ALWAYS AS (a + 1) STORED,
  d dom
);
CREATE INDEX parent_expr ON parent ((a + 2));
CREATE INDEX parent_pred ON parent (a) WHERE a > 3;
CREATE VIEW v AS SELECT id, a + 4 AS x FROM parent;
CREATE MATERIALIZED VIEW mv AS SELECT id, a + 5 AS x FROM parent;
ALTER TABLE parent ENABLE ROW LEVEL SECURITY;
CREATE POLICY p ON parent USING (a > 6) WITH CHECK (a > 7);
CREATE TRIGGER t BEFORE UPDATE ON parent FOR EACH ROW WHEN (NEW.a > 8) EXECUTE FUNCTION tg();
CREATE TABLE part (k int, v int) PARTITION BY RANGE (k);
CREATE TABLE part_1 PARTITION OF part FOR VALUES FROM (0) TO (10);
INSERT INTO parent (id, a, b, d) SELECT g, g, g, 10 + g FROM generate_series(1, 5) g;
`

// place is where a desired file puts an expression: the live schema's
// object with the expression replaced by x. immutable places take only a
// function declared IMMUTABLE.
type place struct {
	name      string
	immutable bool
	sql       func(x string) string
}

var places = []place{
	{"column default", false, func(x string) string { return "ALTER TABLE parent ALTER COLUMN a SET DEFAULT " + x }},
	{"check constraint", false, func(x string) string {
		return "ALTER TABLE parent ADD CONSTRAINT probe_check CHECK (b > " + x + " - 100)"
	}},
	{"generated column", true, func(x string) string {
		return "ALTER TABLE parent ADD COLUMN g int GENERATED ALWAYS AS (a + " + x + ") STORED"
	}},
	{"index expression", true, func(x string) string { return "CREATE INDEX probe_expr ON parent ((a + " + x + "))" }},
	{"index predicate", true, func(x string) string { return "CREATE INDEX probe_pred ON parent (a) WHERE a > " + x }},
	{"view body", false, func(x string) string { return "CREATE VIEW probe_v AS SELECT id, a + " + x + " AS x FROM parent" }},
	{"materialized view body", false, func(x string) string {
		return "CREATE MATERIALIZED VIEW probe_mv AS SELECT id, a + " + x + " AS x FROM parent WITH NO DATA"
	}},
	{"policy", false, func(x string) string {
		return "CREATE POLICY probe_p ON parent USING (a > " + x + ") WITH CHECK (a > " + x + ")"
	}},
	{"trigger when", false, func(x string) string {
		return "CREATE TRIGGER probe_t BEFORE UPDATE ON parent FOR EACH ROW WHEN (NEW.a > " + x + ") EXECUTE FUNCTION tg()"
	}},
	{"domain constraint", false, func(x string) string {
		return "ALTER DOMAIN dom ADD CONSTRAINT probe_dom CHECK (VALUE > " + x + " - 100) NOT VALID"
	}},
	{"partition bound", true, func(x string) string {
		return "CREATE TABLE part_2 PARTITION OF part FOR VALUES FROM (10 * " + x + ") TO (100)"
	}},
	{"function default argument", false, func(x string) string {
		return "CREATE FUNCTION probe_f(n int DEFAULT " + x + ") RETURNS int LANGUAGE sql AS 'SELECT n'"
	}},
	{"column default of a new table", false, func(x string) string { return "CREATE TABLE probe_t (n int DEFAULT " + x + ")" }},
	{"rule condition", false, func(x string) string {
		return "CREATE RULE probe_r AS ON UPDATE TO parent WHERE NEW.a > " + x + " DO ALSO SELECT 1"
	}},
	{"exclusion constraint", true, func(x string) string {
		return "ALTER TABLE parent ADD CONSTRAINT probe_excl EXCLUDE USING btree ((a + " + x + ") WITH =)"
	}},
	{"statistics expression", true, func(x string) string { return "CREATE STATISTICS probe_s ON (a + " + x + "), b FROM parent" }},
}

// sideEffects are int expressions that act beyond the session evaluating
// them: each would be seen on the target (a killed session, a held lock, a
// changed setting, a notification, a sleep) or in its statement log (the
// marker). pid is the target's idle session. fn is a function of the
// desired file that does them all, declared IMMUTABLE as a lie.
func sideEffects(marker string, pid uint32) (direct []string, fn string) {
	fn = marker + "_fx()"
	direct = []string{
		fn,
		fmt.Sprintf("(pg_terminate_backend(%d))::int", pid),
		fmt.Sprintf("(pg_cancel_backend(%d))::int", pid),
		"length(set_config('ptah." + marker + "', 'x', false))",
		"length(pg_advisory_lock(424242)::text)",
		"length(pg_sleep(0.01)::text)",
		"length(pg_notify('" + marker + "', 'x')::text)",
		"nextval('" + marker + "_seq')::int",
		"length('" + marker + "')",
	}
	return direct, fn
}

func sideEffectFunction(marker string, pid uint32) string {
	return fmt.Sprintf(`CREATE SEQUENCE %[1]s_seq;
CREATE FUNCTION %[1]s_fx() RETURNS int LANGUAGE plpgsql IMMUTABLE AS $fx$
BEGIN
  PERFORM pg_terminate_backend(%[2]d);
  PERFORM pg_advisory_lock(424242);
  PERFORM set_config('ptah.%[1]s', 'x', false);
  PERFORM pg_notify('%[1]s', 'x');
  PERFORM pg_sleep(0.01);
  RETURN 1;
END
$fx$;
`, marker, pid)
}

// logEntry is one statement of the target's log.
type logEntry struct{ who, text string }

var logStart = regexp.MustCompile(`(?m)^\d{4}-\d\d-\d\d \d\d:\d\d:\d\d\.\d+ \S+ \[\d+\] `)
var logStatement = regexp.MustCompile(`(?s)^(\S*@\S*) LOG:  (?:statement|execute [^:]+): (.*)$`)

// statements parses the statements a log (LogLinePrefix) records.
func statements(log string) []logEntry {
	var out []logEntry
	starts := logStart.FindAllStringIndex(log, -1)
	for i, s := range starts {
		end := len(log)
		if i+1 < len(starts) {
			end = starts[i+1][0]
		}
		if m := logStatement.FindStringSubmatch(strings.TrimSuffix(log[s[1]:end], "\n")); m != nil {
			// The log writes a tab after each line break of a message.
			out = append(out, logEntry{who: m[1], text: strings.ReplaceAll(m[2], "\n\t", "\n")})
		}
	}
	return out
}

// TestReadOnlyCommandsSendTheTargetOnlyReviewedStatements holds plan,
// drift (the Observe), plan again (the Proof), apply --dry-run and
// migrations status to the promise that the target receives nothing derived
// from the desired SQL: with log_statement=all on the target, every
// statement it logs from ptah's sessions is one of catalogread's, the
// marker written into every desired file never appears in its log, an idle
// session survives, no advisory lock or setting is left behind, and the
// target's schema and rows are unchanged. The desired files are generated:
// a side-effecting call in every place PostgreSQL takes an expression.
// The committed seeds (one per place) run first; `make readonly-fuzz` runs
// the generator long.
func TestReadOnlyCommandsSendTheTargetOnlyReviewedStatements(t *testing.T) {
	testenv.RapidChecks(t, 8)
	pg := testenv.StartPostgres(t)
	dbURL := pg.CreateDatabase(t, "shop")
	devPG := testenv.StartPostgres(t)
	devURL := devPG.CreateDatabase(t, "dev")
	devPG.Exec(t, "postgres", "ALTER ROLE dev CREATEDB CREATEROLE")
	t.Setenv(devdb.URLEnv, devURL)
	t.Setenv(database.URLEnv, dbURL)
	c := &cli{t: t, secrets: []string{mustPassword(t, dbURL), mustPassword(t, devURL), pg.SuperPassword, devPG.SuperPassword}}

	ctx := context.Background()
	owner, err := pgx.Connect(ctx, dbURL)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := owner.Exec(ctx, liveExpressions); err != nil {
		t.Fatalf("seed the target: %v", err)
	}
	owner.Close(ctx)
	idle, err := pgx.Connect(ctx, pg.SuperURL("shop"))
	if err != nil {
		t.Fatal(err)
	}
	defer idle.Close(ctx)
	pid := idle.PgConn().PID()
	pg.LogStatements(t)
	before := pg.Snapshot(t, "shop")

	dir := t.TempDir()
	migrations := filepath.Join(dir, "migrations")
	if err := os.Mkdir(migrations, 0o755); err != nil {
		t.Fatal(err)
	}
	compared, cases := 0, 0
	outer := t
	check := func(t interface {
		Fatalf(string, ...any)
		Fatal(...any)
	}, desired string, marker string) {
		cases++
		from := len(pg.Log())
		f := filepath.Join(dir, "desired.sql")
		if err := os.WriteFile(f, []byte(desired), 0o644); err != nil {
			t.Fatal(err)
		}
		plan := filepath.Join(dir, "plan.json")
		os.Remove(plan)
		o := c.run("schema", "plan", "--schema-file", f, "--output", plan, "--json")
		// A refusal of what ptah does not plan (a rule) came after both
		// catalogs were read and compared: it counts as compared.
		e, _ := o.doc["error"].(map[string]any)
		if o.code == 0 || e["code"] == string(report.UnmanagedObject) || e["code"] == string(report.UnplannedDifference) {
			compared++
		}
		if o.code == 0 {
			c.run("schema", "apply", "--plan", plan, "--auto-approve", "--dry-run", "--json")
		}
		c.run("schema", "drift", "--schema-file", f, "--json")
		c.run("schema", "plan", "--schema-file", f, "--json")
		if err := os.WriteFile(filepath.Join(migrations, "1_probe.sql"), []byte("-- "+marker+"\nSELECT "+marker+"_fx();\n"), 0o644); err != nil {
			t.Fatal(err)
		}
		c.run("migrations", "status", "--dir", migrations, "--json")

		pg.SyncLog(outer)
		log := pg.Log()[from:]
		if strings.Contains(log, marker) {
			t.Fatalf("the target's log holds the desired file's marker %s:\n%s\ndesired file:\n%s", marker, log, desired)
		}
		for _, e := range statements(log) {
			if e.who != "shop@shop" {
				continue
			}
			if !catalogread.Reviewed(e.text) {
				t.Fatalf("the target received a statement that is not one of catalogread's:\n%s\ndesired file:\n%s", e.text, desired)
			}
		}
		var one int
		if err := idle.QueryRow(ctx, "SELECT 1").Scan(&one); err != nil {
			t.Fatalf("the target's idle session did not survive: %v\ndesired file:\n%s", err, desired)
		}
		var leftovers string
		if err := idle.QueryRow(ctx, `SELECT format('advisory locks=%s notify=%s', (SELECT count(*) FROM pg_locks WHERE locktype = 'advisory'), pg_notification_queue_usage() > 0)`).Scan(&leftovers); err != nil {
			t.Fatal(err)
		}
		if leftovers != "advisory locks=0 notify=f" {
			t.Fatalf("the target kept %s after read-only commands\ndesired file:\n%s", leftovers, desired)
		}
		if after := pg.Snapshot(outer, "shop"); after != before {
			t.Fatalf("the target changed:\nbefore:\n%s\nafter:\n%s\ndesired file:\n%s", before, after, desired)
		}
	}

	desiredFile := func(marker string, exprs map[string]string) string {
		var b strings.Builder
		fmt.Fprintf(&b, "-- %s\n%s\n%s", marker, sideEffectFunction(marker, pid), liveExpressions)
		for _, p := range places {
			if x, ok := exprs[p.name]; ok {
				b.WriteString(p.sql(x) + ";\n")
			}
		}
		return b.String()
	}

	// The seeds: each side effect in every place at once (the function,
	// declared IMMUTABLE, where only that is taken).
	t.Run("seeds", func(t *testing.T) {
		marker := newMarker()
		direct, fn := sideEffects(marker, pid)
		for _, x := range direct {
			m := map[string]string{}
			for _, p := range places {
				m[p.name] = x
				if p.immutable {
					m[p.name] = fn
				}
			}
			check(t, desiredFile(marker, m), marker)
		}
	})
	t.Run("generated", func(t *testing.T) {
		rapid.Check(t, func(rt *rapid.T) {
			marker := newMarker()
			direct, fn := sideEffects(marker, pid)
			exprs := map[string]string{}
			for _, p := range places {
				if !rapid.Bool().Draw(rt, "use "+p.name) {
					continue
				}
				x := fn
				if !p.immutable {
					x = rapid.SampledFrom(direct).Draw(rt, p.name)
				}
				if rapid.Bool().Draw(rt, "wrap "+p.name) {
					x = "(CASE WHEN " + x + " > 0 THEN 1 ELSE 0 END)"
				}
				exprs[p.name] = x
			}
			check(rt, desiredFile(marker, exprs), marker)
		})
	})
	t.Logf("%d desired files, %d compared with the target; every one sent the target only reviewed catalog reads", cases, compared)
	if compared*2 < cases {
		t.Fatalf("only %d of %d desired files were compared with the target: the generator mostly writes files that do not load, which proves little", compared, cases)
	}
}

func newMarker() string {
	b := make([]byte, 6)
	if _, err := rand.Read(b); err != nil {
		panic(err)
	}
	return "ptahmark" + hex.EncodeToString(b)
}
