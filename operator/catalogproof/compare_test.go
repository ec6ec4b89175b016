package catalogproof

import (
	"fmt"
	"strings"
	"testing"
)

func TestCompareCountsEachLine(t *testing.T) {
	live := []string{"a", "b", "b", "c"}
	desired := []string{"b", "c", "c", "d"}
	d := Compare(live, desired)
	if got, want := fmt.Sprint(d.OnlyLive, d.OnlyDesired), "[a b] [c d]"; got != want {
		t.Fatalf("Compare = %s, want %s", got, want)
	}
	if !Compare(live, live).Empty() || Compare(nil, []string{"x"}).Empty() {
		t.Fatal("Empty is wrong")
	}
}

func TestDescribeIsBounded(t *testing.T) {
	var many []string
	for i := range 12 {
		many = append(many, fmt.Sprintf("column public.t.c%02d type=integer %s", i, strings.Repeat("x", 400)))
	}
	msg := Compare(many, []string{"table public.t"}).Describe()
	for _, want := range []string{"12 line(s) only in the database: column public.t.c00", "and 7 more", "1 line(s) only in the desired schema: table public.t"} {
		if !strings.Contains(msg, want) {
			t.Errorf("Describe does not say %q: %s", want, msg)
		}
	}
	if strings.Contains(msg, "c05") || len(msg) > 2*Shown*310 {
		t.Errorf("Describe is not bounded (%d bytes): %s", len(msg), msg)
	}
}

func TestExcluded(t *testing.T) {
	cases := []struct {
		pats           []string
		tbl, root, col string
		want           bool
	}{
		{[]string{"logs"}, "logs_2024", "logs", "", true},
		{[]string{"legacy_*"}, "legacy_orders", "legacy_orders", "id", true},
		{[]string{"t.c"}, "t", "t", "c", true},
		{[]string{"t.c"}, "t", "t", "", false},
		{[]string{"t.c"}, "t", "t", "d", false},
		{[]string{"*.c"}, "u", "u", "c", true},
		{[]string{"t"}, "", "", "", false},
		{nil, "t", "t", "", false},
	}
	for _, c := range cases {
		if got := excluded(c.pats, c.tbl, c.root, c.col); got != c.want {
			t.Errorf("excluded(%v, %q, %q, %q) = %v, want %v", c.pats, c.tbl, c.root, c.col, got, c.want)
		}
	}
}

func TestEscapeKeepsAFactOnOneLine(t *testing.T) {
	if got := escape("def=SELECT 1\n  FROM t\\x"); got != `def=SELECT 1\n  FROM t\\x` {
		t.Fatalf("escape = %q", got)
	}
}
