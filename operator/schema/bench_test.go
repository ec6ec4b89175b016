package schema

import (
	"context"
	"fmt"
	"strings"
	"testing"
	"time"

	"ptah.run/operator/operator/database"
)

// wideSchema is n tables, each with a primary key, a few typed columns, a
// foreign key to the previous table and an index.
func wideSchema(n int) string {
	var b strings.Builder
	for i := range n {
		fmt.Fprintf(&b, "CREATE TABLE t%03d (\n  id bigserial PRIMARY KEY,\n  name varchar(100) NOT NULL,\n  amount numeric(12,2) DEFAULT 0,\n  created timestamptz NOT NULL DEFAULT now(),\n  note text", i)
		if i > 0 {
			fmt.Fprintf(&b, ",\n  parent_id bigint REFERENCES t%03d(id)", i-1)
		}
		fmt.Fprintf(&b, "\n);\nCREATE INDEX t%03d_name_idx ON t%03d (name);\n", i, i)
	}
	return b.String()
}

// BenchmarkPlanNoChange200Tables times the proof the operator runs after
// every apply: a plan of a 200-table schema against a database that matches it.
func BenchmarkPlanNoChange200Tables(b *testing.B) {
	e := newEngine(b)
	db, err := database.Open(context.Background(), e.pg.CreateDatabase(b, "wide"), 5*time.Second)
	if err != nil {
		b.Fatal(err)
	}
	defer db.Close()
	fs := []File{{Name: "wide.sql", Text: wideSchema(200)}}
	p, err := ComputePlan(context.Background(), db, fs, e.o(Options{}))
	if err != nil {
		b.Fatal(err)
	}
	if _, err := Apply(context.Background(), db, p, ApplyOptions{LockTimeout: time.Minute}); err != nil {
		b.Fatal(err)
	}
	b.ResetTimer()
	for b.Loop() {
		p, err := ComputePlan(context.Background(), db, fs, e.o(Options{}))
		if err != nil {
			b.Fatal(err)
		}
		if len(p.Statements) != 0 {
			b.Fatalf("a matching database planned %d statements, first %s", len(p.Statements), p.Statements[0].SQL)
		}
	}
}
