package schema

import (
	"context"
	"fmt"
	"strings"
	"testing"

	"pgregory.net/rapid"

	"ptah.run/operator/internal/testenv"
)

// leakproofFunction is one generated function declaration: options in an
// order of their own, LEAKPROOF written where PostgreSQL accepts it, and
// things that look like it where it does not count (a parameter named
// leakproof, a comment, NOT LEAKPROOF, a setting naming a marker).
type leakproofFunction struct {
	name    string
	text    string
	altered string // an ALTER FUNCTION after it, or ""
}

func genLeakproofFunction(t *rapid.T, i int) leakproofFunction {
	name := fmt.Sprintf("f%d", i)
	param := rapid.SampledFrom([]string{"int", "leakproof int", `"LEAKPROOF" int`, "a int DEFAULT 1"}).Draw(t, "param")
	leak := rapid.SampledFrom([]string{"LEAKPROOF", "NOT LEAKPROOF", "leakproof", "/* LEAKPROOF */", "-- LEAKPROOF\n", ""}).Draw(t, "leakproof")
	opts := rapid.Permutation([]string{"IMMUTABLE", "STRICT", "PARALLEL SAFE", "COST 7", leak,
		rapid.SampledFrom([]string{"", "SET search_path = public", "SET application_name = 'ptah_dev_0123456789abcdef:leakproof'"}).Draw(t, "set")}).Draw(t, "options")
	f := leakproofFunction{name: name}
	f.text = fmt.Sprintf("CREATE FUNCTION %s(%s) RETURNS int LANGUAGE sql %s AS $$ SELECT 1 /* LEAKPROOF */ $$;\n", name, param, strings.Join(opts, " "))
	if rapid.Bool().Draw(t, "replaced") {
		f.text += fmt.Sprintf("CREATE OR REPLACE FUNCTION %s(%s) RETURNS int LANGUAGE sql IMMUTABLE %s AS 'SELECT 2';\n", name, param,
			rapid.SampledFrom([]string{"", "LEAKPROOF"}).Draw(t, "replaced leakproof"))
	}
	f.altered = rapid.SampledFrom([]string{"", "LEAKPROOF", "NOT LEAKPROOF", "COST 9", "RESET ALL", "SET application_name = 'x'"}).Draw(t, "alter")
	if f.altered != "" {
		f.text += fmt.Sprintf("ALTER %s %s %s;\n", rapid.SampledFrom([]string{"FUNCTION", "ROUTINE"}).Draw(t, "alter kind"), name, f.altered)
	}
	if rapid.Bool().Draw(t, "a set-returning sibling") {
		f.text += fmt.Sprintf("CREATE FUNCTION %s_rows() RETURNS TABLE (leakproof int) LANGUAGE sql STABLE %s AS $$ SELECT 1 $$;\n", name,
			rapid.SampledFrom([]string{"", "LEAKPROOF", "NOT LEAKPROOF"}).Draw(t, "sibling leakproof"))
	}
	return f
}

// TestLeakproofIsMarkedAsPostgreSQLWouldMarkIt: the desired SQL runs as a
// role that may not mark a function LEAKPROOF; ptah loads it with a marker
// instead and the dev server's superuser session marks the functions. The
// oracle is PostgreSQL itself: the same text loaded as a superuser into the
// target. The plan must be empty (every function as LEAKPROOF as the
// superuser's load made it), and a target with one function's LEAKPROOF
// flipped must not be.
func TestLeakproofIsMarkedAsPostgreSQLWouldMarkIt(t *testing.T) {
	testenv.RapidChecks(t, 40)
	e := newEngine(t)
	ctx := context.Background()
	marked := 0
	rapid.Check(t, func(rt *rapid.T) {
		var fs []leakproofFunction
		var text strings.Builder
		for i := range rapid.IntRange(1, 4).Draw(rt, "functions") {
			f := genLeakproofFunction(rt, i)
			fs = append(fs, f)
			text.WriteString(f.text)
		}
		db, name := e.db(t)
		defer db.Close() // a case's databases are many: its session goes with it
		e.pg.Exec(t, name, text.String())
		leak := map[string]bool{}
		rows, err := db.QueryContext(ctx, "SELECT proname, proleakproof FROM pg_proc WHERE pronamespace = 'public'::regnamespace")
		if err != nil {
			rt.Fatal(err)
		}
		for rows.Next() {
			var n string
			var l bool
			if err := rows.Scan(&n, &l); err != nil {
				rt.Fatal(err)
			}
			leak[n] = l
		}
		rows.Close()
		desired := files(text.String())
		p, err := ComputePlan(ctx, db, desired, e.o(Options{}))
		// A function statement that sets application_name or resets all
		// settings is loaded as written: a LEAKPROOF is then refused.
		if strings.Contains(text.String(), "application_name") || strings.Contains(text.String(), "RESET ALL") {
			if err != nil && !strings.Contains(err.Error(), "keep it in a migration") {
				rt.Fatalf("refused without saying to keep it in a migration:\n%s\n%v", text.String(), err)
			}
			if err == nil && len(p.Statements) != 0 {
				rt.Fatalf("the text a superuser loaded (LEAKPROOF: %v) plans changes:\n%s\nplan: %v", leak, text.String(), p.Statements)
			}
			return
		}
		for _, l := range leak {
			if l {
				marked++
				break
			}
		}
		if err != nil {
			rt.Fatalf("plan of the text PostgreSQL loaded (LEAKPROOF as a superuser makes it: %v):\n%s\n%v", leak, text.String(), err)
		}
		if len(p.Statements) != 0 {
			rt.Fatalf("the text a superuser loaded (LEAKPROOF: %v) plans changes; ptah's dev database marked another set:\n%s\nplan: %v", leak, text.String(), p.Statements)
		}
		// Flip one function's LEAKPROOF on the target: now the plan must
		// change it back.
		flip := fs[rapid.IntRange(0, len(fs)-1).Draw(rt, "flip")].name
		to := "LEAKPROOF"
		if leak[flip] {
			to = "NOT LEAKPROOF"
		}
		e.pg.Exec(t, name, fmt.Sprintf("ALTER FUNCTION %s %s", flip, to))
		p, err = ComputePlan(ctx, db, desired, e.o(Options{}))
		if err != nil {
			rt.Fatalf("plan after %s was made %s on the target: %v", flip, to, err)
		}
		if len(p.Statements) == 0 {
			rt.Fatalf("%s made %s on the target, and the plan is empty:\n%s", flip, to, text.String())
		}
	})
	if marked == 0 {
		t.Fatal("no generated schema had a LEAKPROOF function to mark: the test showed nothing")
	}
	t.Logf("%d schemas with LEAKPROOF functions marked as PostgreSQL marks them", marked)
}
