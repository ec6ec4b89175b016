package schema

import (
	"context"
	"crypto/sha256"
	"database/sql"
	"encoding/hex"
	"fmt"
	"maps"
	"regexp"
	"slices"
	"strings"

	"ariga.io/atlas/sql/postgres"
	sqlschema "ariga.io/atlas/sql/schema"

	"ptah.run/operator/operator/catalogread"
	"ptah.run/operator/operator/pgcatalog"
	"ptah.run/operator/operator/report"
)

// Managed is the schema ptah keeps when it is told no other; the desired
// SQL describes its contents.
const Managed = "public"

// side is one side of a diff: every managed schema, in the order given, and
// the fingerprint of them all.
type side struct {
	schemas     []*state
	fingerprint string
}

// state is one managed schema of a side as atlas inspected it and its
// fingerprint.
type state struct {
	name   string
	schema *sqlschema.Schema
	// objects is the whole catalog of the schema as PostgreSQL prints it,
	// what atlas manages included.
	objects     []pgcatalog.Object
	fingerprint string
	// invalid is the indexes PostgreSQL marks invalid, left out of schema.
	invalid []invalidIndex
	// missing is true when the database has no such schema.
	missing bool
	// inherited is, by table, the columns an inheriting table has from
	// its parents alone (it does not declare them itself).
	inherited map[string][]string
	// recreate holds the catalog keys of objects made again, unchanged,
	// around what the plan recreates (enumRecreation); recreatedTypes the
	// types whose grants are given again.
	recreate, recreatedTypes []string
}

// hasTable says whether the schema holds table name.
func (st *state) hasTable(name string) bool {
	_, ok := st.schema.Table(name)
	return ok
}

// partitioned says whether table name of the schema is partitioned: its
// indexes have no concurrent build or drop.
func (st *state) partitioned(name string) bool {
	t, ok := st.schema.Table(name)
	return ok && partitioned(t)
}

func partitioned(t *sqlschema.Table) bool {
	return slices.ContainsFunc(t.Attrs, func(a sqlschema.Attr) bool { _, ok := a.(*postgres.Partition); return ok })
}

// invalidIndexes is the invalid indexes of every schema of the side.
func (s *side) invalidIndexes() []invalidIndex {
	var out []invalidIndex
	for _, st := range s.schemas {
		out = append(out, st.invalid...)
	}
	return out
}

// searchPath is the search_path the objects of schema name are read and
// planned under: that schema alone, so a definition names an object of any
// other schema qualified. With the other managed schemas on the path, a
// foreign key to public.t and one to billing.t printed alike as long as
// each side had only one of them, and a plan moving t between schemas
// kept the key on the table it dropped.
func searchPath(name string) string { return pgcatalog.QuoteIdent(name) }

// globalKinds are catalog rows not of any one schema; they are read with
// the first managed schema only.
var globalKinds = map[string]bool{"extension": true, "event trigger": true}

// inspectSide reads every managed schema of the database tx is on.
// desired also lists the database's other schemas, which the desired SQL
// may not declare since ptah would not keep them.
func inspectSide(ctx context.Context, tx *sql.Tx, schemas []string, exclude []string, desired bool) (*side, error) {
	sd := &side{}
	for i, name := range schemas {
		st, err := inspect(ctx, tx, name, schemas, exclude, desired && i == 0)
		if err != nil {
			return nil, err
		}
		if i > 0 {
			st.objects = slices.DeleteFunc(st.objects, func(o pgcatalog.Object) bool { return globalKinds[o.Kind] })
		}
		sd.schemas = append(sd.schemas, st)
	}
	linkForeignKeys(sd.schemas)
	if len(sd.schemas) == 1 {
		sd.fingerprint = sd.schemas[0].fingerprint
		return sd, nil
	}
	h := sha256.New()
	for _, st := range sd.schemas {
		fmt.Fprintf(h, "%s\x00%s\x00", st.name, st.fingerprint)
	}
	sd.fingerprint = "sha256:" + hex.EncodeToString(h.Sum(nil))
	return sd, nil
}

// inspect reads schema name through tx with search_path set for it (see
// searchPath), so that expressions (defaults, checks, views) print the same
// for the live schema and for the dev database's copy. exclude holds atlas
// glob patterns of objects to ignore. withSchemas also lists the schemas
// other than the managed ones.
func inspect(ctx context.Context, tx *sql.Tx, name string, schemas []string, exclude []string, withSchemas bool) (*state, error) {
	if _, err := tx.ExecContext(ctx, catalogread.SetSearchPath, searchPath(name)); err != nil {
		return nil, fmt.Errorf("set search_path for inspection: %w", err)
	}
	var exists bool
	if err := tx.QueryRowContext(ctx, catalogread.SchemaExists, name).Scan(&exists); err != nil {
		return nil, fmt.Errorf("look for schema %q: %w", name, err)
	}
	if !exists {
		s := sqlschema.New(name)
		fp, err := fingerprint(s, []pgcatalog.Object{{Kind: "missing schema", Name: name}})
		if err != nil {
			return nil, err
		}
		return &state{name: name, schema: s, fingerprint: fp, missing: true}, nil
	}
	drv, err := postgres.Open(atlasQuerier{tx})
	if err != nil {
		return nil, fmt.Errorf("open the atlas driver: %w", err)
	}
	s, err := drv.InspectSchema(ctx, name, &sqlschema.InspectOptions{Exclude: exclude})
	if err != nil {
		return nil, fmt.Errorf("inspect schema %q: %w", name, err)
	}
	// Schema-level attributes (public's stock comment) are not part of the
	// desired SQL.
	s.Attrs = nil
	objects, err := pgcatalog.Read(ctx, tx, name, exclude, withSchemas)
	if err != nil {
		return nil, err
	}
	objects = slices.DeleteFunc(objects, func(o pgcatalog.Object) bool {
		return o.Kind == "schema" && slices.ContainsFunc(schemas, func(m string) bool { return pgcatalog.QuoteIdent(m) == o.Name })
	})
	if len(schemas) > 1 {
		if err := crossSchemaDeps(ctx, tx, name, schemas, objects); err != nil {
			return nil, err
		}
	}
	invalid, err := readInvalidIndexes(ctx, tx, name)
	if err != nil {
		return nil, err
	}
	withoutInvalid(s, invalid)
	nullableAsDeclared(s, objects)
	if err := unborrowSerials(ctx, tx, s); err != nil {
		return nil, err
	}
	inherited, err := readInherited(ctx, tx, name)
	if err != nil {
		return nil, err
	}
	// A key whose index is invalid is dropped with it (dropInvalid): it
	// is not there to compare.
	objects = slices.DeleteFunc(objects, func(o pgcatalog.Object) bool {
		return o.Kind == "constraint" && slices.ContainsFunc(invalid, func(ix invalidIndex) bool {
			return ix.constraint != "" && ix.table == o.Table && pgcatalog.QuoteIdent(ix.constraint) == o.Ident
		})
	})
	marked := objects
	for _, ix := range invalid {
		marked = append(slices.Clip(marked), pgcatalog.Object{Kind: "invalid index", Name: ix.name + " on " + ix.table})
	}
	fp, err := fingerprint(s, marked)
	if err != nil {
		return nil, err
	}
	return &state{name: name, schema: s, objects: objects, fingerprint: fp, invalid: invalid, inherited: inherited}, nil
}

// nullableAsDeclared takes each column's own NOT NULL from the catalog:
// atlas reads information_schema, where a column of a NOT NULL domain
// cannot be null, and would declare the column NOT NULL itself.
func nullableAsDeclared(s *sqlschema.Schema, objects []pgcatalog.Object) {
	cols := columnsByKey(objects)
	for _, t := range s.Tables {
		for _, c := range t.Columns {
			if o := cols["column "+pgcatalog.QuoteIdent(t.Name)+"."+pgcatalog.QuoteIdent(c.Name)]; o != nil && c.Type != nil && !c.Type.Null && slices.Contains(strings.Fields(o.Def), "notnull=f") {
				c.Type.Null = true
			}
		}
	}
}

// crossSchemaDeps adds to the views of schema name the relations of the
// other managed schemas they read (pgcatalog records those of the schema
// itself), qualified, as around names them.
func crossSchemaDeps(ctx context.Context, tx *sql.Tx, name string, schemas []string, objects []pgcatalog.Object) error {
	rows, err := tx.QueryContext(ctx, catalogread.CrossSchemaViews, name, schemas)
	if err != nil {
		return fmt.Errorf("read the views of schema %q reading other schemas: %w", name, err)
	}
	defer rows.Close()
	byKey := map[string]*pgcatalog.Object{}
	for i := range objects {
		byKey[objects[i].Key()] = &objects[i]
	}
	for rows.Next() {
		var view, dep string
		if err := rows.Scan(&view, &dep); err != nil {
			return fmt.Errorf("read the views of schema %q reading other schemas: %w", name, err)
		}
		if o := byKey[view]; o != nil {
			o.Deps = append(o.Deps, dep)
		}
	}
	return rows.Err()
}

// linkForeignKeys points a foreign key to a table of another managed
// schema at that schema's table, as atlas links the tables of one schema,
// so plans order a table after the one it references.
func linkForeignKeys(states []*state) {
	byName := map[string]*sqlschema.Schema{}
	for _, st := range states {
		byName[st.schema.Name] = st.schema
	}
	for _, st := range states {
		for _, t := range st.schema.Tables {
			for _, fk := range t.ForeignKeys {
				if fk.RefTable == nil || fk.RefTable.Schema == nil || fk.RefTable.Schema.Name == st.schema.Name {
					continue
				}
				other, ok := byName[fk.RefTable.Schema.Name]
				if !ok {
					continue
				}
				ref, ok := other.Table(fk.RefTable.Name)
				if !ok {
					continue
				}
				cols := make([]*sqlschema.Column, 0, len(fk.RefColumns))
				for _, c := range fk.RefColumns {
					if rc, ok := ref.Column(c.Name); ok {
						cols = append(cols, rc)
					}
				}
				if len(cols) == len(fk.RefColumns) {
					fk.RefTable, fk.RefColumns = ref, cols
				}
			}
		}
	}
}

// fingerprint digests atlas's HCL rendering of s, which is ordered and holds
// every inspected property, and of the catalog as PostgreSQL prints it, so
// equal schemas give equal fingerprints and a change atlas does not see
// (a view, a trigger) changes the fingerprint too.
func fingerprint(s *sqlschema.Schema, objects []pgcatalog.Object) (string, error) {
	defer quoteUserTypes(s)()
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

// quoteUserTypes writes the name of every user-defined column type of s
// (a domain, an extension's type) quoted, until the returned func puts it
// back: atlas's HCL rendering looks a type's name up among the names it
// knows first, so a domain named day, int or serial was taken for an
// interval, integer or serial and failed the rendering. A quoted name is
// no type atlas knows.
func quoteUserTypes(s *sqlschema.Schema) (restore func()) {
	var undo []func()
	quote := func(u *postgres.UserDefinedType) {
		if t := u.T; !strings.HasPrefix(t, `"`) {
			u.T = `"` + t + `"`
			undo = append(undo, func() { u.T = t })
		}
	}
	for _, t := range s.Tables {
		for _, c := range t.Columns {
			switch ct := c.Type.Type.(type) {
			case *postgres.UserDefinedType:
				quote(ct)
			case *postgres.ArrayType:
				if u, ok := ct.Type.(*postgres.UserDefinedType); ok {
					quote(u)
				}
			}
		}
	}
	return func() {
		for _, f := range undo {
			f()
		}
	}
}

// atlasQuerier is tx as atlas's inspector is given it: each statement
// atlas writes is sent as catalogread.ForAtlas has it.
type atlasQuerier struct{ tx *sql.Tx }

func (q atlasQuerier) QueryContext(ctx context.Context, query string, args ...any) (*sql.Rows, error) {
	return q.tx.QueryContext(ctx, catalogread.ForAtlas(query), args...)
}

func (q atlasQuerier) ExecContext(ctx context.Context, query string, args ...any) (sql.Result, error) {
	return q.tx.ExecContext(ctx, catalogread.ForAtlas(query), args...)
}

// unborrowSerials gives back their integer type and nextval default to
// the columns atlas took for serials because their default is nextval of a
// sequence named like a serial's, where the column does not own that
// sequence: atlas would create a serial, with a sequence of its own, in
// their place (an inheriting child's id would stop sharing its parent's).
func unborrowSerials(ctx context.Context, tx *sql.Tx, s *sqlschema.Schema) error {
	rows, err := tx.QueryContext(ctx, catalogread.BorrowedSequences, s.Name)
	if err != nil {
		return fmt.Errorf("read the column defaults of schema %q: %w", s.Name, err)
	}
	defer rows.Close()
	for rows.Next() {
		var table, column, def string
		if err := rows.Scan(&table, &column, &def); err != nil {
			return fmt.Errorf("read the column defaults of schema %q: %w", s.Name, err)
		}
		t, ok := s.Table(table)
		if !ok {
			continue
		}
		c, ok := t.Column(column)
		if !ok {
			continue
		}
		asInteger(c, def)
	}
	return rows.Err()
}

// asInteger makes serial column c the integer it stores, with default def.
func asInteger(c *sqlschema.Column, def string) {
	st, ok := c.Type.Type.(*postgres.SerialType)
	if !ok {
		return
	}
	typ := map[string]string{postgres.TypeSmallSerial: postgres.TypeSmallInt, postgres.TypeSerial: postgres.TypeInteger, postgres.TypeBigSerial: postgres.TypeBigInt}[strings.ToLower(st.T)]
	if typ == "" {
		return
	}
	c.Type.Type, c.Type.Raw = &sqlschema.IntegerType{T: typ}, typ
	c.Default = &sqlschema.RawExpr{X: def}
}

// nextvalOf matches a nextval default and the sequence's name, as atlas
// reads a serial's.
var nextvalOf = regexp.MustCompile(`^nextval\('(?:"?[\w$]+"?\.)?"?([\w$]+)"?'(?:::regclass)?\)$`)

// sameSequence leaves atlas no serial on one side where the other side's
// column is an integer whose default is nextval of the same sequence,
// borrowed (unborrowSerials): only the sequence's owner differs, which is
// planned with the sequence (OWNED BY); atlas would drop the sequence, or
// create one, for a serial made a plain integer or back.
func sameSequence(l, d *state) {
	for _, lt := range l.schema.Tables {
		dt, ok := d.schema.Table(lt.Name)
		if !ok {
			continue
		}
		for _, lc := range lt.Columns {
			dc, ok := dt.Column(lc.Name)
			if !ok {
				continue
			}
			for _, pair := range [][2]*sqlschema.Column{{lc, dc}, {dc, lc}} {
				st, serial := pair[0].Type.Type.(*postgres.SerialType)
				x, borrowed := pair[1].Default.(*sqlschema.RawExpr)
				if !serial || !borrowed {
					continue
				}
				if m := nextvalOf.FindStringSubmatch(x.X); m != nil && m[1] == st.SequenceName {
					asInteger(pair[0], x.X)
				}
			}
		}
	}
}

// readInherited reads the columns schema's inheriting tables have from
// their parents alone.
func readInherited(ctx context.Context, tx *sql.Tx, schema string) (map[string][]string, error) {
	rows, err := tx.QueryContext(ctx, catalogread.InheritedColumns, schema)
	if err != nil {
		return nil, fmt.Errorf("read the inherited columns of schema %q: %w", schema, err)
	}
	defer rows.Close()
	out := map[string][]string{}
	for rows.Next() {
		var table, column string
		if err := rows.Scan(&table, &column); err != nil {
			return nil, fmt.Errorf("read the inherited columns of schema %q: %w", schema, err)
		}
		out[table] = append(out[table], column)
	}
	return out, rows.Err()
}

// inheritedLeftOut leaves out of the desired tables the live database
// lacks the columns they only inherit: such a table is created with
// INHERITS (withInherits) and has them from its parents, as the desired
// one does (created with all its columns and then made a child, it would
// declare them itself, and its parent's DROP COLUMN would not take them).
// A table the database has that declares a column the desired one only
// inherits is refused: PostgreSQL has no statement that takes a column's
// declaration away and keeps the column.
func inheritedLeftOut(l, d *state) error {
	for _, name := range slices.Sorted(maps.Keys(d.inherited)) {
		cols := d.inherited[name]
		if l.hasTable(name) {
			var own []string
			for _, c := range cols {
				if !slices.Contains(l.inherited[name], c) {
					own = append(own, pgcatalog.QuoteIdent(c))
				}
			}
			if len(own) > 0 {
				return report.Errorf(report.UnplannedDifference, "table %s.%s declares column(s) %s itself in the database, and only inherits them from its parents in the desired schema; PostgreSQL cannot make a table's own column an inherited one, so ptah plans nothing: declare them in the table's CREATE TABLE (as they are in the database), or create the table anew in a migration", pgcatalog.QuoteIdent(l.name), pgcatalog.QuoteIdent(name), strings.Join(own, ", "))
			}
			continue
		}
		t, ok := d.schema.Table(name)
		if !ok {
			continue
		}
		t.Columns = slices.DeleteFunc(t.Columns, func(c *sqlschema.Column) bool { return slices.Contains(cols, c.Name) })
	}
	return nil
}
