// Command lab runs the local demonstration lab. Today it has one verb,
// envtest, which builds the API server and etcd the integration tests run.
package main

import (
	"context"
	"flag"
	"fmt"
	"os"
	"os/signal"
	"path/filepath"
	"time"

	"ptah.run/operator/demo/kubebuild"
)

const kubernetesVersion = "v1.37.2"

func main() {
	flag.Usage = func() {
		fmt.Fprintf(os.Stderr, "usage: lab envtest [-dir DIR]\n\n  envtest  build kube-apiserver and etcd %s from the Go module proxy for the integration tests\n", kubernetesVersion)
	}
	flag.Parse()
	if flag.NArg() < 1 {
		flag.Usage()
		os.Exit(2)
	}
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt)
	defer stop()
	var err error
	switch flag.Arg(0) {
	case "envtest":
		err = envtest(ctx, flag.Args()[1:])
	default:
		fmt.Fprintf(os.Stderr, "lab: unknown verb %q\n", flag.Arg(0))
		flag.Usage()
		os.Exit(2)
	}
	if err != nil {
		fmt.Fprintf(os.Stderr, "lab %s: %v\n", flag.Arg(0), err)
		os.Exit(1)
	}
}

func envtest(ctx context.Context, args []string) error {
	fs := flag.NewFlagSet("envtest", flag.ExitOnError)
	dir := fs.String("dir", kubebuild.DefaultCacheDir(kubernetesVersion), "where the binaries go")
	fs.Parse(args)
	start := time.Now()
	b := &kubebuild.Builder{
		KubernetesVersion: kubernetesVersion,
		WorkDir:           filepath.Join(filepath.Dir(*dir), "build"),
		Log:               os.Stderr,
	}
	if err := b.Kubernetes(ctx, *dir, "kube-apiserver"); err != nil {
		return err
	}
	if err := b.Etcd(ctx, *dir); err != nil {
		return err
	}
	fmt.Printf("envtest binaries for %s in %s (%s)\n", kubernetesVersion, *dir, time.Since(start).Round(time.Second))
	return nil
}
