package schema

import (
	"sort"
	"strings"

	"ariga.io/atlas/sql/postgres"
	sqlschema "ariga.io/atlas/sql/schema"

	"ptah.run/operator/operator/pgcatalog"
)

// columnDefaults makes column defaults what PostgreSQL prints on both
// sides, where atlas compares them with casts trimmed: a change of default
// atlas plans although both sides print the same is dropped (it would be
// planned again after every apply), and a default atlas does not write as
// desired (a new column's typed literal, a default atlas takes for equal)
// is set after atlas's statements, as the desired side prints it. It
// returns the changes left, the statements and the differences they
// correct. A default again names (a type the plan makes again) is set
// again even where both sides print it the same, so it names the new one.
func columnDefaults(changes []sqlschema.Change, live, desired *state, again func(def string) bool) ([]sqlschema.Change, []pgcatalog.Step, []pgcatalog.Difference) {
	liveCols, desiredCols := columnsByKey(live.objects), columnsByKey(desired.objects)
	key := func(t, c string) string { return "column " + pgcatalog.QuoteIdent(t) + "." + pgcatalog.QuoteIdent(c) }
	handled := map[string]bool{}
	var steps []pgcatalog.Step
	var diffs []pgcatalog.Difference
	set := func(t *sqlschema.Table, c *sqlschema.Column) {
		k := key(t.Name, c.Name)
		d := desiredCols[k]
		if d == nil || handled[k] {
			return
		}
		handled[k] = true
		want, has := printedDefault(d.Def)
		q := "ALTER TABLE " + pgcatalog.QuoteIdent(t.Name) + " ALTER COLUMN " + pgcatalog.QuoteIdent(c.Name)
		if has {
			q += " SET DEFAULT " + want
		} else {
			q += " DROP DEFAULT"
		}
		steps = append(steps, pgcatalog.Step{SQL: q, Reason: "sets the default of " + t.Name + "." + c.Name + " as PostgreSQL prints it", Table: t.Name})
		diffs = append(diffs, pgcatalog.Difference{Live: liveCols[k], Desired: d})
	}
	// written says whether atlas writes c's default as the desired side
	// prints it.
	written := func(t *sqlschema.Table, c *sqlschema.Column) bool {
		want, has := printedDefault(desiredCols[key(t.Name, c.Name)].Def)
		if !has || skipDefault(c) {
			return true
		}
		switch x := c.Default.(type) {
		case *sqlschema.RawExpr:
			return x.X == want
		case *sqlschema.Literal:
			return x.V == want
		}
		return false
	}
	var out []sqlschema.Change
	for _, ch := range changes {
		switch ch := ch.(type) {
		case *sqlschema.AddTable:
			for _, c := range ch.T.Columns {
				if desiredCols[key(ch.T.Name, c.Name)] != nil && !written(ch.T, c) {
					set(ch.T, c)
				}
			}
		case *sqlschema.ModifyTable:
			var parts []sqlschema.Change
			for _, sub := range ch.Changes {
				switch sub := sub.(type) {
				case *sqlschema.AddColumn:
					if desiredCols[key(ch.T.Name, sub.C.Name)] != nil && !written(ch.T, sub.C) {
						set(ch.T, sub.C)
					}
				case *sqlschema.ModifyColumn:
					k := key(ch.T.Name, sub.To.Name)
					handled[k] = true
					if sub.Change.Is(sqlschema.ChangeDefault) && liveCols[k] != nil && desiredCols[k] != nil {
						lw, lh := printedDefault(liveCols[k].Def)
						dw, dh := printedDefault(desiredCols[k].Def)
						if lw == dw && lh == dh {
							sub.Change &^= sqlschema.ChangeDefault
						}
					}
					if sub.Change == sqlschema.NoChange {
						continue
					}
				}
				parts = append(parts, sub)
			}
			if len(parts) == 0 {
				continue
			}
			ch.Changes = parts
		}
		out = append(out, ch)
	}
	// A default atlas takes for unchanged.
	keys := make([]string, 0, len(desiredCols))
	for k := range desiredCols {
		keys = append(keys, k)
	}
	sort.Strings(keys)
	for _, k := range keys {
		d, l := desiredCols[k], liveCols[k]
		if l == nil || handled[k] {
			continue
		}
		lw, lh := printedDefault(l.Def)
		dw, dh := printedDefault(d.Def)
		if lw == dw && lh == dh && !(lh && again(lw)) || strings.Contains(d.Def, " identity=") || strings.Contains(d.Def, " generated=") {
			continue
		}
		t, c, _ := strings.Cut(strings.TrimPrefix(k, "column "), ".")
		q := "ALTER TABLE " + t + " ALTER COLUMN " + c
		if dh {
			q += " SET DEFAULT " + dw
		} else {
			q += " DROP DEFAULT"
		}
		steps = append(steps, pgcatalog.Step{SQL: q, Reason: "sets the default of " + strings.TrimPrefix(k, "column ") + " as PostgreSQL prints it", Table: d.Table})
		diffs = append(diffs, pgcatalog.Difference{Live: l, Desired: d})
	}
	return out, steps, diffs
}

func columnsByKey(objs []pgcatalog.Object) map[string]*pgcatalog.Object {
	m := map[string]*pgcatalog.Object{}
	for i := range objs {
		if objs[i].Kind == "column" {
			m[objs[i].Key()] = &objs[i]
		}
	}
	return m
}

// skipDefault: a serial's, an identity's and a generated column's default
// is atlas's to write.
func skipDefault(c *sqlschema.Column) bool {
	if _, ok := c.Type.Type.(*postgres.SerialType); ok {
		return true
	}
	for _, a := range c.Attrs {
		switch a.(type) {
		case *postgres.Identity, *sqlschema.GeneratedExpr:
			return true
		}
	}
	return false
}

// printedDefault is the default= part of a catalog column definition
// ("type=... notnull=... default=EXPR generated=... ...").
func printedDefault(def string) (string, bool) {
	_, rest, ok := strings.Cut(def, " default=")
	if !ok {
		return "", false
	}
	end := len(rest)
	for _, next := range []string{" generated=", " identity=", " collate=", " comment="} {
		if i := strings.Index(rest, next); i >= 0 && i < end {
			end = i
		}
	}
	return rest[:end], true
}

// timePrecisions sets the types of the time, timestamp and interval
// columns whose declared precision atlas drops: it takes (6), the largest,
// for the type without one and writes neither, so a column declared
// time(6) is created as time and a change between the two is not seen.
// Each is an ALTER COLUMN TYPE after atlas's statements, which PostgreSQL
// makes without rewriting the table (a precision of 6 or none keeps every
// value). It returns the statements, the differences they correct and the
// tables of existing columns changed (their views are made again around).
func timePrecisions(changes []sqlschema.Change, live, desired *state) ([]pgcatalog.Step, []pgcatalog.Difference, []string) {
	liveCols, desiredCols := columnsByKey(live.objects), columnsByKey(desired.objects)
	var steps []pgcatalog.Step
	var diffs []pgcatalog.Difference
	var tables []string
	for _, d := range desired.objects {
		if d.Kind != "column" {
			continue
		}
		want := printedType(d.Def)
		if !precisionLost(want) {
			continue
		}
		l := liveCols[d.Key()]
		if l != nil && printedType(l.Def) == want {
			continue
		}
		if l != nil && strings.ReplaceAll(printedType(l.Def), "(6)", "") != strings.ReplaceAll(want, "(6)", "") && !retypes(changes, d.Table, d.Name) {
			continue // a change atlas does not see either way: refused
		}
		t, c, _ := strings.Cut(strings.TrimPrefix(d.Key(), "column "), ".")
		steps = append(steps, pgcatalog.Step{SQL: "ALTER TABLE " + t + " ALTER COLUMN " + c + " TYPE " + want,
			Reason: "sets the type of " + d.Name + " as declared, " + want + " (no rewrite: the precision is the largest)", Table: d.Table})
		diffs = append(diffs, pgcatalog.Difference{Live: l, Desired: &d})
		if l != nil {
			tables = append(tables, t)
		}
	}
	for _, l := range live.objects {
		if l.Kind != "column" || !precisionLost(printedType(l.Def)) {
			continue
		}
		d := desiredCols[l.Key()]
		if d == nil || strings.ReplaceAll(printedType(l.Def), "(6)", "") != printedType(d.Def) {
			continue
		}
		t, c, _ := strings.Cut(strings.TrimPrefix(l.Key(), "column "), ".")
		steps = append(steps, pgcatalog.Step{SQL: "ALTER TABLE " + t + " ALTER COLUMN " + c + " TYPE " + printedType(d.Def),
			Reason: "sets the type of " + l.Name + " as declared, " + printedType(d.Def) + " (no rewrite: no precision keeps every value)", Table: l.Table})
		diffs = append(diffs, pgcatalog.Difference{Live: &l, Desired: d})
		tables = append(tables, t)
	}
	return steps, diffs, tables
}

// precisionLost says whether atlas writes the column type typ, as
// PostgreSQL prints it, without its precision.
func precisionLost(typ string) bool {
	for _, p := range []string{"time(6)", "timestamp(6)", "interval(6)"} {
		if strings.HasPrefix(typ, p) {
			return true
		}
	}
	return false
}

// retypes says whether atlas changes the type of column name (the
// catalog's "t.c") of table.
func retypes(changes []sqlschema.Change, table, name string) bool {
	for _, ch := range changes {
		m, ok := ch.(*sqlschema.ModifyTable)
		if !ok || m.T.Name != table {
			continue
		}
		for _, sub := range m.Changes {
			if mc, ok := sub.(*sqlschema.ModifyColumn); ok && mc.Change.Is(sqlschema.ChangeType) && pgcatalog.QuoteIdent(table)+"."+pgcatalog.QuoteIdent(mc.To.Name) == name {
				return true
			}
		}
	}
	return false
}

// printedType is the type= part of a catalog column definition.
func printedType(def string) string {
	t, _, _ := strings.Cut(strings.TrimPrefix(def, "type="), " notnull=")
	return t
}

// columnCollations sets the collation of the columns both sides have whose
// collation differs (atlas's differ does not compare collations): an ALTER
// COLUMN TYPE of the type the desired side prints, with its COLLATE, after
// atlas's statements (which may have changed the type, and with it reset
// the collation to the new type's default: then nothing more is needed
// when that is the desired one). PostgreSQL keeps the values and rebuilds the column's
// indexes; no rewrite for a type left as it is. It returns the statements,
// the differences they correct and the tables changed (their views are
// made again around).
func columnCollations(changes []sqlschema.Change, live, desired *state) ([]pgcatalog.Step, []pgcatalog.Difference, []string) {
	liveCols := columnsByKey(live.objects)
	var steps []pgcatalog.Step
	var diffs []pgcatalog.Difference
	var tables []string
	for _, d := range desired.objects {
		l := liveCols[d.Key()]
		if d.Kind != "column" || l == nil || printedCollation(l.Def) == printedCollation(d.Def) ||
			strings.Contains(d.Def, " generated=") || strings.Contains(l.Def, " generated=") {
			continue
		}
		if printedCollation(d.Def) == "" && retypes(changes, d.Table, d.Name) {
			continue // atlas's change of type resets it
		}
		t, c, _ := strings.Cut(strings.TrimPrefix(d.Key(), "column "), ".")
		q := "ALTER TABLE " + t + " ALTER COLUMN " + c + " TYPE " + printedType(d.Def)
		to := "the default of its type"
		if coll := printedCollation(d.Def); coll != "" {
			q += " COLLATE " + coll
			to = coll
		}
		steps = append(steps, pgcatalog.Step{SQL: q, Reason: "sets the collation of " + d.Name + " to " + to + " (its values are kept, its indexes rebuilt)", Table: d.Table})
		diffs = append(diffs, pgcatalog.Difference{Live: l, Desired: &d})
		tables = append(tables, t)
	}
	return steps, diffs, tables
}

// printedCollation is the collate= part of a catalog column definition, ""
// for the default of the column's type.
func printedCollation(def string) string {
	_, rest, ok := strings.Cut(def, " collate=")
	if !ok {
		return ""
	}
	c, _, _ := strings.Cut(rest, " comment=")
	return c
}
