package schema

import (
	"context"
	"database/sql"
	"errors"
	"os"

	"ptah.run/operator/operator/database"
	"ptah.run/operator/operator/report"
)

// File is one desired-state SQL file: its path as given (messages name it) and text.
type File struct {
	Name string
	Text string
}

// ReadFiles reads the desired-state SQL files in the order given.
func ReadFiles(paths []string) ([]File, error) {
	if len(paths) == 0 {
		return nil, report.Errorf(report.Usage, "no desired schema: pass --schema-file FILE.sql at least once")
	}
	files := make([]File, 0, len(paths))
	for _, p := range paths {
		b, err := os.ReadFile(p)
		if err != nil {
			return nil, report.Errorf(report.Usage, "read schema file %s: %v", p, errors.Unwrap(err))
		}
		files = append(files, File{Name: p, Text: string(b)})
	}
	return files, nil
}

// loadDesired runs the desired SQL in db, a fresh database of the dev
// server, in one transaction as its role, with the server's defaults
// (search_path "$user", public), so public-qualified names as pg_dump writes
// them land where unqualified ones do. Whatever the SQL does stays on the
// dev server: transaction control, settings and roles included.
func loadDesired(ctx context.Context, db *database.DB, files []File) error {
	tx, err := db.BeginTx(ctx, nil)
	if err != nil {
		return database.StatementError(db.Target, "begin", err)
	}
	defer tx.Rollback()
	exec := func(ctx context.Context, q string) error {
		_, err := tx.ExecContext(ctx, q)
		return err
	}
	for _, f := range files {
		if err := database.ExecScript(ctx, exec, db.Target, f.Name, f.Text, report.Parse); err != nil {
			e := report.AsError(err)
			e.Message += " (loading the desired schema into the dev database)"
			return e
		}
	}
	// The SQL may have ended the transaction itself; a COMMIT then only warns.
	if err := tx.Commit(); err != nil && !errors.Is(err, sql.ErrTxDone) {
		return database.StatementError(db.Target, "commit the desired schema", err)
	}
	return nil
}
