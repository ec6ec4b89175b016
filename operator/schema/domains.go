package schema

import (
	"strings"

	sqlschema "ariga.io/atlas/sql/schema"

	"ariga.io/atlas/sql/postgres"
)

// domainType is what a column of a domain stores: the domain's base type,
// and whether the domain refuses some values of it (a check or NOT NULL).
type domainType struct {
	base    sqlschema.Type
	refuses bool
}

// domains maps the domains of one side to their base types, under the
// names atlas gives a column's type (format_type: "d", or "s.d" for a
// domain outside the search path).
type domains map[string]domainType

// domainsOf reads the domains of every managed schema of a side from its
// catalog, a domain over another domain resolved to the type it stores.
func domainsOf(sd *side) domains {
	parts := map[string][]string{}
	for _, st := range sd.schemas {
		for _, o := range st.objects {
			if o.Kind == "domain" {
				parts[o.Name] = o.Parts
				parts[st.name+"."+o.Name] = o.Parts
			}
		}
	}
	out := domains{}
	for name := range parts {
		if d, ok := resolveDomain(parts, name, 0); ok {
			out[name] = d
		}
	}
	return out
}

func resolveDomain(parts map[string][]string, name string, depth int) (domainType, bool) {
	ps, ok := parts[name]
	if !ok || depth > 8 {
		return domainType{}, false
	}
	var d domainType
	for _, p := range ps {
		switch {
		case strings.HasPrefix(p, "base="):
			base, _, _ := strings.Cut(strings.TrimPrefix(p, "base="), " COLLATE ")
			if inner, ok := resolveDomain(parts, base, depth+1); ok {
				d.base, d.refuses = inner.base, inner.refuses
				continue
			}
			t, err := postgres.ParseType(base)
			if err != nil {
				return domainType{}, false
			}
			d.base = t
		case strings.HasPrefix(p, "check="), p == "notnull=":
			d.refuses = true
		}
	}
	return d, d.base != nil
}

// typeOf is the type t stores: a domain's base type, with whether the
// domain refuses some of its values.
func (ds domains) typeOf(t sqlschema.Type) (sqlschema.Type, bool) {
	if u, ok := t.(*postgres.UserDefinedType); ok && u.C == "d" {
		if d, ok := ds[u.T]; ok {
			return d.base, d.refuses
		}
	}
	return t, false
}

// domainSides resolves the type a column change goes from on the live side
// and the type it goes to on the desired side.
type domainSides struct{ live, desired domains }

func (c *comparison) domainSides() domainSides {
	return domainSides{live: domainsOf(c.live), desired: domainsOf(c.desired)}
}

// userTypeChanges adds the type changes atlas's differ misses: it compares
// two user-defined types (domains, an extension's base types) by the new
// type's name against itself, so a column moved from one domain to another
// was never planned (the proof refused the plan, naming the column). Each
// such column gets its ChangeType, in the table's change atlas made or in
// one of its own; castTrials and the hazards then judge it like any other.
func userTypeChanges(changes []sqlschema.Change, live, desired *sqlschema.Schema) []sqlschema.Change {
	keptColumns(live, desired, func(lt, dt *sqlschema.Table, lc, dc *sqlschema.Column) {
		from, ok1 := lc.Type.Type.(*postgres.UserDefinedType)
		to, ok2 := dc.Type.Type.(*postgres.UserDefinedType)
		if ok1 && ok2 && from.T != to.T {
			changes = withTypeChange(changes, lt, dt, lc, dc)
		}
	})
	return changes
}

// keptColumns calls f for every column both sides' tables have.
func keptColumns(live, desired *sqlschema.Schema, f func(lt, dt *sqlschema.Table, lc, dc *sqlschema.Column)) {
	for _, dt := range desired.Tables {
		lt, ok := live.Table(dt.Name)
		if !ok {
			continue
		}
		for _, dc := range dt.Columns {
			if lc, ok := lt.Column(dc.Name); ok {
				f(lt, dt, lc, dc)
			}
		}
	}
}

func withTypeChange(changes []sqlschema.Change, lt, dt *sqlschema.Table, lc, dc *sqlschema.Column) []sqlschema.Change {
	for _, ch := range changes {
		m, ok := ch.(*sqlschema.ModifyTable)
		if !ok || m.T.Name != dt.Name {
			continue
		}
		for _, sub := range m.Changes {
			if c, ok := sub.(*sqlschema.ModifyColumn); ok && c.From.Name == lc.Name {
				c.Change |= sqlschema.ChangeType
				return changes
			}
		}
		m.Changes = append(m.Changes, &sqlschema.ModifyColumn{From: lc, To: dc, Change: sqlschema.ChangeType})
		return changes
	}
	return append(changes, &sqlschema.ModifyTable{T: dt, Changes: []sqlschema.Change{&sqlschema.ModifyColumn{From: lc, To: dc, Change: sqlschema.ChangeType}}})
}
