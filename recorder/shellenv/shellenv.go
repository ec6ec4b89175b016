// Package shellenv finds the environment names a POSIX shell script reads,
// by parsing it with mvdan.cc/sh and following what the script sets itself.
// It also reports constructs whose reads cannot be known before the script
// runs (indirection, code built at run time, dumps of the whole environment).
package shellenv

import (
	"errors"
	"fmt"
	"strings"

	"mvdan.cc/sh/v3/syntax"
)

// Read is one environment name the script reads before setting it itself.
type Read struct {
	Name      string
	Line, Col uint
	// Via says how the name is read when it is not a plain expansion, e.g.
	// "printenv" or "code handed to sh -c".
	Via string
}

// Problem is a construct whose environment reads cannot be known before
// the script runs.
type Problem struct {
	Line, Col uint
	What      string
	// Instead says what to write instead.
	Instead string
}

// Analysis is everything a script reads from its environment.
type Analysis struct {
	Reads    []Read
	Problems []Problem
}

// ParseError is shell text that POSIX sh cannot parse.
type ParseError struct {
	Line, Col uint
	Message   string
}

func (e *ParseError) Error() string {
	return fmt.Sprintf("line %d col %d: %s", e.Line, e.Col, e.Message)
}

// Analyze parses src as POSIX shell, the language the recorder runs it in,
// and returns the environment names it reads and the constructs whose reads
// cannot be known. Special parameters ($?, $1, $@...) and the names the shell
// itself maintains (PWD, PPID, LINENO, OPTIND) are never reads.
func Analyze(src string) (Analysis, error) {
	f, err := parse(src)
	if err != nil {
		return Analysis{}, err
	}
	a := newAnalyzer()
	a.top(f.Stmts)
	return Analysis{Reads: dedupReads(a.reads), Problems: a.problems}, nil
}

func parse(src string) (*syntax.File, error) {
	f, err := syntax.NewParser(syntax.Variant(syntax.LangPOSIX)).Parse(strings.NewReader(src), "")
	if err != nil {
		var pe syntax.ParseError
		if errors.As(err, &pe) {
			return nil, &ParseError{Line: pe.Pos.Line(), Col: pe.Pos.Col(), Message: pe.Text}
		}
		var le syntax.LangError
		if errors.As(err, &le) {
			return nil, &ParseError{Line: le.Pos.Line(), Col: le.Pos.Col(),
				Message: fmt.Sprintf("%s is not POSIX sh", le.Feature)}
		}
		return nil, &ParseError{Line: 1, Col: 1, Message: err.Error()}
	}
	return f, nil
}

func dedupReads(rs []Read) []Read {
	seen := map[Read]bool{}
	var out []Read
	for _, r := range rs {
		if !seen[r] {
			seen[r] = true
			out = append(out, r)
		}
	}
	return out
}

// shellSet are the names every POSIX shell sets at start, so reading them
// does not read the environment.
var shellSet = []string{"PWD", "PPID", "LINENO", "OPTIND"}

// runTimeValue stands for a value only known when the script runs, when
// code handed to another shell is rebuilt from its words. A name read that
// contains it is a name chosen at run time.
const runTimeValue = "PTAH_VALUE_KNOWN_AT_RUN_TIME"

// Limits keep the analysis of hostile input bounded.
const (
	maxCodeDepth = 8
	maxSteps     = 200000
)

// value is what the script assigned to a name, when that can be known.
type value struct {
	known bool
	text  string
}

// scope is the state of one shell at one point of the script: the names it
// set, which of them it exports, and its functions. A scope is never changed
// once shared; branches clone it.
type scope struct {
	own       map[string]value
	exported  map[string]bool
	allexport bool
	funcs     map[string]*funcDef
}

// newShell is the state of a shell started with the given exported names.
func newShell(exported map[string]value) *scope {
	s := &scope{own: map[string]value{}, exported: map[string]bool{}, funcs: map[string]*funcDef{}}
	for _, n := range shellSet {
		s.own[n] = value{}
	}
	for n, v := range exported {
		s.own[n] = v
		s.exported[n] = true
	}
	return s
}

func (s *scope) clone() *scope {
	c := &scope{own: make(map[string]value, len(s.own)), exported: make(map[string]bool, len(s.exported)),
		allexport: s.allexport, funcs: make(map[string]*funcDef, len(s.funcs))}
	for k, v := range s.own {
		c.own[k] = v
	}
	for k, v := range s.exported {
		c.exported[k] = v
	}
	for k, v := range s.funcs {
		c.funcs[k] = v
	}
	return c
}

func (s *scope) set(name string, v value, export bool) {
	s.own[name] = v
	if export || s.allexport {
		s.exported[name] = true
	}
}

// exportedValues is what a child process inherits from this shell.
func (s *scope) exportedValues() map[string]value {
	out := map[string]value{}
	for n := range s.exported {
		if v, ok := s.own[n]; ok {
			out[n] = v
		}
	}
	return out
}

// intersect keeps what both branches certainly set.
func intersect(a, b *scope) *scope {
	if a == nil {
		return b
	}
	if b == nil || a == b {
		return a
	}
	c := a.clone()
	for k, v := range a.own {
		bv, ok := b.own[k]
		if !ok {
			delete(c.own, k)
			continue
		}
		if bv != v {
			c.own[k] = value{}
		}
	}
	for k := range a.exported {
		if !b.exported[k] {
			delete(c.exported, k)
		}
	}
	for k, f := range a.funcs {
		if b.funcs[k] != f {
			delete(c.funcs, k)
		}
	}
	c.allexport = a.allexport && b.allexport
	return c
}
