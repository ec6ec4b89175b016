package opsource

import (
	"os"
	"os/exec"
	"path/filepath"
	"slices"
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
