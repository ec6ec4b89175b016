package main

import (
	"bytes"
	"fmt"
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"testing"
)

func runCheck(args ...string) (int, string, string) {
	var stdout, stderr bytes.Buffer
	code := run(args, &stdout, &stderr)
	return code, stdout.String(), stderr.String()
}

func TestCheckValid(t *testing.T) {
	code, stdout, stderr := runCheck("-check", "-scenarios", "testdata/valid")
	if code != 0 {
		t.Fatalf("exit %d, want 0; stderr:\n%s", code, stderr)
	}
	if !regexp.MustCompile(`^3 scenarios, \d+ steps: valid\n$`).MatchString(stdout) {
		t.Errorf("stdout %q, want one summary line", stdout)
	}
}

// TestCheckInvalid runs every file of testdata/invalid on its own: each
// must be refused (exit 1) with the text its first line names.
func TestCheckInvalid(t *testing.T) {
	files, err := filepath.Glob("testdata/invalid/*.yaml")
	if err != nil || len(files) == 0 {
		t.Fatalf("no invalid scenarios: %v", err)
	}
	for _, f := range files {
		t.Run(strings.TrimSuffix(filepath.Base(f), ".yaml"), func(t *testing.T) {
			data, err := os.ReadFile(f)
			if err != nil {
				t.Fatal(err)
			}
			first, _, _ := strings.Cut(string(data), "\n")
			want, ok := strings.CutPrefix(first, "# want: ")
			if !ok {
				t.Fatalf("%s does not start with # want:", f)
			}
			code, stdout, stderr := runCheck("-check", "-scenarios", f)
			if code != 1 {
				t.Fatalf("exit %d, want 1; stdout %q stderr:\n%s", code, stdout, stderr)
			}
			if !strings.Contains(stderr, f+": ") || !strings.Contains(stderr, want) {
				t.Errorf("stderr lacks %q for %s:\n%s", want, f, stderr)
			}
		})
	}
}

// TestCheckListsEveryRefusal: a folder of invalid files is refused once
// per refusal, one per line, every file named.
func TestCheckListsEveryRefusal(t *testing.T) {
	files, _ := filepath.Glob("testdata/invalid/*.yaml")
	code, _, stderr := runCheck("-check", "-scenarios", "testdata/invalid")
	if code != 1 {
		t.Fatalf("exit %d, want 1", code)
	}
	lines := strings.Split(strings.TrimSpace(stderr), "\n")
	for _, f := range files {
		if !strings.Contains(stderr, f+": ") {
			t.Errorf("no refusal names %s", f)
		}
	}
	last := lines[len(lines)-1]
	if !regexp.MustCompile(fmt.Sprintf(`^record: %d refusals in %d files$`, len(lines)-1, len(files))).MatchString(last) {
		t.Errorf("last line %q does not count %d refusals in %d files", last, len(lines)-1, len(files))
	}
	for _, l := range lines[:len(lines)-1] {
		if !strings.HasPrefix(l, "testdata/invalid/") || !strings.Contains(l, "; ") {
			t.Errorf("refusal line %q does not name its file and what to write instead", l)
		}
	}
}

func TestUsageErrors(t *testing.T) {
	for name, args := range map[string][]string{
		"unknown flag":       {"-check", "-frobnicate"},
		"missing folder":     {"-check", "-scenarios", filepath.Join(t.TempDir(), "missing")},
		"positional":         {"-check", "testdata/valid"},
		"check and verify":   {"-check", "-verify"},
		"flag without value": {"-check", "-scenarios"},
		"only unknown":       {"-check", "-scenarios", "testdata/valid", "-only", "nope"},
	} {
		t.Run(name, func(t *testing.T) {
			code, stdout, stderr := runCheck(args...)
			if code != 2 {
				t.Errorf("exit %d, want 2 (stdout %q, stderr %q)", code, stdout, stderr)
			}
			if stderr == "" {
				t.Error("nothing on stderr")
			}
		})
	}
}

func TestCheckEmptyFolder(t *testing.T) {
	code, _, stderr := runCheck("-check", "-scenarios", t.TempDir())
	if code != 1 || !strings.Contains(stderr, "no scenario files") {
		t.Errorf("exit %d stderr %q, want 1 and a refusal", code, stderr)
	}
}
