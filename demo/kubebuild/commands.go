package kubebuild

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"strings"
)

// Command builds the Go command pkg of module mod@version, fetched from the
// module proxy, into outDir/name. A binary already there is kept.
func (b *Builder) Command(ctx context.Context, outDir, name, mod, version, pkg string) error {
	if len(missingBinaries(outDir, []string{name})) == 0 {
		b.logf("%s: already built in %s", name, outDir)
		return nil
	}
	work := filepath.Join(b.WorkDir, name+"-"+version)
	if err := os.MkdirAll(work, 0o755); err != nil {
		return err
	}
	if _, err := os.Stat(filepath.Join(work, "go.sum")); err != nil {
		if err := os.WriteFile(filepath.Join(work, "go.mod"), []byte("module ptahlab/"+name+"build\n\ngo 1.26\n"), 0o644); err != nil {
			return err
		}
		b.logf("%s %s: resolving %s", name, version, pkg)
		if _, err := b.goCmd(ctx, work, nil, "get", pkg+"@"+version); err != nil {
			return fmt.Errorf("%s: %w", mod, err)
		}
	}
	return b.build(ctx, work, outDir, "-s -w", []string{pkg}, name)
}

// corednsPlugins are the plugins kubeadm's default Corefile uses, plus hosts.
var corednsPlugins = []string{"cache", "errors", "forward", "health", "hosts", "kubernetes", "loadbalance", "log", "loop", "metrics", "ready", "reload"}

// CoreDNS builds a CoreDNS holding only the plugins kubeadm's Corefile uses,
// at the version kubeadm of this release pins, into outDir/coredns.
func (b *Builder) CoreDNS(ctx context.Context, outDir string) error {
	if len(missingBinaries(outDir, []string{"coredns"})) == 0 {
		b.logf("coredns: already built in %s", outDir)
		return nil
	}
	pins, err := b.KubeadmPins(ctx)
	if err != nil {
		return err
	}
	work := filepath.Join(b.WorkDir, "coredns-"+pins.CoreDNS)
	if err := os.MkdirAll(work, 0o755); err != nil {
		return err
	}
	var src strings.Builder
	src.WriteString("// Command coredns is CoreDNS with the plugins kubeadm's Corefile uses.\npackage main\n\nimport (\n")
	src.WriteString("\t_ \"github.com/coredns/coredns/core/dnsserver\"\n\t\"github.com/coredns/coredns/coremain\"\n\n")
	for _, p := range corednsPlugins {
		fmt.Fprintf(&src, "\t_ \"github.com/coredns/coredns/plugin/%s\"\n", p)
	}
	src.WriteString(")\n\nfunc main() { coremain.Run() }\n")
	if err := os.WriteFile(filepath.Join(work, "main.go"), []byte(src.String()), 0o644); err != nil {
		return err
	}
	if _, err := os.Stat(filepath.Join(work, "go.sum")); err != nil {
		if err := os.WriteFile(filepath.Join(work, "go.mod"), []byte("module ptahlab/corednsbuild\n\ngo 1.26\n"), 0o644); err != nil {
			return err
		}
		b.logf("coredns %s (pinned by kubeadm %s): resolving", pins.CoreDNS, b.KubernetesVersion)
		if _, err := b.goCmd(ctx, work, nil, "get", "github.com/coredns/coredns@"+pins.CoreDNS); err != nil {
			return err
		}
		// tidy is safe here: this throwaway module holds nothing but main.go.
		if _, err := b.goCmd(ctx, work, nil, "mod", "tidy"); err != nil {
			return err
		}
	}
	return b.build(ctx, work, outDir, "-s -w", []string{"."}, "coredns")
}
