package schema

import (
	"context"
	"fmt"
	"strings"
	"testing"
	"time"

	"pgregory.net/rapid"

	"ptah.run/operator/internal/testenv"
	"ptah.run/operator/operator/catalogproof"
	"ptah.run/operator/operator/database"
	"ptah.run/operator/operator/report"
)

// identityCase is an identity column taken from before to after (no
// identity at all when after.drop), its sequence used or not before the
// plan is computed and between the plan and its apply.
type identityCase struct {
	table, column string
	before, after identityOptions
	// inserts is the rows inserted through the identity before the plan;
	// restart, when set, moves the sequence there uncalled after them.
	inserts int
	restart *int64
	// between inserts a row through the identity after the plan.
	between bool
}

type identityOptions struct {
	drop                       bool
	always                     bool
	start, increment, min, max int64
}

func (c identityCase) sql(o identityOptions) string {
	col := pgIdent(c.column) + " integer NOT NULL"
	if !o.drop {
		gen := "BY DEFAULT"
		if o.always {
			gen = "ALWAYS"
		}
		col = fmt.Sprintf("%s integer GENERATED %s AS IDENTITY (START WITH %d INCREMENT BY %d MINVALUE %d MAXVALUE %d)", pgIdent(c.column), gen, o.start, o.increment, o.min, o.max)
	}
	return fmt.Sprintf("CREATE TABLE %s (%s, v text);\n", pgIdent(c.table), col)
}

// position is the identity's sequence as PostgreSQL holds it: "gone", or
// its last value, whether it was called, and its start.
func position(t tb, db *database.DB, c identityCase) string {
	var seq *string
	if err := db.QueryRow(`SELECT pg_get_serial_sequence(format('%I', $1::text), $2)`, c.table, c.column).Scan(&seq); err != nil {
		t.Fatalf("find the sequence: %v", err)
	}
	if seq == nil {
		return "gone"
	}
	var last, start int64
	var called bool
	if err := db.QueryRow(fmt.Sprintf(`SELECT s.last_value, s.is_called, p.seqstart FROM %s s, pg_sequence p WHERE p.seqrelid = $1::regclass`, *seq), *seq).Scan(&last, &called, &start); err != nil {
		t.Fatalf("read %s: %v", *seq, err)
	}
	return fmt.Sprintf("last=%d called=%t start=%d", last, called, start)
}

// atStart reports whether a position holds nothing but its start.
func atStart(pos string) bool {
	var last, start int64
	var called bool
	if _, err := fmt.Sscanf(pos, "last=%d called=%t start=%d", &last, &called, &start); err != nil {
		return false
	}
	return !called && last == start
}

// insert adds a row through the identity; a sequence at its end refuses
// and stays where it is.
func insert(db *database.DB, c identityCase) {
	_, _ = db.Exec(fmt.Sprintf("INSERT INTO %s (v) VALUES ('x')", pgIdent(c.table)))
}

// checkIdentity is the promise for one case, PostgreSQL the oracle: the
// plan is destructive exactly when the apply loses a sequence position
// (one that is not its bare start); a plan that took a sequence as never
// used and finds it used at apply stops as a stale plan, changing nothing;
// a changed identity the plan restarts behaves as the desired SQL loaded
// afresh; an apply that fails was marked may-fail and changed nothing.
func checkIdentity(owner *testing.T, t tb, e *engine, c identityCase) string {
	ctx := context.Background()
	before, after := c.sql(c.before), c.sql(c.after)
	t.Logf("before:\n%safter:\n%sinserts %d, restart %v, between %t", before, after, c.inserts, c.restart, c.between)
	db := e.caseDB(owner)
	defer db.drop()
	if _, err := db.Exec(before); err != nil {
		t.Fatalf("load before: %v", err)
	}
	for range c.inserts {
		insert(db.DB, c)
	}
	if c.restart != nil {
		if _, err := db.Exec(fmt.Sprintf("ALTER TABLE %s ALTER COLUMN %s RESTART WITH %d", pgIdent(c.table), pgIdent(c.column), *c.restart)); err != nil {
			t.Fatalf("restart: %v", err)
		}
	}
	ref := e.caseDB(owner)
	defer ref.drop()
	if _, err := ref.Exec(after); err != nil {
		t.Fatalf("load after into the reference: %v", err)
	}
	p, err := ComputePlan(ctx, db.DB, files(after), e.o(Options{}))
	if err != nil {
		t.Fatalf("plan: %v", err)
	}
	if c.between {
		insert(db.DB, c)
	}
	held, beforeLines := position(t, db.DB, c), render(t, db.DB)
	var rows int
	if err := db.QueryRow(fmt.Sprintf("SELECT count(*) FROM %s", pgIdent(c.table))).Scan(&rows); err != nil {
		t.Fatal(err)
	}
	_, err = Apply(ctx, db.DB, p, ApplyOptions{AllowDestructive: true, LockTimeout: 10 * time.Second})
	unchanged := func(why string) {
		if d := catalogproof.Compare(render(t, db.DB), beforeLines); !d.Empty() {
			t.Fatalf("%s, but the target changed: %s", why, d.Describe())
		}
		if now := position(t, db.DB, c); now != held {
			t.Fatalf("%s, but the sequence moved from %s to %s", why, held, now)
		}
	}
	if err != nil {
		switch {
		case report.AsError(err).Code == report.StalePlan:
			if !strings.Contains(p.Statements[0].SQL, "DO $ptah") {
				t.Fatalf("stale, though the plan took nothing of the data as given: %v\nplan:\n%s", err, planText(p))
			}
			unchanged("the apply stopped as a stale plan")
			return "stale: used since the plan"
		case mayFail(p):
			unchanged("the apply failed as marked")
			return "apply failed as marked"
		}
		t.Fatalf("apply failed though no statement was marked %s: %v\nplan:\n%s", HazardMayFail, err, planText(p))
	}
	if d := catalogproof.Compare(render(t, db.DB), render(t, ref.DB)); !d.Empty() {
		t.Fatalf("applied, but the target does not render as after loaded afresh: %s\nplan:\n%s", d.Describe(), planText(p))
	}
	var rowsNow int
	if err := db.QueryRow(fmt.Sprintf("SELECT count(*) FROM %s", pgIdent(c.table))).Scan(&rowsNow); err != nil || rowsNow != rows {
		t.Fatalf("the apply lost rows: %d before, %d after (%v)", rows, rowsNow, err)
	}
	now := position(t, db.DB, c)
	lostPosition := false
	switch {
	case held == "gone" || len(p.Statements) == 0:
	case c.after.drop:
		lostPosition = !atStart(held)
	case atStart(held):
		// Never used: restarted, the sequence must give what the desired
		// SQL loaded afresh gives.
		if fresh := position(t, ref.DB, c); now != fresh {
			t.Fatalf("a never-used identity changed to %s, where the desired SQL loaded afresh has %s\nplan:\n%s", now, fresh, planText(p))
		}
	default:
		held, now := strings.Fields(held), strings.Fields(now)
		lostPosition = held[0] != now[0] || held[1] != now[1]
	}
	switch {
	case lostPosition && !p.Destructive:
		t.Fatalf("the sequence position %s was lost by a plan marked safe\nplan:\n%s", held, planText(p))
	case !lostPosition && p.Destructive:
		t.Fatalf("the plan is marked destructive but the apply lost nothing (%s, now %s)\nplan:\n%s", held, now, planText(p))
	}
	if again, err := ComputePlan(ctx, db.DB, files(after), e.o(Options{})); err != nil || len(again.Statements) > 0 {
		t.Fatalf("planned again after the apply: %s (%v)", outcome(again, nil, err), err)
	}
	if p.Destructive {
		return "applied, destructive"
	}
	return "applied, safe"
}

func drawIdentity(t *rapid.T, label string) identityOptions {
	o := identityOptions{
		always:    rapid.Bool().Draw(t, label+" always"),
		min:       rapid.Int64Range(-300, 1).Draw(t, label+" min"),
		max:       rapid.Int64Range(2, 300).Draw(t, label+" max"),
		increment: rapid.SampledFrom([]int64{1, 5, 10, -1, -5}).Draw(t, label+" increment"),
	}
	o.start = rapid.Int64Range(o.min, o.max).Draw(t, label+" start")
	return o
}

// names a hostile schema might use: the guard's own quoting tag, quotes,
// a backslash, capitals and spaces.
var identityNames = []string{"t", "a$ptah$b", "it's", `back\slash`, `q"uote`, "Upper Case"}

// TestIdentityPositions generates identities dropped or changed, their
// sequences used or not before the plan and between the plan and its
// apply, under hostile names.
func TestIdentityPositions(t *testing.T) {
	testenv.RapidChecks(t, 25)
	e := newEngine(t)
	outcomes := map[string]int{}
	start, cases := time.Now(), 0
	rapid.Check(t, func(rt *rapid.T) {
		cases++
		c := identityCase{
			table:   rapid.SampledFrom(identityNames).Draw(rt, "table"),
			column:  rapid.SampledFrom(identityNames).Draw(rt, "column"),
			before:  drawIdentity(rt, "before"),
			inserts: rapid.IntRange(0, 2).Draw(rt, "inserts"),
			between: rapid.Bool().Draw(rt, "between"),
		}
		if rapid.Bool().Draw(rt, "drop") {
			c.after = identityOptions{drop: true}
		} else {
			c.after = drawIdentity(rt, "after")
		}
		if rapid.IntRange(0, 3).Draw(rt, "restarted") == 0 {
			r := rapid.Int64Range(c.before.min, c.before.max).Draw(rt, "restart")
			c.restart = &r
		}
		outcomes[checkIdentity(t, rt, e, c)]++
	})
	t.Logf("%d identity cases in %s: %v", cases, time.Since(start).Round(time.Second), outcomes)
}

// TestIdentityPositionCases are the cases the generator must keep
// finding, named: each provokes one branch of the promise.
func TestIdentityPositionCases(t *testing.T) {
	e := newEngine(t)
	opts := identityOptions{start: -200, increment: 10, min: -200, max: 200}
	narrow := identityOptions{start: -100, increment: 5, min: -100, max: 100}
	fifty := int64(50)
	for _, c := range []struct {
		name string
		c    identityCase
		want string
	}{
		{"a never-used identity dropped loses nothing", identityCase{table: "t", column: "id", before: opts, after: identityOptions{drop: true}}, "applied, safe"},
		{"a used identity dropped loses its position", identityCase{table: "t", column: "id", before: opts, after: identityOptions{drop: true}, inserts: 1}, "applied, destructive"},
		{"an identity restarted uncalled holds a position", identityCase{table: "t", column: "id", before: opts, after: identityOptions{drop: true}, restart: &fifty}, "applied, destructive"},
		{"an identity used after the plan stops the drop", identityCase{table: "a$ptah$b", column: "it's", before: opts, after: identityOptions{drop: true}, between: true}, "stale: used since the plan"},
		{"a never-used identity narrowed restarts at its new start", identityCase{table: `back\slash`, column: `q"uote`, before: opts, after: narrow}, "applied, safe"},
		{"an identity used after the plan stops the restart", identityCase{table: "t", column: "id", before: opts, after: narrow, between: true}, "stale: used since the plan"},
		{"a used identity narrowed below its position fails as marked", identityCase{table: "t", column: "id", before: opts, after: narrow, inserts: 1}, "apply failed as marked"},
	} {
		t.Run(c.name, func(t *testing.T) {
			if got := checkIdentity(t, t, e, c.c); got != c.want {
				t.Fatalf("came to %q, want %q", got, c.want)
			}
		})
	}
}
