package schema

import (
	"context"
	"database/sql"
	"fmt"
	"slices"
	"strings"

	"ariga.io/atlas/sql/postgres"
	sqlschema "ariga.io/atlas/sql/schema"

	"ptah.run/operator/operator/catalogread"
	"ptah.run/operator/operator/pgcatalog"
)

// concurrentIndexes has atlas build and drop the indexes of existing tables
// with CONCURRENTLY, as online-migration tools do: writes go on while an
// index is built. An index rebuilt (ModifyIndex) becomes a concurrent drop
// and a concurrent build. Indexes behind a constraint (unique, exclusion,
// primary key) are built by ALTER TABLE, which has no concurrent form.
func concurrentIndexes(changes []sqlschema.Change) []sqlschema.Change {
	var out []sqlschema.Change
	for _, c := range changes {
		m, ok := c.(*sqlschema.ModifyTable)
		if !ok || len(m.Changes) != 1 || partitioned(m.T) {
			// A partitioned table's indexes have no concurrent build.
			out = append(out, c)
			continue
		}
		switch sub := m.Changes[0].(type) {
		case *sqlschema.AddIndex:
			if _, constraint := uniqueOrExclude(sub.I.Attrs); !constraint {
				sub.Extra = append(sub.Extra, &postgres.Concurrently{})
			}
		case *sqlschema.DropIndex:
			if _, constraint := uniqueOrExclude(sub.I.Attrs); !constraint {
				sub.Extra = append(sub.Extra, &postgres.Concurrently{})
			}
		case *sqlschema.ModifyIndex:
			_, fromC := uniqueOrExclude(sub.From.Attrs)
			_, toC := uniqueOrExclude(sub.To.Attrs)
			if fromC || toC || sub.Change&^sqlschema.ChangeComment == sqlschema.NoChange {
				break
			}
			out = append(out,
				&sqlschema.ModifyTable{T: m.T, Changes: []sqlschema.Change{&sqlschema.DropIndex{I: sub.From, Extra: []sqlschema.Clause{&postgres.Concurrently{}}}}},
				&sqlschema.ModifyTable{T: m.T, Changes: []sqlschema.Change{&sqlschema.AddIndex{I: sub.To, Extra: []sqlschema.Clause{&postgres.Concurrently{}}}}})
			continue
		}
		out = append(out, c)
	}
	return out
}

// concurrentStep builds or drops an index pgcatalog plans on an existing
// table with CONCURRENTLY, outside the plan's transaction, as
// concurrentIndexes has atlas do.
func concurrentStep(st Statement) Statement {
	for _, verb := range []string{"CREATE UNIQUE INDEX ", "CREATE INDEX ", "DROP INDEX "} {
		if rest, ok := strings.CutPrefix(st.SQL, verb); ok {
			st.SQL = verb + "CONCURRENTLY " + rest
			st.OutsideTransaction = true
			st.Hazards = slices.DeleteFunc(st.Hazards, func(h Hazard) bool { return h == HazardBuildsIndex || h == HazardAccessExclusiveLock })
			return st
		}
	}
	return st
}

// outsideTransaction reports whether atlas's statement cmd for change c is
// a concurrent index build or drop, which PostgreSQL runs only outside a
// transaction block.
func outsideTransaction(c sqlschema.Change, cmd string) bool {
	m, ok := c.(*sqlschema.ModifyTable)
	if !ok || strings.HasPrefix(cmd, "COMMENT ON") {
		return false
	}
	for _, sub := range m.Changes {
		switch sub := sub.(type) {
		case *sqlschema.AddIndex:
			return concurrent(sub.Extra)
		case *sqlschema.DropIndex:
			return concurrent(sub.Extra)
		}
	}
	return false
}

// invalidIndex is an index PostgreSQL marks invalid (indisvalid false): a
// CREATE INDEX CONCURRENTLY that failed or was cancelled leaves one. It is
// still maintained on every write, but no query uses it, and a unique one
// still refuses duplicates.
type invalidIndex struct {
	name, table string
	// constraint is the key owning the index, "" if none: it is dropped
	// by its constraint.
	constraint string
	// partitioned is a partitioned table's index, invalid while a
	// partition has none attached to it.
	partitioned bool
}

// readInvalidIndexes lists the invalid indexes of schema, by name.
func readInvalidIndexes(ctx context.Context, tx *sql.Tx, schema string) ([]invalidIndex, error) {
	rows, err := tx.QueryContext(ctx, catalogread.InvalidIndexes, schema)
	if err != nil {
		return nil, fmt.Errorf("read the invalid indexes of schema %q: %w", schema, err)
	}
	defer rows.Close()
	var out []invalidIndex
	for rows.Next() {
		var ix invalidIndex
		if err := rows.Scan(&ix.name, &ix.table, &ix.constraint, &ix.partitioned); err != nil {
			return nil, fmt.Errorf("read the invalid indexes of schema %q: %w", schema, err)
		}
		out = append(out, ix)
	}
	return out, rows.Err()
}

// withoutInvalid leaves the invalid indexes out of s, so the diff plans
// them as missing where the desired schema has them: an invalid index of
// the desired definition must not pass for the index.
func withoutInvalid(s *sqlschema.Schema, invalid []invalidIndex) {
	for _, ix := range invalid {
		t, ok := s.Table(ix.table)
		if !ok {
			continue
		}
		if t.PrimaryKey != nil && t.PrimaryKey.Name == ix.name {
			// A key whose index is invalid is dropped with it.
			t.PrimaryKey = nil
		}
		for i, idx := range t.Indexes {
			if idx.Name == ix.name {
				t.Indexes = append(t.Indexes[:i], t.Indexes[i+1:]...)
				break
			}
		}
	}
}

// dropInvalid plans dropping each invalid index first, concurrently when
// the plan builds indexes that way and PostgreSQL can: a key's index goes
// with its constraint, and a partitioned table's index is never dropped
// concurrently.
func dropInvalid(schema string, invalid []invalidIndex, concurrently bool) []Statement {
	var out []Statement
	for _, ix := range invalid {
		why := "left invalid by a failed concurrent build"
		if ix.partitioned {
			why = "invalid: a partition has no index attached to it"
		}
		st := Statement{
			SQL:      fmt.Sprintf("DROP INDEX %s.%s", pgcatalog.QuoteIdent(schema), pgcatalog.QuoteIdent(ix.name)),
			Severity: Safe,
			Reason:   fmt.Sprintf("drops index %s on %s, %s; no data is lost (it is built again below if desired)", ix.name, ix.table, why),
			Hazards:  []Hazard{HazardAccessExclusiveLock},
		}
		if ix.constraint != "" {
			st.SQL = fmt.Sprintf("ALTER TABLE %s.%s DROP CONSTRAINT %s", pgcatalog.QuoteIdent(schema), pgcatalog.QuoteIdent(ix.table), pgcatalog.QuoteIdent(ix.constraint))
			st.Reason = fmt.Sprintf("drops constraint %s on %s, whose index is %s; no data is lost (it is added again below if desired)", ix.constraint, ix.table, why)
		}
		if concurrently && ix.constraint == "" && !ix.partitioned {
			st.SQL = fmt.Sprintf("DROP INDEX CONCURRENTLY %s.%s", pgcatalog.QuoteIdent(schema), pgcatalog.QuoteIdent(ix.name))
			st.Hazards, st.OutsideTransaction = nil, true
		}
		out = append(out, st)
	}
	return out
}
