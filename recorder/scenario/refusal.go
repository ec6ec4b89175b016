package scenario

import (
	"fmt"
	"strings"
)

// Refusal is one reason a scenario file cannot be run: where it is (file,
// step as a reader counts them, key), what is wrong and what to write instead.
type Refusal struct {
	File string
	// Step is 1-based; 0 means the file as a whole.
	Step int
	// Key is the path of the key within the step (or the file), for
	// example "expect.resource.fields[2].equals".
	Key     string
	Problem string
	// Fix says what to write instead, as a whole clause.
	Fix string
}

func (r Refusal) String() string {
	var b strings.Builder
	b.WriteString(r.File)
	if r.Step > 0 {
		fmt.Fprintf(&b, ": step %d", r.Step)
	}
	if r.Key != "" {
		b.WriteString(": " + r.Key)
	}
	b.WriteString(": " + r.Problem)
	if r.Fix != "" {
		b.WriteString("; " + r.Fix)
	}
	return b.String()
}

// Refusals is every refusal of one or more files, one per line.
type Refusals []Refusal

func (rs Refusals) Error() string {
	lines := make([]string, len(rs))
	for i, r := range rs {
		lines[i] = r.String()
	}
	return strings.Join(lines, "\n")
}

// refusals collects the refusals of one file. A key refused once is not
// refused again by a later rule: the first reason is the one to fix.
type refusals struct {
	file string
	list Refusals
}

func (rs *refusals) add(step int, key, problem, fix string) {
	for _, r := range rs.list {
		if r.Step == step && r.Key != "" && (r.Key == key || within(key, r.Key) || within(r.Key, key)) {
			return
		}
	}
	rs.also(step, key, problem, fix)
}

// also adds a refusal even when the key was refused before: a run may read
// several names, and each is a refusal of its own.
func (rs *refusals) also(step int, key, problem, fix string) {
	rs.list = append(rs.list, Refusal{File: rs.file, Step: step, Key: key, Problem: problem, Fix: fix})
}

// within reports whether key lies under parent ("expect.exit" under "expect").
func within(key, parent string) bool {
	return parent != "" && strings.HasPrefix(key, parent) && len(key) > len(parent) &&
		(key[len(parent)] == '.' || key[len(parent)] == '[')
}

// stepRefused reports whether step n was refused as a whole (it is not a
// mapping), so its rules would only repeat that.
func (rs *refusals) stepRefused(n int) bool {
	for _, r := range rs.list {
		if r.Step == n && r.Key == "" {
			return true
		}
	}
	return false
}
