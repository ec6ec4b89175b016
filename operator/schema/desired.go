package schema

import (
	"context"
	"crypto/rand"
	"database/sql"
	"encoding/hex"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strings"

	"ariga.io/atlas/sql/migrate"
	"github.com/jackc/pgx/v5/pgconn"

	"ptah.run/operator/operator/report"
)

// File is one desired-state SQL file: its name (as given, for messages) and text.
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
		files = append(files, File{Name: filepath.Base(p), Text: string(b)})
	}
	return files, nil
}

// loadScratch creates a uniquely named scratch schema inside tx and runs the
// desired SQL there with search_path pointing at it, so unqualified names
// land in the scratch and never in the managed schema. It returns the
// scratch schema's name. The caller rolls tx back, which removes the scratch
// whatever happened.
func loadScratch(ctx context.Context, tx *sql.Tx, files []File) (string, error) {
	b := make([]byte, 6)
	if _, err := rand.Read(b); err != nil {
		return "", err
	}
	scratch := "ptah_scratch_" + hex.EncodeToString(b)
	for _, q := range []string{
		"CREATE SCHEMA " + scratch,
		"SET LOCAL search_path TO " + scratch,
	} {
		if _, err := tx.ExecContext(ctx, q); err != nil {
			return "", fmt.Errorf("prepare the scratch schema (the role needs CREATE on the database): %w", err)
		}
	}
	for _, f := range files {
		stmts, err := migrate.Stmts(f.Text)
		if err != nil {
			return "", report.Errorf(report.Parse, "%s: cannot split into statements: %v; nothing was applied", f.Name, err)
		}
		for _, s := range stmts {
			if _, err := tx.ExecContext(ctx, s.Text); err != nil {
				return "", parseError(f, s, err)
			}
		}
	}
	return scratch, nil
}

// parseError names the file and line of the failing statement, refined by
// PostgreSQL's error position when it gives one.
func parseError(f File, s *migrate.Stmt, err error) error {
	line := 1 + strings.Count(f.Text[:s.Pos], "\n")
	msg := err.Error()
	var pgErr *pgconn.PgError
	if errors.As(err, &pgErr) {
		msg = pgErr.Message
		if pos := int(pgErr.Position); pos > 0 {
			r := []rune(s.Text)
			if pos > len(r) {
				pos = len(r)
			}
			line += strings.Count(string(r[:pos-1]), "\n")
		}
	}
	return report.Errorf(report.Parse, "%s:%d: %s; nothing was applied", f.Name, line, msg)
}
