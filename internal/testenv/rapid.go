package testenv

import (
	"flag"
	"fmt"
	"os"
	"testing"
)

// RapidChecks makes the generated-input tests of t run n cases, where each
// case costs a database: unless -rapid.checks is given on the command line
// or RAPID_CHECKS in the environment (the make targets' long runs), which
// then count. rapid's default of 100 is set back after t.
func RapidChecks(t testing.TB, n int) {
	f := flag.Lookup("rapid.checks")
	if f == nil || os.Getenv("RAPID_CHECKS") != "" {
		return
	}
	set := false
	flag.Visit(func(v *flag.Flag) { set = set || v.Name == "rapid.checks" })
	if set {
		return
	}
	before := f.Value.String()
	_ = f.Value.Set(fmt.Sprint(n))
	t.Cleanup(func() { _ = f.Value.Set(before) })
}
