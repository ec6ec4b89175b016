package repeat

import (
	"fmt"
	"strings"

	"github.com/sergi/go-diff/diffmatchpatch"

	"ptah.run/operator/recorder/check"
	"ptah.run/operator/recorder/recording"
	"ptah.run/operator/recorder/scenario"
)

// transcript is a session as a reader reads it: each step's note, its
// command and the output lines, already normalized. Timing is left out: a
// repetition is compared on what it printed, not on how fast.
func transcript(events []recording.Event) string {
	var b strings.Builder
	for _, e := range events {
		fmt.Fprintf(&b, "# %s\n", e.Note)
		for i, l := range strings.Split(e.Command, "\n") {
			prompt := "$ "
			if i > 0 {
				prompt = "> "
			}
			b.WriteString(prompt + l + "\n")
		}
		for _, l := range e.Output {
			b.WriteString(l.Text + "\n")
		}
	}
	return b.String()
}

// unifiedLines is a line diff of published against reproduced: " " for a
// line both have, "-" for one only the published transcript has, "+" for
// one only the repetition printed. It reports whether they differ.
func unifiedLines(published, reproduced string) (string, bool) {
	dmp := diffmatchpatch.New()
	a, b, lines := dmp.DiffLinesToChars(published, reproduced)
	diffs := dmp.DiffCharsToLines(dmp.DiffMain(a, b, false), lines)
	var out strings.Builder
	differ := false
	for _, d := range diffs {
		prefix := " "
		switch d.Type {
		case diffmatchpatch.DiffDelete:
			prefix, differ = "-", true
		case diffmatchpatch.DiffInsert:
			prefix, differ = "+", true
		}
		for _, l := range strings.SplitAfter(d.Text, "\n") {
			if l == "" {
				continue
			}
			out.WriteString(prefix + strings.TrimSuffix(l, "\n") + "\n")
		}
	}
	return out.String(), differ
}

// Claim is one claim of a scenario, in the order the published table lists it.
type Claim struct {
	Step int
	Text string
}

// claims lists what a scenario claims, step by step, in the grammar and
// order the recorder checks them: the await, the command, the resource read.
func claims(s scenario.Scenario) []Claim {
	var out []Claim
	object := func(n int, o *scenario.Observation) {
		if o == nil {
			return
		}
		for _, c := range check.ObjectChecks(*o) {
			out = append(out, Claim{n, c.Claim()})
		}
	}
	for i, st := range s.Steps {
		n := i + 1
		object(n, st.Await)
		out = append(out, Claim{n, check.CommandResult{Expect: *st.Expect}.Claim()})
		object(n, st.Expect.Resource)
	}
	return out
}

// table renders the checks of the repetition next to the published ones.
func table(published, reproduced []check.Check) string {
	var b strings.Builder
	fmt.Fprintf(&b, "%-4s  %-9s  %-10s  %s\n", "Step", "Published", "Reproduced", "Claim")
	n := max(len(published), len(reproduced))
	for i := range n {
		var p, r *check.Check
		if i < len(published) {
			p = &published[i]
		}
		if i < len(reproduced) {
			r = &reproduced[i]
		}
		c := p
		if c == nil {
			c = r
		}
		fmt.Fprintf(&b, "%-4d  %-9s  %-10s  %s\n", c.Step, held(p), held(r), c.Claim)
		if r != nil && p != nil && r.Claim != p.Claim {
			fmt.Fprintf(&b, "%-4s  %-9s  %-10s  (reproduced claim: %s)\n", "", "", "", r.Claim)
		}
		if r != nil && !r.Held && r.Evidence.Why != "" {
			fmt.Fprintf(&b, "%-4s  %-9s  %-10s  why: %s\n", "", "", "", r.Evidence.Why)
		}
	}
	return b.String()
}

func held(c *check.Check) string {
	switch {
	case c == nil:
		return "-"
	case c.Held:
		return "held"
	default:
		return "FAILED"
	}
}
