package terminal

import (
	"fmt"
	"reflect"
	"strings"
	"testing"
	"time"
)

func TestLines(t *testing.T) {
	cases := []struct {
		name string
		data string
		want []string
	}{
		{"crlf and a last line without newline", "one\r\ntwo\r\nthree", []string{"one", "two", "three"}},
		{"colour and title sequences dropped", "\x1b[1;32mgreen\x1b[0m \x1b]0;title\x07ok\r\n", []string{"green ok"}},
		{"a colour change does not split the text", "hun\x1b[31mter\x1b[0m2\n", []string{"hunter2"}},
		{"carriage return overwrites from the start", "10%\r50%\r100% done\r\n", []string{"100% done"}},
		{"a shorter overwrite leaves the rest shown", "XXXXter2\rhun\n", []string{"hunXter2"}},
		{"backspace moves back and the next character overwrites", "nop\bt\n", []string{"not"}},
		{"backspaces alone erase nothing", "abc\b\b\n", []string{"abc"}},
		{"cursor back and forward", "ab\x1b[2Dxy\x1b[3Cz\n", []string{"xy   z"}},
		{"erase the line", "secret\x1b[2K\rshown\n", []string{"shown"}},
		{"erase to the end of the line", "abcdef\r\x1b[3C\x1b[K\n", []string{"abc"}},
		{"a tab moves to the next stop, other controls go", "a\tb\x07c\n", []string{"a       bc"}},
		{"empty lines are kept", "a\r\n\r\nb\r\n", []string{"a", "", "b"}},
		{"invalid UTF-8 shows as replacement characters", "a\xff\xfeb\n", []string{"a\uFFFD\uFFFDb"}},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			if got := Lines(c.data); !reflect.DeepEqual(got, c.want) {
				t.Errorf("Lines(%q) = %q, want %q", c.data, got, c.want)
			}
		})
	}
}

// TestWhatPlayersImplement: each sequence a player implements and the old
// line model did not moves text where a player shows it.
func TestWhatPlayersImplement(t *testing.T) {
	cases := []struct {
		name string
		data string
		want []string
	}{
		{"ESC 7 saves the cursor and ESC 8 restores it", "hun\x1b7XXXX\x1b8ter2\n", []string{"hunter2"}},
		{"CSI s saves the cursor and CSI u restores it", "hun\x1b[sXXXX\x1b[uter2\n", []string{"hunter2"}},
		{"CSI @ inserts characters", "hunr2\x1b[2D\x1b[2@te\n", []string{"hunter2"}},
		{"CSI P deletes characters", "hunXXter2\x1b[6D\x1b[2P\n", []string{"hunter2"}},
		{"CSI L inserts a line", "one\r\ntwo\r\n\x1b[1A\x1b[Linserted\r\n", []string{"one", "inserted", "two"}},
		{"CSI M deletes a line", "one\r\ntwo\r\nthree\x1b[1A\x1b[M", []string{"one", "three"}},
		{"cursor up overwrites an earlier line", "hunXXXX\r\nnext\x1b[1A\x1b[4Gter2\n", []string{"hunter2", "next"}},
		// What leaves the region at its top is kept above the screen.
		{"a scroll region scrolls only its rows", "top\r\n\x1b[2;3r\x1b[2Ha\r\nb\r\nc\x1b[r\x1b[4Hbottom", []string{"a", "top", "b", "c", "bottom"}},
		{"CSI 2 J erases the screen in place, keeping nothing of it above", "gone\r\n\x1b[2Jshown\n", []string{"", "shown"}},
		{"CSI 3 J erases what is above the screen and leaves the screen", lines(0, 30) + "\x1b[3J", strings.Split(strings.TrimSuffix(lines(7, 30), "\r\n"), "\r\n")},
		{"the alternate screen hides the main one", "main\r\n\x1b[?1049halt screen\r\n", []string{"alt screen"}},
		{"leaving the alternate screen shows the main one again", "main\r\n\x1b[?1049halt\x1b[?1049l", []string{"main"}},
		{"a wide character takes two columns", "日本\x1b[2Dx\n", []string{"日x"}},
		{"overwriting half a wide character blanks it", "日本\x1b[3Dx\n", []string{" x本"}},
		{"a cursor past the width wraps what follows", "\x1b[9999Cfar\n", []string{strings.Repeat(" ", Width-1) + "f", "ar"}},
		{"queries are answered, not shown", "\x1b[6n\x1b[cok", []string{"ok"}},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			if got := Lines(c.data); !reflect.DeepEqual(got, c.want) {
				t.Errorf("Lines(%q) = %q, want %q", c.data, got, c.want)
			}
		})
	}
}

func TestValidUTF8(t *testing.T) {
	if got := ValidUTF8("é\xc3"); got != "é\uFFFD" {
		t.Errorf("ValidUTF8 = %q", got)
	}
	if got := ValidUTF8("plain"); got != "plain" {
		t.Errorf("ValidUTF8 changed valid text: %q", got)
	}
}

func TestRowsCarryTheStyleEachCharacterWasWrittenIn(t *testing.T) {
	green := Style{Fg: 2 + 1, Bold: true}
	cases := []struct {
		name string
		data string
		want []Run
	}{
		{"plain text has the default style", "plain", []Run{{Style{}, "plain"}}},
		{"bold green, then reset", "\x1b[1;32mok\x1b[0m done", []Run{{green, "ok"}, {Style{}, " done"}}},
		{"bright and background colours", "\x1b[91;44mx\x1b[39my\x1b[49mz", []Run{{Style{Fg: 9 + 1, Bg: 4 + 1}, "x"}, {Style{Bg: 4 + 1}, "y"}, {Style{}, "z"}}},
		{"a 256-colour index under 16 is that colour", "\x1b[38;5;3ma\x1b[38;5;200mb", []Run{{Style{Fg: 3 + 1}, "a"}, {Style{}, "b"}}},
		{"colon-separated index", "\x1b[48:5:12ma", []Run{{Style{Bg: 12 + 1}, "a"}}},
		{"RGB colour is read past, not misread as bold", "\x1b[38;2;1;2;3mrgb", []Run{{Style{}, "rgb"}}},
		{"RGB then bold in one sequence", "\x1b[38;2;1;2;3;1mb", []Run{{Style{Bold: true}, "b"}}},
		{"22 ends bold and dim", "\x1b[1;2ma\x1b[22mb", []Run{{Style{Bold: true, Dim: true}, "a"}, {Style{}, "b"}}},
		{"an empty SGR resets", "\x1b[4mu\x1b[mv", []Run{{Style{Underline: true}, "u"}, {Style{}, "v"}}},
		{"a style carries over a carriage return", "\x1b[31m10%\r100%", []Run{{Style{Fg: 1 + 1}, "100%"}}},
		{"an overwrite takes the new style", "\x1b[31mab\r\x1b[0mA", []Run{{Style{}, "A"}, {Style{Fg: 1 + 1}, "b"}}},
		{"cursor and title sequences draw nothing", "\x1b[2K\x1b]0;t\x07\x1b[3mi", []Run{{Style{Italic: true}, "i"}}},
		{"a truncated sequence at the end is dropped", "a\x1b[38;5", []Run{{Style{}, "a"}}},
		{"an empty parameter is a reset, unknown ones are ignored", "\x1b[4;;99;1mb", []Run{{Style{Bold: true}, "b"}}},
		{"private and intermediate sequences are not SGR", "\x1b[>1m\x1b[1 mx", []Run{{Style{}, "x"}}},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			rows := Rows(c.data)
			if len(rows) != 1 {
				t.Fatalf("Rows(%q) = %d rows, want 1", c.data, len(rows))
			}
			if got := rows[0].Runs(); !reflect.DeepEqual(got, c.want) {
				t.Errorf("Rows(%q) runs = %+v, want %+v", c.data, got, c.want)
			}
		})
	}
}

// TestRowsAreLines: the styled view is the scanned one, character for
// character, whatever the bytes do.
func TestRowsAreLines(t *testing.T) {
	for _, data := range []string{
		"one\r\ntwo\r\nthree",
		"hun\x1b[31mter\x1b[0m2\n",
		"XXXX\x1b[1mter2\rhun\n",
		"ab\x1b[2D\x1b[32mxy\x1b[3Cz\n",
		"secret\x1b[2K\r\x1b[44mshown\n",
		"a\xff\xfe\x1b[1mb\n\n\ttab\x1b]0;ti\ntle\x07end",
		"\x1b[38;5;300;1m\x1b[9999Cfar\n",
	} {
		lines := Lines(data)
		rows := Rows(data)
		if len(rows) != len(lines) {
			t.Fatalf("Rows(%q) has %d lines, Lines %d", data, len(rows), len(lines))
		}
		for i := range rows {
			if rows[i].Text() != lines[i] {
				t.Errorf("Rows(%q)[%d] reads %q, Lines shows %q", data, i, rows[i].Text(), lines[i])
			}
			var runs string
			for _, r := range rows[i].Runs() {
				runs += r.Text
			}
			if runs != lines[i] {
				t.Errorf("Rows(%q)[%d] runs read %q, Lines shows %q", data, i, runs, lines[i])
			}
		}
	}
}

func TestRowEndIsWhereTheLineEnded(t *testing.T) {
	// A newline inside a title is part of the title, not a line's end.
	data := "one\r\n\x1b]0;a\nb\x07two\n\nthr"
	var ends []int
	for _, r := range Rows(data) {
		ends = append(ends, r.End)
	}
	want := []int{5, 17, 18, 21}
	if !reflect.DeepEqual(ends, want) {
		t.Errorf("ends = %v, want %v", ends, want)
	}
	if got := Lines(data); !reflect.DeepEqual(got, []string{"one", "two", "", "thr"}) {
		t.Errorf("Lines = %q", got)
	}
}

// TestPlainTextIsWhatTheEmulatorShows: the shortcut for printable text
// gives what the emulator gives.
func TestPlainTextIsWhatTheEmulatorShows(t *testing.T) {
	for _, data := range []string{"", "a", "a\n", "a\n\n", "\n", "one  \ntwo\n\nthree   ", strings.Repeat("x", 300) + "\ny"} {
		plain, ok := plainRows(data)
		if !ok {
			t.Fatalf("%q is not plain", data)
		}
		// A bell is dropped by the emulator and keeps the shortcut off;
		// it moves only the last line's end.
		emulated := Rows(data + "\a")
		if len(plain) != len(emulated) {
			t.Fatalf("%q: %d plain rows, %d from the emulator", data, len(plain), len(emulated))
		}
		for i := range plain {
			end := emulated[i].End
			if i == len(plain)-1 {
				end = min(end, len(data))
			}
			if plain[i].Text() != emulated[i].Text() || plain[i].End != end {
				t.Errorf("%q row %d: plain %q ending at %d, the emulator's %q at %d", data, i, plain[i].Text(), plain[i].End, emulated[i].Text(), end)
			}
		}
	}
}

// TestShownIsTheScreen: the screen as Shown reads it is the screen's rows
// as Lines reads them.
func TestShownIsTheScreen(t *testing.T) {
	s := NewScreen(20, 4)
	defer s.Close()
	s.Write("one\r\n\r\n  three 日本\x1b[3;18Hx\r\nfour\r\nfive")
	if got, want := s.Shown(), "\n  three 日本     x\nfour\nfive"; got != want {
		t.Errorf("Shown = %q, want %q", got, want)
	}
	if got := s.Scrolled(); !reflect.DeepEqual(got, []string{"one"}) {
		t.Errorf("Scrolled = %q, want the line scrolled off", got)
	}
	if got := s.Scrolled(); len(got) != 0 {
		t.Errorf("Scrolled again = %q, want nothing new", got)
	}
}

// TestHugeParametersAreCapped: a repeat or tab count of billions ends at
// once, and a position past any screen still goes to its edge.
func TestHugeParametersAreCapped(t *testing.T) {
	start := time.Now()
	lines := Lines("x\x1b[2000000000b\r\n\x1b[2000000000I|\x1b[2000000000Z|\x1b[99999999999Gend\r\n\u009b99999999999b")
	if d := time.Since(start); d > 5*time.Second {
		t.Errorf("took %s", d)
	}
	n := 0
	for _, l := range lines {
		n += strings.Count(l, "x")
	}
	if n == 0 || n > 10_000 {
		t.Errorf("%d repeats, want the first at most 10,000", n)
	}
	if !strings.Contains(Text("ab\x1b[1;99999Hz"), "ab"+strings.Repeat(" ", Width-3)+"z") {
		t.Errorf("a capped column is not the screen's edge: %q", Text("ab\x1b[1;99999Hz"))
	}
}

// lines is "line i\r\n" for i from first to end-1.
func lines(first, end int) string {
	var b strings.Builder
	for i := first; i < end; i++ {
		fmt.Fprintf(&b, "line %d\r\n", i)
	}
	return b.String()
}

// TestScrolledKeepsWhatAnEraseTookAway: CSI 3 J erases the scrollback a
// player shows, but the lines it held are still handed to Scrolled, so a
// scan that reads after every chunk sees every line that left the screen.
func TestScrolledKeepsWhatAnEraseTookAway(t *testing.T) {
	s := NewScreen(20, 2)
	defer s.Close()
	s.Write("one\r\ntwo\r\nthree\r\n\x1b[3Jfour\r\n")
	if got, want := s.Scrolled(), []string{"one", "two", "three"}; !reflect.DeepEqual(got, want) {
		t.Errorf("Scrolled() = %q, want %q", got, want)
	}
	if got := s.Scrolled(); len(got) != 0 {
		t.Errorf("Scrolled() again = %q, want nothing", got)
	}
}
