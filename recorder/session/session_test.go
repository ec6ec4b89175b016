package session

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/client-go/dynamic"
	"pgregory.net/rapid"

	"ptah.run/operator/internal/testenv"
	"ptah.run/operator/recorder/credential"
	"ptah.run/operator/recorder/execute"
	"ptah.run/operator/recorder/observe"
	"ptah.run/operator/recorder/opsource"
	"ptah.run/operator/recorder/recording"
	"ptah.run/operator/recorder/runs"
	"ptah.run/operator/recorder/scenario"
	"ptah.run/operator/recorder/terminal"
)

var widgets = schema.GroupVersionResource{Group: "test.ptah.run", Version: "v1", Resource: "widgets"}

const planted = "pl4nted-Cred3ntial"

type lab struct {
	api    *testenv.APIServer
	dyn    dynamic.Interface
	runner *Runner
}

func startLab(t *testing.T) *lab {
	api := testenv.StartAPIServer(t, testenv.WithCRDs("../observe/testdata/crds"))
	obs, err := observe.New(api.Config, "default")
	if err != nil {
		t.Fatal(err)
	}
	return &lab{api: api, dyn: dynamic.NewForConfigOrDie(api.Config), runner: newRunner(t, api, obs)}
}

func newRunner(t *testing.T, api *testenv.APIServer, obs *observe.Observer) *Runner {
	return &Runner{
		Shell: execute.Shell{Dir: t.TempDir(), Timeout: time.Minute, Env: []string{
			"KUBECONFIG=" + api.Kubeconfig, "NAMESPACE=default", "PATH=" + os.Getenv("PATH"), "HOME=" + t.TempDir(),
		}},
		Observer:     obs,
		Config:       api.Config,
		Credentials:  plantedSet(),
		LearnSecrets: true,
	}
}

func plantedSet() *credential.Set {
	set := credential.NewSet()
	set.Add([]byte(planted), "a lab credential (secrets:1)")
	return set
}

func ptr[T any](v T) *T { return &v }

func widgetYAML(name string, extra string) string {
	return "kubectl apply -f - <<EOF\napiVersion: test.ptah.run/v1\nkind: Widget\nmetadata:\n  name: " + name + "\n  namespace: \"$NAMESPACE\"\nspec:\n  size: 1\n" + extra + "EOF"
}

// setWhenPresent writes a Ready condition on the widget as soon as it exists,
// as a controller would.
func (l *lab) setWhenPresent(t *testing.T, name, status, reason string, observed int64) {
	ri := l.dyn.Resource(widgets).Namespace("default")
	go func() {
		for i := 0; i < 300; i++ {
			u, err := ri.Get(context.Background(), name, metav1.GetOptions{})
			if err != nil {
				time.Sleep(50 * time.Millisecond)
				continue
			}
			gen := observed
			if gen == 0 {
				gen = u.GetGeneration()
			}
			_ = unstructured.SetNestedSlice(u.Object, []any{map[string]any{
				"type": "Ready", "status": status, "reason": reason, "observedGeneration": gen,
				"lastTransitionTime": time.Now().UTC().Format(time.RFC3339), "message": "set by the test",
			}}, "status", "conditions")
			if _, err := ri.UpdateStatus(context.Background(), u, metav1.UpdateOptions{}); err == nil {
				return
			}
		}
	}()
}

func TestRecorder(t *testing.T) {
	l := startLab(t)
	ctx := context.Background()

	t.Run("a scenario whose checks hold is recorded", func(t *testing.T) {
		l.setWhenPresent(t, "gizmo", "True", "Done", 0)
		sc := scenario.Scenario{ID: "widget-ready", Title: "Ready", Tagline: "t", Learn: "l", Tags: []string{"Test"}, Steps: []scenario.Step{
			{Note: "Create it.", Run: widgetYAML("gizmo", ""), Expect: &scenario.Expect{Exit: ptr(0), StdoutContains: []string{"created"}}},
			{Note: "It is ready.",
				Await: &scenario.Observation{Kind: "widget", Name: "gizmo", Timeout: "30s", Generation: "current",
					Condition: &scenario.Condition{Type: "Ready", Status: "True", Reason: "Done"}},
				Run: `kubectl -n "$NAMESPACE" get wd gizmo -o jsonpath='{.status.conditions[0].reason}'`,
				Expect: &scenario.Expect{Exit: ptr(0), StdoutContains: []string{"Done"}, Resource: &scenario.Observation{Kind: "widgets.test.ptah.run", Name: "gizmo",
					Fields: []scenario.Field{{Path: `status.conditions.#(type=="Ready").reason`, Equals: ptr("Done")}, {Path: "metadata.uid", NotEmpty: true}}}}},
			{Note: "Only stdout is shown.", Run: "echo visible; echo hidden >&2", Show: []string{"stdout"},
				Expect: &scenario.Expect{Exit: ptr(0), StdoutContains: []string{"visible"}, StdoutAbsent: []string{"hidden"}}},
		}}
		var progress bytes.Buffer
		l.runner.Progress = &progress
		defer func() { l.runner.Progress = nil }()
		rec, err := l.runner.Run(ctx, sc)
		if err != nil {
			t.Fatal(err)
		}
		var claims []string
		for _, c := range rec.Checks {
			if !c.Held {
				t.Errorf("recorded a check that did not hold: %+v", c)
			}
			claims = append(claims, c.Claim)
		}
		want := []string{
			`exits 0, prints "created"`,
			`widget/gizmo: Ready=True (Done)`,
			`exits 0, prints "Done"`,
			`widgets.test.ptah.run/gizmo: status.conditions.#(type=="Ready").reason = "Done"`,
			`widgets.test.ptah.run/gizmo: metadata.uid is not empty`,
			`exits 0, prints "visible", never prints "hidden"`,
		}
		if strings.Join(claims, "\n") != strings.Join(want, "\n") {
			t.Errorf("claims:\n%s\nwant:\n%s", strings.Join(claims, "\n"), strings.Join(want, "\n"))
		}
		cond := rec.Checks[1].Evidence
		if cond.Condition == nil || cond.Condition.ObservedGeneration != cond.Condition.Generation || cond.Condition.LastTransitionTime == "" || cond.WaitSeconds == nil {
			t.Errorf("await evidence = %+v", cond)
		}
		for _, line := range rec.Events[2].Output {
			if strings.Contains(line.Text, "hidden") {
				t.Errorf("show: [stdout] published stderr: %+v", line)
			}
		}
		if len(rec.Events) != 3 || rec.Events[0].Output[0].Text != "widget.test.ptah.run/gizmo created" {
			t.Errorf("events = %+v", rec.Events)
		}
		if !strings.Contains(progress.String(), "widget-ready step 2/3: waiting for widget/gizmo: Ready=True (Done)") {
			t.Errorf("progress did not say what step 2 waited for:\n%s", progress.String())
		}

		r := &recording.Recording{RecordedAt: rec.RecordedAt, ScenariosCommit: strings.Repeat("0", 40), ScenariosDescribe: "0000000", Environment: []recording.Name{}}
		r.OperatorFiles = map[string]string{"operator/a.go": strings.Repeat("a", 64)}
		r.Lab.OperatorSource = opsource.Digest(r.OperatorFiles)
		r.Merge(rec)
		if rec.Events[0].Seconds <= 0 {
			t.Errorf("step 1's command took %v s", rec.Events[0].Seconds)
		}
		dir := t.TempDir()
		if err := recording.Publish(filepath.Join(dir, runs.File), r, l.runner.Scanner()); err != nil {
			t.Fatal(err)
		}
		raw, err := os.ReadFile(dir + "/" + runs.File)
		if err != nil {
			t.Fatal(err)
		}
		if err := runs.Validate(raw); err != nil {
			t.Error(err)
		}
	})

	t.Run("a stale condition does not satisfy generation current", func(t *testing.T) {
		// Generation 2 (the spec changed), condition written for generation 1.
		sc := scenario.Scenario{ID: "fenced", Steps: []scenario.Step{
			{Note: "Create.", Run: widgetYAML("fenced", "") + "\n" + `kubectl -n "$NAMESPACE" patch widget fenced --type=merge -p '{"spec":{"size":2}}'`,
				Expect: &scenario.Expect{Exit: ptr(0), StdoutContains: []string{"patched"}}},
			{Note: "Await.", Await: &scenario.Observation{Kind: "widget", Name: "fenced", Timeout: "2s", Generation: "current",
				Condition: &scenario.Condition{Type: "Ready", Status: "True", Reason: "Done"}},
				Run: "echo never", Expect: &scenario.Expect{Exit: ptr(0)}},
		}}
		ri := l.dyn.Resource(widgets).Namespace("default")
		done := make(chan struct{})
		go func() {
			defer close(done)
			for i := 0; i < 300; i++ {
				if u, err := ri.Get(ctx, "fenced", metav1.GetOptions{}); err == nil && u.GetGeneration() == 2 {
					l.setWhenPresent(t, "fenced", "True", "Done", 1)
					return
				}
				time.Sleep(20 * time.Millisecond)
			}
		}()
		_, err := l.runner.Run(ctx, sc)
		<-done
		var f *Failure
		if !errors.As(err, &f) {
			t.Fatalf("run = %v, want a failure", err)
		}
		last := f.Checks[len(f.Checks)-1]
		if last.Held || last.Step != 2 || !strings.Contains(last.Evidence.Why, "stale: observedGeneration 1 < generation 2") {
			t.Errorf("last check = %+v, want step 2 failed as stale", last)
		}
		msg := err.Error()
		for _, want := range []string{`step 1  held    exits 0, prints "patched"`, "step 2  FAILED  widget/fenced: Ready=True (Done)", "Ready=True (Done) since", "nothing was written"} {
			if !strings.Contains(msg, want) {
				t.Errorf("failure report lacks %q:\n%s", want, msg)
			}
		}
	})

	t.Run("a failed expectation ends the run at that step", func(t *testing.T) {
		sc := scenario.Scenario{ID: "stops", Steps: []scenario.Step{
			{Note: "a", Run: "echo one", Expect: &scenario.Expect{Exit: ptr(0), StdoutContains: []string{"one"}}},
			{Note: "b", Run: "echo two; exit 3", Expect: &scenario.Expect{Exit: ptr(0)}},
			{Note: "c", Run: "touch ran-after-failure", Expect: &scenario.Expect{Exit: ptr(0)}},
		}}
		_, err := l.runner.Run(ctx, sc)
		var f *Failure
		if !errors.As(err, &f) || len(f.Checks) != 2 || f.Step != 2 || f.Checks[1].Evidence.Why != "exited 3" {
			t.Fatalf("run = %v", err)
		}
		if _, err := os.Stat(l.runner.Shell.Dir + "/ran-after-failure"); err == nil {
			t.Errorf("step 3 ran after step 2 failed")
		}
	})

	t.Run("retry repeats a read until it holds", func(t *testing.T) {
		sc := scenario.Scenario{ID: "retry", Steps: []scenario.Step{
			{Note: "a", Run: "n=$(cat count 2>/dev/null || echo 0); n=$((n+1)); echo $n > count; echo attempt $n", Retry: "30s",
				Expect: &scenario.Expect{Exit: ptr(0), StdoutContains: []string{"attempt 3"}}},
		}}
		rec, err := l.runner.Run(ctx, sc)
		if err != nil {
			t.Fatal(err)
		}
		if ev := rec.Checks[0].Evidence; ev.Attempts != 3 {
			t.Errorf("attempts = %d, want 3", ev.Attempts)
		}
	})

	t.Run("a planted credential is refused wherever it would be published", func(t *testing.T) {
		cases := map[string]scenario.Step{
			"command output": {Note: "o", Run: "echo " + planted, Expect: &scenario.Expect{Exit: ptr(0)}},
			"stderr":         {Note: "e", Run: "echo " + planted + " >&2", Show: []string{"stderr"}, Expect: &scenario.Expect{Exit: ptr(0)}},
			// The command text splits the value, so only the object holds it whole.
			"resource field": {Note: "f", Run: "a=" + planted[:5] + "\nb=" + planted[5:] + "\n" + widgetYAML("leaky", "  password: $a$b\n"),
				Expect: &scenario.Expect{Exit: ptr(0), Resource: &scenario.Observation{Kind: "widget", Name: "leaky",
					Fields: []scenario.Field{{Path: "spec.password", NotEmpty: true}}}}},
		}
		for name, step := range cases {
			sc := scenario.Scenario{ID: "leak", Steps: []scenario.Step{
				{Note: "first", Run: "true", Expect: &scenario.Expect{Exit: ptr(0)}},
				step,
			}}
			rec, err := l.runner.Run(ctx, sc)
			if err != nil {
				t.Errorf("%s: run: %v", name, err)
				continue
			}
			dir := t.TempDir()
			r := &recording.Recording{RecordedAt: rec.RecordedAt, ScenariosCommit: strings.Repeat("0", 40), ScenariosDescribe: "x"}
			r.Merge(rec)
			err = recording.Publish(filepath.Join(dir, runs.File), r, l.runner.Scanner())
			var ce *recording.CredentialError
			if !errors.As(err, &ce) || !strings.Contains(err.Error(), "scenario leak step 2") {
				t.Errorf("%s: publish = %v, want a refusal naming step 2", name, err)
			} else if strings.Contains(err.Error(), planted) {
				t.Errorf("%s: refusal prints the credential", name)
			}
			if entries, _ := os.ReadDir(dir); len(entries) != 0 {
				t.Errorf("%s: refused publish wrote files", name)
			}
		}
	})

	t.Run("a credential in a failure report is redacted, and the report says so", func(t *testing.T) {
		sc := scenario.Scenario{ID: "leaky-failure", Steps: []scenario.Step{
			{Note: "f", Run: widgetYAML("leaky2", "  password: "+planted+"\n"),
				Expect: &scenario.Expect{Exit: ptr(0), Resource: &scenario.Observation{Kind: "widget", Name: "leaky2",
					Fields: []scenario.Field{{Path: "spec.password", Equals: ptr("something else")}}}}},
		}}
		_, err := l.runner.Run(ctx, sc)
		if err == nil || strings.Contains(strings.ToLower(err.Error()), strings.ToLower(planted)) ||
			!strings.Contains(err.Error(), "[redacted]") || !strings.Contains(err.Error(), "held a credential and were redacted") {
			t.Errorf("failure = %v, want the report with the credential redacted and a line saying so", err)
		}
	})

	t.Run("a failed reset says why, credentials redacted, and no step runs", func(t *testing.T) {
		sc := scenario.Scenario{ID: "reset-fails",
			Reset: []string{"true", "echo progress; echo 'lab: cluster gone, token " + planted + "' >&2; exit 4"},
			Steps: []scenario.Step{{Note: "a", Run: "touch ran-after-reset", Expect: &scenario.Expect{Exit: ptr(0)}}}}
		_, err := l.runner.Run(ctx, sc)
		var f *Failure
		if !errors.As(err, &f) || f.Step != 0 {
			t.Fatalf("run = %v, want a failure at step 0", err)
		}
		report := err.Error()
		for _, want := range []string{"reset command 2 exited 4", "lab: cluster gone", "[redacted]"} {
			if !strings.Contains(report, want) {
				t.Errorf("report lacks %q:\n%s", want, report)
			}
		}
		if strings.Contains(report, planted) {
			t.Errorf("report prints the credential:\n%s", report)
		}
		if _, err := os.Stat(l.runner.Shell.Dir + "/ran-after-reset"); err == nil {
			t.Errorf("a step ran after the reset failed")
		}
	})

	t.Run("an unknown kind is an error, not absent", func(t *testing.T) {
		sc := scenario.Scenario{ID: "unknown", Steps: []scenario.Step{
			{Note: "a", Run: "true", Expect: &scenario.Expect{Exit: ptr(0), Resource: &scenario.Observation{Kind: "gadget", Name: "x", Absent: true}}},
		}}
		_, err := l.runner.Run(ctx, sc)
		var f *Failure
		if !errors.As(err, &f) || f.Err == nil || !strings.Contains(f.Err.Error(), `no resource type "gadget"`) {
			t.Errorf("run = %v, want an unknown kind error", err)
		}
	})
}

// disguised draws bytes a terminal shows holding secret, written so that
// the bytes do not: pieces joined by sequences that draw nothing (colours,
// a window title, a backspaced character, a cursor saved and restored
// around other text), or a later piece drawn first and the line returned
// to for the earlier one.
func disguised(t *rapid.T, secret string) string {
	cuts := rapid.SliceOfNDistinct(rapid.IntRange(1, len(secret)-1), 1, 8, rapid.ID[int]).Draw(t, "cuts")
	slices.Sort(cuts)
	var pieces []string
	last := 0
	for _, c := range cuts {
		pieces = append(pieces, secret[last:c])
		last = c
	}
	pieces = append(pieces, secret[last:])
	joins := []string{"\x1b[1m", "\x1b[0m", "\x1b[38;5;2m", "\x1b]0;title\x07", "Z\b", "\x1b7junk\x1b8", "\x1b[s\x1b[u",
		"XX\x1b[2D\x1b[2P"} // two characters written, stepped back over and deleted
	prefix := rapid.SampledFrom([]string{"", "token ", "lab: "}).Draw(t, "prefix")
	switch rapid.IntRange(0, 2).Draw(t, "how") {
	case 1:
		// Each piece on a line of its own, written back up beside the
		// one before by moving the cursor, and down again.
		var b strings.Builder
		b.WriteString(prefix + pieces[0])
		col := len(prefix) + len(pieces[0])
		// Up by a count (CUU) or by reverse index a line at a time.
		up := rapid.SampledFrom([]func(int) string{
			func(n int) string { return fmt.Sprintf("\x1b[%dA", n) },
			func(n int) string { return strings.Repeat("\x1bM", n) },
		}).Draw(t, "up")
		for i, p := range pieces[1:] {
			fmt.Fprintf(&b, "\n%s\x1b[%dC%s\x1b[%dB", up(i+1), col, p, i+1)
			col += len(p)
		}
		return b.String()
	case 2:
		// The tail first after blanks as wide as the head, then the head over them.
		head := pieces[0]
		return prefix + strings.Repeat("#", len(head)) + strings.Join(pieces[1:], "") + "\r" + prefix + head
	}
	var b strings.Builder
	b.WriteString(prefix)
	for i, p := range pieces {
		if i > 0 {
			b.WriteString(rapid.SampledFrom(joins).Draw(t, "join"))
		}
		b.WriteString(p)
	}
	return b.String()
}

// TestAFailureReportNeverShowsACredential: a reset that fails prints a
// credential in a form only a terminal puts together; the report, as a
// real terminal emulator shows it, holds it nowhere.
func TestAFailureReportNeverShowsACredential(t *testing.T) {
	l := startLab(t)
	ctx := context.Background()
	testenv.RapidChecks(t, 40)
	rapid.Check(t, func(rt *rapid.T) {
		out := disguised(rt, planted)
		if !strings.Contains(terminal.Text(out), planted) {
			rt.Fatalf("the generator's own output %q does not show the credential on a terminal", out)
		}
		before := rapid.IntRange(0, 6).Draw(rt, "lines before")
		file := filepath.Join(l.runner.Shell.Dir, "said")
		text := strings.Repeat("earlier line\n", before) + out + "\n" + rapid.SampledFrom([]string{"", "after\n"}).Draw(rt, "after")
		if err := os.WriteFile(file, []byte(text), 0o600); err != nil {
			rt.Fatal(err)
		}
		sc := scenario.Scenario{ID: "disguised", Reset: []string{"cat said >&2; exit 3"},
			Steps: []scenario.Step{{Note: "a", Run: "true", Expect: &scenario.Expect{Exit: ptr(0)}}}}
		_, err := l.runner.Run(ctx, sc)
		if err == nil {
			rt.Fatal("the reset failed and the run did not")
		}
		if shown := terminal.Text(err.Error()); strings.Contains(shown, planted) {
			rt.Fatalf("a terminal shows the credential in the report:\n%s", shown)
		}
	})
}
