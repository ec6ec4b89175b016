// Command release publishes a versioned release of the operator to an OCI
// registry (package internal/release): make release runs it.
package main

import (
	"context"
	"flag"
	"fmt"
	"os"
	"os/signal"
	"strings"
	"syscall"

	"sigs.k8s.io/yaml"

	"ptah.run/operator/internal/release"
)

func main() {
	var o release.Options
	fs := flag.NewFlagSet("release", flag.ContinueOnError)
	fs.StringVar(&o.Version, "version", "", "the release's version, x.y.z")
	fs.StringVar(&o.Registry, "registry", "", "host[:port][/path] the images and the chart are pushed under")
	fs.BoolVar(&o.PlainHTTP, "plain-http", false, "speak HTTP, not HTTPS, to the registry")
	var bin, krew string
	fs.StringVar(&bin, "bin", "", "the static binaries the images are assembled from (make binaries)")
	fs.StringVar(&krew, "krew-manifest", "", "only keep, in this krew manifest (make plugin-archives), the platforms whose archive was built, and exit")
	fs.Usage = func() {
		fmt.Fprintln(os.Stderr, "usage: release -version X.Y.Z -registry HOST[/PATH] -bin DIR [-plain-http]\n(credentials from REGISTRY_USERNAME and REGISTRY_PASSWORD)")
		fs.PrintDefaults()
	}
	if err := fs.Parse(os.Args[1:]); err != nil {
		os.Exit(2)
	}
	if krew != "" {
		if err := keepBuilt(krew); err != nil {
			fmt.Fprintf(os.Stderr, "release: %v\n", err)
			os.Exit(1)
		}
		return
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

// keepBuilt rewrites the krew manifest at path with only the platforms
// whose sha256 make plugin-archives filled in (a platform not built keeps
// its SHA256_<os>_<arch> placeholder), saying which it drops.
func keepBuilt(path string) error {
	raw, err := os.ReadFile(path)
	if err != nil {
		return err
	}
	var m map[string]any
	if err := yaml.Unmarshal(raw, &m); err != nil {
		return fmt.Errorf("%s: %w", path, err)
	}
	spec, _ := m["spec"].(map[string]any)
	list, _ := spec["platforms"].([]any)
	var kept []any
	for _, p := range list {
		pm, _ := p.(map[string]any)
		if sum, _ := pm["sha256"].(string); strings.HasPrefix(sum, "SHA256_") {
			fmt.Fprintf(os.Stderr, "release: %s: %s not built, left out of the manifest\n", path, strings.TrimPrefix(sum, "SHA256_"))
			continue
		}
		kept = append(kept, p)
	}
	if len(kept) == 0 {
		return fmt.Errorf("%s: no platform was built (make plugin-archives)", path)
	}
	spec["platforms"] = kept
	out, err := yaml.Marshal(m)
	if err != nil {
		return err
	}
	return os.WriteFile(path, out, 0o644)
}
