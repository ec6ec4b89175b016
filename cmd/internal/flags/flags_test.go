package flags

import (
	"flag"
	"io"
	"strings"
	"testing"
)

func TestParseInterleaved(t *testing.T) {
	for _, args := range [][]string{
		{"plan", "orders", "-o", "sql"},
		{"-o", "sql", "plan", "orders"},
		{"plan", "-o", "sql", "orders"},
	} {
		fs := flag.NewFlagSet("t", flag.ContinueOnError)
		out := fs.String("o", "text", "")
		got, err := ParseInterleaved(fs, args)
		if err != nil {
			t.Fatalf("%v: %v", args, err)
		}
		if strings.Join(got, " ") != "plan orders" || *out != "sql" {
			t.Errorf("%v: positional %q, -o %q; want [plan orders] and sql", args, got, *out)
		}
	}
	fs := flag.NewFlagSet("t", flag.ContinueOnError)
	fs.SetOutput(io.Discard)
	if _, err := ParseInterleaved(fs, []string{"plan", "--nope"}); err == nil {
		t.Error("an unknown flag after a positional argument was accepted")
	}
}
