package shellenv

import (
	"path"
	"strings"

	"mvdan.cc/sh/v3/syntax"
)

// invocation is one command about to run: its words from the command name
// on, the shell state it runs in, and the environment it gets.
type invocation struct {
	st   *syntax.Stmt
	args []*syntax.Word
	// cur is the calling shell's state, changed by builtins such as export.
	cur *scope
	// env is cur plus the assignments written before the command, which the
	// command alone sees.
	env *scope
	// piped: stdin is the previous command of a pipeline.
	piped bool
	// extraArgs: xargs appends arguments chosen at run time.
	extraArgs bool
	// replace is the text xargs -I or find -exec replaces with input in
	// the command's arguments, code included.
	replace string
}

// call walks a simple command and returns the shell state it leaves.
func (a *analyzer) call(st *syntax.Stmt, c *syntax.CallExpr, s *scope, piped bool) *scope {
	w := s.clone()
	if len(c.Args) == 0 {
		for _, as := range c.Assigns {
			a.assign(as, w, false)
		}
		return w
	}
	// The arguments are expanded before the assignments that precede the
	// command take effect, and those reach the command only.
	for _, arg := range c.Args {
		a.word(arg, w)
		if t, ok := a.text(arg, w, true); ok {
			a.environFile(t, arg.Pos())
		}
	}
	env := w.clone()
	for _, as := range c.Assigns {
		a.assign(as, env, true)
	}
	return a.run(invocation{st: st, args: c.Args, cur: w, env: env, piped: piped})
}

// environFile refuses reading the whole environment from /proc.
func (a *analyzer) environFile(t string, p syntax.Pos) {
	if strings.Contains(t, "/proc/") && strings.Contains(t, "environ") {
		a.problem(p, "reads the whole environment from /proc", "read only published names, e.g. \"$NAMESPACE\"")
	}
}

// builtin is what a command does with the names and code its arguments hold.
type builtin func(a *analyzer, in invocation) *scope

var builtins map[string]builtin

func init() {
	builtins = map[string]builtin{
		"eval":     (*analyzer).eval,
		"env":      (*analyzer).envCmd,
		"printenv": (*analyzer).printenv,
		"export":   (*analyzer).declare,
		"readonly": (*analyzer).declare,
		"local":    (*analyzer).declare,
		"declare":  (*analyzer).declare,
		"typeset":  (*analyzer).declare,
		"read":     (*analyzer).readCmd,
		"getopts":  (*analyzer).getopts,
		"set":      (*analyzer).set,
		"trap":     (*analyzer).trap,
		"alias":    (*analyzer).alias,
		"test":     (*analyzer).test,
		"[":        (*analyzer).test,
		"[[":       (*analyzer).test,
		"watch":    (*analyzer).watch,
		"find":     (*analyzer).find,
		"busybox":  func(a *analyzer, in invocation) *scope { return a.next(in, 1) },
		"envsubst": (*analyzer).envsubst,
		"tee": func(a *analyzer, in invocation) *scope {
			for _, w := range in.args[operands(in, 1, "", nil):] {
				if t, ok := a.text(w, in.cur, false); ok {
					a.written[path.Clean(t)] = true
				}
			}
			return in.cur
		},
		"ps": (*analyzer).ps,
		"compgen": func(a *analyzer, in invocation) *scope {
			a.problem(in.args[0].Pos(), "lists variable names (compgen)", "read only published names, e.g. \"$NAMESPACE\"")
			return in.cur
		},
		".":      (*analyzer).source,
		"source": (*analyzer).source,
	}
	for name, lang := range languages {
		builtins[name] = func(a *analyzer, in invocation) *scope { return a.foreign(in, lang) }
	}
	for _, sh := range shells {
		builtins[sh] = (*analyzer).shell
	}
	for name := range wrappers {
		builtins[name] = (*analyzer).wrapper
	}
	// Commands that run their arguments elsewhere: names there are the
	// remote side's, which a reader's cluster has too.
	for _, name := range []string{"kubectl", "oc", "ssh", "docker", "podman", "crictl", "nerdctl"} {
		builtins[name] = func(a *analyzer, in invocation) *scope { return in.cur }
	}
}

var shells = []string{"sh", "bash", "dash", "ash", "ksh", "mksh", "zsh", "posh", "yash"}

// run looks at what the command named by in.args[0] does.
func (a *analyzer) run(in invocation) *scope {
	if len(in.args) == 0 {
		return in.cur
	}
	name, ok := a.text(in.args[0], in.cur, false)
	if !ok {
		// A path built at run time names a file; a bare name built at run
		// time could be any command, env and eval included.
		if !hasLiteralSlash(in.args[0]) {
			a.problem(in.args[0].Pos(), "runs a command whose name is chosen at run time", "write the command's name literally")
		}
		return in.cur
	}
	if a.written[path.Clean(name)] {
		a.problem(in.args[0].Pos(), "runs a script the step writes itself", "write its commands in run directly, so their names can be read")
		return in.cur
	}
	if !strings.Contains(name, "/") {
		if d, ok := in.cur.funcs[name]; ok {
			return a.callFunc(d, in)
		}
	}
	if b, ok := builtins[path.Base(name)]; ok {
		return b(a, in)
	}
	return in.cur
}

// next runs the command that starts skip words further on.
func (a *analyzer) next(in invocation, skip int) *scope {
	if skip >= len(in.args) {
		return in.cur
	}
	in.args = in.args[skip:]
	return a.run(in)
}

// callFunc walks a function body where it is called: it runs in the
// calling shell and sees the assignments written before the call.
func (a *analyzer) callFunc(d *funcDef, in invocation) *scope {
	d.called = true
	if a.calling[d.body] {
		return in.cur
	}
	a.calling[d.body] = true
	defer delete(a.calling, d.body)
	_, done := a.stmt(d.body, in.env, false)
	return done
}

// nested walks code handed to a shell as a string.
func (a *analyzer) nested(code string, at syntax.Pos, via string, s *scope) *scope {
	if a.depth >= maxCodeDepth {
		a.problem(at, "nests code in code too deeply", "write the commands in run directly")
		return s
	}
	f, err := parse(code)
	if err != nil {
		a.problem(at, "hands "+via+" code that is not POSIX sh ("+err.Error()+")", "write the commands in run directly")
		return s
	}
	saveAt, saveVia := a.at, a.via
	if a.at == nil {
		a.at = &at
	}
	if a.via == "" {
		a.via = via
	}
	a.depth++
	_, done := a.stmts(f.Stmts, s, false)
	a.depth--
	a.at, a.via = saveAt, saveVia
	return done
}

// code is the text a list of words hands over as code, joined by spaces as
// eval joins them; false when part of it is computed at run time.
func (a *analyzer) code(words []*syntax.Word, s *scope) (string, bool) {
	parts := make([]string, 0, len(words))
	for _, w := range words {
		t, ok := a.text(w, s, true)
		if !ok {
			return "", false
		}
		parts = append(parts, t)
	}
	return strings.Join(parts, " "), true
}

func (a *analyzer) runTimeCode(p syntax.Pos, what string) {
	a.problem(p, "hands "+what+" code built at run time", "write the commands in run directly, so their names can be read")
}

// operands skips a command's options: flags taking a value are listed in
// withArg (short letters) and withLong (long names); it returns the index
// of the first operand.
func operands(in invocation, from int, withArg string, withLong []string) int {
	i := from
	for ; i < len(in.args); i++ {
		t, ok := literal(in.args[i])
		if !ok || t == "-" || !strings.HasPrefix(t, "-") {
			return i
		}
		if t == "--" {
			return i + 1
		}
		if strings.HasPrefix(t, "--") {
			if !strings.Contains(t, "=") {
				for _, l := range withLong {
					if t == "--"+l {
						i++
					}
				}
			}
			continue
		}
		// A cluster such as -rp takes the next word when its last letter
		// takes a value and nothing follows it in the cluster.
		for j := 1; j < len(t); j++ {
			if strings.IndexByte(withArg, t[j]) >= 0 {
				if j == len(t)-1 {
					i++
				}
				break
			}
		}
	}
	return i
}

func (a *analyzer) eval(in invocation) *scope {
	if len(in.args) < 2 {
		return in.cur
	}
	if in.extraArgs {
		a.runTimeCode(in.args[0].Pos(), "eval")
		return in.cur
	}
	code, ok := a.code(in.args[1:], in.env)
	if !ok {
		a.runTimeCode(in.args[1].Pos(), "eval")
		return in.cur
	}
	// eval runs in the calling shell: what its code sets stays set.
	return a.nested(code, in.args[1].Pos(), "code handed to eval", in.env)
}

// shell follows sh -c CODE, a shell reading a here-document, and a shell
// reading its commands from a pipe. A shell running a script file runs
// code outside the step, as any program does.
func (a *analyzer) shell(in invocation) *scope {
	name, _ := literal(in.args[0])
	name = path.Base(name)
	hasC, fromStdin := false, false
	i := 1
	for ; i < len(in.args); i++ {
		t, ok := literal(in.args[i])
		if !ok {
			break
		}
		if t == "--" || t == "-" {
			i++
			break
		}
		if len(t) < 2 || (t[0] != '-' && t[0] != '+') {
			break
		}
		if strings.HasPrefix(t, "--") {
			if t == "--rcfile" || t == "--init-file" {
				i++
			}
			continue
		}
		flags := t[1:]
		if t[0] == '-' && strings.ContainsRune(flags, 'c') {
			hasC = true
		}
		if strings.ContainsRune(flags, 's') {
			fromStdin = true
		}
		if strings.ContainsAny(flags, "oO") {
			i++
		}
	}
	child := newShell(in.env.exportedValues())
	via := "code handed to " + name
	switch {
	case hasC:
		if i >= len(in.args) {
			if in.extraArgs {
				a.runTimeCode(in.args[0].Pos(), name+" -c")
			}
			return in.cur
		}
		code, ok := a.code(in.args[i:i+1], in.cur)
		if !ok || (in.replace != "" && strings.Contains(code, in.replace)) {
			a.runTimeCode(in.args[i].Pos(), name+" -c")
			return in.cur
		}
		a.nested(code, in.args[i].Pos(), via+" -c", child)
	case i < len(in.args) && !fromStdin:
		file, ok := a.text(in.args[i], in.cur, false)
		switch {
		case ok && stdinFiles[file]:
			a.shellStdin(in, via, child)
		case ok && a.written[path.Clean(file)]:
			a.problem(in.args[i].Pos(), "runs a script the step writes itself", "write its commands in run directly, so their names can be read")
		}
	default:
		a.shellStdin(in, via, child)
	}
	return in.cur
}

// shellStdin follows a shell that reads its commands from stdin.
func (a *analyzer) shellStdin(in invocation, via string, child *scope) *scope {
	for _, rd := range in.st.Redirs {
		switch rd.Op {
		case syntax.Hdoc, syntax.DashHdoc:
			code, ok := a.heredoc(rd, in.cur)
			if !ok {
				a.runTimeCode(rd.Pos(), "a shell")
				return in.cur
			}
			return a.nested(code, rd.Pos(), via+" in a here-document", child)
		case syntax.WordHdoc:
			code, ok := a.code([]*syntax.Word{rd.Word}, in.cur)
			if !ok {
				a.runTimeCode(rd.Pos(), "a shell")
				return in.cur
			}
			return a.nested(code, rd.Pos(), via+" in a here-string", child)
		case syntax.RdrIn:
			if t, ok := a.text(rd.Word, in.cur, false); ok && a.written[path.Clean(t)] {
				a.problem(rd.Pos(), "runs a script the step writes itself", "write its commands in run directly, so their names can be read")
			}
			return in.cur
		}
	}
	if in.piped {
		a.problem(in.args[0].Pos(), "pipes code into a shell", "write the commands in run directly, so their names can be read")
	}
	return in.cur
}

// heredoc is the text a here-document hands its command: verbatim when
// its delimiter is quoted, expanded otherwise.
func (a *analyzer) heredoc(rd *syntax.Redirect, s *scope) (string, bool) {
	if rd.Hdoc == nil {
		return "", true
	}
	if d, ok := literal(rd.Word); !ok || d != rd.Word.Lit() {
		// A quoted delimiter: the body is plain text.
		var b strings.Builder
		for _, p := range rd.Hdoc.Parts {
			if l, ok := p.(*syntax.Lit); ok {
				b.WriteString(l.Value)
			}
		}
		return b.String(), true
	}
	return textOf(rd.Hdoc.Parts, s, true, true)
}

func (a *analyzer) envCmd(in invocation) *scope {
	env := in.env.clone()
	i := 1
	for ; i < len(in.args); i++ {
		w := in.args[i]
		if name, ok := assignPrefix(w); ok {
			t, known := a.text(w, in.cur, false)
			v := value{}
			if known {
				v = value{known: true, text: t[len(name)+1:]}
			}
			env.set(name, v, true)
			continue
		}
		t, ok := literal(w)
		if !ok || !strings.HasPrefix(t, "-") || t == "-" {
			if t == "-" {
				continue
			}
			break
		}
		if t == "--" {
			i++
			break
		}
		if strings.HasPrefix(t, "-S") || strings.HasPrefix(t, "--split-string") || (strings.HasPrefix(t, "-") && !strings.HasPrefix(t, "--") && strings.Contains(t, "S")) {
			a.problem(w.Pos(), "uses env -S, which expands names itself", "write the command and its arguments directly")
			return in.cur
		}
		if t == "-u" || t == "--unset" || t == "-C" || t == "--chdir" {
			i++
		}
	}
	if i >= len(in.args) {
		if in.extraArgs {
			a.problem(in.args[0].Pos(), "runs env with arguments chosen at run time", "print the names you need, e.g. printenv NAMESPACE")
		} else {
			a.problem(in.args[0].Pos(), "prints the whole environment (env with no command)", "print the names you need, e.g. printenv NAMESPACE")
		}
		return in.cur
	}
	in.env = env
	a.next(in, i)
	return in.cur
}

func (a *analyzer) printenv(in invocation) *scope {
	if in.extraArgs {
		a.problem(in.args[0].Pos(), "runs printenv with names chosen at run time", "name each variable literally")
		return in.cur
	}
	i := operands(in, 1, "", nil)
	if i >= len(in.args) {
		a.problem(in.args[0].Pos(), "prints the whole environment (printenv with no name)", "name the variables you need, e.g. printenv NAMESPACE")
		return in.cur
	}
	for _, w := range in.args[i:] {
		name, ok := a.text(w, in.cur, false)
		if !ok {
			a.problem(w.Pos(), "runs printenv with a name chosen at run time", "name each variable literally")
			continue
		}
		if _, own := in.env.own[name]; own && in.env.exported[name] {
			continue
		}
		a.read(name, w.Pos(), "printenv")
	}
	return in.cur
}

// declare follows export, readonly, local, declare and typeset.
func (a *analyzer) declare(in invocation) *scope {
	cmd, _ := literal(in.args[0])
	i := operands(in, 1, "", nil)
	if i >= len(in.args) {
		if cmd == "export" || cmd == "declare" || cmd == "typeset" {
			a.problem(in.args[0].Pos(), "prints the whole environment ("+cmd+" with no name)", "print the names you need, e.g. printenv NAMESPACE")
		}
		return in.cur
	}
	printing := false
	for _, w := range in.args[1:i] {
		if t, _ := literal(w); strings.Contains(t, "p") {
			printing = true
		}
	}
	for _, w := range in.args[i:] {
		if name, ok := assignPrefix(w); ok {
			v := value{}
			if t, known := a.text(w, in.cur, false); known {
				v = value{known: true, text: t[len(name)+1:]}
			}
			in.cur.set(name, v, cmd == "export")
			continue
		}
		name, ok := literal(w)
		if !ok || !syntax.ValidName(name) {
			continue
		}
		switch {
		case cmd == "export":
			in.cur.exported[name] = true
		case printing:
			a.readUnlessOwn(name, in.cur, w.Pos(), cmd+" -p")
		}
	}
	return in.cur
}

// assignPrefix is the name of a NAME=value word.
func assignPrefix(w *syntax.Word) (string, bool) {
	if len(w.Parts) == 0 {
		return "", false
	}
	l, ok := w.Parts[0].(*syntax.Lit)
	if !ok {
		return "", false
	}
	eq := strings.IndexByte(l.Value, '=')
	if eq <= 0 || !syntax.ValidName(l.Value[:eq]) {
		return "", false
	}
	return l.Value[:eq], true
}

func (a *analyzer) readCmd(in invocation) *scope {
	targets := 0
	i := 1
	for ; i < len(in.args); i++ {
		t, ok := literal(in.args[i])
		if !ok || !strings.HasPrefix(t, "-") || t == "-" {
			break
		}
		if t == "--" {
			i++
			break
		}
		for j := 1; j < len(t); j++ {
			if strings.IndexByte("pdtnNuia", t[j]) >= 0 {
				if j == len(t)-1 && i+1 < len(in.args) {
					i++
					if t[j] == 'a' {
						if n, ok := literal(in.args[i]); ok && syntax.ValidName(n) {
							in.cur.set(n, value{}, false)
							targets++
						}
					}
				}
				break
			}
		}
	}
	for _, w := range in.args[i:] {
		if n, ok := literal(w); ok && syntax.ValidName(n) {
			in.cur.set(n, value{}, false)
			targets++
		}
	}
	if targets == 0 {
		in.cur.set("REPLY", value{}, false)
	}
	return in.cur
}

func (a *analyzer) getopts(in invocation) *scope {
	if len(in.args) >= 3 {
		if n, ok := literal(in.args[2]); ok && syntax.ValidName(n) {
			in.cur.set(n, value{}, false)
		}
	}
	in.cur.set("OPTARG", value{}, false)
	return in.cur
}

func (a *analyzer) set(in invocation) *scope {
	if len(in.args) == 1 {
		a.problem(in.args[0].Pos(), "prints every variable, the environment included (set with no arguments)", "print the names you need, e.g. printenv NAMESPACE")
		return in.cur
	}
	for i := 1; i < len(in.args); i++ {
		t, ok := literal(in.args[i])
		if !ok || t == "--" || len(t) < 2 || (t[0] != '-' && t[0] != '+') {
			break
		}
		on := t[0] == '-'
		if t[1:] == "o" && i+1 < len(in.args) {
			i++
			if o, _ := literal(in.args[i]); o == "allexport" {
				in.cur.allexport = on
			}
			continue
		}
		if strings.ContainsRune(t[1:], 'a') {
			in.cur.allexport = on
		}
	}
	return in.cur
}

// trap's action is code the shell runs later, in the same shell.
func (a *analyzer) trap(in invocation) *scope {
	if len(in.args) < 3 {
		return in.cur
	}
	action, ok := literal(in.args[1])
	if ok && (action == "-" || action == "" || action == "--" || strings.Trim(action, "0123456789") == "") {
		return in.cur
	}
	code, ok := a.code(in.args[1:2], in.cur)
	if !ok {
		a.runTimeCode(in.args[1].Pos(), "trap")
		return in.cur
	}
	if a.depth == 0 && a.at == nil {
		a.traps = append(a.traps, trapCode{code: code, at: in.args[1].Pos()})
		return in.cur
	}
	a.nested(code, in.args[1].Pos(), "code handed to trap", in.cur.clone())
	return in.cur
}

// alias values are code the shell runs where the alias is used.
func (a *analyzer) alias(in invocation) *scope {
	for _, w := range in.args[1:] {
		name, ok := assignPrefix(w)
		if !ok {
			continue
		}
		t, ok := a.text(w, in.cur, true)
		if !ok {
			a.runTimeCode(w.Pos(), "alias")
			continue
		}
		a.nested(t[len(name)+1:], w.Pos(), "an alias", in.cur.clone())
	}
	return in.cur
}

// test follows `test -v NAME` and, in [[ ]], names compared as numbers,
// which bash reads as arithmetic.
func (a *analyzer) test(in invocation) *scope {
	cmd, _ := literal(in.args[0])
	for i := 1; i < len(in.args); i++ {
		t, _ := literal(in.args[i])
		if t == "-v" && i+1 < len(in.args) {
			if n, ok := literal(in.args[i+1]); ok && syntax.ValidName(n) {
				a.readUnlessOwn(n, in.cur, in.args[i+1].Pos(), "test -v")
			}
		}
		if cmd != "[[" {
			continue
		}
		switch t {
		case "-eq", "-ne", "-lt", "-le", "-gt", "-ge":
			for _, j := range []int{i - 1, i + 1} {
				if j < 1 || j >= len(in.args) {
					continue
				}
				if n, ok := literal(in.args[j]); ok && syntax.ValidName(n) {
					a.readUnlessOwn(n, in.cur, in.args[j].Pos(), "arithmetic")
				}
			}
		}
	}
	return in.cur
}

// watch runs its arguments, joined, with sh -c unless told -x.
func (a *analyzer) watch(in invocation) *scope {
	i := operands(in, 1, "nq", []string{"interval", "equexit"})
	for _, w := range in.args[1:i] {
		if t, _ := literal(w); t == "-x" || t == "--exec" {
			return a.next(in, i)
		}
	}
	if i >= len(in.args) {
		return in.cur
	}
	code, ok := a.code(in.args[i:], in.cur)
	if !ok {
		a.runTimeCode(in.args[i].Pos(), "watch")
		return in.cur
	}
	a.nested(code, in.args[i].Pos(), "code handed to watch", newShell(in.env.exportedValues()))
	return in.cur
}

// find runs the commands after -exec and -ok.
func (a *analyzer) find(in invocation) *scope {
	for i := 1; i < len(in.args); i++ {
		t, _ := literal(in.args[i])
		if t != "-exec" && t != "-execdir" && t != "-ok" && t != "-okdir" {
			continue
		}
		j := i + 1
		for ; j < len(in.args); j++ {
			if e, _ := literal(in.args[j]); e == ";" || e == "+" {
				break
			}
		}
		sub := in
		sub.args = in.args[i+1 : j]
		sub.cur = in.cur.clone()
		sub.replace = "{}"
		if len(sub.args) > 0 {
			a.run(sub)
		}
		i = j
	}
	return in.cur
}

// wrapper describes a command that runs another command: its options
// taking a value, and the operands before the command it runs.
type wrapper struct {
	withArg  string
	withLong []string
	before   int
	// code names the option whose value is code for sh -c.
	code string
	// lookup names options that only look the command up.
	lookup string
	// extraArgs: the wrapped command gets arguments chosen at run time.
	extraArgs bool
}

var wrappers = map[string]wrapper{
	"command":    {lookup: "vV"},
	"builtin":    {},
	"exec":       {withArg: "a"},
	"nohup":      {},
	"time":       {withArg: "fo"},
	"nice":       {withArg: "n", withLong: []string{"adjustment"}},
	"timeout":    {withArg: "sk", withLong: []string{"signal", "kill-after"}, before: 1},
	"setsid":     {},
	"stdbuf":     {withArg: "ioe", withLong: []string{"input", "output", "error"}},
	"sudo":       {withArg: "ughpCDrtUT", withLong: []string{"user", "group", "host", "prompt", "chdir"}},
	"doas":       {withArg: "uC"},
	"chronic":    {},
	"unbuffer":   {},
	"ionice":     {withArg: "cnp", withLong: []string{"class", "classdata", "pid"}},
	"taskset":    {before: 1},
	"chroot":     {withLong: []string{"userspec", "groups"}, before: 1},
	"flock":      {withArg: "wEc", withLong: []string{"timeout", "conflict-exit-code", "command"}, before: 1, code: "c"},
	"script":     {withArg: "cEeIOTtlmB", withLong: []string{"command", "log-io", "log-in", "log-out", "log-timing"}, code: "c"},
	"su":         {withArg: "cgGsw", withLong: []string{"command", "group", "shell"}, code: "c"},
	"xargs":      {withArg: "IaEdLnPs", withLong: []string{"arg-file", "delimiter", "max-args", "max-procs", "max-chars", "max-lines", "replace"}, extraArgs: true},
	"strace":     {withArg: "abeEIoOpPsSUX"},
	"ltrace":     {withArg: "aAeEflnoOpsSuwX"},
	"caffeinate": {},
	"parallel":   {withArg: "jS", extraArgs: true},
}

func (a *analyzer) wrapper(in invocation) *scope {
	cmd, _ := literal(in.args[0])
	name := path.Base(cmd)
	wr := wrappers[name]
	i := 1
	// Options, then the operands before the command (flock's file), whose
	// options may follow them.
	for round := 0; round < 2; round++ {
		j := operands(in, i, wr.withArg, wr.withLong)
		for k := i; k < j && k < len(in.args); k++ {
			t, _ := literal(in.args[k])
			if !strings.HasPrefix(t, "-") {
				continue
			}
			long := strings.HasPrefix(t, "--")
			if wr.lookup != "" && !long && strings.ContainsAny(t[1:], wr.lookup) {
				return in.cur
			}
			isCode := wr.code != "" && ((!long && strings.HasSuffix(t, wr.code)) || t == "--command")
			if isCode && k+1 < len(in.args) {
				code, ok := a.code(in.args[k+1:k+2], in.cur)
				if !ok {
					a.runTimeCode(in.args[k+1].Pos(), name)
					return in.cur
				}
				a.nested(code, in.args[k+1].Pos(), "code handed to "+name, newShell(in.env.exportedValues()))
				return in.cur
			}
		}
		i = j
		if round == 0 {
			// sudo and env-like wrappers take NAME=value before the command.
			for i < len(in.args) {
				n, ok := assignPrefix(in.args[i])
				if !ok {
					break
				}
				in.env = in.env.clone()
				in.env.set(n, value{}, true)
				i++
			}
			if wr.before == 0 {
				break
			}
			i += wr.before
		}
	}
	if wr.extraArgs {
		in.extraArgs = true
		in.replace = replaceString(in, i)
	}
	if i >= len(in.args) {
		return in.cur
	}
	sub := in
	sub.args = in.args[i:]
	done := a.run(sub)
	if name == "command" {
		// command runs builtins such as eval in this same shell.
		return done
	}
	return in.cur
}

func hasLiteralSlash(w *syntax.Word) bool {
	found := false
	syntax.Walk(w, func(n syntax.Node) bool {
		switch x := n.(type) {
		case *syntax.Lit:
			found = found || strings.Contains(x.Value, "/")
		case *syntax.SglQuoted:
			found = found || strings.Contains(x.Value, "/")
		case *syntax.CmdSubst, *syntax.ParamExp, *syntax.ArithmExp:
			return false
		}
		return true
	})
	return found
}

// stdinFiles name a shell's own stdin.
var stdinFiles = map[string]bool{"/dev/stdin": true, "/dev/fd/0": true, "/proc/self/fd/0": true, "-": true}

// source follows ". FILE": a script file runs code outside the step, as any
// program does, but stdin or a file the step wrote is code it hands over.
func (a *analyzer) source(in invocation) *scope {
	if len(in.args) < 2 {
		return in.cur
	}
	file, ok := a.text(in.args[1], in.cur, false)
	switch {
	case !ok:
		a.problem(in.args[1].Pos(), "sources a file chosen at run time", "write its commands in run directly")
	case stdinFiles[file]:
		return a.shellStdin(in, "code sourced from stdin", in.env)
	case a.written[path.Clean(file)]:
		a.problem(in.args[1].Pos(), "sources a script the step writes itself", "write its commands in run directly, so their names can be read")
	}
	return in.cur
}

// replaceString is the string xargs -I (or -i) replaces with each input.
func replaceString(in invocation, end int) string {
	for k := 1; k < end && k < len(in.args); k++ {
		t, _ := literal(in.args[k])
		switch {
		case t == "-I" && k+1 < len(in.args):
			r, _ := literal(in.args[k+1])
			return r
		case strings.HasPrefix(t, "-I"):
			return t[2:]
		case t == "-i" || t == "--replace":
			return "{}"
		case strings.HasPrefix(t, "-i"):
			return t[2:]
		case strings.HasPrefix(t, "--replace="):
			return strings.TrimPrefix(t, "--replace=")
		}
	}
	return ""
}
