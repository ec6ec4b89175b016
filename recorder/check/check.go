// Package check turns what a step expects into checks: each await, command
// expectation and resource read is a small value with a claim in the
// published grammar and one method that judges what was observed. A check
// that did not hold carries the evidence and one line saying why.
package check

import (
	"fmt"
	"strconv"
	"strings"

	"github.com/tidwall/gjson"

	"ptah.run/operator/recorder/execute"
	"ptah.run/operator/recorder/observe"
	"ptah.run/operator/recorder/runs"
	"ptah.run/operator/recorder/scenario"
)

// The published record of a check lives in package evidence, which links
// no cluster client, so the site can read it; these are the same types.
type (
	Check             = runs.Check
	Evidence          = runs.Evidence
	ConditionEvidence = runs.ConditionEvidence
	FieldEvidence     = runs.FieldEvidence
)

// ObjectCheck judges one state of a live object.
type ObjectCheck interface {
	Claim() string
	Check(observe.Object) (Evidence, bool)
}

// subject is how a claim names an object: kind as written, lower case, as
// kubectl prints it ("ptahschema/storefront").
func subject(o scenario.Observation) string {
	return strings.ToLower(o.Kind) + "/" + o.Name
}

// ConditionIs holds when the condition has the type, status and reason, and,
// when Current is set, was written for the object's current generation.
type ConditionIs struct {
	Subject string
	scenario.Condition
	Current bool
}

// Claim reads "ptahschema/storefront: InSync=True (ScopedConverged)".
func (c ConditionIs) Claim() string {
	return fmt.Sprintf("%s: %s=%s (%s)", c.Subject, c.Type, c.Status, c.Reason)
}

// Check reads the condition as fields of the object, never its message.
func (c ConditionIs) Check(o observe.Object) (Evidence, bool) {
	if o.Absent() {
		return Evidence{Why: c.Subject + " is absent"}, false
	}
	doc := gjson.ParseBytes(o.JSON)
	cond := doc.Get(`status.conditions.#(type==` + strconv.Quote(c.Type) + `)`)
	if !cond.Exists() {
		return Evidence{Why: fmt.Sprintf("%s has no %s condition", c.Subject, c.Type)}, false
	}
	ev := &ConditionEvidence{
		Status:             cond.Get("status").String(),
		Reason:             cond.Get("reason").String(),
		ObservedGeneration: cond.Get("observedGeneration").Int(),
		Generation:         doc.Get("metadata.generation").Int(),
		LastTransitionTime: cond.Get("lastTransitionTime").String(),
	}
	e := Evidence{Condition: ev}
	switch {
	case ev.Status != c.Status || ev.Reason != c.Reason:
		e.Why = fmt.Sprintf("%s: %s is %s (%s), want %s (%s)", c.Subject, c.Type, ev.Status, ev.Reason, c.Status, c.Reason)
	case c.Current && ev.ObservedGeneration != ev.Generation:
		e.Why = fmt.Sprintf("%s: %s=%s (%s) is stale: observedGeneration %d < generation %d",
			c.Subject, c.Type, ev.Status, ev.Reason, ev.ObservedGeneration, ev.Generation)
	}
	return e, e.Why == ""
}

// FieldIs holds when the gjson path on the object equals Equals, or, with
// NotEmpty, matches a non-empty value.
type FieldIs struct {
	Subject string
	scenario.Field
}

// Claim reads `ptahschema/storefront: status.phase = "InSync"` or
// `ptahschema/storefront: status.applied.planFingerprint is not empty`.
func (f FieldIs) Claim() string {
	if f.NotEmpty {
		return fmt.Sprintf("%s: %s is not empty", f.Subject, f.Path)
	}
	return fmt.Sprintf("%s: %s = %q", f.Subject, f.Path, deref(f.Equals))
}

// Check reads the path on the object's JSON.
func (f FieldIs) Check(o observe.Object) (Evidence, bool) {
	if o.Absent() {
		return Evidence{Why: f.Subject + " is absent"}, false
	}
	v := gjson.GetBytes(o.JSON, f.Path)
	ev := &FieldEvidence{Path: f.Path, Value: v.String(), Exists: v.Exists()}
	e := Evidence{Field: ev}
	switch {
	case !v.Exists():
		e.Why = fmt.Sprintf("%s: %s is not set", f.Subject, f.Path)
	case f.NotEmpty && strings.TrimSpace(ev.Value) == "":
		e.Why = fmt.Sprintf("%s: %s is empty", f.Subject, f.Path)
	case !f.NotEmpty && ev.Value != deref(f.Equals):
		e.Why = fmt.Sprintf("%s: %s is %q, want %q", f.Subject, f.Path, ev.Value, deref(f.Equals))
	}
	return e, e.Why == ""
}

// IsAbsent holds when the object does not exist.
type IsAbsent struct{ Subject string }

// Claim reads "ptahschema/storefront: absent".
func (a IsAbsent) Claim() string { return a.Subject + ": absent" }

// Check holds on a read that found nothing.
func (a IsAbsent) Check(o observe.Object) (Evidence, bool) {
	present := !o.Absent()
	e := Evidence{Present: &present}
	if present {
		e.Why = a.Subject + " still exists"
	}
	return e, !present
}

func deref(s *string) string {
	if s == nil {
		return ""
	}
	return *s
}

// CommandResult holds when the command exited as expected and its output
// shows (and never shows) the given strings.
type CommandResult struct {
	scenario.Expect
}

// Claim reads `exits 0, prints "created"` or `exits 0, never prints "x"`;
// stderr expectations end in "on stderr".
func (c CommandResult) Claim() string {
	exit := 0
	if c.Exit != nil {
		exit = *c.Exit
	}
	parts := []string{fmt.Sprintf("exits %d", exit)}
	add := func(verb string, values []string, suffix string) {
		for _, v := range values {
			parts = append(parts, fmt.Sprintf("%s %q%s", verb, v, suffix))
		}
	}
	add("prints", c.StdoutContains, "")
	add("never prints", c.StdoutAbsent, "")
	add("prints", c.StderrContains, " on stderr")
	add("never prints", c.StderrAbsent, " on stderr")
	return strings.Join(parts, ", ")
}

// Check judges one run of the command. On a shared terminal stdout is what
// the terminal showed, stderr included: a reader cannot tell them apart.
func (c CommandResult) Check(r execute.Result) (Evidence, bool) {
	exit := r.Exit
	e := Evidence{Exit: &exit}
	var why []string
	if c.Exit != nil && r.Exit != *c.Exit {
		if r.TimedOut {
			why = append(why, fmt.Sprintf("timed out after %s", r.Duration.Round(1e6)))
		} else {
			why = append(why, fmt.Sprintf("exited %d", r.Exit))
		}
	}
	stdout, stderr := r.Text(execute.Stdout), r.Text(execute.Stderr)
	for _, s := range c.StdoutContains {
		if !strings.Contains(stdout, s) {
			why = append(why, fmt.Sprintf("did not print %q", s))
		}
	}
	for _, s := range c.StdoutAbsent {
		if strings.Contains(stdout, s) {
			why = append(why, fmt.Sprintf("printed %q", s))
		}
	}
	for _, s := range c.StderrContains {
		if !strings.Contains(stderr, s) {
			why = append(why, fmt.Sprintf("did not print %q on stderr", s))
		}
	}
	for _, s := range c.StderrAbsent {
		if strings.Contains(stderr, s) {
			why = append(why, fmt.Sprintf("printed %q on stderr", s))
		}
	}
	e.Why = strings.Join(why, "; ")
	return e, e.Why == ""
}

// ObjectChecks lists the checks an observation asks for, in the order the
// published table shows them: condition, fields, absence.
func ObjectChecks(o scenario.Observation) []ObjectCheck {
	s := subject(o)
	var out []ObjectCheck
	if o.Condition != nil {
		out = append(out, ConditionIs{Subject: s, Condition: *o.Condition, Current: o.Generation == "current"})
	}
	for _, f := range o.Fields {
		out = append(out, FieldIs{Subject: s, Field: f})
	}
	if o.Absent {
		out = append(out, IsAbsent{Subject: s})
	}
	return out
}

// Target is the object an observation reads.
func Target(o scenario.Observation) observe.Target {
	return observe.Target{Kind: o.Kind, Name: o.Name, Namespace: o.Namespace}
}

// AllHold reports whether every check holds on o.
func AllHold(checks []ObjectCheck, o observe.Object) bool {
	for _, c := range checks {
		if _, ok := c.Check(o); !ok {
			return false
		}
	}
	return true
}
