// Package terminal shows bytes the way a terminal does, by running them
// through a VT emulator (github.com/charmbracelet/x/vt): cursor movement,
// save and restore, insertion and deletion, scroll regions, the alternate
// screen, tabs and wide characters act as they do in a player. It is the one
// place the project talks to the emulator. The recorder scans this view for
// credentials and the site shows it (its text, and the colours and weights
// each character was written in), so what a page shows is what was scanned.
package terminal

import (
	"image/color"
	"io"
	"strings"
	"unicode/utf8"

	uv "github.com/charmbracelet/ultraviolet"
	"github.com/charmbracelet/x/ansi"
	"github.com/charmbracelet/x/vt"
)

const (
	// Width and Height are the screen Lines draws on when data's lines
	// are no wider; a wider screen (of fewer rows) is taken for wider
	// lines, up to MaxWidth, so a long line stays one line.
	Width    = 80
	Height   = 24
	MaxWidth = 8192
	// ScrollbackLines bounds the lines kept above the screen, so a cast
	// of any length takes bounded memory; older ones are dropped, as a
	// player drops them. Screen.Scrolled hands them over as they leave.
	ScrollbackLines = 10_000
)

// Lines returns the lines a terminal shows for data: the lines scrolled off
// the top, then the screen's, trailing blank lines left out. A newline also
// returns the carriage, as a terminal's line discipline makes it do.
func Lines(data string) []string {
	rows := Rows(data)
	out := make([]string, len(rows))
	for i, r := range rows {
		out[i] = r.Text()
	}
	return out
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
// Colours beyond the 16 (the 256-colour cube and RGB) are drawn in the
// default colour; the zero Style is the terminal's default.
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
// data (after ValidUTF8, which leaves valid text as it is) just past the
// newline that moved the cursor off the line, or the end of data for a line
// the cursor never left, so a caller that knows when each byte was written
// knows when each line was.
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
	data = ValidUTF8(data)
	if rows, ok := plainRows(data); ok {
		return rows
	}
	w := width(data)
	// Scrolling moves every cell of the screen: a wide screen gets fewer
	// rows, so a long line costs what a screenful does.
	s := NewScreen(w, max(1, Width*Height/w))
	defer s.Close()
	var ends []int
	off := 0
	for off < len(data) {
		i := strings.IndexByte(data[off:], '\n')
		if i < 0 {
			s.Write(data[off:])
			break
		}
		s.Write(data[off : off+i])
		s.Write("\r\n")
		off += i + 1
		for n := s.lineIndex(); len(ends) < n; {
			ends = append(ends, off)
		}
	}
	rows := s.rows(true)
	for i := range rows {
		rows[i].End = len(data)
		if i < len(ends) {
			rows[i].End = ends[i]
		}
	}
	return rows
}

// plainRows is Rows for printable ASCII and newlines, which an emulator
// would show as they are, without running one: most output is such.
func plainRows(data string) ([]Row, bool) {
	n := 0
	for i := 0; i < len(data); i++ {
		if c := data[i]; c == '\n' {
			n++
		} else if c < 0x20 || c > 0x7e {
			return nil, false
		}
	}
	if n > ScrollbackLines {
		return nil, false
	}
	rows := make([]Row, 0, n+1)
	off := 0
	for off < len(data) {
		line, _, _ := strings.Cut(data[off:], "\n")
		if len(line) >= MaxWidth {
			return nil, false
		}
		end := min(off+len(line)+1, len(data))
		line = strings.TrimRight(line, " ")
		cells := make([]Cell, len(line))
		for i := range line {
			cells[i] = Cell{Text: line[i : i+1]}
		}
		rows = append(rows, Row{Cells: cells, End: end})
		off = end
	}
	return rows, true
}

// width is the screen width that shows data's widest line unwrapped.
func width(data string) int {
	w := Width
	for line := range strings.SplitSeq(data, "\n") {
		n := ansi.StringWidth(line) + 8*strings.Count(line, "\t") + 1
		w = max(w, min(n, MaxWidth))
	}
	return w
}

// Screen is a terminal of a fixed size fed bytes in order, as a player
// replays a cast.
type Screen struct {
	e *vt.Emulator
	// Where the last Write left a control sequence, for capping its
	// parameters (see capped).
	esc, c2, csi bool
	digits       int
	// Lines an ED 3 erased from the scrollback before Scrolled handed
	// them over.
	cleared []string
}

// NewScreen returns an empty screen of width columns and height rows.
func NewScreen(width, height int) *Screen {
	e := vt.NewEmulator(width, height)
	e.SetScrollbackSize(ScrollbackLines)
	// The emulator answers queries (cursor position, device attributes)
	// on a pipe; nothing answers them here, so the answers are drained.
	go func() { _, _ = io.Copy(io.Discard, e) }()
	// The emulator saves the cursor on CSI s but does not restore it on
	// CSI u (SCORC), which players do; ESC 8 restores what CSI s saved.
	e.RegisterCsiHandler('u', func(ansi.Params) bool {
		_, _ = e.WriteString("\x1b8")
		return true
	})
	s := &Screen{e: e}
	e.RegisterCsiHandler('J', func(p ansi.Params) bool {
		switch n, _, _ := p.Param(0, 0); n {
		case 2:
			// Players erase the screen in place; the emulator also copies
			// it into its scrollback, where no player has it. Erasing up
			// to the cursor and from it is the same erase without the copy.
			_, _ = e.WriteString("\x1b[1J\x1b[0J")
			return true
		case 3:
			// Players erase the scrollback and leave the screen; the
			// emulator erases both. What the scrollback held is still
			// handed to Scrolled, whose caller has not seen it yet.
			for _, l := range e.Scrollback().Lines() {
				s.cleared = append(s.cleared, row(l, false).Text())
			}
			e.ClearScrollback()
			return true
		}
		return false
	})
	return s
}

// Write feeds data to the terminal.
func (s *Screen) Write(data string) {
	_, _ = s.e.WriteString(s.capped(data))
}

// maxDigits bounds a control sequence's numeric parameter: no screen is
// 10,000 cells wide, and the emulator repeats a character (REP) or moves
// by tab stops as many times as asked, so "CSI 2000000000 b" would take
// minutes. Digits past the bound are dropped.
const maxDigits = 4

func (s *Screen) capped(data string) string {
	var b *strings.Builder
	for i := 0; i < len(data); i++ {
		c := data[i]
		drop := false
		switch {
		case s.csi:
			switch {
			case c >= '0' && c <= '9':
				s.digits++
				drop = s.digits > maxDigits
			case c == 0x1b:
				s.csi, s.esc = false, true
			case c >= 0x40 && c <= 0x7e, c == 0x18, c == 0x1a:
				s.csi = false
			default:
				s.digits = 0
			}
		case s.esc:
			s.esc = c == 0x1b
			s.csi, s.digits = c == '[', 0
		case s.c2 && c == 0x9b: // CSI as a C1 control, in UTF-8
			s.c2, s.csi, s.digits = false, true, 0
		default:
			s.esc, s.c2 = c == 0x1b, c == 0xc2
		}
		if drop && b == nil {
			b = &strings.Builder{}
			b.WriteString(data[:i])
		}
		if b != nil && !drop {
			b.WriteByte(c)
		}
	}
	if b == nil {
		return data
	}
	return b.String()
}

// Close releases the emulator.
func (s *Screen) Close() { _ = s.e.Close() }

// Shown is the screen as it is now, rows joined by newlines, trailing
// blanks left out.
func (s *Screen) Shown() string {
	// Read cell by cell into one buffer: a scan reads the screen after
	// every chunk of a cast.
	var b strings.Builder
	lines := 0 // newlines owed before the next non-blank line
	for y := range s.e.Height() {
		if y > 0 {
			lines++
		}
		blanks := 0
		for x := range s.e.Width() {
			c := s.e.CellAt(x, y)
			switch {
			case c == nil || c.Width == 0 && c.Content == "":
			case c.Content == "" || c.Content == " ":
				blanks++
			default:
				for ; lines > 0; lines-- {
					b.WriteByte('\n')
				}
				for ; blanks > 0; blanks-- {
					b.WriteByte(' ')
				}
				b.WriteString(c.Content)
			}
		}
	}
	return b.String()
}

// Scrolled returns the lines scrolled off the top since the last call and
// forgets them, so a caller keeps each once whatever the cap.
func (s *Screen) Scrolled() []string {
	sb := s.e.Scrollback()
	out := append(make([]string, 0, len(s.cleared)+sb.Len()), s.cleared...)
	s.cleared = nil
	for _, l := range sb.Lines() {
		out = append(out, row(l, false).Text())
	}
	s.e.ClearScrollback()
	return out
}

// lineIndex is the cursor's line counted from the first scrolled off.
func (s *Screen) lineIndex() int {
	return s.e.ScrollbackLen() + s.e.CursorPosition().Y
}

func (s *Screen) screenRows(styled bool) []Row {
	var out []Row
	for y := range s.e.Height() {
		line := make(uv.Line, s.e.Width())
		for x := range line {
			if c := s.e.CellAt(x, y); c != nil {
				line[x] = *c
			}
		}
		out = append(out, row(line, styled))
	}
	for len(out) > 0 && len(out[len(out)-1].Cells) == 0 {
		out = out[:len(out)-1]
	}
	return out
}

// rows is the scrollback then the screen, down to the cursor's line: blank
// lines a newline ended are lines, and so is the cursor's once written on.
func (s *Screen) rows(styled bool) []Row {
	var out []Row
	for _, l := range s.e.Scrollback().Lines() {
		out = append(out, row(l, styled))
	}
	screen := s.screenRows(styled)
	cur := s.e.CursorPosition()
	n := cur.Y
	if cur.X > 0 {
		n++
	}
	for len(screen) < min(n, s.e.Height()) {
		screen = append(screen, Row{})
	}
	return append(out, screen...)
}

// row reads a line's cells: a wide character's second cell is left out and
// trailing blanks are trimmed.
func row(l uv.Line, styled bool) Row {
	var cells []Cell
	keep := 0
	for _, c := range l {
		if c.Width == 0 && c.Content == "" {
			continue
		}
		text := c.Content
		if text == "" {
			text = " "
		}
		cell := Cell{Text: text}
		if styled {
			cell.Style = style(c.Style)
		}
		cells = append(cells, cell)
		if text != " " {
			keep = len(cells)
		}
	}
	return Row{Cells: cells[:keep]}
}

func style(s uv.Style) Style {
	return Style{
		Fg:        colour(s.Fg),
		Bg:        colour(s.Bg),
		Bold:      s.Attrs&uv.AttrBold != 0,
		Dim:       s.Attrs&uv.AttrFaint != 0,
		Italic:    s.Attrs&uv.AttrItalic != 0,
		Underline: s.Underline != ansi.NoUnderlineStyle,
	}
}

// colour is c when it is one of the 16, else the default.
func colour(c color.Color) Colour {
	switch c := c.(type) {
	case ansi.BasicColor:
		return Colour(c + 1)
	case ansi.IndexedColor:
		if c < 16 {
			return Colour(c + 1)
		}
	}
	return 0
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
