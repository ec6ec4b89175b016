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
	"io"
	"os"
	"os/exec"
	"sort"
	"sync"
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
	term, err := pty.StartWithAttrs(cmd, &pty.Winsize{Cols: Columns, Rows: Rows}, &syscall.SysProcAttr{Setsid: true})
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
	running.add(pid)
	defer running.remove(pid)

	timeout := s.Timeout
	if timeout <= 0 {
		timeout = DefaultTimeout
	}
	// The deadline, an overflow and an interruption each end the process
	// group from their own goroutine; this one only waits.
	var res Result
	var ended sync.Once
	end := func(why *bool) {
		ended.Do(func() {
			if why != nil {
				*why = true
			}
			_ = syscall.Kill(-pid, syscall.SIGKILL)
		})
	}
	var timedOut, overflowed bool
	limit := s.MaxOutput
	if limit <= 0 {
		limit = MaxOutput
	}
	out := &collector{start: start, limit: limit, onOver: func() { end(&overflowed) }}
	var readers sync.WaitGroup
	readers.Add(1)
	go func() { defer readers.Done(); out.read(term, Terminal) }()
	if separate {
		readers.Add(1)
		// The terminal carries only stdout when stderr has its own pipe.
		go func() { defer readers.Done(); out.read(errR, Stderr) }()
		defer errR.Close()
	}
	drained := make(chan struct{})
	go func() { readers.Wait(); close(drained) }()

	timer := time.AfterFunc(timeout, func() { end(&timedOut) })
	defer timer.Stop()
	stopCtx := context.AfterFunc(ctx, func() { end(nil) })
	defer stopCtx()
	waitErr := cmd.Wait()
	ended.Do(func() {})
	res.TimedOut, res.Overflow = timedOut, overflowed
	res.Duration = time.Since(start)
	// What the command left running in its group would hold the terminal
	// open and outlive the step: it ends with the command, and so does what
	// left the group but kept the command's environment.
	_ = syscall.Kill(-pid, syscall.SIGKILL)
	endOrphans(pid, cmd.Env)

	// A process that escaped both could hold the terminal forever; after a
	// grace period its output is no longer the command's.
	select {
	case <-drained:
	case <-time.After(drainGrace):
		_ = term.Close()
		if errR != nil {
			_ = errR.Close()
		}
		<-drained
	}
	res.Chunks = out.chunks
	// Output still in the terminal when the command exited counts too.
	res.Overflow = res.Overflow || out.passed()
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

// collector keeps the chunks the readers deliver, as they arrive, up to the
// limit; past it, it signals over once and keeps reading without keeping,
// so a writer is never blocked on a full terminal.
type collector struct {
	start time.Time
	limit int

	// onOver is called once, when the limit is passed.
	onOver func()

	mu     sync.Mutex
	chunks []Chunk
	size   int
	closed bool
}

// buffers are the readers' read buffers, reused from command to command.
var buffers = sync.Pool{New: func() any { b := make([]byte, 32*1024); return &b }}

func (c *collector) read(f io.Reader, stream string) {
	bp := buffers.Get().(*[]byte)
	defer buffers.Put(bp)
	buf := *bp
	for {
		n, err := f.Read(buf)
		if n > 0 {
			c.add(time.Since(c.start), stream, buf[:n])
		}
		// A pseudo-terminal reports EIO once the last writer is gone: that
		// is its EOF.
		if err != nil {
			return
		}
	}
}

func (c *collector) add(at time.Duration, stream string, data []byte) {
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.closed {
		return
	}
	if keep := c.limit - c.size; len(data) > keep {
		data = data[:keep]
		c.closed = true
		defer c.onOver()
	}
	if len(data) > 0 {
		c.chunks = append(c.chunks, Chunk{At: at, Stream: stream, Data: append([]byte(nil), data...)})
		c.size += len(data)
	}
}

// passed says whether the output went past the limit.
func (c *collector) passed() bool {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.closed
}
