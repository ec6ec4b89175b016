package shellenv

import (
	"path"
	"strings"

	"mvdan.cc/sh/v3/syntax"
)

// funcDef is a function the script defined, with the state it was defined
// in, so a function that is never called directly is still analyzed.
type funcDef struct {
	body   *syntax.Stmt
	scope  *scope
	at     *syntax.Pos
	via    string
	called bool
}

// analyzer walks one script and the code it hands to other shells.
type analyzer struct {
	reads    []Read
	problems []Problem
	// at and via, when set, place every finding at the word holding the
	// code being analyzed: that code has no position of its own in the
	// published text.
	at      *syntax.Pos
	via     string
	depth   int
	steps   int
	over    bool
	defs    []*funcDef
	calling map[*syntax.Stmt]bool
	// written are the files the script writes, so that running one of them
	// is seen as running code the step built.
	written map[string]bool
	// traps set by the script itself run when it exits, with what it set
	// by then.
	traps []trapCode
}

type trapCode struct {
	code string
	at   syntax.Pos
}

func newAnalyzer() *analyzer {
	return &analyzer{calling: map[*syntax.Stmt]bool{}, written: map[string]bool{}}
}

// top walks a whole script, then the functions it never called directly:
// they could still run under a name built at run time.
func (a *analyzer) top(stmts []*syntax.Stmt) {
	_, done := a.stmts(stmts, newShell(nil), false)
	defer func() {
		for _, t := range a.traps {
			a.nested(t.code, t.at, "code handed to trap", done.clone())
		}
	}()
	for i := 0; i < len(a.defs); i++ {
		d := a.defs[i]
		if d.called {
			continue
		}
		d.called = true
		at, via := a.at, a.via
		a.at, a.via = d.at, d.via
		a.calling[d.body] = true
		a.stmt(d.body, d.scope, false)
		delete(a.calling, d.body)
		a.at, a.via = at, via
	}
}

func (a *analyzer) pos(p syntax.Pos) (uint, uint) {
	if a.at != nil {
		p = *a.at
	}
	return p.Line(), p.Col()
}

func (a *analyzer) read(name string, p syntax.Pos, via string) {
	if strings.Contains(name, runTimeValue) {
		a.problem(p, "reads a name chosen at run time", "name each environment variable literally")
		return
	}
	if a.via != "" {
		via = a.via
	}
	l, c := a.pos(p)
	a.reads = append(a.reads, Read{Name: name, Line: l, Col: c, Via: via})
}

func (a *analyzer) problem(p syntax.Pos, what, instead string) {
	if a.via != "" {
		what += " (in " + a.via + ")"
	}
	l, c := a.pos(p)
	pr := Problem{Line: l, Col: c, What: what, Instead: instead}
	for _, q := range a.problems {
		if q == pr {
			return
		}
	}
	a.problems = append(a.problems, pr)
}

// tick counts work so that a hostile script (functions calling each other
// many times over) cannot make the analysis run for ever.
func (a *analyzer) tick(p syntax.Pos) bool {
	a.steps++
	if a.steps > maxSteps {
		if !a.over {
			a.over = true
			a.problem(p, "is too complex to analyze", "write a shorter command")
		}
		return false
	}
	return true
}

// readUnlessOwn records a read of name unless the shell set it itself.
func (a *analyzer) readUnlessOwn(name string, s *scope, p syntax.Pos, via string) {
	if special(name) {
		return
	}
	if _, ok := s.own[name]; ok {
		return
	}
	a.read(name, p, via)
}

// special reports the parameters the shell sets ($?, $$, $#, $@, $*, $!,
// $-, $0, $1, ${10}...).
func special(name string) bool {
	if name == "" {
		return true
	}
	if len(name) == 1 && strings.ContainsAny(name, "?$#@*!-") {
		return true
	}
	return strings.Trim(name, "0123456789") == ""
}

// stmts walks a list run in sequence: each statement starts from the state
// the previous one left, whatever its outcome.
func (a *analyzer) stmts(list []*syntax.Stmt, s *scope, piped bool) (ok, done *scope) {
	ok, done = s, s
	for _, st := range list {
		ok, done = a.stmt(st, done, piped)
	}
	return ok, done
}

// stmt returns the state when the statement succeeded and the state it
// certainly leaves whatever its outcome, so that `a && b` sees what a set.
func (a *analyzer) stmt(st *syntax.Stmt, s *scope, piped bool) (ok, done *scope) {
	if st == nil || !a.tick(st.Pos()) {
		return s, s
	}
	r := s.clone()
	for _, rd := range st.Redirs {
		if rd.Word != nil {
			a.word(rd.Word, r)
			if t, known := a.text(rd.Word, r, true); known {
				a.environFile(t, rd.Word.Pos())
				switch rd.Op {
				case syntax.RdrOut, syntax.AppOut, syntax.RdrClob, syntax.RdrInOut, syntax.RdrAll, syntax.AppAll:
					a.written[path.Clean(t)] = true
				}
			}
		}
		if rd.Hdoc != nil {
			a.word(rd.Hdoc, r)
		}
		if rd.Op == syntax.RdrIn || rd.Op == syntax.Hdoc || rd.Op == syntax.DashHdoc || rd.Op == syntax.WordHdoc {
			piped = false
		}
	}
	if st.Background {
		a.command(st, s.clone(), piped)
		return s, s
	}
	ok, done = a.command(st, s, piped)
	if st.Negated {
		ok = done
	}
	return ok, done
}

func (a *analyzer) command(st *syntax.Stmt, s *scope, piped bool) (ok, done *scope) {
	switch c := st.Cmd.(type) {
	case nil:
		return s, s
	case *syntax.CallExpr:
		w := a.call(st, c, s, piped)
		return w, w
	case *syntax.BinaryCmd:
		switch c.Op {
		case syntax.AndStmt:
			okL, doneL := a.stmt(c.X, s, piped)
			okR, doneR := a.stmt(c.Y, okL, piped)
			return okR, intersect(doneL, doneR)
		case syntax.OrStmt:
			okL, doneL := a.stmt(c.X, s, piped)
			okR, doneR := a.stmt(c.Y, doneL, piped)
			return intersect(okL, okR), intersect(doneL, doneR)
		default:
			// Every part of a pipeline runs in a subshell in sh.
			a.stmt(c.X, s.clone(), piped)
			a.stmt(c.Y, s.clone(), true)
			return s, s
		}
	case *syntax.Subshell:
		a.stmts(c.Stmts, s.clone(), piped)
		return s, s
	case *syntax.Block:
		return a.stmts(c.Stmts, s, piped)
	case *syntax.IfClause:
		return a.ifClause(c, s)
	case *syntax.WhileClause:
		okC, doneC := a.stmts(c.Cond, s, false)
		if c.Until {
			a.stmts(c.Do, doneC, false)
		} else {
			a.stmts(c.Do, okC, false)
		}
		return doneC, doneC
	case *syntax.ForClause:
		return a.forClause(c, s)
	case *syntax.CaseClause:
		w := s.clone()
		a.word(c.Word, w)
		var res *scope
		catchAll := false
		for _, item := range c.Items {
			for _, p := range item.Patterns {
				a.word(p, w)
				if p.Lit() == "*" {
					catchAll = true
				}
			}
			_, doneI := a.stmts(item.Stmts, w, false)
			res = intersect(res, doneI)
		}
		if !catchAll {
			res = intersect(res, w)
		}
		return res, res
	case *syntax.FuncDecl:
		w := s.clone()
		d := &funcDef{body: c.Body, scope: w, at: a.at, via: a.via}
		a.defs = append(a.defs, d)
		// An anonymous function runs where it is written.
		if c.Name == nil {
			d.called = true
			_, done := a.stmt(c.Body, w, piped)
			return done, done
		}
		w.funcs[c.Name.Value] = d
		return w, w
	case *syntax.TimeClause:
		return a.stmt(c.Stmt, s, piped)
	default:
		// Constructs POSIX sh does not have are refused by the parser;
		// any other node still has its expansions counted.
		w := s.clone()
		syntax.Walk(c, func(n syntax.Node) bool {
			if p, ok := n.(*syntax.ParamExp); ok {
				a.param(p, w)
			}
			return true
		})
		return s, s
	}
}

func (a *analyzer) ifClause(c *syntax.IfClause, s *scope) (ok, done *scope) {
	okC, doneC := a.stmts(c.Cond, s, false)
	okT, doneT := a.stmts(c.Then, okC, false)
	if c.Else == nil {
		return intersect(okT, doneC), intersect(doneT, doneC)
	}
	var okE, doneE *scope
	if len(c.Else.Cond) == 0 {
		okE, doneE = a.stmts(c.Else.Then, doneC, false)
	} else {
		okE, doneE = a.ifClause(c.Else, doneC)
	}
	return intersect(okT, okE), intersect(doneT, doneE)
}

func (a *analyzer) forClause(c *syntax.ForClause, s *scope) (ok, done *scope) {
	w := s.clone()
	iter, isIter := c.Loop.(*syntax.WordIter)
	if !isIter {
		syntax.Walk(c.Loop, func(n syntax.Node) bool {
			if p, ok := n.(*syntax.ParamExp); ok {
				a.param(p, w)
			}
			return true
		})
		a.stmts(c.Do, w, false)
		return w, w
	}
	// Without "in", the loop runs over "$@" and may run zero times; with a
	// literal word it runs at least once.
	once := false
	for _, item := range iter.Items {
		a.word(item, w)
		if _, lit := literal(item); lit {
			once = true
		}
	}
	body := w.clone()
	if iter.Name != nil {
		body.set(iter.Name.Value, value{}, false)
	}
	_, doneB := a.stmts(c.Do, body, false)
	if once {
		return doneB, doneB
	}
	return w, w
}

// assign walks an assignment's value and sets the name in s.
func (a *analyzer) assign(as *syntax.Assign, s *scope, export bool) {
	v := value{}
	if as.Value != nil {
		a.word(as.Value, s)
		if t, ok := a.text(as.Value, s, false); ok && !as.Append {
			v = value{known: true, text: t}
		}
	}
	if as.Array != nil {
		for _, e := range as.Array.Elems {
			if e.Value != nil {
				a.word(e.Value, s)
			}
		}
	}
	if as.Index != nil {
		a.arith(as.Index, s)
	}
	if as.Name == nil {
		return
	}
	if as.Append {
		a.readUnlessOwn(as.Name.Value, s, as.Pos(), "")
	}
	s.set(as.Name.Value, v, export)
}

func (a *analyzer) word(w *syntax.Word, s *scope) {
	if w == nil {
		return
	}
	for _, part := range w.Parts {
		a.wordPart(part, s)
	}
}

func (a *analyzer) wordPart(part syntax.WordPart, s *scope) {
	switch p := part.(type) {
	case *syntax.DblQuoted:
		for _, q := range p.Parts {
			a.wordPart(q, s)
		}
	case *syntax.ParamExp:
		a.param(p, s)
	case *syntax.CmdSubst:
		a.stmts(p.Stmts, s.clone(), false)
	case *syntax.ArithmExp:
		a.arith(p.X, s)
	case *syntax.ProcSubst:
		a.stmts(p.Stmts, s.clone(), false)
	case *syntax.BraceExp:
		for _, e := range p.Elems {
			a.word(e, s)
		}
	}
}

func (a *analyzer) param(p *syntax.ParamExp, s *scope) {
	if p.Excl || p.Names != 0 || p.NestedParam != nil {
		a.problem(p.Pos(), "reads a name chosen at run time", "name each environment variable literally")
	}
	name := ""
	if p.Param != nil {
		name = p.Param.Value
		a.readUnlessOwn(name, s, p.Pos(), "")
	}
	if p.Index != nil {
		a.arith(p.Index, s)
	}
	if p.Slice != nil {
		a.arith(p.Slice.Offset, s)
		a.arith(p.Slice.Length, s)
	}
	if p.Repl != nil {
		a.word(p.Repl.Orig, s)
		a.word(p.Repl.With, s)
	}
	if p.Exp != nil {
		a.word(p.Exp.Word, s)
		if (p.Exp.Op == syntax.AssignUnset || p.Exp.Op == syntax.AssignUnsetOrNull) && name != "" && !special(name) {
			s.set(name, value{}, false)
		}
	}
}

// arith walks arithmetic, where a bare name is a read of that name.
func (a *analyzer) arith(e syntax.ArithmExpr, s *scope) {
	switch x := e.(type) {
	case nil:
	case *syntax.Word:
		if name := arithName(x); name != "" {
			a.readUnlessOwn(name, s, x.Pos(), "arithmetic")
			// Arithmetic evaluates a variable's value as an expression:
			// x=SECRET; $((x)) reads SECRET.
			for i := 0; i < 8; i++ {
				v, own := s.own[name]
				if !own || !v.known || !syntax.ValidName(v.text) {
					break
				}
				name = v.text
				a.readUnlessOwn(name, s, x.Pos(), "arithmetic")
			}
			return
		}
		a.word(x, s)
	case *syntax.BinaryArithm:
		if assignOps[x.Op] {
			if name := arithName(x.X); name != "" {
				if x.Op != syntax.Assgn {
					a.readUnlessOwn(name, s, x.Pos(), "arithmetic")
				}
				a.arith(x.Y, s)
				s.set(name, value{}, false)
				return
			}
		}
		a.arith(x.X, s)
		a.arith(x.Y, s)
	case *syntax.UnaryArithm:
		if x.Op == syntax.Inc || x.Op == syntax.Dec {
			if name := arithName(x.X); name != "" {
				a.readUnlessOwn(name, s, x.Pos(), "arithmetic")
				s.set(name, value{}, false)
				return
			}
		}
		a.arith(x.X, s)
	case *syntax.ParenArithm:
		a.arith(x.X, s)
	case *syntax.FlagsArithm:
		a.arith(x.X, s)
	}
}

var assignOps = map[syntax.BinAritOperator]bool{
	syntax.Assgn: true, syntax.AddAssgn: true, syntax.SubAssgn: true, syntax.MulAssgn: true,
	syntax.QuoAssgn: true, syntax.RemAssgn: true, syntax.AndAssgn: true, syntax.OrAssgn: true,
	syntax.XorAssgn: true, syntax.ShlAssgn: true, syntax.ShrAssgn: true, syntax.PowAssgn: true,
	syntax.AndBoolAssgn: true, syntax.OrBoolAssgn: true, syntax.XorBoolAssgn: true,
}

func arithName(e syntax.ArithmExpr) string {
	w, ok := e.(*syntax.Word)
	if !ok || len(w.Parts) != 1 {
		return ""
	}
	l, ok := w.Parts[0].(*syntax.Lit)
	if !ok || !syntax.ValidName(l.Value) {
		return ""
	}
	return l.Value
}

// literal is a word's value when it holds no expansion at all.
func literal(w *syntax.Word) (string, bool) {
	return textOf(w.Parts, nil, false, false)
}

// text is the value a word has at run time as far as the script fixes it:
// literal text and the values the script assigned. With placeholder, any
// other expansion stands for a value known only at run time; without, such
// a word has no known text.
func (a *analyzer) text(w *syntax.Word, s *scope, placeholder bool) (string, bool) {
	if w == nil {
		return "", true
	}
	return textOf(w.Parts, s, placeholder, false)
}

func textOf(parts []syntax.WordPart, s *scope, placeholder, inDq bool) (string, bool) {
	var b strings.Builder
	for _, part := range parts {
		switch p := part.(type) {
		case *syntax.Lit:
			b.WriteString(unescape(p.Value, inDq))
		case *syntax.SglQuoted:
			b.WriteString(p.Value)
		case *syntax.DblQuoted:
			t, ok := textOf(p.Parts, s, placeholder, true)
			if !ok {
				return "", false
			}
			b.WriteString(t)
		case *syntax.ParamExp:
			if s == nil || p.Param == nil {
				return "", false
			}
			name := p.Param.Value
			v, own := s.own[name]
			plain := p.Exp == nil && p.Repl == nil && p.Slice == nil && p.Index == nil && !p.Length && !p.Excl && p.Names == 0
			if own && v.known && plain {
				b.WriteString(v.text)
				continue
			}
			// A value the script computed at run time, or an argument, could
			// be any code; a number or a reader's own value is data.
			numeric := name == "?" || name == "$" || name == "#" || name == "!" || isShellSet(name)
			if !placeholder || (own && !numeric) || (special(name) && !numeric) {
				return "", false
			}
			b.WriteString(runTimeValue)
		case *syntax.ArithmExp:
			if !placeholder {
				return "", false
			}
			b.WriteString("0")
		default:
			return "", false
		}
	}
	return b.String(), true
}

func isShellSet(name string) bool {
	for _, n := range shellSet {
		if n == name {
			return true
		}
	}
	return false
}

// unescape removes the backslashes the shell removes: every one outside
// quotes, and inside double quotes those before $ ` " \ and newline.
func unescape(s string, inDq bool) string {
	if !strings.Contains(s, `\`) {
		return s
	}
	var b strings.Builder
	for i := 0; i < len(s); i++ {
		c := s[i]
		if c != '\\' || i+1 == len(s) {
			b.WriteByte(c)
			continue
		}
		n := s[i+1]
		switch {
		case n == '\n':
			i++
		case !inDq || strings.IndexByte("$`\"\\", n) >= 0:
			b.WriteByte(n)
			i++
		default:
			b.WriteByte(c)
		}
	}
	return b.String()
}
