package schema

import (
	"testing"
)

// TestPlanOrderAndProperties: each case is a change the sqldef suite found
// planned in an order PostgreSQL refuses, or with a property lost. Each
// must converge on a real PostgreSQL: applied, the database has the desired
// fingerprint (every object as PostgreSQL prints it) and a second plan is empty.
func TestPlanOrderAndProperties(t *testing.T) {
	e := newEngine(t)
	cases := []struct{ name, current, desired string }{
		{"a check on a column added with it",
			`CREATE TABLE t (a int);`,
			`CREATE TABLE t (a int, b int CONSTRAINT b_positive CHECK (b > 0));`},
		{"the primary key dropped with its column",
			`CREATE TABLE t (id bigint NOT NULL PRIMARY KEY, name text);`,
			`CREATE TABLE t (name text);`},
		{"an unnamed check whose expression changes",
			`CREATE TABLE t (a int CHECK (a > 0));`,
			`CREATE TABLE t (a int CHECK (a > 1));`},
		{"a check on no column",
			`CREATE TABLE t (a int);`,
			`CREATE TABLE t (a int, CHECK (1 > 0));`},
		{"a new table with a check on no column",
			``,
			`CREATE TABLE t (a int, CHECK (1 > 0), CONSTRAINT named CHECK (a < 10) NO INHERIT);`},
		{"a check added NOT VALID",
			`CREATE TABLE t (a int);`,
			`CREATE TABLE t (a int); ALTER TABLE t ADD CONSTRAINT pos CHECK (a > 0) NOT VALID;`},
		{"a NOT VALID check validated",
			`CREATE TABLE t (a int); ALTER TABLE t ADD CONSTRAINT pos CHECK (a > 0) NOT VALID;`,
			`CREATE TABLE t (a int CONSTRAINT pos CHECK (a > 0));`},
		{"an unnamed check given a name",
			`CREATE TABLE t (a int CHECK (a > 0));`,
			`CREATE TABLE t (a int CONSTRAINT a_positive CHECK (a > 0));`},
		{"a check on a dropped column",
			`CREATE TABLE t (a int CHECK (a > 0), b int);`,
			`CREATE TABLE t (b int);`},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			db, _ := e.db(t)
			if c.current != "" {
				exec(t, db, c.current)
			}
			converges(t, e, db, c.desired)
		})
	}
}
