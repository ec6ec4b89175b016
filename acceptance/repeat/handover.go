package repeat

import (
	"fmt"
	"path"
	"sort"
	"strings"

	"mvdan.cc/sh/v3/syntax"

	"ptah.run/operator/recorder/scenario"
)

// labCommand is how a published step calls the lab.
const labCommand = "demo/bin/lab"

// handOvers are the lab verbs whose output is the lab handing over what it
// generated (seed 002, "What the commands read"), each with the file its
// output is kept in. Any other verb does the demonstration's work and cannot
// be repeated without the lab.
var handOvers = map[string]string{
	"manifest":    "manifest.yaml",
	"credentials": "credentials",
}

// HandOver is one call of the lab inside a step: the text that calls it, as
// published, and the file in the reproduction directory that holds what it
// printed.
type HandOver struct {
	Step int
	// Call is the call's text exactly as the step writes it, assignments
	// included ("APPLY=Always demo/bin/lab manifest storefront ...").
	Call string
	File string

	start, end uint
}

// Rewritten is a step whose lab calls read the prepared files instead.
type Rewritten struct {
	Run       string
	HandOvers []HandOver
}

// rewrite finds the lab's hand-overs in a step's run and replaces each call
// with `cat FILE`, keeping every other byte of the command as published. It
// refuses a step that calls another lab verb or reads the lab's files
// outside a hand-over: that step needs the lab, not only what it handed over.
func rewrite(stepNo int, run string) (Rewritten, error) {
	f, err := syntax.NewParser(syntax.Variant(syntax.LangPOSIX)).Parse(strings.NewReader(run), "")
	if err != nil {
		return Rewritten{}, fmt.Errorf("step %d: the command does not parse as POSIX sh: %w", stepNo, err)
	}
	var calls []HandOver
	var problems []string
	count := map[string]int{}
	syntax.Walk(f, func(n syntax.Node) bool {
		call, ok := n.(*syntax.CallExpr)
		if !ok || len(call.Args) == 0 || !isLab(call.Args[0].Lit()) {
			return true
		}
		verb := ""
		if len(call.Args) > 1 {
			verb = call.Args[1].Lit()
		}
		file, ok := handOvers[verb]
		if !ok {
			problems = append(problems, fmt.Sprintf("it runs `%s %s`, which is the lab doing the demonstration's work, not a hand-over (only %s are)", labCommand, verb, handOverList()))
			return false
		}
		count[verb]++
		if count[verb] > 1 {
			ext := path.Ext(file)
			file = fmt.Sprintf("%s-%d%s", strings.TrimSuffix(file, ext), count[verb], ext)
		}
		start, end := call.Pos().Offset(), call.End().Offset()
		calls = append(calls, HandOver{Step: stepNo, Call: run[start:end], File: fmt.Sprintf("step%d-%s", stepNo, file), start: start, end: end})
		return false // the call's own arguments are evaluated when it is prepared
	})
	out := run
	sort.Slice(calls, func(i, j int) bool { return calls[i].start > calls[j].start })
	for _, c := range calls {
		out = out[:c.start] + "cat " + c.File + out[c.end:]
	}
	sort.Slice(calls, func(i, j int) bool { return calls[i].start < calls[j].start })
	if strings.Contains(out, "demo/") {
		problems = append(problems, "it reads the lab's files (demo/...) outside a hand-over; only the arguments of a hand-over may")
	}
	if len(problems) > 0 {
		return Rewritten{}, fmt.Errorf("step %d cannot be repeated without the lab: %s", stepNo, strings.Join(problems, "; "))
	}
	return Rewritten{Run: out, HandOvers: calls}, nil
}

func isLab(word string) bool {
	return strings.TrimPrefix(word, "./") == labCommand
}

func handOverList() string {
	var verbs []string
	for v := range handOvers {
		verbs = append(verbs, "`lab "+v+"`")
	}
	sort.Strings(verbs)
	return strings.Join(verbs, " and ")
}

// Plan is a scenario prepared for repetition: its steps with their lab calls
// rewritten, and every hand-over in step order.
type Plan struct {
	Scenario scenario.Scenario
	// Reset is the scenario's reset, which only the lab can run.
	Reset     []string
	HandOvers []HandOver
}

// planFor rewrites every step of s; the reset commands are the lab's and
// are left to the preparation, which runs them before anything else.
func planFor(s scenario.Scenario) (Plan, error) {
	p := Plan{Scenario: s, Reset: s.Reset}
	p.Scenario.Reset = nil
	p.Scenario.Steps = make([]scenario.Step, len(s.Steps))
	var problems []string
	for i, st := range s.Steps {
		r, err := rewrite(i+1, st.Run)
		if err != nil {
			problems = append(problems, err.Error())
			continue
		}
		st.Run = r.Run
		p.Scenario.Steps[i] = st
		p.HandOvers = append(p.HandOvers, r.HandOvers...)
	}
	if len(problems) > 0 {
		return Plan{}, fmt.Errorf("scenario %s: %s", s.ID, strings.Join(problems, "\n  "))
	}
	return p, nil
}
