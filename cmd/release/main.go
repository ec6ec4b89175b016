// Command release publishes a versioned release of the operator to an OCI
// registry (package internal/release): make release runs it.
package main

import (
	"context"
	"flag"
	"fmt"
	"os"
	"os/signal"
	"syscall"

	"ptah.run/operator/internal/release"
)

func main() {
	var o release.Options
	fs := flag.NewFlagSet("release", flag.ContinueOnError)
	fs.StringVar(&o.Version, "version", "", "the release's version, x.y.z")
	fs.StringVar(&o.Registry, "registry", "", "host[:port][/path] the images and the chart are pushed under")
	fs.BoolVar(&o.PlainHTTP, "plain-http", false, "speak HTTP, not HTTPS, to the registry")
	var bin string
	fs.StringVar(&bin, "bin", "", "the static binaries the images are assembled from (make binaries)")
	fs.Usage = func() {
		fmt.Fprintln(os.Stderr, "usage: release -version X.Y.Z -registry HOST[/PATH] -bin DIR [-plain-http]\n(credentials from REGISTRY_USERNAME and REGISTRY_PASSWORD)")
		fs.PrintDefaults()
	}
	if err := fs.Parse(os.Args[1:]); err != nil {
		os.Exit(2)
	}
	if fs.NArg() > 0 || bin == "" {
		fs.Usage()
		os.Exit(2)
	}
	o.Username, o.Password = os.Getenv("REGISTRY_USERNAME"), os.Getenv("REGISTRY_PASSWORD")
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	defer stop()
	if err := run(ctx, o, bin); err != nil {
		fmt.Fprintf(os.Stderr, "release: %v\n", err)
		os.Exit(1)
	}
}

// run publishes the release of the binaries in bin and says where it is.
func run(ctx context.Context, o release.Options, bin string) error {
	imgs, err := release.FromBinaries(bin)
	if err != nil {
		return err
	}
	pub, err := release.Run(ctx, o, imgs)
	if err != nil {
		return err
	}
	fmt.Printf("manager image   %s\nexecutor image  %s\nchart           %s --version %s (%s)\n", pub.Manager, pub.Executor, pub.Chart, o.Version, pub.ChartDigest)
	fmt.Printf("install: helm install ptah %s --version %s --namespace ptah-system --create-namespace\n", pub.Chart, o.Version)
	return nil
}
