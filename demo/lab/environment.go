package lab

import (
	"bufio"
	"bytes"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"strings"
)

// environment is the KEY=VALUE file the scenarios and the recorder read.
type environment struct {
	keys   []string
	values map[string]string
}

func (e *environment) set(k, v string) {
	if e.values == nil {
		e.values = map[string]string{}
	}
	if _, ok := e.values[k]; !ok {
		e.keys = append(e.keys, k)
	}
	e.values[k] = v
}

func (e *environment) get(k string) string { return e.values[k] }

func (e *environment) bytes() []byte {
	var b bytes.Buffer
	b.WriteString("# Written by `lab up`; read by the scenarios, the recorder and `lab` itself.\n")
	for _, k := range e.keys {
		fmt.Fprintf(&b, "%s=%s\n", k, e.values[k])
	}
	return b.Bytes()
}

// loadEnvironment reads demo/.lab/environment; a missing file is ErrNoLab.
func loadEnvironment(path string) (*environment, error) {
	raw, err := os.ReadFile(path)
	if errors.Is(err, fs.ErrNotExist) {
		return nil, ErrNoLab
	}
	if err != nil {
		return nil, fmt.Errorf("read %s: %w", path, err)
	}
	e := &environment{}
	sc := bufio.NewScanner(bytes.NewReader(raw))
	for n := 1; sc.Scan(); n++ {
		line := strings.TrimSpace(sc.Text())
		if line == "" || strings.HasPrefix(line, "#") {
			continue
		}
		k, v, ok := strings.Cut(line, "=")
		if !ok {
			return nil, fmt.Errorf("%s line %d is not KEY=VALUE: run make demo-down && make demo-up", path, n)
		}
		e.set(k, v)
	}
	return e, nil
}

// environment loads the lab's environment or says there is no lab.
func (l *Lab) environment() (*environment, error) {
	return loadEnvironment(l.environmentFile())
}

// writePrivate writes a file only its owner can read.
func writePrivate(path string, data []byte) error {
	if err := os.MkdirAll(filepath.Dir(path), 0o700); err != nil {
		return err
	}
	tmp := path + ".tmp"
	if err := os.WriteFile(tmp, data, 0o600); err != nil {
		return err
	}
	if err := os.Chmod(tmp, 0o600); err != nil {
		return err
	}
	return os.Rename(tmp, path)
}

// created is the list of what the lab made, so Down removes exactly that.
type created struct {
	path  string
	items [][2]string // kind, name
}

func loadCreated(path string) *created {
	c := &created{path: path}
	raw, _ := os.ReadFile(path)
	for _, line := range strings.Split(string(raw), "\n") {
		if kind, name, ok := strings.Cut(strings.TrimSpace(line), " "); ok {
			c.items = append(c.items, [2]string{kind, name})
		}
	}
	return c
}

func (c *created) has(kind, name string) bool {
	for _, it := range c.items {
		if it == [2]string{kind, name} {
			return true
		}
	}
	return false
}

// add records an object before it is created, so a failed Up still cleans up.
func (c *created) add(kind, name string) error {
	if c.has(kind, name) {
		return nil
	}
	c.items = append(c.items, [2]string{kind, name})
	var b strings.Builder
	for _, it := range c.items {
		fmt.Fprintf(&b, "%s %s\n", it[0], it[1])
	}
	return writePrivate(c.path, []byte(b.String()))
}

func (c *created) names(kind string) []string {
	var out []string
	for _, it := range c.items {
		if it[0] == kind {
			out = append(out, it[1])
		}
	}
	return out
}
