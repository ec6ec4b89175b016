package recording

import (
	"bytes"
	"errors"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"ptah.run/operator/recorder/check"
	"ptah.run/operator/recorder/credential"
	"ptah.run/operator/recorder/execute"
	"ptah.run/operator/recorder/labenv"
	"ptah.run/operator/recorder/normalize"
	"ptah.run/operator/recorder/opsource"
	"ptah.run/operator/recorder/runs"
	"ptah.run/operator/recorder/scenario"
)

func ptr[T any](v T) *T { return &v }

func sample() *Recording {
	wait := 1.25
	return &Recording{
		RecordedAt: "2026-09-17T10:00:00Z",
		Lab: labenv.Versions{Kubernetes: "v1.37.0", Kind: "v0.30.0", OperatorCommit: "8c7fe187707f", PtahVersion: "v0.6.0", ExecutorDigest: "sha256:91ec0a6fa27f",
			OperatorSource: opsource.Digest(map[string]string{"operator/a.go": strings.Repeat("b", 64)})},
		OperatorFiles:     map[string]string{"operator/a.go": strings.Repeat("b", 64)},
		ScenariosCommit:   strings.Repeat("a", 40),
		ScenariosDescribe: "v0.6.0-3-gaaaaaaa",
		Environment:       []Name{{Name: "KUBECONFIG", Meaning: "the cluster the commands run against"}},
		Scenarios: []Scenario{{
			ID: "failure-recovery", Title: "Fail, then recover", Tagline: "t", Learn: "l", Tags: []string{"Operations"},
			File: "scenarios/failure-recovery.yaml", DefinitionDigest: "sha256:" + strings.Repeat("0", 64), RecordedAt: "2026-09-17T10:00:00Z",
			Events: []Event{
				{Step: 1, Note: "Create it.", Command: "kubectl apply -f - \\\n  <x.yaml", Start: 0, Output: []Line{{T: 0.2, Stream: "terminal", Text: "ptahschema.operator.ptah.run/storefront created"}}},
				{Step: 2, Note: "Look.", Command: "kubectl get ptahs", Start: 3, Show: []string{"stdout"}, Output: []Line{
					{T: 0.1, Stream: "stdout", Text: "NAME"}, {T: 30, Stream: "stdout", Text: "storefront"}}},
			},
			Checks: []check.Check{
				{Step: 1, Claim: `exits 0, prints "created"`, Held: true, Evidence: check.Evidence{Exit: ptr(0)}},
				{Step: 2, Claim: "ptahschema/storefront: InSync=True (ScopedConverged)", Held: true, Evidence: check.Evidence{
					Condition:   &check.ConditionEvidence{Status: "True", Reason: "ScopedConverged", ObservedGeneration: 2, Generation: 2, LastTransitionTime: "2026-09-17T10:00:01Z"},
					WaitSeconds: &wait}},
			},
		}},
	}
}

func TestOutputMatchesTheSchema(t *testing.T) {
	raw, err := sample().Encode()
	if err != nil {
		t.Fatal(err)
	}
	if err := runs.Validate(raw); err != nil {
		t.Fatal(err)
	}
	// The schema is not vacuous: a recording with a failed check, or one
	// missing the lab, does not validate.
	bad := sample()
	bad.Scenarios[0].Checks[0].Held = false
	raw, _ = bad.Encode()
	if err := runs.Validate(raw); err == nil {
		t.Errorf("a recording holding a failed check validated")
	}
	raw = bytes.Replace(raw, []byte(`"lab"`), []byte(`"labs"`), 1)
	if err := runs.Validate(raw); err == nil {
		t.Errorf("a recording without lab versions validated")
	}
	bare := sample()
	bare.OperatorFiles = nil
	raw, _ = bare.Encode()
	if err := runs.Validate(raw); err == nil {
		t.Errorf("a recording naming no operator files validated")
	}
}

func TestCastIsDeterministicAndShaped(t *testing.T) {
	s := sample().Scenarios[0]
	a, b := Cast(s), Cast(s)
	if !bytes.Equal(a, b) {
		t.Fatal("two renders of one recording differ")
	}
	lines := strings.Split(strings.TrimSuffix(string(a), "\n"), "\n")
	if lines[0] != `{"version":2,"width":100,"height":30,"title":"Fail, then recover"}` {
		t.Errorf("header = %s", lines[0])
	}
	markers := 0
	var prev float64 = -1
	for _, l := range lines[1:] {
		if strings.Contains(l, `, "m", `) {
			markers++
		}
		var at float64
		if _, err := fmtSscan(l, &at); err != nil {
			t.Fatalf("event %q: %v", l, err)
		}
		if at < prev {
			t.Errorf("time goes back at %q", l)
		}
		if at-prev > float64(idleCapMicros)/1e6+1e-9 && prev >= 0 {
			t.Errorf("pause of %.3fs exceeds the idle cap before %q", at-prev, l)
		}
		prev = at
	}
	if markers != len(s.Events) {
		t.Errorf("%d markers for %d steps", markers, len(s.Events))
	}
	if !bytes.Contains(a, []byte(`"storefront\r\n"`)) || !bytes.Contains(a, []byte(`"\r\n\u003e "`)) {
		t.Errorf("cast lacks output line endings or the continuation prompt:\n%s", a)
	}
}

func TestDefinitionDigestIgnoresNarration(t *testing.T) {
	base := scenario.Scenario{ID: "x", Title: "T", Tagline: "t", Learn: "l", Tags: []string{"A"},
		Steps: []scenario.Step{{Note: "n", Run: "echo hi", Sync: "applying", Expect: &scenario.Expect{Exit: ptr(0)}}}}
	d := DefinitionDigest(base)
	narr := base
	narr.Title, narr.Tagline, narr.Learn, narr.Tags = "T2", "t2", "l2", []string{"B"}
	narr.Steps = []scenario.Step{{Note: "other", Run: "echo hi", Sync: "planning", Expect: &scenario.Expect{Exit: ptr(0)}}}
	if DefinitionDigest(narr) != d {
		t.Errorf("narration changed the definition digest")
	}
	for name, change := range map[string]func(*scenario.Scenario){
		"run":   func(s *scenario.Scenario) { s.Steps[0].Run = "echo ho" },
		"exit":  func(s *scenario.Scenario) { s.Steps[0].Expect = &scenario.Expect{Exit: ptr(1)} },
		"show":  func(s *scenario.Scenario) { s.Steps[0].Show = []string{"stderr"} },
		"retry": func(s *scenario.Scenario) { s.Steps[0].Retry = "1m" },
		"reset": func(s *scenario.Scenario) { s.Reset = []string{"true"} },
		"await": func(s *scenario.Scenario) {
			s.Steps[0].Await = &scenario.Observation{Kind: "k", Name: "n", Absent: true}
		},
		"expect": func(s *scenario.Scenario) {
			s.Steps[0].Expect = &scenario.Expect{Exit: ptr(0), StdoutContains: []string{"hi"}}
		},
	} {
		c := base
		c.Steps = append([]scenario.Step(nil), base.Steps...)
		change(&c)
		if DefinitionDigest(c) == d {
			t.Errorf("changing %s kept the definition digest", name)
		}
	}
}

func TestLinesSplitStreamsAndNormalize(t *testing.T) {
	r := execute.Result{Chunks: []execute.Chunk{
		{At: 10 * time.Millisecond, Stream: execute.Stdout, Data: []byte("NAME          AGE\r\ndemo-k7q2x9   5s")},
		{At: 20 * time.Millisecond, Stream: execute.Stderr, Data: []byte("warn\n")},
		{At: 30 * time.Millisecond, Stream: execute.Stdout, Data: []byte("\r\n")},
	}}
	got := Lines(r, []string{"stdout"}, normalize.Normalizer{RunID: "k7q2x9"})
	want := []Line{{T: 0.01, Stream: "stdout", Text: "NAME          AGE"}, {T: 0.03, Stream: "stdout", Text: "demo-run      5s"}}
	if len(got) != len(want) || got[0] != want[0] || got[1] != want[1] {
		t.Errorf("lines = %+v, want %+v", got, want)
	}
	if all := Lines(r, nil, normalize.Normalizer{}); len(all) != 3 || all[1].Stream != "stderr" {
		t.Errorf("lines without show = %+v, want stdout, stderr, stdout", all)
	}
}

func TestCredentialRefusedWhereverItIsPublished(t *testing.T) {
	secrets := credential.NewScanner([]credential.Credential{{Value: []byte("hunter2-db-pass"), Kind: "a lab credential"}})
	cases := map[string]func(*Recording){
		"output": func(r *Recording) { r.Scenarios[0].Events[1].Output[0].Text = "url=postgres://u:hunter2-db-pass@db" },
		"stderr": func(r *Recording) {
			r.Scenarios[0].Events[1].Output = append(r.Scenarios[0].Events[1].Output, Line{T: 1, Stream: "stderr", Text: "hunter2-db-pass"})
		},
		"base64 output": func(r *Recording) { r.Scenarios[0].Events[0].Output[0].Text = "password: aHVudGVyMi1kYi1wYXNz" },
		"evidence field": func(r *Recording) {
			r.Scenarios[0].Checks[0].Evidence.Field = &check.FieldEvidence{Path: "spec.x", Value: "hunter2-db-pass", Exists: true}
		},
		"command as run":  func(r *Recording) { r.Scenarios[0].Events[0].Command = "echo hunter2-db-pass" },
		"scenario title":  func(r *Recording) { r.Scenarios[0].Title = "hunter2-db-pass" },
		"environment doc": func(r *Recording) { r.Environment[0].Meaning = "hunter2-db-pass" },
	}
	for name, plant := range cases {
		dir := t.TempDir()
		r := sample()
		plant(r)
		err := Publish(filepath.Join(dir, runs.File), r, secrets)
		var ce *CredentialError
		if !errors.As(err, &ce) {
			t.Errorf("%s: publish = %v, want a credential refusal", name, err)
			continue
		}
		if strings.Contains(err.Error(), "hunter2") || strings.Contains(err.Error(), "aHVudGVy") {
			t.Errorf("%s: the refusal prints the credential: %v", name, err)
		}
		if entries, _ := os.ReadDir(dir); len(entries) != 0 {
			t.Errorf("%s: refused publish wrote %d files", name, len(entries))
		}
	}
	dir := t.TempDir()
	if err := Publish(filepath.Join(dir, runs.File), sample(), secrets); err != nil {
		t.Fatalf("clean recording refused: %v", err)
	}
	for _, f := range []string{runs.File, "failure-recovery.cast"} {
		if _, err := os.Stat(filepath.Join(dir, f)); err != nil {
			t.Errorf("clean publish did not write %s", f)
		}
	}
}

func TestStepNamedInRefusal(t *testing.T) {
	r := sample()
	r.Scenarios[0].Events[1].Output[0].Text = "hunter2-db-pass"
	err := Scan(credential.NewScanner([]credential.Credential{{Value: []byte("hunter2-db-pass"), Kind: "a lab credential"}}), r.Scenarios[0])
	if err == nil || !strings.Contains(err.Error(), "scenario failure-recovery step 2 stdout holds a lab credential (as written)") {
		t.Errorf("refusal = %v, want it to name scenario failure-recovery step 2", err)
	}
}

func TestDirtyTreeRefused(t *testing.T) {
	dir := t.TempDir()
	git := func(args ...string) {
		t.Helper()
		cmd := exec.Command("git", args...)
		cmd.Dir = dir
		cmd.Env = append(os.Environ(), "GIT_AUTHOR_NAME=t", "GIT_AUTHOR_EMAIL=t@t", "GIT_COMMITTER_NAME=t", "GIT_COMMITTER_EMAIL=t@t")
		if out, err := cmd.CombinedOutput(); err != nil {
			t.Fatalf("git %v: %v\n%s", args, err, out)
		}
	}
	git("init", "-q")
	_ = os.WriteFile(filepath.Join(dir, ".gitignore"), []byte("ignored/\n"), 0o644)
	_ = os.WriteFile(filepath.Join(dir, "a.yaml"), []byte("a\n"), 0o644)
	git("add", ".")
	git("commit", "-qm", "one")
	git("tag", "v0.1.0")

	_ = os.MkdirAll(filepath.Join(dir, "ignored"), 0o755)
	_ = os.WriteFile(filepath.Join(dir, "ignored", "x"), []byte("x"), 0o644)
	commit, describe, err := Pin(dir)
	if err != nil {
		t.Fatalf("clean tree (ignored file only) refused: %v", err)
	}
	if len(commit) != 40 || !strings.HasPrefix(describe, "v0.1.0-0-g") {
		t.Errorf("pin = %q, %q", commit, describe)
	}

	_ = os.WriteFile(filepath.Join(dir, "untracked.yaml"), []byte("u\n"), 0o644)
	if _, _, err := Pin(dir); err == nil || !strings.Contains(err.Error(), "untracked.yaml") {
		t.Errorf("untracked file: pin = %v, want a refusal naming it", err)
	}
	_ = os.Remove(filepath.Join(dir, "untracked.yaml"))
	_ = os.WriteFile(filepath.Join(dir, "a.yaml"), []byte("changed\n"), 0o644)
	if _, _, err := Pin(dir); err == nil || !strings.Contains(err.Error(), "a.yaml") {
		t.Errorf("modified file: pin = %v, want a refusal naming it", err)
	}
	// A recording being re-recorded over is the output, not an input.
	if _, _, err := Pin(dir, "a.yaml"); err != nil {
		t.Errorf("modified output excluded: pin = %v, want it accepted", err)
	}
}

func TestMergeReplacesByID(t *testing.T) {
	r := sample()
	s := r.Scenarios[0]
	s.Title = "again"
	r.Merge(s)
	r.Merge(Scenario{ID: "a-first"})
	if len(r.Scenarios) != 2 || r.Scenarios[0].ID != "a-first" || r.Scenarios[1].Title != "again" {
		t.Errorf("merged scenarios = %+v", r.Scenarios)
	}
}

// TestCredentialAsThePageShowsIt: a value hidden from the bytes and from a
// terminal reading the whole output, but shown whole by the page (which
// renders line by line), is refused.
func TestCredentialAsThePageShowsIt(t *testing.T) {
	sc := credential.NewScanner([]credential.Credential{{Value: []byte("hunter2-db-pass"), Kind: "a lab credential"}})
	r := sample()
	e := &r.Scenarios[0].Events[1]
	e.Output = []Line{{T: 0.1, Stream: "stdout", Text: "\x1b]0;title left open"}, {T: 0.2, Stream: "stdout", Text: "hunter2\x1b[31m-db-pass"}}
	if err := Scan(sc, r.Scenarios[0]); err == nil || !strings.Contains(err.Error(), "step 2 stdout (each line as the page shows it) holds") {
		t.Errorf("scan = %v, want a refusal of step 2 stdout as the page shows it", err)
	}
}
