// Command site builds the static replay site from a recording and, with
// -serve, serves it on a local address.
package main

import (
	"context"
	"flag"
	"fmt"
	"os"
	"os/signal"
	"syscall"
	"time"

	"ptah.run/operator/recorder/envnames"
	"ptah.run/operator/recorder/labenv"
	"ptah.run/operator/site"
)

func main() {
	recording := flag.String("recording", "demo/recordings", "folder holding runs.json and one .cast per scenario")
	out := flag.String("out", "site/public", "folder the site is written to (replaced whole)")
	environment := flag.String("environment", "demo/.lab/environment", "the lab's environment file; no credential it names may be published (the check is skipped when the file is absent)")
	serve := flag.String("serve", "", "after building, serve the site on this address (for example 127.0.0.1:8080)")
	flag.Parse()

	opts := site.Options{Recording: *recording, Out: *out}
	if _, err := os.Stat(*environment); err == nil {
		lab, err := labenv.Load(*environment)
		if err != nil {
			fail(err)
		}
		opts.Secrets = lab.Secrets
		var names []string
		for _, n := range envnames.Published() {
			names = append(names, n.Name)
		}
		set, err := lab.Credentials(lab.Public(names))
		if err != nil {
			fail(err)
		}
		opts.Credentials = set.Credentials()
	} else {
		fmt.Fprintf(os.Stderr, "site: no lab environment at %s, so no lab credentials to look for\n", *environment)
	}

	start := time.Now()
	s, err := site.Build(opts)
	if err != nil {
		fail(err)
	}
	fmt.Printf("site: %d pages from %s written to %s in %s\n", len(s.Pages)+1, *recording, *out, time.Since(start).Round(time.Millisecond))
	if *serve == "" {
		return
	}
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	defer stop()
	if err := site.Serve(ctx, *out, *serve, func(url string) { fmt.Printf("site: serving %s (Ctrl-C stops)\n", url) }); err != nil {
		fail(err)
	}
}

func fail(err error) {
	fmt.Fprintln(os.Stderr, "site:", err)
	os.Exit(1)
}
