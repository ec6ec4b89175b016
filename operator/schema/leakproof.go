package schema

import (
	"strings"

	pg "github.com/pganalyze/pg_query_go/v6"
	pgquery "github.com/wasilibs/go-pgquery"

	"ptah.run/operator/operator/sqlsplit"
)

// Marking a function LEAKPROOF needs a superuser, and the role desired SQL
// runs as is none. So a LEAKPROOF in a CREATE or ALTER FUNCTION of desired
// SQL is loaded as a setting of the function the role may give it
// (SET application_name = marker, marker naming the comparison's role),
// and the dev server's own session then marks exactly the functions that
// carry it (devdb.Server.MarkLeakproof): that step runs no desired SQL and
// no function. Desired SQL that sets the marker on a function itself (it
// can learn its role) gains only what writing LEAKPROOF there would give:
// a function of its own scratch database marked. A statement this cannot be
// done to unambiguously (it sets application_name itself, or the rewrite
// would not parse to the same statement) is loaded as written, and
// PostgreSQL refuses it as before.

// leakproofMarker is the application_name a LEAKPROOF of the comparison
// role's desired SQL is loaded as.
func leakproofMarker(role string) string { return role + ":leakproof" }

// leakproofMarkable says whether the marker of withoutLeakproof stands for
// LEAKPROOF wherever it is left in files: no function statement sets or
// resets application_name itself, or resets all its settings (which would
// remove the marker where LEAKPROOF stays). Where one does, nothing is
// rewritten.
func leakproofMarkable(files []File) bool {
	for _, f := range files {
		if !strings.Contains(strings.ToUpper(f.Text), "LEAKPROOF") {
			continue
		}
		stmts, err := sqlsplit.Split(f.Text)
		if err != nil {
			return false
		}
		for _, st := range stmts {
			opts, _ := functionOptions(st.Node)
			if setsApplicationName(opts) {
				return false
			}
		}
	}
	return true
}

// withoutLeakproof returns text with each such LEAKPROOF replaced by the
// marker setting, and how many it replaced. Lines keep their numbers.
func withoutLeakproof(text, marker string) (string, int) {
	if !strings.Contains(strings.ToUpper(text), "LEAKPROOF") {
		return text, 0
	}
	n := 0
	out := rewrite(text, func(st sqlsplit.Stmt) (string, bool) {
		opts, ok := functionOptions(st.Node)
		alter := st.Node.GetAlterFunctionStmt() != nil
		if !ok || !(declaresLeakproof(opts) || alter && writesLeakproof(opts)) {
			return "", false
		}
		rewritten, ok := replaceLeakproof(st.Text(text), marker, alter)
		if ok {
			n++
		}
		return rewritten, ok
	})
	return out, n
}

// functionOptions is the options of a CREATE FUNCTION or the actions of an
// ALTER FUNCTION, where LEAKPROOF is written.
func functionOptions(n *pg.Node) ([]*pg.Node, bool) {
	switch {
	case n.GetCreateFunctionStmt() != nil:
		return n.GetCreateFunctionStmt().GetOptions(), true
	case n.GetAlterFunctionStmt() != nil:
		return n.GetAlterFunctionStmt().GetActions(), true
	}
	return nil, false
}

func declaresLeakproof(opts []*pg.Node) bool {
	for _, o := range opts {
		if d := o.GetDefElem(); d.GetDefname() == "leakproof" && d.GetArg().GetBoolean().GetBoolval() {
			return true
		}
	}
	return false
}

// writesLeakproof: LEAKPROOF or NOT LEAKPROOF is among opts.
func writesLeakproof(opts []*pg.Node) bool {
	for _, o := range opts {
		if o.GetDefElem().GetDefname() == "leakproof" {
			return true
		}
	}
	return false
}

// setsApplicationName: opts set or reset application_name, or reset all.
func setsApplicationName(opts []*pg.Node) bool {
	for _, o := range opts {
		d := o.GetDefElem()
		v := d.GetArg().GetVariableSetStmt()
		if d.GetDefname() == "set" && (v.GetKind() == pg.VariableSetKind_VAR_RESET_ALL || strings.EqualFold(v.GetName(), "application_name")) {
			return true
		}
	}
	return false
}

// replaceLeakproof replaces, in one function statement, the LEAKPROOF
// keywords outside parentheses (a parameter or result column may be named
// leakproof) that no NOT precedes with the marker setting and, in an ALTER
// FUNCTION, each NOT LEAKPROOF with RESET application_name (the function is
// then not to be marked). It checks that the result parses to a function
// statement with no LEAKPROOF left and a setting for each replacement.
func replaceLeakproof(stmt, marker string, alter bool) (string, bool) {
	scan, err := pgquery.Scan(stmt)
	if err != nil {
		return "", false
	}
	var b strings.Builder
	last, depth, n := 0, 0, 0
	prev, prevStart := pg.Token_NUL, 0
	for _, t := range scan.Tokens {
		switch t.Token {
		case pg.Token_SQL_COMMENT, pg.Token_C_COMMENT:
			continue
		case pg.Token_ASCII_40:
			depth++
		case pg.Token_ASCII_41:
			depth--
		case pg.Token_LEAKPROOF:
			switch {
			case depth != 0:
			case prev != pg.Token_NOT:
				b.WriteString(stmt[last:t.Start])
				b.WriteString("SET application_name = '" + marker + "'")
				last = int(t.End)
				n++
			case alter:
				b.WriteString(stmt[last:prevStart])
				b.WriteString("RESET application_name")
				last = int(t.End)
				n++
			}
		}
		prev, prevStart = t.Token, int(t.Start)
	}
	b.WriteString(stmt[last:])
	out := b.String()
	tree, err := pgquery.Parse(out)
	if err != nil || len(tree.Stmts) != 1 {
		return "", false
	}
	opts, ok := functionOptions(tree.Stmts[0].Stmt)
	if !ok || declaresLeakproof(opts) || alter && writesLeakproof(opts) {
		return "", false
	}
	settings := 0
	for _, o := range opts {
		d := o.GetDefElem()
		v := d.GetArg().GetVariableSetStmt()
		if d.GetDefname() != "set" || v.GetName() != "application_name" {
			continue
		}
		if v.GetKind() == pg.VariableSetKind_VAR_RESET || len(v.GetArgs()) == 1 && v.GetArgs()[0].GetAConst().GetSval().GetSval() == marker {
			settings++
		}
	}
	return out, n > 0 && settings == n
}
