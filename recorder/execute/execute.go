// Package execute runs one scenario command the way a reader's terminal would:
// POSIX sh under a pseudo-terminal of fixed size, with a scrubbed environment
// and a deadline that ends the command's whole process group. It records every
// output chunk with its monotonic offset from the start, so a replay can keep
// the real timing.
package execute

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
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
// Env the complete environment, Timeout the per-command deadline.
type Shell struct {
	Dir     string
	Env     []string
	Timeout time.Duration
}

// Run runs command with sh -c. separate keeps stderr apart from the terminal.
// A non-zero exit is a Result, not an error; errors are for commands that
// could not be started.
func (s Shell) Run(ctx context.Context, command string, separate bool) (Result, error) {
	cmd := exec.Command("/bin/sh", "-c", command)
	cmd.Dir = s.Dir
	cmd.Env = append([]string{}, s.Env...)
	if cmd.Env == nil {
		cmd.Env = []string{}
	}

	var errR, errW *os.File
	if separate {
		var err error
		if errR, errW, err = os.Pipe(); err != nil {
			return Result{}, fmt.Errorf("execute: stderr pipe: %w", err)
		}
		cmd.Stderr = errW
	}
	start := time.Now()
	// Setsid makes the shell the leader of a new process group, so one
	// signal to -pid reaches everything the command started.
	term, err := pty.StartWithAttrs(cmd, &pty.Winsize{Cols: Columns, Rows: Rows},
		&syscall.SysProcAttr{Setsid: true, Setctty: true})
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

	chunks := make(chan Chunk, 64)
	readers := 1
	go read(term, Terminal, start, chunks)
	if separate {
		readers++
		// The terminal carries only stdout when stderr has its own pipe.
		go read(errR, Stderr, start, chunks)
		defer errR.Close()
	}

	waited := make(chan error, 1)
	go func() { waited <- cmd.Wait() }()

	timeout := s.Timeout
	if timeout <= 0 {
		timeout = 10 * time.Minute
	}
	timer := time.NewTimer(timeout)
	defer timer.Stop()

	var res Result
	var waitErr error
	select {
	case waitErr = <-waited:
	case <-timer.C:
		res.TimedOut = true
		_ = syscall.Kill(-cmd.Process.Pid, syscall.SIGKILL)
		waitErr = <-waited
	case <-ctx.Done():
		_ = syscall.Kill(-cmd.Process.Pid, syscall.SIGKILL)
		waitErr = <-waited
	}
	res.Duration = time.Since(start)
	// What the command left running in its group would hold the terminal
	// open and outlive the step: it ends with the command.
	_ = syscall.Kill(-cmd.Process.Pid, syscall.SIGKILL)

	// A process that left the group (its own setsid) could hold the terminal
	// forever; after a grace period its output is no longer the command's.
	grace := time.NewTimer(drainGrace)
	defer grace.Stop()
	for readers > 0 {
		select {
		case c := <-chunks:
			if c.Data == nil {
				readers--
				continue
			}
			if separate && c.Stream == Terminal {
				c.Stream = Stdout
			}
			res.Chunks = append(res.Chunks, c)
		case <-grace.C:
			_ = term.Close()
			if errR != nil {
				_ = errR.Close()
			}
		}
	}
	sort.SliceStable(res.Chunks, func(i, j int) bool { return res.Chunks[i].At < res.Chunks[j].At })

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

// read sends each read from f as a chunk stamped on arrival, then a nil chunk.
// A pseudo-terminal reports EIO once the last writer is gone: that is its EOF.
func read(f io.Reader, stream string, start time.Time, out chan<- Chunk) {
	buf := make([]byte, 32*1024)
	for {
		n, err := f.Read(buf)
		if n > 0 {
			out <- Chunk{At: time.Since(start), Stream: stream, Data: append([]byte(nil), buf[:n]...)}
		}
		if err != nil {
			out <- Chunk{Stream: stream}
			return
		}
	}
}
