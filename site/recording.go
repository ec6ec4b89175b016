package site

import (
	"fmt"
	"os"
	"path/filepath"
	"strconv"
	"time"

	"ptah.run/operator/recorder/runs"
	"ptah.run/operator/recorder/terminal"
)

// loadRecording reads runs.json in dir, checks it against the recording's
// schema and builds the site's model from it.
func loadRecording(dir string) (*Site, error) {
	path := filepath.Join(dir, runs.File)
	raw, err := os.ReadFile(path)
	if err != nil {
		return nil, fmt.Errorf("read the recording: %w (record the scenarios first, or pass -recording)", err)
	}
	if err := runs.Validate(raw); err != nil {
		return nil, fmt.Errorf("%s: %w", path, err)
	}
	r, err := runs.Read(path)
	if err != nil {
		return nil, err
	}
	return model(r)
}

// model turns a recording into what the pages show. Output lines are shown
// as a terminal shows them (escape sequences gone), the same way the cast's
// screen is read, so the two can be compared.
func model(r *runs.Recording) (*Site, error) {
	at, err := time.Parse(time.RFC3339, r.RecordedAt)
	if err != nil {
		return nil, fmt.Errorf("recordedAt %q is not an RFC 3339 time: %w", r.RecordedAt, err)
	}
	s := &Site{
		Lab: Lab{
			Kubernetes:     Value{Short: r.Lab.Kubernetes, Full: r.Lab.Kubernetes},
			Operator:       short(r.Lab.OperatorCommit),
			OperatorSource: short(r.Lab.OperatorSource),
			Ptah:           Value{Short: r.Lab.PtahVersion, Full: r.Lab.PtahVersion},
			Executor:       short(r.Lab.ExecutorDigest),
			Recorded:       Value{Short: at.UTC().Format(time.DateOnly), Full: at.UTC().Format(time.RFC3339)},
			Scenarios:      short(r.ScenariosCommit),
		},
	}
	for _, n := range r.Environment {
		s.Environment = append(s.Environment, EnvName{Name: n.Name, Meaning: n.Meaning})
	}
	for _, sc := range r.Scenarios {
		p := &Page{ID: sc.ID, Title: sc.Title, Tagline: sc.Tagline, Learn: sc.Learn, Tags: sc.Tags, File: sc.File}
		for _, e := range sc.Events {
			step := Step{Number: e.Step, Note: e.Note, Command: e.Command, Sync: e.Sync}
			for _, l := range e.Output {
				step.Lines = append(step.Lines, Line{At: l.T, Stream: l.Stream, Text: terminal.Line(l.Text), Segments: styledLine(l.Text)})
			}
			p.Steps = append(p.Steps, step)
		}
		timing := map[int]*runs.Timing{}
		for _, e := range sc.Events {
			timing[e.Step] = e.Timing
		}
		awaited := map[int]bool{}
		for _, c := range sc.Checks {
			ch := Check{Step: c.Step, Claim: c.Claim, Held: c.Held, Evidence: facts(c.Evidence), command: c.Evidence.Exit != nil}
			// The step's first check with a wait is its await's.
			await := c.Evidence.WaitSeconds != nil && !ch.command && !awaited[c.Step]
			awaited[c.Step] = awaited[c.Step] || await
			ch.Runs = runsText(c.Runs, timing[c.Step], await, ch.command)
			p.Checks = append(p.Checks, ch)
		}
		s.Pages = append(s.Pages, p)
	}
	return s, nil
}

// facts lists what a check observed, in the words of the recording's
// fields, so a reader sees what was read rather than our summary of it.
func facts(e runs.Evidence) []Fact {
	var out []Fact
	add := func(name, value string) { out = append(out, Fact{name, value}) }
	if e.Exit != nil {
		add("exit status", strconv.Itoa(*e.Exit))
	}
	if e.Attempts > 0 {
		add("attempts", strconv.Itoa(e.Attempts))
	}
	if c := e.Condition; c != nil {
		add("status", c.Status)
		add("reason", c.Reason)
		add("observedGeneration", fmt.Sprintf("%d (the object's generation: %d)", c.ObservedGeneration, c.Generation))
		if c.LastTransitionTime != "" {
			add("lastTransitionTime", c.LastTransitionTime)
		}
	}
	if f := e.Field; f != nil {
		add("field", f.Path)
		if f.Exists {
			add("value", strconv.Quote(f.Value))
		} else {
			add("value", "not set")
		}
	}
	if e.Present != nil {
		if *e.Present {
			add("present", "yes")
		} else {
			add("present", "no")
		}
	}
	if e.WaitSeconds != nil {
		add("waited", strconv.FormatFloat(*e.WaitSeconds, 'f', -1, 64)+" s")
	}
	return out
}

// runsText says how a claim held across repeated runs: "held in 5 of 5
// runs; waited 2.1–3.4 s" (an await), "; ran 0.4–0.6 s" (a command).
// Empty for a single run.
func runsText(n int, t *runs.Timing, await, command bool) string {
	if n == 0 {
		return ""
	}
	text := fmt.Sprintf("held in %d of %d runs", n, n)
	switch {
	case t == nil:
	case await && t.Await != nil:
		text += "; waited " + spreadText(*t.Await)
	case command:
		text += "; ran " + spreadText(t.Command)
	}
	return text
}

func spreadText(s runs.Spread) string {
	f := func(x float64) string { return strconv.FormatFloat(x, 'f', 1, 64) }
	if f(s.Min) == f(s.Max) {
		return f(s.Min) + " s"
	}
	return f(s.Min) + "–" + f(s.Max) + " s"
}
