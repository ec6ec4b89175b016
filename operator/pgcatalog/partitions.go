package pgcatalog

import (
	"sort"
	"strings"
)

// partitionColumn is what a partition's column has of its own, as the
// catalog prints it ("NOT NULL DEFAULT expr COMMENT 'text'"): its row is
// there when it differs from its parent's column, and then prints the
// partition's own default and comment whole.
type partitionColumn struct {
	notNull  bool
	dflt     string
	comment  string // a literal as quote_literal writes it, "" for none
	complete bool   // the row was there: dflt is the partition's own
}

func parsePartitionColumn(o *Object) partitionColumn {
	if o == nil {
		return partitionColumn{}
	}
	c := partitionColumn{complete: true}
	def := o.Def
	if rest, ok := strings.CutPrefix(def, "NOT NULL"); ok {
		c.notNull, def = true, strings.TrimPrefix(rest, " ")
	}
	def, c.comment = cutComment(def)
	c.dflt = strings.TrimPrefix(def, "DEFAULT ")
	return c
}

// columnDefault is the default a column's definition ("type=... notnull=t
// default=EXPR generated=...") prints, "" for none.
func columnDefault(def string) string {
	_, d, ok := strings.Cut(def, " default=")
	if !ok {
		return ""
	}
	for _, next := range []string{" generated=", " identity=", " collate=", " comment="} {
		if i := strings.LastIndex(d, next); i >= 0 {
			d = d[:i]
		}
	}
	return d
}

// partitionColumnSteps plans a partition column's own NOT NULL, default
// and comment, after atlas's statements (which change its parent's
// column, and so every partition's, first) and after its partition is
// created. A partition dropped takes its columns with it. It reports false
// when a default must return to its parent's and that is not known here (a
// parent in another schema).
func partitionColumnSteps(d Difference, liveBy, desiredBy map[string]*Object) ([]Step, bool) {
	o := d.Object()
	if len(o.Deps) == 0 || desiredBy[o.Deps[0]] == nil {
		return nil, true
	}
	partition := strings.TrimPrefix(o.Deps[0], "partition ")
	column := strings.TrimPrefix(o.Name, partition+".")
	l, w := parsePartitionColumn(d.Live), parsePartitionColumn(d.Desired)
	ld, lok := partitionDefault(l, o.Deps, liveBy)
	wd, wok := partitionDefault(w, o.Deps, desiredBy)
	if parentDefaultSet(o.Deps, liveBy, desiredBy) {
		// Atlas's SET or DROP DEFAULT on the parent, or a partition created
		// after it, gives the partition its parent's desired default.
		ld, lok = partitionDefault(partitionColumn{}, o.Deps, desiredBy)
	}
	switch {
	case lok && wok:
	case (lok || ld == "") && (wok || wd == "") && ld == wd:
		// The side not known (a parent in another schema) has no default
		// of its own to return to as far as the other side says; the proof
		// would show one left.
	default:
		return nil, false
	}
	parentNotNull := len(o.Deps) > 1 && desiredBy[o.Deps[1]] != nil && strings.Contains(desiredBy[o.Deps[1]].Def, " notnull=t")
	alter := "ALTER TABLE " + partition + " ALTER COLUMN " + column + " "
	var steps []Step
	step := func(sql, reason string, validates bool) {
		steps = append(steps, Step{SQL: sql, Reason: reason + " of column " + column + " of partition " + partition, Validates: validates, kind: "partition column", Table: o.Table})
	}
	switch {
	case w.notNull && !l.notNull:
		step(alter+"SET NOT NULL", "sets NOT NULL (fails if a row holds NULL)", true)
	case l.notNull && !w.notNull && !parentNotNull:
		step(alter+"DROP NOT NULL", "drops NOT NULL", false)
	}
	switch {
	case ld == wd:
	case wd == "":
		step(alter+"DROP DEFAULT", "drops the default", false)
	default:
		step(alter+"SET DEFAULT "+wd, "sets the default", false)
	}
	if l.comment != w.comment {
		lit := w.comment
		if lit == "" {
			lit = "NULL"
		}
		step("COMMENT ON COLUMN "+partition+"."+column+" IS "+lit, "sets the comment", false)
	}
	return steps, true
}

// partitionPropertySteps plans a partition's own storage parameters,
// replica identity and comment, as a table's (tablePropertySteps), after
// its partition is created. A partition dropped takes them with it. An
// identity using an index is not planned.
func partitionPropertySteps(d Difference, desiredBy map[string]*Object) ([]Step, bool) {
	o := d.Object()
	if len(o.Deps) == 0 || desiredBy[o.Deps[0]] == nil {
		return nil, true
	}
	var comments [2]string
	strip := func(side *Object, i int) *Object {
		if side == nil {
			return nil
		}
		c := *side
		c.Def, comments[i] = cutComment(c.Def)
		return &c
	}
	props := Difference{Live: strip(d.Live, 0), Desired: strip(d.Desired, 1)}
	for _, side := range []*Object{d.Live, d.Desired} {
		if side != nil && strings.Contains(side.Def, "REPLICA IDENTITY USING INDEX") {
			return nil, false
		}
	}
	_, steps, ok := tablePropertySteps(props, nil)
	if !ok {
		return nil, false
	}
	if comments[0] != comments[1] {
		lit := comments[1]
		if lit == "" {
			lit = "NULL"
		}
		steps = append(steps, Step{SQL: "COMMENT ON TABLE " + o.Name + " IS " + lit, Reason: "sets the comment of partition " + o.Name, Table: o.Table})
	}
	for i := range steps {
		if steps[i].kind == "" {
			steps[i].kind = "partition property"
		}
	}
	return steps, true
}

// partitionDefault is a partition column's default on one side: its own
// where its row is there, else its parent's; false when the parent is not
// known here.
func partitionDefault(c partitionColumn, deps []string, by map[string]*Object) (string, bool) {
	if c.complete {
		return c.dflt, true
	}
	if len(deps) < 2 {
		return "", false
	}
	if parent := by[deps[1]]; parent != nil {
		return columnDefault(parent.Def), true
	}
	return "", true
}

// parentDefaultSet says whether a partition column's default is its
// parent's desired one once atlas's statements ran: its partition is
// created by the plan, or its parent's default changes (SET and DROP
// DEFAULT on a partitioned table reach every partition).
func parentDefaultSet(deps []string, liveBy, desiredBy map[string]*Object) bool {
	if liveBy[deps[0]] == nil {
		return true
	}
	if len(deps) < 2 || desiredBy[deps[1]] == nil {
		return false
	}
	live := ""
	if l := liveBy[deps[1]]; l != nil {
		live = columnDefault(l.Def)
	}
	return live != columnDefault(desiredBy[deps[1]].Def)
}

// partitionDefaultsReset lists the partition columns whose own default
// is the same on both sides but would be overwritten by their parent's
// changed default, as differences to plan again.
func partitionDefaultsReset(diffs []Difference, liveBy, desiredBy map[string]*Object) []Difference {
	seen := map[string]bool{}
	for _, d := range diffs {
		seen[d.Object().Key()] = true
	}
	var out []Difference
	for k, o := range desiredBy {
		if o.Kind != "partition column" || seen[k] || liveBy[k] == nil || len(o.Deps) < 2 || liveBy[o.Deps[0]] == nil {
			continue
		}
		if c := parsePartitionColumn(o); c.complete && parentDefaultSet(o.Deps, liveBy, desiredBy) && c.dflt != columnDefault(desiredBy[o.Deps[1]].Def) {
			out = append(out, Difference{Live: liveBy[k], Desired: o})
		}
	}
	sort.Slice(out, func(i, j int) bool { return out[i].Object().Key() < out[j].Object().Key() })
	return out
}

// cutComment takes the trailing "COMMENT 'text'" (quote_literal's, an E literal for
// backslashes) off a definition: the first such mark whose rest is one
// literal and nothing more, so text holding "COMMENT '" itself, in the
// comment or in a default before it, is not cut inside.
func cutComment(def string) (rest, literal string) {
	for i := 0; i < len(def); i++ {
		tail := def[i:]
		if (i > 0 && def[i-1] != ' ') || !strings.HasPrefix(tail, "COMMENT ") {
			continue
		}
		lit := strings.TrimPrefix(tail, "COMMENT ")
		if oneLiteral(lit) {
			return strings.TrimSuffix(def[:i], " "), lit
		}
	}
	return def, ""
}

// oneLiteral says whether s is exactly one quoted SQL literal, 'text' or
// E'text', quotes inside doubled (and, in an E literal, escaped by a backslash).
func oneLiteral(s string) bool {
	escapes := strings.HasPrefix(s, "E'")
	s = strings.TrimPrefix(s, "E")
	if len(s) < 2 || s[0] != '\'' {
		return false
	}
	for i := 1; i < len(s); i++ {
		switch {
		case escapes && s[i] == '\\':
			i++
		case s[i] == '\'' && i+1 < len(s) && s[i+1] == '\'':
			i++
		case s[i] == '\'':
			return i == len(s)-1
		}
	}
	return false
}
