package main

import (
	"context"
	"io"
	"runtime"
	"sort"
	"sync"

	"ptah.run/operator/recorder/credential"
	"ptah.run/operator/recorder/recording"
	"ptah.run/operator/recorder/runs"
	"ptah.run/operator/recorder/scenario"
	"ptah.run/operator/recorder/session"
	"ptah.run/operator/recorder/stability"
)

// defaultParallel is what this machine takes: a scenario mostly waits for
// Jobs and Pods, so two at a core, and at least two.
func defaultParallel() int {
	return max(2, 2*runtime.NumCPU())
}

// result is one scenario's outcome, as repeat returns it, with what it
// needs afterwards: a scanner for its report and its own credentials.
type result struct {
	rec     recording.Scenario
	failed  *session.Failure
	flakes  []stability.Flake
	err     error
	scanner *credential.Scanner
	creds   *credential.Set
}

// runAll runs every scenario (n at a time, each in a namespace of its own
// when iso is not nil) and returns their results in scenario order. One
// that fails stops none of the others.
func runAll(ctx context.Context, base *session.Runner, iso *isolation, all []scenario.Scenario, repeatN, n int, root string, took map[string]float64, stderr io.Writer) []result {
	results := make([]result, len(all))
	progress := io.Writer(stderr)
	if n > 1 {
		progress = &lineWriter{w: stderr}
	}
	for i := range all {
		all[i].File = relative(root, all[i].File)
	}
	// The longest start first (as long as the last recording says they
	// took), so the last to finish is not one started late.
	order := make([]int, len(all))
	for i := range order {
		order[i] = i
	}
	sort.SliceStable(order, func(a, b int) bool { return took[all[order[a]].ID] > took[all[order[b]].ID] })
	var spaces *ahead
	if iso != nil {
		spaces = iso.ahead(ctx, len(all), min(n, len(all))+aheadSpare)
	}
	work := make(chan int)
	var wg sync.WaitGroup
	for range min(n, len(all)) {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for i := range work {
				results[i] = runOne(ctx, base, spaces, all[i], repeatN, progress)
			}
		}()
	}
	for _, i := range order {
		work <- i
	}
	close(work)
	wg.Wait()
	if spaces != nil {
		spaces.wait()
	}
	return results
}

// durations is how long each scenario of the recording at file ran (its
// last event's end), nil when there is none.
func durations(file string) map[string]float64 {
	r, err := runs.Read(file)
	if err != nil {
		return nil
	}
	out := map[string]float64{}
	for _, s := range r.Scenarios {
		if len(s.Events) > 0 {
			e := s.Events[len(s.Events)-1]
			out[s.ID] = e.Start + e.Seconds
		}
	}
	return out
}

func runOne(ctx context.Context, base *session.Runner, spaces *ahead, s scenario.Scenario, repeatN int, progress io.Writer) result {
	r := base
	if spaces != nil {
		own, err := spaces.take()
		if err != nil {
			return result{err: err, scanner: base.Scanner()}
		}
		defer spaces.giveBack(own, s.ID, progress)
		if r, err = spaces.is.runner(base, own, progress); err != nil {
			return result{err: err, scanner: base.Scanner()}
		}
	}
	rec, failed, flakes, err := repeat(ctx, r, s, repeatN, progress)
	return result{rec: rec, failed: failed, flakes: flakes, err: err, scanner: r.Scanner(), creds: r.Credentials}
}

// union is a scanner for the base runner's credentials and the scenarios'.
func union(base *session.Runner, extra []credential.Credential) *credential.Scanner {
	var all []credential.Credential
	if base.Credentials != nil {
		all = base.Credentials.Credentials()
	}
	return credential.NewScanner(append(all, extra...))
}
