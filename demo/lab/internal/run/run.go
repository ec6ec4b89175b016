// Package run is the one place the lab runs external commands and reports
// progress. Every docker, kubectl, debootstrap and apt call goes through a
// Runner, so what runs is logged and credentials are scrubbed from errors.
package run

import (
	"bytes"
	"context"
	"fmt"
	"io"
	"os"
	"os/exec"
	"strings"
	"sync"
	"time"
)

// Runner runs commands. Secrets are values that must never appear in an
// error it returns; they are replaced by "***" in captured output.
type Runner struct {
	// Log receives progress lines; nil discards them.
	Log io.Writer
	// Path, when set, is put first on PATH for every command (the lab's kubectl).
	Path    string
	mu      sync.Mutex
	secrets []string
	start   time.Time
}

// Cmd is one command line.
type Cmd struct {
	Name  string
	Args  []string
	Dir   string
	Env   []string // added to the Runner's environment
	Stdin io.Reader
	// Stdout, when set, receives the output instead of it being captured.
	Stdout io.Writer
	// Brief errors leave out the command line: for commands whose own
	// message is what a user needs (psql's), not how the lab ran them.
	Brief bool
}

// Secret registers a value that must never be shown.
func (r *Runner) Secret(values ...string) {
	r.mu.Lock()
	defer r.mu.Unlock()
	for _, v := range values {
		if v != "" {
			r.secrets = append(r.secrets, v)
		}
	}
}

// Scrub replaces every registered secret in s.
func (r *Runner) Scrub(s string) string {
	r.mu.Lock()
	defer r.mu.Unlock()
	for _, v := range r.secrets {
		s = strings.ReplaceAll(s, v, "***")
	}
	return s
}

// Env is the environment commands get: ours, with Path first on PATH.
func (r *Runner) Env(extra ...string) []string {
	env := os.Environ()
	if r.Path != "" {
		for i, kv := range env {
			if strings.HasPrefix(kv, "PATH=") {
				env[i] = "PATH=" + r.Path + ":" + strings.TrimPrefix(kv, "PATH=")
			}
		}
	}
	return append(env, extra...)
}

// Output runs name with args and returns its trimmed standard output.
func (r *Runner) Output(ctx context.Context, name string, args ...string) (string, error) {
	return r.Run(ctx, Cmd{Name: name, Args: args})
}

// Run runs c and returns its trimmed standard output (empty when c.Stdout is set).
func (r *Runner) Run(ctx context.Context, c Cmd) (string, error) {
	cmd := exec.CommandContext(ctx, c.Name, c.Args...)
	cmd.Dir = c.Dir
	cmd.Env = r.Env(c.Env...)
	cmd.Stdin = c.Stdin
	var stdout, stderr bytes.Buffer
	cmd.Stdout = &stdout
	if c.Stdout != nil {
		cmd.Stdout = c.Stdout
	}
	cmd.Stderr = &stderr
	cmd.WaitDelay = 5 * time.Second
	if err := cmd.Run(); err != nil {
		msg := strings.TrimSpace(stderr.String())
		if msg == "" {
			msg = strings.TrimSpace(stdout.String())
		}
		if c.Brief {
			return "", fmt.Errorf("%s (%w)", r.Scrub(tail(msg, 1500)), err)
		}
		return "", fmt.Errorf("%s: %w: %s", r.Scrub(r.line(c)), err, r.Scrub(tail(msg, 1500)))
	}
	return strings.TrimSpace(stdout.String()), nil
}

// Succeeds reports whether the command exits 0, discarding its output.
func (r *Runner) Succeeds(ctx context.Context, name string, args ...string) bool {
	_, err := r.Output(ctx, name, args...)
	return err == nil
}

func (r *Runner) line(c Cmd) string {
	return strings.TrimSpace(c.Name + " " + strings.Join(c.Args, " "))
}

func tail(s string, n int) string {
	if len(s) > n {
		return "..." + s[len(s)-n:]
	}
	return s
}

// Printf writes one progress line, prefixed with the time since the first line.
func (r *Runner) Printf(format string, args ...any) {
	if r.Log == nil {
		return
	}
	r.mu.Lock()
	if r.start.IsZero() {
		r.start = time.Now()
	}
	at := time.Since(r.start)
	r.mu.Unlock()
	fmt.Fprintf(r.Log, "[%6.1fs] %s\n", at.Seconds(), r.Scrub(fmt.Sprintf(format, args...)))
}

// Step announces a step; the returned function reports it done with its duration.
func (r *Runner) Step(name string) func(result string) {
	r.Printf("%s ...", name)
	start := time.Now()
	return func(result string) {
		r.Printf("%s: %s (%s)", name, result, Since(start))
	}
}

// Since is a duration rounded for a progress line.
func Since(t time.Time) string {
	d := time.Since(t)
	if d < 10*time.Second {
		return d.Round(100 * time.Millisecond).String()
	}
	return d.Round(time.Second).String()
}
