// Command ptah keeps PostgreSQL schemas where their owners declared them:
// it pushes and pulls schema artifacts, plans, applies and reports drift, and
// runs versioned migrations; the operator's Jobs run it with --json.
//
// Every command prints, with --json, one line holding the document described
// in package ptah.run/operator/operator/report; its exit code is 0 for
// success, 1 for an expected negative answer (drift found) and 2 for any
// error, whose stable code is in the document's error.code.
package main

import (
	"context"
	"os"
	"os/signal"
	"syscall"
)

// version is stamped at build time with
// -ldflags "-X main.version=$(git describe --always --dirty)".
var version = "dev"

func main() {
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	code := run(ctx, os.Args[1:], os.Stdout, os.Stderr)
	stop()
	os.Exit(code)
}
