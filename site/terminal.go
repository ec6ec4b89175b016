package site

import (
	"strings"
	"unicode/utf8"
)

// Line is one line of output as the page shows it, with the seconds from the
// command's start to its last byte, so the player shows it when it came.
type Line struct {
	At     float64
	Stream string
	Text   string
}

// screenLines reads bytes written to a terminal and returns the lines it
// shows: escape sequences (colour, cursor, titles) are dropped, a carriage
// return starts the line over, a backspace removes a character. A last line
// without a newline is still shown.
func screenLines(data string) []string {
	var s screen
	for len(data) > 0 {
		r, n := utf8.DecodeRuneInString(data)
		data = data[n:]
		s.put(r)
	}
	if len(s.line) > 0 {
		s.lines = append(s.lines, string(s.line))
	}
	return s.lines
}

// screenLine is one recorded output line as a terminal shows it.
func screenLine(text string) string {
	return strings.Join(screenLines(text), "\n")
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
	state int
	line  []rune
	// returned is set by a carriage return: the next character overwrites
	// the line from its start, while a newline keeps it.
	returned bool
	lines    []string
}

func (s *screen) put(r rune) {
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
		s.lines = append(s.lines, string(s.line))
		s.line = s.line[:0]
		s.returned = false
	case r == '\b':
		if len(s.line) > 0 {
			s.line = s.line[:len(s.line)-1]
		}
	case r < 0x20 && r != '\t', r == 0x7f:
	default:
		if s.returned {
			s.line = s.line[:0]
			s.returned = false
		}
		s.line = append(s.line, r)
	}
}
