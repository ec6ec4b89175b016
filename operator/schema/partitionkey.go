package schema

import (
	"strings"

	"ariga.io/atlas/sql/postgres"
	sqlschema "ariga.io/atlas/sql/schema"

	"ptah.run/operator/operator/pgcatalog"
	"ptah.run/operator/operator/report"
)

// partitionKeyChanged refuses a table whose partition key differs between
// the live schema and the desired one, or that is partitioned on one side
// only: PostgreSQL cannot change a table's partition key, and no ALTER
// does it.
func partitionKeyChanged(schema string, live, desired *sqlschema.Schema) error {
	for _, lt := range live.Tables {
		dt, ok := desired.Table(lt.Name)
		if !ok {
			continue
		}
		lk, dk := partitionKey(lt), partitionKey(dt)
		if lk == dk {
			continue
		}
		if lk == "" || dk == "" {
			has := func(k string) string {
				if k == "" {
					return "a plain table"
				}
				return "partitioned (PARTITION BY " + k + ")"
			}
			return report.Errorf(report.UnplannedDifference, "table %s.%s is %s in the database and %s in the desired schema; PostgreSQL cannot partition a table or make a partitioned one plain, so ptah plans nothing: create the table anew under another name, move its rows and swap the names in a migration, or declare the table as the database has it", pgcatalog.QuoteIdent(schema), pgcatalog.QuoteIdent(lt.Name), has(lk), has(dk))
		}
		return report.Errorf(report.UnplannedDifference, "the partition key of table %s.%s differs: the database has PARTITION BY %s, the desired schema PARTITION BY %s; PostgreSQL cannot change a table's partition key, so ptah plans nothing: create the table anew under another name with the new key, move its rows and swap the names in a migration, or declare the key the database has", pgcatalog.QuoteIdent(schema), pgcatalog.QuoteIdent(lt.Name), lk, dk)
	}
	return nil
}

// partitionKey is t's partition key as PARTITION BY writes it, "" when t
// is not partitioned.
func partitionKey(t *sqlschema.Table) string {
	var p postgres.Partition
	for _, a := range t.Attrs {
		if pa, ok := a.(*postgres.Partition); ok {
			p = *pa
		}
	}
	if p.T == "" {
		return ""
	}
	parts := make([]string, 0, len(p.Parts))
	for _, part := range p.Parts {
		switch {
		case part.C != nil:
			parts = append(parts, pgcatalog.QuoteIdent(part.C.Name))
		case part.X != nil:
			if x, ok := part.X.(*sqlschema.RawExpr); ok {
				parts = append(parts, x.X)
			}
		}
	}
	return p.T + " (" + strings.Join(parts, ", ") + ")"
}

// retypeRefused refuses a change of column col's type that PostgreSQL
// refuses whatever the types: the column is in its table's partition key,
// or a generated column kept by the desired table computes from it. The
// cast trial, on a copy of the column alone, cannot see either.
func retypeRefused(schema string, lt, dt *sqlschema.Table, col, from, to string) error {
	change := "changes its type from " + from + " to " + to
	if from == to {
		change = "makes its type " + from + " again (an enum whose values are removed or reordered), converting it"
	}
	refuse := func(why string) error {
		return report.Errorf(report.UnplannedDifference, "column %s.%s.%s: the desired schema %s, but %s, and PostgreSQL cannot alter the type of such a column, so ptah plans nothing: make the change in a PtahMigration (drop what uses the column, alter it, create them again), or declare the type the database has",
			pgcatalog.QuoteIdent(schema), pgcatalog.QuoteIdent(lt.Name), pgcatalog.QuoteIdent(col), change, why)
	}
	if k := partitionKey(lt); k != "" && mentionsName(k, col) && mentionsName(partitionKey(dt), col) {
		return refuse("it is in the table's partition key (PARTITION BY " + k + ")")
	}
	for _, g := range lt.Columns {
		dg, ok := dt.Column(g.Name)
		if !ok || g.Name == col || generation(g) == nil || generation(dg) == nil {
			continue
		}
		if mentionsName(generation(g).Expr, col) && mentionsName(generation(dg).Expr, col) {
			return refuse("generated column " + pgcatalog.QuoteIdent(g.Name) + " is computed from it")
		}
	}
	return nil
}
