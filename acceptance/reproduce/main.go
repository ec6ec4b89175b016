// Command reproduce is the Go half of acceptance/reproduce.sh: with -prepare
// it runs a published scenario's reset and hand-overs as the lab, without it
// it repeats the scenario in the current directory and compares it with the
// recording. The script creates the account and the directory around it.
package main

import (
	"context"
	"flag"
	"fmt"
	"io"
	"os"
	"os/signal"
	"strings"

	"ptah.run/operator/acceptance/repeat"
)

// defaultScenario is the one seed 002 publishes.
const defaultScenario = "failure-recovery"

func main() {
	os.Exit(run(os.Args[1:], os.Stdout, os.Stderr))
}

// run returns the exit code: 0 every claim held (or the preparation is
// done), 1 a claim did not hold or a refusal, 2 a usage error.
func run(args []string, stdout, stderr io.Writer) int {
	var o repeat.Options
	var prepare string
	fs := flag.NewFlagSet("reproduce", flag.ContinueOnError)
	fs.SetOutput(stderr)
	fs.StringVar(&o.Scenarios, "scenarios", "scenarios", "folder of scenario files")
	fs.StringVar(&o.Recording, "recording", "demo/recordings/runs.json", "the published recording to compare with")
	fs.StringVar(&o.Environment, "environment", "demo/.lab/environment", "the lab's environment file (run id and credential files)")
	fs.StringVar(&prepare, "prepare", "", "as the lab: run the scenario's reset and write its hand-overs into this folder, then stop")
	fs.Usage = func() {
		fmt.Fprintln(stderr, "usage: reproduce [-scenarios DIR] [-recording FILE] [-environment FILE] [-prepare DIR] [ID]")
		fs.PrintDefaults()
	}
	if err := fs.Parse(args); err != nil {
		return 2
	}
	switch fs.NArg() {
	case 0:
		o.ID = defaultScenario
	case 1:
		o.ID = fs.Arg(0)
	default:
		fmt.Fprintf(stderr, "reproduce: one scenario at a time; got %s\n", strings.Join(fs.Args(), " "))
		return 2
	}
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt)
	defer stop()
	pub, err := repeat.Load(o)
	if err == nil && prepare != "" {
		err = repeat.Prepare(ctx, o, pub, prepare, stdout, stderr)
	} else if err == nil {
		var dir string
		if dir, err = os.Getwd(); err == nil {
			err = repeat.Run(ctx, o, pub, dir, os.Environ(), stdout, stderr)
		}
	}
	if err != nil {
		fmt.Fprintf(stderr, "reproduce: %v\n", err)
		return 1
	}
	return 0
}
