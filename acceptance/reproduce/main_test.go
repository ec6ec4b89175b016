package main

import (
	"bytes"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

func TestUsage(t *testing.T) {
	cases := map[string]struct {
		args []string
		code int
		say  string
	}{
		"two scenarios": {[]string{"a", "b"}, 2, "one scenario at a time"},
		"unknown flag":  {[]string{"-only", "x"}, 2, "usage: reproduce"},
		// The default is seed 002's scenario: it is looked up, and refused
		// here only because this folder holds no scenarios.
		"default scenario": {[]string{"-scenarios", filepath.Join(t.TempDir(), "none")}, 1, "reproduce: "},
	}
	for name, c := range cases {
		t.Run(name, func(t *testing.T) {
			var stdout, stderr bytes.Buffer
			code := run(c.args, &stdout, &stderr)
			if code != c.code || !strings.Contains(stderr.String(), c.say) {
				t.Errorf("exit %d, stderr %q; want exit %d saying %q", code, stderr.String(), c.code, c.say)
			}
			if stdout.Len() > 0 {
				t.Errorf("a refusal printed %q", stdout.String())
			}
		})
	}
}

func TestDefaultIsTheSeedsScenario(t *testing.T) {
	var stdout, stderr bytes.Buffer
	runs := filepath.Join(t.TempDir(), "runs.json")
	if err := os.WriteFile(runs, []byte(`{"scenarios":[]}`), 0o644); err != nil {
		t.Fatal(err)
	}
	code := run([]string{"-scenarios", "../../scenarios", "-recording", runs}, &stdout, &stderr)
	if code != 1 || !strings.Contains(stderr.String(), "scenario failure-recovery is not in") {
		t.Errorf("exit %d, stderr %q: with no ID, failure-recovery should be looked up in the recording", code, stderr.String())
	}
}
