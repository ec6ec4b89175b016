package schema

import (
	"context"
	"fmt"
	"strings"
	"testing"

	"pgregory.net/rapid"

	"ptah.run/operator/internal/testenv"

	"ptah.run/operator/operator/report"
)

// TestPartitionKeyAfterADroppedColumn: a partition key's columns are kept
// by attribute number, which counts the columns dropped before them. Read
// as positions among the columns left, the key named the wrong column (k
// read as b below) or none ("unexpected column index"). The live tables
// here had a column dropped before their key; the desired SQL declares
// them without it. The same key must plan nothing, another key must not
// be taken for it, and no plan may end in an internal error.
func TestPartitionKeyAfterADroppedColumn(t *testing.T) {
	e := newEngine(t)
	ctx := context.Background()
	for _, c := range []struct {
		name, live, desired string
		same                bool
	}{
		{"the key column before another", "CREATE TABLE p (a int, k int, b int) PARTITION BY RANGE (k); ALTER TABLE p DROP COLUMN a;",
			"CREATE TABLE p (k int, b int) PARTITION BY RANGE (k);", true},
		{"the key column last", "CREATE TABLE p (a int, b int, k int) PARTITION BY LIST (k); ALTER TABLE p DROP COLUMN a;",
			"CREATE TABLE p (b int, k int) PARTITION BY LIST (k);", true},
		{"a key of a column and an expression", "CREATE TABLE p (a int, b int, k int) PARTITION BY RANGE (k, (b + 1)); ALTER TABLE p DROP COLUMN a;",
			"CREATE TABLE p (b int, k int) PARTITION BY RANGE (k, (b + 1));", true},
		{"another key than the column a shifted read would give", "CREATE TABLE p (a int, k int, b int) PARTITION BY RANGE (k); ALTER TABLE p DROP COLUMN a;",
			"CREATE TABLE p (k int, b int) PARTITION BY RANGE (b);", false},
	} {
		t.Run(c.name, func(t *testing.T) {
			db, _ := e.db(t)
			exec(t, db, c.live)
			p, err := ComputePlan(ctx, db, files(c.desired), e.o(Options{}))
			if err != nil && report.AsError(err).Code == report.Internal {
				t.Fatalf("an internal error: %v", err)
			}
			empty := err == nil && len(p.Statements) == 0
			if c.same && !empty {
				t.Fatalf("the same key planned: %v %v", p, err)
			}
			if !c.same && (err == nil || report.AsError(err).Code != report.UnplannedDifference || !strings.Contains(err.Error(), "PARTITION BY RANGE (k), the desired schema PARTITION BY RANGE (b)")) {
				t.Fatalf("another key than the live one: want unplanned_difference naming both keys, got %v %v", p, err)
			}
			t.Logf("plan: %v", err)
		})
	}
}

// TestGeneratedPartitionKeysAfterDroppedColumns generates partitioned
// tables whose live copy had columns dropped anywhere among its own, keyed
// by columns and expressions: the desired copy, declared without the
// dropped columns, must plan nothing; keyed by another column it must be
// refused naming the key.
func TestGeneratedPartitionKeysAfterDroppedColumns(t *testing.T) {
	testenv.RapidChecks(t, 15)
	e := newEngine(t)
	ctx := context.Background()
	rapid.Check(t, func(rt *rapid.T) {
		n := rapid.IntRange(2, 5).Draw(rt, "columns")
		var kept, all []string
		for i := range n {
			for range rapid.IntRange(0, 2).Draw(rt, fmt.Sprintf("dropped before c%d", i)) {
				all = append(all, fmt.Sprintf("x%d", len(all)))
			}
			kept = append(kept, fmt.Sprintf("c%d", i))
			all = append(all, fmt.Sprintf("c%d", i))
		}
		strategy := rapid.SampledFrom([]string{"RANGE", "LIST", "HASH"}).Draw(rt, "strategy")
		key := func(cols []int) string {
			var parts []string
			for j, c := range cols {
				if j > 0 && rapid.Bool().Draw(rt, "an expression") {
					parts = append(parts, fmt.Sprintf("(c%d + 1)", c))
				} else {
					parts = append(parts, fmt.Sprintf("c%d", c))
				}
			}
			return strings.Join(parts, ", ")
		}
		width := 1
		if strategy != "LIST" {
			width = rapid.IntRange(1, min(2, n)).Draw(rt, "key width")
		}
		cols := rapid.Permutation(rapid.SliceOfNDistinct(rapid.IntRange(0, n-1), width, width, rapid.ID[int]).Draw(rt, "key columns")).Draw(rt, "key order")
		k := key(cols)
		table := func(names []string, k string) string {
			defs := make([]string, len(names))
			for i, c := range names {
				defs[i] = c + " int"
			}
			return fmt.Sprintf("CREATE TABLE p (%s) PARTITION BY %s (%s);", strings.Join(defs, ", "), strategy, k)
		}
		live := table(all, k)
		for _, c := range all {
			if strings.HasPrefix(c, "x") {
				live += " ALTER TABLE p DROP COLUMN " + c + ";"
			}
		}
		db, _ := e.db(t)
		defer db.Close()
		exec(t, db, live)
		p, err := ComputePlan(ctx, db, files(table(kept, k)), e.o(Options{}))
		if err != nil || len(p.Statements) != 0 {
			rt.Fatalf("%s\nthe same key planned: %v %v", live, p, err)
		}
		other := (cols[0] + 1) % n
		_, err = ComputePlan(ctx, db, files(table(kept, fmt.Sprintf("c%d", other))), e.o(Options{}))
		if err == nil || report.AsError(err).Code != report.UnplannedDifference || !strings.Contains(err.Error(), "partition key") {
			rt.Fatalf("%s\nkeyed by c%d instead: want unplanned_difference naming the key, got %v", live, other, err)
		}
	})
}
