package main

import (
	"context"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// inEmptyCheckout runs the test from a checkout that has no lab.
func inEmptyCheckout(t *testing.T) {
	root := t.TempDir()
	if err := os.WriteFile(filepath.Join(root, "go.mod"), []byte("module x\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	if err := os.Mkdir(filepath.Join(root, "demo"), 0o755); err != nil {
		t.Fatal(err)
	}
	t.Chdir(root)
}

func TestVerbsFailWithOneLineNamingWhatToDo(t *testing.T) {
	inEmptyCheckout(t)
	for _, c := range []struct {
		verb string
		args []string
		want string
	}{
		{"psql", []string{"select 1"}, "no lab: run make demo-up"},
		{"credentials", nil, "no lab: run make demo-up"},
		{"manifest", []string{"storefront"}, "takes 2 argument(s), got 1: run lab help"},
		{"launch", nil, `unknown verb "launch": run lab help`},
	} {
		err := dispatch(context.Background(), c.verb, c.args)
		if err == nil {
			t.Errorf("lab %s: no error, want %q", c.verb, c.want)
			continue
		}
		if got := oneLine(err); got != c.want || strings.Contains(got, "\n") {
			t.Errorf("lab %s: %q, want %q", c.verb, got, c.want)
		}
	}
}
