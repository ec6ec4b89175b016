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
	"ptah.run/operator/operator/pgcatalog"
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
//
// Each change that PostgreSQL makes also gets, in conversions, the check
// that stops a lossy one (conversion), where that check compiles on the
// copy too.
func castTrials(ctx context.Context, dev *database.DB, changes []sqlschema.Change, live, desired *state, conversions map[string]conversion) error {
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
			key := "column " + pgcatalog.QuoteIdent(m.T.Name) + "." + pgcatalog.QuoteIdent(c.From.Name)
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
			conv := conversion{table: m.T.Name, column: c.From.Name, from: from, to: to, using: using}
			at := live.name + "." + m.T.Name + "." + c.From.Name
			err := trial(ctx, dev, path, conv, conv.alter("ptah_cast_trial"))
			if err == nil || missingType(err) {
				if err == nil && trial(ctx, dev, path, conv, "SELECT FROM ptah_cast_trial WHERE "+conv.changed()) == nil {
					conversions[at] = conv
				}
				continue
			}
			explicit := pgcatalog.QuoteIdent(c.From.Name) + "::" + to
			if using != explicit {
				conv.using = explicit
				if err = trial(ctx, dev, path, conv, conv.alter("ptah_cast_trial")); err == nil {
					c.Extra = append(withoutUsing(c.Extra), &postgres.ConvertUsing{X: explicit})
					if trial(ctx, dev, path, conv, "SELECT FROM ptah_cast_trial WHERE "+conv.changed()) == nil {
						conversions[at] = conv
					}
					continue
				}
			}
			name := live.name + "." + m.T.Name + "." + c.From.Name
			return report.Errorf(report.UnplannedDifference, "column %s: the database has type %s, the desired schema %s, and PostgreSQL has no cast between them (%s), so ptah plans nothing: convert the values in a PtahMigration (ALTER COLUMN ... TYPE %s USING an expression of your own), or declare the type the database has", name, from, to, pgMessage(err), to)
		}
	}
	return nil
}

// conversion is a change of a column's type as planned: the USING
// expression ("" for none), and the two types as the schema's search path
// prints them.
type conversion struct {
	table, column, from, to, using string
}

// changed is the condition true of a row whose value the conversion would
// not give back: converted, then converted back to the old type, it reads
// otherwise. Compared as text, which every type has (json has no =).
func (c conversion) changed() string {
	x := c.using
	if x == "" {
		x = pgIdent(c.column) + "::" + c.to
	}
	return fmt.Sprintf("((%s)::%s)::text IS DISTINCT FROM %s::text", x, c.from, pgIdent(c.column))
}

// alter is the conversion as ALTER TABLE table writes it.
func (c conversion) alter(table string) string {
	q := fmt.Sprintf("ALTER TABLE %s ALTER COLUMN %s TYPE %s", table, pgIdent(c.column), c.to)
	if c.using != "" {
		q += " USING " + c.using
	}
	return q
}

// pgIdent quotes a name always, which is always right.
func pgIdent(s string) string { return `"` + strings.ReplaceAll(s, `"`, `""`) + `"` }

// guard is the statement run just before a conversion that may change a
// value (loses), under the table's lock: it stops the apply if any row
// holds such a value, so that the conversion loses nothing; it reads
// every row once more before the rewrite.
func (c conversion) guard(schema string) Statement {
	table := pgIdent(schema) + "." + pgIdent(c.table)
	name := c.table + "." + c.column
	message := "column " + name + " holds a value that changing its type from " + c.from + " to " + c.to +
		" would change (converted and converted back, it reads otherwise); nothing was changed. Convert the values in a PtahMigration (ALTER COLUMN ... TYPE ... USING an expression of your own), or declare a type that keeps them"
	body := fmt.Sprintf(`
BEGIN
  LOCK TABLE %[1]s IN ACCESS EXCLUSIVE MODE;
  IF EXISTS (SELECT FROM %[1]s WHERE %[2]s) THEN
    RAISE EXCEPTION USING ERRCODE = '%[3]s', MESSAGE = %[4]s;
  END IF;
END
`, table, c.changed(), database.LossyConversion, literal(message))
	return Statement{SQL: "DO " + dollarQuoted(body), Severity: Safe, Hazards: []Hazard{HazardAccessExclusiveLock},
		Reason: "checks that every value of column " + name + " converts to " + c.to + " and back to itself, so that the change of type loses none: one that does not stops the apply"}
}

// trial runs q on an empty temporary table holding one column of the
// conversion's old type, in a transaction it rolls back: what PostgreSQL
// refuses there it would refuse on the target.
func trial(ctx context.Context, dev *database.DB, path string, c conversion, q string) error {
	tx, err := dev.BeginTx(ctx, nil)
	if err != nil {
		return fmt.Errorf("begin a type change trial on the dev database: %w", err)
	}
	defer tx.Rollback()
	if _, err := tx.ExecContext(ctx, "SELECT set_config('search_path', $1, true)", path); err != nil {
		return fmt.Errorf("set the search path of a type change trial: %w", err)
	}
	if _, err := tx.ExecContext(ctx, fmt.Sprintf("CREATE TEMPORARY TABLE ptah_cast_trial (%s %s)", pgIdent(c.column), c.from)); err != nil {
		return err
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
