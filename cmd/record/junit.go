package main

import (
	"encoding/json"
	"encoding/xml"
	"fmt"
	"io"
	"os"
	"strconv"
	"strings"

	"ptah.run/operator/recorder/credential"
	"ptah.run/operator/recorder/recording"
	"ptah.run/operator/recorder/runs"
	"ptah.run/operator/recorder/session"
	"ptah.run/operator/recorder/terminal"
)

// JUnit XML as CI systems read it: one testsuite per scenario, one testcase
// per check, with its time and the transcript of its step.
type junitSuites struct {
	XMLName  xml.Name     `xml:"testsuites"`
	Name     string       `xml:"name,attr"`
	Tests    int          `xml:"tests,attr"`
	Failures int          `xml:"failures,attr"`
	Errors   int          `xml:"errors,attr"`
	Time     string       `xml:"time,attr"`
	Suites   []junitSuite `xml:"testsuite"`
}

type junitSuite struct {
	Name      string      `xml:"name,attr"`
	Tests     int         `xml:"tests,attr"`
	Failures  int         `xml:"failures,attr"`
	Errors    int         `xml:"errors,attr"`
	Time      string      `xml:"time,attr"`
	Timestamp string      `xml:"timestamp,attr,omitempty"`
	Cases     []junitCase `xml:"testcase"`
}

type junitCase struct {
	Name      string        `xml:"name,attr"`
	ClassName string        `xml:"classname,attr"`
	Time      string        `xml:"time,attr"`
	Failure   *junitMessage `xml:"failure,omitempty"`
	Error     *junitMessage `xml:"error,omitempty"`
	SystemOut string        `xml:"system-out,omitempty"`
}

type junitMessage struct {
	Message string `xml:"message,attr"`
	Type    string `xml:"type,attr"`
	Body    string `xml:",chardata"`
}

// ran is one scenario's checks and the steps that ran, for the report;
// failed is set when it stopped.
type ran struct {
	scenario string
	at       string
	checks   []runs.Check
	events   []runs.Event
	failed   *session.Failure
}

func ranOf(s runs.Scenario) ran {
	return ran{scenario: s.ID, at: s.RecordedAt, checks: s.Checks, events: s.Events}
}

func ranFailed(f *session.Failure) ran {
	return ran{scenario: f.Scenario, checks: f.Checks, events: f.Events, failed: f}
}

// writeJUnit writes the report when -junit names a file. The report is
// scanned for credentials like everything else the recorder writes; it is
// skipped, not redacted.
func writeJUnit(file string, sc *credential.Scanner, all []ran, stderr io.Writer) {
	if file == "" {
		return
	}
	raw, err := junitReport(all)
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

func junitReport(all []ran) ([]byte, error) {
	top := junitSuites{Name: "record"}
	var total float64
	for _, r := range all {
		s := junitSuite{Name: r.scenario, Timestamp: r.at}
		var spent float64
		for _, c := range r.checks {
			secs := checkSeconds(c, r.events)
			spent += secs
			tc := junitCase{Name: "step " + strconv.Itoa(c.Step) + ": " + c.Claim, ClassName: "record." + r.scenario,
				Time: seconds(secs), SystemOut: transcript(r.events, c.Step)}
			if !c.Held {
				s.Failures++
				ev, _ := json.MarshalIndent(c.Evidence, "", "  ")
				body := "evidence: " + string(ev)
				if r.failed != nil {
					body += "\n" + r.failed.Error()
				}
				tc.Failure = &junitMessage{Message: c.Evidence.Why, Type: "check", Body: body}
			}
			s.Cases = append(s.Cases, tc)
		}
		if f := r.failed; f != nil && f.Err != nil {
			s.Errors++
			s.Cases = append(s.Cases, junitCase{Name: fmt.Sprintf("step %d", f.Step), ClassName: "record." + r.scenario, Time: seconds(0),
				Error: &junitMessage{Message: f.Err.Error(), Type: "error", Body: f.Error()}, SystemOut: transcript(r.events, f.Step)})
		}
		s.Tests = len(s.Cases)
		s.Time = seconds(spent)
		total += spent
		top.Tests += s.Tests
		top.Failures += s.Failures
		top.Errors += s.Errors
		top.Suites = append(top.Suites, s)
	}
	top.Time = seconds(total)
	raw, err := xml.MarshalIndent(top, "", "  ")
	if err != nil {
		return nil, fmt.Errorf("encode JUnit report: %w", err)
	}
	return append([]byte(xml.Header), append(raw, '\n')...), nil
}

// checkSeconds is how long a check took to judge: an await's or a retry's
// wait, the command's run for a command's check, nothing for a single read.
func checkSeconds(c runs.Check, events []runs.Event) float64 {
	if c.Evidence.WaitSeconds != nil {
		return *c.Evidence.WaitSeconds
	}
	if c.Evidence.Exit != nil {
		for _, e := range events {
			if e.Step == c.Step {
				return e.Seconds
			}
		}
	}
	return 0
}

// transcript is the step's command and what it printed, as a terminal
// shows it; empty when the step's command did not run.
func transcript(events []runs.Event, step int) string {
	for _, e := range events {
		if e.Step != step {
			continue
		}
		var b strings.Builder
		b.WriteString("# " + e.Note + "\n$ " + e.Command + "\n")
		for _, l := range e.Output {
			b.WriteString(terminal.Line(l.Text) + "\n")
		}
		return b.String()
	}
	return ""
}

func seconds(s float64) string { return strconv.FormatFloat(s, 'f', 3, 64) }
