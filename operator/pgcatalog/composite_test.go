package pgcatalog

import (
	"reflect"
	"strings"
	"testing"

	"pgregory.net/rapid"
)

// TestAttributesReadsWhatTheCatalogPrints: names quoted with commas,
// spaces and doubled quotes, types with commas in their modifiers, and
// collations come apart at the right commas.
func TestAttributesReadsWhatTheCatalogPrints(t *testing.T) {
	got := attributes(`(a numeric(10,2), "b, c" text COLLATE "C", "say ""hi""" character varying(3)[], d integer)`)
	want := []attribute{{"a", "numeric(10,2)"}, {`"b, c"`, `text COLLATE "C"`}, {`"say ""hi"""`, "character varying(3)[]"}, {"d", "integer"}}
	if !reflect.DeepEqual(got, want) {
		t.Fatalf("attributes:\n got %q\nwant %q", got, want)
	}
}

// TestAttributesRoundTrip: any list of attributes printed as the catalog
// prints it reads back as itself.
func TestAttributesRoundTrip(t *testing.T) {
	rapid.Check(t, func(t *rapid.T) {
		n := rapid.IntRange(1, 5).Draw(t, "n")
		var want []attribute
		var parts []string
		for i := 0; i < n; i++ {
			name := rapid.SampledFrom([]string{"a", "b2", `"x, y"`, `"q""q"`, `"(p)"`, `"a b"`}).Draw(t, "name")
			typ := rapid.SampledFrom([]string{"integer", "numeric(10,2)", `text COLLATE "C"`, "character varying(5)[]", `"my type"`}).Draw(t, "type")
			if i > 0 && name == want[0].name {
				continue
			}
			want = append(want, attribute{name, typ})
			parts = append(parts, name+" "+typ)
		}
		if got := attributes("(" + strings.Join(parts, ", ") + ")"); !reflect.DeepEqual(got, want) {
			t.Fatalf("attributes:\n got %q\nwant %q", got, want)
		}
	})
}

// TestAlterCompositeUnderAColumn: an attribute dropped from a type a
// column stores deletes its values; a changed attribute type is refused
// there (PostgreSQL refuses it) and planned where nothing stores the type;
// an order dropping and appending cannot make is refused.
func TestAlterCompositeUnderAColumn(t *testing.T) {
	live := Object{Kind: "composite type", Name: "pair", Ident: "pair", Def: "(a integer, b text)"}
	column := Object{Kind: "column", Name: "t.p", Def: "type=pair[] notnull=f"}
	steps, ok := alterComposite(live, Object{Kind: "composite type", Name: "pair", Ident: "pair", Def: "(a integer, c boolean)"}, []Object{column})
	if !ok || len(steps) != 2 || !steps[0].Deletes || steps[0].SQL != "ALTER TYPE pair DROP ATTRIBUTE b" || steps[1].SQL != "ALTER TYPE pair ADD ATTRIBUTE c boolean" {
		t.Fatalf("drop and add under a column: ok=%v %+v", ok, steps)
	}
	changed := Object{Kind: "composite type", Name: "pair", Ident: "pair", Def: `(a bigint, b text COLLATE "C")`}
	if _, ok := alterComposite(live, changed, []Object{column}); ok {
		t.Fatal("an attribute's type changed under a column was planned")
	}
	steps, ok = alterComposite(live, changed, nil)
	if !ok || len(steps) != 2 || steps[1].SQL != `ALTER TYPE pair ALTER ATTRIBUTE b TYPE text COLLATE "C"` || steps[0].Deletes {
		t.Fatalf("types changed, nothing stored: ok=%v %+v", ok, steps)
	}
	if _, ok := alterComposite(live, Object{Kind: "composite type", Name: "pair", Ident: "pair", Def: "(b text, a integer)"}, nil); ok {
		t.Fatal("attributes reordered were planned")
	}
}

// TestPartitionColumnCommentHoldingTheMark: a comment or a default holding
// the text "COMMENT '" is not cut inside; backslashes of an E literal are kept.
func TestPartitionColumnCommentHoldingTheMark(t *testing.T) {
	for def, want := range map[string]partitionColumn{
		"COMMENT 'a COMMENT ''b'''":                      {dflt: "", comment: "'a COMMENT ''b'''", complete: true},
		"NOT NULL DEFAULT 'x COMMENT ''y''' COMMENT 'z'": {notNull: true, dflt: "'x COMMENT ''y'''", comment: "'z'", complete: true},
		`DEFAULT 'q' COMMENT E'back\\ COMMENT \'s'`:      {dflt: "'q'", comment: `E'back\\ COMMENT \'s'`, complete: true},
		"DEFAULT 'COMMENT ''x'''":                        {dflt: "'COMMENT ''x'''", complete: true},
	} {
		if got := parsePartitionColumn(&Object{Def: def}); got != want {
			t.Errorf("%q: got %+v, want %+v", def, got, want)
		}
	}
}
