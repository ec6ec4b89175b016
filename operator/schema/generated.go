package schema

import (
	sqlschema "ariga.io/atlas/sql/schema"

	"ptah.run/operator/operator/report"
)

// generationChanged refuses a column that becomes generated, or whose
// generation expression changes: PostgreSQL 15 has no ALTER for either
// (only DROP EXPRESSION, which atlas plans), so the plan would have to drop
// the column and lose its values; that is the owner's call, in a migration.
func generationChanged(schema string, live, desired *sqlschema.Schema) error {
	for _, lt := range live.Tables {
		dt, ok := desired.Table(lt.Name)
		if !ok {
			continue
		}
		for _, lc := range lt.Columns {
			dc, ok := dt.Column(lc.Name)
			if !ok {
				continue
			}
			lx, dx := generation(lc), generation(dc)
			if dx == nil || lx != nil && wrapped(lx.Expr) == wrapped(dx.Expr) {
				continue
			}
			name := quoteIdent(schema) + "." + quoteIdent(lt.Name) + "." + quoteIdent(lc.Name)
			has := "a plain column"
			if lx != nil {
				has = "GENERATED ALWAYS AS " + wrapped(lx.Expr) + " STORED"
			}
			return report.Errorf(report.UnplannedDifference, "column %s: the database has %s, the desired schema GENERATED ALWAYS AS %s STORED; PostgreSQL 15 cannot make a column generated or change its expression, so ptah plans nothing: drop the column and add it again in a PtahMigration (its values are computed anew), or declare the column the database has", name, has, wrapped(dx.Expr))
		}
	}
	return nil
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
