package terminal

import (
	"reflect"
	"testing"
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
		{"tabs stay, other controls go", "a\tb\x07c\n", []string{"a\tbc"}},
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

func TestValidUTF8(t *testing.T) {
	if got := ValidUTF8("é\xc3"); got != "é\uFFFD" {
		t.Errorf("ValidUTF8 = %q", got)
	}
	if got := ValidUTF8("plain"); got != "plain" {
		t.Errorf("ValidUTF8 changed valid text: %q", got)
	}
}
