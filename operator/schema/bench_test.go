package schema

import (
	"context"
	"fmt"
	"strings"
	"testing"
	"time"

	"ptah.run/operator/internal/testenv"
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
	benchmarkPlanNoChange(b, "wide", wideSchema(200))
}

// benchmarkPlanNoChange applies schema to a fresh database named name, then
// times the plan that proves the database matches it.
func benchmarkPlanNoChange(b *testing.B, name, schema string) {
	e := newEngine(b)
	db, err := database.Open(context.Background(), e.pg.CreateDatabase(b, name), 5*time.Second)
	if err != nil {
		b.Fatal(err)
	}
	defer db.Close()
	fs := []File{{Name: name + ".sql", Text: schema}}
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

// BenchmarkPlanNoChange2000Objects is the proof plan over 2,000 objects of
// the kinds pgcatalog plans besides atlas's tables: 500 tables, 500 views,
// 500 functions and 500 triggers. Compare with
// BenchmarkPlanNoChange200Tables, run the same way.
func BenchmarkPlanNoChange2000Objects(b *testing.B) {
	benchmarkPlanNoChange(b, "objects", testenv.ObjectSchema(2000))
}
