// Package sqlsplit splits an SQL script into statements the way PostgreSQL
// does, with PostgreSQL's own parser and scanner (libpg_query, run as
// WebAssembly so that ptah stays a static binary). It is the one splitter
// of ptah: what a migration is checked as and what line an error is on
// both come from it, and no other lexer reads a script.
//
// The parser assumes the settings PostgreSQL reads text under by default:
// standard_conforming_strings on, backslash_quote safe_encoding, the text
// UTF-8. A server session reading the same text under other settings can
// see other statements; ptah pins them (see Settings).
package sqlsplit

import (
	"errors"
	"fmt"
	"strings"
	"unicode/utf8"

	pg "github.com/pganalyze/pg_query_go/v6"
	pgquery "github.com/wasilibs/go-pgquery"
	pgparser "github.com/wasilibs/go-pgquery/parser"
)

// Settings are the session settings that decide how PostgreSQL reads the
// text of a query (its lexer reads the first two, the server converts the
// text from the third), with the values libpg_query reads text under.
// escape_string_warning only warns; nothing else changes the reading.
var Settings = []Setting{
	{Name: "standard_conforming_strings", Value: "on"},
	{Name: "backslash_quote", Value: "safe_encoding"},
	{Name: "client_encoding", Value: "UTF8"},
}

// Setting is one setting PostgreSQL reads text under.
type Setting struct{ Name, Value string }

// Pin is the query that sets Settings for a session (one simple-protocol
// Query message of three statements, which read the same under any
// values of them).
func Pin() string {
	var b strings.Builder
	for i, s := range Settings {
		if i > 0 {
			b.WriteString("; ")
		}
		fmt.Fprintf(&b, "SET %s = '%s'", s.Name, s.Value)
	}
	return b.String()
}

// Stmt is one statement of a script.
type Stmt struct {
	// Node is the statement's parse tree.
	Node *pg.Node
	// Start is the byte offset of its first token, End the offset just
	// past its last (the terminating semicolon and comments around it
	// excluded), Term the offset just past its terminating semicolon, or
	// End when none follows it.
	Start, End, Term int
	// Line is the 1-based line of Start.
	Line int
}

// Text is the statement's text in script: its first token to its last.
func (s Stmt) Text(script string) string { return script[s.Start:s.End] }

// SyntaxError is a script PostgreSQL's parser refuses.
type SyntaxError struct {
	Message string
	// Line is the 1-based line of the parser's cursor, 0 when it gave none.
	Line int
}

func (e *SyntaxError) Error() string {
	if e.Line > 0 {
		return fmt.Sprintf("line %d: %s", e.Line, e.Message)
	}
	return e.Message
}

// Split reads text with PostgreSQL's parser and returns its statements in
// order; empty statements (a lone semicolon) are none, as for the server.
// Statement boundaries are the parser's (RawStmt locations); the first and
// last token of each come from PostgreSQL's scanner, so that comments
// between statements belong to neither. A text the parser refuses gives a
// *SyntaxError.
func Split(text string) ([]Stmt, error) {
	tree, err := pgquery.Parse(text)
	if err != nil {
		var pe *pgparser.Error
		if errors.As(err, &pe) {
			line := 0
			if pe.Cursorpos > 0 {
				line = LineAt(text, Offset(text, pe.Cursorpos))
			}
			return nil, &SyntaxError{Message: pe.Message, Line: line}
		}
		return nil, &SyntaxError{Message: err.Error()}
	}
	if len(tree.Stmts) == 0 {
		return nil, nil
	}
	scan, err := pgquery.Scan(text)
	if err != nil {
		return nil, &SyntaxError{Message: err.Error()}
	}
	toks := scan.Tokens
	stmts := make([]Stmt, 0, len(tree.Stmts))
	k := 0
	for _, raw := range tree.Stmts {
		from, to := int(raw.StmtLocation), len(text)
		if raw.StmtLen > 0 {
			to = from + int(raw.StmtLen)
		}
		s := Stmt{Node: raw.Stmt, Start: -1}
		for ; k < len(toks) && int(toks[k].Start) < to; k++ {
			t := toks[k]
			if int(t.Start) < from || t.Token == pg.Token_SQL_COMMENT || t.Token == pg.Token_C_COMMENT || t.Token == pg.Token_ASCII_59 {
				continue
			}
			if s.Start < 0 {
				s.Start = int(t.Start)
			}
			s.End = int(t.End)
		}
		if s.Start < 0 { // not reached: a statement has a token
			s.Start, s.End = from, to
		}
		s.Term = s.End
		for j := k; j < len(toks); j++ {
			if t := toks[j]; t.Token == pg.Token_ASCII_59 {
				s.Term = int(t.End)
				break
			} else if t.Token != pg.Token_SQL_COMMENT && t.Token != pg.Token_C_COMMENT {
				break
			}
		}
		s.Line = LineAt(text, s.Start)
		stmts = append(stmts, s)
	}
	return stmts, nil
}

// LineAt is the 1-based line of byte offset i of s.
func LineAt(s string, i int) int {
	return 1 + strings.Count(s[:min(max(i, 0), len(s))], "\n")
}

// Offset is the byte offset of the 1-based character position pos of s,
// as PostgreSQL and libpg_query count positions in a UTF-8 text.
func Offset(s string, pos int) int {
	i := 0
	for n := 1; n < pos && i < len(s); n++ {
		_, size := utf8.DecodeRuneInString(s[i:])
		i += size
	}
	return i
}
