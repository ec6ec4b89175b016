package v1alpha1_test

import (
	"bufio"
	"os"
	"reflect"
	"strings"
	"testing"

	v1alpha1 "ptah.run/operator/operator/api/v1alpha1"
)

// referenceRows reads the reason table copied from the Events reference (seed
// 000): a header line, then one row per reason, "Reason Type Kinds What".
func referenceRows(t *testing.T) []v1alpha1.EventReason {
	t.Helper()
	f, err := os.Open("testdata/events-reference.txt")
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	sc := bufio.NewScanner(f)
	sc.Buffer(make([]byte, 64*1024), 1024*1024)
	if !sc.Scan() || sc.Text() != "Reason Type Recorded on What it says" {
		t.Fatalf("events-reference.txt: first line is not the table header: %q", sc.Text())
	}
	var rows []v1alpha1.EventReason
	for sc.Scan() {
		words := strings.Fields(sc.Text())
		if len(words) < 3 {
			t.Fatalf("events-reference.txt: short row %q", sc.Text())
		}
		row := v1alpha1.EventReason{Reason: words[0]}
		rest := words[1:]
		if len(rest) > 2 && rest[1] == "or" {
			row.Types, rest = []string{rest[0], rest[2]}, rest[3:]
		} else {
			row.Types, rest = []string{rest[0]}, rest[1:]
		}
		// Kinds are a comma-separated list of Ptah* names; the description
		// starts at the first word after one without a trailing comma.
		for len(rest) > 0 && strings.HasPrefix(rest[0], "Ptah") {
			kind, more := strings.CutSuffix(rest[0], ",")
			row.On, rest = append(row.On, kind), rest[1:]
			if !more {
				break
			}
		}
		if len(row.On) == 0 {
			t.Fatalf("events-reference.txt: no kind in row %q", sc.Text())
		}
		rows = append(rows, row)
	}
	if err := sc.Err(); err != nil {
		t.Fatal(err)
	}
	return rows
}

func TestEventReasonsMatchReference(t *testing.T) {
	want := referenceRows(t)
	if len(want) != 29 {
		t.Fatalf("the reference has %d reasons, expected the seed's 29", len(want))
	}
	got := map[string]v1alpha1.EventReason{}
	for _, r := range v1alpha1.EventReasons {
		if _, dup := got[r.Reason]; dup {
			t.Errorf("EventReasons lists %s twice", r.Reason)
		}
		got[r.Reason] = r
	}
	for _, w := range want {
		g, ok := got[w.Reason]
		if !ok {
			t.Errorf("%s: in the reference, missing from EventReasons", w.Reason)
			continue
		}
		if !reflect.DeepEqual(g.Types, w.Types) {
			t.Errorf("%s: types %v, reference says %v", w.Reason, g.Types, w.Types)
		}
		if !reflect.DeepEqual(g.On, w.On) {
			t.Errorf("%s: recorded on %v, reference says %v", w.Reason, g.On, w.On)
		}
		delete(got, w.Reason)
	}
	for r := range got {
		t.Errorf("%s: in EventReasons, not in the reference", r)
	}
}
