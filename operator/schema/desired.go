package schema

import (
	"context"
	"crypto/rand"
	"database/sql"
	"encoding/hex"
	"errors"
	"fmt"
	"os"

	"github.com/jackc/pgx/v5/pgconn"

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
			var pgErr *pgconn.PgError
			if errors.As(err, &pgErr) && pgErr.Code == "42501" {
				return "", report.Errorf(report.Permission, "the role may not create the scratch schema the desired SQL is loaded into: grant it CREATE on the database, or pass --dev-url")
			}
			return "", fmt.Errorf("prepare the scratch schema: %w", err)
		}
	}
	exec := func(ctx context.Context, q string) error {
		_, err := tx.ExecContext(ctx, q)
		return err
	}
	for _, f := range files {
		if err := database.ExecScript(ctx, exec, "", f.Name, f.Text, report.Parse); err != nil {
			e := report.AsError(err)
			e.Message += "; nothing was applied"
			return "", e
		}
	}
	return scratch, nil
}
