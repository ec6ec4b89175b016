package schema

import (
	"context"
	"errors"
	"fmt"
	"strings"

	"ariga.io/atlas/sql/postgres"
	sqlschema "ariga.io/atlas/sql/schema"
	"github.com/jackc/pgx/v5/pgconn"

	"ptah.run/operator/operator/database"
	"ptah.run/operator/operator/report"
)

// castTrials holds every change of a column's type to what PostgreSQL
// itself does with it, rather than to a table of casts kept here: the
// change, as it would be planned, is tried on an empty copy of the column
// (a temporary table in the dev database, rolled back). A change that
// fails as planned but succeeds with an explicit cast (USING col::type)
// gets that USING; PostgreSQL makes such a change only by rewriting the
// table, and classify marks it a hazard. A change that fails both ways
// has no cast, and the plan is refused naming the column and what
// PostgreSQL said. A type the dev database does not have (a live type the
// desired SQL drops) cannot be tried; that change is planned as atlas
// writes it, and fails in the apply's transaction if it must.
func castTrials(ctx context.Context, dev *database.DB, changes []sqlschema.Change, live, desired *state) error {
	// Types print as the schema's search path names them (searchPath):
	// the trial resolves them under the same one.
	path := searchPath(live.name)
	liveCols, desiredCols := columnsByKey(live.objects), columnsByKey(desired.objects)
	for _, ch := range changes {
		m, ok := ch.(*sqlschema.ModifyTable)
		if !ok {
			continue
		}
		for _, sub := range m.Changes {
			c, ok := sub.(*sqlschema.ModifyColumn)
			if !ok || !c.Change.Is(sqlschema.ChangeType) {
				continue
			}
			key := "column " + quoteIdent(m.T.Name) + "." + quoteIdent(c.From.Name)
			l, d := liveCols[key], desiredCols[key]
			if l == nil || d == nil {
				continue
			}
			from, to := printedType(l.Def), printedType(d.Def)
			if lt, ok := live.schema.Table(m.T.Name); ok {
				if err := retypeRefused(live.name, lt, m.T, c.From.Name, from, to); err != nil {
					return err
				}
			}
			using := retypeUsing(c)
			if u := (postgres.ConvertUsing{}); sqlxHasUsing(c, &u) {
				using = u.X
			}
			err := tryTypeChange(ctx, dev, path, c.From.Name, from, to, using)
			if err == nil || missingType(err) {
				continue
			}
			explicit := quoteIdent(c.From.Name) + "::" + to
			if using != explicit {
				if err = tryTypeChange(ctx, dev, path, c.From.Name, from, to, explicit); err == nil {
					c.Extra = append(withoutUsing(c.Extra), &postgres.ConvertUsing{X: explicit})
					continue
				}
			}
			name := live.name + "." + m.T.Name + "." + c.From.Name
			return report.Errorf(report.UnplannedDifference, "column %s: the database has type %s, the desired schema %s, and PostgreSQL has no cast between them (%s), so ptah plans nothing: convert the values in a PtahMigration (ALTER COLUMN ... TYPE %s USING an expression of your own), or declare the type the database has", name, from, to, pgMessage(err), to)
		}
	}
	return nil
}

// tryTypeChange runs ALTER COLUMN TYPE on an empty temporary table with
// one column named col of type from, in a transaction it rolls back.
func tryTypeChange(ctx context.Context, dev *database.DB, path, col, from, to, using string) error {
	tx, err := dev.BeginTx(ctx, nil)
	if err != nil {
		return fmt.Errorf("begin a type change trial on the dev database: %w", err)
	}
	defer tx.Rollback()
	if _, err := tx.ExecContext(ctx, "SELECT set_config('search_path', $1, true)", path); err != nil {
		return fmt.Errorf("set the search path of a type change trial: %w", err)
	}
	if _, err := tx.ExecContext(ctx, fmt.Sprintf("CREATE TEMPORARY TABLE ptah_cast_trial (%s %s)", quoteIdent(col), from)); err != nil {
		return err
	}
	q := fmt.Sprintf("ALTER TABLE ptah_cast_trial ALTER COLUMN %s TYPE %s", quoteIdent(col), to)
	if using != "" {
		q += " USING " + using
	}
	_, err = tx.ExecContext(ctx, q)
	return err
}

// missingType says whether a trial failed for want of a type (or of an
// object a type names) in the dev database, not for want of a cast.
func missingType(err error) bool {
	var pgErr *pgconn.PgError
	return !errors.As(err, &pgErr) || pgErr.Code == "42704" || pgErr.Code == "3F000" || pgErr.Code == "42P01"
}

func pgMessage(err error) string {
	var pgErr *pgconn.PgError
	if errors.As(err, &pgErr) {
		return strings.TrimSuffix(pgErr.Message, ".")
	}
	return err.Error()
}

func sqlxHasUsing(c *sqlschema.ModifyColumn, u *postgres.ConvertUsing) bool {
	for _, x := range c.Extra {
		if v, ok := x.(*postgres.ConvertUsing); ok {
			*u = *v
			return true
		}
	}
	return false
}

func withoutUsing(extra []sqlschema.Clause) []sqlschema.Clause {
	var out []sqlschema.Clause
	for _, x := range extra {
		if _, ok := x.(*postgres.ConvertUsing); !ok {
			out = append(out, x)
		}
	}
	return out
}
