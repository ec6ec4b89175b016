package schema

import (
	"context"
	"database/sql"
	"fmt"
	"github.com/jackc/pgx/v5"
	"maps"
	"slices"
	"sort"
	"strings"
	"testing"
	"time"

	"pgregory.net/rapid"

	"ptah.run/operator/internal/testenv"
	"ptah.run/operator/operator/catalogproof"
	"ptah.run/operator/operator/database"
	"ptah.run/operator/operator/report"
)

// A generated schema: an enum, tables keyed by id with columns, checks,
// indexes and comments, standalone sequences and views. before and after
// are two of them, after drawn from before by a few edits, so a pair
// shares most of its objects as real schema changes do.
type genSchema struct {
	enum   []string // values of type mood; nil: no enum
	tables []*genTable
	seqs   []genSeq
	views  []genView
	x      genExtras
}

type genTable struct {
	name   string
	idKind string // "int", "serial", "identity"
	// g is column g's kind: "" (none), "stored" (GENERATED ALWAYS AS
	// (id * 2) STORED) or "plain" (a bigint).
	g           string
	fillfactor  int // 0: the default
	replicaFull bool
	// unlogged and deferrableKey are never set on t0, which foreign
	// keys reference (PostgreSQL refuses a key of a permanent table on an
	// unlogged one, and any on a deferrable key).
	unlogged, deferrableKey bool
	cols                    []genCol
	checks                  []string // column names with a check on them
	indexes                 []genIndex
	comment                 string
}

type genCol struct {
	name, typ, def, comment string
	collate                 string // "C" or "POSIX" on a string type, or ""
	notNull                 bool
}

type genIndex struct {
	cols            []string
	unique, partial bool
}

type genSeq struct {
	name      string
	increment int
	ownedBy   string // "t.c" or ""
	typ       string // AS typ, or "" for the default
	cycle     bool
	cache     int // 0: the default
}

type genView struct {
	name, table string
	cols        []string
}

// genTypes are the column types a generated column may have; planted
// values are drawn from genValues for them, some fitting every type they
// may become and some not.
var genTypes = []string{"integer", "bigint", "smallint", "text", "character varying(20)", "character varying(4)", "numeric(10,2)", "numeric(6,1)", "boolean", "timestamp with time zone", "date", "jsonb", "mood"}

var genValues = map[string][]string{
	"integer":                  {"1", "-7", "40000", "2000000000"},
	"bigint":                   {"1", "9000000000", "-3"},
	"smallint":                 {"1", "-12", "300"},
	"text":                     {"abc", "12", "a much longer text", "true", "2026-01-02"},
	"character varying(20)":    {"abc", "12", "0.5"},
	"character varying(4)":     {"ab", "7", "t"},
	"numeric(10,2)":            {"1.25", "12345.67", "-3.00"},
	"numeric(6,1)":             {"1.5", "-2.0", "99999.9"},
	"boolean":                  {"true", "false"},
	"timestamp with time zone": {"2026-01-02 03:04:05.678+00", "1999-12-31 23:59:59+00"},
	"date":                     {"2026-01-02", "1970-01-01"},
	"jsonb":                    {`{"a": 1}`, `[1, 2]`, `"s"`},
	"mood":                     {"sad", "ok"},
	"mood[]":                   {"{sad,ok}", "{ok}"},
	`"Mood"`:                   {"sad", "happy"},
}

// genDefaults are constant defaults per type (none evaluates anything).
var genDefaults = map[string][]string{
	"integer": {"0", "42"}, "bigint": {"0"}, "smallint": {"1"}, "text": {"''", "'none'"},
	"character varying(20)": {"'x'"}, "character varying(4)": {"'y'"}, "numeric(10,2)": {"0"}, "numeric(6,1)": {"1.5"},
	"boolean": {"false", "true"}, "timestamp with time zone": {"'2026-01-01 00:00:00+00'"}, "date": {"'2026-01-01'"},
	"jsonb": {"'{}'"}, "mood": {"'ok'"},
}

// genChecks are checks that hold for every planted value of the type.
var genChecks = map[string]string{
	"integer": "%s > -1000", "bigint": "%s > -1000", "smallint": "%s > -1000", "text": "length(%s) < 100",
	"character varying(20)": "length(%s) < 100", "character varying(4)": "%s <> 'zzzz'", "numeric(10,2)": "%s < 1000000",
	"numeric(6,1)": "%s > -99999", "boolean": "%s IS NOT NULL OR true", "timestamp with time zone": "%s > '1900-01-01'",
	"date": "%s > '1900-01-01'", "jsonb": "%s <> 'null'", "mood": "%s <> 'happy'",
}

func (s *genSchema) clone() *genSchema {
	c := &genSchema{enum: slices.Clone(s.enum), seqs: slices.Clone(s.seqs), x: s.x.clone()}
	for _, v := range s.views {
		c.views = append(c.views, genView{v.name, v.table, slices.Clone(v.cols)})
	}
	for _, t := range s.tables {
		ct := *t
		ct.cols = slices.Clone(t.cols)
		ct.checks = slices.Clone(t.checks)
		ct.indexes = nil
		for _, i := range t.indexes {
			ct.indexes = append(ct.indexes, genIndex{slices.Clone(i.cols), i.unique, i.partial})
		}
		c.tables = append(c.tables, &ct)
	}
	return c
}

func (t *genTable) col(name string) *genCol {
	for i := range t.cols {
		if t.cols[i].name == name {
			return &t.cols[i]
		}
	}
	return nil
}

func (s *genSchema) table(name string) *genTable {
	for _, t := range s.tables {
		if t.name == name {
			return t
		}
	}
	return nil
}

// typesOK is the types a column may have in s.
func (s *genSchema) typesOK() []string {
	types := genTypes
	if s.enum == nil {
		types = genTypes[:len(genTypes)-1]
	}
	return append(slices.Clone(types), s.x.typesOK()...)
}

func drawCol(t *rapid.T, s *genSchema, name string) genCol {
	c := genCol{name: name, typ: rapid.SampledFrom(s.typesOK()).Draw(t, "type")}
	if rapid.IntRange(0, 2).Draw(t, "default?") == 0 {
		c.def = rapid.SampledFrom(genDefaults[c.typ]).Draw(t, "default")
	}
	c.notNull = c.def != "" && rapid.Bool().Draw(t, "not null")
	if collatable(c.typ) {
		c.collate = rapid.SampledFrom([]string{"", "", "C", "POSIX"}).Draw(t, "collation")
	}
	if rapid.IntRange(0, 4).Draw(t, "comment?") == 0 {
		c.comment = "column " + name
	}
	return c
}

func collatable(typ string) bool {
	return typ == "text" || strings.HasPrefix(typ, "character varying")
}

func drawTable(t *rapid.T, s *genSchema, name string) *genTable {
	tb := &genTable{name: name, idKind: rapid.SampledFrom([]string{"int", "serial", "identity"}).Draw(t, "id")}
	for i := range rapid.IntRange(1, 3).Draw(t, "columns") {
		tb.cols = append(tb.cols, drawCol(t, s, fmt.Sprintf("c%d", i)))
	}
	if rapid.IntRange(0, 2).Draw(t, "check?") == 0 && (tb.cols[0].typ != "mood" || slices.Contains(s.enum, "happy")) {
		tb.checks = []string{tb.cols[0].name}
	}
	if rapid.Bool().Draw(t, "index?") {
		tb.indexes = append(tb.indexes, genIndex{cols: []string{rapid.SampledFrom(tb.colNames()).Draw(t, "index column")}, partial: rapid.Bool().Draw(t, "partial")})
	}
	if rapid.IntRange(0, 3).Draw(t, "table comment?") == 0 {
		tb.comment = "table " + name
	}
	tb.g = rapid.SampledFrom([]string{"", "", "stored", "plain"}).Draw(t, "g")
	tb.fillfactor = rapid.SampledFrom([]int{0, 0, 70}).Draw(t, "fillfactor")
	tb.replicaFull = rapid.IntRange(0, 3).Draw(t, "replica identity full?") == 0
	return tb
}

func (t *genTable) colNames() []string {
	var out []string
	for _, c := range t.cols {
		out = append(out, c.name)
	}
	return out
}

func drawSchema(t *rapid.T) *genSchema {
	s := &genSchema{}
	if rapid.Bool().Draw(t, "enum?") {
		s.enum = []string{"sad", "ok", "happy"}
	}
	drawTypes(t, s)
	for i := range rapid.IntRange(1, 3).Draw(t, "tables") {
		s.tables = append(s.tables, drawTable(t, s, fmt.Sprintf("t%d", i)))
	}
	if rapid.IntRange(0, 2).Draw(t, "sequence?") == 0 {
		s.seqs = append(s.seqs, genSeq{name: "s0", increment: 1})
	}
	if rapid.IntRange(0, 2).Draw(t, "view?") == 0 {
		tb := s.tables[0]
		s.views = append(s.views, genView{name: "v0", table: tb.name, cols: []string{"id", tb.cols[0].name}})
	}
	drawExtras(t, s)
	return s
}

// edit changes s by one edit of a kind drawn; it may do nothing when the
// kind does not apply.
func edit(t *rapid.T, s *genSchema, n int) string {
	tb := rapid.SampledFrom(s.tables).Draw(t, "table")
	kind := rapid.SampledFrom(append([]string{
		"add table", "drop table", "add column", "drop column", "retype column", "toggle not null",
		"change default", "toggle check", "toggle index", "toggle unique", "toggle comment", "id kind",
		"enum add value", "enum drop value", "enum reorder", "sequence", "owned by", "view", "rename column",
		"collation", "generated", "fillfactor", "replica identity", "unlogged", "deferrable key",
	}, extraEdits...)).Draw(t, "edit")
	cname := rapid.SampledFrom(tb.colNames()).Draw(t, "column")
	c := tb.col(cname)
	switch kind {
	case "add table":
		s.tables = append(s.tables, drawTable(t, s, fmt.Sprintf("n%d", n)))
	case "drop table":
		if len(s.tables) > 1 && !s.uses(tb.name, "") && !s.x.usesTable(tb.name) {
			s.tables = slices.DeleteFunc(s.tables, func(x *genTable) bool { return x == tb })
			s.x.dropTable(tb.name)
		}
	case "add column":
		nc := drawCol(t, s, fmt.Sprintf("a%d", n))
		tb.cols = append(tb.cols, nc)
	case "drop column", "rename column":
		if len(tb.cols) > 1 && !s.uses(tb.name, cname) {
			old := *c
			tb.dropCol(cname)
			if kind == "rename column" {
				old.name = fmt.Sprintf("r%d", n)
				tb.cols = append(tb.cols, old)
			}
		}
	case "retype column":
		if !s.uses(tb.name, cname) {
			c.typ = rapid.SampledFrom(s.typesOK()).Draw(t, "new type")
			c.def = ""
			c.collate = ""
			c.notNull = false
			tb.checks = slices.DeleteFunc(tb.checks, func(x string) bool { return x == cname })
		}
	case "toggle not null":
		c.notNull = !c.notNull
		if c.notNull && c.def == "" {
			c.def = genDefaults[c.typ][0]
		}
	case "change default":
		if !c.notNull {
			c.def = rapid.SampledFrom(append([]string{""}, genDefaults[c.typ]...)).Draw(t, "new default")
		}
	case "toggle check":
		if slices.Contains(tb.checks, cname) {
			tb.checks = slices.DeleteFunc(tb.checks, func(x string) bool { return x == cname })
		} else if c.typ != "mood" || slices.Contains(s.enum, "happy") {
			tb.checks = append(tb.checks, cname)
		}
	case "toggle index", "toggle unique":
		i := slices.IndexFunc(tb.indexes, func(i genIndex) bool { return slices.Equal(i.cols, []string{cname}) })
		switch {
		case i < 0:
			tb.indexes = append(tb.indexes, genIndex{cols: []string{cname}, unique: kind == "toggle unique", partial: rapid.Bool().Draw(t, "partial")})
		case kind == "toggle unique":
			tb.indexes[i].unique = !tb.indexes[i].unique
		default:
			tb.indexes = slices.Delete(tb.indexes, i, i+1)
		}
	case "toggle comment":
		if c.comment == "" {
			c.comment = fmt.Sprintf("edited %d", n)
		} else {
			c.comment = ""
		}
	case "collation":
		if collatable(c.typ) {
			c.collate = rapid.SampledFrom([]string{"", "C", "POSIX"}).Draw(t, "new collation")
		}
	case "generated":
		tb.g = rapid.SampledFrom([]string{"", "stored", "plain"}).Draw(t, "new g")
	case "fillfactor":
		tb.fillfactor = rapid.SampledFrom([]int{0, 50, 70}).Draw(t, "new fillfactor")
	case "replica identity":
		tb.replicaFull = !tb.replicaFull
	case "unlogged":
		tb.unlogged = !tb.unlogged && tb.name != "t0"
	case "deferrable key":
		tb.deferrableKey = !tb.deferrableKey && tb.name != "t0"
	case "id kind":
		tb.idKind = rapid.SampledFrom([]string{"int", "serial", "identity"}).Draw(t, "new id")
	case "enum add value":
		if s.enum != nil {
			at := rapid.IntRange(0, len(s.enum)).Draw(t, "at")
			v := fmt.Sprintf("e%d", n)
			s.enum = slices.Insert(s.enum, at, v)
			if c.typ == "mood" && rapid.Bool().Draw(t, "default to the new value") {
				// Used in the plan that adds it.
				c.def = "'" + v + "'"
			}
		}
	case "enum drop value":
		if s.enum != nil && len(s.enum) > 2 {
			// "sad" and "ok" are planted and used by defaults; "happy" by
			// checks. Removing a value makes the enum again (enumRecreation).
			i := rapid.IntRange(0, len(s.enum)-1).Draw(t, "drop at")
			v := s.enum[i]
			if !slices.Contains([]string{"sad", "ok"}, v) && !s.defaultsTo("'"+v+"'") && (v != "happy" || !s.checksType("mood")) {
				s.enum = slices.Delete(s.enum, i, i+1)
			}
		}
	case "enum reorder":
		if s.enum != nil {
			i := rapid.IntRange(0, len(s.enum)-1).Draw(t, "swap")
			j := rapid.IntRange(0, len(s.enum)-1).Draw(t, "with")
			s.enum[i], s.enum[j] = s.enum[j], s.enum[i]
		}
	case "sequence":
		if len(s.seqs) == 0 {
			s.seqs = append(s.seqs, genSeq{name: fmt.Sprintf("s%d", n), increment: 1})
		} else if rapid.Bool().Draw(t, "drop sequence") {
			s.seqs = s.seqs[1:]
		} else {
			s.seqs[0].increment = rapid.IntRange(1, 5).Draw(t, "increment")
		}
	case "owned by":
		if len(s.seqs) > 0 {
			if s.seqs[0].ownedBy != "" {
				s.seqs[0].ownedBy = ""
			} else {
				s.seqs[0].ownedBy = tb.name + "." + cname
			}
		}
	case "view":
		switch {
		case len(s.views) > 0 && rapid.Bool().Draw(t, "drop view"):
			s.views = nil
		case len(s.views) > 0:
			v := &s.views[0]
			if vt := s.table(v.table); vt != nil && !slices.Contains(v.cols, cname) && v.table == tb.name {
				v.cols = append(v.cols, cname)
			}
		default:
			s.views = append(s.views, genView{name: fmt.Sprintf("v%d", n), table: tb.name, cols: []string{"id", cname}})
		}
	default:
		editExtra(t, s, tb, kind, n)
	}
	return kind
}

// uses says whether a view or a sequence's OWNED BY names table (and
// column col, if not "").
func (s *genSchema) uses(table, col string) bool {
	for _, v := range s.views {
		if v.table == table && (col == "" || slices.Contains(v.cols, col)) {
			return true
		}
	}
	for _, q := range s.seqs {
		if q.ownedBy != "" && (q.ownedBy == table+"."+col || col == "" && strings.HasPrefix(q.ownedBy, table+".")) {
			return true
		}
	}
	return false
}

// defaultsTo says whether a column's default is def.
func (s *genSchema) defaultsTo(def string) bool {
	for _, t := range s.tables {
		for _, c := range t.cols {
			if c.def == def {
				return true
			}
		}
	}
	return false
}

// checksType says whether a check is on a column of type typ.
func (s *genSchema) checksType(typ string) bool {
	for _, t := range s.tables {
		for _, ch := range t.checks {
			if c := t.col(ch); c != nil && c.typ == typ {
				return true
			}
		}
	}
	return false
}

func (t *genTable) dropCol(name string) {
	t.cols = slices.DeleteFunc(t.cols, func(c genCol) bool { return c.name == name })
	t.checks = slices.DeleteFunc(t.checks, func(x string) bool { return x == name })
	t.indexes = slices.DeleteFunc(t.indexes, func(i genIndex) bool { return slices.Contains(i.cols, name) })
}

// sql is s as a desired file.
func (s *genSchema) sql() string {
	var b strings.Builder
	if s.enum != nil {
		fmt.Fprintf(&b, "CREATE TYPE mood AS ENUM ('%s');\n", strings.Join(s.enum, "', '"))
	}
	s.x.typesSQL(&b)
	for _, t := range s.tables {
		id := map[string]string{"int": "integer NOT NULL", "serial": "serial", "identity": "integer GENERATED BY DEFAULT AS IDENTITY"}[t.idKind]
		unlogged, key := "", "PRIMARY KEY"
		if t.unlogged {
			unlogged = "UNLOGGED "
		}
		if t.deferrableKey {
			key += " DEFERRABLE INITIALLY DEFERRED"
		}
		fmt.Fprintf(&b, "CREATE %sTABLE %s (\n  id %s %s", unlogged, t.name, id, key)
		for _, c := range t.cols {
			fmt.Fprintf(&b, ",\n  %s %s", c.name, c.typ)
			if c.collate != "" {
				fmt.Fprintf(&b, " COLLATE \"%s\"", c.collate)
			}
			if c.def != "" {
				fmt.Fprintf(&b, " DEFAULT %s", c.def)
			}
			if c.notNull {
				b.WriteString(" NOT NULL")
			}
		}
		switch t.g {
		case "stored":
			b.WriteString(",\n  g bigint GENERATED ALWAYS AS (id * 2) STORED")
		case "plain":
			b.WriteString(",\n  g bigint")
		}
		for _, ch := range t.checks {
			if c := t.col(ch); c != nil {
				fmt.Fprintf(&b, ",\n  CHECK (%s)", fmt.Sprintf(genChecks[c.typ], ch))
			}
		}
		b.WriteString("\n)")
		if t.fillfactor > 0 {
			fmt.Fprintf(&b, " WITH (fillfactor = %d)", t.fillfactor)
		}
		b.WriteString(";\n")
		if t.replicaFull {
			fmt.Fprintf(&b, "ALTER TABLE %s REPLICA IDENTITY FULL;\n", t.name)
		}
		for _, i := range t.indexes {
			u := ""
			if i.unique {
				u = "UNIQUE "
			}
			fmt.Fprintf(&b, "CREATE %sINDEX %s_%s_idx ON %s (%s)", u, t.name, strings.Join(i.cols, "_"), t.name, strings.Join(i.cols, ", "))
			if i.partial {
				fmt.Fprintf(&b, " WHERE %s IS NOT NULL", i.cols[0])
			}
			b.WriteString(";\n")
		}
		if t.comment != "" {
			fmt.Fprintf(&b, "COMMENT ON TABLE %s IS '%s';\n", t.name, t.comment)
		}
		for _, c := range t.cols {
			if c.comment != "" {
				fmt.Fprintf(&b, "COMMENT ON COLUMN %s.%s IS '%s';\n", t.name, c.name, c.comment)
			}
		}
	}
	for _, q := range s.seqs {
		fmt.Fprintf(&b, "CREATE SEQUENCE %s", q.name)
		if q.typ != "" {
			fmt.Fprintf(&b, " AS %s", q.typ)
		}
		fmt.Fprintf(&b, " INCREMENT BY %d", q.increment)
		if q.cache > 0 {
			fmt.Fprintf(&b, " CACHE %d", q.cache)
		}
		if q.cycle {
			b.WriteString(" CYCLE")
		}
		if q.ownedBy != "" {
			fmt.Fprintf(&b, " OWNED BY %s", q.ownedBy)
		}
		b.WriteString(";\n")
	}
	for _, v := range s.views {
		fmt.Fprintf(&b, "CREATE VIEW %s AS SELECT %s FROM %s;\n", v.name, strings.Join(v.cols, ", "), v.table)
	}
	s.x.sql(&b, s)
	return b.String()
}

// plant inserts three rows into every table of the database, values drawn
// from genValues by each column's type (NULL in the third row where the
// column takes one), and moves every sequence to 17, so a lost row, value
// or sequence position shows.
func plant(t tb, db *database.DB) {
	rows, err := db.Query(`SELECT c.relname, a.attname, format_type(a.atttypid, a.atttypmod), a.attnotnull
		FROM pg_attribute a JOIN pg_class c ON c.oid = a.attrelid
		WHERE c.relnamespace = 'public'::regnamespace AND c.relkind IN ('r', 'p') AND NOT c.relispartition AND a.attnum > 0 AND NOT a.attisdropped AND a.attname <> 'id' AND a.attgenerated = ''
		ORDER BY c.relname, a.attnum`)
	if err != nil {
		t.Fatalf("list columns: %v", err)
	}
	type col struct {
		name, typ string
		notNull   bool
	}
	tables := map[string][]col{}
	var names []string
	// A table with no column to plant (its id and generated ones) gets
	// rows too: a generated value lost is lost.
	// A partitioned table's rows go in through it, to its partition.
	all, err := db.Query(`SELECT relname FROM pg_class WHERE relnamespace = 'public'::regnamespace AND relkind IN ('r', 'p') AND NOT relispartition ORDER BY relname`)
	if err != nil {
		t.Fatalf("list tables: %v", err)
	}
	for all.Next() {
		var tbl string
		if err := all.Scan(&tbl); err != nil {
			t.Fatal(err)
		}
		tables[tbl] = nil
		names = append(names, tbl)
	}
	all.Close()
	for rows.Next() {
		var tbl string
		var c col
		if err := rows.Scan(&tbl, &c.name, &c.typ, &c.notNull); err != nil {
			t.Fatal(err)
		}
		if _, ok := tables[tbl]; !ok {
			names = append(names, tbl)
		}
		tables[tbl] = append(tables[tbl], c)
	}
	rows.Close()
	for _, tbl := range names {
		for r := 1; r <= 3; r++ {
			cols, vals := []string{"id"}, []string{fmt.Sprint(r)}
			for _, c := range tables[tbl] {
				vs, ok := genValues[c.typ]
				if !ok {
					t.Fatalf("no planted values for type %s (%s.%s)", c.typ, tbl, c.name)
				}
				if !c.notNull && r == 3 {
					continue // NULL
				}
				cols, vals = append(cols, fmt.Sprintf("%q", c.name)), append(vals, "'"+strings.ReplaceAll(vs[(r+len(c.name))%len(vs)], "'", "''")+"'")
			}
			if _, err := db.Exec(fmt.Sprintf("INSERT INTO %q (%s) VALUES (%s)", tbl, strings.Join(cols, ", "), strings.Join(vals, ", "))); err != nil {
				t.Fatalf("plant a row in %s: %v", tbl, err)
			}
		}
	}
	if _, err := db.Exec(`SELECT setval(format('%I.%I', schemaname, sequencename), 17) FROM pg_sequences WHERE schemaname = 'public'`); err != nil {
		t.Fatalf("move the sequences: %v", err)
	}
}

// tb is what checkPair needs of a *testing.T or a *rapid.T.
type tb interface {
	Fatal(args ...any)
	Fatalf(format string, args ...any)
	Logf(format string, args ...any)
}

// contents is every table, every value of every column of the database's
// tables, and every sequence's position, as text: "table t", "t.c
// id=value" and "sequence s=n".
// A column types names (from an earlier call) is read as that type, so a
// value that survives a change of type (a date become a timestamptz) reads
// as it did and one that does not (1.25 become 1) does not; a value that
// cannot be cast back is not read at all. types is what the columns are.
func contents(t tb, db *database.DB, as map[string]string) (values map[string]bool, types map[string]string) {
	values, types = map[string]bool{}, map[string]string{}
	rows, err := db.Query(`SELECT c.relname, a.attname, format_type(a.atttypid, a.atttypmod) FROM pg_attribute a JOIN pg_class c ON c.oid = a.attrelid
		WHERE c.relnamespace = 'public'::regnamespace AND c.relkind = 'r' AND a.attnum > 0 AND NOT a.attisdropped`)
	if err != nil {
		t.Fatalf("list columns: %v", err)
	}
	var cols [][3]string
	for rows.Next() {
		var tb, c, typ string
		if err := rows.Scan(&tb, &c, &typ); err != nil {
			t.Fatal(err)
		}
		cols = append(cols, [3]string{tb, c, typ})
		types[tb+"."+c] = typ
	}
	rows.Close()
	for _, tc := range cols {
		read := fmt.Sprintf("%q", tc[1])
		if typ, ok := as[tc[0]+"."+tc[1]]; ok && typ != tc[2] {
			read = fmt.Sprintf("%q::%s", tc[1], typ)
		}
		// The simple protocol: a statement pgx prepared before the apply
		// would fail after it ("cached plan must not change result type")
		// where only the column's collation changed.
		r, err := db.Query(fmt.Sprintf(`SELECT id::text, coalesce((%s)::text, '<null>') FROM %q`, read, tc[0]), pgx.QueryExecModeSimpleProtocol)
		if err != nil {
			continue // not castable back: every value of the column is lost
		}
		for r.Next() {
			var id, v string
			if err := r.Scan(&id, &v); err != nil {
				t.Fatal(err)
			}
			values[fmt.Sprintf("%s.%s id=%s %s", tc[0], tc[1], id, v)] = true
		}
		if r.Err() != nil {
			// A cast refused part way: the column's values count as lost.
			for k := range values {
				if strings.HasPrefix(k, tc[0]+"."+tc[1]+" id=") {
					delete(values, k)
				}
			}
		}
		r.Close()
	}
	// A table is where rows live: one dropped is lost whatever it held at
	// the time (a partition the planted rows did not reach holds none).
	for _, tc := range cols {
		values["table "+tc[0]] = true
	}
	seqs, err := db.Query(`SELECT sequencename, coalesce(last_value::text, 'unused') FROM pg_sequences WHERE schemaname = 'public'`)
	if err != nil {
		t.Fatalf("list sequences: %v", err)
	}
	defer seqs.Close()
	for seqs.Next() {
		var n, v string
		if err := seqs.Scan(&n, &v); err != nil {
			t.Fatal(err)
		}
		values["sequence "+n+"="+v] = true
	}
	return values, types
}

// lost is what of before is not in after, but for the values of columns
// after adds (a value stays where its table and column do).
func lost(before, after map[string]bool) []string {
	var out []string
	for k := range before {
		if !after[k] {
			out = append(out, k)
		}
	}
	sort.Strings(out)
	return out
}

func render(t tb, db *database.DB) []string {
	tx, err := db.BeginTx(context.Background(), &sql.TxOptions{ReadOnly: true})
	if err != nil {
		t.Fatal(err)
	}
	defer func() { _ = tx.Rollback() }()
	lines, err := catalogproof.Render(context.Background(), tx, []string{Managed}, nil)
	if err != nil {
		t.Fatalf("render: %v", err)
	}
	return lines
}

func mayFail(p *Plan) bool {
	for _, s := range p.Statements {
		if slices.Contains(s.Hazards, HazardMayFail) {
			return true
		}
	}
	return false
}

// TestGeneratedSchemaPairs: for a generated pair (before, after), see
// checkPair. Its shrunk failures are schemaPairRegressions.
func TestGeneratedSchemaPairs(t *testing.T) {
	testenv.RapidChecks(t, 12)
	e := newEngine(t)
	outcomes, refusals := map[string]int{}, map[string]int{}
	start := time.Now()
	cases := 0
	rapid.Check(t, func(rt *rapid.T) {
		cases++
		before := drawSchema(rt)
		after := before.clone()
		var edits []string
		for i := range rapid.IntRange(1, 3).Draw(rt, "edits") {
			edits = append(edits, edit(rt, after, i))
		}
		rt.Logf("edits: %s", strings.Join(edits, ", "))
		got := checkPair(t, rt, e, before.sql(), after.sql())
		outcomes[got]++
		if strings.HasPrefix(got, "refused") {
			refusals[got+" after "+strings.Join(edits, ", ")]++
		}
	})
	t.Logf("%d generated pairs in %s (%.0f per minute): %v", cases, time.Since(start).Round(time.Second), float64(cases)/time.Since(start).Minutes(), outcomes)
	// What is refused is what ptah does not plan: the edits say what.
	for _, r := range slices.Sorted(maps.Keys(refusals)) {
		t.Logf("%dx %s", refusals[r], r)
	}
}

// TestSchemaPairRegressions holds what the generator found, shrunk.
func TestSchemaPairRegressions(t *testing.T) {
	e := newEngine(t)
	for _, c := range schemaPairRegressions {
		t.Run(c.name, func(t *testing.T) {
			t.Logf("outcome: %s", checkPair(t, t, e, c.before, c.after))
		})
	}
}

// checkPair plans a target holding before and planted rows toward after
// and applies the plan. PostgreSQL is the oracle: the same after loaded
// into a fresh database renders (catalogproof) as the target then does,
// and a second plan is empty; or the plan was refused with a code that is
// not internal; or the apply failed on a statement the plan said may fail,
// leaving the target as it was. The plan is destructive exactly when the
// apply lost a planted value, a row or a sequence position. It returns
// what the pair came to.
func checkPair(owner *testing.T, t tb, e *engine, before, after string) string {
	ctx := context.Background()
	t.Logf("before:\n%s\nafter:\n%s", before, after)
	db := e.caseDB(owner)
	defer db.drop()
	if _, err := db.Exec(before); err != nil {
		t.Fatalf("load before: %v", err)
	}
	plant(t, db.DB)
	ref := e.caseDB(owner)
	defer ref.drop()
	if _, err := ref.Exec(after); err != nil {
		t.Fatalf("load after into the reference: %v", err)
	}
	want := render(t, ref.DB)
	held, types := contents(t, db.DB, nil)
	beforeLines := render(t, db.DB)
	opts := e.o(Options{})
	p, err := ComputePlan(ctx, db.DB, files(after), opts)
	if err != nil {
		re := report.AsError(err)
		if re.Code == report.Internal || re.Code == "" {
			t.Fatalf("plan ended with an internal error: %v", err)
		}
		t.Logf("refused: %v", err)
		return "refused: " + string(re.Code)
	}
	if _, err = Apply(ctx, db.DB, p, ApplyOptions{AllowDestructive: true, LockTimeout: 10 * time.Second}); err != nil {
		if !mayFail(p) {
			t.Fatalf("apply failed though no statement was marked %s: %v\nplan:\n%s", HazardMayFail, err, planText(p))
		}
		// What runs outside the plan's transaction (an enum's new value)
		// is committed before the rest, and stays; the error says so.
		if d := catalogproof.Compare(render(t, db.DB), beforeLines); !d.Empty() && (!p.outsideTransaction() || !strings.Contains(err.Error(), "were committed before it")) {
			t.Fatalf("a failed apply left the target changed: %s (%v)", d.Describe(), err)
		}
		if now, _ := contents(t, db.DB, types); len(lost(held, now)) > 0 {
			t.Fatalf("a failed apply lost %v", lost(held, now))
		}
		return "apply failed as marked"
	}
	if d := catalogproof.Compare(render(t, db.DB), want); !d.Empty() {
		t.Fatalf("applied, but the target does not render as after loaded afresh: %s\nplan:\n%s", d.Describe(), planText(p))
	}
	again, err := ComputePlan(ctx, db.DB, files(after), opts)
	if err != nil || len(again.Statements) > 0 {
		t.Fatalf("planned again after the apply: %s (%v)", outcome(again, nil, err), err)
	}
	now, _ := contents(t, db.DB, types)
	gone := lost(held, now)
	switch {
	case len(gone) > 0 && !p.Destructive:
		t.Fatalf("data loss planned as safe: lost %v\nplan:\n%s", gone, planText(p))
	case len(gone) == 0 && p.Destructive:
		t.Fatalf("the plan is marked destructive but the apply lost nothing\nplan:\n%s", planText(p))
	}
	switch {
	case len(p.Statements) == 0:
		return "in sync"
	case p.Destructive:
		return "applied, destructive"
	}
	return "applied, safe"
}

// caseDB is a database of one generated case, dropped with drop: a run
// of hundreds of cases would otherwise hold a connection pool each.
type caseDB struct {
	*database.DB
	e    *engine
	t    *testing.T
	name string
}

func (e *engine) caseDB(t *testing.T) caseDB {
	t.Helper()
	e.n++
	name := fmt.Sprintf("db%d", e.n)
	db, err := database.Open(context.Background(), e.pg.CreateDatabase(t, name), 5*time.Second)
	if err != nil {
		t.Fatalf("open %s: %v", name, err)
	}
	return caseDB{db, e, t, name}
}

func (c caseDB) drop() {
	c.DB.Close()
	c.e.pg.Exec(c.t, "postgres", fmt.Sprintf("DROP DATABASE %s WITH (FORCE)", c.name))
}

func planText(p *Plan) string {
	var b strings.Builder
	for _, s := range p.Statements {
		fmt.Fprintf(&b, "  [%s %v] %s\n", s.Severity, s.Hazards, s.SQL)
	}
	return b.String()
}
