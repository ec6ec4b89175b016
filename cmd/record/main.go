// Command record runs YAML scenarios against a live cluster, checks what
// must hold around every step, and writes a verified recording. With -check
// it validates the scenario files and runs nothing.
package main

import (
	"errors"
	"flag"
	"fmt"
	"io"
	"os"
)

// options are the command line of record.
type options struct {
	scenarios   string
	output      string
	only        string
	check       bool
	verify      bool
	junit       string
	repeat      int
	parallel    int
	environment string
}

// errUsage is a command line record cannot act on (exit 2).
var errUsage = errors.New("usage")

func main() {
	os.Exit(run(os.Args[1:], os.Stdout, os.Stderr))
}

// run is the whole command, returning its exit code: 0 done, 1 refused or
// failed, 2 a usage error.
func run(args []string, stdout, stderr io.Writer) int {
	opts, err := parseFlags(args, stderr)
	if err != nil {
		return 2
	}
	switch {
	case opts.check:
		return check(opts, stdout, stderr)
	case opts.verify:
		return verify(opts, stdout, stderr)
	default:
		return record(opts, stdout, stderr)
	}
}

func parseFlags(args []string, stderr io.Writer) (options, error) {
	var o options
	fs := flag.NewFlagSet("record", flag.ContinueOnError)
	fs.SetOutput(stderr)
	fs.StringVar(&o.scenarios, "scenarios", "scenarios", "folder of scenario files (<id>.yaml), or one file")
	fs.StringVar(&o.output, "output", "demo/recordings/runs.json", "the recording to write or verify")
	fs.StringVar(&o.only, "only", "", "re-record this scenario id and merge it into the recording")
	fs.BoolVar(&o.check, "check", false, "validate the scenario files and run nothing")
	fs.BoolVar(&o.verify, "verify", false, "check that the recording still matches the scenario definitions")
	fs.StringVar(&o.junit, "junit", "", "also write a JUnit XML report, one testcase per check, to this file")
	fs.IntVar(&o.repeat, "repeat", 1, "run every scenario this many times; a claim is published only if it held in every run")
	fs.IntVar(&o.parallel, "parallel", 0, "run this many scenarios at once, each in a namespace of its own (0: what the machine takes, at least 2, when the lab gives namespaces; else 1)")
	fs.StringVar(&o.environment, "environment", "demo/.lab/environment", "the lab's environment file")
	fs.Usage = func() {
		fmt.Fprintln(stderr, "usage: record [-scenarios DIR] [-output FILE] [-only ID] [-check] [-verify] [-junit FILE] [-repeat N] [-parallel N] [-environment FILE]")
		fs.PrintDefaults()
	}
	if err := fs.Parse(args); err != nil {
		return o, errUsage
	}
	if fs.NArg() > 0 {
		fmt.Fprintf(stderr, "record: unexpected argument %q; scenarios are chosen with -scenarios and -only\n", fs.Arg(0))
		return o, errUsage
	}
	if o.repeat < 1 {
		fmt.Fprintf(stderr, "record: -repeat %d: a scenario runs at least once\n", o.repeat)
		return o, errUsage
	}
	if o.parallel < 0 {
		fmt.Fprintf(stderr, "record: -parallel %d: at least one scenario runs at a time\n", o.parallel)
		return o, errUsage
	}
	if o.check && o.verify {
		fmt.Fprintln(stderr, "record: -check and -verify are two modes; choose one")
		return o, errUsage
	}
	return o, nil
}
