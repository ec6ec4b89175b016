package main

import (
	"encoding/xml"
	"fmt"
	"io"
	"os"
	"strconv"

	checks "ptah.run/operator/recorder/check"
	"ptah.run/operator/recorder/credential"
	"ptah.run/operator/recorder/recording"
	"ptah.run/operator/recorder/session"
)

// JUnit XML as CI systems read it: one testsuite, one testcase per check.
type junitSuite struct {
	XMLName  xml.Name    `xml:"testsuite"`
	Name     string      `xml:"name,attr"`
	Tests    int         `xml:"tests,attr"`
	Failures int         `xml:"failures,attr"`
	Errors   int         `xml:"errors,attr"`
	Cases    []junitCase `xml:"testcase"`
}

type junitCase struct {
	Name      string        `xml:"name,attr"`
	ClassName string        `xml:"classname,attr"`
	Failure   *junitMessage `xml:"failure,omitempty"`
	Error     *junitMessage `xml:"error,omitempty"`
}

type junitMessage struct {
	Message string `xml:"message,attr"`
	Body    string `xml:",chardata"`
}

// ran is the checks of one scenario, for the report.
type ran struct {
	scenario string
	checks   []checks.Check
}

// writeJUnit writes the report when -junit names a file. failed is the
// failure that ended the run, if any. The report is scanned for credentials
// like everything else the recorder writes; it is skipped, not redacted.
func writeJUnit(file string, sc *credential.Scanner, runs []ran, failed *session.Failure, stderr io.Writer) {
	if file == "" {
		return
	}
	raw, err := junitReport(runs, failed)
	if err == nil {
		err = recording.ScanText(sc, "the JUnit report", string(raw))
	}
	if err == nil {
		err = os.WriteFile(file, raw, 0o644)
	}
	if err != nil {
		fmt.Fprintf(stderr, "record: JUnit report %s not written: %v\n", file, err)
	}
}

func junitReport(runs []ran, failed *session.Failure) ([]byte, error) {
	s := junitSuite{Name: "record"}
	if failed != nil {
		runs = append(runs, ran{failed.Scenario, failed.Checks})
	}
	for _, r := range runs {
		for _, c := range r.checks {
			tc := junitCase{Name: "step " + strconv.Itoa(c.Step) + ": " + c.Claim, ClassName: r.scenario}
			if !c.Held {
				s.Failures++
				body := c.Evidence.Why
				if failed != nil {
					body = failed.Error()
				}
				tc.Failure = &junitMessage{Message: c.Evidence.Why, Body: body}
			}
			s.Cases = append(s.Cases, tc)
		}
	}
	if failed != nil && failed.Err != nil {
		s.Errors++
		s.Cases = append(s.Cases, junitCase{Name: fmt.Sprintf("step %d", failed.Step), ClassName: failed.Scenario,
			Error: &junitMessage{Message: failed.Err.Error(), Body: failed.Error()}})
	}
	s.Tests = len(s.Cases)
	raw, err := xml.MarshalIndent(s, "", "  ")
	if err != nil {
		return nil, fmt.Errorf("encode JUnit report: %w", err)
	}
	return append([]byte(xml.Header), append(raw, '\n')...), nil
}
