package execute

import (
	"context"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"
)

// TestHeavyCommands: commands a scenario author could write that print a
// lot, read standard input, or leave processes behind. Each one ends with a
// result (never a hang): recorded, or stopped with the reason set. The
// deadline is long (a minute) so that ending by it is a failure here unless
// the case is about the deadline.
func TestHeavyCommands(t *testing.T) {
	cases := []struct {
		name    string
		command string
		timeout time.Duration
		// want is what ended the command: "exit", "overflow" or "timeout".
		want  string
		check func(t *testing.T, r Result)
	}{
		{name: "large output", command: "seq 1 200000", want: "overflow"},
		{name: "a 2 MB line", command: "head -c 2000000 /dev/zero | tr '\\0' x", want: "overflow"},
		{name: "output that never ends", command: "yes", want: "overflow"},
		{name: "20,000 small writes", command: `i=0; while [ $i -lt 20000 ]; do printf .; i=$((i+1)); done`, want: "exit",
			check: func(t *testing.T, r Result) {
				if n := strings.Count(r.Text(Stdout), "."); n != 20000 {
					t.Errorf("recorded %d of 20000 writes", n)
				}
			}},
		{name: "binary output", command: "head -c 30000 /dev/urandom", want: "exit",
			check: func(t *testing.T, r Result) {
				if len(r.Text(Stdout)) < 30000 {
					t.Errorf("recorded %d bytes of 30000", len(r.Text(Stdout)))
				}
			}},
		{name: "cat reads standard input", command: "cat; echo done", want: "exit", check: printed("done")},
		{name: "read reads standard input", command: "read line; echo status $?", want: "exit", check: printed("status 1")},
		{name: "a prompt on /dev/tty", command: "read line </dev/tty; echo status $?", want: "exit", check: printed("status")},
		{name: "a background child", command: "sleep 600 & echo started", want: "exit", check: printed("started")},
		{name: "a background child holding the terminal", command: "(sleep 600; echo late) & echo started", want: "exit", check: printed("started")},
		{name: "a process that ignores SIGTERM", command: "trap '' TERM; sleep 600", timeout: time.Second, want: "timeout"},
		{name: "a child that ignores SIGTERM past the deadline", command: "sh -c \"trap '' TERM; sleep 600\" & wait", timeout: time.Second, want: "timeout"},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			t.Parallel()
			s := shell(t)
			s.Timeout = time.Minute
			if c.timeout > 0 {
				s.Timeout = c.timeout
			}
			r, err := s.Run(context.Background(), c.command, false)
			if err != nil {
				t.Fatal(err)
			}
			got := "exit"
			switch {
			case r.Overflow:
				got = "overflow"
			case r.TimedOut:
				got = "timeout"
			}
			if got != c.want {
				t.Fatalf("ended by %s, want %s (exit %d, %d bytes, in %s)", got, c.want, r.Exit, len(r.Text(Stdout)), r.Duration)
			}
			if n := len(r.Text(Stdout)); n > MaxOutput {
				t.Errorf("kept %d bytes, more than the bound %d", n, MaxOutput)
			}
			if c.check != nil {
				c.check(t, r)
			}
		})
	}
}

func printed(s string) func(*testing.T, Result) {
	return func(t *testing.T, r Result) {
		if !strings.Contains(r.Text(Stdout), s) {
			t.Errorf("output %q does not hold %q", r.Text(Stdout), s)
		}
	}
}

// TestChildrenEndWithTheCommand: what a command leaves running, in its
// process group or in a session of its own, is killed when it exits.
func TestChildrenEndWithTheCommand(t *testing.T) {
	for _, c := range []struct{ name, start string }{
		{"in the process group", "sleep 600 &"},
		{"in a session of its own", "setsid sleep 600 &"},
		{"daemonized through a subshell", "(setsid sleep 600 &) &"},
	} {
		t.Run(c.name, func(t *testing.T) {
			s := shell(t)
			dir := t.TempDir()
			// The child writes its own pid, whichever way it was started.
			cmd := strings.Replace(c.start, "sleep 600", "sh -c 'echo $$ > "+dir+"/pid; exec sleep 600'", 1)
			r, err := s.Run(context.Background(), cmd+" i=0; while [ ! -s "+dir+"/pid ] && [ $i -lt 100 ]; do sleep 0.05; i=$((i+1)); done; echo started", false)
			if err != nil {
				t.Fatal(err)
			}
			if r.TimedOut || !strings.Contains(r.Text(Stdout), "started") {
				t.Fatalf("the command did not run: %+v", r)
			}
			raw, err := os.ReadFile(filepath.Join(dir, "pid"))
			if err != nil {
				t.Fatal(err)
			}
			pid, _ := strconv.Atoi(strings.TrimSpace(string(raw)))
			if pid == 0 {
				t.Fatalf("no child pid in %q", raw)
			}
			if syscall.Kill(pid, 0) == nil {
				t.Errorf("child %d is still running after the command exited", pid)
				_ = syscall.Kill(pid, syscall.SIGKILL)
			}
		})
	}
}
