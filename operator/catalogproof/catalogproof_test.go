package catalogproof_test

import (
	"context"
	"database/sql"
	"fmt"
	"os/exec"
	"path/filepath"
	"regexp"
	"slices"
	"strings"
	"testing"

	_ "github.com/jackc/pgx/v5/stdlib"

	"ptah.run/operator/internal/testenv"
	"ptah.run/operator/operator/catalogproof"
	"ptah.run/operator/operator/catalogproof/proofcases"
	"ptah.run/operator/operator/catalogread"
)

// TestRenderingAgreesWithPgDump holds the rendering to a second oracle
// that shares nothing with it: pg_dump --schema-only of the same two
// databases. For every pair of proofcases, one database loaded with the
// live side and one with the desired side: when the two dumps differ
// (ordering noise and generated names aside), the two renderings must
// differ too; a pair built differently but the same renders equal, and
// dumps equal; and every pair differing in one fact is seen by both.
func TestRenderingAgreesWithPgDump(t *testing.T) {
	pg := testenv.StartPostgres(t)
	for _, r := range proofcases.Roles {
		pg.Exec(t, "postgres", "CREATE ROLE "+r)
	}
	pg.Exec(t, "postgres", "CREATE DATABASE proof_base")
	pg.Exec(t, "proof_base", proofcases.Base)
	for i, c := range proofcases.Pairs {
		t.Run(c.Name, func(t *testing.T) {
			live := load(t, pg, fmt.Sprintf("live%d", i), c.Live)
			desired := load(t, pg, fmt.Sprintf("desired%d", i), c.Desired)
			lr, dr := render(t, pg, live), render(t, pg, desired)
			diff := catalogproof.Compare(lr, dr)
			ld, dd := dump(t, pg, live), dump(t, pg, desired)
			dumpDiff := linesDiff(ld, dd)
			switch {
			case c.Same && dumpDiff != "":
				t.Errorf("pg_dump differs on a pair that is the same (the test's normalisation of pg_dump misses something):\n%s", dumpDiff)
			case c.Same && !diff.Empty():
				t.Errorf("the same schema built two ways renders differently: %s", diff.Describe())
			case !c.Same && dumpDiff == "":
				t.Errorf("pg_dump shows no difference: the pair does not differ in a fact pg_dump sees; rendering: %s", diff.Describe())
			case dumpDiff != "" && diff.Empty():
				t.Errorf("pg_dump shows a difference the rendering does not (a bug in the rendering):\n%s", dumpDiff)
			}
			if !t.Failed() && !c.Same {
				t.Logf("rendering: %s", diff.Describe())
			}
		})
	}
}

// load creates database name from the base and runs extra in it.
func load(t *testing.T, pg *testenv.Postgres, name, extra string) string {
	t.Helper()
	pg.Exec(t, "postgres", "CREATE DATABASE "+name+" TEMPLATE proof_base")
	if extra != "" {
		pg.Exec(t, name, extra)
	}
	return name
}

func render(t *testing.T, pg *testenv.Postgres, name string) []string {
	t.Helper()
	db, err := sql.Open("pgx", pg.SuperURL(name))
	if err != nil {
		t.Fatal(err)
	}
	defer db.Close()
	ctx := context.Background()
	tx, err := db.BeginTx(ctx, &sql.TxOptions{ReadOnly: true, Isolation: sql.LevelRepeatableRead})
	if err != nil {
		t.Fatal(err)
	}
	defer tx.Rollback()
	lines, err := catalogproof.Render(ctx, tx, []string{"public"}, nil)
	if err != nil {
		t.Fatal(err)
	}
	if len(lines) < 50 {
		t.Fatalf("rendered only %d lines of a schema of every class:\n%s", len(lines), strings.Join(lines, "\n"))
	}
	return lines
}

var (
	dumpNoise = regexp.MustCompile(`^(--|SET |SELECT pg_catalog.set_config|\\restrict|\\unrestrict)`)
	// generated matches a name PostgreSQL generates, as the rendering's
	// tokens stand for them.
	generated = regexp.MustCompile(`\b[a-z0-9_]+_(pkey|key|fkey|check|excl|idx|seq)[0-9]*\b`)
)

// dump is pg_dump --schema-only of database name as sorted statements,
// without its header, settings and \restrict lines, the columns of a table
// sorted, and generated names replaced.
func dump(t *testing.T, pg *testenv.Postgres, name string) []string {
	t.Helper()
	out, err := exec.Command(filepath.Join(testenv.PostgresBinDir, "pg_dump"), "--schema-only", "--no-owner", "--no-tablespaces",
		"--dbname", pg.SuperURL(name)).Output()
	if err != nil {
		t.Fatalf("pg_dump %s: %v", name, err)
	}
	var stmts []string
	var cur []string
	flush := func() {
		if len(cur) == 0 {
			return
		}
		if strings.HasPrefix(cur[0], "CREATE TABLE ") && len(cur) > 2 {
			// the columns and table constraints, in any order
			inner := cur[1 : len(cur)-1]
			for i := range inner {
				inner[i] = strings.TrimSuffix(inner[i], ",")
			}
			slices.Sort(inner)
		}
		stmts = append(stmts, generated.ReplaceAllString(strings.Join(cur, "\n"), "<auto:$1>"))
		cur = nil
	}
	for _, l := range strings.Split(string(out), "\n") {
		if l == "" || dumpNoise.MatchString(l) {
			continue
		}
		cur = append(cur, l)
		if strings.HasSuffix(l, ";") {
			flush()
		}
	}
	flush()
	slices.Sort(stmts)
	return stmts
}

// linesDiff names the statements only one side has, "" when none.
func linesDiff(a, b []string) string {
	d := catalogproof.Compare(a, b)
	if d.Empty() {
		return ""
	}
	return fmt.Sprintf("only live (%d):\n  %s\nonly desired (%d):\n  %s", len(d.OnlyLive), strings.Join(d.OnlyLive, "\n  "), len(d.OnlyDesired), strings.Join(d.OnlyDesired, "\n  "))
}

// TestGrantsToTheTargetRoleAreLeftOut: on the dev database the desired
// SQL's grant to the role ptah runs as on the target is left out when the
// transaction names that role (catalogread.SetTargetRole), as the
// target's own reading leaves out the grants to the role it runs as; a
// grant to another role, and to PUBLIC, stays.
func TestGrantsToTheTargetRoleAreLeftOut(t *testing.T) {
	pg := testenv.StartPostgres(t)
	pg.Exec(t, "postgres", `CREATE ROLE "Target Role"`)
	pg.Exec(t, "postgres", "CREATE ROLE reader")
	pg.Exec(t, "postgres", "CREATE DATABASE grants")
	pg.Exec(t, "grants", `CREATE TABLE t (id integer, c text); GRANT SELECT, INSERT ON t TO "Target Role", reader, PUBLIC; GRANT UPDATE (c) ON t TO "Target Role", reader`)
	db, err := sql.Open("pgx", pg.SuperURL("grants"))
	if err != nil {
		t.Fatal(err)
	}
	defer db.Close()
	ctx := context.Background()
	read := func(target string) string {
		tx, err := db.BeginTx(ctx, &sql.TxOptions{ReadOnly: true})
		if err != nil {
			t.Fatal(err)
		}
		defer tx.Rollback()
		if target != "" {
			if _, err := tx.ExecContext(ctx, catalogread.SetTargetRole, target); err != nil {
				t.Fatal(err)
			}
		}
		lines, err := catalogproof.Render(ctx, tx, []string{"public"}, nil)
		if err != nil {
			t.Fatal(err)
		}
		var out []string
		for _, l := range lines {
			if strings.HasPrefix(l, "table public.t ") || strings.HasPrefix(l, "column public.t.c ") {
				_, acl, _ := strings.Cut(l, " acl=")
				out = append(out, acl)
			}
		}
		return strings.Join(out, " | ")
	}
	all, without := read(""), read("Target Role")
	if !strings.Contains(all, `"Target Role":INSERT`) || !strings.Contains(all, `"Target Role":UPDATE`) {
		t.Fatalf("without a target role named, the grants to it are not rendered: %s", all)
	}
	if strings.Contains(without, "Target Role") {
		t.Errorf("the target role's grants are rendered though it was named: %s", without)
	}
	for _, keep := range []string{"reader:INSERT", "reader:SELECT", "reader:UPDATE", "PUBLIC:SELECT"} {
		if !strings.Contains(without, keep) {
			t.Errorf("grant %s lost when the target role is named: %s", keep, without)
		}
	}
}
