// Package terminal shows bytes the way a terminal does: escape sequences
// are read (by github.com/charmbracelet/x/ansi) and applied to a line of
// cells, so a carriage return, a backspace or a cursor movement overwrites
// what was there and a colour change leaves the text around it unbroken.
// The recorder scans this view for credentials and the site shows it, so
// what a page shows is exactly what was scanned.
package terminal

import (
	"strings"
	"unicode/utf8"

	"github.com/charmbracelet/x/ansi"
)

// Lines returns the lines a terminal shows for data, one per newline, with a
// last line without a newline still shown. Lines are not wrapped at the
// terminal's width: a long line stays one line.
func Lines(data string) []string {
	var s screen
	s.write(data)
	if len(s.cells) > 0 || s.col > 0 {
		s.lines = append(s.lines, s.text())
	}
	return s.lines
}

// Line is one recorded output line as a terminal shows it.
func Line(text string) string {
	return strings.Join(Lines(text), "\n")
}

// Text is data as a terminal shows it, lines joined by newlines.
func Text(data string) string {
	return strings.Join(Lines(data), "\n")
}

// ValidUTF8 replaces each byte that is not part of valid UTF-8 with U+FFFD,
// one per byte, as a terminal shows it; valid text is returned unchanged.
func ValidUTF8(s string) string {
	if utf8.ValidString(s) {
		return s
	}
	var b strings.Builder
	b.Grow(len(s) + 8)
	for len(s) > 0 {
		r, n := utf8.DecodeRuneInString(s)
		if r == utf8.RuneError && n == 1 {
			b.WriteRune(utf8.RuneError)
		} else {
			b.WriteString(s[:n])
		}
		s = s[n:]
	}
	return b.String()
}

// screen is one line of cells with a cursor, and the lines already ended.
type screen struct {
	cells []string
	col   int
	lines []string
}

func (s *screen) text() string {
	return strings.Join(s.cells, "")
}

func (s *screen) write(data string) {
	data = ValidUTF8(data)
	p := ansi.NewParser()
	var state byte
	for len(data) > 0 {
		seq, width, n, next := ansi.DecodeSequence(data, state, p)
		if n <= 0 {
			n = 1
		}
		state = next
		data = data[n:]
		switch {
		case width > 0:
			s.put(seq)
		case len(seq) == 1:
			s.control(seq[0])
		case ansi.HasCsiPrefix(seq):
			s.csi(p)
		}
	}
}

// put writes one character at the cursor, overwriting what was there.
func (s *screen) put(cell string) {
	for len(s.cells) < s.col {
		s.cells = append(s.cells, " ")
	}
	if s.col < len(s.cells) {
		s.cells[s.col] = cell
	} else {
		s.cells = append(s.cells, cell)
	}
	s.col++
}

func (s *screen) control(c byte) {
	switch c {
	case '\n':
		s.lines = append(s.lines, s.text())
		s.cells, s.col = s.cells[:0], 0
	case '\r':
		s.col = 0
	case '\b':
		if s.col > 0 {
			s.col--
		}
	case '\t':
		// A tab is kept as itself: the page and the scan read it as text.
		s.put("\t")
	}
}

// csi applies the sequences that change which characters a line shows:
// cursor movement along the line and erasing. Colours, titles and the rest
// change nothing a reader could copy.
func (s *screen) csi(p *ansi.Parser) {
	cmd := ansi.Cmd(p.Command())
	if cmd.Prefix() != 0 || cmd.Intermediate() != 0 {
		return
	}
	n, _ := p.Param(0, 1)
	switch cmd.Final() {
	case 'C': // cursor forward
		s.col += max(n, 1)
	case 'D': // cursor back
		s.col = max(s.col-max(n, 1), 0)
	case 'G': // cursor to column
		s.col = max(n, 1) - 1
	case 'K': // erase in line
		mode, _ := p.Param(0, 0)
		switch mode {
		case 0:
			if s.col < len(s.cells) {
				s.cells = s.cells[:s.col]
			}
		case 1:
			for i := 0; i <= s.col && i < len(s.cells); i++ {
				s.cells[i] = " "
			}
		case 2:
			s.cells = s.cells[:0]
		}
	}
}
