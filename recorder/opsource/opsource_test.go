package opsource

import (
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"testing"
)

func write(t *testing.T, dir, name, body string) {
	t.Helper()
	p := filepath.Join(dir, name)
	if err := os.MkdirAll(filepath.Dir(p), 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(p, []byte(body), 0o644); err != nil {
		t.Fatal(err)
	}
}

func TestReadCountsWhatTheImagesAreBuiltFrom(t *testing.T) {
	dir := t.TempDir()
	if out, err := exec.Command("git", "-C", dir, "init", "-q").CombinedOutput(); err != nil {
		t.Fatalf("git init: %v\n%s", err, out)
	}
	write(t, dir, ".gitignore", "operator/bin/\n")
	write(t, dir, "operator/a.go", "package a\n")
	write(t, dir, "operator/a_test.go", "package a\n")
	write(t, dir, "operator/testdata/x.sql", "select 1;\n")
	write(t, dir, "operator/bin/manager", "ignored build output\n")
	write(t, dir, "cmd/manager/main.go", "package main\n")
	write(t, dir, "cmd/record/main.go", "package main\n")
	write(t, dir, "go.mod", "module x\n")

	src, err := Read(dir) // nothing committed: untracked files count
	if err != nil {
		t.Fatal(err)
	}
	var names []string
	for n := range src.Files {
		names = append(names, n)
	}
	slices.Sort(names)
	if want := []string{"cmd/manager/main.go", "go.mod", "operator/a.go"}; !slices.Equal(names, want) {
		t.Errorf("files %v, want %v", names, want)
	}
	if src.Digest != Digest(src.Files) {
		t.Errorf("digest %s is not the digest of its files", src.Digest)
	}

	write(t, dir, "operator/a.go", "package a\n\nvar X = 1\n")
	now, err := Read(dir)
	if err != nil {
		t.Fatal(err)
	}
	if now.Digest == src.Digest {
		t.Fatal("a one-line change kept the digest")
	}
	if got := Changes(src.Files, now.Files); !slices.Equal(got, []string{"changed operator/a.go"}) {
		t.Errorf("changes %v", got)
	}
}

func TestChanges(t *testing.T) {
	was := map[string]string{"a": "1", "b": "2", "c": "3"}
	now := map[string]string{"a": "1", "b": "9", "d": "4"}
	want := []string{"changed b", "removed c", "added d"}
	if got := Changes(was, now); !slices.Equal(got, want) {
		t.Errorf("changes %v, want %v", got, want)
	}
	if got := Changes(was, was); got != nil {
		t.Errorf("no change reported %v", got)
	}
}

// TestPathsCoverTheBinaries: every package of this module that the
// manager, the runner, ptah or the plugin is built from lies under Paths,
// so no change to what the lab runs goes unseen by a recording's census.
func TestPathsCoverTheBinaries(t *testing.T) {
	root, err := filepath.Abs(filepath.Join("..", ".."))
	if err != nil {
		t.Fatal(err)
	}
	cmd := exec.Command("go", "list", "-deps", "-f", "{{if not .Standard}}{{.ImportPath}} {{.Dir}}{{end}}",
		"./cmd/manager", "./cmd/ptah", "./cmd/ptah-runner", "./cmd/kubectl-ptah")
	cmd.Dir = root
	out, err := cmd.Output()
	if err != nil {
		t.Fatalf("go list the binaries' packages: %v", err)
	}
	own := 0
	for _, line := range strings.Split(strings.TrimSpace(string(out)), "\n") {
		pkg, dir, _ := strings.Cut(line, " ")
		rel, err := filepath.Rel(root, dir)
		if err != nil || strings.HasPrefix(rel, "..") {
			continue // a dependency outside the module
		}
		own++
		if !slices.ContainsFunc(Paths, func(p string) bool { return rel == p || strings.HasPrefix(rel, p+"/") }) {
			t.Errorf("package %s (%s) goes into the binaries but is not under opsource.Paths: a change to it would not make a recording stale", pkg, rel)
		}
	}
	if own == 0 {
		t.Fatal("go list named no package of this module")
	}
}
