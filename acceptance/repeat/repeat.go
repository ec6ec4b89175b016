// Package repeat repeats a published scenario the way a reader would: its
// steps rewritten to read the lab's hand-overs from files, run from a
// directory without the lab or the recorder, their claims checked on the live
// objects and their transcript compared with the recording. The preparation
// runs as the lab; the repetition needs only what a reader has.
package repeat

import (
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"sort"
	"strings"

	"ptah.run/operator/recorder/envnames"
	"ptah.run/operator/recorder/labenv"
	"ptah.run/operator/recorder/normalize"
	"ptah.run/operator/recorder/recording"
	"ptah.run/operator/recorder/runs"
	"ptah.run/operator/recorder/scenario"
	"ptah.run/operator/recorder/session"
)

// Options name what a repetition reads.
type Options struct {
	// ID is the scenario to repeat.
	ID string
	// Scenarios is the folder of scenario files.
	Scenarios string
	// Recording is the published runs.json.
	Recording string
	// Environment is the lab's environment file: the preparation runs as the
	// lab; the repetition reads only the run id and the credentials to withhold.
	Environment string
}

// Published is a scenario as recorded, and its definition rewritten for a
// directory without the lab.
type Published struct {
	Recorded recording.Scenario
	Plan     Plan
}

// Load finds the published scenario and its definition, refuses one that
// changed since it was recorded, and rewrites its steps for repetition.
func Load(o Options) (Published, error) {
	all, err := scenario.LoadDir(o.Scenarios)
	if err != nil {
		return Published{}, fmt.Errorf("%w; `go run ./cmd/record -check` says more", err)
	}
	var def *scenario.Scenario
	var ids []string
	for i := range all {
		ids = append(ids, all[i].ID)
		if all[i].ID == o.ID {
			def = &all[i]
		}
	}
	if def == nil {
		return Published{}, fmt.Errorf("no scenario %q in %s: choose one of %s", o.ID, o.Scenarios, strings.Join(ids, ", "))
	}
	rec, err := runs.Read(o.Recording)
	if err != nil {
		return Published{}, fmt.Errorf("%w; only a published scenario can be repeated", err)
	}
	var pub *recording.Scenario
	for i := range rec.Scenarios {
		if rec.Scenarios[i].ID == o.ID {
			pub = &rec.Scenarios[i]
		}
	}
	if pub == nil {
		return Published{}, fmt.Errorf("scenario %s is not in %s, so there is nothing to compare with: record it first (go run ./cmd/record -only %s)", o.ID, o.Recording, o.ID)
	}
	if d := recording.DefinitionDigest(*def); d != pub.DefinitionDigest {
		return Published{}, fmt.Errorf("%s changed since it was recorded (definition %s, published %s): record it again, or check out the commit it was recorded at (%s)",
			def.File, d, pub.DefinitionDigest, rec.ScenariosDescribe)
	}
	plan, err := planFor(*def)
	if err != nil {
		return Published{}, err
	}
	return Published{Recorded: *pub, Plan: plan}, nil
}

// Prepare runs, as the lab, what the reader's directory will not have: the
// scenario's reset, then each hand-over call exactly as the step writes it,
// its output kept in dir under the name the rewritten step reads.
func Prepare(ctx context.Context, o Options, pub Published, dir string, stdout, stderr io.Writer) error {
	p := pub.Plan
	lab, err := labenv.Load(o.Environment)
	if err != nil {
		return err
	}
	if err := os.MkdirAll(dir, 0o700); err != nil {
		return fmt.Errorf("create the reproduction folder: %w", err)
	}
	env := envnames.Environ(func(name string) (string, bool) {
		if envnames.IsPublished(name) {
			return lab.Lookup(name)
		}
		return os.LookupEnv(name)
	})
	sh := func(cmd string, out io.Writer) error {
		c := exec.CommandContext(ctx, "sh", "-c", cmd)
		c.Env, c.Stdout, c.Stderr = env, out, stderr
		return c.Run()
	}
	for i, cmd := range p.Reset {
		fmt.Fprintf(stdout, "reset %d/%d: %s\n", i+1, len(p.Reset), cmd)
		if err := sh(cmd, stderr); err != nil {
			return fmt.Errorf("reset command %d (%s) failed: %w; is the lab up (make demo-up)?", i+1, cmd, err)
		}
	}
	for _, h := range p.HandOvers {
		var out strings.Builder
		if err := sh(h.Call, &out); err != nil {
			return fmt.Errorf("step %d: the hand-over `%s` failed: %w", h.Step, h.Call, err)
		}
		file := filepath.Join(dir, h.File)
		if err := os.WriteFile(file, []byte(out.String()), 0o600); err != nil {
			return fmt.Errorf("step %d: keep the hand-over: %w", h.Step, err)
		}
		fmt.Fprintf(stdout, "step %d hands over %s: %s\n", h.Step, h.File, h.Call)
	}
	return nil
}

// Run runs the rewritten steps in dir with environ (the process's own),
// checks every claim on the live objects, and prints the claims and a diff
// of the transcript against the published one. It fails when a claim did not
// hold or dir and environ are not what a reader would have.
func Run(ctx context.Context, o Options, published Published, dir string, environ []string, stdout io.Writer, stderr io.Writer) error {
	pub, p := published.Recorded, published.Plan
	if err := cleanRoom(dir, p, environ); err != nil {
		return err
	}
	lookup := func(name string) (string, bool) {
		for _, kv := range environ {
			if k, v, ok := strings.Cut(kv, "="); ok && k == name {
				return v, true
			}
		}
		return "", false
	}
	runner, err := session.New(dir, lookup, stderr)
	if err != nil {
		return fmt.Errorf("%v: it names the cluster, and the account, the commands run as", err)
	}
	// The lab's file only names the run id to normalize and the credentials
	// to withhold; no command reads it.
	if lab, err := labenv.Load(o.Environment); err == nil {
		runner.Normalizer = normalize.Normalizer{RunID: lab.RunID}
		var names []string
		for _, n := range envnames.Published() {
			names = append(names, n.Name)
		}
		if runner.Credentials, err = lab.Credentials(lab.Public(names)); err != nil {
			return err
		}
	}
	got, err := runner.Run(ctx, p.Scenario)
	var failed *session.Failure
	if errors.As(err, &failed) {
		fmt.Fprint(stdout, table(pub.Checks, failed.Checks))
		return fmt.Errorf("%s\nthe repetition did not hold", failed.Error())
	}
	if err != nil {
		return err
	}
	fmt.Fprint(stdout, table(pub.Checks, got.Checks))
	text := transcript(got.Events)
	if err := recording.ScanText(runner.Scanner(), "the reproduced transcript of "+p.Scenario.ID, text); err != nil {
		return err
	}
	diff, differ, volatileOnly := unifiedLines(transcript(handedOver(pub.Events, p)), text)
	fmt.Fprintf(stdout, "\n--- published (%s, recorded %s)\n+++ reproduced (%s)\n~~~ reproduced, differing only in generated names, digests and ages\n", o.Recording, pub.RecordedAt, dir)
	for _, h := range p.HandOvers {
		fmt.Fprintf(stdout, "(step %d: the published %s is compared as the file the lab handed over, %s)\n", h.Step, h.Call, h.File)
	}
	fmt.Fprint(stdout, diff)
	switch {
	case differ:
		fmt.Fprintf(stdout, "(the transcripts differ: see the - and + lines; %d more differ only in generated names, digests and ages)\n", volatileOnly)
	case volatileOnly > 0:
		fmt.Fprintf(stdout, "(the transcripts are the same but for %d lines that differ only in generated names, digests and ages)\n", volatileOnly)
	default:
		fmt.Fprintln(stdout, "(the transcripts are the same)")
	}
	fmt.Fprintf(stdout, "\n%d claims held; the recording published %d\n", len(got.Checks), len(pub.Checks))
	return nil
}

// handedOver is the published session with each step that calls the lab
// written as the repetition runs it, reading the hand-over's file instead:
// the one change a repetition makes, so it is not reported as a difference.
func handedOver(events []recording.Event, p Plan) []recording.Event {
	steps := map[int]bool{}
	for _, h := range p.HandOvers {
		steps[h.Step] = true
	}
	out := append([]recording.Event(nil), events...)
	for i, e := range out {
		if steps[e.Step] && e.Step >= 1 && e.Step <= len(p.Scenario.Steps) {
			out[i].Command = p.Scenario.Steps[e.Step-1].Run
		}
	}
	return out
}

// cleanRoom refuses a directory that holds the lab or the recorder, an
// environment with a name a reader would not have, and a missing hand-over.
func cleanRoom(dir string, p Plan, environ []string) error {
	for _, f := range []string{labCommand, "go.mod", "recorder", "cmd/record"} {
		if _, err := os.Stat(filepath.Join(dir, f)); err == nil {
			return fmt.Errorf("%s holds %s: repeat from a directory that holds neither the lab nor the recorder (acceptance/reproduce.sh makes one)", dir, f)
		}
	}
	var extra []string
	for _, kv := range environ {
		name, _, _ := strings.Cut(kv, "=")
		if !envnames.IsPublished(name) && !inBase(name) && !shellSets[name] {
			extra = append(extra, name)
		}
	}
	if len(extra) > 0 {
		sort.Strings(extra)
		return fmt.Errorf("the environment holds %s, which no published name is: run under env -i with only %s (acceptance/reproduce.sh does)",
			strings.Join(extra, ", "), envnames.List())
	}
	for _, h := range p.HandOvers {
		if _, err := os.Stat(filepath.Join(dir, h.File)); err != nil {
			return fmt.Errorf("step %d reads the hand-over %s, which %s does not hold: prepare it first (reproduce -prepare %s %s)", h.Step, h.File, dir, dir, p.Scenario.ID)
		}
	}
	return nil
}

// shellSets are the names a shell exports by itself; every step's sh sets
// them too, so they say nothing about the reader's environment.
var shellSets = map[string]bool{"PWD": true, "OLDPWD": true, "SHLVL": true, "_": true}

func inBase(name string) bool {
	for _, b := range envnames.Base() {
		if b.Name == name {
			return true
		}
	}
	return false
}
