package database

import (
	"context"
	"database/sql"
	"errors"
	"fmt"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgconn"
	"github.com/jackc/pgx/v5/stdlib"

	"ptah.run/operator/operator/report"
	"ptah.run/operator/operator/sqlsplit"
)

// WithPgx runs f with the pgx connection behind conn, for what
// database/sql cannot say: how many statements of a script completed.
func WithPgx(conn *sql.Conn, f func(c *pgx.Conn) error) error {
	return conn.Raw(func(dc any) error {
		c, ok := dc.(*stdlib.Conn)
		if !ok {
			return fmt.Errorf("database: %T is not a pgx connection", dc)
		}
		return f(c.Conn())
	})
}

// ExecScript sends the SQL script text to the server in one simple-protocol
// Query message, in whatever transaction the session is in: PostgreSQL
// reads the whole text once, under the session's settings, before it runs
// any statement of it (a syntax error anywhere runs nothing), and runs its
// statements in order until one fails. Nothing is run again and no other
// lexer reads the text. A statement PostgreSQL refused gives a
// *ScriptFailure; a lost connection (or the server ending the session)
// another error. ScriptError describes either.
func ExecScript(ctx context.Context, pc *pgconn.PgConn, text string) error {
	mrr := pc.Exec(ctx, text)
	done := 0
	for mrr.NextResult() {
		if _, err := mrr.ResultReader().Close(); err != nil {
			break
		}
		done++
	}
	err := mrr.Close()
	if err == nil {
		return nil
	}
	var pgErr *pgconn.PgError
	if !errors.As(err, &pgErr) || pgErr.Severity == "FATAL" || pgErr.Severity == "PANIC" {
		return err
	}
	return &ScriptFailure{Err: pgErr, Done: done}
}

// ScriptFailure is a statement of a script PostgreSQL refused: the
// session is still there, and its transaction, if any, failed.
type ScriptFailure struct {
	Err *pgconn.PgError
	// Done counts the statements that completed before it (each sends its
	// own result): the index of the one that failed.
	Done int
}

func (f *ScriptFailure) Error() string { return f.Err.Error() }

// ScriptError describes err of ExecScript running text, the script of
// file, naming the line it failed on: PostgreSQL's error position when it
// gives one (a position into the whole text), else the first line of the
// statement that failed, the Done-th of stmts, the text's statements as
// sqlsplit reads them (split here when nil: for a text not parsed before,
// the cost of the parser is paid only when it fails, and best after its
// transaction is ended). A statement PostgreSQL refused gives an error coded
// code (LockTimeout for a lock wait, Parse for a syntax error); a lost
// connection gives Connection.
func ScriptError(err error, target, file, text string, stmts []sqlsplit.Stmt, code report.Code) *report.Error {
	var f *ScriptFailure
	if !errors.As(err, &f) {
		return StatementError(target, "run "+file, err)
	}
	pgErr := f.Err
	line := 0
	if pgErr.Position > 0 {
		line = sqlsplit.LineAt(text, sqlsplit.Offset(text, int(pgErr.Position)))
	} else {
		if stmts == nil {
			stmts, _ = sqlsplit.Split(text)
		}
		if f.Done < len(stmts) {
			line = stmts[f.Done].Line
		}
	}
	switch {
	case IsLockTimeout(pgErr):
		code = report.LockTimeout
	case pgErr.Code == "42601": // syntax_error
		code = report.Parse
	}
	if line == 0 {
		return report.Errorf(code, "%s: %s (SQLSTATE %s)", file, pgErr.Message, pgErr.Code)
	}
	return report.Errorf(code, "%s:%d: %s (SQLSTATE %s)", file, line, pgErr.Message, pgErr.Code)
}
