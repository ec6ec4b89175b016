package schema

import (
	"fmt"
	"maps"
	"slices"
	"strings"

	"pgregory.net/rapid"
)

// genExtras are the object classes of a managed schema beyond tables,
// columns, sequences and views that the pair generator draws: domains,
// composite and range types, a partitioned table with partitions of its
// own indexes and constraints, foreign keys (deferrable, NOT VALID),
// triggers and their function, policies and the RLS flags, grants, a
// materialized view, a procedure and an aggregate. Each is drawn present
// or not and edited by the kinds in extraEdits.
type genExtras struct {
	domainCheck string   // "": no domain posint; else the CHECK over VALUE
	composite   []string // attributes of type pair ("a integer"); nil: none
	rng         bool     // range type numr over numeric
	part        *genPart
	fks         map[string]genFK  // referencing table -> its key (id) to t0
	trigFn      int               // 0: no function trg_fn; 1 or 2: its body
	triggers    map[string]string // table -> the events its trigger fires on
	policies    map[string]string // table -> its policy's USING (RLS on)
	forceRLS    map[string]bool
	grants      map[string]string // table -> privileges granted to PUBLIC
	matview     bool              // mv over t0 with an index
	proc        int               // 0: no procedure pr; 1 or 2: its body
	agg         string            // "": no aggregate agg_sum; else INITCOND
}

// genPart is table p, partitioned by range on id, its partitions p_0
// (0 to 100, where the planted rows go), p_1, p_2 and p_def (DEFAULT).
type genPart struct {
	parts       []string // of "p_0", "p_1", "p_2", "p_def"
	vType       string
	parentIndex bool // p_k_idx ON p (k)
	ownIndex    bool // p_0_v_idx ON p_0 (v), p_0's alone
	ownCheck    bool // p_1_k_check on p_1 alone
	// What a partition has of its own beside its parent's: p.k's default,
	// p_1.k's own default, p_0.k's own NOT NULL, a comment on p_1.v, p_2's
	// replica identity and storage parameters.
	parentDefault, ownDefault, ownNotNull, ownComment bool
	identity, fillfactor                              string
}

type genFK struct {
	deferrable, notValid bool
	onDelete             string
}

var partBounds = map[string]string{
	"p_0": "FOR VALUES FROM (0) TO (100)", "p_1": "FOR VALUES FROM (100) TO (200)",
	"p_2": "FOR VALUES FROM (200) TO (300)", "p_def": "DEFAULT",
}

var extraTypes = map[string][]string{
	"posint": {"1", "-7", "40"},
	"numr":   {"[1,2)", "empty", "(3,4]"},
	"price":  {"1.25", "-3.00"},
	// A domain over posint, under a name that must be quoted.
	`"small id"`: {"1", "-7"},
	`"big id"`:   {"1", "-7"},
	"day":        {"2026-01-02", "1970-01-01"},
	"int":        {"1", "-7"},
	"day[]":      {"{2026-01-02}", "{}"},
	"serial":     {"1", "2"},
}

func init() {
	maps.Copy(genValues, extraTypes)
	genDefaults["posint"] = []string{"1"}
	genDefaults["numr"] = []string{"'empty'"}
	genChecks["posint"] = "%s > -1000"
	genChecks["numr"] = "%s <> '[5,6)'"
}

func (x genExtras) clone() genExtras {
	c := x
	c.composite = slices.Clone(x.composite)
	if x.part != nil {
		p := *x.part
		p.parts = slices.Clone(x.part.parts)
		c.part = &p
	}
	c.fks, c.triggers, c.policies = maps.Clone(x.fks), maps.Clone(x.triggers), maps.Clone(x.policies)
	c.forceRLS, c.grants = maps.Clone(x.forceRLS), maps.Clone(x.grants)
	return c
}

// extraTypesOK are the types of x a column may take.
func (x genExtras) typesOK() []string {
	var out []string
	if x.domainCheck != "" {
		out = append(out, "posint")
	}
	if x.rng {
		out = append(out, "numr")
	}
	return out
}

// drawExtras draws the classes of genExtras for a schema whose tables
// are drawn already (the types are drawn first by drawTypes).
func drawTypes(t *rapid.T, s *genSchema) {
	if rapid.IntRange(0, 2).Draw(t, "domain?") == 0 {
		s.x.domainCheck = "VALUE > -1000"
	}
	if rapid.IntRange(0, 3).Draw(t, "composite?") == 0 {
		s.x.composite = []string{"a integer", "b text"}
	}
	s.x.rng = rapid.IntRange(0, 3).Draw(t, "range?") == 0
}

func drawExtras(t *rapid.T, s *genSchema) {
	x := &s.x
	x.fks, x.triggers, x.policies, x.forceRLS, x.grants = map[string]genFK{}, map[string]string{}, map[string]string{}, map[string]bool{}, map[string]string{}
	if rapid.IntRange(0, 2).Draw(t, "partitioned?") == 0 {
		x.part = &genPart{parts: []string{"p_0"}, vType: rapid.SampledFrom(s.typesOK()).Draw(t, "v type")}
		for _, p := range []string{"p_1", "p_def"} {
			if rapid.Bool().Draw(t, p+"?") {
				x.part.parts = append(x.part.parts, p)
			}
		}
		x.part.parentIndex = rapid.Bool().Draw(t, "parent index")
		x.part.ownIndex = rapid.Bool().Draw(t, "own index")
		x.part.ownCheck = rapid.Bool().Draw(t, "own check")
	}
	for _, tb := range s.tables[1:] {
		if rapid.IntRange(0, 2).Draw(t, "fk?") == 0 {
			x.fks[tb.name] = drawFK(t)
		}
	}
	if rapid.IntRange(0, 2).Draw(t, "trigger?") == 0 {
		x.trigFn = 1
		x.triggers[s.tables[0].name] = "INSERT"
	}
	if rapid.IntRange(0, 3).Draw(t, "policy?") == 0 {
		x.policies[s.tables[0].name] = "id > 0"
	}
	if rapid.IntRange(0, 3).Draw(t, "grant?") == 0 {
		x.grants[s.tables[0].name] = "SELECT"
	}
	x.matview = rapid.IntRange(0, 3).Draw(t, "matview?") == 0
	if rapid.IntRange(0, 3).Draw(t, "procedure?") == 0 {
		x.proc = 1
	}
	if rapid.IntRange(0, 3).Draw(t, "aggregate?") == 0 {
		x.agg = "0"
	}
}

func drawFK(t *rapid.T) genFK {
	return genFK{
		deferrable: rapid.Bool().Draw(t, "deferrable"),
		notValid:   rapid.IntRange(0, 2).Draw(t, "not valid?") == 0,
		onDelete:   rapid.SampledFrom([]string{"", "CASCADE", "SET NULL", "RESTRICT"}).Draw(t, "on delete"),
	}
}

var extraEdits = []string{
	"domain", "domain check", "composite", "range", "partition", "partition index", "partition own index",
	"partition own check", "partition column", "partition own column", "partition own property", "fk", "fk validity", "fk deferrable", "trigger", "trigger function",
	"policy", "force rls", "grant", "matview", "procedure", "aggregate", "sequence options",
}

// editExtra makes an edit of kind on table tb's side of x (or x's own
// objects); it may do nothing where the kind does not apply.
func editExtra(t *rapid.T, s *genSchema, tb *genTable, kind string, n int) {
	x := &s.x
	switch kind {
	case "domain":
		switch {
		case x.domainCheck == "":
			x.domainCheck = "VALUE > -1000"
		case !s.typeUsed("posint"):
			x.domainCheck = ""
		}
	case "domain check":
		if x.domainCheck != "" {
			// VALUE > 0 fails on a planted -7: the apply fails, and must
			// have said it may.
			x.domainCheck = rapid.SampledFrom([]string{"VALUE > -1000", "VALUE > -5000", "VALUE > 0", "VALUE <> 13"}).Draw(t, "domain check")
		}
	case "composite":
		switch {
		case x.composite == nil:
			x.composite = []string{"a integer", "b text"}
		case rapid.Bool().Draw(t, "drop composite"):
			x.composite = nil
		case len(x.composite) > 1 && rapid.Bool().Draw(t, "drop attribute"):
			x.composite = x.composite[:len(x.composite)-1]
		case rapid.Bool().Draw(t, "retype attribute"):
			x.composite[0] = "a " + rapid.SampledFrom([]string{"integer", "bigint", "text"}).Draw(t, "attribute type")
		default:
			x.composite = append(x.composite, fmt.Sprintf("x%d date", n))
		}
	case "range":
		if !x.rng || !s.typeUsed("numr") {
			x.rng = !x.rng
		}
	case "partition":
		switch {
		case x.part == nil:
			x.part = &genPart{parts: []string{"p_0"}, vType: "text"}
		default:
			p := rapid.SampledFrom([]string{"p_0", "p_1", "p_2", "p_def"}).Draw(t, "partition")
			if i := slices.Index(x.part.parts, p); i >= 0 {
				// p_0 holds the planted rows: dropping it loses them.
				x.part.parts = slices.Delete(x.part.parts, i, i+1)
			} else if p != "p_0" {
				x.part.parts = append(x.part.parts, p)
			}
		}
	case "partition index":
		if x.part != nil {
			x.part.parentIndex = !x.part.parentIndex
		}
	case "partition own index":
		if x.part != nil {
			x.part.ownIndex = !x.part.ownIndex
		}
	case "partition own check":
		if x.part != nil {
			x.part.ownCheck = !x.part.ownCheck
		}
	case "partition column":
		if x.part != nil {
			x.part.vType = rapid.SampledFrom(s.typesOK()).Draw(t, "new v type")
		}
	case "partition own column":
		if p := x.part; p != nil {
			switch rapid.IntRange(0, 3).Draw(t, "partition column property") {
			case 0:
				p.parentDefault = !p.parentDefault
			case 1:
				p.ownDefault = !p.ownDefault
			case 2:
				p.ownNotNull = !p.ownNotNull
			default:
				p.ownComment = !p.ownComment
			}
		}
	case "partition own property":
		if p := x.part; p != nil {
			if rapid.Bool().Draw(t, "identity?") {
				p.identity = rapid.SampledFrom([]string{"", "FULL", "NOTHING"}).Draw(t, "identity")
			} else {
				p.fillfactor = rapid.SampledFrom([]string{"", "70", "90"}).Draw(t, "fillfactor")
			}
		}
	case "fk":
		if tb.name != "t0" && s.table("t0") != nil {
			if _, ok := x.fks[tb.name]; ok {
				delete(x.fks, tb.name)
			} else {
				x.fks[tb.name] = drawFK(t)
			}
		}
	case "fk validity", "fk deferrable":
		if fk, ok := x.fks[tb.name]; ok {
			if kind == "fk validity" {
				fk.notValid = !fk.notValid
			} else {
				fk.deferrable = !fk.deferrable
			}
			x.fks[tb.name] = fk
		}
	case "trigger":
		if _, ok := x.triggers[tb.name]; ok && rapid.Bool().Draw(t, "drop trigger") {
			delete(x.triggers, tb.name)
		} else {
			x.triggers[tb.name] = rapid.SampledFrom([]string{"INSERT", "INSERT OR UPDATE", "UPDATE"}).Draw(t, "events")
			if x.trigFn == 0 {
				x.trigFn = 1
			}
		}
	case "trigger function":
		switch {
		case x.trigFn == 0:
			x.trigFn = 1
		case len(x.triggers) == 0 && rapid.Bool().Draw(t, "drop function"):
			x.trigFn = 0
		default:
			x.trigFn = 3 - x.trigFn
		}
	case "policy":
		if _, ok := x.policies[tb.name]; ok && rapid.Bool().Draw(t, "drop policy") {
			delete(x.policies, tb.name)
		} else {
			x.policies[tb.name] = rapid.SampledFrom([]string{"id > 0", "id < 1000000", "true"}).Draw(t, "using")
		}
	case "force rls":
		x.forceRLS[tb.name] = !x.forceRLS[tb.name]
	case "grant":
		if _, ok := x.grants[tb.name]; ok && rapid.Bool().Draw(t, "revoke") {
			delete(x.grants, tb.name)
		} else {
			x.grants[tb.name] = rapid.SampledFrom([]string{"SELECT", "SELECT, INSERT", "UPDATE"}).Draw(t, "privileges")
		}
	case "matview":
		if x.matview || s.table("t0") != nil {
			x.matview = !x.matview
		}
	case "procedure":
		x.proc = rapid.IntRange(0, 2).Draw(t, "procedure body")
	case "aggregate":
		x.agg = rapid.SampledFrom([]string{"", "0", "1"}).Draw(t, "initcond")
	case "sequence options":
		if len(s.seqs) > 0 {
			q := &s.seqs[0]
			q.typ = rapid.SampledFrom([]string{"", "smallint", "bigint", "integer"}).Draw(t, "sequence type")
			q.cycle = rapid.Bool().Draw(t, "cycle")
			q.cache = rapid.SampledFrom([]int{0, 1, 10}).Draw(t, "cache")
		}
	}
}

// typeUsed says whether a column of s has type typ.
func (s *genSchema) typeUsed(typ string) bool {
	for _, t := range s.tables {
		for _, c := range t.cols {
			if c.typ == typ {
				return true
			}
		}
	}
	return s.x.part != nil && s.x.part.vType == typ
}

// usesTable says whether an object of x needs table name to stay.
func (x genExtras) usesTable(name string) bool {
	return name == "t0" && (len(x.fks) > 0 || x.matview)
}

// dropTable forgets what of x hangs on table name, which is dropped.
func (x genExtras) dropTable(name string) {
	delete(x.fks, name)
	delete(x.triggers, name)
	delete(x.policies, name)
	delete(x.forceRLS, name)
	delete(x.grants, name)
}

// typesSQL declares x's types, before the tables that use them.
func (x genExtras) typesSQL(b *strings.Builder) {
	if x.domainCheck != "" {
		fmt.Fprintf(b, "CREATE DOMAIN posint AS integer CHECK (%s);\n", x.domainCheck)
	}
	if x.composite != nil {
		fmt.Fprintf(b, "CREATE TYPE pair AS (%s);\n", strings.Join(x.composite, ", "))
	}
	if x.rng {
		b.WriteString("CREATE TYPE numr AS RANGE (subtype = numeric);\n")
	}
}

// sql declares the rest of x, after the tables, sequences and views.
func (x genExtras) sql(b *strings.Builder, s *genSchema) {
	if p := x.part; p != nil {
		fmt.Fprintf(b, "CREATE TABLE p (id integer NOT NULL, k integer, v %s, PRIMARY KEY (id)) PARTITION BY RANGE (id);\n", p.vType)
		for _, name := range p.parts {
			fmt.Fprintf(b, "CREATE TABLE %s PARTITION OF p %s;\n", name, partBounds[name])
		}
		if p.parentIndex {
			b.WriteString("CREATE INDEX p_k_idx ON p (k);\n")
		}
		if p.ownIndex && slices.Contains(p.parts, "p_0") {
			b.WriteString("CREATE INDEX p_0_v_idx ON p_0 (v);\n")
		}
		if p.ownCheck && slices.Contains(p.parts, "p_1") {
			b.WriteString("ALTER TABLE p_1 ADD CONSTRAINT p_1_k_check CHECK (k > -1000);\n")
		}
		if p.parentDefault {
			b.WriteString("ALTER TABLE p ALTER COLUMN k SET DEFAULT 1;\n")
		}
		if p.ownDefault && slices.Contains(p.parts, "p_1") {
			b.WriteString("ALTER TABLE p_1 ALTER COLUMN k SET DEFAULT 7;\n")
		}
		if p.ownNotNull {
			// p_0 holds the planted rows, one with k NULL: SET NOT NULL
			// fails on it, as the plan marks.
			b.WriteString("ALTER TABLE p_0 ALTER COLUMN k SET NOT NULL;\n")
		}
		if p.ownComment && slices.Contains(p.parts, "p_1") {
			b.WriteString("COMMENT ON COLUMN p_1.v IS 'p_1''s own';\n")
		}
		if slices.Contains(p.parts, "p_2") {
			if p.identity != "" {
				fmt.Fprintf(b, "ALTER TABLE p_2 REPLICA IDENTITY %s;\n", p.identity)
			}
			if p.fillfactor != "" {
				fmt.Fprintf(b, "ALTER TABLE p_2 SET (fillfactor = %s);\n", p.fillfactor)
			}
		}
	}
	for _, name := range slices.Sorted(maps.Keys(x.fks)) {
		fk := x.fks[name]
		fmt.Fprintf(b, "ALTER TABLE %s ADD CONSTRAINT %s_fk FOREIGN KEY (id) REFERENCES t0 (id)", name, name)
		if fk.onDelete != "" {
			fmt.Fprintf(b, " ON DELETE %s", fk.onDelete)
		}
		if fk.deferrable {
			b.WriteString(" DEFERRABLE INITIALLY DEFERRED")
		}
		if fk.notValid {
			b.WriteString(" NOT VALID")
		}
		b.WriteString(";\n")
	}
	switch x.trigFn {
	case 1:
		b.WriteString("CREATE FUNCTION trg_fn() RETURNS trigger LANGUAGE plpgsql AS $$BEGIN RETURN NEW; END$$;\n")
	case 2:
		b.WriteString("CREATE FUNCTION trg_fn() RETURNS trigger LANGUAGE plpgsql AS $$BEGIN NEW.id := NEW.id; RETURN NEW; END$$;\n")
	}
	for _, name := range slices.Sorted(maps.Keys(x.triggers)) {
		fmt.Fprintf(b, "CREATE TRIGGER %s_trg BEFORE %s ON %s FOR EACH ROW EXECUTE FUNCTION trg_fn();\n", name, x.triggers[name], name)
	}
	for _, name := range slices.Sorted(maps.Keys(x.policies)) {
		fmt.Fprintf(b, "ALTER TABLE %s ENABLE ROW LEVEL SECURITY;\nCREATE POLICY %s_p ON %s USING (%s);\n", name, name, name, x.policies[name])
	}
	for _, name := range slices.Sorted(maps.Keys(x.forceRLS)) {
		if x.forceRLS[name] {
			fmt.Fprintf(b, "ALTER TABLE %s FORCE ROW LEVEL SECURITY;\n", name)
		}
	}
	for _, name := range slices.Sorted(maps.Keys(x.grants)) {
		fmt.Fprintf(b, "GRANT %s ON %s TO PUBLIC;\n", x.grants[name], name)
	}
	if x.matview && s.table("t0") != nil {
		b.WriteString("CREATE MATERIALIZED VIEW mv AS SELECT id FROM t0;\nCREATE INDEX mv_id_idx ON mv (id);\n")
	}
	switch x.proc {
	case 1:
		b.WriteString("CREATE PROCEDURE pr(a integer) LANGUAGE sql AS $$ SELECT a $$;\n")
	case 2:
		b.WriteString("CREATE PROCEDURE pr(a integer) LANGUAGE sql AS $$ SELECT a + 1 $$;\n")
	}
	if x.agg != "" {
		fmt.Fprintf(b, "CREATE AGGREGATE agg_sum(integer) (SFUNC = int4pl, STYPE = integer, INITCOND = '%s');\n", x.agg)
	}
}
