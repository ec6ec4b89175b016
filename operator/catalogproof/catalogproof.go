// Package catalogproof renders the managed schemas of a database as
// PostgreSQL itself records them, one line per fact, so that two databases
// can be held equal by an oracle the planner does not share: it reads the
// catalogs and the server's own pg_get_*def functions with a query of its
// own (catalogread.Rendering) and none of the planner's model (atlas's
// inspection, package pgcatalog). `ptah schema plan` writes an empty plan,
// and `ptah schema drift` reports no drift, only when the renderings of the
// target and of the desired schema are equal.
//
// A line names its class and object first and then every property as
// key=value, e.g.
//
//	column public.t.a type=integer collation= notnull=t default=nextval(<seq of public.t.a>) ...
//
// OIDs and owners never appear, nor grants to the owner or to the role
// ptah runs as (on the target, the role a DBA let ptah connect as; on the
// dev database, the role loading the desired SQL); names PostgreSQL generates (t_pkey,
// t_a_check, t_a_idx, a serial's t_id_seq) render as a token derived from
// the object's kind and table (<auto:pkey(public.t)>, <seq of public.t.id>),
// so a desired schema that leaves a name to PostgreSQL renders as the live
// one. A partition's index or constraint attached to its partitioned
// table's renders as <auto:attached(partition)> whatever its name (a
// partition attached with an index of its own keeps that index's name):
// the desired SQL declares it on the parent, where its name is rendered. Left out on purpose, because they are not desired state or differ
// between any two servers: column order (the planner adds a column at the
// end and never reorders: two tables alike but for the order of their
// columns render equal), owners, tablespaces, sequence values, statistics,
// an extension's version where it is its server's default (CREATE
// EXTENSION takes the default of the packages the server has installed,
// which may differ between the dev server and the target; a version that
// is not the default was asked for, CREATE EXTENSION ... VERSION, and is
// rendered), collation versions, and
// the objects an extension installs (their definitions follow its version).
package catalogproof

import (
	"context"
	"database/sql"
	"fmt"
	"path"
	"sort"
	"strings"

	"ptah.run/operator/operator/catalogread"
)

// Querier is what Render needs: a transaction, for the rendering to be of
// the same snapshot as whatever else it reads.
type Querier interface {
	ExecContext(ctx context.Context, query string, args ...any) (sql.Result, error)
	QueryContext(ctx context.Context, query string, args ...any) (*sql.Rows, error)
}

// Render returns the sorted lines of schemas as q's database holds them.
// exclude holds the atlas glob patterns of the comparison ("t", "t.c",
// "audit_*"): the lines of a table a pattern names (its columns,
// constraints, indexes, triggers, policies, owned sequences, partitions)
// are left out, and "t.c" leaves out column c of t. It sets search_path to
// ” for the rest of q's transaction, so every name prints qualified.
func Render(ctx context.Context, q Querier, schemas []string, exclude []string) ([]string, error) {
	if _, err := q.ExecContext(ctx, catalogread.SetSearchPath, ""); err != nil {
		return nil, fmt.Errorf("set search_path for the rendering: %w", err)
	}
	rows, err := q.QueryContext(ctx, catalogread.Rendering, schemas)
	if err != nil {
		return nil, fmt.Errorf("render the catalog of %s: %w", strings.Join(schemas, ", "), err)
	}
	defer rows.Close()
	var lines []string
	refs := map[string]string{}
	for rows.Next() {
		var tbl, root, col, ref, token sql.NullString
		var line string
		if err := rows.Scan(&tbl, &root, &col, &ref, &token, &line); err != nil {
			return nil, fmt.Errorf("render the catalog of %s: %w", strings.Join(schemas, ", "), err)
		}
		if excluded(exclude, tbl.String, root.String, col.String) {
			continue
		}
		if ref.Valid && token.Valid {
			refs["'"+strings.ReplaceAll(ref.String, "'", "''")+"'::regclass"] = token.String
		}
		lines = append(lines, line)
	}
	if err := rows.Err(); err != nil {
		return nil, fmt.Errorf("render the catalog of %s: %w", strings.Join(schemas, ", "), err)
	}
	for i, l := range lines {
		for ref, token := range refs {
			if strings.Contains(l, ref) {
				l = strings.ReplaceAll(l, ref, token)
			}
		}
		lines[i] = escape(l)
	}
	sort.Strings(lines)
	return lines, nil
}

// escape keeps a fact on one line: a function's body or a view's query
// spans several.
func escape(s string) string {
	if !strings.ContainsAny(s, "\\\n\r\t") {
		return s
	}
	return strings.NewReplacer(`\`, `\\`, "\n", `\n`, "\r", `\r`, "\t", `\t`).Replace(s)
}

// excluded says whether a line of table tbl (root, the top of its
// partition tree) and column col is left out by the patterns.
func excluded(patterns []string, tbl, root, col string) bool {
	if tbl == "" {
		return false
	}
	for _, pat := range patterns {
		t, c, hasCol := strings.Cut(pat, ".")
		match := func(name string) bool { ok, _ := path.Match(t, name); return ok || t == name }
		if !match(tbl) && !match(root) {
			continue
		}
		if !hasCol {
			return true
		}
		if col != "" {
			if ok, _ := path.Match(c, col); ok || c == col {
				return true
			}
		}
	}
	return false
}

// Difference is how two renderings differ: the lines only one side has,
// each sorted. A line both sides have twice and one side three times is
// once in the difference.
type Difference struct {
	OnlyLive, OnlyDesired []string
}

// Compare returns the lines live and desired (sorted renderings) do not
// share.
func Compare(live, desired []string) Difference {
	var d Difference
	i, j := 0, 0
	for i < len(live) || j < len(desired) {
		switch {
		case j == len(desired) || i < len(live) && live[i] < desired[j]:
			d.OnlyLive = append(d.OnlyLive, live[i])
			i++
		case i == len(live) || desired[j] < live[i]:
			d.OnlyDesired = append(d.OnlyDesired, desired[j])
			j++
		default:
			i++
			j++
		}
	}
	return d
}

// Empty says whether the renderings were equal.
func (d Difference) Empty() bool { return len(d.OnlyLive) == 0 && len(d.OnlyDesired) == 0 }

// Shown is how many lines of each side Describe names.
const Shown = 5

// Describe names the differing lines, at most Shown of each side, clipped,
// and how many there are.
func (d Difference) Describe() string {
	side := func(name string, lines []string) string {
		var b strings.Builder
		fmt.Fprintf(&b, "%d line(s) only in %s", len(lines), name)
		for i, l := range lines {
			if i == Shown {
				fmt.Fprintf(&b, " | and %d more", len(lines)-Shown)
				break
			}
			if i == 0 {
				b.WriteString(": ")
			} else {
				b.WriteString(" | ")
			}
			b.WriteString(clip(l))
		}
		return b.String()
	}
	return side("the database", d.OnlyLive) + "; " + side("the desired schema", d.OnlyDesired)
}

func clip(s string) string {
	const most = 300
	if r := []rune(s); len(r) > most {
		return string(r[:most-3]) + "..."
	}
	return s
}
