package migrate

import (
	"fmt"
	"strings"

	pg "github.com/pganalyze/pg_query_go/v6"
	"google.golang.org/protobuf/reflect/protoreflect"

	"ptah.run/operator/operator/sqlsplit"
)

// settingChange names what a statement does to a setting PostgreSQL reads
// SQL text under (sqlsplit.Settings), as written: SET, SET LOCAL or RESET
// of one, SET NAMES, RESET ALL, set_config of one named by a constant, or an
// UPDATE of pg_settings (which calls set_config). Setting one to the value
// ptah pins is no change (pg_dump writes SET client_encoding = 'UTF8' and
// SET standard_conforming_strings = on). A SET clause of a function, ALTER
// ROLE ... SET and ALTER DATABASE ... SET do not change the session that
// runs the migrations; set_config with a computed name, in a DO block or a
// function, is not seen, and is undone by the pinning before the next
// migration (PostgreSQL has read the whole text of this one already).
func settingChange(n *pg.Node) string {
	if v := n.GetVariableSetStmt(); v != nil {
		if v.Kind == pg.VariableSetKind_VAR_RESET_ALL {
			return "resets every setting to the session's default, standard_conforming_strings, backslash_quote and client_encoding included"
		}
		s, ok := pinned(v.Name)
		if !ok {
			return ""
		}
		verb := "sets"
		switch {
		case v.Kind == pg.VariableSetKind_VAR_RESET:
			verb = "resets"
		case v.Kind == pg.VariableSetKind_VAR_SET_DEFAULT:
			verb = "resets"
		case v.Kind == pg.VariableSetKind_VAR_SET_VALUE && len(v.Args) == 1:
			if val, ok := constant(v.Args[0]); ok && samePinned(s, val) {
				return ""
			}
		}
		if v.IsLocal {
			verb += " for the transaction"
		}
		return fmt.Sprintf("%s %s", verb, s.Name)
	}
	what := ""
	walk(n.ProtoReflect(), func(m protoreflect.Message) bool {
		switch x := m.Interface().(type) {
		case *pg.FuncCall:
			if len(x.Funcname) == 0 || x.Funcname[len(x.Funcname)-1].GetString_().GetSval() != "set_config" || len(x.Args) == 0 {
				return true
			}
			name, ok := constant(x.Args[0])
			if !ok {
				return true
			}
			s, ok := pinned(name)
			if !ok {
				return true
			}
			if len(x.Args) > 1 {
				if val, ok := constant(x.Args[1]); ok && samePinned(s, val) {
					return true
				}
			}
			what = "calls set_config of " + s.Name
			return false
		case *pg.UpdateStmt:
			if x.Relation != nil && x.Relation.Relname == "pg_settings" {
				what = "updates pg_settings, which sets settings through set_config (standard_conforming_strings, backslash_quote and client_encoding among them); use SET for another setting"
				return false
			}
		}
		return true
	})
	return what
}

// pinned is the setting of sqlsplit.Settings named name (setting names are
// case-insensitive).
func pinned(name string) (sqlsplit.Setting, bool) {
	for _, s := range sqlsplit.Settings {
		if strings.EqualFold(name, s.Name) {
			return s, true
		}
	}
	return sqlsplit.Setting{}, false
}

// samePinned reports whether val, as PostgreSQL reads values of s, is the
// value ptah pins it to.
func samePinned(s sqlsplit.Setting, val string) bool {
	val = strings.ToLower(strings.TrimSpace(val))
	switch s.Name {
	case "standard_conforming_strings":
		return val == "on" || val == "true" || val == "yes" || val == "1"
	case "client_encoding":
		// PostgreSQL drops all but letters and digits from an encoding name.
		clean := strings.Map(func(r rune) rune {
			if r >= 'a' && r <= 'z' || r >= '0' && r <= '9' {
				return r
			}
			return -1
		}, val)
		return clean == "utf8" || clean == "unicode"
	}
	return val == strings.ToLower(s.Value)
}

// constant is the text of a constant (a string, a number, a boolean, or
// one of those cast), as a setting reads it.
func constant(n *pg.Node) (string, bool) {
	for n.GetTypeCast() != nil {
		n = n.GetTypeCast().Arg
	}
	c := n.GetAConst()
	switch {
	case c == nil || c.Isnull:
		return "", false
	case c.GetSval() != nil:
		return c.GetSval().Sval, true
	case c.GetIval() != nil:
		return fmt.Sprint(c.GetIval().Ival), true
	case c.GetFval() != nil:
		return c.GetFval().Fval, true
	case c.GetBoolval() != nil:
		if c.GetBoolval().Boolval {
			return "true", true
		}
		return "false", true
	}
	return "", false
}

// walk calls f on m and every message under it, depth first, until f
// returns false.
func walk(m protoreflect.Message, f func(protoreflect.Message) bool) bool {
	if !f(m) {
		return false
	}
	ok := true
	m.Range(func(fd protoreflect.FieldDescriptor, v protoreflect.Value) bool {
		if fd.Kind() != protoreflect.MessageKind && fd.Kind() != protoreflect.GroupKind {
			return true
		}
		switch {
		case fd.IsList():
			l := v.List()
			for i := 0; i < l.Len() && ok; i++ {
				ok = walk(l.Get(i).Message(), f)
			}
		case fd.IsMap():
		default:
			ok = walk(v.Message(), f)
		}
		return ok
	})
	return ok
}

// pinnedList is sqlsplit.Settings for messages.
func pinnedList() string {
	parts := make([]string, len(sqlsplit.Settings))
	for i, s := range sqlsplit.Settings {
		parts[i] = s.Name + "=" + s.Value
	}
	return strings.Join(parts, ", ")
}
