package schema

import (
	"regexp"
	"slices"
	"strings"

	"ariga.io/atlas/sql/migrate"

	"ariga.io/atlas/sql/postgres"
	sqlschema "ariga.io/atlas/sql/schema"

	"ptah.run/operator/operator/pgcatalog"
)

// tablePartOrder orders the parts of one table's modification the way
// PostgreSQL runs the subcommands of a single ALTER TABLE (its passes in
// tablecmds.c): constraints and indexes are dropped first (a dropped column
// would take them with it, and the later DROP CONSTRAINT fails), then
// columns are dropped, changed and added, and constraints and indexes are
// added last (they may name a column added here). A change of a
// constraint, or of an index on a dropped column, is its drop and its
// add, so each lands in its pass.
func tablePartOrder(parts []sqlschema.Change) []sqlschema.Change {
	dropped := map[string]bool{}
	for _, c := range parts {
		if d, ok := c.(*sqlschema.DropColumn); ok {
			dropped[d.C.Name] = true
		}
	}
	var split []sqlschema.Change
	for _, c := range parts {
		switch c := c.(type) {
		case *sqlschema.ModifyIndex:
			// An index on a column dropped here goes with the column:
			// it is dropped first and built again, not modified after.
			if slices.ContainsFunc(c.From.Parts, func(p *sqlschema.IndexPart) bool { return p.C != nil && dropped[p.C.Name] }) {
				split = append(split, &sqlschema.DropIndex{I: c.From}, &sqlschema.AddIndex{I: c.To})
			} else {
				split = append(split, c)
			}
		case *sqlschema.ModifyPrimaryKey:
			split = append(split, &sqlschema.DropPrimaryKey{P: c.From}, &sqlschema.AddPrimaryKey{P: c.To})
		case *sqlschema.ModifyForeignKey:
			split = append(split, &sqlschema.DropForeignKey{F: c.From}, &sqlschema.AddForeignKey{F: c.To})
		case *sqlschema.ModifyCheck:
			split = append(split, &sqlschema.DropCheck{C: c.From}, &sqlschema.AddCheck{C: c.To})
		case *sqlschema.ModifyColumn:
			split = append(split, retype(c)...)
		default:
			split = append(split, c)
		}
	}
	pass := func(c sqlschema.Change) int {
		switch c.(type) {
		case *sqlschema.DropForeignKey:
			return 0
		case *sqlschema.DropCheck, *sqlschema.DropIndex, *sqlschema.DropPrimaryKey:
			return 1
		case *sqlschema.DropColumn:
			return 2
		case *sqlschema.AddPrimaryKey, *sqlschema.AddIndex, *sqlschema.ModifyIndex, *sqlschema.AddCheck:
			return 4
		case *sqlschema.AddForeignKey:
			return 5
		}
		return 3
	}
	slices.SortStableFunc(split, func(a, b sqlschema.Change) int { return pass(a) - pass(b) })
	return split
}

// withoutConstraints removes the check constraints and foreign keys from s:
// pgcatalog plans them from what PostgreSQL prints (atlas reads neither a
// check on no column, nor NOT VALID, nor a foreign key's MATCH FULL or
// DEFERRABLE), so atlas must not plan them too.
func withoutConstraints(s *sqlschema.Schema) {
	for _, t := range s.Tables {
		t.Attrs = sqlschema.RemoveAttr[*sqlschema.Check](t.Attrs)
		t.ForeignKeys = nil
		for _, c := range t.Columns {
			c.Attrs = sqlschema.RemoveAttr[*sqlschema.Check](c.Attrs)
			c.ForeignKeys = nil
		}
	}
}

// withoutLostIndexes hands pgcatalog the indexes and unique constraints
// with a property atlas loses (pgcatalog.AtlasLoses) on either side, or
// that are an index on one side and a constraint on the other: they
// leave atlas's tables on both sides, by name, and are compared and planned
// as PostgreSQL prints them. An invalid live one is left to dropInvalid,
// which drops it first, so the desired one is created again.
func withoutLostIndexes(live, desired *state, also func(pgcatalog.Object) bool) {
	taken := map[string]bool{}
	// An index on one side that is a key's constraint of the same name on
	// the other is a difference atlas does not see either.
	// (A primary key is atlas's table key, not one of its indexes: it is
	// left to atlas unless it has what atlas loses.)
	indexOrUnique := func(o pgcatalog.Object) bool {
		return o.Kind == "index" || o.Kind == "constraint" && strings.HasPrefix(o.Def, "u ")
	}
	kinds := map[string]string{}
	for _, o := range live.objects {
		if indexOrUnique(o) {
			kinds[o.Table+" "+o.Ident] = o.Kind
		}
	}
	for _, st := range []*state{live, desired} {
		for _, o := range st.objects {
			k := o.Table + " " + o.Ident
			if pgcatalog.AtlasLoses(o) || also(o) || st == desired && indexOrUnique(o) && kinds[k] != "" && kinds[k] != o.Kind {
				taken[k] = true
			}
		}
	}
	if len(taken) == 0 {
		return
	}
	invalid := map[string]bool{}
	for _, ix := range live.invalid {
		invalid[ix.table+" "+pgcatalog.QuoteIdent(ix.name)] = true
	}
	for _, st := range []*state{live, desired} {
		objects := st.objects[:0:0]
		for _, o := range st.objects {
			k := o.Table + " " + o.Ident
			if (o.Kind == "index" || o.Kind == "constraint") && taken[k] {
				if st == live && invalid[k] {
					continue
				}
				o.Managed = false
			}
			objects = append(objects, o)
		}
		st.objects = objects
		for _, t := range st.schema.Tables {
			t.Indexes = slices.DeleteFunc(t.Indexes, func(ix *sqlschema.Index) bool { return taken[t.Name+" "+pgcatalog.QuoteIdent(ix.Name)] })
			if t.PrimaryKey != nil && taken[t.Name+" "+pgcatalog.QuoteIdent(t.PrimaryKey.Name)] {
				t.PrimaryKey = nil
			}
		}
	}
}

// around says what atlas's changes do to tables that objects pgcatalog
// plans in schema depend on (pgcatalog.Around). Tables of schema are named
// as its catalog keys them, those of another managed schema qualified.
func around(schema string, changes []sqlschema.Change) pgcatalog.Around {
	name := func(t *sqlschema.Table) string {
		if t.Schema == nil || t.Schema.Name == schema {
			return pgcatalog.QuoteIdent(t.Name)
		}
		return pgcatalog.QuoteIdent(t.Schema.Name) + "." + pgcatalog.QuoteIdent(t.Name)
	}
	var a pgcatalog.Around
	for _, c := range changes {
		switch c := c.(type) {
		case *sqlschema.DropTable:
			a.Rewritten = append(a.Rewritten, name(c.T))
		case *sqlschema.ModifyTable:
			t := name(c.T)
			for _, sub := range c.Changes {
				switch sub := sub.(type) {
				case *sqlschema.DropColumn:
					a.Rewritten = append(a.Rewritten, t)
					a.Disturbed = append(a.Disturbed, "column "+t+"."+pgcatalog.QuoteIdent(sub.C.Name))
				case *sqlschema.ModifyColumn:
					a.Rewritten = append(a.Rewritten, t)
					if sub.Change.Is(sqlschema.ChangeType) {
						a.Disturbed = append(a.Disturbed, "column "+t+"."+pgcatalog.QuoteIdent(sub.From.Name))
					}
				case *sqlschema.RenameColumn:
					a.Rewritten = append(a.Rewritten, t)
				case *sqlschema.DropIndex, *sqlschema.DropPrimaryKey, *sqlschema.ModifyIndex, *sqlschema.ModifyPrimaryKey:
					a.Disturbed = append(a.Disturbed, "table "+t)
				}
			}
		}
	}
	return a
}

// withoutIdentities removes the identity of the columns atlas compares:
// pgcatalog plans it with every option of its sequence (atlas writes only
// START WITH and INCREMENT BY, and cannot add or drop an identity). A new
// column keeps its identity in atlas's ADD COLUMN or CREATE TABLE (a NOT
// NULL column cannot be added to rows without it), with options atlas
// cannot write left to pgcatalog; the catalog keys of those are returned.
func withoutIdentities(live, desired *state) []string {
	defs := map[string]string{}
	for _, o := range desired.objects {
		if o.Kind == "identity" {
			defs[o.Key()] = o.Def
		}
	}
	var kept []string
	for _, t := range desired.schema.Tables {
		lt, _ := live.schema.Table(t.Name)
		for _, c := range t.Columns {
			i := slices.IndexFunc(c.Attrs, isIdentity)
			if i < 0 {
				continue
			}
			if lt != nil {
				if _, exists := lt.Column(c.Name); exists {
					c.Attrs = slices.Delete(c.Attrs, i, i+1)
					continue
				}
			}
			key := "identity " + pgcatalog.QuoteIdent(t.Name) + "." + pgcatalog.QuoteIdent(c.Name)
			kept = append(kept, key)
			if id := c.Attrs[i].(*postgres.Identity); lt == nil && !pgcatalog.AtlasIdentity(defs[key]) {
				// A new table's is created with the defaults, which always
				// hold, and restarted with its options: it has no rows.
				c.Attrs[i] = &postgres.Identity{Generation: id.Generation}
			}
		}
	}
	for _, t := range live.schema.Tables {
		for _, c := range t.Columns {
			c.Attrs = slices.DeleteFunc(c.Attrs, isIdentity)
		}
	}
	return kept
}

// atlasIdentityClause is the identity clause atlas writes in ADD COLUMN.
var atlasIdentityClause = regexp.MustCompile(`GENERATED (ALWAYS|BY DEFAULT) AS IDENTITY( \([^)]*\))?`)

// newColumnIdentities writes every option of a new column's identity
// (kept, per schema, by withoutIdentities) into atlas's ADD COLUMN, which
// holds only START WITH and INCREMENT BY: a start below 1 needs its
// MINVALUE there, and the rows the table holds are numbered as desired.
func newColumnIdentities(plan *migrate.Plan, desired *side, kept [][]string) {
	defs := map[string]string{}
	for i, d := range desired.schemas {
		for _, o := range d.objects {
			if o.Kind == "identity" && slices.Contains(kept[i], o.Key()) && !pgcatalog.AtlasIdentity(o.Def) {
				defs[d.name+" "+o.Key()] = o.Def
			}
		}
	}
	for _, c := range plan.Changes {
		m, ok := c.Source.(*sqlschema.ModifyTable)
		if !ok || len(m.Changes) != 1 || m.T.Schema == nil {
			continue
		}
		add, ok := m.Changes[0].(*sqlschema.AddColumn)
		if !ok {
			continue
		}
		def, ok := defs[m.T.Schema.Name+" identity "+pgcatalog.QuoteIdent(m.T.Name)+"."+pgcatalog.QuoteIdent(add.C.Name)]
		if !ok {
			continue
		}
		c.Cmd = atlasIdentityClause.ReplaceAllString(c.Cmd, "GENERATED $1 AS IDENTITY ("+pgcatalog.IdentityOptions(def)+")")
	}
}

func isIdentity(a sqlschema.Attr) bool {
	_, ok := a.(*postgres.Identity)
	return ok
}

// retype gives a type change PostgreSQL cannot make by assignment (to or
// from an enum, from a string type to another kind, between integer and
// boolean) the USING cast atlas leaves out (retypeUsing). Around every
// change of type the column's default is dropped first and set again
// after: PostgreSQL may refuse to cast it, a default naming the old type
// (an enum of any schema, a domain) keeps that type from being dropped,
// and one it casts keeps the old type's cast in what it prints
// ('x'::character varying on a text column).
func retype(c *sqlschema.ModifyColumn) []sqlschema.Change {
	if !c.Change.Is(sqlschema.ChangeType) {
		return []sqlschema.Change{c}
	}
	if x := retypeUsing(c); x != "" && !hasUsing(c) {
		c.Extra = append(c.Extra, &postgres.ConvertUsing{X: x})
	}
	if c.From.Default == nil {
		return []sqlschema.Change{c}
	}
	bare := *c.From
	bare.Default = nil
	dropDefault := &sqlschema.ModifyColumn{From: c.From, To: &bare, Change: sqlschema.ChangeDefault}
	rest := &sqlschema.ModifyColumn{From: &bare, To: c.To, Change: c.Change &^ sqlschema.ChangeDefault, Extra: c.Extra}
	if c.To.Default != nil {
		rest.Change |= sqlschema.ChangeDefault
	}
	return []sqlschema.Change{dropDefault, rest}
}

// retypeUsing is the USING expression retype gives c, "" for none.
func retypeUsing(c *sqlschema.ModifyColumn) string {
	from, to := c.From.Type.Type, c.To.Type.Type
	if name, ok := enumName(to); ok {
		if _, isEnum := enumName(from); isEnum || isString(from) {
			// Through text: an enum casts to another enum only so. An enum
			// of another managed schema is a user-defined type to atlas,
			// named as the search path prints it.
			return pgcatalog.QuoteIdent(c.From.Name) + "::text::" + name
		}
	}
	_, fromArray := from.(*postgres.ArrayType)
	if ta, ok := to.(*postgres.ArrayType); ok && fromArray {
		if e, ok := ta.Type.(*sqlschema.EnumType); ok {
			// Element by element, through text as below.
			return pgcatalog.QuoteIdent(c.From.Name) + "::text[]::" + pgcatalog.QuoteIdent(e.T) + "[]"
		}
		return ""
	}
	_, fromEnum := from.(*sqlschema.EnumType)
	toEnum, isToEnum := to.(*sqlschema.EnumType)
	_, fromString := from.(*sqlschema.StringType)
	_, toString := to.(*sqlschema.StringType)
	_, fromInt := from.(*sqlschema.IntegerType)
	_, toInt := to.(*sqlschema.IntegerType)
	_, fromBool := from.(*sqlschema.BoolType)
	_, toBool := to.(*sqlschema.BoolType)
	var target string
	switch {
	case isToEnum:
		target = pgcatalog.QuoteIdent(toEnum.T)
	case fromString && !toString && !fromEnum, fromInt && toBool, fromBool && toInt, fromEnum && !toString:
		f, err := postgres.FormatType(to)
		if err != nil {
			return ""
		}
		target = f
	}
	if target == "" {
		return ""
	}
	col := pgcatalog.QuoteIdent(c.From.Name)
	if fromEnum || fromString {
		// Through text: an enum casts to another enum only so.
		col += "::text"
	}
	return col + "::" + target
}

func hasUsing(c *sqlschema.ModifyColumn) bool {
	return slices.ContainsFunc(c.Extra, func(a sqlschema.Clause) bool { _, ok := a.(*postgres.ConvertUsing); return ok })
}

// enumName is the name an enum type is written by: an enum of the schema
// (atlas's EnumType) quoted, one of another managed schema (a user-defined
// type of class e) as the search path prints it.
func enumName(t sqlschema.Type) (string, bool) {
	switch t := t.(type) {
	case *sqlschema.EnumType:
		return pgcatalog.QuoteIdent(t.T), true
	case *postgres.UserDefinedType:
		return t.T, t.C == "e"
	}
	return "", false
}

func isString(t sqlschema.Type) bool {
	_, ok := t.(*sqlschema.StringType)
	return ok
}
