// Command reproduce repeats a published scenario the way a reader would: from
// a directory without the lab or the recorder, with only the published
// environment names, and compares what it printed with the recording. It is
// the Go half of acceptance/reproduce.sh, which creates the account and the
// directory and runs it twice: -prepare as the lab, then in the directory.
package main

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"io"
	"os"
	"os/exec"
	"os/signal"
	"path/filepath"
	"sort"
	"strings"

	"k8s.io/client-go/tools/clientcmd"

	"ptah.run/operator/recorder/envnames"
	"ptah.run/operator/recorder/execute"
	"ptah.run/operator/recorder/labenv"
	"ptah.run/operator/recorder/normalize"
	"ptah.run/operator/recorder/observe"
	"ptah.run/operator/recorder/recording"
	"ptah.run/operator/recorder/scenario"
	"ptah.run/operator/recorder/session"
)

// defaultScenario is the one seed 002 publishes.
const defaultScenario = "failure-recovery"

type options struct {
	id          string
	scenarios   string
	recording   string
	environment string
	prepare     string
}

func main() {
	os.Exit(run(os.Args[1:], os.Stdout, os.Stderr))
}

// run returns the exit code: 0 every claim held, 1 a claim did not hold or
// a refusal, 2 a usage error.
func run(args []string, stdout, stderr io.Writer) int {
	o, err := parseFlags(args, stderr)
	if err != nil {
		return 2
	}
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt)
	defer stop()
	pub, plan, err := load(o)
	if err == nil {
		if o.prepare != "" {
			err = prepare(ctx, o, pub, plan, stdout, stderr)
		} else {
			var dir string
			if dir, err = os.Getwd(); err == nil {
				err = repeat(ctx, o, pub, plan, dir, os.Environ(), stdout, stderr)
			}
		}
	}
	if err != nil {
		fmt.Fprintf(stderr, "reproduce: %v\n", err)
		return 1
	}
	return 0
}

func parseFlags(args []string, stderr io.Writer) (options, error) {
	var o options
	fs := flag.NewFlagSet("reproduce", flag.ContinueOnError)
	fs.SetOutput(stderr)
	fs.StringVar(&o.scenarios, "scenarios", "scenarios", "folder of scenario files")
	fs.StringVar(&o.recording, "recording", "demo/recordings/runs.json", "the published recording to compare with")
	fs.StringVar(&o.environment, "environment", "demo/.lab/environment", "the lab's environment file (run id and credential files)")
	fs.StringVar(&o.prepare, "prepare", "", "as the lab: run the scenario's reset and write its hand-overs into this folder, then stop")
	fs.Usage = func() {
		fmt.Fprintln(stderr, "usage: reproduce [-scenarios DIR] [-recording FILE] [-environment FILE] [-prepare DIR] [ID]")
		fs.PrintDefaults()
	}
	if err := fs.Parse(args); err != nil {
		return o, err
	}
	switch fs.NArg() {
	case 0:
		o.id = defaultScenario
	case 1:
		o.id = fs.Arg(0)
	default:
		fmt.Fprintf(stderr, "reproduce: one scenario at a time; got %s\n", strings.Join(fs.Args(), " "))
		return o, errors.New("usage")
	}
	return o, nil
}

// load finds the published scenario and its definition, refuses one that
// changed since it was recorded, and rewrites its steps for repetition.
func load(o options) (recording.Scenario, Plan, error) {
	all, err := scenario.LoadDir(o.scenarios)
	if err != nil {
		return recording.Scenario{}, Plan{}, fmt.Errorf("%w; `go run ./cmd/record -check` says more", err)
	}
	var def *scenario.Scenario
	var ids []string
	for i := range all {
		ids = append(ids, all[i].ID)
		if all[i].ID == o.id {
			def = &all[i]
		}
	}
	if def == nil {
		return recording.Scenario{}, Plan{}, fmt.Errorf("no scenario %q in %s: choose one of %s", o.id, o.scenarios, strings.Join(ids, ", "))
	}
	rec, err := recording.Read(o.recording)
	if err != nil {
		return recording.Scenario{}, Plan{}, fmt.Errorf("%w; only a published scenario can be repeated", err)
	}
	var pub *recording.Scenario
	for i := range rec.Scenarios {
		if rec.Scenarios[i].ID == o.id {
			pub = &rec.Scenarios[i]
		}
	}
	if pub == nil {
		return recording.Scenario{}, Plan{}, fmt.Errorf("scenario %s is not in %s, so there is nothing to compare with: record it first (go run ./cmd/record -only %s)", o.id, o.recording, o.id)
	}
	if d := recording.DefinitionDigest(*def); d != pub.DefinitionDigest {
		return recording.Scenario{}, Plan{}, fmt.Errorf("%s changed since it was recorded (definition %s, published %s): record it again, or check out the commit it was recorded at (%s)",
			def.File, d, pub.DefinitionDigest, rec.ScenariosDescribe)
	}
	plan, err := planFor(*def)
	if err != nil {
		return recording.Scenario{}, Plan{}, err
	}
	return *pub, plan, nil
}

// prepare runs, as the lab, what the reader's directory will not have: the
// scenario's reset, then each hand-over call exactly as the step writes it,
// its output kept in the folder under the name the rewritten step reads.
func prepare(ctx context.Context, o options, _ recording.Scenario, p Plan, stdout, stderr io.Writer) error {
	lab, err := labenv.Load(o.environment)
	if err != nil {
		return err
	}
	if err := os.MkdirAll(o.prepare, 0o700); err != nil {
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
		file := filepath.Join(o.prepare, h.File)
		if err := os.WriteFile(file, []byte(out.String()), 0o600); err != nil {
			return fmt.Errorf("step %d: keep the hand-over: %w", h.Step, err)
		}
		fmt.Fprintf(stdout, "step %d hands over %s: %s\n", h.Step, h.File, h.Call)
	}
	return nil
}

// repeat runs the rewritten steps in dir with environ (the process's own),
// checks every claim on the live objects, and prints the claims and a diff
// of the transcript against the published one.
func repeat(ctx context.Context, o options, pub recording.Scenario, p Plan, dir string, environ []string, stdout, stderr io.Writer) error {
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
	kubeconfig, _ := lookup("KUBECONFIG")
	if kubeconfig == "" {
		return errors.New("KUBECONFIG is not set: it names the cluster, and the account, the commands run as")
	}
	cfg, err := clientcmd.BuildConfigFromFlags("", kubeconfig)
	if err != nil {
		return fmt.Errorf("read KUBECONFIG %s: %w", kubeconfig, err)
	}
	namespace, _ := lookup("NAMESPACE")
	obs, err := observe.New(cfg, namespace)
	if err != nil {
		return err
	}
	runner := &session.Runner{
		Shell:    execute.Shell{Dir: dir, Env: envnames.Environ(lookup), Timeout: session.DefaultCommand},
		Observer: obs,
		Config:   cfg,
		Progress: stderr,
	}
	// The lab's file only names the run id to normalize and the credentials
	// to withhold; no command reads it.
	if lab, err := labenv.Load(o.environment); err == nil {
		runner.Normalizer = normalize.Normalizer{RunID: lab.RunID}
		runner.Secrets = lab.Secrets
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
	if err := recording.ScanText(runner.Secrets, "the reproduced transcript of "+p.Scenario.ID, text); err != nil {
		return err
	}
	diff, differ := unifiedLines(transcript(pub.Events), text)
	fmt.Fprintf(stdout, "\n--- published (%s, recorded %s)\n+++ reproduced (%s)\n%s", o.recording, pub.RecordedAt, dir, diff)
	if !differ {
		fmt.Fprintln(stdout, "(the transcripts are the same)")
	}
	fmt.Fprintf(stdout, "\n%d claims held; the recording published %d\n", len(got.Checks), len(pub.Checks))
	return nil
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
