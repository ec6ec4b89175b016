// Command site builds the static replay site from a recording and, with
// -serve, serves it on a local address.
package main

import (
	"context"
	"flag"
	"fmt"
	"os"
	"os/signal"
	"strings"
	"syscall"
	"time"

	"ptah.run/operator/site"
)

func main() {
	recording := flag.String("recording", "demo/recordings", "folder holding runs.json and one .cast per scenario")
	out := flag.String("out", "site/public", "folder the site is written to (replaced whole)")
	credentials := flag.String("credentials", "demo/.lab", "comma-separated files or folders holding the lab's credentials; none of their values may be published (skipped when absent)")
	serve := flag.String("serve", "", "after building, serve the site on this address (for example 127.0.0.1:8080)")
	flag.Parse()

	var creds []string
	for _, c := range strings.Split(*credentials, ",") {
		if c = strings.TrimSpace(c); c == "" {
			continue
		}
		if _, err := os.Stat(c); err != nil {
			fmt.Fprintf(os.Stderr, "site: no lab credentials at %s; building without that check\n", c)
			continue
		}
		creds = append(creds, c)
	}

	start := time.Now()
	s, err := site.Build(site.Options{Recording: *recording, Out: *out, Credentials: creds})
	if err != nil {
		fmt.Fprintln(os.Stderr, "site:", err)
		os.Exit(1)
	}
	fmt.Printf("site: %d pages from %s written to %s in %s\n", len(s.Pages)+1, *recording, *out, time.Since(start).Round(time.Millisecond))
	if *serve == "" {
		return
	}
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	defer stop()
	err = site.Serve(ctx, *out, *serve, func(url string) { fmt.Printf("site: serving %s (Ctrl-C stops)\n", url) })
	if err != nil {
		fmt.Fprintln(os.Stderr, "site:", err)
		os.Exit(1)
	}
}
