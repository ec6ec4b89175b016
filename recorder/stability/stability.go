// Package stability combines repeated runs of one scenario (record -repeat):
// a claim is published only when it held in every run, a claim that held in
// some runs and not in others is a flake, and each step's await and command
// times are kept as min, median and max across the runs.
package stability

import (
	"fmt"
	"slices"
	"strconv"
	"strings"

	"ptah.run/operator/recorder/runs"
)

// Run is one run of a scenario: the checks it judged (the last one did not
// hold when Failed) and the steps that ran.
type Run struct {
	Checks []runs.Check
	Events []runs.Event
	Failed bool
}

// Flake is a claim that held in some runs and not in others.
type Flake struct {
	Scenario string
	Step     int
	Claim    string
	HeldIn   []int // run numbers, from 1
	FailedIn []int
	Why      string // what the first failing run saw
}

func (f Flake) String() string {
	return fmt.Sprintf("flake: scenario %s step %d: %q held in %d of %d runs (%s), did not hold in %s (%s)",
		f.Scenario, f.Step, f.Claim, len(f.HeldIn), len(f.HeldIn)+len(f.FailedIn),
		numbers("run", f.HeldIn), numbers("run", f.FailedIn), f.Why)
}

func numbers(word string, ns []int) string {
	parts := make([]string, len(ns))
	for i, n := range ns {
		parts[i] = strconv.Itoa(n)
	}
	if len(ns) != 1 {
		word += "s"
	}
	return word + " " + strings.Join(parts, ", ")
}

// key names a check within its scenario: its step, its claim, and which
// occurrence of that claim in the step it is.
type key struct {
	step  int
	claim string
	nth   int
}

func keys(checks []runs.Check) []key {
	seen := map[key]int{}
	out := make([]key, len(checks))
	for i, c := range checks {
		k := key{c.Step, c.Claim, 0}
		k.nth = seen[k]
		seen[key{c.Step, c.Claim, 0}]++
		out[i] = k
	}
	return out
}

// Flakes lists, in the order the first run that judged them did, the
// claims that held in some runs and did not hold in others. A claim no run
// judged after an earlier failure is neither.
func Flakes(scenario string, all []Run) []Flake {
	type tally struct {
		held, failed []int
		why          string
	}
	tallies := map[key]*tally{}
	var order []key // as first judged
	for i, r := range all {
		for j, k := range keys(r.Checks) {
			t := tallies[k]
			if t == nil {
				t = &tally{}
				tallies[k] = t
				order = append(order, k)
			}
			if c := r.Checks[j]; c.Held {
				t.held = append(t.held, i+1)
			} else {
				t.failed = append(t.failed, i+1)
				if t.why == "" {
					t.why = c.Evidence.Why
				}
			}
		}
	}
	var out []Flake
	for _, k := range order {
		if t := tallies[k]; len(t.held) > 0 && len(t.failed) > 0 {
			out = append(out, Flake{Scenario: scenario, Step: k.step, Claim: k.claim, HeldIn: t.held, FailedIn: t.failed, Why: t.why})
		}
	}
	return out
}

// Combine is what is published from runs that all held: the first run's
// transcript, each check marked with the runs it held in, and each step's
// await and command times across the runs. awaits says which steps have an
// await (their first check is the await's).
func Combine(first runs.Scenario, all []Run, awaits map[int]bool) runs.Scenario {
	out := first
	out.Checks = slices.Clone(first.Checks)
	for i := range out.Checks {
		out.Checks[i].Runs = len(all)
	}
	out.Events = slices.Clone(first.Events)
	for i, e := range out.Events {
		var cmd, wait []float64
		for _, r := range all {
			for _, re := range r.Events {
				if re.Step == e.Step {
					cmd = append(cmd, re.Seconds)
				}
			}
			if awaits[e.Step] {
				for _, c := range r.Checks {
					if c.Step == e.Step && c.Evidence.WaitSeconds != nil {
						wait = append(wait, *c.Evidence.WaitSeconds)
						break
					}
				}
			}
		}
		t := &runs.Timing{Runs: len(all), Command: spread(cmd)}
		if len(wait) > 0 {
			s := spread(wait)
			t.Await = &s
		}
		out.Events[i].Timing = t
	}
	return out
}

func spread(xs []float64) runs.Spread {
	if len(xs) == 0 {
		return runs.Spread{}
	}
	s := slices.Clone(xs)
	slices.Sort(s)
	m := s[len(s)/2]
	if len(s)%2 == 0 {
		m = (s[len(s)/2-1] + s[len(s)/2]) / 2
	}
	round := func(x float64) float64 { return float64(int64(x*1000+0.5)) / 1000 }
	return runs.Spread{Min: round(s[0]), Median: round(m), Max: round(s[len(s)-1])}
}
