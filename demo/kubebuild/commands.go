package kubebuild

import (
	"context"
	"crypto/sha256"
	"fmt"
	"os"
	"path/filepath"
	"strings"
)

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
	imports := []string{"_ github.com/coredns/coredns/core/dnsserver", "github.com/coredns/coredns/coremain"}
	for _, p := range corednsPlugins {
		imports = append(imports, "_ github.com/coredns/coredns/plugin/"+p)
	}
	return b.Program(ctx, outDir, Program{
		Name: "coredns", Module: "github.com/coredns/coredns", Version: pins.CoreDNS,
		Doc: "CoreDNS with the plugins kubeadm's Corefile uses", Imports: imports, Main: "coremain.Run()",
	})
}

// Program is a small main of our own over a module: its imports choose what
// is compiled in (plugins, drivers), which keeps a build to what is used.
type Program struct {
	Name, Module, Version string
	Doc                   string
	// Imports are package paths, "_ path" for a blank import.
	Imports []string
	// Main is the body of func main.
	Main string
}

// Program builds p into outDir/p.Name unless it is already there.
func (b *Builder) Program(ctx context.Context, outDir string, p Program) error {
	if len(missingBinaries(outDir, []string{p.Name})) == 0 {
		b.logf("%s: already built in %s", p.Name, outDir)
		return nil
	}
	var src strings.Builder
	fmt.Fprintf(&src, "// Command %s is %s.\npackage main\n\nimport (\n", p.Name, p.Doc)
	for _, imp := range p.Imports {
		if path, ok := strings.CutPrefix(imp, "_ "); ok {
			fmt.Fprintf(&src, "\t_ %q\n", path)
		} else {
			fmt.Fprintf(&src, "\t%q\n", imp)
		}
	}
	fmt.Fprintf(&src, ")\n\nfunc main() { %s }\n", p.Main)
	// The work module is keyed by its source: a changed import list gets a
	// fresh module rather than a go.sum resolved for another program.
	sum := sha256.Sum256([]byte(src.String()))
	work := filepath.Join(b.WorkDir, fmt.Sprintf("%s-%s-%x", p.Name, p.Version, sum[:4]))
	if err := os.MkdirAll(work, 0o755); err != nil {
		return err
	}
	if err := os.WriteFile(filepath.Join(work, "main.go"), []byte(src.String()), 0o644); err != nil {
		return err
	}
	if _, err := os.Stat(filepath.Join(work, "go.sum")); err != nil {
		if err := os.WriteFile(filepath.Join(work, "go.mod"), []byte("module ptahlab/"+p.Name+"build\n\ngo 1.26\n"), 0o644); err != nil {
			return err
		}
		b.logf("%s %s: resolving", p.Module, p.Version)
		if _, err := b.goCmd(ctx, work, nil, "get", p.Module+"@"+p.Version); err != nil {
			return err
		}
		// tidy is safe here: this throwaway module holds nothing but main.go.
		if _, err := b.goCmd(ctx, work, nil, "mod", "tidy"); err != nil {
			return err
		}
	}
	return b.build(ctx, work, outDir, "-s -w", []string{"."}, p.Name)
}
