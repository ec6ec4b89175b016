package lab

import (
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
)

// TestLabCommandRunsTheCheckoutsCode holds demo/bin/lab's shortcut: it
// runs the binary it built without go build only while the tree is clean
// at the commit that binary was built from. In a clone of this checkout,
// each way a tree can stop being that commit (a tracked file changed, an
// untracked file added, a new commit) runs a binary that shows the change,
// and a second call on an unchanged clean tree does not build again.
func TestLabCommandRunsTheCheckoutsCode(t *testing.T) {
	if _, err := exec.LookPath("git"); err != nil {
		t.Skip(err)
	}
	root, err := filepath.Abs("../..")
	if err != nil {
		t.Fatal(err)
	}
	dir := filepath.Join(t.TempDir(), "clone")
	git := func(args ...string) string {
		t.Helper()
		cmd := exec.Command("git", append([]string{"-C", dir, "-c", "user.name=t", "-c", "user.email=t@example.test"}, args...)...)
		out, err := cmd.CombinedOutput()
		if err != nil {
			t.Fatalf("git %v: %v: %s", args, err, out)
		}
		return strings.TrimSpace(string(out))
	}
	if out, err := exec.Command("git", "clone", "-q", "--shared", root, dir).CombinedOutput(); err != nil {
		t.Skipf("this checkout cannot be cloned (%v: %s)", err, out)
	}
	bin := filepath.Join(dir, "demo", ".lab", "bin", "lab")
	// A go first on PATH that notes each call: go build leaves an
	// up-to-date binary as it was, so its file cannot tell whether a build
	// ran.
	goBin, err := exec.LookPath("go")
	if err != nil {
		t.Skip(err)
	}
	shim := t.TempDir()
	calls := filepath.Join(shim, "calls")
	script := fmt.Sprintf("#!/bin/sh\necho \"$*\" >> %q\nexec %q \"$@\"\n", calls, goBin)
	if err := os.WriteFile(filepath.Join(shim, "go"), []byte(script), 0o755); err != nil {
		t.Fatal(err)
	}
	builds := func() int {
		b, _ := os.ReadFile(calls)
		return strings.Count(string(b), "build")
	}
	// lab prints its usage for help (exit status 2).
	lab := func() string {
		t.Helper()
		cmd := exec.Command(filepath.Join(dir, "demo", "bin", "lab"), "help")
		cmd.Env = append(os.Environ(), "PATH="+shim+string(os.PathListSeparator)+os.Getenv("PATH"))
		out, _ := cmd.CombinedOutput()
		if !strings.Contains(string(out), "usage: lab VERB") {
			t.Fatalf("demo/bin/lab help printed %q", out)
		}
		return string(out)
	}
	commitFile := func() string {
		b, _ := os.ReadFile(bin + ".commit")
		return strings.TrimSpace(string(b))
	}
	edit := func(path, from, to string) {
		t.Helper()
		p := filepath.Join(dir, path)
		b, err := os.ReadFile(p)
		if err != nil {
			t.Fatal(err)
		}
		if !strings.Contains(string(b), from) {
			t.Fatalf("%s holds no %q", path, from)
		}
		if err := os.WriteFile(p, []byte(strings.Replace(string(b), from, to, 1)), 0o644); err != nil {
			t.Fatal(err)
		}
	}

	lab()
	if head := git("rev-parse", "HEAD"); commitFile() != head {
		t.Fatalf("built on a clean tree at %s, the binary says %q", head, commitFile())
	}
	if builds() != 1 {
		t.Fatalf("the first call ran go build %d times, want once", builds())
	}
	lab()
	if builds() != 1 {
		t.Errorf("a clean tree at the binary's commit built it again")
	}

	edit("cmd/lab/main.go", "usage: lab VERB", "usage: lab VERB (a tracked change)")
	if out := lab(); !strings.Contains(out, "(a tracked change)") {
		t.Errorf("with a tracked file changed, lab ran the old binary: %q", out)
	}
	if commitFile() != "" {
		t.Errorf("a binary built from a changed tree is said to be commit %s", commitFile())
	}
	git("checkout", "cmd/lab/main.go")
	// Clean again: built again, and the binary is the commit's once more.
	if out := lab(); strings.Contains(out, "(a tracked change)") || commitFile() != git("rev-parse", "HEAD") {
		t.Fatalf("back on a clean tree, lab ran %q built from %q", out, commitFile())
	}

	extra := filepath.Join(dir, "cmd", "lab", "zz_untracked.go")
	if err := os.WriteFile(extra, []byte("package main\n\nfunc init() { println(\"an untracked file\") }\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	if out := lab(); !strings.Contains(out, "an untracked file") {
		t.Errorf("with an untracked file added, lab ran a binary without it: %q", out)
	}
	if err := os.Remove(extra); err != nil {
		t.Fatal(err)
	}

	edit("cmd/lab/main.go", "usage: lab VERB", "usage: lab VERB (a new commit)")
	git("commit", "-qam", "a new commit")
	if out := lab(); !strings.Contains(out, "(a new commit)") {
		t.Errorf("at a new commit, lab ran the binary of the old one: %q", out)
	}
	if head := git("rev-parse", "HEAD"); commitFile() != head {
		t.Errorf("built on a clean tree at %s, the binary says %q", head, commitFile())
	}
}
