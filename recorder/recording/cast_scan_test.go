package recording

import (
	"bytes"
	"compress/gzip"
	"encoding/base64"
	"encoding/hex"
	"errors"
	"path/filepath"
	"strings"
	"testing"

	"ptah.run/operator/recorder/credential"
	"ptah.run/operator/recorder/runs"
)

const planted = "hunter2-db-pass"

// steps is a scenario whose steps print outputs, one stdout line each.
func steps(outputs ...string) Scenario {
	s := Scenario{ID: "tricks", Title: "tricks"}
	for i, o := range outputs {
		e := Event{Step: i + 1, Note: "step", Command: "run"}
		for j, l := range strings.Split(o, "\n") {
			e.Output = append(e.Output, Line{T: float64(j) / 10, Stream: "stdout", Text: l})
		}
		s.Events = append(s.Events, e)
	}
	return s
}

// TestCastTricksAreRefused: each value below is shown whole by a player
// replaying the cast, but no step's output holds it, as written or as a
// terminal shows that step alone: only replaying the whole cast in one
// terminal finds it. The refusal names the step and stream that completed
// it, and the form, never the value.
func TestCastTricksAreRefused(t *testing.T) {
	sc := credential.NewScanner([]credential.Credential{{Value: []byte(planted), Kind: "a lab credential"}})
	// Each step's output is three lines below the last of the step
	// before: the note and the command come between.
	up := "\x1b[3A\x1b[4G"
	filler := strings.Repeat("filler\n", 40)
	cases := []struct {
		name string
		s    Scenario
		step int
	}{
		{"printed in two steps a player shows on one line", steps("hun", up+"ter2-db-pass"), 2},
		{"ESC 7 in one step, ESC 8 in the next", steps("hun\x1b7", "\x1b8ter2-db-pass"), 2},
		{"CSI s in one step, CSI u in the next", steps("hun\x1b[s", "\x1b[uter2-db-pass"), 2},
		{"CSI @ inserts the middle into the line a step before", steps("hunr2-db-pass", up+"\x1b[2@te"), 2},
		{"CSI P deletes what was between", steps("hunXXter2-db-pass", up+"\x1b[2P"), 2},
		{"a scroll region keeps the first half in place while the rest scrolls", steps("\x1b[2;30r\x1b[1;1H\x1b[2Khun\x1b[2;1H\n"+filler, "\x1b[1;4Hter2-db-pass\x1b[r"), 2},
		{"in the alternate screen, left before the cast ends", steps("\x1b[?1049h\x1b[5;1Hhun", "\x1b[5;4Hter2-db-pass", "\x1b[?1049l"), 2},
		{"overwritten by a later step after being shown", steps("hun", up+"ter2-db-pass", "\x1b[8A\x1b[2K\x1b[J"), 2},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			if err := Scan(sc, c.s); err != nil {
				t.Fatalf("a step alone shows it (the case tests nothing): %v", err)
			}
			if err := scanBytes(sc, "cast", Cast(c.s)); err != nil {
				t.Fatalf("the cast's bytes show it (the case tests nothing): %v", err)
			}
			err := scanCast(sc, c.s)
			var ce *CredentialError
			if !errors.As(err, &ce) {
				t.Fatalf("scanCast = %v, want a refusal", err)
			}
			want := "scenario tricks cast, step " + string(rune('0'+c.step)) + " stdout holds a lab credential (as a player shows the cast)"
			if !strings.Contains(err.Error(), want) {
				t.Errorf("refusal %q, want it to say %q", err, want)
			}
			if strings.Contains(err.Error(), "hunter") {
				t.Errorf("the refusal prints the value: %v", err)
			}
			dir := t.TempDir()
			if err := Publish(filepath.Join(dir, runs.File), &Recording{Scenarios: []Scenario{c.s}}, sc); !errors.As(err, &ce) {
				t.Errorf("publish = %v, want the refusal", err)
			}
		})
	}
}

// TestCommittedCastsReplayClean: replaying the committed census in a
// player's terminal refuses none of it (no false refusal), with a lab's
// worth of credentials, and the replay sees what it was given.
func TestCommittedCastsReplayClean(t *testing.T) {
	r, err := runs.Read(filepath.Join("..", "..", "demo", "recordings", runs.File))
	if err != nil {
		t.Fatal(err)
	}
	creds := benchCredentials(t)
	sc := credential.NewScanner(creds)
	for _, s := range r.Scenarios {
		if err := scanCast(sc, s); err != nil {
			t.Errorf("%s: %v", s.ID, err)
		}
	}
	// The same replay refuses the first scenario once its last line holds
	// a credential.
	s := r.Scenarios[0]
	e := &s.Events[len(s.Events)-1]
	e.Output = append(append([]Line(nil), e.Output...), Line{T: 99, Stream: "stdout", Text: "pw " + string(creds[0].Value)})
	if err := scanCast(sc, s); err == nil {
		t.Errorf("%s with a credential planted last: not refused", s.ID)
	}
}

// TestRefusalNamesStepStreamAndForm: the message says which step, which
// stream, in which form and what credential, never the value.
func TestRefusalNamesStepStreamAndForm(t *testing.T) {
	sc := credential.NewScanner([]credential.Credential{{Value: []byte(planted), Kind: "a lab credential"}})
	var gz bytes.Buffer
	w := gzip.NewWriter(&gz)
	_, _ = w.Write([]byte("password=" + planted))
	_ = w.Close()
	for _, c := range []struct {
		name, text, stream, want string
	}{
		{"gzip inside base64 at offset 1", "x" + base64.StdEncoding.EncodeToString(gz.Bytes()), "stderr",
			"scenario tricks step 2 stderr holds a lab credential (gzip inside base64 at offset 1)"},
		{"as a terminal shows it", "hun\x1b7XXXX\x1b8ter2-db-pass", "stdout",
			"scenario tricks step 2 stdout holds a lab credential (as a terminal shows it)"},
		{"hex", hex.EncodeToString([]byte(planted)), "terminal",
			"scenario tricks step 2 terminal holds a lab credential (hex)"},
	} {
		t.Run(c.name, func(t *testing.T) {
			s := steps("fine", "fine")
			s.Events[1].Output = append(s.Events[1].Output, Line{T: 1, Stream: c.stream, Text: c.text})
			err := Publish(filepath.Join(t.TempDir(), runs.File), &Recording{Scenarios: []Scenario{s}}, sc)
			if err == nil || !strings.Contains(err.Error(), c.want) {
				t.Errorf("refusal %v, want it to say %q", err, c.want)
			}
			if err != nil && strings.Contains(err.Error(), "hunter") {
				t.Errorf("the refusal prints the value: %v", err)
			}
		})
	}
}
