package stability

import (
	"slices"
	"strings"
	"testing"

	"ptah.run/operator/recorder/runs"
)

func f(x float64) *float64 { return &x }

func check(step int, claim string, held bool, wait *float64) runs.Check {
	c := runs.Check{Step: step, Claim: claim, Held: held, Evidence: runs.Evidence{WaitSeconds: wait}}
	if !held {
		c.Evidence.Why = claim + " was not so"
	}
	return c
}

func TestFlakesAreClaimsThatHeldInSomeRuns(t *testing.T) {
	all := []Run{
		{Checks: []runs.Check{check(1, "a", true, nil), check(2, "b", true, nil), check(3, "c", true, nil)}},
		{Checks: []runs.Check{check(1, "a", true, nil), check(2, "b", false, nil)}, Failed: true},
		{Checks: []runs.Check{check(1, "a", true, nil), check(2, "b", true, nil), check(3, "c", true, nil)}},
	}
	got := Flakes("demo", all)
	if len(got) != 1 || got[0].Step != 2 || got[0].Claim != "b" || !slices.Equal(got[0].HeldIn, []int{1, 3}) || !slices.Equal(got[0].FailedIn, []int{2}) {
		t.Fatalf("flakes %+v", got)
	}
	if s := got[0].String(); !strings.Contains(s, `step 2: "b" held in 2 of 3 runs (runs 1, 3), did not hold in run 2 (b was not so)`) {
		t.Errorf("flake reads %q", s)
	}
	// The same failure in every run is a failure, not a flake; a claim no
	// later run reached is neither.
	steady := []Run{
		{Checks: []runs.Check{check(1, "a", false, nil)}, Failed: true},
		{Checks: []runs.Check{check(1, "a", false, nil)}, Failed: true},
	}
	if got := Flakes("demo", steady); got != nil {
		t.Errorf("a steady failure reported as flakes %+v", got)
	}
	// Several flakes come in the order the runs judged them.
	two := []Run{
		{Checks: []runs.Check{check(1, "a", true, nil), check(2, "b", false, nil)}, Failed: true},
		{Checks: []runs.Check{check(1, "a", false, nil)}, Failed: true},
		{Checks: []runs.Check{check(1, "a", true, nil), check(2, "b", true, nil)}},
	}
	if got := Flakes("demo", two); len(got) != 2 || got[0].Claim != "a" || got[1].Claim != "b" || !slices.Equal(got[1].HeldIn, []int{3}) {
		t.Errorf("two flakes %+v", got)
	}
	// A claim repeated within a step is told apart by its occurrence.
	twice := []Run{
		{Checks: []runs.Check{check(1, "a", true, nil), check(1, "a", true, nil)}},
		{Checks: []runs.Check{check(1, "a", true, nil), check(1, "a", false, nil)}, Failed: true},
	}
	if got := Flakes("demo", twice); len(got) != 1 || !slices.Equal(got[0].FailedIn, []int{2}) {
		t.Errorf("second occurrence: %+v", got)
	}
}

func TestCombineKeepsTimingAcrossRuns(t *testing.T) {
	run := func(wait, cmd float64) Run {
		return Run{
			Checks: []runs.Check{check(1, "await", true, f(wait)), check(1, "exits 0", true, nil), check(2, "exits 0", true, nil)},
			Events: []runs.Event{{Step: 1, Seconds: cmd}, {Step: 2, Seconds: cmd / 2}},
		}
	}
	all := []Run{run(3.4, 1.0), run(2.1, 0.5), run(2.5, 2.0), run(2.9, 1.5)}
	first := runs.Scenario{ID: "demo", Checks: all[0].Checks, Events: all[0].Events}
	got := Combine(first, all, map[int]bool{1: true})
	for _, c := range got.Checks {
		if c.Runs != 4 {
			t.Errorf("check %q held in %d runs", c.Claim, c.Runs)
		}
	}
	one := got.Events[0].Timing
	if one == nil || one.Runs != 4 || *one.Await != (runs.Spread{Min: 2.1, Median: 2.7, Max: 3.4}) || one.Command != (runs.Spread{Min: 0.5, Median: 1.25, Max: 2}) {
		t.Errorf("step 1 timing %+v await %+v", one, one.Await)
	}
	if two := got.Events[1].Timing; two.Await != nil || two.Command != (runs.Spread{Min: 0.25, Median: 0.625, Max: 1}) {
		t.Errorf("step 2 (no await) timing %+v", two)
	}
	if first.Checks[0].Runs != 0 || first.Events[0].Timing != nil {
		t.Error("Combine changed the first run in place")
	}
}
