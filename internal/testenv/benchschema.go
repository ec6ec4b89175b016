package testenv

import (
	"fmt"
	"strings"
)

// ObjectSchema is n objects of the kinds a no-change plan reads, a quarter
// of each: tables (a primary key, a foreign key to the previous table, a
// check and an index), views reading them, functions and triggers calling
// the functions. The planning benchmarks and make bench-proof time it.
func ObjectSchema(n int) string {
	var b strings.Builder
	for i := range n / 4 {
		fmt.Fprintf(&b, "CREATE TABLE t%04d (\n  id bigint GENERATED ALWAYS AS IDENTITY PRIMARY KEY,\n  name varchar(100) NOT NULL CHECK (name <> ''),\n  amount numeric(12,2) DEFAULT 0,\n  updated timestamptz NOT NULL DEFAULT now()", i)
		if i > 0 {
			fmt.Fprintf(&b, ",\n  parent_id bigint REFERENCES t%04d (id)", i-1)
		}
		fmt.Fprintf(&b, "\n);\nCREATE INDEX t%04d_name_idx ON t%04d (name);\n", i, i)
		fmt.Fprintf(&b, "CREATE VIEW v%04d AS SELECT id, name, amount FROM t%04d WHERE amount > 0;\n", i, i)
		fmt.Fprintf(&b, "CREATE FUNCTION touch%04d() RETURNS trigger LANGUAGE plpgsql AS $$ BEGIN NEW.updated := now(); RETURN NEW; END $$;\n", i)
		fmt.Fprintf(&b, "CREATE TRIGGER t%04d_touch BEFORE UPDATE ON t%04d FOR EACH ROW EXECUTE FUNCTION touch%04d();\n", i, i, i)
	}
	return b.String()
}
