package schema

import (
	"fmt"
	"regexp"
	"slices"
	"strings"

	"ariga.io/atlas/sql/postgres"
	sqlschema "ariga.io/atlas/sql/schema"

	"ptah.run/operator/operator/pgcatalog"
	"ptah.run/operator/operator/report"
)

// enumRecreation is an enum whose values the desired schema removes or
// reorders. PostgreSQL can only add values to an enum (ALTER TYPE ... ADD
// VALUE), so the enum is made again: the live one is renamed aside, the
// desired one created under its name, every column converted to it through
// text (a row holding a removed value fails the conversion, and with it
// the plan's transaction), and the renamed one dropped once nothing uses
// it. What PostgreSQL parses again when a column's type changes, and which
// names the enum (a check, an index's predicate, a view, a policy), is
// dropped before and created again after, and the enum's comment and
// grants are given again.
type enumRecreation struct {
	name, aside string
	from, to    *sqlschema.EnumType
}

// enumsRecreated finds, in one schema, the enums atlas's planner cannot
// alter: a live value the desired enum lacks, or two kept in another
// order. atlas refuses the reordering and plans nothing for a value
// removed from the end. It refuses the plan when a routine, a domain, a
// composite or range type, or a column of another schema uses the enum:
// those cannot be converted here.
func enumsRecreated(live, desired *state, others []*state) ([]enumRecreation, error) {
	var out []enumRecreation
	// Every name of the schema's catalog, a table's (its row type) too:
	// more than the types, never fewer.
	taken := map[string]bool{}
	for _, o := range live.schema.Objects {
		if e, ok := o.(*sqlschema.EnumType); ok {
			taken[e.T] = true
		}
	}
	for _, t := range live.schema.Tables {
		taken[t.Name] = true
	}
	for _, o := range live.objects {
		taken[o.Name] = true
	}
	for _, o := range desired.schema.Objects {
		to, ok := o.(*sqlschema.EnumType)
		if !ok {
			continue
		}
		lo, ok := live.schema.Object(func(o sqlschema.Object) bool {
			e, ok := o.(*sqlschema.EnumType)
			return ok && e.T == to.T
		})
		if !ok {
			continue
		}
		from := lo.(*sqlschema.EnumType)
		if addsOnly(from.Values, to.Values) {
			continue
		}
		aside := asideName(to.T, taken)
		taken[aside] = true
		r := enumRecreation{name: to.T, aside: aside, from: from, to: to}
		if err := r.refusedUsers(live, others); err != nil {
			return nil, err
		}
		out = append(out, r)
	}
	return out, nil
}

// addsOnly says whether to is from with values added, the live ones kept
// in their order: what ALTER TYPE ... ADD VALUE can do.
func addsOnly(from, to []string) bool {
	at := 0
	for _, v := range to {
		if at < len(from) && from[at] == v {
			at++
		} else if slices.Contains(from, v) {
			return false
		}
	}
	return at == len(from)
}

// asideName is a name no type of the schema has, for the live enum while
// its columns move to the new one (at most 63 bytes, PostgreSQL's limit).
func asideName(name string, taken map[string]bool) string {
	for n := 0; ; n++ {
		suffix := "_ptah_old"
		if n > 0 {
			suffix += fmt.Sprint(n)
		}
		base := name
		for len(base)+len(suffix) > 63 {
			base = base[:len(base)-1]
		}
		if !taken[base+suffix] {
			return base + suffix
		}
	}
}

// mentions matches the enum's name in a definition as PostgreSQL prints
// it, unqualified under the schema's search path.
func (r enumRecreation) mentions(def string) bool { return mentionsName(def, r.name) }

// mentionsName says whether def, as PostgreSQL prints it, names name on
// its own (not as part of a longer or qualified name): more often than
// it refers to it, never less.
func mentionsName(def, name string) bool {
	q := regexp.QuoteMeta(pgcatalog.QuoteIdent(name))
	return regexp.MustCompile(`(^|[^\w$".])` + q + `($|[^\w$"])`).MatchString(def)
}

// refusedUsers refuses what cannot follow the enum to its new self.
func (r enumRecreation) refusedUsers(live *state, others []*state) error {
	refuse := func(user string) error {
		return report.Errorf(report.UnplannedDifference, "enum %s.%s: the desired schema removes or reorders its values (%s to %s), which PostgreSQL allows only by creating the type again and converting what uses it; ptah does so for columns, views, checks, indexes, policies and triggers of its schema, but %s uses it too, so no plan was written: make the change in a PtahMigration, or keep the enum's values as the database has them",
			live.name, r.name, strings.Join(r.from.Values, ", "), strings.Join(r.to.Values, ", "), user)
	}
	for _, o := range live.objects {
		switch {
		case o.Kind == "domain" && slices.ContainsFunc(o.Parts, func(p string) bool { return strings.HasPrefix(p, "base=") && r.mentions(p) }),
			(o.Kind == "composite type" || o.Kind == "range type") && r.mentions(o.Def),
			(o.Kind == "function" || o.Kind == "procedure" || o.Kind == "aggregate") && r.mentions(routineHeader(o.Def)):
			return refuse(o.Kind + " " + o.Name)
		}
	}
	for _, st := range others {
		if st == live {
			continue
		}
		for _, t := range st.schema.Tables {
			for _, c := range t.Columns {
				if e, ok := enumOf(c.Type.Type); ok && e.T == r.name && e.Schema != nil && e.Schema.Name == live.name {
					return refuse("column " + st.name + "." + t.Name + "." + c.Name)
				}
			}
		}
	}
	return nil
}

// routineHeader is a routine's definition up to its body: its arguments,
// result and options. A body naming the enum is parsed again when it runs.
func routineHeader(def string) string {
	var head []string
	for _, l := range strings.Split(def, "\n") {
		if t := strings.TrimSpace(l); strings.HasPrefix(t, "AS ") || strings.HasPrefix(t, "BEGIN ATOMIC") {
			break
		}
		head = append(head, l)
	}
	return strings.Join(head, "\n")
}

// enumOf is the enum a column of type t holds, as itself or in an array.
func enumOf(t sqlschema.Type) (*sqlschema.EnumType, bool) {
	if a, ok := t.(*postgres.ArrayType); ok {
		t = a.Type
	}
	e, ok := t.(*sqlschema.EnumType)
	return e, ok
}

// handOver gives pgcatalog the indexes and unique constraints naming a
// recreated enum (withoutLostIndexes), so they can be made again.
func handOver(rs []enumRecreation) func(pgcatalog.Object) bool {
	return func(o pgcatalog.Object) bool {
		for _, r := range rs {
			if (o.Kind == "index" || o.Kind == "constraint") && r.mentions(o.Def) {
				return true
			}
		}
		return false
	}
}

// recreatedAround lists, by catalog key, what is made again around the
// recreated enums: the objects naming them that PostgreSQL would parse
// again (or keep pointing at the renamed enum), and the enums' comments.
// It also names the types, whose grants are given again.
func recreatedAround(rs []enumRecreation, live, desired *state) (keys, types []string) {
	if len(rs) == 0 {
		return nil, nil
	}
	desiredBy := map[string]bool{}
	for _, o := range desired.objects {
		desiredBy[o.Key()] = true
	}
	for _, r := range rs {
		types = append(types, "type "+pgcatalog.QuoteIdent(r.name))
		for _, o := range live.objects {
			if !desiredBy[o.Key()] {
				continue
			}
			switch o.Kind {
			case "comment on type":
				if o.Name == pgcatalog.QuoteIdent(r.name) {
					keys = append(keys, o.Key())
				}
			case "check constraint", "index", "constraint", "view", "materialized view", "index on materialized view", "policy", "trigger",
				"partition constraint", "partition index", "statistics", "rule":
				if r.mentions(o.Def) {
					keys = append(keys, o.Key())
				}
			}
		}
	}
	return keys, types
}

// withRecreatedEnums takes atlas's changes for one schema to the enums'
// recreation: the enum's modification (which atlas refuses) becomes its
// creation, and every column of the enum, or of an array of it, changes
// type to the new one. The columns' conversion (USING through text) and
// the defaults around it are retype's.
func withRecreatedEnums(changes []sqlschema.Change, rs []enumRecreation, live, desired *sqlschema.Schema) []sqlschema.Change {
	if len(rs) == 0 {
		return changes
	}
	byName := map[string]enumRecreation{}
	for _, r := range rs {
		byName[r.name] = r
	}
	out := changes[:0:0]
	for _, c := range changes {
		if m, ok := c.(*sqlschema.ModifyObject); ok {
			if to, ok := m.To.(*sqlschema.EnumType); ok {
				if _, ok := byName[to.T]; ok {
					out = append(out, &sqlschema.AddObject{O: to})
					continue
				}
			}
		}
		out = append(out, c)
	}
	keptColumns(live, desired, func(lt, dt *sqlschema.Table, lc, dc *sqlschema.Column) {
		e, ok := enumOf(lc.Type.Type)
		if !ok || e.Schema != nil && e.Schema.Name != live.Name {
			return
		}
		if _, recreated := byName[e.T]; !recreated {
			return
		}
		if de, ok := enumOf(dc.Type.Type); ok && de.T == e.T {
			out = withTypeChange(out, lt, dt, lc, dc)
		}
	})
	return out
}

// enumStatements are the recreation's own statements: the live enum
// renamed aside before anything else, and dropped after everything.
func enumStatements(schema string, rs []enumRecreation) (first, last []Statement) {
	for _, r := range rs {
		q := pgcatalog.QuoteIdent(schema) + "." + pgcatalog.QuoteIdent(r.name)
		aside := pgcatalog.QuoteIdent(schema) + "." + pgcatalog.QuoteIdent(r.aside)
		first = append(first, Statement{SQL: "ALTER TYPE " + q + " RENAME TO " + pgcatalog.QuoteIdent(r.aside), Severity: Safe,
			Reason: fmt.Sprintf("renames enum %s aside: the desired schema removes or reorders its values (%s to %s), so it is created again and its columns converted to the new one",
				r.name, strings.Join(r.from.Values, ", "), strings.Join(r.to.Values, ", "))})
		last = append(last, Statement{SQL: "DROP TYPE " + aside, Severity: Safe,
			Reason: "drops the enum " + r.name + " was renamed aside to, which nothing uses any more (PostgreSQL refuses the drop, and the plan, if something still does)"})
	}
	return first, last
}

// namesAny says whether a definition names one of the recreated enums.
func namesAny(rs []enumRecreation) func(def string) bool {
	return func(def string) bool {
		return slices.ContainsFunc(rs, func(r enumRecreation) bool { return r.mentions(def) })
	}
}
