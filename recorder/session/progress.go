package session

import (
	"fmt"
	"io"
	"os"
	"sync"
	"time"

	"golang.org/x/term"
)

// progress is the live line: scenario, step, what it is doing, elapsed.
// On a terminal it is rewritten in place every second; elsewhere (CI logs)
// each new activity is one line.
type progress struct {
	w        io.Writer
	run      *run
	live     bool
	scenario string
	steps    int

	mu    sync.Mutex
	step  int
	what  string
	since time.Time
	done  chan struct{}
}

func newProgress(w io.Writer, ru *run, scenario string, steps int) *progress {
	p := &progress{w: w, run: ru, scenario: scenario, steps: steps, done: make(chan struct{})}
	if f, ok := w.(*os.File); ok && term.IsTerminal(int(f.Fd())) {
		p.live = true
		go p.tick()
	}
	return p
}

func (p *progress) line() string {
	return fmt.Sprintf("%s step %d/%d: %s (%s)", p.scenario, p.step, p.steps, p.what, time.Since(p.since).Round(time.Second))
}

func (p *progress) set(step int, what string) {
	if p.w == nil {
		return
	}
	// The line shows command text, which is checked for credentials only
	// when the recording is published: check it before printing too.
	if p.run.scanner.ScanString(what) != nil {
		what = "(withheld: the text holds a credential of the lab)"
	}
	p.mu.Lock()
	defer p.mu.Unlock()
	if p.live && p.step != step && p.step != 0 {
		fmt.Fprintln(p.w)
	}
	p.step, p.what, p.since = step, what, time.Now()
	if p.live {
		fmt.Fprintf(p.w, "\r\x1b[K%s", p.line())
		return
	}
	fmt.Fprintln(p.w, p.line())
}

func (p *progress) tick() {
	t := time.NewTicker(time.Second)
	defer t.Stop()
	for {
		select {
		case <-p.done:
			return
		case <-t.C:
			p.mu.Lock()
			if p.what != "" {
				fmt.Fprintf(p.w, "\r\x1b[K%s", p.line())
			}
			p.mu.Unlock()
		}
	}
}

func (p *progress) stop() {
	close(p.done)
	if p.w != nil && p.live {
		p.mu.Lock()
		fmt.Fprintln(p.w)
		p.mu.Unlock()
	}
}
