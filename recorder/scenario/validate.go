package scenario

import (
	"fmt"
	"path/filepath"
	"regexp"
	"strings"
	"time"
	"unicode/utf8"

	"ptah.run/operator/recorder/envnames"
	"ptah.run/operator/recorder/shellenv"
)

// MaxNote is the longest note a step may carry, in characters.
const MaxNote = 96

// Streams are what show may name.
var Streams = []string{"stdout", "stderr"}

// Statuses are the values a condition's status has on a live object.
var Statuses = []string{"True", "False", "Unknown"}

// GenerationCurrent is the one value generation takes.
const GenerationCurrent = "current"

var kebab = regexp.MustCompile(`^[a-z0-9]+(-[a-z0-9]+)*$`)

// validate applies every rule of FORMAT.md that the types alone
// do not: what must be present, which values are allowed, and which
// environment names a command may read.
func validate(s *Scenario, rs *refusals) {
	base := strings.TrimSuffix(filepath.Base(s.File), filepath.Ext(s.File))
	switch {
	case strings.TrimSpace(s.ID) == "":
		rs.add(0, "id", "is missing", fmt.Sprintf("write id: %s (the file name without .yaml)", kebabOf(base)))
	case !kebab.MatchString(s.ID):
		rs.add(0, "id", fmt.Sprintf("%q is not kebab-case", s.ID), fmt.Sprintf("write id: %s (lower-case words joined by -) and name the file after it", kebabOf(s.ID)))
	case s.ID != base:
		rs.add(0, "id", fmt.Sprintf("%q does not match the file name %s", s.ID, filepath.Base(s.File)),
			fmt.Sprintf("rename the file to %s.yaml or write id: %s", s.ID, base))
	}
	for _, f := range []struct{ key, value, what string }{
		{"title", s.Title, "the scenario's title"},
		{"tagline", s.Tagline, "one sentence under the title"},
		{"learn", s.Learn, "one sentence saying what it shows"},
	} {
		if strings.TrimSpace(f.value) == "" {
			rs.add(0, f.key, "is blank", fmt.Sprintf("write %s: with %s", f.key, f.what))
		}
	}
	if len(s.Tags) == 0 {
		rs.add(0, "tags", "lists no tags", "write tags: [Operations] (the first tag groups the catalog)")
	}
	for i, t := range s.Tags {
		if strings.TrimSpace(t) == "" {
			rs.add(0, fmt.Sprintf("tags[%d]", i+1), "is blank", "write a tag name or remove the item")
		}
	}
	for i, cmd := range s.Reset {
		key := fmt.Sprintf("reset[%d]", i+1)
		if strings.TrimSpace(cmd) == "" {
			rs.add(0, key, "is an empty command", "write the command or remove the item")
			continue
		}
		shell(cmd, 0, key, rs)
	}
	if len(s.Steps) == 0 {
		rs.add(0, "steps", "lists no steps", "write steps: with at least one step (note, run, expect)")
	}
	for i := range s.Steps {
		n := i + 1
		if rs.stepRefused(n) {
			continue
		}
		step(&s.Steps[i], n, rs)
	}
}

// kebabOf is the kebab-case spelling of s, for a suggestion.
func kebabOf(s string) string {
	var b strings.Builder
	dash := false
	for _, r := range strings.ToLower(s) {
		if (r >= 'a' && r <= 'z') || (r >= '0' && r <= '9') {
			if dash && b.Len() > 0 {
				b.WriteByte('-')
			}
			b.WriteRune(r)
			dash = false
			continue
		}
		dash = true
	}
	if b.Len() == 0 {
		return "my-scenario"
	}
	return b.String()
}

func step(st *Step, n int, rs *refusals) {
	switch {
	case strings.TrimSpace(st.Note) == "":
		rs.add(n, "note", "is blank", fmt.Sprintf("write note: with one line of at most %d characters saying what the step shows", MaxNote))
	case strings.ContainsAny(st.Note, "\n\r\u2028\u2029\u0085"):
		rs.add(n, "note", "is more than one line", "write the note on one line after note:, without | or >")
	case utf8.RuneCountInString(st.Note) > MaxNote:
		rs.add(n, "note", fmt.Sprintf("is %d characters, over %d", utf8.RuneCountInString(st.Note), MaxNote),
			fmt.Sprintf("write a note of at most %d characters", MaxNote))
	}
	if strings.TrimSpace(st.Run) == "" {
		rs.add(n, "run", "is empty", "write the command the step runs, as a reader would type it")
	} else {
		shell(st.Run, n, "run", rs)
	}
	duration(st.Retry, n, "retry", rs)
	duration(st.Timeout, n, "timeout", rs)
	if st.Sync != "" && (strings.TrimSpace(st.Sync) == "" || strings.ContainsAny(st.Sync, "\n\r")) {
		rs.add(n, "sync", "is not a one-word phase", "write sync: applying (the phase pill the player shows) or remove it")
	}
	if st.Show != nil && len(st.Show) == 0 {
		rs.add(n, "show", "lists nothing", "write show: [stdout] or show: [stderr], or remove it to show both interleaved")
	}
	seen := map[string]bool{}
	for i, s := range st.Show {
		key := fmt.Sprintf("show[%d]", i+1)
		switch {
		case !oneOf(s, Streams):
			rs.add(n, key, fmt.Sprintf("%q is neither stdout nor stderr", s), "write stdout or stderr")
		case seen[s]:
			rs.add(n, key, fmt.Sprintf("names %s twice", s), "list each stream once")
		}
		seen[s] = true
	}
	if st.Await != nil {
		observation(st.Await, n, "await", rs)
	}
	if st.Expect == nil {
		rs.add(n, "expect", "is missing", "write expect: with exit: and what the output must show")
		return
	}
	expect(st.Expect, n, rs)
}

func expect(e *Expect, n int, rs *refusals) {
	if e.Exit == nil {
		rs.add(n, "expect.exit", "is missing", "write exit: 0 (or the code the command must return) under expect")
	}
	lists := []struct {
		key    string
		values []string
	}{
		{"stdout_contains", e.StdoutContains}, {"stdout_absent", e.StdoutAbsent},
		{"stderr_contains", e.StderrContains}, {"stderr_absent", e.StderrAbsent},
	}
	for _, l := range lists {
		for i, v := range l.values {
			if v == "" {
				rs.add(n, fmt.Sprintf("expect.%s[%d]", l.key, i+1), "is empty text, which every output holds", "write the text to look for or remove the item")
			}
		}
	}
	for _, pair := range [][2]int{{0, 1}, {2, 3}} {
		absent := map[string]bool{}
		for _, v := range lists[pair[1]].values {
			absent[v] = true
		}
		for i, v := range lists[pair[0]].values {
			if v != "" && absent[v] {
				rs.add(n, fmt.Sprintf("expect.%s[%d]", lists[pair[0]].key, i+1),
					fmt.Sprintf("%q is also in %s, so the step can never hold", v, lists[pair[1]].key), "keep it in one of the two lists")
			}
		}
	}
	if e.Resource != nil {
		observation(e.Resource, n, "expect.resource", rs)
	}
}

func observation(o *Observation, n int, key string, rs *refusals) {
	if strings.TrimSpace(o.Kind) == "" {
		rs.add(n, key+".kind", "is missing", "write kind: with the resource kind, e.g. ptahschema")
	}
	if strings.TrimSpace(o.Name) == "" {
		rs.add(n, key+".name", "is missing", "write name: with the object's name")
	}
	if o.Namespace != "" && strings.TrimSpace(o.Namespace) == "" {
		rs.add(n, key+".namespace", "is blank", "write the namespace or remove the key")
	}
	duration(o.Timeout, n, key+".timeout", rs)
	if o.Generation != "" && o.Generation != GenerationCurrent {
		rs.add(n, key+".generation", fmt.Sprintf("%q is not current", o.Generation), "write generation: current or remove it")
	}
	switch {
	case o.Absent && (o.Condition != nil || len(o.Fields) > 0):
		rs.add(n, key+".absent", "asks for an object that does not exist and for its condition or fields", "write either absent: true or condition:/fields:")
	case o.Absent && o.Generation != "":
		rs.add(n, key+".generation", "fences an object that must be absent", "remove generation:")
	case o.Absent:
	case o.Condition == nil && o.Fields != nil && len(o.Fields) == 0:
		rs.add(n, key+".fields", "lists no fields", "write at least one field (path with equals or notEmpty)")
	case o.Condition == nil && len(o.Fields) == 0:
		rs.add(n, key, "asks nothing of the object", "write a condition:, fields: or absent: true")
	case o.Condition == nil && o.Generation == GenerationCurrent:
		rs.add(n, key+".generation", "fences no condition", "add a condition: for generation: current to apply to, or remove it")
	}
	if c := o.Condition; c != nil {
		for _, f := range []struct{ name, value, example string }{
			{"type", c.Type, "InSync"}, {"status", c.Status, "True"}, {"reason", c.Reason, "ScopedConverged"},
		} {
			if strings.TrimSpace(f.value) == "" {
				rs.add(n, key+".condition."+f.name, "is missing", fmt.Sprintf("write %s: %s (conditions are matched on type, status and reason)", f.name, f.example))
			}
		}
		if c.Status != "" && !oneOf(c.Status, Statuses) {
			rs.add(n, key+".condition.status", fmt.Sprintf("%q is not True, False or Unknown", c.Status), "write status: True, False or Unknown")
		}
	}
	for i, f := range o.Fields {
		fk := fmt.Sprintf("%s.fields[%d]", key, i+1)
		if strings.TrimSpace(f.Path) == "" {
			rs.add(n, fk+".path", "is missing", "write path: with a field path such as status.phase")
		}
		switch {
		case f.Equals != nil && f.NotEmpty:
			rs.add(n, fk, "has both equals and notEmpty", "keep one of the two")
		case f.Equals == nil && !f.NotEmpty:
			rs.add(n, fk, "has neither equals nor notEmpty", "write equals: VALUE or notEmpty: true")
		}
	}
}

func duration(v string, n int, key string, rs *refusals) {
	if v == "" {
		return
	}
	d, err := time.ParseDuration(v)
	switch {
	case err != nil:
		rs.add(n, key, fmt.Sprintf("%q is not a duration", v), fmt.Sprintf("write %s: 30s, 6m or 1h", lastKey(key)))
	case d <= 0:
		rs.add(n, key, fmt.Sprintf("%q is not a positive duration", v), fmt.Sprintf("write %s: 30s, 6m or 1h", lastKey(key)))
	}
}

func lastKey(key string) string {
	if i := strings.LastIndexByte(key, '.'); i >= 0 {
		return key[i+1:]
	}
	return key
}

// shell refuses a command that is not POSIX sh, that reads an environment
// name a reader does not have, or whose reads cannot be known.
func shell(src string, n int, key string, rs *refusals) {
	an, err := shellenv.Analyze(src)
	if err != nil {
		rs.add(n, key, "is not POSIX sh: "+err.Error(), "write POSIX sh, which the recorder runs with sh -c")
		return
	}
	seen := map[string]bool{}
	for _, r := range an.Reads {
		if envnames.Readable(r.Name) || seen[r.Name] {
			continue
		}
		seen[r.Name] = true
		where := fmt.Sprintf("line %d", r.Line)
		if r.Via != "" {
			where += ", " + r.Via
		}
		rs.also(n, key, fmt.Sprintf("reads the environment name %s (%s), which is not on the published list", r.Name, where),
			fmt.Sprintf("write the value into the command, set %s in the step before reading it, or read one of %s", r.Name, envnames.List()))
	}
	for _, p := range an.Problems {
		rs.also(n, key, fmt.Sprintf("line %d: %s", p.Line, p.What), p.Instead)
	}
}

func oneOf(v string, list []string) bool {
	for _, x := range list {
		if v == x {
			return true
		}
	}
	return false
}
