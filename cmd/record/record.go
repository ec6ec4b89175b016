package main

import (
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"os/exec"
	"os/signal"
	"path/filepath"
	"strings"
	"time"

	"ptah.run/operator/recorder/credential"
	"ptah.run/operator/recorder/envnames"
	"ptah.run/operator/recorder/labenv"
	"ptah.run/operator/recorder/normalize"
	"ptah.run/operator/recorder/opsource"
	"ptah.run/operator/recorder/recording"
	"ptah.run/operator/recorder/runs"
	"ptah.run/operator/recorder/scenario"
	"ptah.run/operator/recorder/session"
	"ptah.run/operator/recorder/stability"
)

// record runs the scenarios (or the -only one) against the lab and, when
// every check held and nothing would publish a credential, writes the
// recording.
func record(o options, stdout, stderr io.Writer) int {
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt)
	defer stop()
	code, err := recordAll(ctx, o, stdout, stderr)
	if err != nil {
		fmt.Fprintf(stderr, "record: %v\n", err)
	}
	return code
}

func recordAll(ctx context.Context, o options, stdout, stderr io.Writer) (int, error) {
	all, err := scenario.LoadDir(o.scenarios)
	var refused scenario.Refusals
	if errors.As(err, &refused) {
		return 1, fmt.Errorf("%v\nthe scenarios do not load; `record -check` lists every refusal", err)
	}
	if err != nil {
		return 2, fmt.Errorf("%v; name a folder of scenario files with -scenarios", err)
	}
	if o.only != "" {
		all = only(all, o.only)
		if all == nil {
			return 2, fmt.Errorf("no scenario has id %q in %s", o.only, o.scenarios)
		}
	}

	root, err := repoRoot()
	if err != nil {
		return 1, err
	}
	commit, describe, err := recording.Pin(root, recordingOutputs(root, o.output)...)
	if err != nil {
		return 1, err
	}
	lab, err := labenv.Load(o.environment)
	if err != nil {
		return 1, err
	}
	src, err := boundSource(root, lab)
	if err != nil {
		return 1, err
	}
	var existing *recording.Recording
	if o.only != "" {
		if existing, err = mergeTarget(o.output, lab.Versions); err != nil {
			return 1, err
		}
	}
	runner, err := newRunner(lab, root, stderr)
	if err != nil {
		return 1, err
	}
	// An account that cannot read every Secret is refused before any
	// scenario runs, so no report (a JUnit file included) is written from
	// output scanned with values missing.
	if _, err := runner.Learn(ctx); err != nil {
		return 1, err
	}

	iso := newIsolation(lab, root)
	parallel := o.parallel
	switch {
	case iso == nil && parallel > 1:
		return 2, fmt.Errorf("-parallel %d: %s names no PTAH_LAB_SCENARIOS, so the scenarios cannot have namespaces of their own; rebuild the lab with `make demo-up` or drop -parallel", parallel, lab.File)
	case iso == nil:
		parallel = 1
	case parallel == 0:
		parallel = defaultParallel()
	}
	results := runAll(ctx, runner, iso, all, o.repeat, parallel, root, durations(o.output), stderr)

	// A scenario that fails or flakes stops none of the others (each starts
	// from its own reset, in its own namespace when the lab gives one), so
	// one run reports every failure; but then nothing is published. The
	// results are taken in scenario order, however they ran.
	var recorded []recording.Scenario
	var reports []ran
	var unpublished []string
	var scenarioCreds []credential.Credential
	held := 0
	for i, s := range all {
		res := results[i]
		if res.creds != nil {
			scenarioCreds = append(scenarioCreds, res.creds.Credentials()...)
		}
		rec, failed, flakes, err := res.rec, res.failed, res.flakes, res.err
		if err != nil {
			// Printed, not published: what holds a credential is taken out.
			text, n := res.scanner.Redact(err.Error())
			if n > 0 {
				text += " (a credential was redacted from this message)"
			}
			return 1, fmt.Errorf("scenario %s: %s", s.ID, text)
		}
		if failed != nil {
			reports = append(reports, ranFailed(failed))
			unpublished = append(unpublished, s.ID)
		}
		switch {
		case len(flakes) > 0:
			for _, f := range flakes {
				fmt.Fprintln(stderr, f.String())
			}
			fmt.Fprintf(stderr, "scenario %s: %d %s held in some of %d runs and not in others (make the step wait for what it claims)\n",
				s.ID, len(flakes), plural(len(flakes), "claim"), o.repeat)
			continue
		case failed != nil:
			fmt.Fprintln(stderr, failed.Error())
			continue
		}
		recorded = append(recorded, rec)
		reports = append(reports, ranOf(rec))
		held += len(rec.Checks)
	}
	if len(unpublished) > 0 {
		writeJUnit(o.junit, union(runner, scenarioCreds), reports, stderr)
		fmt.Fprintf(stderr, "record: %d of %d %s failed or flaked (%s); nothing was written\n",
			len(unpublished), len(all), plural(len(all), "scenario"), strings.Join(unpublished, ", "))
		return 1, nil
	}

	out := existing
	if out == nil {
		out = &recording.Recording{Lab: lab.Versions}
	}
	out.RecordedAt = time.Now().UTC().Format(time.RFC3339)
	out.ScenariosCommit, out.ScenariosDescribe = commit, describe
	out.OperatorFiles = src.Files
	out.Environment = nil
	for _, n := range envnames.Published() {
		out.Environment = append(out.Environment, recording.Name{Name: n.Name, Meaning: n.Meaning})
	}
	for _, r := range recorded {
		out.Merge(r)
	}
	// The Secrets are read once more as the recording is published, so a
	// value created by the last step is known too.
	// Each scenario's own Secrets (read while it ran; its namespace is gone
	// now) are credentials too.
	if _, err := runner.Learn(ctx); err != nil {
		return 1, err
	}
	scanner := union(runner, scenarioCreds)
	if err := recording.Publish(o.output, out, scanner); err != nil {
		return 1, err
	}
	writeJUnit(o.junit, scanner, reports, stderr)
	fmt.Fprintf(stdout, "recorded %d %s, %d checks held, into %s (scenarios at %s)\n",
		len(recorded), plural(len(recorded), "scenario"), held, o.output, describe)
	return 0, nil
}

// boundSource reads the operator source of the tree and refuses a lab whose
// images were built from another: a recording names the operator it
// demonstrates, and that must be the one that ran.
func boundSource(root string, lab *labenv.Lab) (opsource.Source, error) {
	src, err := opsource.Read(root)
	if err != nil {
		return src, err
	}
	switch lab.Versions.OperatorSource {
	case src.Digest:
		return src, nil
	case "":
		return src, fmt.Errorf("refused: %s names no operator source (PTAH_LAB_OPERATOR_SOURCE), so its images may be from any tree; rebuild them from this one with `make demo-up`", lab.File)
	default:
		return src, fmt.Errorf("refused: the lab's operator images were built from operator source %s, this tree's is %s (%s changed since `make images`); rebuild and reinstall them with `make demo-up`",
			lab.Versions.OperatorSource, src.Digest, strings.Join(opsource.Paths, ", "))
	}
}

// repeat runs s n times (every run, even after one failed, so a flake is
// told from a failure) and combines them: published only when every claim
// held in every run. failed is the first failed run; flakes the claims that
// held in some runs and not in others.
func repeat(ctx context.Context, runner *session.Runner, s scenario.Scenario, n int, stderr io.Writer) (recording.Scenario, *session.Failure, []stability.Flake, error) {
	var first recording.Scenario
	var firstFailure *session.Failure
	var all []stability.Run
	for i := 1; i <= n; i++ {
		if n > 1 {
			fmt.Fprintf(stderr, "%s: run %d of %d\n", s.ID, i, n)
		}
		rec, err := runner.Run(ctx, s)
		var failed *session.Failure
		switch {
		case errors.As(err, &failed) && failed.Err == nil:
			all = append(all, stability.Run{Checks: failed.Checks, Events: failed.Events, Failed: true})
			if firstFailure == nil {
				firstFailure = failed
			}
		case errors.As(err, &failed):
			return rec, failed, nil, nil
		case err != nil:
			return rec, nil, nil, err
		default:
			all = append(all, stability.Run{Checks: rec.Checks, Events: rec.Events})
			if first.ID == "" {
				first = rec
			}
		}
	}
	if flakes := stability.Flakes(s.ID, all); len(flakes) > 0 {
		return first, firstFailure, flakes, nil
	}
	if firstFailure != nil {
		return first, firstFailure, nil, nil
	}
	if n == 1 {
		return first, nil, nil, nil
	}
	awaits := map[int]bool{}
	for i, st := range s.Steps {
		awaits[i+1] = st.Await != nil
	}
	return stability.Combine(first, all, awaits), nil, nil, nil
}

func only(all []scenario.Scenario, id string) []scenario.Scenario {
	for _, s := range all {
		if s.ID == id {
			return []scenario.Scenario{s}
		}
	}
	return nil
}

// mergeTarget reads the recording -only merges into; a recording made
// against another lab cannot take a scenario from this one.
func mergeTarget(file string, lab labenv.Versions) (*recording.Recording, error) {
	if _, err := os.Stat(file); errors.Is(err, os.ErrNotExist) {
		return nil, nil
	}
	r, err := runs.Read(file)
	if err != nil {
		return nil, err
	}
	if r.Lab != lab {
		return nil, fmt.Errorf("refused: %s was recorded against another lab (%+v, this lab is %+v); re-record every scenario (without -only) or use that lab", file, r.Lab, lab)
	}
	return r, nil
}

// newRunner connects to the cluster the lab names and builds the command
// environment from the published names alone.
func newRunner(lab *labenv.Lab, root string, stderr io.Writer) (*session.Runner, error) {
	r, err := session.New(root, func(name string) (string, bool) {
		if envnames.IsPublished(name) {
			return lab.Lookup(name)
		}
		// The lab's tools (kubectl matching the cluster, kubectl-ptah) come
		// first, as for a reader who installed them.
		if bin, ok := lab.Lookup("PTAH_LAB_BIN"); ok && bin != "" && name == "PATH" {
			return bin + string(os.PathListSeparator) + os.Getenv("PATH"), true
		}
		return os.LookupEnv(name)
	}, stderr)
	if err != nil {
		return nil, fmt.Errorf("%s: %w", lab.File, err)
	}
	r.Normalizer = normalize.Normalizer{RunID: lab.RunID}
	var names []string
	for _, n := range envnames.Published() {
		names = append(names, n.Name)
	}
	if r.Credentials, err = lab.Credentials(lab.Public(names)); err != nil {
		return nil, err
	}
	r.LearnSecrets = true
	r.Placeholders = lab.Placeholders
	r.Lab = lab
	return r, nil
}

func repoRoot() (string, error) {
	out, err := exec.Command("git", "rev-parse", "--show-toplevel").Output()
	if err != nil {
		return "", fmt.Errorf("find the repository root (run record inside the checkout): %w", err)
	}
	return strings.TrimSpace(string(out)), nil
}

func relative(root, file string) string {
	abs, err := filepath.Abs(file)
	if err != nil {
		return file
	}
	if rel, err := filepath.Rel(root, abs); err == nil && !strings.HasPrefix(rel, "..") {
		return filepath.ToSlash(rel)
	}
	return file
}

// recordingOutputs are the files a recording into output writes (runs.json
// and the casts beside it), relative to the repository root when inside it.
func recordingOutputs(root, output string) []string {
	abs, err := filepath.Abs(filepath.Dir(output))
	if err != nil {
		return nil
	}
	rel, err := filepath.Rel(root, abs)
	if err != nil || strings.HasPrefix(rel, "..") {
		return nil
	}
	return []string{filepath.Join(rel, filepath.Base(output)), filepath.Join(rel, "*.cast")}
}
