// Command ptah-runner is the entrypoint of the executor image: it runs the
// one operation its Job describes and delivers the result as a
// PtahResultRecord. See package ptah.run/operator/internal/runner.
package main

import (
	"context"
	"fmt"
	"os"
	"os/signal"
	"syscall"

	"ptah.run/operator/internal/runner"
)

func main() {
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	defer stop()
	if _, err := runner.Run(ctx, runner.Config{Environ: os.Environ(), Log: os.Stderr}); err != nil {
		fmt.Fprintf(os.Stderr, "ptah-runner: %v\n", err)
		os.Exit(runner.ExitUndelivered)
	}
}
