package main

import (
	"errors"
	"fmt"
	"io"
	"os"

	"ptah.run/operator/recorder/recording"
	"ptah.run/operator/recorder/runs"
	"ptah.run/operator/recorder/scenario"
)

// verify checks, without a cluster, that the committed recording still
// matches the scenario definitions: it follows the schema, every scenario is
// recorded with the definition digest it has now, every recorded check held,
// and nothing recorded lacks a definition.
func verify(o options, stdout, stderr io.Writer) int {
	all, err := scenario.LoadDir(o.scenarios)
	var refused scenario.Refusals
	switch {
	case errors.As(err, &refused):
		fmt.Fprintf(stderr, "record: %v\nthe scenarios do not load; `record -check` lists every refusal\n", err)
		return 1
	case err != nil:
		fmt.Fprintf(stderr, "record: %v; name a folder of scenario files with -scenarios\n", err)
		return 2
	}
	raw, err := os.ReadFile(o.output)
	if err != nil {
		fmt.Fprintf(stderr, "record: read the recording: %v; record one first (make demo)\n", err)
		return 1
	}
	if err := runs.Validate(raw); err != nil {
		fmt.Fprintf(stderr, "record: %s: %v\n", o.output, err)
		return 1
	}
	rec, err := runs.Read(o.output)
	if err != nil {
		fmt.Fprintf(stderr, "record: %v\n", err)
		return 1
	}
	problems := mismatches(all, rec)
	for _, p := range problems {
		fmt.Fprintf(stderr, "record: %s: %s\n", o.output, p)
	}
	if len(problems) > 0 {
		fmt.Fprintf(stderr, "record: %d %s; re-record with `record -only ID` (or without -only for all)\n", len(problems), plural(len(problems), "mismatch"))
		return 1
	}
	fmt.Fprintf(stdout, "%d %s: the recording matches the definitions\n", len(all), plural(len(all), "scenario"))
	return 0
}

func mismatches(all []scenario.Scenario, rec *recording.Recording) []string {
	var out []string
	recorded := map[string]recording.Scenario{}
	for _, s := range rec.Scenarios {
		recorded[s.ID] = s
	}
	defined := map[string]bool{}
	for _, s := range all {
		defined[s.ID] = true
		r, ok := recorded[s.ID]
		if !ok {
			out = append(out, fmt.Sprintf("scenario %s is not recorded", s.ID))
			continue
		}
		if d := recording.DefinitionDigest(s); d != r.DefinitionDigest {
			out = append(out, fmt.Sprintf("scenario %s changed since it was recorded (definition %s, recorded %s)", s.ID, d, r.DefinitionDigest))
		}
		for _, c := range r.Checks {
			if !c.Held {
				out = append(out, fmt.Sprintf("scenario %s step %d: recorded check %q did not hold", s.ID, c.Step, c.Claim))
			}
		}
	}
	for _, r := range rec.Scenarios {
		if !defined[r.ID] {
			out = append(out, fmt.Sprintf("scenario %s is recorded but has no definition", r.ID))
		}
	}
	return out
}
