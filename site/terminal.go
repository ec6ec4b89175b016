package site

import (
	"strconv"
	"strings"
	"unicode/utf8"
)

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

// style is what SGR sequences set: a colour is 0 for the default, else one
// of the 16 terminal colours plus one.
type style struct {
	fg, bg                       int
	bold, dim, italic, underline bool
}

// class names the site.css classes for s, "" for the default style.
func (s style) class() string {
	var c []string
	if s.fg > 0 {
		c = append(c, "fg"+strconv.Itoa(s.fg-1))
	}
	if s.bg > 0 {
		c = append(c, "bg"+strconv.Itoa(s.bg-1))
	}
	for _, f := range []struct {
		on   bool
		name string
	}{{s.bold, "bold"}, {s.dim, "dim"}, {s.italic, "italic"}, {s.underline, "underline"}} {
		if f.on {
			c = append(c, f.name)
		}
	}
	return strings.Join(c, " ")
}

// sgr applies one "CSI ... m" sequence's parameters. Colours beyond the 16
// (256-colour and RGB) are read past and drawn in the default colour.
func (s *style) sgr(params string) {
	if params == "" {
		params = "0"
	}
	ps := strings.Split(strings.ReplaceAll(params, ":", ";"), ";")
	for i := 0; i < len(ps); i++ {
		n, err := strconv.Atoi(ps[i])
		if err != nil && ps[i] != "" {
			continue
		}
		switch {
		case n == 0:
			*s = style{}
		case n == 1:
			s.bold = true
		case n == 2:
			s.dim = true
		case n == 3:
			s.italic = true
		case n == 4:
			s.underline = true
		case n == 22:
			s.bold, s.dim = false, false
		case n == 23:
			s.italic = false
		case n == 24:
			s.underline = false
		case n >= 30 && n <= 37:
			s.fg = n - 30 + 1
		case n == 39:
			s.fg = 0
		case n >= 40 && n <= 47:
			s.bg = n - 40 + 1
		case n == 49:
			s.bg = 0
		case n >= 90 && n <= 97:
			s.fg = n - 90 + 8 + 1
		case n >= 100 && n <= 107:
			s.bg = n - 100 + 8 + 1
		case n == 38 || n == 48:
			colour := 0
			if i+2 < len(ps) && ps[i+1] == "5" {
				if c, err := strconv.Atoi(ps[i+2]); err == nil && c >= 0 && c < 16 {
					colour = c + 1
				}
				i += 2
			} else if i+4 < len(ps) && ps[i+1] == "2" {
				i += 4
			} else {
				i = len(ps)
			}
			if n == 38 {
				s.fg = colour
			} else {
				s.bg = colour
			}
		}
	}
}

// cell is one character on the screen and the style it was written in.
type cell struct {
	r  rune
	st style
}

// screenLines reads bytes written to a terminal and returns the lines it
// shows: escape sequences (colour, cursor, titles) are dropped, a carriage
// return starts the line over, a backspace removes a character. A last line
// without a newline is still shown.
func screenLines(data string) []string {
	var out []string
	for _, l := range styledLines(data) {
		out = append(out, plainText(l))
	}
	return out
}

// styledLines is screenLines with the style each character was written in,
// so colour and bold are drawn from the recorded bytes.
func styledLines(data string) [][]cell {
	var s screen
	s.feed(data)
	return s.finish()
}

func plainText(cells []cell) string {
	var b strings.Builder
	for _, c := range cells {
		b.WriteRune(c.r)
	}
	return b.String()
}

// segments joins cells of one style into runs.
func segments(cells []cell) []Segment {
	var out []Segment
	for _, c := range cells {
		class := c.st.class()
		if n := len(out); n > 0 && out[n-1].Class == class {
			out[n-1].Text += string(c.r)
			continue
		}
		out = append(out, Segment{Class: class, Text: string(c.r)})
	}
	return out
}

// screenLine is one recorded output line as a terminal shows it.
func screenLine(text string) string {
	return strings.Join(screenLines(text), "\n")
}

// styledLine is screenLine as styled runs; lines are joined by a newline
// in the default style, so the runs' text is screenLine's.
func styledLine(text string) []Segment {
	var out []Segment
	for i, l := range styledLines(text) {
		if i > 0 {
			out = append(out, Segment{Text: "\n"})
		}
		out = append(out, segments(l)...)
	}
	return out
}

// escape states of the small terminal model.
const (
	plain = iota
	escStart
	csi
	osc
	oscEsc
)

type screen struct {
	state  int
	params strings.Builder
	st     style
	line   []cell
	// returned is set by a carriage return: the next character overwrites
	// the line from its start, while a newline keeps it.
	returned bool
	lines    [][]cell
}

func (s *screen) feed(data string) {
	for len(data) > 0 {
		r, n := utf8.DecodeRuneInString(data)
		data = data[n:]
		s.put(r)
	}
}

func (s *screen) finish() [][]cell {
	if len(s.line) > 0 {
		s.lines = append(s.lines, s.line)
		s.line = nil
	}
	return s.lines
}

func (s *screen) put(r rune) {
	switch s.state {
	case escStart:
		switch r {
		case '[':
			s.state = csi
			s.params.Reset()
		case ']':
			s.state = osc
		default:
			s.state = plain
		}
		return
	case csi:
		if r >= 0x40 && r <= 0x7e {
			if r == 'm' {
				s.st.sgr(s.params.String())
			}
			s.state = plain
		} else if s.params.Len() < 64 {
			s.params.WriteRune(r)
		}
		return
	case osc:
		switch r {
		case 0x07:
			s.state = plain
		case 0x1b:
			s.state = oscEsc
		}
		return
	case oscEsc:
		s.state = plain
		return
	}
	switch {
	case r == 0x1b:
		s.state = escStart
	case r == '\r':
		s.returned = true
	case r == '\n':
		s.lines = append(s.lines, s.line)
		s.line = nil
		s.returned = false
	case r == '\b':
		if len(s.line) > 0 {
			s.line = s.line[:len(s.line)-1]
		}
	case r < 0x20 && r != '\t', r == 0x7f:
	default:
		if s.returned {
			s.line = nil
			s.returned = false
		}
		s.line = append(s.line, cell{r, s.st})
	}
}
