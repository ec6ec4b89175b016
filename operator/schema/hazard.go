package schema

import (
	"reflect"
	"slices"
	"strings"

	"ariga.io/atlas/sql/postgres"
	sqlschema "ariga.io/atlas/sql/schema"

	"ptah.run/operator/operator/pgcatalog"
)

// Hazard is one thing a statement risks on a database that holds rows and
// serves other sessions. Only HazardDeletesData makes a plan destructive;
// the others are shown so a reviewer knows what applying it does.
type Hazard string

const (
	// HazardDeletesData: rows or values are gone once it commits.
	HazardDeletesData Hazard = "deletes-data"
	// HazardMayFail: it fails on existing rows that violate what it adds
	// (a NULL under SET NOT NULL, a duplicate under a unique index, a value
	// out of a narrower type's range), and the plan stops there.
	HazardMayFail Hazard = "may-fail"
	// HazardAccessExclusiveLock: it takes an ACCESS EXCLUSIVE lock on an
	// existing table, which waits for and then blocks every read and write
	// of it until the transaction ends.
	HazardAccessExclusiveLock Hazard = "access-exclusive-lock"
	// HazardRewritesTable: PostgreSQL writes a new copy of the table (and
	// its indexes), under that lock, taking time and disk in its size.
	HazardRewritesTable Hazard = "rewrites-table"
	// HazardBuildsIndex: it builds an index on an existing table while
	// blocking writes to it (CREATE INDEX without CONCURRENTLY).
	HazardBuildsIndex Hazard = "builds-index"
)

// Hazards lists every hazard, in the order statements show them.
var Hazards = []Hazard{HazardDeletesData, HazardMayFail, HazardAccessExclusiveLock, HazardRewritesTable, HazardBuildsIndex}

// severityOf is the severity a statement with hs has: destructive exactly
// when it deletes data.
func severityOf(hs []Hazard) Severity {
	if slices.Contains(hs, HazardDeletesData) {
		return Destructive
	}
	return Safe
}

// hazardSet collects hazards in the order of Hazards.
type hazardSet map[Hazard]bool

func (s hazardSet) add(hs ...Hazard) hazardSet {
	for _, h := range hs {
		s[h] = true
	}
	return s
}

func (s hazardSet) list() []Hazard {
	var out []Hazard
	for _, h := range Hazards {
		if s[h] {
			out = append(out, h)
		}
	}
	return out
}

// hazardsOf says what the statement cmd, which atlas planned for change c,
// risks. c is one change (a table modification has one part, see
// splitTableChanges); it is judged from its kind and the objects it names,
// the SQL only telling apart the comment and sequence statements atlas
// plans beside the main one.
func hazardsOf(c sqlschema.Change, cmd string, ds domainSides) []Hazard {
	if strings.HasPrefix(cmd, "COMMENT ON") {
		// SHARE UPDATE EXCLUSIVE: neither reads nor writes wait.
		return nil
	}
	s := hazardSet{}
	switch c := c.(type) {
	case *sqlschema.AddTable:
		// A new table is empty and nobody else uses it yet.
	case *sqlschema.DropTable:
		s.add(HazardDeletesData, HazardAccessExclusiveLock)
	case *sqlschema.RenameTable:
		s.add(HazardAccessExclusiveLock)
	case *sqlschema.DropSchema:
		s.add(HazardDeletesData, HazardAccessExclusiveLock)
	case *sqlschema.AddObject:
	case *sqlschema.DropObject:
		// A sequence's position goes with it. A type holds no value of
		// its own: PostgreSQL drops it only once no column uses it, and a
		// column dropped or converted with it is judged on its own.
		if _, ok := c.O.(*postgres.Sequence); ok {
			s.add(HazardDeletesData)
		}
	case *sqlschema.ModifyObject:
		if _, ok := c.From.(*postgres.Sequence); ok {
			// New bounds are refused when the sequence is already past them.
			s.add(HazardMayFail)
		}
	case *sqlschema.ModifyTable:
		for _, sub := range c.Changes {
			tablePartHazards(s, sub, cmd, ds)
		}
	case *sqlschema.ModifyColumn:
		// atlas's statements beside the ALTER TABLE of a serial column
		// (its sequence created or dropped) name the column change alone.
		tablePartHazards(s, c, cmd, ds)
	}
	return s.list()
}

func tablePartHazards(s hazardSet, c sqlschema.Change, cmd string, ds domainSides) {
	switch c := c.(type) {
	case *sqlschema.AddColumn:
		s.add(HazardAccessExclusiveLock)
		if !c.C.Type.Null && c.C.Default == nil && !generated(c.C) {
			s.add(HazardMayFail)
		}
		if rewritesOnAdd(c.C) {
			s.add(HazardRewritesTable)
		}
	case *sqlschema.DropColumn:
		s.add(HazardDeletesData, HazardAccessExclusiveLock)
	case *sqlschema.RenameColumn:
		s.add(HazardAccessExclusiveLock)
	case *sqlschema.ModifyColumn:
		columnHazards(s, c, cmd, ds)
	case *sqlschema.AddIndex:
		indexHazards(s, c.I, c.Extra)
	case *sqlschema.DropIndex:
		if !concurrent(c.Extra) {
			s.add(HazardAccessExclusiveLock)
		}
	case *sqlschema.ModifyIndex:
		// atlas drops the index and builds it again, in two statements
		// unless a constraint holds it (then one ALTER TABLE does both).
		_, constraint := uniqueOrExclude(c.From.Attrs)
		if constraint || strings.HasPrefix(cmd, "DROP INDEX") || strings.HasPrefix(cmd, "ALTER TABLE") {
			s.add(HazardAccessExclusiveLock)
		}
		if !strings.HasPrefix(cmd, "DROP INDEX") {
			indexHazards(s, c.To, nil)
		}
	case *sqlschema.RenameIndex:
		s.add(HazardAccessExclusiveLock)
	case *sqlschema.AddPrimaryKey:
		// NULLs and duplicates are refused; the key's index is built.
		s.add(HazardMayFail, HazardAccessExclusiveLock, HazardBuildsIndex)
	case *sqlschema.ModifyPrimaryKey:
		s.add(HazardMayFail, HazardAccessExclusiveLock, HazardBuildsIndex)
	case *sqlschema.DropPrimaryKey, *sqlschema.DropCheck:
		s.add(HazardAccessExclusiveLock)
	case *sqlschema.DropForeignKey:
		// Both tables: the referencing one and the referenced one.
		s.add(HazardAccessExclusiveLock)
	case *sqlschema.AddForeignKey:
		// SHARE ROW EXCLUSIVE on both tables: writes wait, reads do not.
		if !sqlxHas(c.Extra, &postgres.NotValid{}) {
			s.add(HazardMayFail)
		}
	case *sqlschema.ModifyForeignKey:
		s.add(HazardMayFail, HazardAccessExclusiveLock)
	case *sqlschema.AddCheck:
		s.add(HazardAccessExclusiveLock)
		if !sqlxHas(c.Extra, &postgres.NotValid{}) {
			s.add(HazardMayFail)
		}
	case *sqlschema.ModifyCheck:
		s.add(HazardMayFail, HazardAccessExclusiveLock)
	case *sqlschema.ModifyTable, *sqlschema.AddAttr, *sqlschema.ModifyAttr, *sqlschema.DropAttr:
		s.add(HazardAccessExclusiveLock)
	}
}

func indexHazards(s hazardSet, idx *sqlschema.Index, extra []sqlschema.Clause) {
	_, constraint := uniqueOrExclude(idx.Attrs)
	switch {
	case constraint:
		// ALTER TABLE ADD CONSTRAINT builds the index under its lock.
		s.add(HazardAccessExclusiveLock, HazardBuildsIndex)
	case !concurrent(extra):
		s.add(HazardBuildsIndex)
	}
	if idx.Unique || constraint {
		s.add(HazardMayFail)
	}
}

func uniqueOrExclude(attrs []sqlschema.Attr) (*postgres.Constraint, bool) {
	for _, a := range attrs {
		if c, ok := a.(*postgres.Constraint); ok && (c.IsUnique() || c.IsExclude()) {
			return c, true
		}
	}
	return nil, false
}

func columnHazards(s hazardSet, c *sqlschema.ModifyColumn, cmd string, ds domainSides) {
	switch {
	case strings.HasPrefix(cmd, "CREATE SEQUENCE"):
		// The serial's own sequence, beside the ALTER TABLE.
		return
	case strings.HasPrefix(cmd, "DROP SEQUENCE"):
		// A serial become a plain integer: its sequence's position goes.
		s.add(HazardDeletesData)
		return
	}
	k := c.Change &^ sqlschema.ChangeComment
	if k == sqlschema.NoChange {
		return
	}
	s.add(HazardAccessExclusiveLock)
	// A domain's values are values of its base type: the conversion is
	// judged on those, and a domain that refuses some of them may fail.
	from, _ := ds.live.typeOf(c.From.Type.Type)
	to, refuses := ds.desired.typeOf(c.To.Type.Type)
	if from, to = unserial(from), unserial(to); k.Is(sqlschema.ChangeType) && refuses {
		s.add(HazardMayFail)
	}
	if k.Is(sqlschema.ChangeType) && !sameInteger(from, to) {
		if rejects(from, to) {
			s.add(HazardMayFail)
		}
		if loses(from, to) {
			s.add(HazardDeletesData)
		}
		if !binaryCoercible(from, to) {
			s.add(HazardRewritesTable)
		}
	}
	if k.Is(sqlschema.ChangeNull) && !c.To.Type.Null {
		// Existing NULLs are not filled from the default: they fail it.
		s.add(HazardMayFail)
	}
	if k.Is(sqlschema.ChangeGenerated) && sqlxHas(c.To.Attrs, &sqlschema.GeneratedExpr{}) {
		s.add(HazardRewritesTable)
	}
}

// unserial is the integer type a serial type stores its values as: a
// serial become an integer (or back) keeps every value as it is.
func unserial(t sqlschema.Type) sqlschema.Type {
	if st, ok := t.(*postgres.SerialType); ok {
		return &sqlschema.IntegerType{T: map[string]string{postgres.TypeSmallSerial: postgres.TypeSmallInt, postgres.TypeBigSerial: postgres.TypeBigInt}[st.T]}
	}
	return t
}

// sameInteger says whether from and to are the same integer type.
func sameInteger(from, to sqlschema.Type) bool {
	f, ok1 := from.(*sqlschema.IntegerType)
	t, ok2 := to.(*sqlschema.IntegerType)
	return ok1 && ok2 && intName(f.T) == intName(t.T)
}

func intName(t string) string {
	switch strings.ToLower(t) {
	case "", postgres.TypeInteger, postgres.TypeInt, postgres.TypeInt4, postgres.TypeSerial:
		return postgres.TypeInteger
	case postgres.TypeSmallInt, postgres.TypeInt2, postgres.TypeSmallSerial:
		return postgres.TypeSmallInt
	case postgres.TypeBigInt, postgres.TypeInt8, postgres.TypeBigSerial:
		return postgres.TypeBigInt
	}
	return t
}

// rejects reports whether some value of type from is refused by type to:
// anything not known to widen, except a numeric keeping its integer digits
// (it rounds instead) and a time getting less precise (the same).
func rejects(from, to sqlschema.Type) bool {
	from, to = elements(from, to)
	switch f := from.(type) {
	case *sqlschema.EnumType:
		// Through text: a label the new enum lacks is refused.
		if t, ok := to.(*sqlschema.EnumType); ok {
			return slices.ContainsFunc(f.Values, func(v string) bool { return !slices.Contains(t.Values, v) })
		}
	case *sqlschema.DecimalType:
		if t, ok := to.(*sqlschema.DecimalType); ok {
			return t.Precision > 0 && (f.Precision == 0 || t.Precision-t.Scale < f.Precision-f.Scale)
		}
	case *sqlschema.TimeType:
		if t, ok := to.(*sqlschema.TimeType); ok && (t.T == f.T || t.T == postgres.TypeDate) {
			return false
		}
	}
	if t, ok := to.(*sqlschema.StringType); ok && (t.T == postgres.TypeText || t.T == postgres.TypeCharVar && t.Size == 0) {
		// Every value prints as text.
		return false
	}
	return !widens(from, to)
}

// loses reports whether some value of type from converts to type to
// without an error and does not convert back to itself (1.25 to 1, 7 to
// true, '012' to 12, a timestamp to a date): the value the row held is
// gone. A conversion that keeps every value or refuses it (bigint to
// integer, text to varchar(4), text to an enum) loses nothing; rejects
// says whether it may refuse.
func loses(from, to sqlschema.Type) bool {
	from, to = elements(from, to)
	if widens(from, to) {
		return false
	}
	if _, toEnum := enumName(to); toEnum {
		if _, fromEnum := enumName(from); fromEnum || isString(from) {
			// An enum takes its labels exactly or refuses the value.
			return false
		}
	}
	if t, ok := to.(*sqlschema.StringType); ok && (t.T == postgres.TypeText || t.T == postgres.TypeCharVar) {
		// Every value prints as text, and a bounded varchar refuses one
		// too long instead of cutting it.
		return false
	}
	switch f := from.(type) {
	case *sqlschema.IntegerType:
		switch t := to.(type) {
		case *sqlschema.IntegerType, *sqlschema.DecimalType:
			// Exact, or refused as out of range.
			return false
		case *sqlschema.FloatType:
			// A real holds integers to 2^24 exactly, a double to 2^53.
			return !(floatBits(t) == 64 && intRank(f.T) <= 2 || intRank(f.T) == 1)
		}
	case *sqlschema.BoolType:
		if _, ok := to.(*sqlschema.IntegerType); ok {
			return false // 1 and 0
		}
	case *sqlschema.DecimalType:
		switch t := to.(type) {
		case *sqlschema.DecimalType:
			return t.Precision > 0 && (f.Precision == 0 || t.Scale < f.Scale)
		case *sqlschema.IntegerType:
			// 1.25 becomes 1; a scale of 0 is exact, or out of range.
			return f.Precision == 0 || f.Scale > 0
		case *sqlschema.FloatType:
			// A float keeps 6 or 15 significant digits.
			return f.Precision == 0 || f.Precision > map[int]int{32: 6, 64: 15}[floatBits(t)]
		}
	case *sqlschema.FloatType:
		if t, ok := to.(*sqlschema.FloatType); ok {
			return floatBits(f) > floatBits(t)
		}
	case *sqlschema.TimeType:
		t, ok := to.(*sqlschema.TimeType)
		if !ok {
			return true
		}
		if t.T == postgres.TypeDate {
			return f.T != postgres.TypeDate
		}
		if timeOfDay(t.T) && !timeOfDay(f.T) {
			// A timestamp become a time of day loses its date.
			return true
		}
		return f.T != postgres.TypeDate && precision(t) < precision(f)
	case *sqlschema.JSONType:
		t, ok := to.(*sqlschema.JSONType)
		return !ok || strings.EqualFold(f.T, postgres.TypeJSON) && !strings.EqualFold(t.T, postgres.TypeJSON)
	}
	// Anything else, as text read into another type ('012' as 12, 'yes'
	// as true, JSON as jsonb normalises it), may not read back the same.
	return true
}

// elements are the element types of two array types, each value of one
// converted to the other: an array converts element by element.
func elements(from, to sqlschema.Type) (sqlschema.Type, sqlschema.Type) {
	f, ok1 := from.(*postgres.ArrayType)
	t, ok2 := to.(*postgres.ArrayType)
	if ok1 && ok2 {
		return f.Type, t.Type
	}
	return from, to
}

func timeOfDay(t string) bool {
	switch strings.ToLower(t) {
	case postgres.TypeTime, postgres.TypeTimeTZ, postgres.TypeTimeWOTZ, postgres.TypeTimeWTZ:
		return true
	}
	return false
}

func floatBits(f *sqlschema.FloatType) int {
	switch strings.ToLower(f.T) {
	case postgres.TypeReal, postgres.TypeFloat4:
		return 32
	case postgres.TypeFloat:
		if f.Precision > 0 && f.Precision <= 24 {
			return 32
		}
	}
	return 64
}

func precision(t *sqlschema.TimeType) int {
	if t.Precision == nil {
		return 6
	}
	return *t.Precision
}

// binaryCoercible reports whether PostgreSQL changes the type without
// rewriting the table: a varchar or numeric getting wider without a new
// scale, varchar to text.
func binaryCoercible(from, to sqlschema.Type) bool {
	switch f := from.(type) {
	case *sqlschema.StringType:
		t, ok := to.(*sqlschema.StringType)
		if !ok || f.T == postgres.TypeCharacter || f.T == postgres.TypeChar {
			return false
		}
		switch {
		case t.T == postgres.TypeText || t.T == postgres.TypeCharVar && t.Size == 0:
			return f.T == postgres.TypeText || f.T == postgres.TypeCharVar
		case t.T == postgres.TypeCharVar:
			return f.T == postgres.TypeCharVar && f.Size > 0 && f.Size <= t.Size
		}
	case *sqlschema.DecimalType:
		t, ok := to.(*sqlschema.DecimalType)
		return ok && (t.Precision == 0 || f.Precision > 0 && t.Scale == f.Scale && t.Precision >= f.Precision)
	}
	return false
}

// rewritesOnAdd reports whether adding c fills every row in a rewrite:
// a stored generated column, an identity or serial column, or a default
// PostgreSQL cannot store once for all rows (a volatile one). A default
// calling no function is a constant; of the functions a default can call,
// only the few known stable ones are assumed not to rewrite.
func rewritesOnAdd(c *sqlschema.Column) bool {
	if generated(c) {
		return true
	}
	if c.Default == nil {
		return false
	}
	x, ok := c.Default.(*sqlschema.RawExpr)
	if !ok {
		return false // a literal
	}
	for _, fn := range calledFunctions(x.X) {
		if !stableFunctions[fn] {
			return true
		}
	}
	return false
}

// stableFunctions are default expressions' functions that are not
// volatile, so a default calling them is computed once when the column is
// added. now() and friends are stable within the ALTER TABLE's transaction.
var stableFunctions = map[string]bool{
	"now": true, "current_timestamp": true, "current_date": true, "current_time": true,
	"localtimestamp": true, "localtime": true, "transaction_timestamp": true, "statement_timestamp": true,
	"current_user": true, "session_user": true, "lower": true, "upper": true, "jsonb_build_object": true,
	"json_build_object": true, "array": true, "coalesce": true, "abs": true, "length": true,
}

// calledFunctions lists the lower-cased names followed by "(" in a default
// expression as PostgreSQL prints it (casts and literals call nothing).
func calledFunctions(expr string) []string {
	var out []string
	inString := false
	for i := 0; i < len(expr); i++ {
		ch := expr[i]
		if ch == '\'' {
			inString = !inString
			continue
		}
		if inString || ch != '(' {
			continue
		}
		j := i
		for j > 0 && (isIdent(expr[j-1]) || expr[j-1] == '.') {
			j--
		}
		if j < i {
			name := strings.ToLower(expr[j:i])
			if k := strings.LastIndexByte(name, '.'); k >= 0 {
				name = name[k+1:]
			}
			out = append(out, name)
		}
	}
	return out
}

func isIdent(c byte) bool {
	return c == '_' || c >= 'a' && c <= 'z' || c >= 'A' && c <= 'Z' || c >= '0' && c <= '9'
}

// stepStatement is a statement of the objects atlas does not manage
// (pgcatalog), with its hazards. None of them deletes table data: a check
// or foreign key dropped loses no row; a sequence dropped loses its
// position, as atlas's own sequence drops do (hazardsOf). newTable says
// the statement changes a table the plan creates, which holds no rows and
// which nobody else uses yet, so it risks nothing.
func stepStatement(st pgcatalog.Step, newTable bool) Statement {
	s := hazardSet{}
	if st.Validates {
		s.add(HazardMayFail)
	}
	if st.Deletes {
		s.add(HazardDeletesData)
	}
	switch st.Kind() {
	case "row level security", "forced row level security", "policy":
		// ALTER TABLE, CREATE and DROP POLICY lock the table.
		s.add(HazardAccessExclusiveLock)
	case "trigger":
		if st.Drops {
			s.add(HazardAccessExclusiveLock)
		}
	case "check constraint":
		// ADD and DROP CONSTRAINT lock the table; VALIDATE CONSTRAINT
		// takes SHARE UPDATE EXCLUSIVE, under which reads and writes go on.
		if !strings.Contains(st.SQL, " VALIDATE CONSTRAINT ") {
			s.add(HazardAccessExclusiveLock)
		}
	case "foreign key":
		// Adding one takes SHARE ROW EXCLUSIVE on both tables (writes
		// wait, reads do not); dropping one ACCESS EXCLUSIVE on both.
		if st.Drops {
			s.add(HazardAccessExclusiveLock)
		}
	case "partition":
		// CREATE TABLE ... PARTITION OF and DROP TABLE lock the parent.
		s.add(HazardAccessExclusiveLock)
		if st.Drops {
			s.add(HazardDeletesData)
		}
	case "index":
		// DROP INDEX takes ACCESS EXCLUSIVE; CREATE INDEX SHARE, which
		// blocks writes while it builds.
		switch {
		case strings.HasPrefix(st.SQL, "COMMENT ON"):
		case st.Drops:
			s.add(HazardAccessExclusiveLock)
		default:
			s.add(HazardBuildsIndex)
		}
	case "unique constraint":
		s.add(HazardAccessExclusiveLock)
		if !st.Drops {
			s.add(HazardBuildsIndex)
		}
	case "partition column", "partition property":
		// ALTER TABLE on the partition; COMMENT ON takes a lighter lock.
		if !strings.HasPrefix(st.SQL, "COMMENT ON") {
			s.add(HazardAccessExclusiveLock)
		}
	case "persistence":
		// SET LOGGED and SET UNLOGGED write the table anew under ACCESS
		// EXCLUSIVE.
		s.add(HazardAccessExclusiveLock, HazardRewritesTable)
	case "inheritance":
		// INHERIT and NO INHERIT lock the child.
		s.add(HazardAccessExclusiveLock)
	case "storage parameters":
		// SET and RESET of these take SHARE UPDATE EXCLUSIVE: reads and
		// writes go on.
	case "identity", "constraint", "":
		// ALTER COLUMN ... IDENTITY, RENAME CONSTRAINT and ALTER COLUMN
		// SET DEFAULT are ALTER TABLE under its lock.
		if st.Table != "" {
			s.add(HazardAccessExclusiveLock)
		}
	case "sequence":
		if st.Drops {
			s.add(HazardDeletesData)
		}
	}
	if newTable {
		s = hazardSet{}
	}
	hs := s.list()
	return Statement{SQL: st.SQL, Severity: severityOf(hs), Reason: st.Reason, Hazards: hs}
}

func concurrent(extra []sqlschema.Clause) bool { return sqlxHas(extra, &postgres.Concurrently{}) }

// sqlxHas reports whether xs holds a value of v's type (atlas keeps its
// own helper internal).
func sqlxHas[T any](xs []T, v any) bool {
	for _, x := range xs {
		if reflect.TypeOf(x) == reflect.TypeOf(v) {
			return true
		}
	}
	return false
}

// HazardLine is how plan printers show what s risks beyond its severity:
// "hazards: may-fail, access-exclusive-lock", and that it runs outside the
// plan's transaction; "" for a statement that risks nothing.
func HazardLine(s Statement) string {
	var parts []string
	for _, h := range s.Hazards {
		parts = append(parts, string(h))
	}
	line := ""
	if len(parts) > 0 {
		line = "hazards: " + strings.Join(parts, ", ")
	}
	if s.OutsideTransaction {
		if line != "" {
			line += "; "
		}
		line += "runs outside the transaction"
	}
	return line
}
