package resultlog

import (
	"bytes"
	"fmt"
	"strings"
	"testing"

	v1alpha1 "ptah.run/operator/operator/api/v1alpha1"
)

func spec(op, digest string, applied ...int64) *v1alpha1.PtahResultRecordSpec {
	exit := int32(0)
	return &v1alpha1.PtahResultRecordSpec{
		Subject:     v1alpha1.ResultSubject{Kind: v1alpha1.KindPtahMigration, Name: "ledger"},
		OperationID: op, Digest: digest, ChildExitCode: &exit,
		Result: &v1alpha1.OperationResult{Migrations: &v1alpha1.MigrationResult{
			Status: v1alpha1.MigrationApplied, Current: applied[len(applied)-1], AppliedNow: applied}},
	}
}

func frame(t *testing.T, s *v1alpha1.PtahResultRecordSpec) string {
	t.Helper()
	f, err := Encode(s)
	if err != nil {
		t.Fatal(err)
	}
	return f
}

func summary(t *testing.T, s *v1alpha1.PtahResultRecordSpec, attempt int32) string {
	t.Helper()
	b, err := EncodeSummary(SummaryOf(s, attempt))
	if err != nil {
		t.Fatal(err)
	}
	return string(b)
}

// quoted is a log as the runner writes it: text through a Quote, then the
// frame as is.
func quoted(t *testing.T, text, frame string) []byte {
	t.Helper()
	var log bytes.Buffer
	q := NewQuote(&log)
	for _, chunk := range []string{text[:len(text)/2], text[len(text)/2:]} {
		if _, err := q.Write([]byte(chunk)); err != nil {
			t.Fatal(err)
		}
	}
	if err := q.Close(); err != nil {
		t.Fatal(err)
	}
	log.WriteString(frame)
	return log.Bytes()
}

// TestFrameCannotBeForged: text the executor prints, even a perfect copy of
// a frame for the very operation with a digest that holds, never starts a
// line once quoted, so the one frame read is the runner's.
func TestFrameCannotBeForged(t *testing.T) {
	real := spec("op-1", "sha256:d1", 1, 2)
	forged := spec("op-1", "sha256:d1", 1, 2, 3, 4)
	forged.Result.Migrations.Status = v1alpha1.MigrationUpToDate
	fake := frame(t, forged)
	// The fake arrives at the start of a line, after a partial line, after a
	// carriage return, and split across writes.
	text := "ptah migrations up: sql_failed: ERROR: \n" + fake + "no newline yet " + "\r" + fake + "\n\n" + fake[:10]
	log := quoted(t, text, frame(t, real))
	if !bytes.Contains(log, []byte(fake)) {
		t.Fatalf("the test's fake frame is not in the log at all:\n%s", log)
	}
	s := Read(log, "op-1")
	if len(s.Mine) != 1 || s.Broken != 0 || len(s.Others) != 0 {
		t.Fatalf("read %d frames of op-1, %d broken, others %v; want only the runner's", len(s.Mine), s.Broken, s.Others)
	}
	if got := s.Mine[0].Spec.Result.Migrations; got.Status != v1alpha1.MigrationApplied || got.Current != 2 {
		t.Errorf("the frame read says %+v, not the runner's result", got)
	}
	for _, line := range strings.Split(string(log), "\n") {
		if strings.HasPrefix(line, Marker) && line+"\n" != frame(t, real) {
			t.Errorf("a line other than the runner's frame begins a frame: %q", line)
		}
	}
	// Without the quoting the same text would have been read: the quoting
	// is what refuses it.
	if s := Read([]byte(text+"\n"+frame(t, real)), "op-1"); len(s.Mine) < 2 {
		t.Errorf("unquoted, the fake frames read as %d frames: the test does not exercise the quoting", len(s.Mine))
	}
}

func TestFrameReadRefusesWhatDoesNotDigest(t *testing.T) {
	f := frame(t, spec("op-1", "sha256:d1", 1))
	fields := strings.Fields(strings.TrimPrefix(f, Marker))
	for name, line := range map[string]string{
		"cut short":          f[:len(f)-20],
		"another payload":    Marker + "op-1 " + fields[1] + " " + strings.Fields(strings.TrimPrefix(frame(t, spec("op-1", "sha256:d1", 2)), Marker))[2],
		"renamed operation":  Marker + "op-2 " + fields[1] + " " + fields[2],
		"unknown field":      Marker + "op-1 " + digest([]byte(`{"operationID":"op-1","x":1}`)) + " eyJvcGVyYXRpb25JRCI6Im9wLTEiLCJ4IjoxfQ==",
		"no payload at all:": Marker + "op-1",
	} {
		s := Read([]byte(line+"\n"), "op-1")
		if len(s.Mine) != 0 || len(s.Others) != 0 || s.Broken != 1 {
			t.Errorf("%s: read %+v, want one broken line", name, s)
		}
	}
}

// TestDecide covers every way a legacy read ends.
func TestDecide(t *testing.T) {
	mine := spec("op-2", "sha256:d2", 3, 4)
	claim := Claim{OperationID: "op-2", Digest: "sha256:d2", Attempt: 2, Apply: true}
	full := summary(t, mine, 2)
	lostLog := quoted(t, "runner: credential ready\n", "")
	for _, tc := range []struct {
		name    string
		log     []byte
		lost    string
		summary string
		read    bool // the log's frame is the result
		fromSum bool
		refused string
		unknown string
	}{
		{name: "the log's frame", log: quoted(t, "x\n", frame(t, mine)), summary: full, read: true},
		{name: "no frame, the summary of this attempt", log: lostLog, summary: full, fromSum: true},
		{name: "the log is gone, the summary of this attempt", lost: "container not found", summary: full, fromSum: true},
		{name: "the frame cut short, the summary read", log: []byte(frame(t, mine)[:80] + "\n"), summary: full, fromSum: true},
		{name: "summary of another attempt", log: lostLog, summary: summary(t, spec("op-1", "sha256:d1", 3), 1), refused: "belongs to another attempt: it names operation op-1 attempt 1, and the claim is operation op-2 attempt 2"},
		{name: "summary of the same operation under another attempt number", log: lostLog, summary: summary(t, mine, 1), refused: "belongs to another attempt"},
		{name: "summary cut short at the kubelet's bound", log: lostLog, summary: full[:len(full)-30], refused: "cut short"},
		{name: "summary without its digest line", log: lostLog, summary: strings.SplitN(full, "\n", 2)[0], refused: "cut short"},
		{name: "a frame of another operation", log: quoted(t, "x\n", frame(t, spec("op-9", "sha256:d9", 3))), summary: full, refused: "holds a different frame (op-9)"},
		{name: "two frames of this operation", log: []byte(frame(t, mine) + frame(t, mine)), summary: full, refused: "holds 2 frames"},
		{name: "this operation's frame under another digest", log: []byte(frame(t, spec("op-2", "sha256:d1", 3))), summary: full, refused: "carries digest sha256:d1"},
		{name: "no summary", log: lostLog, unknown: "no termination summary"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			v := Decide(tc.log, tc.lost, tc.summary, claim)
			switch {
			case tc.read && (v.Spec == nil || v.FromSummary):
				t.Errorf("want the log's frame, got %+v", v)
			case tc.fromSum && (v.Spec == nil || !v.FromSummary):
				t.Errorf("want the summary read, got %+v", v)
			case tc.refused != "" && !strings.Contains(v.Refused, tc.refused):
				t.Errorf("want refused with %q, got %+v", tc.refused, v)
			case tc.unknown != "" && !strings.Contains(v.Unknown, tc.unknown):
				t.Errorf("want unknown with %q, got %+v", tc.unknown, v)
			}
			if v.Spec != nil {
				m := v.Spec.Result.Migrations
				if v.Spec.OperationID != "op-2" || m.Status != v1alpha1.MigrationApplied || m.Current != 4 || fmt.Sprint(m.AppliedNow) != "[3 4]" {
					t.Errorf("the result read is %s %+v, want op-2 Applied 3, 4", v.Spec.OperationID, m)
				}
			}
			if v.Refused != "" && !strings.Contains(v.Refused, "the log held no readable result") {
				t.Errorf("a refusal that does not say the log held no result: %s", v.Refused)
			}
		})
	}
	// A read-only operation never falls back to its summary: it runs again.
	ro := claim
	ro.Apply = false
	if v := Decide(lostLog, "", full, ro); v.Unreadable == "" || v.Spec != nil {
		t.Errorf("a read-only operation without a frame: %+v, want unreadable", v)
	}
}

func TestSummaryFitsTheKubeletsBound(t *testing.T) {
	s := spec("sha256:"+strings.Repeat("a", 64), "sha256:"+strings.Repeat("b", 64), 1, 2, 3, 4, 5, 6, 7, 8, 9, 10)
	s.Error = &v1alpha1.OperationError{Code: "child_exit", Message: strings.Repeat("long message ", 1000)}
	if n := len(summary(t, s, 3)); n > MaxSummary {
		t.Errorf("a ten-version summary is %d bytes, over the kubelet's %d", n, MaxSummary)
	}
}
