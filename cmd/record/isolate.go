package main

import (
	"bufio"
	"bytes"
	"context"
	"fmt"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"sync"

	"ptah.run/operator/recorder/envnames"
	"ptah.run/operator/recorder/labenv"
	"ptah.run/operator/recorder/normalize"
	"ptah.run/operator/recorder/observe"
	"ptah.run/operator/recorder/session"
)

// isolation gives each scenario a namespace and database of its own, made
// by the lab's program (PTAH_LAB_SCENARIOS: `scenario-up` prints
// NAMESPACE=... and "name OWN PUBLISHED" lines; `scenario-down NS` removes
// it), and a working directory of its own, so scenarios can run side by side.
type isolation struct {
	program string
	root    string
	lab     *labenv.Lab
	// first holds every scenario-up until the first has run: the lab's
	// program builds itself on its first call.
	first sync.Mutex
	built bool
}

// isolated is one scenario's namespace, names and working directory.
type isolated struct {
	namespace string
	names     []normalize.Name
	dir       string
}

func newIsolation(lab *labenv.Lab, root string) *isolation {
	prog, ok := lab.Lookup("PTAH_LAB_SCENARIOS")
	if !ok || prog == "" {
		return nil
	}
	return &isolation{program: prog, root: root, lab: lab}
}

func (is *isolation) up(ctx context.Context) (isolated, error) {
	is.first.Lock()
	if is.built {
		is.first.Unlock()
	} else {
		defer func() { is.built = true; is.first.Unlock() }()
	}
	var iso isolated
	cmd := exec.CommandContext(ctx, is.program, "scenario-up")
	cmd.Dir = is.root
	cmd.Env = withoutNamespace(os.Environ())
	var stderr bytes.Buffer
	cmd.Stderr = &stderr
	out, err := cmd.Output()
	if err != nil {
		return iso, fmt.Errorf("%s scenario-up: %v: %s", is.program, err, lastLine(stderr.String()))
	}
	sc := bufio.NewScanner(bytes.NewReader(out))
	for sc.Scan() {
		line := strings.TrimSpace(sc.Text())
		if v, ok := strings.CutPrefix(line, "NAMESPACE="); ok {
			iso.namespace = v
		} else if f := strings.Fields(line); len(f) == 3 && f[0] == "name" {
			iso.names = append(iso.names, normalize.Name{Own: f[1], Published: f[2]})
		}
	}
	if iso.namespace == "" {
		return iso, fmt.Errorf("%s scenario-up printed no NAMESPACE=: run make demo-up", is.program)
	}
	iso.dir, err = is.workdir()
	return iso, err
}

func (is *isolation) down(iso isolated) error {
	if iso.dir != "" {
		os.RemoveAll(iso.dir)
	}
	cmd := exec.Command(is.program, "scenario-down", iso.namespace)
	cmd.Dir = is.root
	cmd.Env = withoutNamespace(os.Environ())
	if out, err := cmd.CombinedOutput(); err != nil {
		return fmt.Errorf("%s scenario-down %s: %v: %s", is.program, iso.namespace, err, lastLine(string(out)))
	}
	return nil
}

// aheadSpare is how many namespaces are made beyond the scenarios running:
// a scenario whose turn comes takes one already made (scenario-up and the
// psql client's rollout took 11-15 s between one scenario's end and the
// next one's start), and the one it ran in is removed behind it.
const aheadSpare = 2

// ahead makes the namespaces of count scenarios in the background, at most
// limit of them in being at once (made, in use, or being removed).
type ahead struct {
	made    chan madeNamespace
	slots   chan struct{}
	removed sync.WaitGroup
	is      *isolation
}

type madeNamespace struct {
	iso isolated
	err error
}

func (is *isolation) ahead(ctx context.Context, count, limit int) *ahead {
	a := &ahead{made: make(chan madeNamespace, count), slots: make(chan struct{}, limit), is: is}
	go func() {
		for range count {
			select {
			case a.slots <- struct{}{}:
			case <-ctx.Done():
				a.made <- madeNamespace{err: ctx.Err()}
				continue
			}
			go func() {
				// Once begun, a namespace is made to the end even if the run
				// is interrupted, so that it is given to a scenario and
				// removed behind it: scenario-up killed half-way would leave
				// a namespace nobody removes.
				own, err := is.up(context.WithoutCancel(ctx))
				if err != nil {
					<-a.slots
				}
				a.made <- madeNamespace{own, err}
			}()
		}
	}()
	return a
}

// take is the next namespace made, or why it could not be.
func (a *ahead) take() (isolated, error) {
	m := <-a.made
	return m.iso, m.err
}

// giveBack removes own in the background and lets another be made; what
// goes wrong is written to progress. wait waits for every removal.
func (a *ahead) giveBack(own isolated, id string, progress io.Writer) {
	a.removed.Add(1)
	go func() {
		defer a.removed.Done()
		if err := a.is.down(own); err != nil {
			fmt.Fprintf(progress, "%s: %v\n", id, err)
		}
		<-a.slots
	}()
}

func (a *ahead) wait() { a.removed.Wait() }

// workdir is a directory that looks like the repository to a step (every
// top-level entry and every entry of demo/ linked to it) except demo/.lab,
// which is its own: what one scenario writes there (demo/.lab/digest) no
// other reads. demo/bin's programs are run from the repository.
func (is *isolation) workdir() (string, error) {
	dir, err := os.MkdirTemp("", "ptah-record-")
	if err != nil {
		return "", err
	}
	link := func(from, to string) error {
		entries, err := os.ReadDir(from)
		if err != nil {
			return err
		}
		for _, e := range entries {
			if from == is.root && e.Name() == "demo" || from != is.root && (e.Name() == ".lab" || e.Name() == "bin") {
				continue
			}
			if err := os.Symlink(filepath.Join(from, e.Name()), filepath.Join(to, e.Name())); err != nil {
				return err
			}
		}
		return nil
	}
	demo := filepath.Join(dir, "demo")
	if err := os.MkdirAll(filepath.Join(demo, ".lab"), 0o700); err != nil {
		return "", err
	}
	if err := link(is.root, dir); err != nil {
		return "", err
	}
	if err := link(filepath.Join(is.root, "demo"), demo); err != nil && !os.IsNotExist(err) {
		return "", err
	}
	bins, _ := os.ReadDir(filepath.Join(is.root, "demo", "bin"))
	if len(bins) > 0 {
		if err := os.MkdirAll(filepath.Join(demo, "bin"), 0o755); err != nil {
			return "", err
		}
	}
	for _, b := range bins {
		wrapper := fmt.Sprintf("#!/bin/sh\nexec %q \"$@\"\n", filepath.Join(is.root, "demo", "bin", b.Name()))
		if err := os.WriteFile(filepath.Join(demo, "bin", b.Name()), []byte(wrapper), 0o755); err != nil {
			return "", err
		}
	}
	return dir, nil
}

// runner is the Runner for one isolated scenario: its namespace in
// NAMESPACE, its working directory, its names normalized back, and its own
// credentials (its Secrets are read into them).
func (is *isolation) runner(base *session.Runner, iso isolated, progress io.Writer) (*session.Runner, error) {
	r := *base
	r.Shell.Dir = iso.dir
	r.Shell.Env = nil
	for _, kv := range base.Shell.Env {
		if !strings.HasPrefix(kv, "NAMESPACE=") {
			r.Shell.Env = append(r.Shell.Env, kv)
		}
	}
	r.Shell.Env = append(r.Shell.Env, "NAMESPACE="+iso.namespace)
	obs, err := observe.New(base.Config, iso.namespace)
	if err != nil {
		return nil, err
	}
	r.Observer = obs
	r.Normalizer.Names = iso.names
	labNS, _ := is.lab.Lookup("NAMESPACE")
	r.Placeholders = append([]string(nil), base.Placeholders...)
	for _, p := range base.Placeholders {
		if name, ok := strings.CutPrefix(p, labNS+"/"); ok {
			r.Placeholders = append(r.Placeholders, iso.namespace+"/"+name)
		}
	}
	public := []string{iso.namespace}
	for _, n := range iso.names {
		public = append(public, n.Own)
	}
	var names []string
	for _, n := range envnames.Published() {
		names = append(names, n.Name)
	}
	if r.Credentials, err = is.lab.Credentials(append(is.lab.Public(names), public...)); err != nil {
		return nil, err
	}
	r.Progress = progress
	return &r, nil
}

func withoutNamespace(env []string) []string {
	var out []string
	for _, kv := range env {
		if !strings.HasPrefix(kv, "NAMESPACE=") {
			out = append(out, kv)
		}
	}
	return out
}

func lastLine(s string) string {
	lines := strings.Split(strings.TrimSpace(s), "\n")
	return lines[len(lines)-1]
}

// lineWriter writes whole writes one at a time, so the progress lines of
// scenarios running side by side do not interleave; not a terminal, so
// each scenario's new activity is a line of its own.
type lineWriter struct {
	mu sync.Mutex
	w  io.Writer
}

func (l *lineWriter) Write(p []byte) (int, error) {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.w.Write(p)
}
