// Package execute runs one scenario command the way a reader's terminal would:
// POSIX sh with its output on a pseudo-terminal of fixed size, a scrubbed
// environment and standard input at end of file. It records every output
// chunk with its monotonic offset from the start, so a replay can keep the
// real timing, and nothing a command does can hang it: output is read while
// the command runs and bounded, a deadline ends the command's whole process
// group, and what the command leaves running is ended with it.
package execute

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"sort"
	"syscall"
	"time"

	"github.com/creack/pty"
)

// Streams an output chunk can come from. In Separate mode stdout is the
// terminal and stderr a pipe; otherwise both share the terminal, exactly as a
// reader sees them, and the chunk's stream is Terminal.
const (
	Stdout   = "stdout"
	Stderr   = "stderr"
	Terminal = "terminal"
)

// drainGrace bounds how long output is read after the command has exited.
const drainGrace = 2 * time.Second

// Defaults for a Shell that leaves them unset.
const (
	// DefaultTimeout is the deadline of a command that states none.
	DefaultTimeout = 5 * time.Minute
	// MaxOutput is how many bytes a command may print, both streams
	// together; past it the command is stopped and Result.Overflow set.
	MaxOutput = 64 << 10
)

// Size of the pseudo-terminal every command sees (and the cast's frame).
const (
	Columns = 100
	Rows    = 30
)

// Chunk is one read from the command's output.
type Chunk struct {
	// At is the monotonic offset from the command's start.
	At     time.Duration
	Stream string
	Data   []byte
}

// Result is what one run of a command produced.
type Result struct {
	Exit     int
	Chunks   []Chunk
	Duration time.Duration
	// TimedOut is true when the deadline ended the process group.
	TimedOut bool
	// Overflow is true when the command printed more than the Shell's
	// MaxOutput and was stopped; Chunks hold the first MaxOutput bytes.
	Overflow bool
}

// Text joins the output of the named streams in arrival order; "stdout"
// includes the Terminal stream, which carries stdout when streams are shared.
func (r Result) Text(stream string) string {
	var b bytes.Buffer
	for _, c := range r.Chunks {
		if c.Stream == stream || (stream == Stdout && c.Stream == Terminal) {
			b.Write(c.Data)
		}
	}
	return b.String()
}

// Shell runs commands: Dir is the working directory (the repository root),
// Env the complete environment, Timeout the per-command deadline
// (DefaultTimeout when zero), MaxOutput the bytes a command may print
// (the package's MaxOutput when zero).
type Shell struct {
	Dir       string
	Env       []string
	Timeout   time.Duration
	MaxOutput int
}

// Run runs command with sh -c. separate keeps stderr apart from the terminal.
// A non-zero exit, a timeout and an overflow are a Result, not an error;
// errors are for commands that could not be started or were interrupted.
func (s Shell) Run(ctx context.Context, command string, separate bool) (Result, error) {
	cmd := exec.Command("/bin/sh", "-c", command)
	cmd.Dir = s.Dir
	cmd.Env = append([]string{}, s.Env...)
	// Standard input is at end of file: a command that reads it (cat, a
	// prompt) gets EOF at once instead of waiting for a reader who is not
	// there.
	stdin, err := os.Open(os.DevNull)
	if err != nil {
		return Result{}, fmt.Errorf("execute: open %s for standard input: %w", os.DevNull, err)
	}
	defer stdin.Close()
	cmd.Stdin = stdin

	var errR, errW *os.File
	if separate {
		if errR, errW, err = os.Pipe(); err != nil {
			return Result{}, fmt.Errorf("execute: stderr pipe: %w", err)
		}
		cmd.Stderr = errW
	}
	becomeSubreaper()
	start := time.Now()
	// Setsid makes the shell the leader of a new process group, so one
	// signal to -pid reaches everything the command started. The terminal
	// is not made the session's controlling terminal: a program that opens
	// /dev/tty to prompt fails at once rather than waiting forever.
	// The shell is in running before another Run's endOrphans can see it
	// (the recorder its parent, the same environment) and take it for an
	// orphan.
	starting.RLock()
	term, err := pty.StartWithAttrs(cmd, &pty.Winsize{Cols: Columns, Rows: Rows}, &syscall.SysProcAttr{Setsid: true})
	if err == nil {
		running.add(cmd.Process.Pid)
	}
	starting.RUnlock()
	if errW != nil {
		_ = errW.Close()
	}
	if err != nil {
		if errR != nil {
			_ = errR.Close()
		}
		return Result{}, fmt.Errorf("execute: start sh -c in %s: %w", s.Dir, err)
	}
	defer term.Close()
	pid := cmd.Process.Pid
	defer running.remove(pid)

	timeout := s.Timeout
	if timeout <= 0 {
		timeout = DefaultTimeout
	}
	limit := s.MaxOutput
	if limit <= 0 {
		limit = MaxOutput
	}
	if errR != nil {
		defer errR.Close()
	}
	res, waitErr, err := wait(ctx, cmd, term, errR, timeout, limit, start)
	if err != nil {
		return res, err
	}
	sort.SliceStable(res.Chunks, func(i, j int) bool { return res.Chunks[i].At < res.Chunks[j].At })
	if separate {
		for i := range res.Chunks {
			if res.Chunks[i].Stream == Terminal {
				res.Chunks[i].Stream = Stdout
			}
		}
	}

	var exitErr *exec.ExitError
	switch {
	case waitErr == nil:
	case errors.As(waitErr, &exitErr):
		res.Exit = exitErr.ExitCode()
		if ws, ok := exitErr.Sys().(syscall.WaitStatus); ok && ws.Signaled() {
			res.Exit = 128 + int(ws.Signal())
		}
	default:
		return res, fmt.Errorf("execute: wait for sh -c: %w", waitErr)
	}
	if ctx.Err() != nil {
		return res, fmt.Errorf("execute: command interrupted: %w", ctx.Err())
	}
	return res, nil
}
