package main

import (
	"errors"
	"fmt"
	"io"
	"os"
	"strings"

	"ptah.run/operator/recorder/opsource"
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
	stale, err := staleOperator(rec)
	if err != nil {
		fmt.Fprintf(stderr, "record: %v\n", err)
		return 1
	}
	for _, p := range append(problems, stale...) {
		fmt.Fprintf(stderr, "record: %s: %s\n", o.output, p)
	}
	if len(stale) > 0 {
		fmt.Fprintln(stderr, "record: the recording demonstrates another operator than this tree's; re-record the whole census on a lab built from this tree: commit, `make demo-up`, then `go run ./cmd/record` (-only cannot mix operator sources), and commit demo/recordings")
	}
	if len(problems) > 0 {
		fmt.Fprintf(stderr, "record: %d %s; re-record with `record -only ID` (or without -only for all)\n", len(problems), plural(len(problems), "mismatch"))
	}
	if len(problems)+len(stale) > 0 {
		return 1
	}
	fmt.Fprintf(stdout, "%d %s: the recording matches the definitions and the operator source (%s)\n", len(all), plural(len(all), "scenario"), rec.Lab.OperatorSource)
	return 0
}

// maxNamed is how many changed files verify names before counting the rest.
const maxNamed = 20

// staleOperator compares the operator source the recording names with the
// tree's, file by file, as it is on disk (an edit not yet committed counts).
func staleOperator(rec *runs.Recording) ([]string, error) {
	root, err := repoRoot()
	if err != nil {
		return nil, err
	}
	now, err := opsource.Read(root)
	if err != nil {
		return nil, err
	}
	switch {
	case rec.Lab.OperatorSource == "" || len(rec.OperatorFiles) == 0:
		return []string{"the recording names no operator source (lab.operatorSource, operatorFiles)"}, nil
	case opsource.Digest(rec.OperatorFiles) != rec.Lab.OperatorSource:
		return []string{fmt.Sprintf("operatorFiles do not add up to lab.operatorSource %s (the file was edited by hand)", rec.Lab.OperatorSource)}, nil
	case now.Digest == rec.Lab.OperatorSource:
		return nil, nil
	}
	changes := opsource.Changes(rec.OperatorFiles, now.Files)
	named := changes
	if len(named) > maxNamed {
		named = append(named[:maxNamed:maxNamed], fmt.Sprintf("and %d more", len(changes)-maxNamed))
	}
	return []string{fmt.Sprintf("the operator source changed since it was recorded (recorded %s at commit %s, this tree %s): %s",
		rec.Lab.OperatorSource, rec.Lab.OperatorCommit, now.Digest, strings.Join(named, ", "))}, nil
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
