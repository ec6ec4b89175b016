package site

import (
	"flag"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"ptah.run/operator/recorder/envnames"
	"ptah.run/operator/recorder/opsource"
	"ptah.run/operator/recorder/recording"
	"ptah.run/operator/recorder/runs"
)

var update = flag.Bool("update", false, "rewrite the fixture recording in testdata/recording")

// The fixture lab's credential values (testdata/lab): the registry password
// and a value from a credential file. No site may contain either.
const (
	plantedPassword = "s3cr3t+Planted&9f2c71"
	plantedSecret   = "db-Planted-<7c1e55aa>"
)

func exit0() runs.Evidence { zero := 0; return runs.Evidence{Exit: &zero} }

// fixture is a small recording made with recorder/recording's types: the
// seed's failure-recovery session plus two scenarios, one in another group
// and one whose command, note and output are full of HTML's special
// characters and terminal escapes.
func fixture() *recording.Recording {
	out := func(at float64, text string) recording.Line {
		return recording.Line{T: at, Stream: "terminal", Text: text}
	}
	awaited := 2.5
	held := func(step int, claim string) runs.Check {
		return runs.Check{Step: step, Claim: claim, Held: true, Evidence: exit0()}
	}
	r := &recording.Recording{
		RecordedAt:        "2026-09-17T10:04:05Z",
		ScenariosCommit:   "8c7fe187707f0d1e2b3c4d5e6f708192a3b4c5d6",
		ScenariosDescribe: "v0.6.0-12-g8c7fe18",
	}
	r.Lab.Kubernetes = "1.37.0"
	r.Lab.Kind = "v0.33.0"
	r.Lab.OperatorCommit = "8c7fe187707f0d1e2b3c4d5e6f708192a3b4c5d6"
	r.Lab.PtahVersion = "v0.6.0"
	r.OperatorFiles = map[string]string{"internal/controller/schema.go": "3b1f0c2a9d8e7f6a5b4c3d2e1f0a9b8c7d6e5f4a3b2c1d0e9f8a7b6c5d4e3f2a"}
	r.Lab.OperatorSource = opsource.Digest(r.OperatorFiles)
	r.Lab.ExecutorDigest = "sha256:91ec0a6fa27f51c2d8e3f4a5b6c7d8e9f0a1b2c3d4e5f60718293a4b5c6d7e8f"
	for _, n := range envnames.Published() {
		r.Environment = append(r.Environment, recording.Name{Name: n.Name, Meaning: n.Meaning})
	}
	digest := "sha256:" + strings.Repeat("0", 64)
	r.Scenarios = append(r.Scenarios, recording.Scenario{
		ID: "failure-recovery", Title: "Fail, then recover", Tagline: "Point it at a database that is not there. It says so, keeps trying, and converges when it is.",
		Learn: "What a failure looks like in the status, and that recovery needs no intervention beyond the fix.", Tags: []string{"Operations"},
		File: "scenarios/failure-recovery.yaml", DefinitionDigest: digest, RecordedAt: r.RecordedAt,
		Events: []recording.Event{
			{Step: 1, Note: "The same resource, pointed at a database that does not answer.", Sync: "resolving",
				Command: "APPLY=Always demo/bin/lab manifest storefront \"$(cat demo/.lab/digest)\" \\\n  | sed 's/name: demo-database/name: demo-database-broken/' \\\n  | kubectl apply -f -",
				Output:  []recording.Line{out(0.84, "ptahschema.operator.ptah.run/storefront created")}},
			{Step: 2, Note: "It reports the database as unreachable, with a reason a machine can read.", Sync: "failed", Start: 2.1,
				Command: "kubectl -n \"$NAMESPACE\" get ptahschema storefront -o json \\\n  | jq -r '.status.phase, (.status.conditions[] | select(.type == \"ReconciliationFailed\") | .message)'",
				Output:  []recording.Line{out(0.2, "Failed"), out(0.21, "child_exit: ptah exited with code 2")}},
			{Step: 3, Note: "A failure is an event too, so it is in the record rather than only in a log.", Sync: "failed", Start: 3.4,
				Command: `kubectl -n "$NAMESPACE" get events --field-selector involvedObject.name=storefront --sort-by=.lastTimestamp | tail -5`,
				Output: []recording.Line{
					out(0.4, "12s   Normal    OperationCompleted   ptahschema/storefront   resolve operation completed"),
					out(0.4, "11s   Normal    OperationStarted     ptahschema/storefront   Verify Job ptah-verify-storefront-71fd1b934301ac75 started"),
					out(0.41, "7s    Normal    OperationCompleted   ptahschema/storefront   verify operation completed"),
					out(0.41, "6s    Normal    OperationStarted     ptahschema/storefront   Observe Job ptah-observe-storefront-e4d00056326601d7 started"),
					out(0.41, "1s    Warning   OperationFailed      ptahschema/storefront   child_exit: ptah exited with code 2"),
				}},
			{Step: 4, Note: "No credential in any of it. This is the whole status the operator wrote.", Sync: "failed", Start: 4.9,
				Command: `kubectl -n "$NAMESPACE" get ptahschema storefront -o json | jq -r '.status | tostring' | head -c 400`,
				Output:  []recording.Line{out(0.3, `{"activeOperation":{"attempt":2,"coordinationDigest":"sha256:1f99f1e0ceb341a5b6ca5da75161513672b13c811fc50e1725fc7dec0f8aa99f","executionBindingID":"v1-b50602bd8c7b04187031ee43aee0f6eb","id":"sha256:81dabcf8d2a725da080ba4e18858d7cdcfd5559b6c869f5a045a6a0e37461234","jobName":"ptah-observe-storefront-ea3c44d`)}},
			{Step: 5, Note: "Now fix the one thing that was wrong.", Sync: "failed", Start: 6.2,
				Command: "kubectl -n \"$NAMESPACE\" patch ptahschema storefront --type=merge \\\n  -p '{\"spec\":{\"target\":{\"urlFrom\":{\"name\":\"demo-database\",\"key\":\"url\"}}}}'",
				Output:  []recording.Line{out(0.25, "ptahschema.operator.ptah.run/storefront patched")}},
			{Step: 6, Note: "It retries on its own interval and converges. Nothing was restarted by hand.", Sync: "insync", Start: 71.5,
				Command: `kubectl -n "$NAMESPACE" exec deploy/demo-psql -- psql -c "\dt"`,
				Output: []recording.Line{
					out(0.9, "           List of relations"), out(0.9, " Schema |   Name    | Type  |     Owner"),
					out(0.91, "--------+-----------+-------+---------------"), out(0.91, " public | customers | table | ptah_external"),
					out(0.91, "(1 row)"), out(0.91, ""),
				}},
		},
		Checks: []runs.Check{
			held(1, `exits 0, prints "created"`),
			held(2, "ptahschema/storefront: ReconciliationFailed=True (OperationFailed)"),
			held(2, `exits 0, prints "Failed"`),
			held(3, `exits 0, prints "storefront"`),
			held(4, `exits 0, never prints "nobody:nobody"`),
			held(5, `exits 0, prints "patched"`),
			held(6, "ptahschema/storefront: InSync=True (ScopedConverged)"),
			held(6, `exits 0, prints "customers"`),
			held(6, "ptahschema/storefront: ReconciliationFailed=False (Succeeded)"),
		},
	})
	r.Scenarios = append(r.Scenarios, recording.Scenario{
		ID: "lab-setup", Title: "The lab is ready", Tagline: "The controller is available and the resources are served.",
		Learn: "What a working installation looks like.", Tags: []string{"Getting started"},
		File: "scenarios/lab-setup.yaml", DefinitionDigest: digest, RecordedAt: r.RecordedAt,
		Events: []recording.Event{{Step: 1, Note: "The controller is running.", Sync: "ready",
			Command: `kubectl -n "$OPERATOR_NAMESPACE" get deploy "$CONTROLLER"`,
			Output: []recording.Line{out(0.31, "NAME            READY   UP-TO-DATE   AVAILABLE   AGE"),
				out(0.32, "ptah-operator   1/1     1            1           2m")}}},
		Checks: []runs.Check{held(1, `exits 0, prints "1/1"`)},
	})
	r.Scenarios = append(r.Scenarios, recording.Scenario{
		ID: "markup-in-commands", Title: "Commands with <markup> & quotes", Tagline: "Text a browser would read as markup is shown as typed.",
		Learn: `That <b>, & and "quotes" in a command are published as written.`, Tags: []string{"Operations", "Site"},
		File: "scenarios/markup-in-commands.yaml", DefinitionDigest: digest, RecordedAt: r.RecordedAt,
		Events: []recording.Event{{Step: 1, Note: "A command with <angle brackets> & ampersands.",
			Command: `echo '<script>alert("x")</script> &amp; a<b' | grep -c '<'`,
			Output:  []recording.Line{out(0.05, "\x1b[32m1\x1b[0m"), {T: 0.06, Stream: "stderr", Text: "10%\r100% <stderr> & more"}}}},
		// An await's check before the command, its own, and one of an
		// object after it, with markup in the values read.
		Checks: []runs.Check{
			{Step: 1, Claim: "configmap/<markup>: Ready=True (Done)", Held: true, Evidence: runs.Evidence{
				Condition:   &runs.ConditionEvidence{Status: "True", Reason: "Done", ObservedGeneration: 3, Generation: 3, LastTransitionTime: "2026-09-17T10:03:59Z"},
				WaitSeconds: &awaited}},
			held(1, `exits 0, prints "1"`),
			{Step: 1, Claim: `configmap/<markup>: data.html = "<img src=x onerror=alert(1)> & \"q\""`, Held: true, Evidence: runs.Evidence{
				Field: &runs.FieldEvidence{Path: "data.html", Value: `<img src=x onerror=alert(1)> & "q"`, Exists: true}}},
		},
	})
	return r
}

// writeRecording writes r into dir with recorder/recording's encoder and
// cast writer, as the recorder publishes it: runs.json and one cast per
// scenario.
func writeRecording(t testing.TB, dir string, r *recording.Recording) {
	t.Helper()
	raw, err := r.Encode()
	if err != nil {
		t.Fatal(err)
	}
	files := map[string][]byte{runs.File: raw}
	for _, s := range r.Scenarios {
		files[s.ID+".cast"] = recording.Cast(s)
	}
	if err := os.MkdirAll(dir, 0o755); err != nil {
		t.Fatal(err)
	}
	for name, data := range files {
		if err := os.WriteFile(filepath.Join(dir, name), data, 0o644); err != nil {
			t.Fatal(err)
		}
	}
}

// TestFixtureRecording keeps testdata/recording equal to what the recorder
// writes for fixture(); run with -update after changing either.
func TestFixtureRecording(t *testing.T) {
	dir := t.TempDir()
	writeRecording(t, dir, fixture())
	if *update {
		writeRecording(t, filepath.Join("testdata", "recording"), fixture())
	}
	names, err := filepath.Glob(filepath.Join(dir, "*"))
	if err != nil || len(names) != 4 {
		t.Fatalf("fixture wrote %v (%v), want runs.json and three casts", names, err)
	}
	for _, name := range names {
		want, err := os.ReadFile(name)
		if err != nil {
			t.Fatal(err)
		}
		got, err := os.ReadFile(filepath.Join("testdata", "recording", filepath.Base(name)))
		if err != nil {
			t.Fatalf("%v (run go test ./site -run TestFixtureRecording -update)", err)
		}
		if string(got) != string(want) {
			t.Errorf("testdata/recording/%s is stale: run go test ./site -run TestFixtureRecording -update", filepath.Base(name))
		}
	}
	raw, _ := os.ReadFile(filepath.Join(dir, runs.File))
	if err := runs.Validate(raw); err != nil {
		t.Errorf("the fixture does not match runs.schema.json: %v", err)
	}
}
