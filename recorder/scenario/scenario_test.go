package scenario

import (
	"errors"
	"os"
	"path/filepath"
	"reflect"
	"strings"
	"testing"
)

const header = "id: demo\ntitle: Demo\ntagline: One sentence.\nlearn: What it shows.\ntags: [Operations]\n"

const okStep = "  - note: a step\n    run: echo hi\n    expect: {exit: 0}\n"

// doc is a scenario file demo.yaml with the given steps under steps:.
func doc(steps string) string {
	return header + "steps:\n" + steps
}

// withStep is a file whose single step has these lines (indented 4).
func withStep(lines string) string {
	var b strings.Builder
	for i, l := range strings.Split(strings.TrimRight(lines, "\n"), "\n") {
		if i == 0 {
			b.WriteString("  - " + l + "\n")
		} else {
			b.WriteString("    " + l + "\n")
		}
	}
	return doc(b.String())
}

func TestValid(t *testing.T) {
	long96 := strings.Repeat("é", 96)
	cases := map[string]string{
		"minimal":             doc(okStep),
		"several steps":       doc(okStep + okStep + okStep),
		"status unquoted":     withStep("note: a step\nrun: echo hi\nawait: {kind: ptahschema, name: s, condition: {type: InSync, status: True, reason: ScopedConverged}}\nexpect: {exit: 0}"),
		"status False":        withStep("note: a step\nrun: echo hi\nawait: {kind: ptahschema, name: s, condition: {type: Ready, status: False, reason: Failed}}\nexpect: {exit: 0}"),
		"status Unknown":      withStep("note: a step\nrun: echo hi\nawait: {kind: ptahschema, name: s, condition: {type: Ready, status: Unknown, reason: Pending}}\nexpect: {exit: 0}"),
		"generation current":  withStep("note: a step\nrun: echo hi\nawait: {kind: ptahschema, name: s, generation: current, timeout: 90s, condition: {type: InSync, status: \"True\", reason: ScopedConverged}}\nexpect: {exit: 0}"),
		"equals number":       withStep("note: a step\nrun: echo hi\nexpect:\n  exit: 0\n  resource: {kind: ptahschema, name: s, fields: [{path: metadata.generation, equals: 3}]}"),
		"equals boolean":      withStep("note: a step\nrun: echo hi\nexpect:\n  exit: 0\n  resource: {kind: ptahschema, name: s, fields: [{path: spec.suspend, equals: false}]}"),
		"equals empty text":   withStep("note: a step\nrun: echo hi\nexpect:\n  exit: 0\n  resource: {kind: ptahschema, name: s, fields: [{path: status.message, equals: \"\"}]}"),
		"notEmpty":            withStep("note: a step\nrun: echo hi\nexpect:\n  exit: 0\n  resource: {kind: ptahschema, name: s, fields: [{path: 'status.conditions.#(type==\"InSync\").reason', notEmpty: true}]}"),
		"absent":              withStep("note: a step\nrun: kubectl delete job x\nexpect:\n  exit: 0\n  resource: {kind: job, name: x, absent: true}"),
		"await absent":        withStep("note: a step\nawait: {kind: job, name: x, absent: true, timeout: 1m}\nrun: echo hi\nexpect: {exit: 0}"),
		"note of 96 runes":    withStep("note: " + long96 + "\nrun: echo hi\nexpect: {exit: 0}"),
		"retry":               withStep("note: a step\nrun: kubectl get x\nretry: 6m\nexpect: {exit: 0}"),
		"timeout":             withStep("note: a step\nrun: kubectl get x\ntimeout: 1m\nexpect: {exit: 0}"),
		"show stdout":         withStep("note: a step\nrun: echo hi\nshow: [stdout]\nexpect: {exit: 0}"),
		"show stderr":         withStep("note: a step\nrun: echo hi >&2\nshow: [stderr]\nexpect: {exit: 0, stderr_contains: [hi]}"),
		"show both":           withStep("note: a step\nrun: echo hi\nshow: [stdout, stderr]\nexpect: {exit: 0}"),
		"sync":                withStep("note: a step\nrun: echo hi\nsync: applying\nexpect: {exit: 0}"),
		"exit 2":              withStep("note: a step\nrun: exit 2\nexpect: {exit: 2, stdout_absent: [panic], stderr_absent: [panic]}"),
		"exit 255":            withStep("note: a step\nrun: exit 255\nexpect: {exit: 255}"),
		"reset":               header + "reset:\n  - kubectl -n \"$NAMESPACE\" delete ptahschema s --ignore-not-found\n  - 'true'\nsteps:\n" + okStep,
		"published names":     withStep("note: a step\nrun: echo $KUBECONFIG $NAMESPACE $OPERATOR_NAMESPACE $CONTROLLER $REGISTRY_IN_CLUSTER $PTAH_OCI_REGISTRY $PTAH_OCI_USERNAME $PTAH_OCI_PASSWORD $PATH $HOME\nexpect: {exit: 0}"),
		"block scalar run":    withStep("note: a step\nrun: |\n  x=1\n  echo \"$x\" \\\n    | cat\nexpect: {exit: 0}"),
		"jq and awk":          withStep("note: a step\nrun: kubectl get x -o json | jq -r --arg n s '.items[] | select(.name == $n)' | awk '{print $1}'\nexpect: {exit: 0}"),
		"heredoc":             withStep("note: a step\nrun: |\n  kubectl apply -f - <<EOF\n  metadata: {namespace: $NAMESPACE}\n  EOF\nexpect: {exit: 0}"),
		"comments and anchor": "# a scenario\n" + header + "steps:\n  - &s\n    note: a step\n    run: echo hi\n    expect: {exit: 0}\n  - *s\n",
		"tags list form":      strings.Replace(doc(okStep), "tags: [Operations]", "tags:\n  - Operations\n  - Failure", 1),
	}
	for name, src := range cases {
		t.Run(name, func(t *testing.T) {
			s, rs := Parse("scenarios/demo.yaml", []byte(src))
			if len(rs) > 0 {
				t.Fatalf("refused a valid file:\n%s\n%v", src, rs)
			}
			if s.ID != "demo" || len(s.Steps) == 0 || s.Steps[0].Expect == nil || s.Steps[0].Expect.Exit == nil {
				t.Errorf("decoded %+v", s)
			}
		})
	}
}

func TestDecodedValues(t *testing.T) {
	src := withStep("note: a step\nrun: echo hi\nawait: {kind: ptahschema, name: s, generation: current, condition: {type: InSync, status: True, reason: ScopedConverged}}\nexpect:\n  exit: 3\n  resource: {kind: ptahschema, name: s, fields: [{path: a, equals: 3}, {path: b, equals: true}, {path: c, notEmpty: true}]}")
	s, rs := Parse("demo.yaml", []byte(src))
	if len(rs) > 0 {
		t.Fatal(rs)
	}
	st := s.Steps[0]
	if got := st.Await.Condition.Status; got != "True" {
		t.Errorf("unquoted True decoded as %q, want \"True\"", got)
	}
	if *st.Expect.Exit != 3 {
		t.Errorf("exit %d, want 3", *st.Expect.Exit)
	}
	fields := st.Expect.Resource.Fields
	if *fields[0].Equals != "3" || *fields[1].Equals != "true" || fields[2].Equals != nil || !fields[2].NotEmpty {
		t.Errorf("fields decoded as %+v %+v %+v", fields[0], fields[1], fields[2])
	}
	if s.File != "demo.yaml" {
		t.Errorf("File = %q", s.File)
	}
}

// TestRefusals lists every rule of FORMAT.md and of the loader:
// each file must be refused at the named step and key, saying what is wrong
// and what to write instead.
func TestRefusals(t *testing.T) {
	cases := []struct {
		name, src string
		step      int
		key, want string
	}{
		// The file.
		{"empty file", "", 0, "", "is empty"},
		{"blank file", "\n  \n", 0, "", "is empty"},
		{"only a comment", "# nothing\n", 0, "", "is empty"},
		{"not a mapping", "- a\n- b\n", 0, "", "not a scenario"},
		{"scalar", "hello\n", 0, "", "not a scenario"},
		{"not yaml", "id: [unclosed\n", 0, "", "not valid YAML"},
		{"tab indentation", "id: demo\nsteps:\n\t- note: a step\n", 0, "", "not valid YAML"},
		{"duplicate key", header + "title: Again\nsteps:\n" + okStep, 0, "", "not valid YAML"},
		{"duplicate step key", withStep("note: a step\nrun: echo hi\nrun: echo ho\nexpect: {exit: 0}"), 0, "", "not valid YAML"},
		{"two documents", doc(okStep) + "---\n" + doc(okStep), 0, "", "more than one YAML document"},
		{"unknown key", "colour: red\n" + doc(okStep), 0, "colour", "not a known key"},
		{"unknown key suggestion", strings.Replace(doc(okStep), "tags:", "tag:", 1), 0, "tag", "not a known key"},
		{"id missing", strings.Replace(doc(okStep), "id: demo\n", "", 1), 0, "id", "is missing"},
		{"id upper case", strings.Replace(doc(okStep), "id: demo", "id: Demo", 1), 0, "id", "not kebab-case"},
		{"id underscore", strings.Replace(doc(okStep), "id: demo", "id: demo_one", 1), 0, "id", "not kebab-case"},
		{"id leading dash", strings.Replace(doc(okStep), "id: demo", "id: -demo", 1), 0, "id", "not kebab-case"},
		{"id double dash", strings.Replace(doc(okStep), "id: demo", "id: de--mo", 1), 0, "id", "not kebab-case"},
		{"id space", strings.Replace(doc(okStep), "id: demo", "id: de mo", 1), 0, "id", "not kebab-case"},
		{"id not the file name", strings.Replace(doc(okStep), "id: demo", "id: other", 1), 0, "id", "does not match the file name"},
		{"id a number", strings.Replace(doc(okStep), "id: demo", "id: 42", 1), 0, "id", "not text"},
		{"title missing", strings.Replace(doc(okStep), "title: Demo\n", "", 1), 0, "title", "is blank"},
		{"title blank", strings.Replace(doc(okStep), "title: Demo", "title: '  '", 1), 0, "title", "is blank"},
		{"title null", strings.Replace(doc(okStep), "title: Demo", "title:", 1), 0, "title", "has no value"},
		{"tagline blank", strings.Replace(doc(okStep), "tagline: One sentence.", "tagline: ''", 1), 0, "tagline", "is blank"},
		{"learn missing", strings.Replace(doc(okStep), "learn: What it shows.\n", "", 1), 0, "learn", "is blank"},
		{"tags missing", strings.Replace(doc(okStep), "tags: [Operations]\n", "", 1), 0, "tags", "lists no tags"},
		{"tags empty", strings.Replace(doc(okStep), "tags: [Operations]", "tags: []", 1), 0, "tags", "lists no tags"},
		{"tags text", strings.Replace(doc(okStep), "tags: [Operations]", "tags: Operations", 1), 0, "tags", "not a list"},
		{"tag blank", strings.Replace(doc(okStep), "tags: [Operations]", "tags: [Operations, '']", 1), 0, "tags[2]", "is blank"},
		{"tag null", strings.Replace(doc(okStep), "tags: [Operations]", "tags: [Operations, ~]", 1), 0, "tags[2]", "is empty"},
		{"steps missing", header, 0, "steps", "lists no steps"},
		{"steps empty", header + "steps: []\n", 0, "steps", "lists no steps"},
		{"steps null", header + "steps:\n", 0, "steps", "has no value"},
		{"steps a mapping", header + "steps: {note: n}\n", 0, "steps", "not a list"},
		{"reset unlisted name", header + "reset: ['kubectl delete ns $TEST_NS']\nsteps:\n" + okStep, 0, "reset[1]", "TEST_NS"},
		{"reset empty command", header + "reset: ['']\nsteps:\n" + okStep, 0, "reset[1]", "empty command"},
		{"reset not shell", header + "reset: ['echo \"']\nsteps:\n" + okStep, 0, "reset[1]", "not POSIX sh"},
		{"reset text", header + "reset: kubectl get x\nsteps:\n" + okStep, 0, "reset", "not a list"},

		// A step.
		{"step not a mapping", doc(okStep + "  - echo hi\n"), 2, "", "not a mapping"},
		{"step unknown key", withStep("note: a step\nrun: echo hi\ncommand: echo\nexpect: {exit: 0}"), 1, "command", "not a known key"},
		{"step misspelt key", withStep("note: a step\nrun: echo hi\nexpct: {exit: 0}"), 1, "expct", "write expect instead"},
		{"step camel case key", withStep("note: a step\nrun: echo hi\nexpect: {exit: 0, stdoutContains: [x]}"), 1, "expect.stdoutContains", "write stdout_contains instead"},
		{"note missing", withStep("run: echo hi\nexpect: {exit: 0}"), 1, "note", "is blank"},
		{"note two lines", withStep("note: \"a\\nb\"\nrun: echo hi\nexpect: {exit: 0}"), 1, "note", "more than one line"},
		{"note block scalar", withStep("note: |\n  a\nrun: echo hi\nexpect: {exit: 0}"), 1, "note", "more than one line"},
		{"note carriage return", withStep("note: \"a\\rb\"\nrun: echo hi\nexpect: {exit: 0}"), 1, "note", "more than one line"},
		{"note 97 characters", withStep("note: " + strings.Repeat("x", 97) + "\nrun: echo hi\nexpect: {exit: 0}"), 1, "note", "97 characters"},
		{"note a boolean", withStep("note: no\nrun: echo hi\nexpect: {exit: 0}"), 1, "note", "boolean false"},
		{"note a number", withStep("note: 5\nrun: echo hi\nexpect: {exit: 0}"), 1, "note", "not text"},
		{"run missing", withStep("note: a step\nexpect: {exit: 0}"), 1, "run", "is empty"},
		{"run empty", withStep("note: a step\nrun: ''\nexpect: {exit: 0}"), 1, "run", "is empty"},
		{"run blank", withStep("note: a step\nrun: '   '\nexpect: {exit: 0}"), 1, "run", "is empty"},
		{"run a list", withStep("note: a step\nrun: [echo, hi]\nexpect: {exit: 0}"), 1, "run", "not text"},
		{"run not shell", withStep("note: a step\nrun: 'if true; then echo'\nexpect: {exit: 0}"), 1, "run", "not POSIX sh"},
		{"run bash array", withStep("note: a step\nrun: 'echo ${a[0]}'\nexpect: {exit: 0}"), 1, "run", "not POSIX sh"},
		{"run indirection", withStep("note: a step\nrun: 'echo ${!NAMESPACE}'\nexpect: {exit: 0}"), 1, "run", "not POSIX sh"},
		{"run unlisted name", withStep("note: a step\nrun: echo $SECRET\nexpect: {exit: 0}"), 1, "run", "SECRET"},
		{"run unlisted name in sh -c", withStep("note: a step\nrun: sh -c 'echo $SECRET'\nexpect: {exit: 0}"), 1, "run", "code handed to sh -c"},
		{"run printenv", withStep("note: a step\nrun: printenv SECRET\nexpect: {exit: 0}"), 1, "run", "SECRET (line 1, printenv)"},
		{"run env dump", withStep("note: a step\nrun: env\nexpect: {exit: 0}"), 1, "run", "whole environment"},
		{"run terminal base is not readable", withStep("note: a step\nrun: echo $TERM\nexpect: {exit: 0}"), 1, "run", "TERM"},
		{"run lower-case published name", withStep("note: a step\nrun: echo $namespace\nexpect: {exit: 0}"), 1, "run", "namespace"},
		{"expect missing", withStep("note: a step\nrun: echo hi"), 1, "expect", "is missing"},
		{"expect null", withStep("note: a step\nrun: echo hi\nexpect:"), 1, "expect", "has no value"},
		{"expect text", withStep("note: a step\nrun: echo hi\nexpect: zero"), 1, "expect", "not a mapping"},
		{"exit missing", withStep("note: a step\nrun: echo hi\nexpect: {stdout_contains: [hi]}"), 1, "expect.exit", "is missing"},
		{"exit text", withStep("note: a step\nrun: echo hi\nexpect: {exit: zero}"), 1, "expect.exit", "not a whole number"},
		{"exit quoted", withStep("note: a step\nrun: echo hi\nexpect: {exit: '0'}"), 1, "expect.exit", "not a whole number"},
		{"exit fraction", withStep("note: a step\nrun: echo hi\nexpect: {exit: 1.5}"), 1, "expect.exit", "not an exit code"},
		{"exit negative", withStep("note: a step\nrun: echo hi\nexpect: {exit: -1}"), 1, "expect.exit", "not an exit code"},
		{"exit too large", withStep("note: a step\nrun: echo hi\nexpect: {exit: 256}"), 1, "expect.exit", "not an exit code"},
		{"exit boolean", withStep("note: a step\nrun: echo hi\nexpect: {exit: true}"), 1, "expect.exit", "not a whole number"},
		{"stdout_contains text", withStep("note: a step\nrun: echo hi\nexpect: {exit: 0, stdout_contains: hi}"), 1, "expect.stdout_contains", "not a list"},
		{"stdout_contains empty", withStep("note: a step\nrun: echo hi\nexpect: {exit: 0, stdout_contains: ['']}"), 1, "expect.stdout_contains[1]", "empty text"},
		{"contains and absent", withStep("note: a step\nrun: echo hi\nexpect: {exit: 0, stderr_contains: [x], stderr_absent: [x]}"), 1, "expect.stderr_contains[1]", "never hold"},
		{"retry not a duration", withStep("note: a step\nrun: echo hi\nretry: soon\nexpect: {exit: 0}"), 1, "retry", "not a duration"},
		{"retry without unit", withStep("note: a step\nrun: echo hi\nretry: '6'\nexpect: {exit: 0}"), 1, "retry", "not a duration"},
		{"retry a number", withStep("note: a step\nrun: echo hi\nretry: 6\nexpect: {exit: 0}"), 1, "retry", "not a duration"},
		{"retry negative", withStep("note: a step\nrun: echo hi\nretry: -1m\nexpect: {exit: 0}"), 1, "retry", "not a positive duration"},
		{"retry zero", withStep("note: a step\nrun: echo hi\nretry: 0s\nexpect: {exit: 0}"), 1, "retry", "not a positive duration"},
		{"timeout not a duration", withStep("note: a step\nrun: echo hi\ntimeout: soon\nexpect: {exit: 0}"), 1, "timeout", "not a duration"},
		{"timeout a number", withStep("note: a step\nrun: echo hi\ntimeout: 30\nexpect: {exit: 0}"), 1, "timeout", "not a duration"},
		{"show other", withStep("note: a step\nrun: echo hi\nshow: [both]\nexpect: {exit: 0}"), 1, "show[1]", "neither stdout nor stderr"},
		{"show upper case", withStep("note: a step\nrun: echo hi\nshow: [STDOUT]\nexpect: {exit: 0}"), 1, "show[1]", "neither stdout nor stderr"},
		{"show twice", withStep("note: a step\nrun: echo hi\nshow: [stdout, stdout]\nexpect: {exit: 0}"), 1, "show[2]", "twice"},
		{"show text", withStep("note: a step\nrun: echo hi\nshow: stdout\nexpect: {exit: 0}"), 1, "show", "not a list"},
		{"show empty", withStep("note: a step\nrun: echo hi\nshow: []\nexpect: {exit: 0}"), 1, "show", "lists nothing"},
		{"sync blank", withStep("note: a step\nrun: echo hi\nsync: ' '\nexpect: {exit: 0}"), 1, "sync", "not a one-word phase"},

		// Observations.
		{"await without kind", withStep("note: a step\nawait: {name: s, absent: true}\nrun: echo hi\nexpect: {exit: 0}"), 1, "await.kind", "is missing"},
		{"await without name", withStep("note: a step\nawait: {kind: job, absent: true}\nrun: echo hi\nexpect: {exit: 0}"), 1, "await.name", "is missing"},
		{"await asks nothing", withStep("note: a step\nawait: {kind: job, name: x}\nrun: echo hi\nexpect: {exit: 0}"), 1, "await", "asks nothing"},
		{"await absent false asks nothing", withStep("note: a step\nawait: {kind: job, name: x, absent: false}\nrun: echo hi\nexpect: {exit: 0}"), 1, "await", "asks nothing"},
		{"await timeout", withStep("note: a step\nawait: {kind: job, name: x, absent: true, timeout: 5}\nrun: echo hi\nexpect: {exit: 0}"), 1, "await.timeout", "not a duration"},
		{"await timeout text", withStep("note: a step\nawait: {kind: job, name: x, absent: true, timeout: five minutes}\nrun: echo hi\nexpect: {exit: 0}"), 1, "await.timeout", "not a duration"},
		{"await generation", withStep("note: a step\nawait: {kind: job, name: x, generation: latest, condition: {type: A, status: 'True', reason: B}}\nrun: echo hi\nexpect: {exit: 0}"), 1, "await.generation", "not current"},
		{"await generation number", withStep("note: a step\nawait: {kind: job, name: x, generation: 3, condition: {type: A, status: 'True', reason: B}}\nrun: echo hi\nexpect: {exit: 0}"), 1, "await.generation", "not text"},
		{"generation without condition", withStep("note: a step\nawait: {kind: job, name: x, generation: current, fields: [{path: a, notEmpty: true}]}\nrun: echo hi\nexpect: {exit: 0}"), 1, "await.generation", "fences no condition"},
		{"absent and condition", withStep("note: a step\nawait: {kind: job, name: x, absent: true, condition: {type: A, status: 'True', reason: B}}\nrun: echo hi\nexpect: {exit: 0}"), 1, "await.absent", "does not exist"},
		{"absent with generation", withStep("note: a step\nawait: {kind: job, name: x, absent: true, generation: current}\nrun: echo hi\nexpect: {exit: 0}"), 1, "await.generation", "must be absent"},
		{"absent not boolean", withStep("note: a step\nawait: {kind: job, name: x, absent: 'yes'}\nrun: echo hi\nexpect: {exit: 0}"), 1, "await.absent", "not true or false"},
		{"condition without type", withStep("note: a step\nawait: {kind: job, name: x, condition: {status: 'True', reason: B}}\nrun: echo hi\nexpect: {exit: 0}"), 1, "await.condition.type", "is missing"},
		{"condition without status", withStep("note: a step\nawait: {kind: job, name: x, condition: {type: A, reason: B}}\nrun: echo hi\nexpect: {exit: 0}"), 1, "await.condition.status", "is missing"},
		{"condition without reason", withStep("note: a step\nawait: {kind: job, name: x, condition: {type: A, status: 'True'}}\nrun: echo hi\nexpect: {exit: 0}"), 1, "await.condition.reason", "is missing"},
		{"condition status lower case", withStep("note: a step\nawait: {kind: job, name: x, condition: {type: A, status: 'true', reason: B}}\nrun: echo hi\nexpect: {exit: 0}"), 1, "await.condition.status", "not True, False or Unknown"},
		{"condition status other", withStep("note: a step\nawait: {kind: job, name: x, condition: {type: A, status: Ready, reason: B}}\nrun: echo hi\nexpect: {exit: 0}"), 1, "await.condition.status", "not True, False or Unknown"},
		{"condition message", withStep("note: a step\nawait: {kind: job, name: x, condition: {type: A, status: 'True', reason: B, message: done}}\nrun: echo hi\nexpect: {exit: 0}"), 1, "await.condition.message", "not a known key"},
		{"resource without kind", withStep("note: a step\nrun: echo hi\nexpect: {exit: 0, resource: {name: x, absent: true}}"), 1, "expect.resource.kind", "is missing"},
		{"resource without name", withStep("note: a step\nrun: echo hi\nexpect: {exit: 0, resource: {kind: job, absent: true}}"), 1, "expect.resource.name", "is missing"},
		{"resource asks nothing", withStep("note: a step\nrun: echo hi\nexpect: {exit: 0, resource: {kind: job, name: x}}"), 1, "expect.resource", "asks nothing"},
		{"resource no fields", withStep("note: a step\nrun: echo hi\nexpect: {exit: 0, resource: {kind: job, name: x, fields: []}}"), 1, "expect.resource.fields", "lists no fields"},
		{"field neither", withStep("note: a step\nrun: echo hi\nexpect: {exit: 0, resource: {kind: job, name: x, fields: [{path: a}]}}"), 1, "expect.resource.fields[1]", "neither equals nor notEmpty"},
		{"field notEmpty false", withStep("note: a step\nrun: echo hi\nexpect: {exit: 0, resource: {kind: job, name: x, fields: [{path: a, notEmpty: false}]}}"), 1, "expect.resource.fields[1]", "neither equals nor notEmpty"},
		{"field both", withStep("note: a step\nrun: echo hi\nexpect: {exit: 0, resource: {kind: job, name: x, fields: [{path: a, equals: b, notEmpty: true}]}}"), 1, "expect.resource.fields[1]", "both equals and notEmpty"},
		{"field without path", withStep("note: a step\nrun: echo hi\nexpect: {exit: 0, resource: {kind: job, name: x, fields: [{equals: b}]}}"), 1, "expect.resource.fields[1].path", "is missing"},
		{"field equals a list", withStep("note: a step\nrun: echo hi\nexpect: {exit: 0, resource: {kind: job, name: x, fields: [{path: a, equals: [b]}]}}"), 1, "expect.resource.fields[1].equals", "not text"},
		{"field equals null", withStep("note: a step\nrun: echo hi\nexpect: {exit: 0, resource: {kind: job, name: x, fields: [{path: a, equals: }]}}"), 1, "expect.resource.fields[1].equals", "has no value"},
		{"field unknown key", withStep("note: a step\nrun: echo hi\nexpect: {exit: 0, resource: {kind: job, name: x, fields: [{path: a, contains: b}]}}"), 1, "expect.resource.fields[1].contains", "not a known key"},
		{"fields a mapping", withStep("note: a step\nrun: echo hi\nexpect: {exit: 0, resource: {kind: job, name: x, fields: {path: a, equals: b}}}"), 1, "expect.resource.fields", "not a list"},
		{"second step numbered", doc(okStep + "  - note: a step\n    run: echo $SECRET\n    expect: {exit: 0}\n"), 2, "run", "SECRET"},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			_, rs := Parse("scenarios/demo.yaml", []byte(c.src))
			for _, r := range rs {
				if r.File != "scenarios/demo.yaml" {
					t.Errorf("refusal names file %q", r.File)
				}
				if r.Step == c.step && r.Key == c.key && strings.Contains(r.Problem+"; "+r.Fix, c.want) {
					if r.Fix == "" {
						t.Errorf("refusal %q says nothing to write instead", r)
					}
					return
				}
			}
			t.Errorf("want a refusal at step %d key %q saying %q; got:\n%v\nfile:\n%s", c.step, c.key, c.want, rs, c.src)
		})
	}
}

// TestAllRefusals: one file breaking many rules is refused for each of them.
func TestAllRefusals(t *testing.T) {
	src := "id: Demo\ntitle: ''\ntagline: t\nlearn: l\ntags: []\nsteps:\n" +
		"  - note: a step\n    run: echo $A\n    expect: {exit: 0, colour: red}\n" +
		"  - note: a step\n    run: printenv B\n    retry: soon\n" +
		"  - run: echo hi\n    expect: {exit: 0}\n"
	_, rs := Parse("demo.yaml", []byte(src))
	var got []string
	for _, r := range rs {
		got = append(got, r.Key)
	}
	want := []string{"id", "title", "tags", "expect.colour", "run", "run", "retry", "expect", "note"}
	if !reflect.DeepEqual(got, want) {
		t.Errorf("refused keys %q, want %q:\n%v", got, want, rs)
	}
	steps := []int{0, 0, 0, 1, 1, 2, 2, 2, 3}
	for i, r := range rs {
		if i < len(steps) && r.Step != steps[i] {
			t.Errorf("refusal %d at step %d, want %d: %v", i, r.Step, steps[i], r)
		}
	}
}

func TestRefusalString(t *testing.T) {
	r := Refusal{File: "scenarios/x.yaml", Step: 2, Key: "expect.exit", Problem: "is missing", Fix: "write exit: 0"}
	if got, want := r.String(), "scenarios/x.yaml: step 2: expect.exit: is missing; write exit: 0"; got != want {
		t.Errorf("String() = %q, want %q", got, want)
	}
	r = Refusal{File: "x.yaml", Key: "id", Problem: "is missing", Fix: "write id: x"}
	if got, want := r.String(), "x.yaml: id: is missing; write id: x"; got != want {
		t.Errorf("String() = %q, want %q", got, want)
	}
}

func write(t *testing.T, dir, name, content string) string {
	t.Helper()
	p := filepath.Join(dir, name)
	if err := os.WriteFile(p, []byte(content), 0o644); err != nil {
		t.Fatal(err)
	}
	return p
}

func named(id, src string) string {
	return strings.Replace(src, "id: demo", "id: "+id, 1)
}

func TestLoadDirSortsByID(t *testing.T) {
	dir := t.TempDir()
	write(t, dir, "zeta.yaml", named("zeta", doc(okStep)))
	write(t, dir, "alpha.yml", named("alpha", doc(okStep+okStep)))
	write(t, dir, "README.md", "not a scenario")
	write(t, dir, ".hidden.yaml", "not: a scenario")
	if err := os.Mkdir(filepath.Join(dir, "sub.yaml"), 0o755); err != nil {
		t.Fatal(err)
	}
	all, err := LoadDir(dir)
	if err != nil {
		t.Fatal(err)
	}
	if len(all) != 2 || all[0].ID != "alpha" || all[1].ID != "zeta" || len(all[0].Steps) != 2 {
		t.Errorf("LoadDir = %+v", all)
	}
}

func TestLoadDirRefusals(t *testing.T) {
	dir := t.TempDir()
	write(t, dir, "one.yaml", named("one", doc(okStep)))
	write(t, dir, "one.yml", named("one", doc(okStep)))
	write(t, dir, "two.yaml", named("two", doc("  - note: a step\n    run: echo $X\n    expect: {exit: 0}\n")))
	_, err := LoadDir(dir)
	var rs Refusals
	if !errors.As(err, &rs) {
		t.Fatalf("LoadDir error %v, want Refusals", err)
	}
	text := rs.Error()
	for _, want := range []string{
		filepath.Join(dir, "one.yml") + `: id: "one" is also the id of ` + filepath.Join(dir, "one.yaml"),
		filepath.Join(dir, "two.yaml") + ": step 1: run: reads the environment name X",
	} {
		if !strings.Contains(text, want) {
			t.Errorf("refusals lack %q:\n%s", want, text)
		}
	}
}

func TestLoadDirErrors(t *testing.T) {
	_, err := LoadDir(filepath.Join(t.TempDir(), "missing"))
	var rs Refusals
	if err == nil || errors.As(err, &rs) {
		t.Errorf("missing folder: error %v, want a plain error", err)
	}
	_, err = LoadDir(t.TempDir())
	if !errors.As(err, &rs) || !strings.Contains(rs.Error(), "no scenario files") {
		t.Errorf("empty folder: error %v, want a refusal", err)
	}
	dir := t.TempDir()
	file := write(t, dir, "demo.yaml", doc(okStep))
	all, err := LoadDir(file)
	if err != nil || len(all) != 1 {
		t.Errorf("one file: %v %v", all, err)
	}
}

func TestLoadRefusesOversizedFile(t *testing.T) {
	dir := t.TempDir()
	f := write(t, dir, "demo.yaml", doc(okStep)+"# "+strings.Repeat("x", maxFileSize)+"\n")
	_, err := Load(f)
	var rs Refusals
	if !errors.As(err, &rs) || !strings.Contains(rs.Error(), "larger than") {
		t.Errorf("Load of an oversized file: %v", err)
	}
}

func TestTestdataValid(t *testing.T) {
	all, err := LoadDir("testdata/valid")
	if err != nil {
		t.Fatal(err)
	}
	if len(all) == 0 {
		t.Fatal("no scenarios in testdata/valid")
	}
}

// TestFormatExample keeps the example in FORMAT.md loadable.
func TestFormatExample(t *testing.T) {
	doc, err := os.ReadFile("FORMAT.md")
	if err != nil {
		t.Fatal(err)
	}
	_, rest, ok := strings.Cut(string(doc), "```yaml\n")
	example, _, ok2 := strings.Cut(rest, "```")
	if !ok || !ok2 {
		t.Fatal("FORMAT.md has no yaml example")
	}
	s, rs := Parse("scenarios/failure-recovery.yaml", []byte(example))
	if len(rs) > 0 {
		t.Fatalf("the FORMAT.md example is refused:\n%v", rs)
	}
	if len(s.Steps) != 3 {
		t.Errorf("example has %d steps, want 3", len(s.Steps))
	}
}
