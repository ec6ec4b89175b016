package schema

import (
	"context"
	"strings"
	"testing"

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
