package schema

import (
	"context"
	"crypto/sha256"
	"database/sql"
	"encoding/hex"
	"fmt"
	"slices"

	"ariga.io/atlas/sql/postgres"
	sqlschema "ariga.io/atlas/sql/schema"

	"ptah.run/operator/operator/pgcatalog"
)

// Managed is the schema ptah keeps; the desired SQL describes its contents.
const Managed = "public"

// state is one side of a diff: a schema as atlas inspected it, named
// Managed whatever it was inspected as, and its fingerprint.
type state struct {
	schema *sqlschema.Schema
	// objects is the whole catalog of the schema as PostgreSQL prints it,
	// what atlas manages included.
	objects     []pgcatalog.Object
	fingerprint string
	// invalid is the indexes PostgreSQL marks invalid, left out of schema.
	invalid []invalidIndex
}

// inspect reads schema name through tx with search_path set to it, so that
// expressions (defaults, checks) print the same for the live schema and for
// the dev database's copy. exclude holds atlas glob patterns of objects to ignore.
// desired also reads the schemas other than name, which the desired SQL may
// not declare since ptah would not keep them.
func inspect(ctx context.Context, tx *sql.Tx, name string, exclude []string, desired bool) (*state, error) {
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
	objects, err := pgcatalog.Read(ctx, tx, name, exclude, desired)
	if err != nil {
		return nil, err
	}
	invalid, err := readInvalidIndexes(ctx, tx, name)
	if err != nil {
		return nil, err
	}
	withoutInvalid(s, invalid)
	marked := objects
	for _, ix := range invalid {
		marked = append(slices.Clip(marked), pgcatalog.Object{Kind: "invalid index", Name: ix.name + " on " + ix.table})
	}
	fp, err := fingerprint(s, marked)
	if err != nil {
		return nil, err
	}
	return &state{schema: s, objects: objects, fingerprint: fp, invalid: invalid}, nil
}

// fingerprint digests atlas's HCL rendering of s, which is ordered and holds
// every inspected property, and of the catalog as PostgreSQL prints it, so
// equal schemas give equal fingerprints and a change atlas does not see
// (a view, a trigger) changes the fingerprint too.
func fingerprint(s *sqlschema.Schema, objects []pgcatalog.Object) (string, error) {
	b, err := postgres.MarshalHCL(s)
	if err != nil {
		return "", fmt.Errorf("render schema %q for its fingerprint: %w", s.Name, err)
	}
	h := sha256.New()
	h.Write(b)
	for _, o := range objects {
		fmt.Fprintf(h, "\x00%s\x00%s\x00%s", o.Kind, o.Name, o.Def)
	}
	sum := h.Sum(nil)
	return "sha256:" + hex.EncodeToString(sum[:]), nil
}
