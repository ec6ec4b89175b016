package site

import (
	"sort"
	"strings"
	"unicode/utf8"
)

// Chunk is one timed piece of a command's output as the recording holds it:
// the bytes a terminal received, At seconds after the command started.
type Chunk struct {
	At     float64
	Stream string
	Data   string
}

// Line is one line of output as a terminal finally shows it, stamped with
// the time its last byte arrived, so the player can show it when it did.
type Line struct {
	At     float64
	Stream string
	Text   string
}

// ScreenLines turns the chunks of one command into the lines a reader's
// terminal shows: escape sequences (colour, cursor, titles) are dropped, a
// carriage return starts the line over, a backspace removes a character.
// Each stream keeps its own line in progress, so stdout and stderr arriving
// in the same moment do not splice into one line.
func ScreenLines(chunks []Chunk) []Line {
	byStream := map[string]*screen{}
	var order []string
	for _, c := range chunks {
		s := byStream[c.Stream]
		if s == nil {
			s = &screen{stream: c.Stream}
			byStream[c.Stream] = s
			order = append(order, c.Stream)
		}
		s.write(c.At, c.Data)
	}
	var lines []Line
	for _, name := range order {
		lines = append(lines, byStream[name].close()...)
	}
	sort.SliceStable(lines, func(i, j int) bool { return lines[i].At < lines[j].At })
	return lines
}

// ScreenText is ScreenLines for bytes without timing, as one string with a
// newline after every line.
func ScreenText(data string) string {
	var b strings.Builder
	for _, l := range ScreenLines([]Chunk{{Data: data}}) {
		b.WriteString(l.Text)
		b.WriteByte('\n')
	}
	return b.String()
}

// escape states of the small terminal model.
const (
	plain = iota
	escStart
	csi
	osc
	oscEsc
)

// screen is one stream's line in progress.
type screen struct {
	stream string
	state  int
	line   []rune
	// returned is set by a carriage return: the next character overwrites
	// the line from its start, while a newline keeps it.
	returned bool
	// partial holds the first bytes of a rune split across chunks.
	partial string
	last    float64
	lines   []Line
}

func (s *screen) write(at float64, data string) {
	s.last = at
	data = s.partial + data
	s.partial = ""
	for len(data) > 0 {
		// A rune whose bytes go on in the next chunk waits for them.
		if !utf8.FullRuneInString(data) {
			s.partial = data
			return
		}
		r, n := utf8.DecodeRuneInString(data)
		data = data[n:]
		s.put(at, r)
	}
}

func (s *screen) put(at float64, r rune) {
	switch s.state {
	case escStart:
		switch r {
		case '[':
			s.state = csi
		case ']':
			s.state = osc
		default:
			s.state = plain
		}
		return
	case csi:
		if r >= 0x40 && r <= 0x7e {
			s.state = plain
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
		s.lines = append(s.lines, Line{At: at, Stream: s.stream, Text: string(s.line)})
		s.line = s.line[:0]
		s.returned = false
	case r == '\b':
		if len(s.line) > 0 {
			s.line = s.line[:len(s.line)-1]
		}
	case r == '\t':
		s.overwrite()
		s.line = append(s.line, r)
	case r < 0x20 || r == 0x7f:
	default:
		s.overwrite()
		s.line = append(s.line, r)
	}
}

func (s *screen) overwrite() {
	if s.returned {
		s.line = s.line[:0]
		s.returned = false
	}
}

// close ends the stream: a last line without a newline is still shown.
func (s *screen) close() []Line {
	for _, r := range s.partial {
		s.put(s.last, r)
	}
	if len(s.line) > 0 {
		s.lines = append(s.lines, Line{At: s.last, Stream: s.stream, Text: string(s.line)})
		s.line = nil
	}
	return s.lines
}
