package database

import (
	"context"
	"errors"
	"strings"

	"ariga.io/atlas/sql/migrate"
	"github.com/jackc/pgx/v5/pgconn"

	"ptah.run/operator/operator/report"
)

// ExecScript runs the SQL script text inside a transaction. It sends the
// whole script at once (one round trip); if that fails, it rolls back to a
// savepoint and runs the script statement by statement to name the line of
// file the failure is on. A statement PostgreSQL rejects gives an error coded
// code (LockTimeout for a lock wait); a lost connection gives Connection.
func ExecScript(ctx context.Context, exec func(ctx context.Context, query string) error, target, file, text string, code report.Code) error {
	if err := exec(ctx, "SAVEPOINT ptah_script"); err != nil {
		return StatementError(target, "run "+file, err)
	}
	if err := exec(ctx, text); err == nil {
		return nil
	} else if err := exec(ctx, "ROLLBACK TO SAVEPOINT ptah_script"); err != nil {
		return StatementError(target, "run "+file, err)
	}
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
		switch {
		case IsLockTimeout(err):
			code = report.LockTimeout
		case pgErr.Code == "42601": // syntax_error
			code = report.Parse
		}
		return report.Errorf(code, "%s:%d: %s (SQLSTATE %s)", file, line, pgErr.Message, pgErr.Code)
	}
	// Statement by statement it ran: whatever failed at once was not an SQL error.
	return report.Errorf(report.Internal, "%s failed when sent whole but not statement by statement; check for statements that need their own transaction", file)
}
