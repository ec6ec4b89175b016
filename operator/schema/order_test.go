package schema

import (
	"context"
	"strings"
	"testing"

	"ptah.run/operator/operator/report"
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
		{"a foreign key's MATCH FULL and DEFERRABLE",
			`CREATE TABLE p (id int PRIMARY KEY); CREATE TABLE c (pid int REFERENCES p (id));`,
			`CREATE TABLE p (id int PRIMARY KEY); CREATE TABLE c (pid int REFERENCES p (id) MATCH FULL ON DELETE CASCADE DEFERRABLE INITIALLY DEFERRED);`},
		{"new tables referencing each other",
			``,
			`CREATE TABLE a (id int PRIMARY KEY, b_id int); CREATE TABLE b (id int PRIMARY KEY, a_id int REFERENCES a (id) DEFERRABLE);
			 ALTER TABLE a ADD FOREIGN KEY (b_id) REFERENCES b (id) NOT VALID;`},
		{"an unnamed foreign key pointed at another table",
			`CREATE TABLE u (id int PRIMARY KEY); CREATE TABLE v (id int PRIMARY KEY); CREATE TABLE c (uid int REFERENCES u (id));`,
			`CREATE TABLE u (id int PRIMARY KEY); CREATE TABLE v (id int PRIMARY KEY); CREATE TABLE c (uid int REFERENCES v (id));`},
		{"a primary key a foreign key uses changes",
			`CREATE TABLE p (id int PRIMARY KEY, t int NOT NULL); CREATE TABLE c (pid int REFERENCES p (id));`,
			`CREATE TABLE p (id int, t int NOT NULL, CONSTRAINT p_key PRIMARY KEY (id)); CREATE TABLE c (pid int REFERENCES p (id));`},
		{"a referenced table dropped with its foreign key",
			`CREATE TABLE p (id int PRIMARY KEY); CREATE TABLE c (pid int REFERENCES p (id));`,
			`CREATE TABLE c (pid int);`},
		{"a referenced column changes type with the referencing one",
			`CREATE TABLE p (id int PRIMARY KEY); CREATE TABLE c (pid int REFERENCES p (id));`,
			`CREATE TABLE p (id bigint PRIMARY KEY); CREATE TABLE c (pid bigint REFERENCES p (id));`},
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

// TestProtectedTableConstraints: the checks and foreign keys pgcatalog plans
// are changes to their table, refused on a protected one like atlas's.
func TestProtectedTableConstraints(t *testing.T) {
	e := newEngine(t)
	base := `CREATE TABLE p (id int PRIMARY KEY); CREATE TABLE c (pid int, n int);`
	for name, desired := range map[string]string{
		"a check":       `CREATE TABLE p (id int PRIMARY KEY); CREATE TABLE c (pid int, n int CHECK (n > 0));`,
		"a foreign key": `CREATE TABLE p (id int PRIMARY KEY); CREATE TABLE c (pid int REFERENCES p (id), n int);`,
	} {
		t.Run(name, func(t *testing.T) {
			db, _ := e.db(t)
			exec(t, db, base)
			_, err := ComputePlan(context.Background(), db, files(desired), e.o(Options{Protected: []string{"c"}}))
			if refused := wantCode(t, err, report.ProtectedTable); !strings.Contains(refused.Message, "c") {
				t.Fatalf("message does not name the table: %s", refused.Message)
			}
			mustPlan(t, db, files(desired), e.o(Options{Protected: []string{"p"}}))
		})
	}
}
