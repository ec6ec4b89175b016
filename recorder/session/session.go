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
	"strconv"
	"strings"
	"time"
	"unicode"

	"k8s.io/client-go/rest"

	"ptah.run/operator/recorder/check"
	"ptah.run/operator/recorder/credential"
	"ptah.run/operator/recorder/execute"
	"ptah.run/operator/recorder/labenv"
	"ptah.run/operator/recorder/normalize"
	"ptah.run/operator/recorder/observe"
	"ptah.run/operator/recorder/recording"
	"ptah.run/operator/recorder/scenario"
	"ptah.run/operator/recorder/terminal"
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
	// Credentials are what must not be published; the values of every
	// Secret in the cluster are added to it before and after every step,
	// and those of every Secret a watch sees during a step, so a value that
	// existed only for a moment is still known when the recording is
	// published (the publication is scanned with the final set). Nil means
	// no credential is known but the shapes are still refused.
	Credentials *credential.Set
	// LearnSecrets: the account lists every Secret of the cluster into
	// Credentials before and after each step and watches them during it
	// (the recorder, which publishes). A repetition run as a reader, who
	// may not read Secrets and publishes nothing, leaves it off.
	LearnSecrets bool
	// Placeholders are Secrets (namespace/name) whose values are not
	// credentials (labenv.Lab.Placeholders).
	Placeholders []string
	// Lab holds the published values, for diagnostics (CONTROLLER,
	// OPERATOR_NAMESPACE); nil when there is no lab file.
	Lab *labenv.Lab
	// Progress receives the live progress line; nil for none.
	Progress io.Writer
}

// Failure is a scenario that stopped: the checks so far (the last one did
// not hold, unless Err is set) and what was seen around it.
type Failure struct {
	Scenario string
	Step     int
	Checks   []check.Check
	// Events are the steps that ran to the end, as they would have been
	// published (for a report, never published).
	Events      []recording.Event
	Diagnostics string
	Err         error
	// scanner takes credentials out of the report; nil takes out none but
	// the shapes.
	scanner *credential.Scanner
}

// Error is the report as a terminal shows it, with every line that held a
// credential redacted and a last line saying how many were. The report
// quotes what commands printed, which may move the cursor between lines:
// scanned line by line as written, a value drawn in pieces on lines of
// their own would pass and then show whole. So the whole report is drawn
// first, as a terminal draws it, and what is left that a terminal would
// not draw as itself is escaped: the text scanned is the text shown.
func (f *Failure) Error() string {
	sc := f.scanner
	if sc == nil {
		sc = credential.NewScanner(nil)
	}
	text, redacted := sc.Redact(printable(terminal.Text(f.report())))
	if redacted > 0 {
		text += fmt.Sprintf("\n(%d %s of this report held a credential and %s redacted; the report is not published)", redacted, plural(redacted, "line", "lines"), plural(redacted, "was", "were"))
	}
	return text
}

// printable escapes every rune a terminal would not draw as itself (a
// control or format character, such as a bidirectional override or a
// zero-width space) the way Go quotes it.
func printable(s string) string {
	var b strings.Builder
	for _, r := range s {
		if r == '\n' || unicode.IsGraphic(r) {
			b.WriteRune(r)
			continue
		}
		q := strconv.QuoteRune(r)
		b.WriteString(q[1 : len(q)-1])
	}
	return b.String()
}

func plural(n int, one, many string) string {
	if n == 1 {
		return one
	}
	return many
}

func (f *Failure) report() string {
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
	events   []recording.Event
	progress *progress
	scanner  *credential.Scanner
}

// Run runs s and returns what to publish, or a *Failure.
func (r *Runner) Run(ctx context.Context, s scenario.Scenario) (recording.Scenario, error) {
	out := recording.Scenario{
		ID: s.ID, Title: s.Title, Tagline: s.Tagline, Learn: s.Learn, Tags: s.Tags, File: s.File,
		DefinitionDigest: recording.DefinitionDigest(s),
		RecordedAt:       time.Now().UTC().Format(time.RFC3339),
		Events:           []recording.Event{},
	}
	ru := &run{Runner: r, sc: s, scanner: credential.NewScanner(nil)}
	ru.progress = newProgress(r.Progress, ru, s.ID, len(s.Steps))
	defer ru.progress.stop()
	if err := ru.learn(ctx); err != nil {
		return recording.Scenario{}, ru.fail(ctx, 0, nil, time.Now(), err)
	}

	for i, cmd := range s.Reset {
		ru.progress.set(0, fmt.Sprintf("reset %d/%d", i+1, len(s.Reset)))
		res, err := r.shell(DefaultCommand).Run(ctx, cmd, false)
		if err == nil {
			err = bounded(res, fmt.Sprintf("reset command %d", i+1), DefaultCommand)
		}
		if err == nil && res.Exit != 0 {
			err = fmt.Errorf("reset command %d exited %d: fix the lab (demo/bin/lab reset) or the command; %s", i+1, res.Exit, said(res))
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
		// Secrets are watched while the command runs: one it creates and
		// deletes is never in a list.
		w, err := ru.watch(ctx)
		if err != nil {
			return recording.Scenario{}, ru.fail(ctx, n, nil, stepStart, err)
		}
		cmdStart := time.Now()
		res, err := ru.command(ctx, n, st)
		ran := float64(time.Since(cmdStart).Milliseconds()) / 1000
		if werr := ru.unwatch(w); err == nil {
			err = werr
		}
		if lerr := ru.learn(ctx); err == nil {
			err = lerr
		}
		lines := recording.Lines(res, st.Show, r.Normalizer)
		if err == nil || errors.Is(err, errNotHeld) {
			// Kept for a failure's report too, which shows what the step printed.
			ru.events = append(ru.events, recording.Event{
				Step: n, Note: st.Note, Command: st.Run, Sync: st.Sync, Show: st.Show,
				Start:   float64(started.Microseconds()) / 1e6,
				Seconds: ran,
				Output:  nonNil(lines),
			})
		}
		if err != nil {
			return recording.Scenario{}, ru.fail(ctx, n, st.Await, stepStart, err)
		}
		if err := leftover(r.Normalizer, lines); err != nil {
			return recording.Scenario{}, ru.fail(ctx, n, nil, stepStart, err)
		}
		if len(lines) > recording.MaxLines {
			return recording.Scenario{}, ru.fail(ctx, n, nil, stepStart, fmt.Errorf(
				"refused: the command printed %d lines, more than the %d a step may publish; nothing was written (narrow what it prints, for example with `| tail -n 20`, `| head -n 20` or a selector)",
				len(lines), recording.MaxLines))
		}
		out.Events = ru.events
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
	deadline := timeoutOf(st.Timeout, DefaultCommand)
	start := time.Now()
	for attempt := 1; ; attempt++ {
		res, err := ru.shell(deadline).Run(ctx, st.Run, separate)
		if err == nil {
			err = bounded(res, "the command", deadline)
		}
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
	f := &Failure{Scenario: ru.sc.ID, Step: step, Checks: ru.checks, Events: ru.events}
	if !errors.Is(err, errNotHeld) {
		f.Err = err
	}
	if o == nil && step > 0 {
		o = ru.sc.Steps[step-1].Expect.Resource
	}
	f.Diagnostics = ru.diagnose(ctx, o, since)
	// The report is printed, not published, but may be pasted anywhere:
	// what holds a credential is taken out, and the report says so.
	_ = ru.learn(ctx)
	f.scanner = ru.scanner
	return f
}

// Learn reads the cluster's Secrets into the Runner's credentials
// once more and returns a scanner for everything known so far.
func (r *Runner) Learn(ctx context.Context) (*credential.Scanner, error) {
	ru := &run{Runner: r}
	if err := ru.learn(ctx); err != nil {
		return nil, err
	}
	if ru.scanner == nil {
		ru.scanner = credential.NewScanner(nil)
	}
	return ru.scanner, nil
}

// Scanner is a scanner for the credentials known so far, without reading
// the cluster again.
func (r *Runner) Scanner() *credential.Scanner {
	if r.Credentials == nil {
		return credential.NewScanner(nil)
	}
	return credential.NewScanner(r.Credentials.Credentials())
}

// shell is the Runner's shell with the deadline d.
func (r *Runner) shell(d time.Duration) execute.Shell {
	sh := r.Shell
	sh.Timeout = d
	return sh
}

// leftover refuses output that still holds a name the lab made for this
// scenario alone: a reader's lab does not have it.
func leftover(n normalize.Normalizer, lines []recording.Line) error {
	for i, l := range lines {
		if own := n.Leftover(l.Text); own != "" {
			return fmt.Errorf("refused: line %d of the output holds %q, a name the lab made for this scenario alone, in a form normalization does not rewrite (glued to a longer word); nothing was written (print it apart from what it is glued to)", i+1, own)
		}
	}
	return nil
}

// said is the end of what a failed command wrote to stderr (or, when it
// wrote nothing there, to stdout), so its own reason is in the report.
func said(res execute.Result) string {
	text := strings.TrimSpace(res.Text(execute.Stderr))
	if text == "" {
		text = strings.TrimSpace(res.Text(execute.Stdout))
	}
	if text == "" {
		return "it printed nothing"
	}
	lines := strings.Split(text, "\n")
	if len(lines) > 5 {
		lines = lines[len(lines)-5:]
	}
	return "it ended with:\n    " + strings.Join(lines, "\n    ")
}

// bounded turns a command that was stopped into its one-line reason.
func bounded(res execute.Result, what string, deadline time.Duration) error {
	switch {
	case res.TimedOut:
		return fmt.Errorf("%s did not finish within %s (its timeout) and was killed with every process it started; make it finish sooner or set the step's timeout", what, deadline)
	case res.Overflow:
		return fmt.Errorf("refused: %s printed more than %d KiB, more than a step may publish, and was stopped; nothing was written (narrow what it prints, for example with `| tail -n 20`, `| head -c 2000` or a selector)", what, execute.MaxOutput>>10)
	}
	return nil
}

// learn reads every Secret the Runner's account can list, cluster-wide,
// into its credentials and renews the scanner. A Secret that cannot be read
// is an error: the recorder cannot keep back what it does not know.
func (ru *run) learn(ctx context.Context) error {
	_, err := ru.list(ctx)
	return err
}

func (ru *run) list(ctx context.Context) (*Listing, error) {
	if ru.Credentials == nil {
		return nil, nil
	}
	var l *Listing
	if ru.Config != nil && ru.LearnSecrets {
		var err error
		if l, err = AddSecrets(ctx, ru.Config, ru.Placeholders, ru.Credentials); err != nil {
			return nil, err
		}
	}
	ru.scanner = credential.NewScanner(ru.Credentials.Credentials())
	return l, nil
}

// watch lists the Secrets once more and watches them from there; nil when
// the Runner reads no cluster.
func (ru *run) watch(ctx context.Context) (*SecretWatch, error) {
	if ru.Credentials == nil || ru.Config == nil || !ru.LearnSecrets {
		return nil, nil
	}
	l, err := ru.list(ctx)
	if err != nil {
		return nil, err
	}
	return WatchSecrets(ctx, ru.Config, l, ru.Placeholders)
}

func (ru *run) unwatch(w *SecretWatch) error {
	if w == nil {
		return nil
	}
	err := w.Stop(ru.Credentials)
	ru.scanner = credential.NewScanner(ru.Credentials.Credentials())
	return err
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
