// Package session is the one loop over a scenario's steps: await, run (with
// retry), expectations, resource reads, next. It stops at the first check that
// does not hold and reports every check so far with the diagnostics a reader
// of the failure needs.
package session

import (
	"context"
	"errors"
	"fmt"
	"io"
	"strings"
	"time"

	"k8s.io/client-go/rest"

	"ptah.run/operator/recorder/check"
	"ptah.run/operator/recorder/execute"
	"ptah.run/operator/recorder/labenv"
	"ptah.run/operator/recorder/normalize"
	"ptah.run/operator/recorder/observe"
	"ptah.run/operator/recorder/recording"
	"ptah.run/operator/recorder/scenario"
)

// Defaults for what a scenario leaves unsaid.
const (
	DefaultAwait   = 5 * time.Minute
	DefaultCommand = 5 * time.Minute
	retryPause     = 2 * time.Second
)

// Runner runs scenarios against one lab.
type Runner struct {
	Shell      execute.Shell
	Observer   *observe.Observer
	Config     *rest.Config
	Normalizer normalize.Normalizer
	Secrets    []labenv.Secret
	// Lab holds the published values, for diagnostics (CONTROLLER,
	// OPERATOR_NAMESPACE); nil when there is no lab file.
	Lab *labenv.Lab
	// Progress receives the live progress line; nil for none.
	Progress io.Writer
}

// Failure is a scenario that stopped: the checks so far (the last one did
// not hold, unless Err is set) and what was seen around it.
type Failure struct {
	Scenario    string
	Step        int
	Checks      []check.Check
	Diagnostics string
	Err         error
}

func (f *Failure) Error() string {
	var b strings.Builder
	if f.Err != nil {
		fmt.Fprintf(&b, "scenario %s step %d: %v\n", f.Scenario, f.Step, f.Err)
	} else {
		last := f.Checks[len(f.Checks)-1]
		fmt.Fprintf(&b, "scenario %s step %d: %s did not hold: %s\n", f.Scenario, f.Step, last.Claim, last.Evidence.Why)
	}
	b.WriteString("checks so far:\n")
	for _, c := range f.Checks {
		held := "held"
		if !c.Held {
			held = "FAILED"
		}
		fmt.Fprintf(&b, "  step %d  %-6s  %s\n          evidence: %s\n", c.Step, held, c.Claim, describe(c.Evidence))
	}
	if f.Diagnostics != "" {
		b.WriteString("diagnostics:\n" + f.Diagnostics)
	}
	b.WriteString("nothing was written.")
	return b.String()
}

func (f *Failure) Unwrap() error { return f.Err }

// describe renders evidence on one line.
func describe(e check.Evidence) string {
	var parts []string
	if e.Exit != nil {
		parts = append(parts, fmt.Sprintf("exit %d", *e.Exit))
	}
	if e.Attempts > 0 {
		parts = append(parts, fmt.Sprintf("%d attempts", e.Attempts))
	}
	if c := e.Condition; c != nil {
		parts = append(parts, fmt.Sprintf("status %s, reason %s, observedGeneration %d of generation %d, since %s",
			c.Status, c.Reason, c.ObservedGeneration, c.Generation, c.LastTransitionTime))
	}
	if f := e.Field; f != nil {
		if f.Exists {
			parts = append(parts, fmt.Sprintf("%s = %q", f.Path, f.Value))
		} else {
			parts = append(parts, f.Path+" not set")
		}
	}
	if e.Present != nil {
		parts = append(parts, fmt.Sprintf("present %v", *e.Present))
	}
	if e.WaitSeconds != nil {
		parts = append(parts, fmt.Sprintf("waited %.1fs", *e.WaitSeconds))
	}
	if e.Why != "" {
		parts = append(parts, "why: "+e.Why)
	}
	return strings.Join(parts, "; ")
}

// run is the state of one scenario in progress.
type run struct {
	*Runner
	sc       scenario.Scenario
	checks   []check.Check
	progress *progress
}

// Run runs s and returns what to publish, or a *Failure.
func (r *Runner) Run(ctx context.Context, s scenario.Scenario) (recording.Scenario, error) {
	out := recording.Scenario{
		ID: s.ID, Title: s.Title, Tagline: s.Tagline, Learn: s.Learn, Tags: s.Tags, File: s.File,
		DefinitionDigest: recording.DefinitionDigest(s),
		RecordedAt:       time.Now().UTC().Format(time.RFC3339),
		Events:           []recording.Event{},
	}
	ru := &run{Runner: r, sc: s, progress: newProgress(r.Progress, r.Secrets, s.ID, len(s.Steps))}
	defer ru.progress.stop()

	for i, cmd := range s.Reset {
		ru.progress.set(0, fmt.Sprintf("reset %d/%d", i+1, len(s.Reset)))
		res, err := r.Shell.Run(ctx, cmd, false)
		if err == nil && res.Exit != 0 {
			err = fmt.Errorf("reset command %d exited %d: fix the lab (demo/bin/lab reset) or the command", i+1, res.Exit)
		}
		if err != nil {
			return recording.Scenario{}, ru.fail(ctx, 0, nil, time.Now(), err)
		}
	}

	begin := time.Now()
	for i, st := range s.Steps {
		n := i + 1
		stepStart := time.Now()
		if st.Await != nil {
			if err := ru.observe(ctx, n, *st.Await, timeoutOf(st.Await.Timeout, DefaultAwait), "waiting for"); err != nil {
				return recording.Scenario{}, ru.fail(ctx, n, st.Await, stepStart, err)
			}
		}
		ru.progress.set(n, "running "+firstLine(st.Run))
		started := time.Since(begin)
		res, err := ru.command(ctx, n, st)
		if err != nil {
			return recording.Scenario{}, ru.fail(ctx, n, st.Await, stepStart, err)
		}
		out.Events = append(out.Events, recording.Event{
			Step: n, Note: st.Note, Command: st.Run, Sync: st.Sync, Show: st.Show,
			Start:  float64(started.Microseconds()) / 1e6,
			Output: nonNil(recording.Lines(res, st.Show, r.Normalizer)),
		})
		if res := st.Expect.Resource; res != nil {
			if err := ru.observe(ctx, n, *res, timeoutOf(res.Timeout, 0), "reading"); err != nil {
				return recording.Scenario{}, ru.fail(ctx, n, res, stepStart, err)
			}
		}
	}
	out.Checks = ru.checks
	return out, nil
}

// errNotHeld marks a failure whose cause is the last check.
var errNotHeld = errors.New("check did not hold")

// observe awaits (or, with no timeout, reads once) every check the
// observation asks for, records each, and fails on the first that did not hold.
func (ru *run) observe(ctx context.Context, step int, o scenario.Observation, timeout time.Duration, verb string) error {
	checks := check.ObjectChecks(o)
	claims := make([]string, len(checks))
	for i, c := range checks {
		claims[i] = c.Claim()
	}
	ru.progress.set(step, verb+" "+strings.Join(claims, ", "))
	start := time.Now()
	var obj observe.Object
	var err error
	if timeout > 0 {
		obj, err = ru.Observer.Await(ctx, check.Target(o), timeout, func(x observe.Object) bool { return check.AllHold(checks, x) })
	} else {
		obj, err = ru.Observer.Read(ctx, check.Target(o))
	}
	if err != nil && !errors.Is(err, observe.ErrTimeout) {
		return err
	}
	waited := time.Since(start).Seconds()
	for _, c := range checks {
		ev, held := c.Check(obj)
		if timeout > 0 {
			w := float64(int64(waited*1000)) / 1000
			ev.WaitSeconds = &w
		}
		ru.checks = append(ru.checks, check.Check{Step: step, Claim: c.Claim(), Held: held, Evidence: ev})
		if !held {
			return errNotHeld
		}
	}
	return nil
}

// command runs the step (again, while a retry allows) and records its check.
func (ru *run) command(ctx context.Context, step int, st scenario.Step) (execute.Result, error) {
	c := check.CommandResult{Expect: *st.Expect}
	e := st.Expect
	separate := len(st.Show) > 0 || len(e.StderrContains) > 0 || len(e.StderrAbsent) > 0
	retry := timeoutOf(st.Retry, 0)
	start := time.Now()
	for attempt := 1; ; attempt++ {
		res, err := ru.Shell.Run(ctx, st.Run, separate)
		if err != nil {
			return res, err
		}
		ev, held := c.Check(res)
		left := retry - time.Since(start)
		if held || left <= 0 {
			if retry > 0 {
				ev.Attempts = attempt
				w := float64(time.Since(start).Milliseconds()) / 1000
				ev.WaitSeconds = &w
			}
			ru.checks = append(ru.checks, check.Check{Step: step, Claim: c.Claim(), Held: held, Evidence: ev})
			if !held {
				return res, errNotHeld
			}
			return res, nil
		}
		ru.progress.set(step, fmt.Sprintf("retrying (attempt %d: %s)", attempt+1, ev.Why))
		select {
		case <-ctx.Done():
			return res, ctx.Err()
		case <-time.After(min(retryPause, left)):
		}
	}
}

// fail builds the Failure, with diagnostics on the object the step watched,
// scanned for credentials like everything else the recorder prints.
func (ru *run) fail(ctx context.Context, step int, o *scenario.Observation, since time.Time, err error) error {
	f := &Failure{Scenario: ru.sc.ID, Step: step, Checks: ru.checks}
	if !errors.Is(err, errNotHeld) {
		f.Err = err
	}
	if o == nil && step > 0 {
		o = ru.sc.Steps[step-1].Expect.Resource
	}
	f.Diagnostics = ru.diagnose(ctx, o, since)
	if serr := recording.ScanText(ru.Secrets, fmt.Sprintf("the failure report of scenario %s step %d", ru.sc.ID, step), f.Error()); serr != nil {
		// The report itself would print a credential: say so and nothing else.
		return &Failure{Scenario: ru.sc.ID, Step: step, Checks: nil, Err: serr}
	}
	return f
}

func timeoutOf(s string, def time.Duration) time.Duration {
	if d, err := time.ParseDuration(s); err == nil && s != "" {
		return d
	}
	return def
}

func firstLine(s string) string {
	l, _, more := strings.Cut(strings.TrimSpace(s), "\n")
	if more || len(l) > 60 {
		return l[:min(len(l), 60)] + "…"
	}
	return l
}

func nonNil(l []recording.Line) []recording.Line {
	if l == nil {
		return []recording.Line{}
	}
	return l
}
