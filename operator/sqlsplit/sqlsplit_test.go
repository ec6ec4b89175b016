package sqlsplit

import (
	"errors"
	"fmt"
	"strings"
	"testing"
)

func TestSplit(t *testing.T) {
	for _, c := range []struct {
		text string
		want []string // "line:text:term", the statement's text and what follows it up to its Term
	}{
		{"SELECT 1;; ;SELECT 2 /* c */ ;", []string{"1:SELECT 1:;", "1:SELECT 2: /* c */ ;"}},
		{"/* /* */ ; COMMIT; */ SELECT 1/0;\n-- x */ ;\n", []string{"1:SELECT 1/0:;"}},
		{"-- c\nBEGIN /* x */ ;\nCREATE TABLE a (b text DEFAULT $é$;$é$);\nCOMMIT", []string{"2:BEGIN: /* x */ ;", "3:CREATE TABLE a (b text DEFAULT $é$;$é$):;", "4:COMMIT:"}},
		{"SELECT 'a\\'; SELECT ' COMMIT; --';", []string{"1:SELECT 'a\\':;", "1:SELECT ' COMMIT; --':;"}},
		{"SELECT U&\"a;\" FROM t; -- ;\n\n", []string{"1:SELECT U&\"a;\" FROM t:;"}},
		{"  \n-- nothing\n;", nil},
	} {
		stmts, err := Split(c.text)
		if err != nil {
			t.Errorf("%q: %v", c.text, err)
			continue
		}
		var got []string
		for _, s := range stmts {
			got = append(got, fmt.Sprintf("%d:%s:%s", s.Line, s.Text(c.text), c.text[s.End:s.Term]))
		}
		if strings.Join(got, "|") != strings.Join(c.want, "|") {
			t.Errorf("%q:\n got %q\nwant %q", c.text, got, c.want)
		}
	}
}

func TestSplitSyntaxErrorLine(t *testing.T) {
	_, err := Split("-- déjà vu ✓✓✓✓\nSELECT 'é';\nSELECT FROM FROM;\n")
	var se *SyntaxError
	if !errors.As(err, &se) || se.Line != 3 || !strings.Contains(se.Message, "syntax error") {
		t.Fatalf("%#v", err)
	}
}

func TestOffsetCountsCharacters(t *testing.T) {
	s := "é✓a"
	for pos, want := range map[int]int{1: 0, 2: 2, 3: 5, 4: 6, 9: 6} {
		if got := Offset(s, pos); got != want {
			t.Errorf("Offset(%q, %d) = %d, want %d", s, pos, got, want)
		}
	}
	if got := Pin(); got != "SET standard_conforming_strings = 'on'; SET backslash_quote = 'safe_encoding'; SET client_encoding = 'UTF8'" {
		t.Errorf("Pin() = %q", got)
	}
}
