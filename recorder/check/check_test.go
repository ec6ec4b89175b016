package check

import (
	"strings"
	"testing"

	"ptah.run/operator/recorder/execute"
	"ptah.run/operator/recorder/observe"
	"ptah.run/operator/recorder/scenario"
)

func ptr[T any](v T) *T { return &v }

// The claims of seed 002's table, produced from the scenario keys that
// state them.
func TestClaimGrammarMatchesThePublishedTable(t *testing.T) {
	storefront := func(c scenario.Condition) scenario.Observation {
		return scenario.Observation{Kind: "ptahschema", Name: "storefront", Generation: "current", Condition: &c}
	}
	cases := []struct {
		claim string
		want  string
	}{
		{CommandResult{scenario.Expect{Exit: ptr(0), StdoutContains: []string{"created"}}}.Claim(), `exits 0, prints "created"`},
		{ObjectChecks(storefront(scenario.Condition{Type: "ReconciliationFailed", Status: "True", Reason: "OperationFailed"}))[0].Claim(),
			`ptahschema/storefront: ReconciliationFailed=True (OperationFailed)`},
		{CommandResult{scenario.Expect{Exit: ptr(0), StdoutAbsent: []string{"nobody:nobody"}}}.Claim(), `exits 0, never prints "nobody:nobody"`},
		{ObjectChecks(storefront(scenario.Condition{Type: "InSync", Status: "True", Reason: "ScopedConverged"}))[0].Claim(),
			`ptahschema/storefront: InSync=True (ScopedConverged)`},
		{ObjectChecks(scenario.Observation{Kind: "PtahSchema", Name: "storefront", Condition: &scenario.Condition{Type: "ReconciliationFailed", Status: "False", Reason: "Succeeded"}})[0].Claim(),
			`ptahschema/storefront: ReconciliationFailed=False (Succeeded)`},
		{CommandResult{scenario.Expect{Exit: ptr(2), StdoutContains: []string{"a"}, StderrContains: []string{"denied"}, StderrAbsent: []string{"panic"}}}.Claim(),
			`exits 2, prints "a", prints "denied" on stderr, never prints "panic" on stderr`},
		{FieldIs{Subject: "ptahschema/storefront", Field: scenario.Field{Path: "status.phase", Equals: ptr("InSync")}}.Claim(), `ptahschema/storefront: status.phase = "InSync"`},
		{FieldIs{Subject: "ptahschema/storefront", Field: scenario.Field{Path: "status.applied.planFingerprint", NotEmpty: true}}.Claim(), `ptahschema/storefront: status.applied.planFingerprint is not empty`},
		{IsAbsent{Subject: "job/ptah-apply"}.Claim(), `job/ptah-apply: absent`},
	}
	for _, c := range cases {
		if c.claim != c.want {
			t.Errorf("claim = %s\n        want %s", c.claim, c.want)
		}
	}
}

func object(js string) observe.Object { return observe.Object{JSON: []byte(js)} }

func TestConditionCheckSaysWhyInOneLine(t *testing.T) {
	c := ConditionIs{Subject: "widget/a", Condition: scenario.Condition{Type: "InSync", Status: "True", Reason: "ScopedConverged"}, Current: true}
	cases := []struct {
		name string
		obj  observe.Object
		held bool
		why  string
	}{
		{"absent", observe.Object{}, false, "widget/a is absent"},
		{"no condition", object(`{"metadata":{"generation":1},"status":{"conditions":[{"type":"Ready","status":"True","reason":"X"}]}}`), false, "widget/a has no InSync condition"},
		{"other reason", object(`{"metadata":{"generation":1},"status":{"conditions":[{"type":"InSync","status":"False","reason":"Planning","observedGeneration":1}]}}`), false, "widget/a: InSync is False (Planning), want True (ScopedConverged)"},
		{"stale", object(`{"metadata":{"generation":4},"status":{"conditions":[{"type":"InSync","status":"True","reason":"ScopedConverged","observedGeneration":3}]}}`), false, "widget/a: InSync=True (ScopedConverged) is stale: observedGeneration 3 < generation 4"},
		{"held", object(`{"metadata":{"generation":4},"status":{"conditions":[{"type":"InSync","status":"True","reason":"ScopedConverged","observedGeneration":4,"lastTransitionTime":"2026-01-01T00:00:00Z"}]}}`), true, ""},
	}
	for _, tc := range cases {
		ev, held := c.Check(tc.obj)
		if held != tc.held || ev.Why != tc.why {
			t.Errorf("%s: held=%v why=%q, want held=%v why=%q", tc.name, held, ev.Why, tc.held, tc.why)
		}
		if strings.Contains(ev.Why, "\n") {
			t.Errorf("%s: why spans lines: %q", tc.name, ev.Why)
		}
	}
	stale := object(`{"metadata":{"generation":4},"status":{"conditions":[{"type":"InSync","status":"True","reason":"ScopedConverged","observedGeneration":3}]}}`)
	c.Current = false
	if _, held := c.Check(stale); !held {
		t.Errorf("without generation: current a matching condition of an older generation should hold")
	}
}

func TestFieldAndAbsenceChecks(t *testing.T) {
	obj := object(`{"status":{"phase":"Failed","conditions":[{"type":"InSync","reason":"Planning"}],"empty":""}}`)
	cases := []struct {
		c    ObjectCheck
		obj  observe.Object
		held bool
	}{
		{FieldIs{"w/a", scenario.Field{Path: "status.phase", Equals: ptr("Failed")}}, obj, true},
		{FieldIs{"w/a", scenario.Field{Path: "status.phase", Equals: ptr("InSync")}}, obj, false},
		{FieldIs{"w/a", scenario.Field{Path: `status.conditions.#(type=="InSync").reason`, Equals: ptr("Planning")}}, obj, true},
		{FieldIs{"w/a", scenario.Field{Path: "status.empty", NotEmpty: true}}, obj, false},
		{FieldIs{"w/a", scenario.Field{Path: "status.missing", NotEmpty: true}}, obj, false},
		{FieldIs{"w/a", scenario.Field{Path: "status.phase", NotEmpty: true}}, obj, true},
		{IsAbsent{"w/a"}, obj, false},
		{IsAbsent{"w/a"}, observe.Object{}, true},
	}
	for _, tc := range cases {
		if _, held := tc.c.Check(tc.obj); held != tc.held {
			t.Errorf("%s: held = %v, want %v", tc.c.Claim(), held, tc.held)
		}
	}
}

func TestCommandResultCheck(t *testing.T) {
	res := execute.Result{Exit: 0, Chunks: []execute.Chunk{
		{Stream: execute.Stdout, Data: []byte("ptahschema/storefront created\n")},
		{Stream: execute.Stderr, Data: []byte("warning: nobody:nobody\n")},
	}}
	cases := []struct {
		expect scenario.Expect
		held   bool
		why    string
	}{
		{scenario.Expect{Exit: ptr(0), StdoutContains: []string{"created"}}, true, ""},
		{scenario.Expect{Exit: ptr(0), StdoutAbsent: []string{"nobody:nobody"}}, true, ""},
		{scenario.Expect{Exit: ptr(0), StderrAbsent: []string{"nobody:nobody"}}, false, `printed "nobody:nobody" on stderr`},
		{scenario.Expect{Exit: ptr(1), StdoutContains: []string{"patched"}}, false, `exited 0; did not print "patched"`},
	}
	for _, tc := range cases {
		c := CommandResult{tc.expect}
		ev, held := c.Check(res)
		if held != tc.held || ev.Why != tc.why || ev.Exit == nil || *ev.Exit != 0 {
			t.Errorf("%s: held=%v why=%q exit=%v, want held=%v why=%q", c.Claim(), held, ev.Why, ev.Exit, tc.held, tc.why)
		}
	}
}
