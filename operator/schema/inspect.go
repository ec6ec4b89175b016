package schema

import (
	"context"
	"crypto/sha256"
	"database/sql"
	"encoding/hex"
	"fmt"

	"ariga.io/atlas/sql/postgres"
	sqlschema "ariga.io/atlas/sql/schema"
)

// Managed is the schema ptah keeps; the desired SQL describes its contents.
const Managed = "public"

// state is one side of a diff: a schema as atlas inspected it, named
// Managed whatever it was inspected as, and its fingerprint.
type state struct {
	schema      *sqlschema.Schema
	fingerprint string
}

// inspect reads schema name through tx with search_path set to it, so that
// expressions (defaults, checks) print the same for the live schema and for
// the dev database's copy. exclude holds atlas glob patterns of objects to ignore.
func inspect(ctx context.Context, tx *sql.Tx, name string, exclude []string) (*state, error) {
	if _, err := tx.ExecContext(ctx, fmt.Sprintf("SET LOCAL search_path TO %q", name)); err != nil {
		return nil, fmt.Errorf("set search_path for inspection: %w", err)
	}
	drv, err := postgres.Open(tx)
	if err != nil {
		return nil, fmt.Errorf("open the atlas driver: %w", err)
	}
	s, err := drv.InspectSchema(ctx, name, &sqlschema.InspectOptions{Exclude: exclude})
	if err != nil {
		return nil, fmt.Errorf("inspect schema %q: %w", name, err)
	}
	// Schema-level attributes (public's stock comment) are not part of the
	// desired SQL.
	s.Name, s.Attrs = Managed, nil
	fp, err := fingerprint(s)
	if err != nil {
		return nil, err
	}
	return &state{schema: s, fingerprint: fp}, nil
}

// fingerprint digests atlas's HCL rendering of s, which is ordered and holds
// every inspected property, so equal schemas give equal fingerprints.
func fingerprint(s *sqlschema.Schema) (string, error) {
	b, err := postgres.MarshalHCL(s)
	if err != nil {
		return "", fmt.Errorf("render schema %q for its fingerprint: %w", s.Name, err)
	}
	sum := sha256.Sum256(b)
	return "sha256:" + hex.EncodeToString(sum[:]), nil
}
