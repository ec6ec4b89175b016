package schema

import (
	"context"
	"fmt"
	"slices"
	"strings"
	"testing"
	"time"

	"pgregory.net/rapid"

	"ptah.run/operator/internal/testenv"
	"ptah.run/operator/operator/catalogproof"
	"ptah.run/operator/operator/report"
)

// conversionValues are values per type, some of which survive a given
// conversion and some of which do not (1.25 to an integer, a time of day
// to a date, a trailing space to char(1), '012' to an integer).
var conversionValues = map[string][]string{
	"integer":                     {"1", "-7", "40000", "2000000000", "0"},
	"bigint":                      {"1", "9000000000", "-3"},
	"smallint":                    {"1", "-12", "300"},
	"numeric(10,2)":               {"1.25", "12345.67", "-3.00", "2.00"},
	"numeric(6,0)":                {"1", "-2", "99999"},
	"real":                        {"0.5", "1.1", "3e30"},
	"double precision":            {"0.5", "0.123456789012", "1e300"},
	"text":                        {"abc", "12", "012", "a ", "x", "true", "2026-01-02", "1.5"},
	"character varying(3)":        {"ab", "7", "t ", "007"},
	"character(1)":                {"a", "1", "t"},
	"boolean":                     {"true", "false"},
	"date":                        {"2026-01-02", "1970-01-01"},
	"timestamp without time zone": {"2026-01-02 03:04:05", "2026-01-02 00:00:00"},
	"timestamp with time zone":    {"2026-01-02 03:04:05+00", "1999-12-31 00:00:00+00"},
}

// TestConversionsLoseNothingSilently generates a column of one type
// holding drawn values, retyped to another. PostgreSQL is the oracle: the
// plan is refused with a code that is not internal; or the apply fails on
// a statement marked may-fail and every value is as it was; or it applies,
// and every value reads back as the old type as it was unless the plan was
// marked destructive. A conversion the plan guards is never destructive.
func TestConversionsLoseNothingSilently(t *testing.T) {
	testenv.RapidChecks(t, 30)
	var types []string
	for typ := range conversionValues {
		types = append(types, typ)
	}
	slices.Sort(types)
	e := newEngine(t)
	outcomes := map[string]int{}
	start, cases := time.Now(), 0
	rapid.Check(t, func(rt *rapid.T) {
		cases++
		from := rapid.SampledFrom(types).Draw(rt, "from")
		to := rapid.SampledFrom(types).Filter(func(s string) bool { return s != from }).Draw(rt, "to")
		values := rapid.SliceOfNDistinct(rapid.SampledFrom(conversionValues[from]), 1, 3, rapid.ID).Draw(rt, "values")
		outcomes[checkConversion(t, rt, e, from, to, values)]++
	})
	t.Logf("%d conversions in %s: %v", cases, time.Since(start).Round(time.Second), outcomes)
}

func checkConversion(owner *testing.T, t tb, e *engine, from, to string, values []string) string {
	ctx := context.Background()
	before := fmt.Sprintf("CREATE TABLE t (id integer PRIMARY KEY, \"Col\" %s);\n", from)
	after := fmt.Sprintf("CREATE TABLE t (id integer PRIMARY KEY, \"Col\" %s);\n", to)
	t.Logf("%s to %s holding %q", from, to, values)
	db := e.caseDB(owner)
	defer db.drop()
	if _, err := db.Exec(before); err != nil {
		t.Fatalf("load before: %v", err)
	}
	for i, v := range values {
		if _, err := db.Exec(`INSERT INTO t VALUES ($1, $2)`, i, v); err != nil {
			t.Fatalf("insert %q: %v", v, err)
		}
	}
	read := func() string {
		var s string
		if err := db.QueryRow(fmt.Sprintf(`SELECT string_agg(id || '=' || coalesce(("Col")::%s::text, 'null'), ',' ORDER BY id) FROM t`, from)).Scan(&s); err != nil {
			return "unreadable: " + err.Error()
		}
		return s
	}
	held, lines := read(), render(t, db.DB)
	p, err := ComputePlan(ctx, db.DB, files(after), e.o(Options{}))
	if err != nil {
		if re := report.AsError(err); re.Code == report.Internal || re.Code == "" {
			t.Fatalf("plan ended with an internal error: %v", err)
		}
		return "refused"
	}
	guarded := strings.HasPrefix(p.Statements[0].SQL, "DO $ptah")
	if guarded && p.Destructive {
		t.Fatalf("a guarded conversion is marked destructive\nplan:\n%s", planText(p))
	}
	if _, err := Apply(ctx, db.DB, p, ApplyOptions{AllowDestructive: true, LockTimeout: 10 * time.Second}); err != nil {
		if !mayFail(p) {
			t.Fatalf("apply failed though no statement was marked %s: %v\nplan:\n%s", HazardMayFail, err, planText(p))
		}
		if now := read(); now != held {
			t.Fatalf("a failed apply changed the values: %s, now %s", held, now)
		}
		if d := catalogproof.Compare(render(t, db.DB), lines); !d.Empty() {
			t.Fatalf("a failed apply changed the catalog: %s", d.Describe())
		}
		return "stopped as marked"
	}
	if now := read(); now != held && !p.Destructive {
		t.Fatalf("values changed by a plan marked safe: %s, now %s\nplan:\n%s", held, now, planText(p))
	}
	if guarded {
		return "applied, guarded"
	}
	if p.Destructive {
		return "applied, destructive"
	}
	return "applied, safe"
}
