package pgcatalog

import (
	"strings"
	"testing"
)

// TestPlanOrdersByDependency: a view reading a changed view is dropped
// first and created after it; a domain checked by a function is created
// after the function; what is not plannable is refused, never dropped.
func TestPlanOrdersByDependency(t *testing.T) {
	live := []Object{
		{Kind: "view", Name: "a", Ident: "a", Def: "AS SELECT 1 AS x;", Deps: []string{"table t"}},
		{Kind: "view", Name: "b", Ident: "b", Def: "AS SELECT x FROM a;", Deps: []string{"view a"}},
		{Kind: "rule", Name: "r on t", Ident: "r on t", Def: "CREATE RULE r"},
	}
	desired := []Object{
		{Kind: "view", Name: "a", Ident: "a", Def: "AS SELECT 2 AS x;", Deps: []string{"table t"}},
		{Kind: "view", Name: "b", Ident: "b", Def: "AS SELECT x FROM a;", Deps: []string{"view a"}},
		{Kind: "domain", Name: "d", Ident: "d", Def: "integer CHECK (is_pos(VALUE))"},
		{Kind: "function", Name: "is_pos(i integer)", Ident: "is_pos(i integer)", Def: "CREATE OR REPLACE FUNCTION public.is_pos(i integer) RETURNS boolean"},
	}
	p := Plan(Diff(live, desired), live, desired, Around{})
	var sqls []string
	for _, s := range append(p.Before, p.After...) {
		sqls = append(sqls, s.SQL)
	}
	got := strings.Join(sqls, "\n")
	order := []string{"DROP VIEW b", "DROP VIEW a", "CREATE OR REPLACE FUNCTION public.is_pos", "CREATE DOMAIN d", "CREATE VIEW a", "CREATE VIEW b"}
	at := -1
	for _, want := range order {
		i := strings.Index(got, want)
		if i < 0 || i < at {
			t.Fatalf("want %q in this order %q, got:\n%s", want, order, got)
		}
		at = i
	}
	if len(p.Refused) != 1 || p.Refused[0].Object().Kind != "rule" {
		t.Fatalf("want the rule refused, got %+v", p.Refused)
	}
	if strings.Contains(got, "RULE") {
		t.Fatalf("a refused rule was planned:\n%s", got)
	}
}
