package shellenv

import (
	"path"
	"regexp"
	"strings"

	"mvdan.cc/sh/v3/syntax"
)

// language is how a program other than the shell reads its environment
// from the text of its arguments: patterns whose first group is a name,
// and patterns that read every name at once.
type language struct {
	names []*regexp.Regexp
	all   []*regexp.Regexp
}

var (
	awk = language{
		names: []*regexp.Regexp{regexp.MustCompile(`ENVIRON\[\s*"(\w+)"\s*\]`)},
		all:   []*regexp.Regexp{regexp.MustCompile(`\bENVIRON\b`)},
	}
	jq = language{
		names: []*regexp.Regexp{
			regexp.MustCompile(`\$ENV\s*\.\s*(\w+)`), regexp.MustCompile(`\$ENV\s*\[\s*"(\w+)"\s*\]`),
			regexp.MustCompile(`(?:^|[^.\w$])env\s*\.\s*(\w+)`), regexp.MustCompile(`(?:^|[^.\w$])env\s*\[\s*"(\w+)"\s*\]`),
		},
		all: []*regexp.Regexp{regexp.MustCompile(`\$ENV\b`), regexp.MustCompile(`(?:^|[^.\w$"])env\b`)},
	}
	perl = language{
		names: []*regexp.Regexp{regexp.MustCompile(`\$ENV\s*\{\s*["']?(\w+)["']?\s*\}`)},
		all:   []*regexp.Regexp{regexp.MustCompile(`\bENV\b`)},
	}
	python = language{
		names: []*regexp.Regexp{
			regexp.MustCompile(`environ\s*\[\s*["'](\w+)["']\s*\]`), regexp.MustCompile(`environ\.get\(\s*["'](\w+)["']`),
			regexp.MustCompile(`getenv\(\s*["'](\w+)["']`),
		},
		all: []*regexp.Regexp{regexp.MustCompile(`\benviron\b`), regexp.MustCompile(`\bgetenv\b`)},
	}
	ruby = language{
		names: []*regexp.Regexp{regexp.MustCompile(`ENV\s*\[\s*["'](\w+)["']\s*\]`), regexp.MustCompile(`ENV\.fetch\(\s*["'](\w+)["']`)},
		all:   []*regexp.Regexp{regexp.MustCompile(`\bENV\b`)},
	}
	node = language{
		names: []*regexp.Regexp{regexp.MustCompile(`process\.env\.(\w+)`), regexp.MustCompile(`process\.env\s*\[\s*["'](\w+)["']\s*\]`)},
		all:   []*regexp.Regexp{regexp.MustCompile(`process\.env\b`)},
	}
)

var languages = map[string]language{
	"awk": awk, "gawk": awk, "mawk": awk, "nawk": awk,
	"jq": jq, "gojq": jq, "yq": jq,
	"perl":   perl,
	"python": python, "python3": python,
	"ruby": ruby,
	"node": node, "nodejs": node,
}

// foreign reads the environment names a program in another language reads
// in the text of its arguments. A read through a name it builds at run
// time, or of every name, is a problem.
func (a *analyzer) foreign(in invocation, lang language) *scope {
	prog := path.Base(in.argText(0))
	for _, w := range in.args[1:] {
		t, ok := a.text(w, in.cur, true)
		if !ok {
			continue
		}
		var named [][]int
		for _, re := range lang.names {
			for _, m := range re.FindAllStringSubmatchIndex(t, -1) {
				named = append(named, m[:2])
				a.readExported(t[m[2]:m[3]], in.env, w.Pos(), prog)
			}
		}
		for _, re := range lang.all {
			for _, m := range re.FindAllStringIndex(t, -1) {
				if !overlaps(m, named) {
					a.problem(w.Pos(), "reads the environment in "+prog+" through a name chosen at run time", "read a published name literally, e.g. "+example(lang))
				}
			}
		}
	}
	return in.cur
}

func overlaps(m []int, spans [][]int) bool {
	for _, s := range spans {
		if m[0] < s[1] && s[0] < m[1] {
			return true
		}
	}
	return false
}

func example(lang language) string {
	switch {
	case lang.names[0] == awk.names[0]:
		return `ENVIRON["NAMESPACE"]`
	case lang.names[0] == jq.names[0]:
		return `$ENV.NAMESPACE`
	}
	return "the NAMESPACE variable by its name"
}

// readExported records a read of name by a child process: it sees the name
// only when the shell exported it, or from the environment.
func (a *analyzer) readExported(name string, env *scope, p syntax.Pos, via string) {
	if _, own := env.own[name]; own && env.exported[name] {
		return
	}
	a.read(name, p, via)
}

func (in invocation) argText(i int) string {
	t, _ := literal(in.args[i])
	return t
}

// envsubst replaces the names its input mentions unless told which ones.
func (a *analyzer) envsubst(in invocation) *scope {
	i := operands(in, 1, "", nil)
	if i >= len(in.args) {
		for _, w := range in.args[1:] {
			if t, _ := literal(w); t == "-v" || t == "--variables" {
				return in.cur
			}
		}
		a.problem(in.args[0].Pos(), "runs envsubst, which reads every name its input mentions", "name the variables: envsubst '$NAMESPACE'")
		return in.cur
	}
	t, ok := a.text(in.args[i], in.cur, true)
	if !ok {
		a.problem(in.args[i].Pos(), "runs envsubst with names chosen at run time", "name the variables: envsubst '$NAMESPACE'")
		return in.cur
	}
	for _, m := range shellFormat.FindAllStringSubmatch(t, -1) {
		name := m[1]
		if name == "" {
			name = m[2]
		}
		a.readExported(name, in.env, in.args[i].Pos(), "envsubst")
	}
	return in.cur
}

var shellFormat = regexp.MustCompile(`\$(?:\{(\w+)\}|(\w+))`)

// ps with BSD-style e prints the environment of processes.
func (a *analyzer) ps(in invocation) *scope {
	for _, w := range in.args[1:] {
		t, ok := literal(w)
		if ok && !strings.HasPrefix(t, "-") && strings.ContainsRune(t, 'e') && strings.Trim(t, "auxewfjlsvrTHSc") == "" {
			a.problem(w.Pos(), "prints the environment of processes (ps e)", "read only published names, e.g. \"$NAMESPACE\"")
		}
	}
	return in.cur
}
