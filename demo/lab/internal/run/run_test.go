package run

import (
	"bytes"
	"context"
	"strings"
	"testing"
)

// A credential that a failing command echoes, or that is on its command
// line, never reaches the error or the progress lines.
func TestErrorsAndProgressNeverShowSecrets(t *testing.T) {
	var log bytes.Buffer
	r := &Runner{Log: &log}
	const planted = "planted-credential-7f3a"
	r.Secret(planted)
	_, err := r.Output(context.Background(), "sh", "-c", "echo connecting with "+planted+" >&2; exit 3", planted)
	if err == nil {
		t.Fatal("a command exiting 3 did not fail")
	}
	if strings.Contains(err.Error(), planted) {
		t.Errorf("error shows the credential: %v", err)
	}
	if !strings.Contains(err.Error(), "connecting with ***") || !strings.Contains(err.Error(), "exit status 3") {
		t.Errorf("error lost what happened: %v", err)
	}
	r.Printf("user %s", planted)
	if strings.Contains(log.String(), planted) {
		t.Errorf("progress shows the credential: %q", log.String())
	}
}

func TestRunPutsPathFirst(t *testing.T) {
	dir := t.TempDir()
	r := &Runner{Path: dir}
	out, err := r.Output(context.Background(), "sh", "-c", "echo $PATH")
	if err != nil {
		t.Fatal(err)
	}
	if !strings.HasPrefix(out, dir+":") {
		t.Errorf("PATH = %q, want %s first", out, dir)
	}
}
