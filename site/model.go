package site

import (
	"fmt"
	"strconv"
	"strings"

	"ptah.run/operator/recorder/terminal"
)

// Site is everything the pages show, built from one recording.
type Site struct {
	Lab         Lab
	Environment []EnvName
	Groups      []Group
	Pages       []*Page
}

// Lab is what a recording ran against, as "What it ran against" lists it.
type Lab struct {
	Kubernetes Value
	Operator   Value
	// OperatorSource is the digest of the operator's own files the images
	// were built from.
	OperatorSource Value
	Ptah           Value
	Executor       Value
	Recorded       Value
	Scenarios      Value
}

// Value is a fact shown short, with the whole of it one hover away.
type Value struct {
	Short string
	Full  string
}

// EnvName is a published environment name with the sentence a reader sees.
type EnvName struct {
	Name    string
	Meaning string
}

// Group is one heading of the catalog: the scenarios whose first tag it is.
type Group struct {
	Tag   string
	Pages []*Page
}

// Page is one scenario's replay page.
type Page struct {
	ID      string
	Title   string
	Tagline string
	Learn   string
	Tags    []string
	// File is where the scenario lives in the repository.
	File   string
	Steps  []Step
	Checks []Check
	// Duration is the cast's length in seconds: the player's clock runs
	// on the cast's, so a moment on the page is the same moment in the cast.
	Duration float64
}

// Step is one published command: the note above it, the command as written,
// the phase the player shows, and what the terminal showed.
type Step struct {
	Number  int
	Note    string
	Command string
	Sync    string
	Lines   []Line
	// T is when the cast shows the note; Typed and Ran bound the typing of
	// the command; End is when the step's last output line is shown.
	T, Typed, Ran, End float64
}

// Check is one row of "What was checked".
type Check struct {
	Step  int
	Claim string
	Held  bool
	// Runs says, for a recording of repeated runs, in how many it held and
	// how long it waited or ran; empty for one run.
	Runs string
	// T is the moment in the cast the claim was judged: an await's before
	// the command is typed, the command's and what it expects after its
	// output. Before says which.
	T      float64
	Before bool
	// Evidence is what was observed, as the recording holds it.
	Evidence []Fact
	command  bool
}

// Fact is one observed value of a check's evidence.
type Fact struct {
	Name  string
	Value string
}

// PosterHref is where the page's poster (its final screen) is served.
func (p *Page) PosterHref() string { return "posters/" + p.ID + ".svg" }

// Href is the page's file name in the built site.
func (p *Page) Href() string { return p.ID + ".html" }

// CastHref is where the page's asciicast is served.
func (p *Page) CastHref() string { return "casts/" + p.ID + ".cast" }

// FirstCommand is the first line of the first step's command, for the catalog.
func (p *Page) FirstCommand() string {
	if len(p.Steps) == 0 {
		return ""
	}
	first, _, _ := strings.Cut(p.Steps[0].Command, "\n")
	return strings.TrimSuffix(strings.TrimSpace(first), `\`)
}

// Held counts the checks that held.
func (p *Page) Held() int {
	n := 0
	for _, c := range p.Checks {
		if c.Held {
			n++
		}
	}
	return n
}

// TranscriptLines is the session as the page prints it, line by line:
// "# note", "$ command" with its continuation lines as written, then the
// output. The browser test finds each of them in the player's terminal.
func (p *Page) TranscriptLines() []string { return p.session("") }

// session is the transcript with continuation lines of a command prefixed,
// as a shell's secondary prompt (and the cast) shows them.
func (p *Page) session(continuation string) []string {
	var out []string
	for _, s := range p.Steps {
		out = append(out, "# "+s.Note)
		for i, l := range strings.Split(s.Command, "\n") {
			if i == 0 {
				l = "$ " + l
			} else {
				l = continuation + l
			}
			out = append(out, l)
		}
		for _, l := range s.Lines {
			out = append(out, l.Text)
		}
	}
	return out
}

// Group pages by their first tag: groups in the order their first scenario
// appears in the recording, scenarios in recording order within a group.
func groupByFirstTag(pages []*Page) ([]Group, error) {
	var groups []Group
	index := map[string]int{}
	for _, p := range pages {
		if len(p.Tags) == 0 {
			return nil, fmt.Errorf("scenario %s has no tags: the catalog groups by the first tag; record it again with tags set", p.ID)
		}
		tag := p.Tags[0]
		i, ok := index[tag]
		if !ok {
			i = len(groups)
			index[tag] = i
			groups = append(groups, Group{Tag: tag})
		}
		groups[i].Pages = append(groups[i].Pages, p)
	}
	return groups, nil
}

// short keeps the first 12 hex digits of a commit or digest, as the seed's
// "What it ran against" shows them; the algorithm prefix stays.
func short(s string) Value {
	prefix, hex, found := strings.Cut(s, ":")
	if !found {
		prefix, hex = "", s
	} else {
		prefix += ":"
	}
	if len(hex) > 12 {
		hex = hex[:12]
	}
	return Value{Short: prefix + hex, Full: s}
}

// setTimes places every step, output line and check on the cast's clock,
// from when the cast writes each screen line of the session (in the order
// session lists them).
func (p *Page) setTimes(lines []span, duration float64) error {
	i := 0
	next := func(n int) ([]span, error) {
		if i+n > len(lines) {
			return nil, fmt.Errorf("the cast ends before the recording's session does; record the scenario again")
		}
		got := lines[i : i+n]
		i += n
		return got, nil
	}
	for si := range p.Steps {
		st := &p.Steps[si]
		note, err := next(1)
		if err != nil {
			return err
		}
		st.T = note[0].Start
		cmd, err := next(strings.Count(st.Command, "\n") + 1)
		if err != nil {
			return err
		}
		st.Typed, st.Ran, st.End = cmd[0].Start, cmd[len(cmd)-1].End, cmd[len(cmd)-1].End
		for li := range st.Lines {
			l := &st.Lines[li]
			out, err := next(strings.Count(l.Text, "\n") + 1)
			if err != nil {
				return err
			}
			l.T = out[0].Start
			st.End = out[len(out)-1].End
		}
	}
	p.Duration = duration
	for ci := range p.Checks {
		c := &p.Checks[ci]
		st := p.step(c.Step)
		if st == nil {
			return fmt.Errorf("check %q names step %d, which the recording does not have", c.Claim, c.Step)
		}
		// Within a step the recorder lists an await's checks first, then
		// the command's (the one with an exit status), then what the step
		// expects of objects after it ran.
		c.Before = !c.command && !p.commandCheckedBefore(ci)
		if c.Before {
			c.T = st.T
		} else {
			c.T = st.End
		}
	}
	return nil
}

func (p *Page) step(n int) *Step {
	for i := range p.Steps {
		if p.Steps[i].Number == n {
			return &p.Steps[i]
		}
	}
	return nil
}

// commandCheckedBefore says whether the command check of check i's step
// comes before it in the recording.
func (p *Page) commandCheckedBefore(i int) bool {
	for j := i - 1; j >= 0 && p.Checks[j].Step == p.Checks[i].Step; j-- {
		if p.Checks[j].command {
			return true
		}
	}
	return false
}

// Line is one line of output as the page shows it, with the seconds from the
// command's start to its last byte, so the player shows it when it came, and
// the styled runs the terminal showed it in.
type Line struct {
	At       float64
	Stream   string
	Text     string
	Segments []Segment
	// T is when the cast shows the line, in seconds from the cast's start.
	T float64
}

// Segment is a run of text in one style; Class is empty for the terminal's
// default style, else the site.css classes that draw it.
type Segment struct {
	Class string
	Text  string
}

// styledLine is one recorded output line as styled runs, read by the same
// terminal model the recorder scanned it with; lines are joined by a newline
// in the default style, so the runs' text is terminal.Line's.
func styledLine(text string) []Segment {
	var out []Segment
	for i, row := range terminal.Rows(text) {
		if i > 0 {
			out = append(out, Segment{Text: "\n"})
		}
		for _, r := range row.Runs() {
			out = append(out, Segment{Class: class(r.Style), Text: r.Text})
		}
	}
	return out
}

// class names the site.css classes that draw st, "" for the default style.
func class(st terminal.Style) string {
	var c []string
	if n, ok := st.Fg.Index(); ok {
		c = append(c, "fg"+strconv.Itoa(n))
	}
	if n, ok := st.Bg.Index(); ok {
		c = append(c, "bg"+strconv.Itoa(n))
	}
	for _, f := range []struct {
		on   bool
		name string
	}{{st.Bold, "bold"}, {st.Dim, "dim"}, {st.Italic, "italic"}, {st.Underline, "underline"}} {
		if f.on {
			c = append(c, f.name)
		}
	}
	return strings.Join(c, " ")
}
