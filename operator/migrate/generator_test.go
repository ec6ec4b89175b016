package migrate

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"sort"
	"strings"
	"testing"
	"time"
	"unicode/utf8"

	"pgregory.net/rapid"

	"ptah.run/operator/internal/testenv"
	"ptah.run/operator/operator/report"
)

// A generated migration file, built from the lexemes two readers of SQL
// can tell apart differently, and what PostgreSQL must make of it.
type genFile struct {
	text string
	// sent is what the server must receive: text, or text with its
	// BEGIN ... COMMIT wrapper blanked out.
	sent string
	// refusal is the code the file is refused with before anything runs,
	// "" when it runs.
	refusal report.Code
	// fails: it runs and a statement of it fails.
	fails bool
	// rows are the planted table's rows it adds, "id:note", as the server
	// must read them, when it commits; objects what it creates.
	rows    []string
	objects []string
	// failLine is the line of the statement that fails, which the error
	// message names.
	failLine int
}

// gen draws the parts of a file; n numbers the names it makes. A plain
// file holds none of the words and characters special matches, so that
// it runs without being parsed first: its hard lexemes are the others.
type gen struct {
	t     *rapid.T
	n     int
	f     *genFile
	plain bool
}

// pick draws from choices, or from plainChoices in a plain file.
func (g *gen) pick(what string, choices, plainChoices []string) string {
	if g.plain {
		choices = plainChoices
	}
	return rapid.SampledFrom(choices).Draw(g.t, what)
}

func (g *gen) draw(what string, choices ...string) string {
	return rapid.SampledFrom(choices).Draw(g.t, what)
}

func (g *gen) coin(what string, percent int) bool {
	return rapid.IntRange(0, 99).Draw(g.t, what) < percent
}

// valuePieces are what strings, identifiers and comments are made of:
// the characters a lexer turns on.
var (
	valuePieces      = []string{"a", "Z", ";", " COMMIT; ", "\\", "'", "\"", "$", "$$", "$a$", "$é$", "*/", "/*", "--", "é", "\n", "ROLLBACK", "\\set x 1", " ", "\\gexec", "BEGIN;"}
	plainValuePieces = []string{"a", "Z", ";", "'", "\"", "$", "$$", "$a$", "$é$", "*/", "/*", "--", "é", "\n", " ", "; DROP TABLE planted; ", "'); DELETE FROM planted; --"}
)

func (g *gen) value(what string) string {
	pieces := valuePieces
	if g.plain {
		pieces = plainValuePieces
	}
	return strings.Join(rapid.SliceOfN(rapid.SampledFrom(pieces), 0, 5).Draw(g.t, what), "")
}

// literal is a string constant of one of PostgreSQL's forms, and the value
// the server must read from it (standard_conforming_strings on).
func (g *gen) literal() (sql, value string) {
	value = g.value("value")
	kind := g.pick("literal", []string{"standard", "escape", "dollar", "unicode", "unicode-uescape"}, []string{"standard", "dollar"})
	switch kind {
	case "standard":
		return "'" + strings.ReplaceAll(value, "'", "''") + "'", value
	case "escape":
		var b strings.Builder
		b.WriteString("E'")
		for _, r := range value {
			switch {
			case r == '\'':
				b.WriteString(g.draw("quote", `\'`, "''"))
			case r == '\\':
				b.WriteString(`\\`)
			case r == '\n':
				b.WriteString(g.draw("newline", `\n`, "\n"))
			case r >= 'A' && r <= 'Z' || r >= 'a' && r <= 'z':
				switch g.draw("letter", "plain", "hex", "octal") {
				case "hex":
					fmt.Fprintf(&b, `\x%02x`, r)
				case "octal":
					fmt.Fprintf(&b, `\%03o`, r)
				default:
					b.WriteRune(r)
				}
			default:
				b.WriteRune(r)
			}
		}
		b.WriteString("'")
		return b.String(), value
	case "dollar":
		return g.dollar(value), value
	case "unicode", "unicode-uescape":
		esc := '\\'
		uescape := kind == "unicode-uescape"
		if uescape {
			esc = '!'
		}
		var b strings.Builder
		b.WriteString("U&'")
		for _, r := range value {
			switch {
			case r == '\'':
				b.WriteString("''")
			case r == esc:
				b.WriteRune(esc)
				b.WriteRune(esc)
			default:
				switch g.draw("unicode char", "plain", "4", "6") {
				case "4":
					fmt.Fprintf(&b, "%c%04X", esc, r)
				case "6":
					fmt.Fprintf(&b, "%c+%06X", esc, r)
				default:
					b.WriteRune(r)
				}
			}
		}
		b.WriteString("'")
		if uescape {
			b.WriteString(" UESCAPE '!'")
		}
		return b.String(), value
	}
	panic("unreachable")
}

// dollar quotes body with a tag it does not end early at (PostgreSQL ends
// a dollar-quoted string at the first $tag$).
func (g *gen) dollar(body string) string {
	tags := []string{"", "a", "é", "tag_1", "ÿx", "Q"}
	start := rapid.IntRange(0, len(tags)-1).Draw(g.t, "tag")
	for i := range tags {
		tag := tags[(start+i)%len(tags)]
		delim := "$" + tag + "$"
		if strings.Index(body+delim, delim) == len(body) {
			return delim + body + delim
		}
	}
	return "$fallback_tag$" + strings.ReplaceAll(body, "$fallback_tag$", "") + "$fallback_tag$"
}

// ident is an identifier of one of PostgreSQL's forms and the name it
// stands for.
func (g *gen) ident() (sql, name string) {
	g.n++
	switch g.pick("ident", []string{"plain", "quoted", "unicode"}, []string{"plain", "quoted"}) {
	case "quoted":
		name = g.pick("quoted name", []string{"commit", "begin;", "a;b", "*/", "--x", "é", "Select", "$", "'", "x\"y", "END"}, []string{"a;b", "*/", "/*", "--x", "é", "Select", "$", "'", "x\"y", "drop table planted;"}) + fmt.Sprintf("_%d", g.n)
		return `"` + strings.ReplaceAll(name, `"`, `""`) + `"`, name
	case "unicode":
		name = g.draw("unicode name", "commit", "g", "é;", "rollback") + fmt.Sprintf("_%d", g.n)
		var b strings.Builder
		b.WriteString(`U&"`)
		for _, r := range name {
			switch {
			case r == '"':
				b.WriteString(`""`)
			case r == '\\':
				b.WriteString(`\\`)
			case g.coin("escape char", 50):
				fmt.Fprintf(&b, `\%04X`, r)
			default:
				b.WriteRune(r)
			}
		}
		b.WriteString(`"`)
		return b.String(), name
	}
	name = fmt.Sprintf("g_%d", g.n)
	return name, name
}

// comment is a block comment, nested at times, or a line comment.
func (g *gen) comment(depth int) string {
	if depth == 0 && g.coin("line comment", 30) {
		return "--" + strings.ReplaceAll(g.value("line comment"), "\n", " ") + "\n"
	}
	var b strings.Builder
	b.WriteString("/*")
	pieces := []string{"x", ";", " COMMIT; ", "'", "\"", "$$", "--", "\\set x", "é", "ROLLBACK;", "nested", "\n", "$a$"}
	if g.plain {
		pieces = []string{"x", ";", " DROP TABLE planted; ", "'", "\"", "$$", "--", "é", "nested", "\n", "$a$"}
	}
	for _, p := range rapid.SliceOfN(rapid.SampledFrom(pieces), 0, 4).Draw(g.t, "comment") {
		if p == "nested" {
			if depth < 3 {
				b.WriteString(g.comment(depth + 1))
			}
			continue
		}
		b.WriteString(p)
	}
	b.WriteString("*/")
	return b.String()
}

// gap separates two tokens: white space or comments.
func (g *gen) gap() string {
	switch g.draw("gap", " ", " ", "\n", "comment") {
	case "comment":
		return " " + g.comment(0) + " "
	case "\n":
		return "\n"
	}
	return " "
}

// statement is one statement that runs and succeeds (when the planted rows
// it inserts are new), recorded in g.f.
func (g *gen) statement() string {
	switch g.pick("statement", []string{"insert", "create table", "select", "function", "do"}, []string{"insert", "create table", "select", "function"}) {
	case "insert":
		lit, value := g.literal()
		id := 100 + g.n
		g.n++
		g.f.rows = append(g.f.rows, fmt.Sprintf("%d:%s", id, value))
		return fmt.Sprintf("INSERT%sINTO planted (id, note) VALUES (%d,%s)", g.gap(), id, g.gap()+lit)
	case "create table":
		table, name := g.ident()
		col, _ := g.ident()
		lit, _ := g.literal()
		g.f.objects = append(g.f.objects, "relation "+name)
		return fmt.Sprintf("CREATE TABLE%s%s (%s text DEFAULT %s)", g.gap(), table, col, lit)
	case "select":
		a, _ := g.literal()
		b, _ := g.literal()
		return fmt.Sprintf("SELECT%s%s,%s", g.gap(), a, g.gap()+b)
	case "function":
		fn, name := g.ident()
		lit, _ := g.literal()
		g.f.objects = append(g.f.objects, "function "+name)
		return fmt.Sprintf("CREATE FUNCTION %s() RETURNS text LANGUAGE sql AS %s", fn, g.dollar("SELECT ("+lit+")::text"))
	case "do":
		lit, value := g.literal()
		id := 100 + g.n
		g.n++
		g.f.rows = append(g.f.rows, fmt.Sprintf("%d:%s", id, value))
		return "DO " + g.dollar(fmt.Sprintf("BEGIN INSERT INTO planted (id, note) VALUES (%d, %s); END", id, lit))
	}
	panic("unreachable")
}

// wordCase writes a keyword in a drawn case.
func (g *gen) wordCase(s string) string {
	switch g.draw("case", "upper", "lower", "mixed") {
	case "lower":
		return strings.ToLower(s)
	case "mixed":
		var b strings.Builder
		for i, r := range s {
			if i%2 == 1 {
				b.WriteString(strings.ToLower(string(r)))
			} else {
				b.WriteRune(r)
			}
		}
		return b.String()
	}
	return s
}

// genMigration draws a file: statements that write, each separated by a
// semicolon and a gap, and in each file either a transaction-control
// statement somewhere or a failing statement after the writes, at times a
// change of a pinned setting or a psql meta-command, at times wrapped whole
// in BEGIN ... COMMIT, at times nothing that fails.
func genMigration(t *rapid.T) genFile {
	f := &genFile{}
	g := &gen{t: t, f: f, plain: rapid.Bool().Draw(t, "plain")}
	var stmts []string
	for range rapid.IntRange(1, 4).Draw(t, "writes") {
		stmts = append(stmts, g.statement())
	}
	failing := -1
	hazard := g.pick("hazard", []string{"transaction control", "failing", "failing", "pinned setting", "meta-command", "none"}, []string{"failing", "failing", "none"})
	switch hazard {
	case "transaction control":
		tc := g.wordCase(g.draw("transaction control", "COMMIT", "ROLLBACK", "END", "SAVEPOINT s1", "BEGIN", "COMMIT AND CHAIN", "PREPARE TRANSACTION 'p1'", "ABORT", "START TRANSACTION", "RELEASE SAVEPOINT s1", "ROLLBACK AND CHAIN"))
		stmts = slices.Insert(stmts, rapid.IntRange(0, len(stmts)).Draw(t, "at"), tc)
	case "failing":
		stmts = append(stmts, g.draw("failing", "SELECT 1/0", "INSERT INTO planted (id, note) VALUES (1, 'dup')", "INSERT INTO planted (id, note) VALUES (99, NULL)", "SELECT * FROM missing_table", "INSERT INTO missing_table VALUES (1)", "UPDATE planted SET note = 'x' WHERE id = 1/0"))
		f.fails = true
		failing = len(stmts) - 1
	case "pinned setting":
		stmts = slices.Insert(stmts, rapid.IntRange(0, len(stmts)).Draw(t, "at"), g.draw("pinned", "SET standard_conforming_strings = off", "RESET ALL", "SELECT set_config('backslash_quote', 'off', false)", "SET NAMES 'LATIN1'", "set local Standard_Conforming_Strings to default"))
	}
	if len(stmts) > 1 && g.coin("more after", 40) {
		stmts = append(stmts, g.statement())
	}
	wrapped := !g.plain && g.coin("wrapped", 20)
	noFinal := !wrapped && hazard != "meta-command" && g.coin("no final semicolon", 10)
	var b strings.Builder
	failAt := 0
	for i, s := range stmts {
		if i == failing {
			failAt = b.Len()
		}
		b.WriteString(s)
		if noFinal && i == len(stmts)-1 {
			break
		}
		b.WriteString(";")
		switch sep := g.draw("separator", "\n", " ", "\n\n", "comment", "\n;\n"); sep {
		case "comment":
			b.WriteString(" " + g.comment(0) + "\n")
		default:
			b.WriteString(sep)
		}
		if hazard == "meta-command" && i == 0 {
			b.WriteString("\n" + g.draw("meta", "\\set x 1", "\\i other.sql", "\\gexec") + "\n")
		}
	}
	body := b.String()
	f.text, f.sent = body, body
	if wrapped {
		f.text = "BEGIN;\n" + body + "\nCOMMIT;\n"
		failAt += len("BEGIN;\n")
		f.sent = "      \n" + body + "\n       \n"
	}
	f.failLine = strings.Count(f.text[:failAt], "\n") + 1
	switch hazard {
	case "meta-command":
		f.refusal = report.Parse
	case "transaction control":
		f.refusal = report.NotTransactional
	case "pinned setting":
		f.refusal = report.PinnedSetting
	}
	if f.refusal != "" {
		f.fails = false
	}
	sort.Strings(f.objects)
	return *f
}

// prefaces run as version 1 before a generated file, changing at run time
// (set_config of a computed name, not refused) the settings PostgreSQL
// reads text under: the pinning before the next version must undo it.
var prefaces = []string{
	"",
	"SELECT set_config(lower('STANDARD_CONFORMING_STRINGS'), 'off', false);\n",
	"SELECT set_config(lower('STANDARD_CONFORMING_STRINGS'), 'off', false), set_config(lower('BACKSLASH_QUOTE'), 'off', false), set_config(lower('CLIENT_ENCODING'), 'LATIN1', false);\n",
	"DO $$ BEGIN EXECUTE 'SET backslash_quote = off'; EXECUTE 'SET standard_conforming_strings = off'; END $$;\n",
}

// TestGeneratedMigrationsRunAsChecked: for every generated file, on a real
// PostgreSQL 15 logging every statement: special not matching means the
// parser refuses nothing; the file is either refused before anything runs
// (nothing of it in the statement log, no history row), or the log shows
// one transaction for its version, its script in one statement, ended by
// COMMIT or ROLLBACK and nothing between; a failed version leaves the
// planted rows, no object of it and no history row; a committed one the
// rows as PostgreSQL's parser reads its strings. -rapid.checks=N runs N
// files (30 by default; make migrate-fuzz runs 2000).
func TestGeneratedMigrationsRunAsChecked(t *testing.T) {
	testenv.RapidChecks(t, 30)
	srv := startLogged(t)
	start, cases := time.Now(), 0
	kinds := map[string]int{}
	rapid.Check(t, func(rt *rapid.T) {
		cases++
		f := genMigration(rt)
		preface := rapid.SampledFrom(prefaces).Draw(rt, "preface")
		rt.Logf("file:\n%s", f.text)
		kind := map[bool]string{true: "fails", false: "commits"}[f.fails]
		if f.refusal != "" {
			kind = "refused " + string(f.refusal)
		}
		kinds[kind]++
		if !special.MatchString(f.text) {
			kinds["not parsed before the run"]++
		}
		if f.text != f.sent {
			kinds["wrapped"]++
		}
		if preface != "" {
			kinds["after a preface"]++
		}
		checkGenerated(rt, srv, preface, f)
	})
	t.Logf("%d generated files in %s (shrinking included): %v", cases, time.Since(start).Round(time.Millisecond), kinds)
}

func checkGenerated(t *rapid.T, srv *loggedServer, preface string, f genFile) {
	t.Helper()
	if !utf8.ValidString(f.text) {
		t.Fatalf("not UTF-8")
	}
	m := Migration{Version: 2, path: versionFile(2), text: f.text}
	s, perr := prepare(m)
	if !special.MatchString(f.text) && (perr != nil || s.mode != inTransaction || s.text != f.text) {
		t.Fatalf("special does not match, but the parser refuses the file: %v", perr)
	}
	switch {
	case f.refusal == "" && perr != nil:
		t.Fatalf("the parser refuses a file of no refusal: %v", perr)
	case f.refusal != "" && (perr == nil || report.AsError(perr).Code != f.refusal):
		t.Fatalf("the parser says %v, want a refusal coded %s", perr, f.refusal)
	case perr == nil && s.text != f.sent:
		t.Fatalf("the parser would send %q, want %q", s.text, f.sent)
	}

	db := srv.db(t)
	defer db.drop(t)
	files := map[string]string{versionFile(2): f.text}
	var texts []string
	if preface != "" {
		files[versionFile(1)] = preface
		texts = append(texts, preface)
	}
	texts = append(texts, f.sent)
	d, err := os.MkdirTemp("", "ptah-gen-")
	if err != nil {
		t.Fatal(err)
	}
	defer os.RemoveAll(d)
	raw := map[string][]byte{}
	for name, text := range files {
		raw[name] = []byte(text)
		if err := os.WriteFile(filepath.Join(d, name), []byte(text), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	if err := os.WriteFile(filepath.Join(d, SumFile), sumOf(raw), 0o644); err != nil {
		t.Fatal(err)
	}
	dd, err := ReadDir(d)
	if err != nil {
		t.Fatal(err)
	}

	offset := srv.logSize(t)
	r, err := Up(context.Background(), db.DB, dd, UpOptions{LockTimeout: 10 * time.Second})
	entries := srv.entries(t, db.name, offset)
	items := sentOf(entries)
	if err := transactionWarnings(entries); err != nil {
		t.Fatal(err)
	}
	wantHistory := ""
	switch {
	case f.refusal != "":
		if err == nil || report.AsError(err).Code != f.refusal || r == nil || r.Status != Failed || r.FailedVersion != nil {
			t.Fatalf("up: %+v %v, want refused with %s before anything ran", r, err, f.refusal)
		}
		if err := refusedBeforeRunning(items); err != nil {
			t.Fatalf("%v\nlog: %+v", err, items)
		}
	default:
		txs, lerr := transactions(items, texts)
		if lerr != nil {
			t.Fatalf("the log: %v\nup: %+v %v\nlog: %+v", lerr, r, err, items)
		}
		if preface != "" {
			wantHistory = "1"
			if txs[0].end != "COMMIT" {
				t.Fatalf("the preface ended with %s: %s", txs[0].end, txs[0].error)
			}
		}
		last := txs[len(txs)-1]
		if len(txs) != len(texts) {
			t.Fatalf("%d versions ran, want %d", len(txs), len(texts))
		}
		if f.fails {
			if err == nil || r.FailedVersion == nil || r.FailedVersion.Version != 2 || last.end != "ROLLBACK" {
				t.Fatalf("up: %+v %v, log: the version ended with %s; want version 2 failed and rolled back", r, err, last.end)
			}
			if want := map[bool]string{true: Partial, false: Failed}[preface != ""]; r.Status != want {
				t.Fatalf("status %s, want %s", r.Status, want)
			}
			if msg := report.AsError(err).Message; !strings.Contains(msg, fmt.Sprintf("%s:%d: ", versionFile(2), f.failLine)) || !strings.Contains(msg, "its transaction was rolled back, so nothing of migration 2 was committed; its history row was removed") {
				t.Fatalf("message: %s", msg)
			}
		} else {
			if err != nil || r.Status != Applied || last.end != "COMMIT" {
				t.Fatalf("up: %+v %v, the version ended with %s (%s); want it applied", r, err, last.end, last.error)
			}
			wantHistory = strings.TrimSpace(wantHistory + " 2")
		}
	}
	wantRows, wantObjects := plantedRows, ""
	if f.refusal == "" && !f.fails {
		rows := append(strings.Split(plantedRows, ","), f.rows...)
		wantRows, wantObjects = strings.Join(rows, ","), strings.Join(f.objects, ",")
	}
	if got := db.rows(t); got != wantRows {
		t.Fatalf("planted rows %q, want %q", got, wantRows)
	}
	if got := db.objects(t); got != wantObjects {
		t.Fatalf("objects %q, want %q", got, wantObjects)
	}
	if got := db.history(t); got != wantHistory {
		t.Fatalf("history %q, want %q", got, wantHistory)
	}
}
