package schema

import (
	"regexp"
	"strings"

	sqlschema "ariga.io/atlas/sql/schema"

	"ptah.run/operator/operator/pgcatalog"
	"ptah.run/operator/operator/report"
)

// regenerated is a column that becomes generated, or whose generation
// expression changes: PostgreSQL 15 has no ALTER for either (only DROP
// EXPRESSION, which atlas plans), so it is dropped and added again, and
// its stored values are lost (computed anew): destructive.
type regenerated struct {
	table *sqlschema.Table
	live  *sqlschema.Column
}

// regenerate finds the columns of the managed schema that must be dropped
// and added again to take their generation expression (regenerated). It
// takes each out of the live side's model, so atlas plans the desired
// column as one to add (its table in that model is a copy: the rest of the
// comparison sees the database as it is), and dropInRegenerated then drops
// the live one first. A column something else depends on (an index, a
// key, a check, a view, a trigger, a policy or statistics naming it) is
// refused instead: dropping it would take those too.
func regenerate(schema string, live, desired *sqlschema.Schema, objects []pgcatalog.Object) ([]regenerated, error) {
	var out []regenerated
	for ti, lt := range live.Tables {
		dt, ok := desired.Table(lt.Name)
		if !ok {
			continue
		}
		var keep []*sqlschema.Column
		var here []regenerated
		for _, lc := range lt.Columns {
			dc, ok := dt.Column(lc.Name)
			if !ok {
				keep = append(keep, lc)
				continue
			}
			lx, dx := generation(lc), generation(dc)
			if dx == nil || lx != nil && wrapped(lx.Expr) == wrapped(dx.Expr) {
				keep = append(keep, lc)
				continue
			}
			name := pgcatalog.QuoteIdent(schema) + "." + pgcatalog.QuoteIdent(lt.Name) + "." + pgcatalog.QuoteIdent(lc.Name)
			if dep := dependent(live, lt, lc, objects); dep != "" {
				has := "a plain column"
				if lx != nil {
					has = "GENERATED ALWAYS AS " + wrapped(lx.Expr) + " STORED"
				}
				return nil, report.Errorf(report.UnplannedDifference, "column %s: the database has %s, the desired schema GENERATED ALWAYS AS %s STORED; PostgreSQL 15 cannot make a column generated or change its expression, and dropping it to add it again would take %s with it, so ptah plans nothing: make the change in a PtahMigration, or declare the column the database has", name, has, wrapped(dx.Expr), dep)
			}
			here = append(here, regenerated{live: lc})
		}
		if len(here) == 0 {
			continue
		}
		cp := *lt
		cp.Columns = keep
		live.Tables[ti] = &cp
		for i := range here {
			here[i].table = &cp
		}
		out = append(out, here...)
	}
	return out, nil
}

// dropInRegenerated drops each regenerated column first in its table's
// changes (atlas's diff adds the desired one).
func dropInRegenerated(changes []sqlschema.Change, cols []regenerated) []sqlschema.Change {
	for _, r := range cols {
		drop := &sqlschema.DropColumn{C: r.live}
		found := false
		for _, ch := range changes {
			if m, ok := ch.(*sqlschema.ModifyTable); ok && m.T.Name == r.table.Name {
				m.Changes = append([]sqlschema.Change{drop}, m.Changes...)
				found = true
				break
			}
		}
		if !found {
			changes = append(changes, &sqlschema.ModifyTable{T: r.table, Changes: []sqlschema.Change{drop}})
		}
	}
	return changes
}

// dependent names what in the live schema depends on column c of table t,
// "" when nothing does.
func dependent(live *sqlschema.Schema, t *sqlschema.Table, c *sqlschema.Column, objects []pgcatalog.Object) string {
	uses := func(parts []*sqlschema.IndexPart) bool {
		for _, p := range parts {
			if p.C == c || p.X != nil {
				return true
			}
		}
		return false
	}
	if t.PrimaryKey != nil && uses(t.PrimaryKey.Parts) {
		return "the primary key"
	}
	for _, i := range t.Indexes {
		if uses(i.Parts) {
			return "index " + i.Name
		}
	}
	for _, other := range live.Tables {
		for _, fk := range other.ForeignKeys {
			for _, x := range append(append([]*sqlschema.Column{}, fk.Columns...), fk.RefColumns...) {
				if x == c || x.Name == c.Name && (fk.RefTable == t && other != t || other == t) {
					return "foreign key " + fk.Symbol
				}
			}
		}
	}
	word := regexp.MustCompile(`(^|[^a-zA-Z0-9_$"])"?` + regexp.QuoteMeta(c.Name) + `"?($|[^a-zA-Z0-9_$"])`)
	table := "table " + pgcatalog.QuoteIdent(t.Name)
	for _, o := range objects {
		switch {
		case o.Kind == "column" || strings.HasPrefix(o.Kind, "comment on"):
		case strings.Contains(o.Kind, "view") && contains(o.Deps, table):
			return o.Kind + " " + o.Name
		case o.Table == t.Name && word.MatchString(o.Def):
			return o.Kind + " " + o.Name
		}
	}
	return ""
}

func contains(xs []string, x string) bool {
	for _, v := range xs {
		if v == x {
			return true
		}
	}
	return false
}

func generation(c *sqlschema.Column) *sqlschema.GeneratedExpr {
	for _, a := range c.Attrs {
		if g, ok := a.(*sqlschema.GeneratedExpr); ok {
			return g
		}
	}
	return nil
}

// wrapped is expr in one pair of parentheses, as atlas compares them.
func wrapped(expr string) string {
	n := len(expr) - 1
	if n < 1 || expr[0] != '(' || expr[n] != ')' {
		return "(" + expr + ")"
	}
	depth := 0
	for _, r := range expr[1:n] {
		switch r {
		case '(':
			depth++
		case ')':
			depth--
		}
		if depth < 0 {
			return "(" + expr + ")"
		}
	}
	if depth != 0 {
		return "(" + expr + ")"
	}
	return expr
}
