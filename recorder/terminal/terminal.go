// Package terminal shows bytes the way a terminal does: escape sequences
// are read (by github.com/charmbracelet/x/ansi) and applied to a line of
// cells, so a carriage return, a backspace or a cursor movement overwrites
// what was there and a colour change leaves the text around it unbroken.
// The recorder scans this view for credentials and the site shows it (its
// text, and the colours and weights each character was written in), so
// what a page shows is exactly what was scanned.
package terminal

import (
	"image/color"
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

// Colour is one of a terminal's 16 colours, or its default: 0 is the
// default and n+1 is colour n (0-7 normal, 8-15 bright).
type Colour uint8

// Index is the colour's number, 0 to 15; ok is false for the default.
func (c Colour) Index() (n int, ok bool) { return int(c) - 1, c > 0 }

// Style is what SGR sequences set for the characters written after them.
// Colours beyond the 16 (the 256-colour cube and RGB) are read past and
// drawn in the default colour; the zero Style is the terminal's default.
type Style struct {
	Fg, Bg                       Colour
	Bold, Dim, Italic, Underline bool
}

// Cell is one character on a line and the style it was written in.
type Cell struct {
	Text  string
	Style Style
}

// Row is one line a terminal shows, as cells. End is the byte offset in
// data (after ValidUTF8, which leaves valid text as it is) just past what
// ended the line: its newline, or the end of data for a last line without
// one, so a caller that knows when each byte was written knows when each
// line was.
type Row struct {
	Cells []Cell
	End   int
}

// Text is the row's characters, as Lines shows the line.
func (r Row) Text() string {
	var b strings.Builder
	for _, c := range r.Cells {
		b.WriteString(c.Text)
	}
	return b.String()
}

// Run is text written in one style.
type Run struct {
	Style Style
	Text  string
}

// Runs joins the row's cells of one style, in order; their text is Text's.
func (r Row) Runs() []Run {
	var out []Run
	for _, c := range r.Cells {
		if n := len(out); n > 0 && out[n-1].Style == c.Style {
			out[n-1].Text += c.Text
			continue
		}
		out = append(out, Run{c.Style, c.Text})
	}
	return out
}

// Rows is Lines with each character's style and where each line ended.
// Rows(data)[i].Text() is Lines(data)[i].
func Rows(data string) []Row {
	s := screen{styled: true}
	s.write(data)
	return s.rows
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

// screen is one line of cells with a cursor and the current style, and the
// lines already ended: as rows when styled, else as text only (the scan
// reads much output and keeps no cells).
type screen struct {
	cells  []Cell
	col    int
	style  Style
	styled bool
	lines  []string
	rows   []Row
}

func (s *screen) text() string {
	var b strings.Builder
	for _, c := range s.cells {
		b.WriteString(c.Text)
	}
	return b.String()
}

// end ends the current line at offset off.
func (s *screen) end(off int) {
	if s.styled {
		s.rows = append(s.rows, Row{Cells: s.cells, End: off})
		s.cells = nil
	} else {
		s.lines = append(s.lines, s.text())
		s.cells = s.cells[:0]
	}
	s.col = 0
}

func (s *screen) write(data string) {
	data = ValidUTF8(data)
	p := ansi.NewParser()
	var state byte
	off := 0
	for off < len(data) {
		seq, width, n, next := ansi.DecodeSequence(data[off:], state, p)
		if n <= 0 {
			n = 1
		}
		state = next
		off += n
		switch {
		case width > 0:
			s.put(seq)
		case len(seq) == 1:
			s.control(seq[0], off)
		case ansi.HasCsiPrefix(seq):
			s.csi(p)
		}
	}
	if len(s.cells) > 0 || s.col > 0 {
		s.end(len(data))
	}
}

// put writes one character at the cursor, overwriting what was there.
func (s *screen) put(text string) {
	for len(s.cells) < s.col {
		s.cells = append(s.cells, Cell{Text: " "})
	}
	c := Cell{Text: text, Style: s.style}
	if s.col < len(s.cells) {
		s.cells[s.col] = c
	} else {
		s.cells = append(s.cells, c)
	}
	s.col++
}

// control applies a control character; off is just past it.
func (s *screen) control(c byte, off int) {
	switch c {
	case '\n':
		s.end(off)
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

// csi applies the sequences that change which characters a line shows
// (cursor movement along the line and erasing) and how they are drawn
// (SGR). Titles and the rest change nothing a reader could see.
func (s *screen) csi(p *ansi.Parser) {
	cmd := ansi.Cmd(p.Command())
	if cmd.Prefix() != 0 || cmd.Intermediate() != 0 {
		return
	}
	n, _ := p.Param(0, 1)
	switch cmd.Final() {
	case 'm':
		s.style.sgr(p.Params())
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
				s.cells[i] = Cell{Text: " "}
			}
		case 2:
			s.cells = s.cells[:0]
		}
	}
}

// sgr applies one SGR sequence's parameters; none at all, or an empty one,
// is 0 (reset), as a terminal reads it. Unknown parameters are ignored.
func (st *Style) sgr(ps ansi.Params) {
	if len(ps) == 0 {
		*st = Style{}
		return
	}
	for i := 0; i < len(ps); i++ {
		switch n := ps[i].Param(0); {
		case n == 0:
			*st = Style{}
		case n == 1:
			st.Bold = true
		case n == 2:
			st.Dim = true
		case n == 3:
			st.Italic = true
		case n == 4:
			st.Underline = true
		case n == 22:
			st.Bold, st.Dim = false, false
		case n == 23:
			st.Italic = false
		case n == 24:
			st.Underline = false
		case n >= 30 && n <= 37:
			st.Fg = Colour(n - 30 + 1)
		case n == 39:
			st.Fg = 0
		case n >= 40 && n <= 47:
			st.Bg = Colour(n - 40 + 1)
		case n == 49:
			st.Bg = 0
		case n >= 90 && n <= 97:
			st.Fg = Colour(n - 90 + 8 + 1)
		case n >= 100 && n <= 107:
			st.Bg = Colour(n - 100 + 8 + 1)
		case n == 38 || n == 48:
			var c Colour
			read, colour := extendedColour(ps[i:])
			if read == 0 {
				// Not a colour the library can read: what follows
				// cannot be told apart from its parameters.
				i = len(ps)
			} else {
				c = colour
				i += read - 1
			}
			if n == 38 {
				st.Fg = c
			} else {
				st.Bg = c
			}
		}
	}
}

// extendedColour reads a "38;5;n"-style colour (either separator) with
// ansi.ReadStyleColor: the parameters it took (0 when it could not read
// one) and the colour when it is an index under 16, else the default.
func extendedColour(ps ansi.Params) (int, Colour) {
	var c color.Color
	read := ansi.ReadStyleColor(ps, &c)
	if ix, ok := c.(ansi.ExtendedColor); ok && ix < 16 {
		return read, Colour(ix + 1)
	}
	return read, 0
}
