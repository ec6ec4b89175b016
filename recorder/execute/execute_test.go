package execute

import (
	"context"
	"os"
	"path/filepath"
	"sort"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"
)

func shell(t *testing.T) Shell {
	return Shell{Dir: t.TempDir(), Env: []string{"PATH=/usr/bin:/bin", "ONLY=this"}, Timeout: 20 * time.Second}
}

func TestExitCodeAndTerminalSize(t *testing.T) {
	res, err := shell(t).Run(context.Background(), "stty size <&1; exit 3", false)
	if err != nil {
		t.Fatal(err)
	}
	if res.Exit != 3 {
		t.Errorf("exit = %d, want 3", res.Exit)
	}
	if got := strings.TrimSpace(res.Text(Stdout)); got != "30 100" {
		t.Errorf("stty size = %q, want %q (a terminal of %dx%d)", got, "30 100", Columns, Rows)
	}
}

func TestEnvironmentIsExactlyTheGivenNames(t *testing.T) {
	t.Setenv("LEAKED_FROM_RECORDER", "x")
	res, err := shell(t).Run(context.Background(), "env", false)
	if err != nil {
		t.Fatal(err)
	}
	var names []string
	for _, line := range strings.Split(strings.ReplaceAll(res.Text(Stdout), "\r", ""), "\n") {
		if name, _, ok := strings.Cut(line, "="); ok {
			names = append(names, name)
		}
	}
	sort.Strings(names)
	// sh itself adds PWD (and dash SHLVL-free); anything else came from us.
	allowed := map[string]bool{"PATH": true, "ONLY": true, "PWD": true, "OLDPWD": true, "SHLVL": true, "_": true}
	for _, n := range names {
		if !allowed[n] {
			t.Errorf("command saw %s, which the recorder did not give it (all: %v)", n, names)
		}
	}
	if !strings.Contains(res.Text(Stdout), "ONLY=this") {
		t.Errorf("command did not see ONLY=this: %q", res.Text(Stdout))
	}
}

func TestWorkingDirectory(t *testing.T) {
	s := shell(t)
	res, err := s.Run(context.Background(), "pwd", false)
	if err != nil {
		t.Fatal(err)
	}
	want, _ := filepath.EvalSymlinks(s.Dir)
	if got := strings.TrimSpace(res.Text(Stdout)); got != want {
		t.Errorf("pwd = %q, want %q", got, want)
	}
}

func TestSeparateStreams(t *testing.T) {
	res, err := shell(t).Run(context.Background(), "echo out; echo err >&2", true)
	if err != nil {
		t.Fatal(err)
	}
	if got := res.Text(Stdout); strings.Contains(got, "err") || !strings.Contains(got, "out") {
		t.Errorf("stdout = %q, want only %q", got, "out")
	}
	if got := res.Text(Stderr); got != "err\n" {
		t.Errorf("stderr = %q, want %q", got, "err\n")
	}
	for _, c := range res.Chunks {
		if c.Stream == Terminal {
			t.Errorf("separate mode produced a terminal chunk %q", c.Data)
		}
	}
}

func TestSharedTerminalKeepsOrder(t *testing.T) {
	res, err := shell(t).Run(context.Background(), "echo one; sleep 0.05; echo two >&2; sleep 0.05; echo three", false)
	if err != nil {
		t.Fatal(err)
	}
	got := strings.ReplaceAll(res.Text(Terminal), "\r", "")
	if got != "one\ntwo\nthree\n" {
		t.Errorf("terminal = %q, want one, two, three in order", got)
	}
	for i := 1; i < len(res.Chunks); i++ {
		if res.Chunks[i].At < res.Chunks[i-1].At {
			t.Errorf("chunk %d at %s precedes chunk %d at %s", i, res.Chunks[i].At, i-1, res.Chunks[i-1].At)
		}
	}
	if len(res.Chunks) < 3 {
		t.Errorf("got %d chunks for three writes 50ms apart, want one per write", len(res.Chunks))
	}
}

func TestDeadlineKillsTheProcessGroup(t *testing.T) {
	s := shell(t)
	s.Timeout = 500 * time.Millisecond
	pidFile := filepath.Join(s.Dir, "child.pid")
	res, err := s.Run(context.Background(), "sleep 60 & echo $! > "+pidFile+"; wait", false)
	if err != nil {
		t.Fatal(err)
	}
	if !res.TimedOut {
		t.Fatalf("command was not ended by its deadline: %+v", res)
	}
	if res.Exit == 0 {
		t.Errorf("exit = 0 for a killed command")
	}
	raw, err := os.ReadFile(pidFile)
	if err != nil {
		t.Fatal(err)
	}
	pid, _ := strconv.Atoi(strings.TrimSpace(string(raw)))
	// The background sleep is reaped by init once killed; poll briefly for
	// the kernel to finish tearing it down.
	for i := 0; i < 100; i++ {
		if syscall.Kill(pid, 0) != nil {
			return
		}
		time.Sleep(20 * time.Millisecond)
	}
	t.Errorf("background child %d outlived the deadline", pid)
}
