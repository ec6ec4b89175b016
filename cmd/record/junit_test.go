package main

import (
	"encoding/xml"
	"errors"
	"strconv"
	"strings"
	"testing"

	"ptah.run/operator/recorder/runs"
	"ptah.run/operator/recorder/session"
)

// What a CI tool reads, declared apart from the writer's types so that a
// renamed element or attribute fails here.
type readSuites struct {
	XMLName  xml.Name `xml:"testsuites"`
	Tests    string   `xml:"tests,attr"`
	Failures string   `xml:"failures,attr"`
	Errors   string   `xml:"errors,attr"`
	Suites   []struct {
		Name     string `xml:"name,attr"`
		Tests    string `xml:"tests,attr"`
		Failures string `xml:"failures,attr"`
		Time     string `xml:"time,attr"`
		Cases    []struct {
			Name      string `xml:"name,attr"`
			ClassName string `xml:"classname,attr"`
			Time      string `xml:"time,attr"`
			Failure   *struct {
				Message string `xml:"message,attr"`
				Body    string `xml:",chardata"`
			} `xml:"failure"`
			Error *struct {
				Message string `xml:"message,attr"`
			} `xml:"error"`
			SystemOut string `xml:"system-out"`
		} `xml:"testcase"`
	} `xml:"testsuite"`
}

func TestJUnitOneSuitePerScenarioOneCasePerCheck(t *testing.T) {
	exit0, exit1 := 0, 1
	wait := 2.5
	held := runs.Scenario{ID: "first-apply", RecordedAt: "2026-12-01T10:00:00Z",
		Events: []runs.Event{{Step: 1, Note: "Apply it.", Command: "kubectl apply -f x.yaml", Seconds: 0.75,
			Output: []runs.Line{{Text: "\x1b[32mptahschema/storefront created\x1b[0m"}}}},
		Checks: []runs.Check{
			{Step: 1, Claim: `exits 0, prints "created"`, Held: true, Evidence: runs.Evidence{Exit: &exit0}},
			{Step: 1, Claim: "ptahschema/storefront: InSync=True (ScopedConverged)", Held: true, Evidence: runs.Evidence{WaitSeconds: &wait}},
		}}
	failed := &session.Failure{Scenario: "drift", Step: 2,
		Events: []runs.Event{{Step: 2, Note: "Read it.", Command: "kubectl get ptahs", Seconds: 0.25, Output: []runs.Line{{Text: "storefront Drifted"}}}},
		Checks: []runs.Check{{Step: 2, Claim: "exits 0", Held: false, Evidence: runs.Evidence{Exit: &exit1, Why: "exited 1"}}}}
	broken := &session.Failure{Scenario: "lab-setup", Step: 1, Err: errors.New("reset command 1 exited 3")}

	raw, err := junitReport([]ran{ranOf(held), ranFailed(failed), ranFailed(broken)})
	if err != nil {
		t.Fatal(err)
	}
	var got readSuites
	if err := xml.Unmarshal(raw, &got); err != nil {
		t.Fatalf("the report does not parse: %v\n%s", err, raw)
	}
	if got.Tests != "4" || got.Failures != "1" || got.Errors != "1" || len(got.Suites) != 3 {
		t.Fatalf("testsuites tests=%s failures=%s errors=%s suites=%d\n%s", got.Tests, got.Failures, got.Errors, len(got.Suites), raw)
	}
	first := got.Suites[0]
	if first.Name != "first-apply" || first.Tests != "2" || first.Failures != "0" || first.Time != "3.250" || len(first.Cases) != 2 {
		t.Errorf("suite %+v", first)
	}
	for _, c := range first.Cases {
		if _, err := strconv.ParseFloat(c.Time, 64); err != nil || c.ClassName != "record.first-apply" || !strings.HasPrefix(c.Name, "step 1: ") {
			t.Errorf("testcase %+v", c)
		}
		if !strings.Contains(c.SystemOut, "$ kubectl apply -f x.yaml\nptahschema/storefront created\n") || strings.Contains(c.SystemOut, "\x1b") {
			t.Errorf("system-out is not the step's transcript as a terminal shows it: %q", c.SystemOut)
		}
	}
	if first.Cases[0].Time != "0.750" || first.Cases[1].Time != "2.500" {
		t.Errorf("times %s, %s: want the command's run, then the await's wait", first.Cases[0].Time, first.Cases[1].Time)
	}
	drift := got.Suites[1].Cases[0]
	if drift.Failure == nil || drift.Failure.Message != "exited 1" || !strings.Contains(drift.Failure.Body, `"exit": 1`) ||
		!strings.Contains(drift.Failure.Body, "nothing was written") || !strings.Contains(drift.SystemOut, "storefront Drifted") {
		t.Errorf("failed testcase %+v", drift)
	}
	if c := got.Suites[2].Cases; len(c) != 1 || c[0].Error == nil || !strings.Contains(c[0].Error.Message, "reset command 1 exited 3") {
		t.Errorf("errored suite %+v", got.Suites[2])
	}
}
