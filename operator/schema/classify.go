package schema

import (
	"fmt"
	"strings"

	"ariga.io/atlas/sql/postgres"
	sqlschema "ariga.io/atlas/sql/schema"
)

// Severity says whether a change deletes data (see Hazard for the rest).
type Severity string

const (
	Safe        Severity = "safe"
	Destructive Severity = "destructive"
)

// verdict is why a change is planned, the drift category it falls in and
// the object it names; what it risks is hazardsOf's.
type verdict struct {
	reason   string
	category string
	object   string
}

// classify names a change as atlas's diff produced it, one verdict per
// part of a table modification.
func classify(c sqlschema.Change) []verdict {
	switch c := c.(type) {
	case *sqlschema.AddTable:
		return []verdict{{"creates table " + c.T.Name, "table_missing", c.T.Name}}
	case *sqlschema.DropTable:
		return []verdict{{"drops table " + c.T.Name + " and every row in it", "table_unexpected", c.T.Name}}
	case *sqlschema.RenameTable:
		return []verdict{{"renames table " + c.From.Name + " to " + c.To.Name, "table_changed", c.From.Name}}
	case *sqlschema.ModifyTable:
		var vs []verdict
		for _, sub := range c.Changes {
			vs = append(vs, classifyTablePart(c.T.Name, sub))
		}
		return vs
	case *sqlschema.DropSchema:
		return []verdict{{"drops schema " + c.S.Name, "schema_unexpected", c.S.Name}}
	case *sqlschema.DropObject:
		return []verdict{{"drops " + objectName(c.O), "object_unexpected", objectName(c.O)}}
	case *sqlschema.AddObject:
		return []verdict{{"creates " + objectName(c.O), "object_missing", objectName(c.O)}}
	case *sqlschema.ModifyObject:
		return []verdict{{"changes " + objectName(c.From) + ", which can invalidate stored values", "object_changed", objectName(c.From)}}
	default:
		name := strings.TrimPrefix(fmt.Sprintf("%T", c), "*schema.")
		return []verdict{{"schema change " + name, "other", name}}
	}
}

func classifyTablePart(table string, c sqlschema.Change) verdict {
	col := func(n string) string { return table + "." + n }
	switch c := c.(type) {
	case *sqlschema.AddColumn:
		if !c.C.Type.Null && c.C.Default == nil && !generated(c.C) {
			return verdict{"adds NOT NULL column " + col(c.C.Name) + " without a default: fails or needs a rewrite when the table has rows", "column_missing", col(c.C.Name)}
		}
		return verdict{"adds column " + col(c.C.Name), "column_missing", col(c.C.Name)}
	case *sqlschema.DropColumn:
		return verdict{"drops column " + col(c.C.Name) + " and its data", "column_unexpected", col(c.C.Name)}
	case *sqlschema.ModifyColumn:
		return classifyColumnChange(col(c.From.Name), c)
	case *sqlschema.RenameColumn:
		return verdict{"renames column " + col(c.From.Name) + " to " + c.To.Name, "column_changed", col(c.From.Name)}
	case *sqlschema.AddIndex:
		return verdict{"creates index " + c.I.Name + " on " + table, "index_missing", col(c.I.Name)}
	case *sqlschema.DropIndex:
		return verdict{"drops index " + c.I.Name + " on " + table + "; no data is lost", "index_unexpected", col(c.I.Name)}
	case *sqlschema.ModifyIndex:
		return verdict{"rebuilds index " + c.From.Name + " on " + table, "index_changed", col(c.From.Name)}
	case *sqlschema.RenameIndex:
		return verdict{"renames index " + c.From.Name + " to " + c.To.Name, "index_changed", col(c.From.Name)}
	case *sqlschema.AddPrimaryKey:
		return verdict{"adds the primary key of " + table, "primary_key_missing", table}
	case *sqlschema.DropPrimaryKey:
		return verdict{"drops the primary key of " + table + "; no data is lost", "primary_key_unexpected", table}
	case *sqlschema.ModifyPrimaryKey:
		return verdict{"changes the primary key of " + table, "primary_key_changed", table}
	case *sqlschema.AddForeignKey:
		return verdict{"adds foreign key " + c.F.Symbol + " on " + table, "foreign_key_missing", col(c.F.Symbol)}
	case *sqlschema.DropForeignKey:
		return verdict{"drops foreign key " + c.F.Symbol + " on " + table + "; no data is lost", "foreign_key_unexpected", col(c.F.Symbol)}
	case *sqlschema.ModifyForeignKey:
		return verdict{"changes foreign key " + c.From.Symbol + " on " + table, "foreign_key_changed", col(c.From.Symbol)}
	case *sqlschema.AddCheck:
		return verdict{"adds check " + c.C.Name + " on " + table, "check_missing", col(c.C.Name)}
	case *sqlschema.DropCheck:
		return verdict{"drops check " + c.C.Name + " on " + table + "; no data is lost", "check_unexpected", col(c.C.Name)}
	case *sqlschema.ModifyCheck:
		return verdict{"changes check " + c.From.Name + " on " + table, "check_changed", col(c.From.Name)}
	default:
		name := strings.TrimPrefix(fmt.Sprintf("%T", c), "*schema.")
		return verdict{"changes " + table + " (" + name + ")", "table_changed", table}
	}
}

func classifyColumnChange(name string, c *sqlschema.ModifyColumn) verdict {
	if c.Change.Is(sqlschema.ChangeType) && !widens(c.From.Type.Type, c.To.Type.Type) {
		return verdict{fmt.Sprintf("changes the type of %s from %s to %s, which can lose or reject values", name, typeName(c.From.Type.Type), typeName(c.To.Type.Type)), "column_changed", name}
	}
	if c.Change.Is(sqlschema.ChangeNull) && c.From.Type.Null && !c.To.Type.Null && c.To.Default == nil {
		return verdict{"sets " + name + " NOT NULL without a default: fails when a row holds NULL", "column_changed", name}
	}
	if c.Change.Is(sqlschema.ChangeGenerated) {
		return verdict{"changes the generated expression of " + name + ", which rewrites its values", "column_changed", name}
	}
	return verdict{"changes " + name + " (" + columnChangeKinds(c.Change) + ") without losing data", "column_changed", name}
}

func columnChangeKinds(k sqlschema.ChangeKind) string {
	var kinds []string
	for _, p := range []struct {
		k    sqlschema.ChangeKind
		name string
	}{{sqlschema.ChangeType, "type"}, {sqlschema.ChangeNull, "nullability"}, {sqlschema.ChangeDefault, "default"},
		{sqlschema.ChangeComment, "comment"}, {sqlschema.ChangeCollate, "collation"}, {sqlschema.ChangeAttr, "attributes"}} {
		if k.Is(p.k) {
			kinds = append(kinds, p.name)
		}
	}
	if len(kinds) == 0 {
		return "attributes"
	}
	return strings.Join(kinds, ", ")
}

// widens reports whether every value of type from is a value of type to.
// Anything not known to widen is treated as narrowing.
func widens(from, to sqlschema.Type) bool {
	switch f := from.(type) {
	case *sqlschema.IntegerType:
		t, ok := to.(*sqlschema.IntegerType)
		return ok && intRank(f.T) > 0 && intRank(f.T) <= intRank(t.T)
	case *sqlschema.StringType:
		t, ok := to.(*sqlschema.StringType)
		if !ok {
			return false
		}
		switch {
		case t.T == postgres.TypeText || (t.T == postgres.TypeCharVar && t.Size == 0):
			return true
		case t.T == postgres.TypeCharVar:
			return f.T != postgres.TypeText && f.Size > 0 && f.Size <= t.Size
		}
		return false
	case *sqlschema.DecimalType:
		t, ok := to.(*sqlschema.DecimalType)
		return ok && (t.Precision == 0 || (f.Precision > 0 && t.Scale >= f.Scale && t.Precision-t.Scale >= f.Precision-f.Scale))
	case *sqlschema.FloatType:
		t, ok := to.(*sqlschema.FloatType)
		return ok && (t.T == postgres.TypeDouble || t.T == postgres.TypeFloat8 || f.T == t.T)
	}
	return false
}

func intRank(t string) int {
	switch strings.ToLower(t) {
	case postgres.TypeSmallInt, postgres.TypeInt2, "smallserial":
		return 1
	case postgres.TypeInteger, postgres.TypeInt, postgres.TypeInt4, "serial":
		return 2
	case postgres.TypeBigInt, postgres.TypeInt8, "bigserial":
		return 3
	}
	return 0
}

func typeName(t sqlschema.Type) string {
	if s, err := postgres.FormatType(t); err == nil {
		return s
	}
	return fmt.Sprintf("%T", t)
}

func generated(c *sqlschema.Column) bool {
	for _, a := range c.Attrs {
		switch a.(type) {
		case *postgres.Identity, *sqlschema.GeneratedExpr:
			return true
		}
	}
	if _, ok := c.Type.Type.(*postgres.SerialType); ok {
		return true
	}
	return false
}

func objectName(o sqlschema.Object) string {
	switch o := o.(type) {
	case *sqlschema.EnumType:
		return "enum " + o.T
	case *postgres.Sequence:
		return "sequence " + o.Name
	}
	return strings.TrimPrefix(fmt.Sprintf("%T", o), "*")
}
