package pgcatalog

import (
	"fmt"
	"slices"
	"sort"
	"strings"
)

// Step is one statement this package plans, with why.
type Step struct {
	SQL    string
	Reason string
	// Drops is true when the statement removes an object (no table data).
	Drops bool
	// Deletes is true when the statement deletes stored values (a
	// composite type's attribute dropped under a column of the type).
	Deletes bool
	// Validates is true when the statement checks stored values (rows, a
	// sequence's current value) against what it adds, and fails on one
	// that breaks it.
	Validates bool
	// Table is the table the statement changes (a trigger, a policy, a
	// constraint of it), "" if none.
	Table string
	// Identity is, for a step that drops an identity or changes its
	// sequence's options, the identity's column: such a step loses the
	// sequence's position (Deletes), or may leave it outside the new bounds
	// (Validates), unless the sequence has never generated a value.
	Identity *IdentityColumn
	kind     string
	name     string
	// def is a dropped object's definition, for the order of drops.
	def string
}

// IdentityColumn is a table's identity column as DDL writes them.
type IdentityColumn struct{ Table, Column string }

// Kind is the kind of object the statement creates, changes or drops, ""
// for comments and settings.
func (s Step) Kind() string { return s.kind }

// Planned is the statements that take the objects atlas does not manage
// from live to desired, split around atlas's own statements: Before runs
// first (drops of what depends on tables, creation of what tables use),
// After runs last (views, triggers, policies, comments). Refused lists the
// differences no statement here covers; the caller refuses the plan.
type Planned struct {
	Before, After []Step
	Refused       []Difference
}

// Len is the number of statements planned.
func (p Planned) Len() int { return len(p.Before) + len(p.After) }

// plannable kinds, in the order their statements are created.
var createOrder = []string{
	"extension", "collation", "domain", "composite type", "range type", "function", "procedure", "aggregate", "partition", "partition column", "partition property", "partition index", "partition constraint", "check constraint", "index", "unique constraint", "foreign key",
	"view", "materialized view", "index on materialized view", "trigger", "row level security",
	"forced row level security", "policy", "statistics",
}

// Around is what atlas's statements change that objects planned here
// depend on.
type Around struct {
	// Rewritten names the tables atlas alters or drops: views reading them
	// are dropped before and created again after, since PostgreSQL refuses
	// to change a column a view uses.
	Rewritten []string
	// Disturbed holds "table T" when atlas drops or rebuilds a key or an
	// index of T, and "column T.c" when it drops c or changes its type: a
	// foreign key using them is dropped before and added again after.
	Disturbed []string
	// Atlas holds the keys of objects atlas's statements create ("identity
	// T.c" of a new table's column); they are not planned here.
	Atlas []string
	// Recreated names the types atlas's statements create again ("type
	// mood"): their grants are given again.
	Recreated []string
}

// Plan plans diffs (from Diff over live and desired) around atlas's
// statements.
func Plan(diffs []Difference, live, desired []Object, around Around) Planned {
	diffs = pairSequences(diffs)
	rewritten := around.Rewritten
	var p Planned
	liveBy, desiredBy := index(live), index(desired)
	diffs = append(diffs, partitionDefaultsReset(diffs, liveBy, desiredBy)...)
	routinesInOrder(diffs, liveBy, desiredBy)
	// The views to drop: those changed or gone, those reading a rewritten
	// table, and, transitively, every view reading one of them.
	dropView := map[string]bool{}
	for _, d := range diffs {
		if d.Live != nil && isView(d.Live.Kind) {
			dropView[d.Live.Key()] = true
		}
	}
	for _, t := range rewritten {
		for _, o := range live {
			if isView(o.Kind) && contains(o.Deps, "table "+t) {
				dropView[o.Key()] = true
			}
		}
	}
	for changed := true; changed; {
		changed = false
		for _, o := range live {
			if !isView(o.Kind) || dropView[o.Key()] {
				continue
			}
			for _, dep := range o.Deps {
				if dropView[dep] {
					dropView[o.Key()], changed = true, true
					break
				}
			}
		}
	}
	createView := map[string]bool{}
	for k := range dropView {
		if desiredBy[k] != nil {
			createView[k] = true
		}
	}
	recreated := map[string]bool{}
	for k := range dropView {
		recreated[k] = true
	}
	diffByKey := map[string]Difference{}
	for _, d := range diffs {
		diffByKey[d.Object().Key()] = d
	}
	// Comments, indexes and triggers of a recreated view are lost with it;
	// make them again.
	for _, o := range desired {
		if o.Kind == "trigger" {
			_, on, _ := strings.Cut(o.Name, " on ")
			if recreated["view "+on] || recreated["materialized view "+on] {
				recreated[o.Key()] = true
				if _, differs := diffByKey[o.Key()]; !differs {
					diffs = append(diffs, Difference{Desired: &o})
				}
			}
		}
	}
	for _, o := range desired {
		if o.Kind == "index on materialized view" && len(o.Deps) == 1 && recreated[o.Deps[0]] {
			if _, differs := diffByKey[o.Key()]; !differs {
				diffs = append(diffs, Difference{Desired: &o})
			}
			continue
		}
		if target, ok := commentTarget(o); ok && recreated[target] {
			if _, differs := diffByKey[o.Key()]; !differs {
				diffs = append(diffs, Difference{Desired: &o})
			}
		}
	}
	// The constraint names the database holds, by table.
	taken := map[string]bool{}
	for _, o := range live {
		if (o.Kind == "check constraint" || o.Kind == "foreign key" || o.Kind == "constraint") && o.Table != "" {
			taken[o.Table+" "+o.Ident] = true
		}
	}
	// Tables whose unique index or constraint is dropped here: the foreign
	// keys referencing them are dropped before and added again after.
	var disturbedHere []string
	var comments []Step
	var privs []Difference
	for _, d := range diffs {
		o := d.Object()
		switch {
		case isView(o.Kind):
			if d.Desired != nil {
				createView[o.Key()] = true
			}
		case strings.HasPrefix(o.Kind, "comment on "):
			if d.Desired == nil && !commentedExists(o, desired) {
				continue // gone with its object
			}
			s, ok := commentStep(d)
			if !ok {
				p.Refused = append(p.Refused, d)
				continue
			}
			comments = append(comments, s)
		default:
			if o.Kind == "domain" && d.Live != nil && d.Desired != nil {
				// Columns use it: change it in place.
				steps, ok := alterDomain(*d.Live, *d.Desired)
				if !ok {
					p.Refused = append(p.Refused, d)
					continue
				}
				p.Before = append(p.Before, steps...)
				continue
			}
			switch o.Kind {
			case "privileges":
				privs = append(privs, d)
				continue
			case "table property":
				if atlasTableProperty(d, liveBy, desiredBy) {
					continue
				}
				before, after, ok := tablePropertySteps(d, liveBy)
				if !ok {
					p.Refused = append(p.Refused, d)
					continue
				}
				p.Before, p.After = append(p.Before, before...), append(p.After, after...)
				continue
			case "partition":
				if d.Live != nil && d.Desired != nil {
					// New bounds: the rows would have to move.
					p.Refused = append(p.Refused, d)
					continue
				}
				p.Before, p.After = partitionSteps(d, live, desiredBy, p.Before, p.After)
				continue
			case "partition column", "partition property":
				var steps []Step
				ok := true
				if o.Kind == "partition column" {
					steps, ok = partitionColumnSteps(d, liveBy, desiredBy)
				} else {
					steps, ok = partitionPropertySteps(d, desiredBy)
				}
				if !ok {
					p.Refused = append(p.Refused, d)
					continue
				}
				p.After = append(p.After, steps...)
				continue
			case "partition index", "partition constraint":
				p.Before, p.After = partitionOwnSteps(d, desiredBy, p.Before, p.After)
				continue
			case "index", "constraint":
				var dropped bool
				p.Before, p.After, dropped = indexSteps(d, desiredBy, p.Before, p.After)
				if dropped && (o.Kind == "constraint" || strings.HasPrefix(d.Live.Def, "CREATE UNIQUE ")) {
					disturbedHere = append(disturbedHere, d.Live.Deps[0])
				}
				continue
			case "check constraint":
				p.Before, p.After = checkSteps(d, desiredBy, taken, p.Before, p.After)
				continue
			case "foreign key":
				p.Before, p.After = foreignKeySteps(d, taken, p.Before, p.After)
				continue
			case "sequence":
				p.Before, p.After = sequenceSteps(d, p.Before, p.After)
				continue
			case "identity":
				if !slices.Contains(around.Atlas, o.Key()) {
					p.Before, p.After = identitySteps(d, desiredBy, p.Before, p.After)
				} else if d.Live == nil && !AtlasIdentity(d.Desired.Def) && liveBy[o.Deps[0]] == nil {
					// A new table: atlas created it with the defaults (a new
					// column of a table has them all in its ADD COLUMN).
					m := seqOptions(d.Desired.Def)
					q := "ALTER TABLE " + checkTable(o) + " ALTER COLUMN " + o.Ident + " " + seqClause(m, true) + " RESTART WITH " + m["start"]
					p.After = append(p.After, Step{SQL: q, Reason: "sets the identity options of new column " + o.Name, Validates: true, kind: "identity", Table: o.Table})
				}
				continue
			}
			if o.Kind == "extension" && d.Live != nil && d.Desired != nil {
				// Never dropped and created again: what uses it would go.
				p.Before = append(p.Before, extensionUpdate(*d.Desired))
				continue
			}
			if o.Kind == "composite type" && d.Live != nil && d.Desired != nil {
				steps, ok := alterComposite(*d.Live, *d.Desired, live)
				if !ok {
					p.Refused = append(p.Refused, d)
					continue
				}
				p.Before = append(p.Before, steps...)
				continue
			}
			if !plannable(o.Kind) || (o.Kind == "range type" || o.Kind == "collation") && d.Live != nil && d.Desired != nil {
				// A changed type or collation is in use by columns; ALTER
				// TYPE is not planned yet, a collation cannot be altered.
				p.Refused = append(p.Refused, d)
				continue
			}
			goneWithView := d.Live != nil && len(d.Live.Deps) == 1 && o.Kind == "index on materialized view" && recreated[d.Live.Deps[0]]
			replaceable := isRoutine(o.Kind) && d.Live != nil && d.Desired != nil && returns(d.Live.Def) == returns(d.Desired.Def)
			if d.Live != nil && !replaceable && !goneWithView {
				s := drop(*d.Live)
				if dropsBefore(o.Kind) || d.Desired != nil && createsBefore(o.Kind) {
					p.Before = append(p.Before, s)
				} else {
					p.After = append(p.After, s)
				}
			}
			if d.Desired != nil {
				s := create(*d.Desired, d.Live != nil)
				if createsBefore(o.Kind) {
					p.Before = append(p.Before, s)
				} else {
					p.After = append(p.After, s)
				}
			}
		}
	}
	// A foreign key left as it is, on a key or column atlas disturbs.
	disturbed := map[string]bool{}
	for _, k := range append(slices.Clone(around.Disturbed), disturbedHere...) {
		disturbed[k] = true
	}
	for _, o := range live {
		if o.Kind != "foreign key" || len(o.Deps) < 2 {
			continue
		}
		if _, differs := diffByKey[o.Key()]; differs || desiredBy[o.Key()] == nil {
			continue
		}
		hit := disturbed[o.Deps[1]]
		for _, dep := range o.Deps[2:] {
			hit = hit || disturbed[dep]
		}
		if hit {
			p.Before, p.After = foreignKeySteps(Difference{Live: liveBy[o.Key()], Desired: desiredBy[o.Key()]}, taken, p.Before, p.After)
		}
	}
	// Views: drop the dependents first, create the dependencies first.
	var drops []Step
	for _, k := range topo(keys(dropView), liveBy, true) {
		drops = append(drops, drop(*liveBy[k]))
	}
	var creates []Step
	for _, k := range topo(keys(createView), desiredBy, false) {
		creates = append(creates, create(*desiredBy[k], false))
	}
	p.Before = append(drops, sortSteps(p.Before)...)
	p.After = append(append(creates, sortSteps(p.After)...), comments...)
	regranted := recreatedHere(p)
	for _, name := range around.Recreated {
		regranted[name] = true
	}
	revokes, grants := privilegeSteps(privs, desiredBy, regranted)
	p.Before = append(p.Before, revokes...)
	p.After = append(p.After, grants...)
	if fn := p.Before; len(fn) > 0 {
		for _, s := range fn {
			if strings.HasPrefix(s.SQL, "CREATE OR REPLACE FUNCTION") || strings.HasPrefix(s.SQL, "CREATE OR REPLACE PROCEDURE") {
				// Routine bodies may name tables atlas creates later in the
				// plan; pg_dump loads them the same way.
				p.Before = append([]Step{{SQL: "SET LOCAL check_function_bodies = off", Reason: "lets functions name tables created later in this plan"}}, p.Before...)
				break
			}
		}
	}
	return p
}

// sortSteps puts drops first, dependents before what they use, then
// creations, what is used before its users.
// returns is a routine definition's RETURNS line: CREATE OR REPLACE cannot
// change it.
func returns(def string) string {
	for _, l := range strings.Split(def, "\n") {
		if strings.HasPrefix(strings.TrimSpace(l), "RETURNS ") {
			return strings.TrimSpace(l)
		}
	}
	return ""
}

func sortSteps(s []Step) []Step {
	rank := func(x Step) int {
		r := len(createOrder)
		for i, k := range createOrder {
			if k == x.kind {
				r = i
			}
		}
		if x.Drops && (x.kind == "index" || x.kind == "unique constraint") {
			// After the foreign keys that may use them.
			return -1
		}
		if x.Drops {
			// In reverse of creation: what uses an object (a trigger its
			// function, a function its type) is dropped before it.
			return -2 - r
		}
		return r
	}
	sort.SliceStable(s, func(i, j int) bool { return rank(s[i]) < rank(s[j]) })
	return dependentsFirst(mentionsFirst(s))
}

// dependentsFirst moves a dropped object's dependents, as far as the
// names in their definitions tell (a domain whose check calls a function,
// a function calling another, a composite type holding another), before
// its drop.
func dependentsFirst(s []Step) []Step {
	out := make([]Step, 0, len(s))
	placed := make([]bool, len(s))
	var place func(i int, seen map[int]bool)
	place = func(i int, seen map[int]bool) {
		if placed[i] || seen[i] {
			return
		}
		seen[i] = true
		if s[i].Drops && s[i].name != "" {
			for j := range s {
				if j != i && s[j].Drops && s[j].def != "" && mentions(s[j].def, s[i].name) {
					place(j, seen)
				}
			}
		}
		placed[i] = true
		out = append(out, s[i])
	}
	for i := range s {
		place(i, map[int]bool{})
	}
	return out
}

// mentionsFirst moves a created type, domain or routine before a creation
// that names it (a domain's check calling a function, a function taking a
// domain), as far as the names tell.
func mentionsFirst(s []Step) []Step {
	out := make([]Step, 0, len(s))
	placed := make([]bool, len(s))
	var place func(i int, seen map[int]bool)
	place = func(i int, seen map[int]bool) {
		if placed[i] || seen[i] {
			return
		}
		seen[i] = true
		for j := range s {
			// Only a creation is moved: an ALTER DOMAIN keeps its place
			// among the others (a check dropped before one of its name
			// is added).
			if j != i && !s[j].Drops && !s[i].Drops && s[j].name != "" && createsBefore(s[j].kind) && !strings.HasPrefix(s[j].SQL, "ALTER ") && mentions(s[i].SQL, s[j].name) {
				place(j, seen)
			}
		}
		placed[i] = true
		out = append(out, s[i])
	}
	for i := range s {
		place(i, map[int]bool{})
	}
	return out
}

// mentions says whether sql names name (a routine by its name alone) as a
// word of its own.
func mentions(sql, name string) bool {
	name, _, _ = strings.Cut(name, "(")
	for i := strings.Index(sql, name); i >= 0; {
		end := i + len(name)
		before := i == 0 || !isWord(sql[i-1])
		after := end >= len(sql) || !isWord(sql[end])
		if before && after {
			return true
		}
		next := strings.Index(sql[i+1:], name)
		if next < 0 {
			return false
		}
		i += 1 + next
	}
	return false
}

func isWord(c byte) bool {
	return c == '_' || c >= 'a' && c <= 'z' || c >= 'A' && c <= 'Z' || c >= '0' && c <= '9'
}

func index(objs []Object) map[string]*Object {
	m := map[string]*Object{}
	for i := range objs {
		m[objs[i].Key()] = &objs[i]
	}
	return m
}

func keys(m map[string]bool) []string {
	out := make([]string, 0, len(m))
	for k := range m {
		out = append(out, k)
	}
	sort.Strings(out)
	return out
}

// topo orders view keys so each comes after the views it reads; reverse
// puts dependents first, the order to drop in.
func topo(ks []string, by map[string]*Object, reverse bool) []string {
	in := map[string]bool{}
	for _, k := range ks {
		in[k] = true
	}
	var out []string
	done := map[string]bool{}
	var visit func(k string)
	visit = func(k string) {
		if done[k] {
			return
		}
		done[k] = true
		if o := by[k]; o != nil {
			for _, d := range o.Deps {
				if in[d] {
					visit(d)
				}
			}
		}
		out = append(out, k)
	}
	for _, k := range ks {
		visit(k)
	}
	if reverse {
		for i, j := 0, len(out)-1; i < j; i, j = i+1, j-1 {
			out[i], out[j] = out[j], out[i]
		}
	}
	return out
}

// routinesInOrder puts the routines among diffs in an order where each
// comes after the routines its desired body uses, and each dropped one
// before those its live body uses, in the places routines held: a
// SQL-standard body (RETURN, BEGIN ATOMIC) is parsed where it is created,
// whatever check_function_bodies says, and holds what it uses.
func routinesInOrder(diffs []Difference, liveBy, desiredBy map[string]*Object) {
	var at []int
	var made, dropped []string
	byKey := map[string]Difference{}
	for i, d := range diffs {
		if o := d.Object(); isRoutine(o.Kind) || o.Kind == "aggregate" {
			at = append(at, i)
			byKey[o.Key()] = d
			if d.Desired != nil {
				made = append(made, o.Key())
			} else {
				dropped = append(dropped, o.Key())
			}
		}
	}
	for n, k := range append(topo(made, desiredBy, false), topo(dropped, liveBy, true)...) {
		diffs[at[n]] = byKey[k]
	}
}

func contains(s []string, v string) bool {
	for _, x := range s {
		if x == v {
			return true
		}
	}
	return false
}

func isView(kind string) bool { return kind == "view" || kind == "materialized view" }

func isRoutine(kind string) bool { return kind == "function" || kind == "procedure" }

func plannable(kind string) bool {
	for _, k := range createOrder {
		if k == kind {
			return true
		}
	}
	return false
}

// createsBefore: what tables may use is created before atlas's statements.
func createsBefore(kind string) bool {
	switch kind {
	case "extension", "collation", "domain", "composite type", "range type", "function", "procedure", "aggregate":
		return true
	}
	return false
}

// dropsBefore: what depends on tables is dropped before atlas's statements;
// what tables use is dropped after atlas dropped the tables.
func dropsBefore(kind string) bool { return !createsBefore(kind) }

func create(o Object, replace bool) Step {
	reason := "creates " + o.String()
	if replace {
		reason = "replaces " + o.String()
	}
	def := strings.TrimSuffix(strings.TrimSpace(o.Def), ";")
	var q string
	switch o.Kind {
	case "extension":
		q = "CREATE EXTENSION IF NOT EXISTS " + o.Ident
		if v, ok := strings.CutPrefix(def, "version="); ok {
			q += " VERSION " + quoteLiteral(v)
		}
	case "domain":
		q = "CREATE DOMAIN " + o.Ident + " AS " + def
	case "collation":
		q = "CREATE COLLATION " + o.Ident + " " + def
	case "composite type":
		q = "CREATE TYPE " + o.Ident + " AS " + def
	case "aggregate":
		q = createAggregate(o.Ident, o.Def) // untrimmed: INITCOND may end in a space
	case "range type":
		// Def is "subtype=T[ subtype_diff=F][ canonical=F]".
		r := strings.NewReplacer("subtype=", "SUBTYPE = ", " subtype_diff=", ", SUBTYPE_DIFF = ", " canonical=", ", CANONICAL = ")
		q = "CREATE TYPE " + o.Ident + " AS RANGE (" + r.Replace(def) + ")"
	case "function", "procedure", "statistics", "index on materialized view":
		q = def
	case "view":
		q = "CREATE VIEW " + o.Ident + " " + def
	case "materialized view":
		q = "CREATE MATERIALIZED VIEW " + o.Ident + " " + def
	case "trigger":
		q, _, _ = strings.Cut(def, " enabled=")
	case "row level security":
		q = "ALTER TABLE " + o.Ident + " ENABLE ROW LEVEL SECURITY"
	case "forced row level security":
		q = "ALTER TABLE " + o.Ident + " FORCE ROW LEVEL SECURITY"
	case "policy":
		q = "CREATE POLICY " + o.Ident + " " + def
	}
	return Step{SQL: q, Reason: reason, kind: o.Kind, name: o.Ident, Table: o.Table}
}

func drop(o Object) Step {
	var q string
	switch o.Kind {
	case "row level security":
		q = "ALTER TABLE " + o.Ident + " DISABLE ROW LEVEL SECURITY"
	case "forced row level security":
		q = "ALTER TABLE " + o.Ident + " NO FORCE ROW LEVEL SECURITY"
	case "composite type", "range type":
		q = "DROP TYPE " + o.Ident
	case "index on materialized view":
		q = "DROP INDEX " + o.Ident
	default:
		q = "DROP " + strings.ToUpper(o.Kind) + " " + o.Ident
	}
	return Step{SQL: q, Reason: "drops " + o.String(), Drops: true, kind: o.Kind, name: o.Ident, Table: o.Table, def: o.Def}
}

// recreatedHere names, as privileges objects name them ("view v", "type
// t"), the objects p drops and creates again: they lose their grants.
func recreatedHere(p Planned) map[string]bool {
	name := func(s Step) string {
		switch s.kind {
		case "domain", "composite type", "enum", "range type":
			return "type " + s.name
		}
		return s.kind + " " + s.name
	}
	dropped, out := map[string]bool{}, map[string]bool{}
	for _, s := range append(slices.Clone(p.Before), p.After...) {
		if s.Drops && s.name != "" {
			dropped[name(s)] = true
		}
	}
	for _, s := range append(slices.Clone(p.Before), p.After...) {
		if !s.Drops && s.name != "" && dropped[name(s)] {
			out[name(s)] = true
		}
	}
	return out
}

// commentTarget is the key of the object a comment is on, for comments on
// views.
func commentTarget(o Object) (string, bool) {
	switch o.Kind {
	case "comment on view", "comment on materialized view":
		return strings.TrimPrefix(o.Kind, "comment on ") + " " + o.Name, true
	case "comment on column":
		rel, _, _ := strings.Cut(o.Name, ".")
		return "view " + rel, true
	case "comment on trigger":
		return "trigger " + o.Name, true
	}
	return "", false
}

// commentedExists says whether the object comment c is on is desired.
func commentedExists(c Object, desired []Object) bool {
	name := c.Name
	if c.Kind == "comment on column" {
		name, _, _ = strings.Cut(name, ".")
	}
	for _, o := range desired {
		if o.Name == name && !strings.HasPrefix(o.Kind, "comment on ") {
			return true
		}
	}
	return false
}

func commentStep(d Difference) (Step, bool) {
	o := d.Object()
	what := strings.ToUpper(strings.TrimPrefix(o.Kind, "comment on "))
	switch what {
	case "VIEW", "MATERIALIZED VIEW", "SEQUENCE", "COLUMN", "CONSTRAINT", "TYPE", "FUNCTION", "TRIGGER", "POLICY", "SCHEMA":
	default:
		return Step{}, false
	}
	text := "NULL"
	if d.Desired != nil && d.Desired.Def != "" {
		text = quoteLiteral(d.Desired.Def)
	}
	if what == "FUNCTION" {
		// A procedure's comment is set the same way through ROUTINE.
		what = "ROUTINE"
	}
	return Step{SQL: fmt.Sprintf("COMMENT ON %s %s IS %s", what, o.Ident, text), Reason: "sets the comment on " + strings.TrimPrefix(o.Kind, "comment on ") + " " + o.Name}, true
}

func quoteLiteral(s string) string {
	return "'" + strings.ReplaceAll(s, "'", "''") + "'"
}

// alterDomain changes domain live into desired with ALTER DOMAIN, false
// when the base type or collation differs (that needs the columns changed).
func alterDomain(live, desired Object) ([]Step, bool) {
	part := func(o Object, key string) (string, bool) {
		for _, p := range o.Parts {
			if v, ok := strings.CutPrefix(p, key+"="); ok {
				return v, true
			}
		}
		return "", false
	}
	checks := func(o Object) map[string]string {
		m := map[string]string{}
		for _, p := range o.Parts {
			if v, ok := strings.CutPrefix(p, "check="); ok {
				name, def, _ := strings.Cut(v, " ")
				m[name] = def
			}
		}
		return m
	}
	lb, _ := part(live, "base")
	db, _ := part(desired, "base")
	if lb != db || lb == "" {
		return nil, false
	}
	name := desired.Ident
	var steps []Step
	add := func(q, why string) {
		steps = append(steps, Step{SQL: "ALTER DOMAIN " + name + " " + q, Reason: why + " of domain " + desired.Name, kind: "domain", name: name,
			Validates: strings.HasPrefix(q, "SET NOT NULL") || strings.HasPrefix(q, "ADD CONSTRAINT")})
	}
	ld, lhas := part(live, "default")
	dd, dhas := part(desired, "default")
	switch {
	case dhas && (!lhas || ld != dd):
		add("SET DEFAULT "+dd, "sets the default")
	case lhas && !dhas:
		add("DROP DEFAULT", "drops the default")
	}
	_, lnn := part(live, "notnull")
	_, dnn := part(desired, "notnull")
	switch {
	case dnn && !lnn:
		add("SET NOT NULL", "sets NOT NULL (fails if a column of the domain holds NULL)")
	case lnn && !dnn:
		add("DROP NOT NULL", "drops NOT NULL")
	}
	lc, dc := checks(live), checks(desired)
	for _, n := range sortedKeys(lc) {
		if dc[n] != lc[n] {
			add("DROP CONSTRAINT "+n, "drops check "+n)
		}
	}
	for _, n := range sortedKeys(dc) {
		if lc[n] != dc[n] {
			add("ADD CONSTRAINT "+n+" "+dc[n], "adds check "+n+" (fails if a stored value breaks it)")
		}
	}
	return steps, true
}

func sortedKeys(m map[string]string) []string {
	out := make([]string, 0, len(m))
	for k := range m {
		out = append(out, k)
	}
	sort.Strings(out)
	return out
}

// checkSteps plans a check constraint: dropped before atlas's statements
// (a column it reads may be dropped there), added after them (it may read
// a column added there). A check whose table is gone goes with it. A check
// that only loses NOT VALID is validated in place.
func checkSteps(d Difference, desiredBy map[string]*Object, taken map[string]bool, before, after []Step) ([]Step, []Step) {
	if d.Live != nil && d.Desired != nil && d.Live.Def == d.Desired.Def+" NOT VALID" {
		return before, append(after, Step{SQL: "ALTER TABLE " + checkTable(*d.Live) + " VALIDATE CONSTRAINT " + d.Live.Ident,
			Reason: "validates " + constraintName(*d.Live) + " (fails if a row breaks it)", Validates: true, kind: "check constraint", Table: d.Object().Table})
	}
	if d.Live != nil && (d.Desired != nil || desiredBy[d.Live.Deps[0]] != nil) {
		before = append(before, Step{SQL: "ALTER TABLE " + checkTable(*d.Live) + " DROP CONSTRAINT " + d.Live.Ident,
			Reason: "drops " + constraintName(*d.Live), Drops: true, kind: "check constraint", Table: d.Object().Table})
	}
	if d.Desired != nil {
		validates := !notValid(*d.Desired)
		why := " (fails if a row breaks it)"
		if !validates {
			why = ", NOT VALID: existing rows are not checked"
		}
		after = append(after, Step{SQL: "ALTER TABLE " + checkTable(*d.Desired) + " ADD " + constraintClause(d, taken) + d.Desired.Def,
			Reason: "adds " + constraintName(*d.Desired) + why, Validates: validates, kind: "check constraint", Table: d.Object().Table})
	}
	return before, after
}

// foreignKeySteps plans a foreign key: dropped before atlas's statements
// (always: atlas, which no longer sees it, may drop the table it
// references), added after them, once the key it references exists.
func foreignKeySteps(d Difference, taken map[string]bool, before, after []Step) ([]Step, []Step) {
	if d.Live != nil {
		before = append(before, Step{SQL: "ALTER TABLE " + checkTable(*d.Live) + " DROP CONSTRAINT " + d.Live.Ident,
			Reason: "drops " + constraintName(*d.Live), Drops: true, kind: "foreign key", Table: d.Object().Table})
	}
	if d.Desired != nil {
		name := constraintClause(d, taken)
		why := "adds "
		if d.Live != nil {
			why = "adds again "
		}
		validates := !notValid(*d.Desired)
		fails := " (fails if a row references nothing)"
		if !validates {
			fails = ", NOT VALID: existing rows are not checked"
		}
		after = append(after, Step{SQL: "ALTER TABLE " + checkTable(*d.Desired) + " ADD " + name + d.Desired.Def,
			Reason: why + constraintName(*d.Desired) + fails, Validates: validates, kind: "foreign key", Table: d.Object().Table})
	}
	return before, after
}

// notValid says whether a check or foreign key is NOT VALID, as
// pg_get_constraintdef prints it last.
func notValid(o Object) bool { return strings.HasSuffix(o.Def, " NOT VALID") }

// constraintClause is "CONSTRAINT name " naming an added constraint as the
// desired side names it (a comment may name it), or "" for PostgreSQL to
// name it when that name is a generated one the table already holds.
func constraintClause(d Difference, taken map[string]bool) string {
	o := *d.Desired
	if strings.HasPrefix(o.Name, "<auto>:") && taken[o.Table+" "+o.Ident] && (d.Live == nil || d.Live.Ident != o.Ident) {
		return ""
	}
	return "CONSTRAINT " + o.Ident + " "
}

// constraintName names a check or foreign key for a reason: by its name, or
// by its definition when PostgreSQL names it.
func constraintName(o Object) string {
	if rest, ok := strings.CutPrefix(o.Name, "<auto>:"); ok {
		i := strings.LastIndex(rest, " on ")
		return o.Kind + " on " + rest[i+4:] + ": " + rest[:i]
	}
	return o.String()
}

// checkTable is the table a check constraint or foreign key is on, as DDL
// names it.
func checkTable(o Object) string { return strings.TrimPrefix(o.Deps[0], "table ") }

// RenamePrimaryKeys plans a primary key that differs only by name (atlas
// compares keys by their columns, not their names) as a rename, which
// keeps the foreign keys that use it; and a named key atlas creates (it
// writes no name: PostgreSQL calls it T_pkey) is renamed after. It returns
// the renames to run before atlas's statements and after them, the
// differences they correct and the differences left.
func RenamePrimaryKeys(diffs []Difference) ([]Step, []Step, []Difference, []Difference) {
	type side struct{ live, desired, changed *Object }
	byTable := map[string]*side{}
	for _, d := range diffs {
		o := d.Object()
		if o.Kind != "constraint" || !strings.HasPrefix(o.Def, "p ") || len(o.Deps) == 0 {
			continue
		}
		s := byTable[o.Deps[0]]
		if s == nil {
			s = &side{}
			byTable[o.Deps[0]] = s
		}
		if d.Live != nil && d.Desired == nil {
			s.live = d.Live
		}
		if d.Desired != nil && d.Live == nil {
			s.desired = d.Desired
		}
		if d.Desired != nil && d.Live != nil {
			// atlas drops it and adds it again, unnamed.
			s.changed = d.Desired
		}
	}
	var steps []Step
	renamed := map[*Object]bool{}
	for _, t := range sortedSideKeys(byTable) {
		s := byTable[t]
		if s.live == nil || s.desired == nil || s.live.Def != s.desired.Def {
			continue
		}
		renamed[s.live], renamed[s.desired] = true, true
		steps = append(steps, Step{SQL: "ALTER TABLE " + strings.TrimPrefix(t, "table ") + " RENAME CONSTRAINT " + s.live.Ident + " TO " + s.desired.Ident,
			Reason: "renames the primary key of " + strings.TrimPrefix(t, "table ") + " to " + s.desired.Ident, Table: s.live.Table, kind: "constraint"})
	}
	var after []Step
	for _, t := range sortedSideKeys(byTable) {
		s := byTable[t]
		want := s.desired
		if want == nil || renamed[want] {
			want = s.changed
		}
		if want == nil || strings.HasPrefix(want.Name, "<auto>:") {
			continue
		}
		table := strings.TrimPrefix(t, "table ")
		if want == s.desired {
			renamed[want] = true
		}
		after = append(after, Step{SQL: "ALTER TABLE " + table + " RENAME CONSTRAINT " + QuoteIdent(want.Table+"_pkey") + " TO " + want.Ident,
			Reason: "names the primary key of " + table + " " + want.Ident, Table: want.Table, kind: "constraint"})
	}
	var done, rest []Difference
	for _, d := range diffs {
		if renamed[d.Live] || renamed[d.Desired] {
			done = append(done, d)
		} else {
			rest = append(rest, d)
		}
	}
	return steps, after, done, rest
}

func sortedSideKeys[V any](m map[string]V) []string {
	out := make([]string, 0, len(m))
	for k := range m {
		out = append(out, k)
	}
	sort.Strings(out)
	return out
}

// seqOptions reads a sequence's parameters as the catalog prints them
// ("type=bigint start=1 increment=1 min=1 max=... cache=1 cycle=f").
func seqOptions(def string) map[string]string {
	m := map[string]string{}
	// ownedby= comes last and names a column, which may hold spaces
	// ("t"."some id"): it is the rest of the line.
	if head, owner, ok := strings.Cut(def, " ownedby="); ok {
		def, m["ownedby"] = head, owner
	}
	for _, f := range strings.Fields(def) {
		if k, v, ok := strings.Cut(f, "="); ok {
			m[k] = v
		}
	}
	return m
}

// seqClause writes the options of m as CREATE SEQUENCE takes them, or,
// with set, as ALTER COLUMN ... SET takes them for an identity.
func seqClause(m map[string]string, set bool) string {
	parts := []string{"INCREMENT BY " + m["increment"], "MINVALUE " + m["min"], "MAXVALUE " + m["max"], "START WITH " + m["start"], "CACHE " + m["cache"]}
	if m["cycle"] == "t" {
		parts = append(parts, "CYCLE")
	} else {
		parts = append(parts, "NO CYCLE")
	}
	if set {
		for i := range parts {
			parts[i] = "SET " + parts[i]
		}
	}
	return strings.Join(parts, " ")
}

// sequenceSteps plans a sequence. A serial column's own sequence is created
// and dropped by atlas with its column; only its options are changed here
// (its type follows a column changed from serial to bigserial only so).
// Any other sequence's owning column is let go before atlas's statements
// (which may drop that column, and a column takes its sequence with it)
// and set after them (which may create it).
func sequenceSteps(d Difference, before, after []Step) ([]Step, []Step) {
	o := d.Object()
	owned := strings.HasPrefix(o.Name, "owned by ")
	ownedBy := func(x *Object) string {
		if x == nil {
			return ""
		}
		// A serial's sequence, keyed by its column, is atlas's: its owner
		// is read from the key only where pairSequences paired it.
		if col, ok := strings.CutPrefix(x.Name, "owned by "); ok && d.Live != nil && d.Desired != nil {
			return col
		}
		return seqOptions(x.Def)["ownedby"]
	}
	live, desired := ownedBy(d.Live), ownedBy(d.Desired)
	if d.Live != nil && live != "" && live != desired && d.Desired != nil {
		before = append(before, Step{SQL: "ALTER SEQUENCE " + d.Live.Ident + " OWNED BY NONE",
			Reason: "releases " + o.String() + " from column " + live, kind: "sequence"})
	}
	switch {
	case d.Live != nil && d.Desired != nil:
		lm, dm := seqOptions(d.Live.Def), seqOptions(d.Desired.Def)
		delete(lm, "ownedby")
		delete(dm, "ownedby")
		if fmt.Sprint(lm) != fmt.Sprint(dm) {
			after = append(after, Step{SQL: "ALTER SEQUENCE " + d.Live.Ident + " AS " + dm["type"] + " " + seqClause(dm, false),
				Reason: "changes the options of " + o.String(), Validates: true, kind: "sequence", Table: o.Table})
		}
	case owned && (d.Live == nil || d.Desired == nil):
	case d.Desired != nil:
		m := seqOptions(d.Desired.Def)
		before = append(before, Step{SQL: "CREATE SEQUENCE " + d.Desired.Ident + " AS " + m["type"] + " " + seqClause(m, false),
			Reason: "creates " + o.String(), kind: "sequence", name: d.Desired.Ident})
	case live != "":
		// Dropped with its column, if atlas dropped that.
		after = append(after, Step{SQL: "DROP SEQUENCE IF EXISTS " + d.Live.Ident, Reason: "drops " + o.String(), Drops: true, kind: "sequence"})
	default:
		after = append(after, Step{SQL: "DROP SEQUENCE " + d.Live.Ident, Reason: "drops " + o.String(), Drops: true, kind: "sequence"})
	}
	if d.Desired != nil && desired != "" && desired != live {
		after = append(after, Step{SQL: "ALTER SEQUENCE " + d.Desired.Ident + " OWNED BY " + desired,
			Reason: "makes " + o.String() + " owned by column " + desired, kind: "sequence"})
	}
	return before, after
}

// identitySteps plans an identity column's generation and sequence
// options: dropped before atlas's statements (which may change the column),
// added or changed after them (the column exists and is NOT NULL by then).
func identitySteps(d Difference, desiredBy map[string]*Object, before, after []Step) ([]Step, []Step) {
	o := d.Object()
	col := "ALTER TABLE " + checkTable(o) + " ALTER COLUMN " + o.Ident
	generation := func(x Object) string {
		if strings.HasPrefix(x.Def, "generated=d ") {
			return "BY DEFAULT"
		}
		return "ALWAYS"
	}
	switch {
	case d.Desired == nil:
		if desiredBy["column "+o.Name] != nil {
			before = append(before, Step{SQL: col + " DROP IDENTITY", Reason: "drops the identity of column " + o.Name, Deletes: true, kind: "identity", Table: o.Table, Identity: &IdentityColumn{checkTable(o), o.Ident}})
		}
	case d.Live == nil:
		after = append(after, Step{SQL: col + " ADD GENERATED " + generation(*d.Desired) + " AS IDENTITY (" + seqClause(seqOptions(d.Desired.Def), false) + ")",
			Reason: "makes column " + o.Name + " an identity", kind: "identity", Table: o.Table})
	default:
		q := col
		if generation(*d.Live) != generation(*d.Desired) {
			q += " SET GENERATED " + generation(*d.Desired)
		}
		lm, dm := seqOptions(d.Live.Def), seqOptions(d.Desired.Def)
		delete(lm, "type")
		delete(dm, "type")
		bounds := fmt.Sprint(lm) != fmt.Sprint(dm)
		if bounds {
			q += " " + seqClause(dm, true)
		}
		if q != col {
			st := Step{SQL: q, Reason: "changes the identity of column " + o.Name, Validates: bounds, kind: "identity", Table: o.Table}
			if bounds {
				st.Identity = &IdentityColumn{checkTable(o), o.Ident}
			}
			after = append(after, st)
		}
	}
	return before, after
}

// IdentityOptions is the sequence options of an identity as its catalog
// definition holds them, as GENERATED ... AS IDENTITY (...) takes them.
func IdentityOptions(def string) string { return seqClause(seqOptions(def), false) }

// AtlasIdentity says whether atlas writes the identity def describes as it
// is (it writes only START WITH and INCREMENT BY, so the rest must be the
// defaults for type).
func AtlasIdentity(def string) bool {
	m := seqOptions(def)
	max := map[string]string{"smallint": "32767", "integer": "2147483647", "bigint": "9223372036854775807"}[m["type"]]
	return m["min"] == "1" && m["max"] == max && m["cache"] == "1" && m["cycle"] == "f" && !strings.HasPrefix(m["increment"], "-") && !strings.HasPrefix(m["start"], "-") && m["start"] != "0"
}

// AtlasLoses says whether o is an index, unique constraint or primary key
// with a property atlas neither reads nor writes: storage parameters (WITH
// (fillfactor = ...)), a column's COLLATE, a key's DEFERRABLE. Such an object is planned here, from what PostgreSQL prints,
// on both sides.
func AtlasLoses(o Object) bool {
	def, _, _ := strings.Cut(o.Def, " comment=")
	switch {
	case o.Kind == "index":
		return strings.Contains(def, " WITH (") || strings.Contains(def, " COLLATE ")
	case o.Kind == "constraint" && (strings.HasPrefix(def, "u ") || strings.HasPrefix(def, "p ")):
		return strings.Contains(def, " DEFERRABLE") || strings.Contains(def, " WITH (")
	}
	return false
}

// indexSteps plans an index or unique constraint AtlasLoses marks: dropped
// before atlas's statements (a column it uses may be dropped there) unless
// its table goes, created after them (it may use a column added there). It
// says whether it dropped one, which a foreign key may use.
func indexSteps(d Difference, desiredBy map[string]*Object, before, after []Step) ([]Step, []Step, bool) {
	dropped := false
	if d.Live != nil && desiredBy[d.Live.Deps[0]] != nil {
		dropped = true
		if d.Live.Kind == "index" {
			before = append(before, Step{SQL: "DROP INDEX " + d.Live.Ident, Reason: "drops " + indexName(*d.Live), Drops: true, kind: "index", Table: d.Live.Table})
		} else {
			before = append(before, Step{SQL: "ALTER TABLE " + checkTable(*d.Live) + " DROP CONSTRAINT " + d.Live.Ident,
				Reason: "drops " + indexName(*d.Live), Drops: true, kind: "unique constraint", Table: d.Live.Table})
		}
	}
	if o := d.Desired; o != nil {
		def, comment, commented := strings.Cut(o.Def, " comment=")
		if o.Kind == "index" {
			label := strings.TrimSuffix(o.Name, " on "+checkTable(*o))
			q := strings.Replace(def, " INDEX "+label+" ON ", " INDEX "+o.Ident+" ON ", 1)
			// A partitioned table's index prints ON ONLY; created so, it
			// would be left invalid, its partitions without theirs.
			q = strings.Replace(q, " INDEX "+o.Ident+" ON ONLY ", " INDEX "+o.Ident+" ON ", 1)
			after = append(after, Step{SQL: q, Reason: "creates " + indexName(*o), Validates: strings.HasPrefix(q, "CREATE UNIQUE "), kind: "index", Table: o.Table})
			if commented {
				after = append(after, Step{SQL: "COMMENT ON INDEX " + o.Ident + " IS " + quoteLiteral(comment), Reason: "sets the comment on " + indexName(*o), kind: "index", Table: o.Table})
			}
		} else {
			after = append(after, Step{SQL: "ALTER TABLE " + checkTable(*o) + " ADD CONSTRAINT " + o.Ident + " " + def[len("u "):],
				Reason: "adds " + indexName(*o) + " (fails if rows hold duplicates)", Validates: true, kind: "unique constraint", Table: o.Table})
		}
	}
	return before, after, dropped
}

// indexName names an index or unique constraint for a reason.
func indexName(o Object) string {
	what := "index "
	switch {
	case o.Kind == "constraint" && strings.HasPrefix(o.Def, "p "):
		what = "primary key "
	case o.Kind == "constraint":
		what = "unique constraint "
	}
	return what + o.Ident + " on " + checkTable(o)
}

// atlasTableProperty says whether atlas's statements make table property
// difference d: a new table's PARTITION BY, which atlas writes in its
// CREATE TABLE (it refuses to change one), or any property of a table it
// drops, which goes with it.
func atlasTableProperty(d Difference, liveBy, desiredBy map[string]*Object) bool {
	table := "table " + d.Object().Name
	switch {
	case d.Live != nil && d.Desired == nil:
		return desiredBy[table] == nil
	case d.Live == nil && liveBy[table] == nil:
		def := d.Desired.Def
		return strings.HasPrefix(def, "PARTITION BY ") && !strings.Contains(def, " INHERITS (") && !strings.Contains(def, " WITH (") && !strings.Contains(def, " REPLICA IDENTITY ")
	}
	return false
}

// tableProps is a table property definition ("UNLOGGED PARTITION BY ...
// INHERITS (...) WITH (k=v, ...) REPLICA IDENTITY ...") taken apart.
type tableProps struct {
	persistence, partition, inherits, replica string
	options                                   map[string]string
	keys                                      []string
}

func parseTableProps(def string) tableProps {
	p := tableProps{options: map[string]string{}}
	for _, w := range []string{"UNLOGGED ", "TEMPORARY "} {
		if strings.HasPrefix(def+" ", w) {
			p.persistence, def = strings.TrimSpace(w), strings.TrimPrefix(strings.TrimPrefix(def, strings.TrimSpace(w)), " ")
		}
	}
	if i := strings.LastIndex(def, "REPLICA IDENTITY "); i >= 0 {
		p.replica, def = def[i:], strings.TrimSpace(def[:i])
	}
	if i := strings.LastIndex(def, "WITH ("); i >= 0 && strings.HasSuffix(def, ")") {
		for _, kv := range strings.Split(def[i+len("WITH ("):len(def)-1], ", ") {
			k, v, _ := strings.Cut(kv, "=")
			p.options[k] = v
			p.keys = append(p.keys, k)
		}
		def = strings.TrimSpace(def[:i])
	}
	if i := strings.Index(def, "INHERITS ("); i >= 0 {
		p.inherits, def = def[i:], strings.TrimSpace(def[:i])
	}
	p.partition = def
	return p
}

// tablePropertySteps plans a table's persistence (SET LOGGED or
// UNLOGGED), parents (NO INHERIT before atlas's statements, which may drop
// a parent; INHERIT after them, when a new parent or a new child and the
// columns they share exist), storage parameters (SET and RESET) and
// replica identity, after atlas's statements (a new table, an index the
// identity uses, exist by then). A new table's PARTITION BY is atlas's. A
// change of partition key, or to a temporary table, is not planned: it
// reports false.
func tablePropertySteps(d Difference, liveBy map[string]*Object) (before, after []Step, ok bool) {
	var l, w tableProps
	l, w = parseTableProps(""), parseTableProps("")
	if d.Live != nil {
		l = parseTableProps(d.Live.Def)
	}
	if d.Desired != nil {
		w = parseTableProps(d.Desired.Def)
	}
	o := d.Object()
	if liveBy["table "+o.Name] == nil {
		// A new table is created with its key and parents.
		l.partition, l.inherits = w.partition, w.inherits
	}
	if l.partition != w.partition || w.persistence == "TEMPORARY" || l.persistence == "TEMPORARY" || w.replica == "REPLICA IDENTITY USING INDEX " {
		return nil, nil, false
	}
	alter := "ALTER TABLE " + o.Name
	if l.persistence != w.persistence {
		to := "LOGGED"
		if w.persistence == "UNLOGGED" {
			to = "UNLOGGED"
		}
		// PostgreSQL refuses a permanent table referencing an unlogged
		// one, and the other way round for SET UNLOGGED: may fail.
		after = append(after, Step{SQL: alter + " SET " + to, Reason: "makes table " + o.Name + " " + strings.ToLower(to) + " (writes it anew; fails while a foreign key joins it to a table of the other kind)",
			Validates: true, Table: o.Table, kind: "persistence"})
	}
	if lp, wp := Parents(l.inherits), Parents(w.inherits); !slices.Equal(lp, wp) {
		// inhseqno orders the parents: keep the common head, detach and
		// attach again from the first that differs.
		k := 0
		for k < len(lp) && k < len(wp) && lp[k] == wp[k] {
			k++
		}
		for _, parent := range lp[k:] {
			before = append(before, Step{SQL: alter + " NO INHERIT " + parent, Reason: "detaches table " + o.Name + " from parent " + parent + " (its rows no longer read through the parent)",
				Table: o.Table, kind: "inheritance"})
		}
		for _, parent := range wp[k:] {
			after = append(after, Step{SQL: alter + " INHERIT " + parent, Reason: "makes table " + o.Name + " a child of " + parent + " (fails unless it has the parent's columns and checks)",
				Validates: true, Table: o.Table, kind: "inheritance"})
		}
	}
	var reset, set []string
	for _, k := range l.keys {
		if _, ok := w.options[k]; !ok {
			reset = append(reset, k)
		}
	}
	for _, k := range w.keys {
		if v, ok := l.options[k]; !ok || v != w.options[k] {
			set = append(set, k+"="+w.options[k])
		}
	}
	if len(reset) > 0 {
		after = append(after, Step{SQL: alter + " RESET (" + strings.Join(reset, ", ") + ")", Reason: "resets storage parameters " + strings.Join(reset, ", ") + " of table " + o.Name,
			Table: o.Table, kind: parametersKind(reset)})
	}
	if len(set) > 0 {
		after = append(after, Step{SQL: alter + " SET (" + strings.Join(set, ", ") + ")", Reason: "sets storage parameters " + strings.Join(set, ", ") + " of table " + o.Name,
			Table: o.Table, kind: parametersKind(set)})
	}
	if l.replica != w.replica {
		r := w.replica
		if r == "" {
			r = "REPLICA IDENTITY DEFAULT"
		}
		after = append(after, Step{SQL: alter + " " + r, Reason: "sets the replica identity of table " + o.Name + " (" + strings.ToLower(strings.TrimPrefix(r, "REPLICA IDENTITY ")) + ")", Table: o.Table})
	}
	return before, after, true
}

// Parents is the list of the "INHERITS (a, s.b, "c, d")" clause of a
// table property definition, in order, each as the catalog prints it
// (quoted names may hold commas and parentheses).
func Parents(def string) []string {
	_, list, ok := strings.Cut(def, "INHERITS (")
	if !ok {
		return nil
	}
	var out []string
	quoted, start := false, 0
	for i, r := range list {
		switch {
		case r == '"':
			quoted = !quoted
		case quoted:
		case r == ',':
			out = append(out, strings.TrimSpace(list[start:i]))
			start = i + 1
		case r == ')':
			return append(out, strings.TrimSpace(list[start:i]))
		}
	}
	return out
}

// parametersKind is "storage parameters" when PostgreSQL changes every one
// of params ("k" or "k=v") under SHARE UPDATE EXCLUSIVE, which lets reads
// and writes go on (fillfactor, autovacuum and vacuum settings,
// parallel_workers), and "" otherwise (ACCESS EXCLUSIVE, as ALTER TABLE
// takes by default: user_catalog_table, ...).
func parametersKind(params []string) string {
	for _, p := range params {
		k, _, _ := strings.Cut(p, "=")
		if k != "fillfactor" && k != "parallel_workers" && k != "log_autovacuum_min_duration" && k != "toast_tuple_target" &&
			!strings.HasPrefix(k, "autovacuum_") && !strings.HasPrefix(k, "vacuum_") {
			return ""
		}
	}
	return "storage parameters"
}

// partitionOwnSteps plans an index or a constraint a partition has of its
// own (not attached to its parent's): dropped before atlas's statements
// unless its partition goes (it goes with it), created after them and
// after its partition. A changed one is dropped and created again.
func partitionOwnSteps(d Difference, desiredBy map[string]*Object, before, after []Step) ([]Step, []Step) {
	// A foreign key is dropped even when its partition goes: the table it
	// references may be dropped before its partition is.
	if o := d.Live; o != nil && (desiredBy[o.Deps[0]] != nil || partitionConstraintKind(o.Def) == "foreign key" && o.Kind == "partition constraint") {
		partition := strings.TrimPrefix(o.Deps[0], "partition ")
		if o.Kind == "partition index" {
			before = append(before, Step{SQL: "DROP INDEX " + o.Ident, Reason: "drops index " + o.Ident + " of partition " + partition,
				Drops: true, kind: "index", Table: o.Table})
		} else {
			before = append(before, Step{SQL: "ALTER TABLE " + partition + " DROP CONSTRAINT " + o.Ident, Reason: "drops constraint " + o.Ident + " of partition " + partition,
				Drops: true, kind: partitionConstraintKind(o.Def), Table: o.Table})
		}
	}
	o := d.Desired
	if o == nil {
		return before, after
	}
	partition := strings.TrimPrefix(o.Deps[0], "partition ")
	def, comment, commented := strings.Cut(o.Def, " comment=")
	if o.Kind == "partition index" {
		after = append(after, Step{SQL: def, Reason: "creates index " + o.Ident + " of partition " + partition,
			Validates: strings.HasPrefix(def, "CREATE UNIQUE "), kind: "index", Table: o.Table})
		if commented {
			after = append(after, Step{SQL: "COMMENT ON INDEX " + o.Ident + " IS " + quoteLiteral(comment), Reason: "sets the comment on index " + o.Ident + " of partition " + partition, kind: "index", Table: o.Table})
		}
		return before, after
	}
	// A generated name is left for PostgreSQL to generate again, as the
	// desired SQL did.
	q := "ALTER TABLE " + partition + " ADD "
	if !strings.HasPrefix(o.Name, "<auto>") {
		q += "CONSTRAINT " + o.Ident + " "
	}
	_, body, _ := strings.Cut(def, " ")
	return before, append(after, Step{SQL: q + body, Reason: "adds constraint " + o.Ident + " to partition " + partition + " (fails if a row breaks it)",
		Validates: true, kind: partitionConstraintKind(def), Table: o.Table})
}

// partitionConstraintKind is the kind whose locks and hazards a partition's
// constraint (its definition "c CHECK ...", "u UNIQUE ...", ...) has.
func partitionConstraintKind(def string) string {
	switch def[:2] {
	case "c ":
		return "check constraint"
	case "f ":
		return "foreign key"
	}
	return "unique constraint"
}

// partitionSteps plans a partition created or dropped (its columns,
// indexes and constraints are its parent's): dropped, with its rows,
// before atlas's statements unless its parent goes; created after them,
// once the parent exists. A default partition of the parent makes a
// creation check the default's rows.
func partitionSteps(d Difference, live []Object, desiredBy map[string]*Object, before, after []Step) ([]Step, []Step) {
	if o := d.Live; o != nil {
		if desiredBy[o.Deps[0]] != nil {
			before = append(before, Step{SQL: "DROP TABLE " + o.Ident, Reason: "drops partition " + o.Name + " of " + checkTable(*o) + " and its rows",
				Drops: true, kind: "partition", Table: o.Table})
		}
		return before, after
	}
	o := d.Desired
	withDefault := false
	for _, l := range live {
		if l.Kind == "partition" && l.Deps[0] == o.Deps[0] && strings.HasSuffix(strings.SplitN(l.Def, " PARTITION BY ", 2)[0], " DEFAULT") {
			withDefault = true
		}
	}
	return before, append(after, Step{SQL: "CREATE TABLE " + o.Ident + " " + o.Def, Reason: "creates partition " + o.Name + " of " + checkTable(*o),
		Validates: withDefault, kind: "partition", name: o.Ident, Table: o.Table})
}

// createAggregate writes CREATE AGGREGATE for an aggregate whose Def is
// "sfunc=F stype=T finalfunc=F initcond=V" (finalfunc "-" for none,
// initcond empty for none). What else an aggregate may declare (moving
// forms, combine and serial functions) is not in Def: an aggregate
// declaring it is created without, and the proof refuses the result.
func createAggregate(ident, def string) string {
	rest := strings.TrimPrefix(def, "sfunc=")
	sfunc, rest, _ := strings.Cut(rest, " stype=")
	stype, rest, _ := strings.Cut(rest, " finalfunc=")
	final, initcond, _ := strings.Cut(rest, " initcond=")
	q := "CREATE AGGREGATE " + ident + " (SFUNC = " + sfunc + ", STYPE = " + stype
	if final != "-" && final != "" {
		q += ", FINALFUNC = " + final
	}
	if initcond != "" {
		q += ", INITCOND = " + quoteLiteral(initcond)
	}
	return q + ")"
}

// pairSequences makes one difference of a sequence the two sides key
// apart: a serial's (keyed by its column, "owned by t.id") on one side and
// the same sequence declared on its own, or owned by another column, on the
// other (a serial become integer DEFAULT nextval('t_id_seq'), and back). It
// is one sequence whose owner changes, not one dropped and one created.
func pairSequences(diffs []Difference) []Difference {
	desiredOnly := map[string]int{}
	for i, d := range diffs {
		if d.Live == nil && d.Desired.Kind == "sequence" {
			desiredOnly[d.Desired.Ident] = i
		}
	}
	pairOf := map[int]int{} // live-only index -> desired-only index
	taken := map[int]bool{}
	for i, d := range diffs {
		if d.Desired != nil || d.Live.Kind != "sequence" {
			continue
		}
		if j, ok := desiredOnly[d.Live.Ident]; ok && !taken[j] {
			pairOf[i], taken[j] = j, true
		}
	}
	var out []Difference
	for i, d := range diffs {
		switch j, ok := pairOf[i]; {
		case ok:
			out = append(out, Difference{Live: d.Live, Desired: diffs[j].Desired})
		case !taken[i]:
			out = append(out, d)
		}
	}
	return out
}

// extensionUpdate moves an extension to the version the desired side has:
// the one it names, or the server's default when it names none. PostgreSQL
// refuses a version its packages have no update path to.
func extensionUpdate(o Object) Step {
	q := "ALTER EXTENSION " + o.Ident + " UPDATE"
	to := "the server's default version"
	if v, ok := strings.CutPrefix(o.Def, "version="); ok {
		q += " TO " + quoteLiteral(v)
		to = "version " + v
	}
	return Step{SQL: q, Reason: "updates extension " + o.Name + " to " + to, Validates: true, kind: "extension", name: o.Name}
}
