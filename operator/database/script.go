package database

import (
	"context"
	"errors"
	"strings"

	"ariga.io/atlas/sql/migrate"
	"github.com/jackc/pgx/v5/pgconn"

	"ptah.run/operator/operator/report"
)

// ExecScript runs the SQL script text statement by statement, so that a
// failure names the line of file it happened on. A statement PostgreSQL
// rejects gives an error coded code (LockTimeout for a lock wait); a lost
// connection gives Connection.
func ExecScript(ctx context.Context, exec func(ctx context.Context, query string) error, target, file, text string, code report.Code) error {
	stmts, err := migrate.Stmts(text)
	if err != nil {
		return report.Errorf(report.Parse, "%s: cannot split into statements: %v", file, err)
	}
	for _, s := range stmts {
		err := exec(ctx, s.Text)
		if err == nil {
			continue
		}
		var pgErr *pgconn.PgError
		if !errors.As(err, &pgErr) {
			return StatementError(target, "run "+file, err)
		}
		line := 1 + strings.Count(text[:s.Pos], "\n")
		if pos := int(pgErr.Position); pos > 0 {
			r := []rune(s.Text)
			line += strings.Count(string(r[:min(pos-1, len(r))]), "\n")
		}
		if IsLockTimeout(err) {
			code = report.LockTimeout
		}
		return report.Errorf(code, "%s:%d: %s (SQLSTATE %s)", file, line, pgErr.Message, pgErr.Code)
	}
	return nil
}
