package pgcatalog

import (
	"slices"
	"testing"
)

// TestParents: the parents of an INHERITS clause as the catalog prints
// them, quoted names holding commas, parentheses and quotes included.
func TestParents(t *testing.T) {
	for _, c := range []struct {
		def  string
		want []string
	}{
		{"", nil},
		{"WITH (fillfactor=70)", nil},
		{"INHERITS (a)", []string{"a"}},
		{"UNLOGGED INHERITS (a, s2.b) WITH (fillfactor=70)", []string{"a", "s2.b"}},
		{`INHERITS ("My, (Base)", "x""y", "S"."t, u") REPLICA IDENTITY FULL`, []string{`"My, (Base)"`, `"x""y"`, `"S"."t, u"`}},
	} {
		if got := Parents(c.def); !slices.Equal(got, c.want) {
			t.Errorf("Parents(%q) = %q, want %q", c.def, got, c.want)
		}
	}
}
