package pgcatalog

import (
	"slices"
	"strings"
)

// attribute is one attribute of a composite type as the catalog prints it:
// its name as quote_ident writes it, and its type with any COLLATE.
type attribute struct{ name, typ string }

// attributes takes a composite type's definition "(a integer, "b c" text
// COLLATE "C")" apart, at the commas outside parentheses and quotes.
func attributes(def string) []attribute {
	def = strings.TrimSuffix(strings.TrimPrefix(strings.TrimSpace(def), "("), ")")
	var out []attribute
	depth, quoted, start := 0, false, 0
	for i := 0; i <= len(def); i++ {
		if i < len(def) {
			switch c := def[i]; {
			case c == '"':
				quoted = !quoted
				continue
			case quoted:
				continue
			case c == '(':
				depth++
				continue
			case c == ')':
				depth--
				continue
			case c != ',' || depth > 0:
				continue
			}
		}
		part := strings.TrimSpace(def[start:i])
		start = i + 1
		if part == "" {
			continue
		}
		name, typ := part, ""
		if strings.HasPrefix(part, `"`) {
			// A quoted name ends at a quote not doubled.
			for j := 1; j < len(part); j++ {
				if part[j] == '"' {
					if j+1 < len(part) && part[j+1] == '"' {
						j++
						continue
					}
					name, typ = part[:j+1], strings.TrimSpace(part[j+1:])
					break
				}
			}
		} else if n, t, ok := strings.Cut(part, " "); ok {
			name, typ = n, t
		}
		out = append(out, attribute{name, typ})
	}
	return out
}

// alterComposite plans a composite type changed in place, since columns
// and routines use it: attributes dropped, changed and added with ALTER
// TYPE. It reports false where PostgreSQL cannot make the desired type so:
// attributes in another order than dropping and appending leaves them, or
// an attribute's type changed while a column stores the type (PostgreSQL
// refuses it). An attribute dropped while a column stores the type deletes
// its values.
func alterComposite(live, desired Object, liveObjs []Object) ([]Step, bool) {
	la, wa := attributes(live.Def), attributes(desired.Def)
	find := func(as []attribute, name string) int {
		return slices.IndexFunc(as, func(a attribute) bool { return a.name == name })
	}
	stored := typeStored(live.Ident, liveObjs)
	var kept, order []string
	var steps []Step
	alter := "ALTER TYPE " + live.Ident + " "
	for _, a := range la {
		if find(wa, a.name) < 0 {
			reason := "drops attribute " + a.name + " of composite type " + live.Name
			if stored {
				reason += " and its values in every column of the type"
			}
			steps = append(steps, Step{SQL: alter + "DROP ATTRIBUTE " + a.name, Reason: reason, Deletes: stored, kind: "composite type"})
			continue
		}
		kept = append(kept, a.name)
	}
	for _, a := range wa {
		i := find(la, a.name)
		switch {
		case i < 0:
			order = append(order, a.name)
		case la[i].typ != a.typ:
			if stored {
				return nil, false
			}
			typ, collate, _ := strings.Cut(a.typ, " COLLATE ")
			q := alter + "ALTER ATTRIBUTE " + a.name + " TYPE " + typ
			if collate != "" {
				q += " COLLATE " + collate
			}
			steps = append(steps, Step{SQL: q, Reason: "changes attribute " + a.name + " of composite type " + live.Name + " to " + a.typ, kind: "composite type"})
		}
	}
	if !slices.Equal(append(kept, order...), names(wa)) {
		return nil, false
	}
	for _, a := range wa {
		if find(la, a.name) < 0 {
			steps = append(steps, Step{SQL: alter + "ADD ATTRIBUTE " + a.name + " " + a.typ, Reason: "adds attribute " + a.name + " to composite type " + live.Name, kind: "composite type"})
		}
	}
	return steps, true
}

func names(as []attribute) []string {
	out := make([]string, len(as))
	for i, a := range as {
		out[i] = a.name
	}
	return out
}

// typeStored says whether a column of a table, or a composite type (which a
// column may store), has type name or an array of it, on the live side.
func typeStored(name string, objs []Object) bool {
	for _, o := range objs {
		switch o.Kind {
		case "column":
			if strings.HasPrefix(o.Def, "type="+name+" ") || strings.HasPrefix(o.Def, "type="+name+"[] ") {
				return true
			}
		case "composite type":
			for _, a := range attributes(o.Def) {
				if t, _, _ := strings.Cut(a.typ, " COLLATE "); t == name || t == name+"[]" {
					return true
				}
			}
		}
	}
	return false
}
