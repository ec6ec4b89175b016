package repeat

import (
	"fmt"
	"regexp"
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

// Values a repetition prints differently by design: generated names' hex
// suffixes, digests and ids (seven or more hex digits, one a number, so a
// suffix cut short by `head -c` counts too), and ages or durations.
var (
	hexRun   = regexp.MustCompile(`\b[0-9a-f]{7,}\b`)
	duration = regexp.MustCompile(`\b(\d+(\.\d+)?(ms|s|m|h|d))+\b`)
)

// shape is a line with its volatile values masked.
func shape(line string) string {
	line = hexRun.ReplaceAllStringFunc(line, func(h string) string {
		if strings.ContainsAny(h, "0123456789") {
			return "…"
		}
		return h
	})
	return duration.ReplaceAllString(line, "…")
}

// unifiedLines is a line diff of published against reproduced: " " for a
// line both have, "~" for a reproduced line that differs from the published
// one only in volatile values, "-" for one only the published transcript
// has, "+" for one only the repetition printed. It reports whether they
// differ in substance, and how many lines differ only in volatile values.
func unifiedLines(published, reproduced string) (diff string, differ bool, volatileOnly int) {
	pub, rep := lines(published), lines(reproduced)
	shapes := func(ls []string) string {
		var b strings.Builder
		for _, l := range ls {
			b.WriteString(shape(l) + "\n")
		}
		return b.String()
	}
	dmp := diffmatchpatch.New()
	a, b, _ := dmp.DiffLinesToChars(shapes(pub), shapes(rep))
	var out strings.Builder
	i, j := 0, 0
	// Each line is one rune of a and b, so a diff's length counts lines.
	for _, d := range dmp.DiffMain(a, b, false) {
		for range len([]rune(d.Text)) {
			switch d.Type {
			case diffmatchpatch.DiffEqual:
				if pub[i] == rep[j] {
					out.WriteString(" " + rep[j] + "\n")
				} else {
					out.WriteString("~" + rep[j] + "\n")
					volatileOnly++
				}
				i, j = i+1, j+1
			case diffmatchpatch.DiffDelete:
				out.WriteString("-" + pub[i] + "\n")
				i, differ = i+1, true
			case diffmatchpatch.DiffInsert:
				out.WriteString("+" + rep[j] + "\n")
				j, differ = j+1, true
			}
		}
	}
	return out.String(), differ, volatileOnly
}

func lines(text string) []string {
	if text == "" {
		return nil
	}
	return strings.Split(strings.TrimSuffix(text, "\n"), "\n")
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
