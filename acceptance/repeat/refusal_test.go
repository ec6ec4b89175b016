package repeat

import (
	"bytes"
	"context"
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"ptah.run/operator/recorder/recording"
	"ptah.run/operator/recorder/scenario"
)

// published writes a scenario folder holding failure-recovery and a
// recording that publishes it as it is defined now, and returns both paths.
func published(t *testing.T) (dir, runs string) {
	t.Helper()
	tmp := t.TempDir()
	dir = filepath.Join(tmp, "scenarios")
	if err := os.Mkdir(dir, 0o755); err != nil {
		t.Fatal(err)
	}
	raw, err := os.ReadFile("../../scenarios/failure-recovery.yaml")
	if err != nil {
		t.Fatal(err)
	}
	file := filepath.Join(dir, "failure-recovery.yaml")
	if err := os.WriteFile(file, raw, 0o644); err != nil {
		t.Fatal(err)
	}
	s, err := scenario.Load(file)
	if err != nil {
		t.Fatal(err)
	}
	rec := recording.Recording{Scenarios: []recording.Scenario{{ID: s.ID, Title: s.Title, DefinitionDigest: recording.DefinitionDigest(s)}}}
	out, err := json.Marshal(rec)
	if err != nil {
		t.Fatal(err)
	}
	runs = filepath.Join(tmp, "runs.json")
	if err := os.WriteFile(runs, out, 0o644); err != nil {
		t.Fatal(err)
	}
	return dir, runs
}

func TestRefusesBeforeTouchingTheCluster(t *testing.T) {
	dir, runs := published(t)
	other := t.TempDir()
	if err := os.WriteFile(filepath.Join(other, "runs.json"), []byte(`{"scenarios":[]}`), 0o644); err != nil {
		t.Fatal(err)
	}
	changed := t.TempDir()
	raw, _ := os.ReadFile(filepath.Join(dir, "failure-recovery.yaml"))
	edited := strings.Replace(string(raw), "tail -5", "tail -6", 1)
	if err := os.WriteFile(filepath.Join(changed, "failure-recovery.yaml"), []byte(edited), 0o644); err != nil {
		t.Fatal(err)
	}
	cases := map[string]struct {
		o   Options
		say string
	}{
		"unknown scenario": {Options{ID: "no-such", Scenarios: dir, Recording: runs}, "choose one of failure-recovery"},
		"not published":    {Options{ID: "failure-recovery", Scenarios: dir, Recording: filepath.Join(other, "runs.json")}, "is not in"},
		"no recording":     {Options{ID: "failure-recovery", Scenarios: dir, Recording: filepath.Join(other, "absent.json")}, "only a published scenario"},
		"changed since":    {Options{ID: "failure-recovery", Scenarios: changed, Recording: runs}, "changed since it was recorded"},
	}
	for name, c := range cases {
		t.Run(name, func(t *testing.T) {
			_, err := Load(c.o)
			if err == nil || !strings.Contains(err.Error(), c.say) {
				t.Errorf("Load: %v; want a refusal saying %q", err, c.say)
			}
		})
	}
	if _, err := Load(Options{ID: "failure-recovery", Scenarios: dir, Recording: runs}); err != nil {
		t.Errorf("the published scenario as defined was refused: %v", err)
	}
}

func TestPrepareNeedsTheLab(t *testing.T) {
	dir, runs := published(t)
	o := Options{ID: "failure-recovery", Scenarios: dir, Recording: runs, Environment: filepath.Join(t.TempDir(), "environment")}
	pub, err := Load(o)
	if err != nil {
		t.Fatal(err)
	}
	into := filepath.Join(t.TempDir(), "work")
	var stdout, stderr bytes.Buffer
	err = Prepare(context.Background(), o, pub, into, &stdout, &stderr)
	if err == nil || !strings.Contains(err.Error(), "make demo-up") {
		t.Errorf("Prepare without a lab: %v; want a refusal naming make demo-up", err)
	}
	if _, err := os.Stat(into); err == nil {
		t.Errorf("%s was created without a lab", into)
	}
}

func TestCleanRoom(t *testing.T) {
	dir, _ := published(t)
	s, err := scenario.Load(filepath.Join(dir, "failure-recovery.yaml"))
	if err != nil {
		t.Fatal(err)
	}
	p, err := planFor(s)
	if err != nil {
		t.Fatal(err)
	}
	reader := []string{"PATH=/usr/bin", "HOME=/h", "TERM=xterm-256color", "LANG=C.UTF-8", "PWD=/w", "KUBECONFIG=/w/kubeconfig", "NAMESPACE=ptah-demo", "PTAH_OCI_PASSWORD=x"}
	room := func(t *testing.T, files ...string) string {
		d := t.TempDir()
		for _, f := range files {
			if err := os.MkdirAll(filepath.Dir(filepath.Join(d, f)), 0o755); err != nil {
				t.Fatal(err)
			}
			if err := os.WriteFile(filepath.Join(d, f), nil, 0o644); err != nil {
				t.Fatal(err)
			}
		}
		return d
	}
	t.Run("ready", func(t *testing.T) {
		if err := cleanRoom(room(t, "step1-manifest.yaml", "kubeconfig"), p, reader); err != nil {
			t.Errorf("a prepared directory was refused: %v", err)
		}
	})
	refused := map[string]struct {
		files   []string
		environ []string
		say     string
	}{
		"the lab is there":      {[]string{"step1-manifest.yaml", "demo/bin/lab"}, reader, "holds demo/bin/lab"},
		"the recorder is there": {[]string{"step1-manifest.yaml", "go.mod"}, reader, "holds go.mod"},
		"a name nobody has":     {[]string{"step1-manifest.yaml"}, append(reader, "PTAH_LAB_RUN_ID=r1", "GOFLAGS=-mod=mod"), "GOFLAGS, PTAH_LAB_RUN_ID"},
		"no hand-over":          {nil, reader, "step 1 reads the hand-over step1-manifest.yaml"},
	}
	for name, c := range refused {
		t.Run(name, func(t *testing.T) {
			err := cleanRoom(room(t, c.files...), p, c.environ)
			if err == nil || !strings.Contains(err.Error(), c.say) {
				t.Errorf("got %v, want a refusal saying %q", err, c.say)
			}
		})
	}
}

func TestTranscriptDiff(t *testing.T) {
	pub := []recording.Event{
		{Step: 1, Note: "Apply it.", Command: "kubectl apply \\\n  -f -", Output: []recording.Line{{Text: "ptahschema.operator.ptah.run/storefront created"}}},
		{Step: 2, Note: "Read it.", Command: "kubectl get ptahs", Output: []recording.Line{{Text: "storefront   InSync   12s"}}},
	}
	same, differ, _ := unifiedLines(transcript(pub), transcript(pub))
	if differ || strings.ContainsAny(same[:1], "+-~") {
		t.Errorf("identical transcripts differ:\n%s", same)
	}
	if !strings.Contains(same, "\n $ kubectl get ptahs\n") || !strings.Contains(same, " >   -f -\n") {
		t.Errorf("the transcript does not show the command with its continuation:\n%s", same)
	}
	got := append([]recording.Event(nil), pub...)
	got[0].Command = "cat step1-manifest.yaml \\\n  -f -"
	got[1] = recording.Event{Step: 2, Note: "Read it.", Command: "kubectl get ptahs", Output: []recording.Line{{Text: "storefront   InSync   14s"}}}
	diff, differ, volatileOnly := unifiedLines(transcript(pub), transcript(got))
	if !differ {
		t.Fatal("different transcripts reported the same")
	}
	for _, want := range []string{
		"-$ kubectl apply \\\n", "+$ cat step1-manifest.yaml \\\n",
		"~storefront   InSync   14s\n",
		" # Read it.\n", " ptahschema.operator.ptah.run/storefront created\n",
	} {
		if !strings.Contains(diff, want) {
			t.Errorf("diff lacks %q:\n%s", want, diff)
		}
	}
	if volatileOnly != 1 {
		t.Errorf("%d lines differ only in volatile values, want 1 (the age):\n%s", volatileOnly, diff)
	}

	// Generated names, digests and ages alone are no difference in substance.
	got = append([]recording.Event(nil), pub...)
	got[1] = recording.Event{Step: 2, Note: "Read it.", Command: "kubectl get ptahs", Output: []recording.Line{
		{Text: "storefront   InSync   3m12s"},
		{Text: "Proof Job ptah-proof-storefront-dd07ef68ab21539e started"},
	}}
	pub[1].Output = append(pub[1].Output, recording.Line{Text: "Proof Job ptah-proof-storefront-b64f95850e7fac5c started"})
	// A status cut short by head -c ends in part of a Job's hex suffix.
	pub[1].Output = append(pub[1].Output, recording.Line{Text: `{"jobName":"ptah-observe-storefront-eedbc12`})
	got[1].Output = append(got[1].Output, recording.Line{Text: `{"jobName":"ptah-observe-storefront-ddea96a`})
	diff, differ, volatileOnly = unifiedLines(transcript(pub), transcript(got))
	if differ || volatileOnly != 3 {
		t.Errorf("differ=%v with %d volatile-only lines, want no difference in substance and 3:\n%s", differ, volatileOnly, diff)
	}
	pub[1].Output[1].Text = "Plan Job ptah-plan-storefront-b64f95850e7fac5c started"
	if _, differ, _ = unifiedLines(transcript(pub), transcript(got)); !differ {
		t.Error("a Plan Job reported as a Proof Job is a difference in substance, reported as none")
	}
}
