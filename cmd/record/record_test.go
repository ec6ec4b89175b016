package main

import (
	"bytes"
	"encoding/xml"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"

	"ptah.run/operator/internal/testenv"
	"ptah.run/operator/recorder/opsource"
	"ptah.run/operator/recorder/runs"
)

const scenarioYAML = `id: config-demo
title: A config map
tagline: Create one and read it back.
learn: What the recorder checks.
tags: [Test]
reset:
  - kubectl -n "$NAMESPACE" delete configmap demo-k7q2x9 --ignore-not-found
steps:
  - note: Create it.
    run: kubectl -n "$NAMESPACE" create configmap demo-k7q2x9 --from-literal=colour=blue
    expect:
      exit: 0
      stdout_contains: [created]
      resource:
        kind: cm
        name: demo-k7q2x9
        fields:
          - path: data.colour
            equals: blue
  - note: Read it back.
    run: kubectl -n "$NAMESPACE" get configmap demo-k7q2x9 -o jsonpath='{.data.colour}{"\n"}'
    expect:
      exit: 0
      stdout_contains: [blue]
      stdout_absent: ["nobody:nobody"]
`

const operatorGo = "package controller\n\nfunc Reconcile() int {\n\treturn 1\n}\n"

type repo struct {
	t   *testing.T
	dir string
}

func (r repo) git(args ...string) {
	r.t.Helper()
	cmd := exec.Command("git", args...)
	cmd.Dir = r.dir
	cmd.Env = append(os.Environ(), "GIT_AUTHOR_NAME=t", "GIT_AUTHOR_EMAIL=t@t", "GIT_COMMITTER_NAME=t", "GIT_COMMITTER_EMAIL=t@t")
	if out, err := cmd.CombinedOutput(); err != nil {
		r.t.Fatalf("git %v: %v\n%s", args, err, out)
	}
}

func (r repo) write(name, body string) {
	r.t.Helper()
	p := filepath.Join(r.dir, name)
	if err := os.MkdirAll(filepath.Dir(p), 0o755); err != nil {
		r.t.Fatal(err)
	}
	if err := os.WriteFile(p, []byte(body), 0o644); err != nil {
		r.t.Fatal(err)
	}
}

func runRecord(t *testing.T, args ...string) (int, string, string) {
	var stdout, stderr bytes.Buffer
	code := run(args, &stdout, &stderr)
	return code, stdout.String(), stderr.String()
}

func TestRecordVerifyOnly(t *testing.T) {
	api := testenv.StartAPIServer(t)
	lab := t.TempDir()
	if err := os.WriteFile(filepath.Join(lab, "secrets"), []byte("s3cret-lab-value\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	r := repo{t, t.TempDir()}
	r.git("init", "-q")
	r.write("scenarios/config-demo.yaml", scenarioYAML)
	r.write("operator/controller/reconcile.go", operatorGo)
	r.write("operator/controller/reconcile_test.go", "package controller\n")
	r.git("add", ".")
	r.git("commit", "-qm", "scenarios")
	src, err := opsource.Read(r.dir)
	if err != nil {
		t.Fatal(err)
	}

	envFile := filepath.Join(lab, "environment")
	source := src.Digest
	writeEnv := func(kubernetes string) {
		env := "KUBECONFIG=" + api.Kubeconfig + "\nNAMESPACE=default\nPTAH_LAB_RUN_ID=k7q2x9\nPTAH_LAB_SECRETS=secrets\nPTAH_LAB_KUBERNETES=" + kubernetes +
			"\nPTAH_LAB_OPERATOR_SOURCE=" + source + "\n"
		if err := os.WriteFile(envFile, []byte(env), 0o600); err != nil {
			t.Fatal(err)
		}
	}
	writeEnv("v1.37.2")
	t.Chdir(r.dir)
	junit := filepath.Join(lab, "junit.xml")
	out := filepath.Join(r.dir, "demo/recordings/runs.json")
	args := []string{"-scenarios", "scenarios", "-output", out, "-environment", envFile}

	code, stdout, stderr := runRecord(t, append(args, "-junit", junit)...)
	if code != 0 {
		t.Fatalf("record exited %d\nstdout: %s\nstderr: %s", code, stdout, stderr)
	}
	if !strings.Contains(stdout, "recorded 1 scenario, 3 checks held") {
		t.Errorf("stdout = %q", stdout)
	}
	if !strings.Contains(stderr, "config-demo step 1/2") {
		t.Errorf("no progress line on stderr: %q", stderr)
	}
	raw, err := os.ReadFile(out)
	if err != nil {
		t.Fatal(err)
	}
	if err := runs.Validate(raw); err != nil {
		t.Error(err)
	}
	rec, _ := runs.Read(out)
	if got := rec.Scenarios[0].Events[0].Output[0].Text; got != "configmap/demo-run created" {
		t.Errorf("published output %q, want the run id normalized", got)
	}
	if rec.Lab.OperatorSource != src.Digest || len(rec.OperatorFiles) != 1 || rec.OperatorFiles["operator/controller/reconcile.go"] == "" {
		t.Errorf("recorded operator source %s %v, want %s over operator/controller/reconcile.go alone", rec.Lab.OperatorSource, rec.OperatorFiles, src.Digest)
	}
	if rec.Scenarios[0].File != "scenarios/config-demo.yaml" || len(rec.ScenariosCommit) != 40 || len(rec.Environment) == 0 {
		t.Errorf("recording metadata: file %q commit %q environment %d", rec.Scenarios[0].File, rec.ScenariosCommit, len(rec.Environment))
	}
	if _, err := os.Stat(filepath.Join(r.dir, "demo/recordings/config-demo.cast")); err != nil {
		t.Errorf("no cast: %v", err)
	}
	var suite readSuites
	jraw, _ := os.ReadFile(junit)
	if err := xml.Unmarshal(jraw, &suite); err != nil || suite.Tests != "3" || suite.Failures != "0" || len(suite.Suites) != 1 ||
		!strings.Contains(suite.Suites[0].Cases[0].SystemOut, "configmap/demo-run created") {
		t.Errorf("junit = %+v, %v", suite, err)
	}

	t.Run("verify passes on the fresh recording", func(t *testing.T) {
		if code, _, stderr := runRecord(t, "-verify", "-scenarios", "scenarios", "-output", out); code != 0 {
			t.Errorf("verify exited %d: %s", code, stderr)
		}
	})

	t.Run("a dirty tree is refused, the recording's own output is not", func(t *testing.T) {
		// runs.json and the cast are uncommitted now: re-recording over them is fine.
		if code, _, stderr := runRecord(t, args...); code != 0 {
			t.Errorf("record over an uncommitted recording exited %d: %s", code, stderr)
		}
		r.write("scenarios/notes.txt", "an input nobody committed\n")
		defer os.Remove(filepath.Join(r.dir, "scenarios/notes.txt"))
		code, _, stderr := runRecord(t, args...)
		if code != 1 || !strings.Contains(stderr, "refused") || !strings.Contains(stderr, "scenarios/notes.txt") {
			t.Errorf("record in a dirty tree exited %d: %s", code, stderr)
		}
	})
	r.git("add", ".")
	r.git("commit", "-qm", "recording")

	t.Run("verify notices a changed definition but not a reworded note", func(t *testing.T) {
		r.write("scenarios/config-demo.yaml", strings.Replace(scenarioYAML, "Read it back.", "Read it again.", 1))
		if code, _, stderr := runRecord(t, "-verify", "-scenarios", "scenarios", "-output", out); code != 0 {
			t.Errorf("a reworded note failed verify: %s", stderr)
		}
		r.write("scenarios/config-demo.yaml", strings.Replace(scenarioYAML, "[blue]", "[blu]", 1))
		code, _, stderr := runRecord(t, "-verify", "-scenarios", "scenarios", "-output", out)
		if code != 1 || !strings.Contains(stderr, "scenario config-demo changed since it was recorded") {
			t.Errorf("verify of a changed definition exited %d: %s", code, stderr)
		}
		r.git("checkout", "scenarios/config-demo.yaml")
	})

	t.Run("verify names a one-line operator change and says how to re-record", func(t *testing.T) {
		defer r.git("checkout", "operator/controller/reconcile.go")
		r.write("operator/controller/reconcile.go", strings.Replace(operatorGo, "return 1", "return 2", 1))
		code, _, stderr := runRecord(t, "-verify", "-scenarios", "scenarios", "-output", out)
		if code != 1 || !strings.Contains(stderr, "the operator source changed since it was recorded") ||
			!strings.Contains(stderr, "changed operator/controller/reconcile.go") || !strings.Contains(stderr, "make demo-up") {
			t.Errorf("verify after an operator change exited %d: %s", code, stderr)
		}
		if strings.Contains(stderr, "mismatch") {
			t.Errorf("verify blamed the scenarios for an operator change: %s", stderr)
		}
	})

	t.Run("verify names an added operator file, not a changed test", func(t *testing.T) {
		r.write("operator/controller/reconcile_test.go", "package controller\n\n// changed\n")
		defer r.git("checkout", "operator/controller/reconcile_test.go")
		if code, _, stderr := runRecord(t, "-verify", "-scenarios", "scenarios", "-output", out); code != 0 {
			t.Errorf("a changed test failed verify: %s", stderr)
		}
		r.write("operator/controller/new.go", "package controller\n")
		defer os.Remove(filepath.Join(r.dir, "operator/controller/new.go"))
		code, _, stderr := runRecord(t, "-verify", "-scenarios", "scenarios", "-output", out)
		if code != 1 || !strings.Contains(stderr, "added operator/controller/new.go") {
			t.Errorf("verify after an added operator file exited %d: %s", code, stderr)
		}
	})

	t.Run("record refuses a lab built from another operator source", func(t *testing.T) {
		source = "sha256:" + strings.Repeat("0", 64)
		writeEnv("v1.37.2")
		defer func() { source = src.Digest; writeEnv("v1.37.2") }()
		code, _, stderr := runRecord(t, append(args, "-only", "config-demo")...)
		if code != 1 || !strings.Contains(stderr, "refused: the lab's operator images were built from operator source "+source) {
			t.Errorf("record on a lab of another operator source exited %d: %s", code, stderr)
		}
	})

	t.Run("repeat publishes claims that held in every run, with their timing", func(t *testing.T) {
		code, stdout, stderr := runRecord(t, append(args, "-only", "config-demo", "-repeat", "3")...)
		if code != 0 {
			t.Fatalf("record -repeat 3 exited %d: %s %s", code, stdout, stderr)
		}
		rec, err := runs.Read(out)
		if err != nil {
			t.Fatal(err)
		}
		raw, _ := os.ReadFile(out)
		if err := runs.Validate(raw); err != nil {
			t.Error(err)
		}
		for _, c := range rec.Scenarios[0].Checks {
			if c.Runs != 3 {
				t.Errorf("check %q held in %d runs, want 3", c.Claim, c.Runs)
			}
		}
		for _, e := range rec.Scenarios[0].Events {
			tm := e.Timing
			if tm == nil || tm.Runs != 3 || tm.Command.Min <= 0 || tm.Command.Min > tm.Command.Median || tm.Command.Median > tm.Command.Max {
				t.Errorf("step %d timing %+v", e.Step, tm)
			}
		}
	})

	t.Run("repeat refuses a flaky claim and publishes nothing", func(t *testing.T) {
		before, _ := os.ReadFile(out)
		r.write("scenarios/config-demo.yaml", scenarioYAML+`  - note: Heads, then tails.
    run: if [ -e flip ]; then rm flip; echo tails; else touch flip; echo heads; fi
    expect:
      exit: 0
      stdout_contains: [heads]
`)
		r.git("commit", "-qam", "flaky on purpose")
		defer func() {
			r.write("scenarios/config-demo.yaml", scenarioYAML)
			r.git("commit", "-qam", "steady again")
		}()
		code, _, stderr := runRecord(t, append(args, "-only", "config-demo", "-repeat", "2", "-junit", junit)...)
		if code != 1 || !strings.Contains(stderr, `flake: scenario config-demo step 3: "exits 0, prints \"heads\"" held in 1 of 2 runs (run 1), did not hold in run 2`) ||
			!strings.Contains(stderr, "nothing was written") {
			t.Errorf("a flaky scenario exited %d: %s", code, stderr)
		}
		if after, _ := os.ReadFile(out); !bytes.Equal(before, after) {
			t.Errorf("a flaky run changed %s", out)
		}
		if _, err := os.Stat(filepath.Join(r.dir, "flip")); err == nil {
			t.Errorf("the two runs did not both run the step")
		}
	})

	t.Run("only refuses a recording from another lab", func(t *testing.T) {
		writeEnv("v1.99.0")
		defer writeEnv("v1.37.2")
		code, _, stderr := runRecord(t, append(args, "-only", "config-demo")...)
		if code != 1 || !strings.Contains(stderr, "recorded against another lab") {
			t.Errorf("-only against another lab exited %d: %s", code, stderr)
		}
	})

	t.Run("a failed check writes nothing and prints the checks", func(t *testing.T) {
		before, _ := os.ReadFile(out)
		r.write("scenarios/config-demo.yaml", strings.Replace(scenarioYAML, "stdout_contains: [blue]", "stdout_contains: [green]", 1))
		r.git("commit", "-qam", "break it")
		code, _, stderr := runRecord(t, append(args, "-only", "config-demo", "-junit", junit)...)
		if code != 1 || !strings.Contains(stderr, `step 2  FAILED  exits 0, prints "green"`) || !strings.Contains(stderr, "nothing was written") {
			t.Errorf("failing record exited %d: %s", code, stderr)
		}
		after, _ := os.ReadFile(out)
		if !bytes.Equal(before, after) {
			t.Errorf("a failed run changed %s", out)
		}
		jraw, _ := os.ReadFile(junit)
		if err := xml.Unmarshal(jraw, &suite); err != nil || suite.Failures != "1" || !strings.Contains(suite.Suites[0].Cases[2].SystemOut, "blue") {
			t.Errorf("junit after failure = %+v, %v", suite, err)
		}
	})

	t.Run("a failed scenario stops none of the others, and nothing is written", func(t *testing.T) {
		before, _ := os.ReadFile(out)
		second := strings.NewReplacer("id: config-demo", "id: zz-second", "demo-k7q2x9", "second-k7q2x9").Replace(scenarioYAML)
		r.write("scenarios/zz-second.yaml", second)
		r.git("add", ".")
		r.git("commit", "-qm", "a second scenario after the broken one")
		defer func() {
			r.git("rm", "-q", "scenarios/zz-second.yaml")
			r.git("commit", "-qm", "one scenario again")
		}()
		var suites readSuites
		code, _, stderr := runRecord(t, append(args, "-junit", junit)...)
		if code != 1 || !strings.Contains(stderr, "zz-second step 2/2") || !strings.Contains(stderr, "1 of 2 scenarios failed or flaked (config-demo); nothing was written") {
			t.Errorf("record with one failing scenario exited %d: %s", code, stderr)
		}
		if after, _ := os.ReadFile(out); !bytes.Equal(before, after) {
			t.Errorf("a run with a failed scenario changed %s", out)
		}
		jraw, _ := os.ReadFile(junit)
		if err := xml.Unmarshal(jraw, &suites); err != nil || len(suites.Suites) != 2 || suites.Suites[0].Failures != "1" ||
			suites.Suites[1].Name != "zz-second" || suites.Suites[1].Failures != "0" || suites.Suites[1].Tests != "3" {
			t.Errorf("junit = %+v, %v", suites, err)
		}
	})

	t.Run("a credential in the output is refused", func(t *testing.T) {
		r.write("scenarios/config-demo.yaml", scenarioYAML+
			"  - note: Leak it.\n    run: echo s3cret-lab-value\n    expect:\n      exit: 0\n")
		r.git("commit", "-qam", "leak")
		before, _ := os.ReadFile(out)
		code, _, stderr := runRecord(t, append(args, "-only", "config-demo")...)
		if code != 1 || !strings.Contains(stderr, "scenario config-demo step 3") || strings.Contains(stderr, "s3cret-lab-value") {
			t.Errorf("leaking record exited %d: %s", code, stderr)
		}
		if after, _ := os.ReadFile(out); !bytes.Equal(before, after) {
			t.Errorf("a refused run changed %s", out)
		}
	})
}
