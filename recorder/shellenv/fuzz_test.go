package shellenv

import (
	"errors"
	"testing"
)

// FuzzAnalyze feeds the analyzer arbitrary shell text: it must never panic,
// and it either refuses to parse or places every finding on a line.
func FuzzAnalyze(f *testing.F) {
	for _, s := range []string{
		`echo "$A" ${B:-$C} $((D + 1))`,
		"sh -c 'eval \"echo \\$A\"'",
		"f() { f; echo $A; }; f",
		"cat <<EOF\n$A\nEOF\nsh <<'EOF'\necho $B\nEOF",
		`for i in a b; do read -r x; export Y=$x; done; env Z=1 sh -c 'echo $Y $Z'`,
		`x='eval "$x"'; eval "$x"`,
		`find . -exec sh -c 'echo $1' _ {} \; | xargs -I{} timeout 5 bash -c 'echo {}'`,
		"()$",
	} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, src string) {
		an, err := Analyze(src)
		if err != nil {
			var pe *ParseError
			if !errors.As(err, &pe) {
				t.Fatalf("error %v is not a ParseError", err)
			}
			return
		}
		for _, r := range an.Reads {
			if r.Name == "" || r.Line == 0 {
				t.Fatalf("read %+v has no name or line", r)
			}
		}
		for _, p := range an.Problems {
			if p.What == "" || p.Instead == "" {
				t.Fatalf("problem %+v says too little", p)
			}
		}
	})
}
