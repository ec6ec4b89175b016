package scenario

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// FuzzLoad feeds the loader arbitrary bytes: it must never panic, and a
// file it accepts must hold everything the runner relies on.
func FuzzLoad(f *testing.F) {
	seeds, _ := filepath.Glob("testdata/valid/*.yaml")
	for _, p := range seeds {
		data, err := os.ReadFile(p)
		if err != nil {
			f.Fatal(err)
		}
		f.Add(strings.Replace(string(data), "id: failure-recovery", "id: fuzz", 1))
	}
	f.Add(doc(okStep))
	f.Add(withStep("note: a step\nawait: {kind: job, name: x, generation: current, condition: {type: A, status: True, reason: B}}\nrun: sh -c 'echo $X'\nexpect: {exit: 0, resource: {kind: job, name: x, fields: [{path: a, equals: 3}]}}"))
	f.Add("a: &a [*a]\n")
	f.Add("steps: [[], {}, ~, 1]\n")
	f.Add("id: x\nsteps:\n  - run: \"$((\"\n")
	f.Fuzz(func(t *testing.T, src string) {
		s, rs := Parse("fuzz.yaml", []byte(src))
		if len(rs) > 0 {
			for _, r := range rs {
				if r.File != "fuzz.yaml" || r.Problem == "" || r.Step < 0 || r.Step > len(s.Steps)+1000 {
					t.Fatalf("malformed refusal %+v", r)
				}
			}
			return
		}
		if s.ID != "fuzz" || len(s.Steps) == 0 || len(s.Tags) == 0 {
			t.Fatalf("accepted %+v", s)
		}
		for i, st := range s.Steps {
			if strings.TrimSpace(st.Run) == "" || st.Expect == nil || st.Expect.Exit == nil {
				t.Fatalf("accepted step %d without run or exit: %+v", i+1, st)
			}
		}
	})
}
