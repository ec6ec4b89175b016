package site

import (
	"encoding/json"
	"flag"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"
)

var update = flag.Bool("update", false, "rewrite the fixture recording in testdata/recording")

// plantedSecret is the registry password of the fixture lab: the build must
// refuse any site that contains it.
const plantedSecret = "s3cr3t-Planted-9f2c71"

// fixture is a small recording in the shape of DESIGN.md section 5: the
// seed's failure-recovery session plus two scenarios in other groups, one of
// whose commands is full of HTML's special characters.
func fixture() runs {
	out := func(at float64, data string) runOutput { return runOutput{At: at, Stream: "terminal", Data: data} }
	r := runs{
		RecordedAt:      time.Date(2026, 9, 17, 10, 4, 5, 0, time.UTC),
		Lab:             labVersions{Kubernetes: "1.37.0", Kind: "v0.33.0", OperatorCommit: "8c7fe187707f0d1e2b3c4d5e6f708192a3b4c5d6", PtahVersion: "v0.6.0", ExecutorDigest: "sha256:91ec0a6fa27f51c2d8e3f4a5b6c7d8e9f0a1b2c3d4e5f60718293a4b5c6d7e8f"},
		ScenariosCommit: "8c7fe187707f0d1e2b3c4d5e6f708192a3b4c5d6",
		Environment: []EnvName{
			{"KUBECONFIG", "the cluster the commands run against"},
			{"NAMESPACE", "the namespace the schema and its database credentials live in"},
			{"PTAH_OCI_PASSWORD", "its password, which no command prints"},
		},
	}
	r.Scenarios = append(r.Scenarios, runScenario{
		ID: "lab-setup", Title: "The lab is ready", Tagline: "The controller is available and the resources are served.",
		Learn: "What a working installation looks like.", Tags: []string{"Getting started"}, File: "scenarios/lab-setup.yaml",
		Events: []runEvent{{Step: 1, Note: "The controller is running.", Command: `kubectl -n "$OPERATOR_NAMESPACE" get deploy "$CONTROLLER"`, Sync: "ready",
			Output: []runOutput{out(0.31, "NAME            READY   UP-TO-DATE   AVAILABLE   AGE\r\n"), out(0.32, "ptah-operator   1/1     1            1           2m\r\n")}}},
		Checks: []runCheck{{1, "exits 0, prints \"1/1\"", true}},
	})
	r.Scenarios = append(r.Scenarios, runScenario{
		ID: "failure-recovery", Title: "Fail, then recover", Tagline: "Point it at a database that is not there. It says so, keeps trying, and converges when it is.",
		Learn: "What a failure looks like in the status, and that recovery needs no intervention beyond the fix.", Tags: []string{"Operations"}, File: "scenarios/failure-recovery.yaml",
		Events: []runEvent{
			{Step: 1, Note: "The same resource, pointed at a database that does not answer.", Sync: "resolving",
				Command: "APPLY=Always demo/bin/lab manifest storefront \"$(cat demo/.lab/digest)\" \\\n  | sed 's/name: demo-database/name: demo-database-broken/' \\\n  | kubectl apply -f -",
				Output:  []runOutput{out(0.84, "ptahschema.operator.ptah.run/storefront created\r\n")}},
			{Step: 2, Note: "It reports the database as unreachable, with a reason a machine can read.", Sync: "failed",
				Command: "kubectl -n \"$NAMESPACE\" get ptahschema storefront -o json \\\n  | jq -r '.status.phase, (.status.conditions[] | select(.type == \"ReconciliationFailed\") | .message)'",
				Output:  []runOutput{out(0.2, "Failed\r\n"), out(0.21, "child_exit: ptah exited with code 2\r\n")}},
			{Step: 3, Note: "A failure is an event too, so it is in the record rather than only in a log.", Sync: "failed",
				Command: `kubectl -n "$NAMESPACE" get events --field-selector involvedObject.name=storefront --sort-by=.lastTimestamp | tail -5`,
				Output: []runOutput{
					out(0.4, "12s   Normal    OperationCompleted   ptahschema/storefront   resolve operation completed\r\n11s   Normal    OperationStarted     ptahschema/storefront   Verify Job ptah-verify-storefront-71fd1b934301ac75 started\r\n"),
					out(0.41, "7s    Normal    OperationCompleted   ptahschema/storefront   verify operation completed\r\n6s    Normal    OperationStarted     ptahschema/storefront   Observe Job ptah-observe-storefront-e4d00056326601d7 started\r\n1s    Warning   OperationFailed      ptahschema/storefront   child_exit: ptah exited with code 2\r\n"),
				}},
			{Step: 4, Note: "No credential in any of it. This is the whole status the operator wrote.", Sync: "failed",
				Command: `kubectl -n "$NAMESPACE" get ptahschema storefront -o json | jq -r '.status | tostring' | head -c 400`,
				Output:  []runOutput{out(0.3, `{"activeOperation":{"attempt":2,"coordinationDigest":"sha256:1f99f1e0ceb341a5b6ca5da75161513672b13c811fc50e1725fc7dec0f8aa99f","executionBindingID":"v1-b50602bd8c7b04187031ee43aee0f6eb","id":"sha256:81dabcf8d2a725da080ba4e18858d7cdcfd5559b6c869f5a045a6a0e37461234","jobName":"ptah-observe-storefront-ea3c44d`)}},
			{Step: 5, Note: "Now fix the one thing that was wrong.", Sync: "failed",
				Command: "kubectl -n \"$NAMESPACE\" patch ptahschema storefront --type=merge \\\n  -p '{\"spec\":{\"target\":{\"urlFrom\":{\"name\":\"demo-database\",\"key\":\"url\"}}}}'",
				Output:  []runOutput{out(0.25, "ptahschema.operator.ptah.run/storefront patched\r\n")}},
			{Step: 6, Note: "It retries on its own interval and converges. Nothing was restarted by hand.", Sync: "insync",
				Command: `kubectl -n "$NAMESPACE" exec deploy/demo-psql -- psql -c "\dt"`,
				Output: []runOutput{
					out(0.9, "           List of relations\r\n Schema |   Name    | Type  |     Owner\r\n"),
					out(0.91, "--------+-----------+-------+---------------\r\n public | customers | table | ptah_external\r\n(1 row)\r\n\r\n"),
				}},
		},
		Checks: []runCheck{
			{1, `exits 0, prints "created"`, true},
			{2, "ptahschema/storefront: ReconciliationFailed=True (OperationFailed)", true},
			{2, `exits 0, prints "Failed"`, true},
			{3, `exits 0, prints "storefront"`, true},
			{4, `exits 0, never prints "nobody:nobody"`, true},
			{5, `exits 0, prints "patched"`, true},
			{6, "ptahschema/storefront: InSync=True (ScopedConverged)", true},
			{6, `exits 0, prints "customers"`, true},
			{6, "ptahschema/storefront: ReconciliationFailed=False (Succeeded)", true},
		},
	})
	r.Scenarios = append(r.Scenarios, runScenario{
		ID: "markup-in-commands", Title: "Commands with <markup> & quotes", Tagline: "Text a browser would read as markup is shown as typed.",
		Learn: "That <b>, & and \"quotes\" in a command are published as written.", Tags: []string{"Operations", "Site"}, File: "scenarios/markup-in-commands.yaml",
		Events: []runEvent{
			{Step: 1, Note: "A command with <angle brackets> & ampersands.", Sync: "",
				Command: `echo '<script>alert("x")</script> &amp; a<b' | grep -c '<'`,
				Output:  []runOutput{out(0.05, "\x1b[32m1\x1b[0m\r\n"), {At: 0.06, Stream: "stderr", Data: "warning: <stderr> & more\r\n"}}},
		},
		Checks: []runCheck{{1, `exits 0, prints "1"`, true}},
	})
	return r
}

// writeRecording writes r as runs.json plus one asciicast v2 file per
// scenario: the note and the command typed, then the output at its time.
func writeRecording(t *testing.T, dir string, r runs) {
	t.Helper()
	if err := os.MkdirAll(dir, 0o755); err != nil {
		t.Fatal(err)
	}
	data, err := json.MarshalIndent(r, "", "  ")
	if err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(dir, "runs.json"), append(data, '\n'), 0o644); err != nil {
		t.Fatal(err)
	}
	for _, s := range r.Scenarios {
		if err := os.WriteFile(filepath.Join(dir, s.ID+".cast"), castOf(t, s, r.RecordedAt), 0o644); err != nil {
			t.Fatal(err)
		}
	}
}

func castOf(t *testing.T, s runScenario, at time.Time) []byte {
	t.Helper()
	var b strings.Builder
	header, _ := json.Marshal(map[string]any{"version": 2, "width": 100, "height": 30, "timestamp": at.Unix(), "title": s.Title})
	b.Write(header)
	b.WriteByte('\n')
	clock := 0.0
	emit := func(data string) {
		ev, err := json.Marshal([]any{clock, "o", data})
		if err != nil {
			t.Fatal(err)
		}
		b.Write(ev)
		b.WriteByte('\n')
	}
	typed := func(text string) {
		for _, r := range strings.ReplaceAll(text, "\n", "\r\n") {
			clock += 0.02
			emit(string(r))
		}
		emit("\r\n")
	}
	for _, e := range s.Events {
		typed("# " + e.Note)
		typed("$ " + e.Command)
		start := clock
		for _, o := range e.Output {
			clock = start + o.At
			emit(o.Data)
		}
		if len(e.Output) > 0 && !strings.HasSuffix(e.Output[len(e.Output)-1].Data, "\n") {
			emit("\r\n")
		}
		clock += 0.5
	}
	return []byte(b.String())
}

// TestFixtureRecording keeps testdata/recording equal to fixture(); run with
// -update after changing the fixture.
func TestFixtureRecording(t *testing.T) {
	dir := t.TempDir()
	writeRecording(t, dir, fixture())
	if *update {
		writeRecording(t, filepath.Join("testdata", "recording"), fixture())
	}
	for _, name := range []string{"runs.json", "lab-setup.cast", "failure-recovery.cast", "markup-in-commands.cast"} {
		want, err := os.ReadFile(filepath.Join(dir, name))
		if err != nil {
			t.Fatal(err)
		}
		got, err := os.ReadFile(filepath.Join("testdata", "recording", name))
		if err != nil {
			t.Fatalf("%v (run go test ./site -run TestFixtureRecording -update)", err)
		}
		if string(got) != string(want) {
			t.Errorf("testdata/recording/%s is stale: run go test ./site -run TestFixtureRecording -update", name)
		}
	}
}
