// Package kubebuild compiles Kubernetes commands and etcd from the Go module
// proxy, for machines that cannot pull release binaries or images. The envtest
// tier and the lab's node image both use it, so both run the same binaries.
package kubebuild

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strings"
	"time"
)

// Builder compiles into Dir. Log receives progress lines; nil discards them.
type Builder struct {
	// KubernetesVersion is a k8s.io/kubernetes release, e.g. "v1.37.2".
	KubernetesVersion string
	// WorkDir holds the throwaway build modules (reused when warm).
	WorkDir string
	Log     io.Writer
}

// DefaultCacheDir is where envtest binaries live: outside the tree, per version.
func DefaultCacheDir(version string) string {
	base := os.Getenv("XDG_CACHE_HOME")
	if base == "" {
		home, err := os.UserHomeDir()
		if err != nil {
			home = os.TempDir()
		}
		base = filepath.Join(home, ".cache")
	}
	return filepath.Join(base, "ptah", "envtest", version)
}

// Pins are the component versions kubeadm of a Kubernetes release expects.
type Pins struct {
	Etcd    string // e.g. "3.7.0-0" (image tag); the module version is "v3.7.0"
	CoreDNS string
	Pause   string
}

// EtcdModuleVersion is the go.etcd.io/etcd/server/v3 version behind the image tag.
func (p Pins) EtcdModuleVersion() string {
	v, _, _ := strings.Cut(p.Etcd, "-")
	return "v" + v
}

func (b *Builder) logf(format string, args ...any) {
	if b.Log != nil {
		fmt.Fprintf(b.Log, format+"\n", args...)
	}
}

func (b *Builder) goCmd(ctx context.Context, dir string, env []string, args ...string) ([]byte, error) {
	cmd := exec.CommandContext(ctx, "go", args...)
	cmd.Dir = dir
	cmd.Env = append(os.Environ(), env...)
	var stderr bytes.Buffer
	cmd.Stderr = &stderr
	out, err := cmd.Output()
	if err != nil {
		return nil, fmt.Errorf("go %s (in %s): %w\n%s", strings.Join(args, " "), dir, err, tail(stderr.String(), 2000))
	}
	return out, nil
}

func tail(s string, n int) string {
	if len(s) > n {
		return "..." + s[len(s)-n:]
	}
	return s
}

// ModuleDir downloads mod@version into the module cache and returns its directory.
func (b *Builder) ModuleDir(ctx context.Context, mod, version string) (string, error) {
	out, err := b.goCmd(ctx, os.TempDir(), nil, "mod", "download", "-json", mod+"@"+version)
	if err != nil {
		return "", err
	}
	var info struct{ Dir, Error string }
	if err := json.Unmarshal(out, &info); err != nil {
		return "", fmt.Errorf("go mod download %s@%s: %w", mod, version, err)
	}
	if info.Error != "" || info.Dir == "" {
		return "", fmt.Errorf("go mod download %s@%s: %s", mod, version, info.Error)
	}
	return info.Dir, nil
}

var pinPatterns = map[string]*regexp.Regexp{
	"etcd":    regexp.MustCompile(`(?m)^\s*DefaultEtcdVersion\s*=\s*"([^"]+)"`),
	"coredns": regexp.MustCompile(`(?m)^\s*CoreDNSVersion\s*=\s*"([^"]+)"`),
	"pause":   regexp.MustCompile(`(?m)^\s*PauseVersion\s*=\s*"([^"]+)"`),
}

// KubeadmPins reads the versions kubeadm of this release pins from its constants.
func (b *Builder) KubeadmPins(ctx context.Context) (Pins, error) {
	dir, err := b.ModuleDir(ctx, "k8s.io/kubernetes", b.KubernetesVersion)
	if err != nil {
		return Pins{}, err
	}
	src, err := os.ReadFile(filepath.Join(dir, "cmd/kubeadm/app/constants/constants.go"))
	if err != nil {
		return Pins{}, fmt.Errorf("read kubeadm constants of k8s.io/kubernetes@%s: %w", b.KubernetesVersion, err)
	}
	found := map[string]string{}
	for name, re := range pinPatterns {
		m := re.FindSubmatch(src)
		if m == nil {
			return Pins{}, fmt.Errorf("kubeadm constants of %s: no %s version found", b.KubernetesVersion, name)
		}
		found[name] = string(m[1])
	}
	return Pins{Etcd: found["etcd"], CoreDNS: found["coredns"], Pause: found["pause"]}, nil
}

var stagingReplace = regexp.MustCompile(`(?m)^\s*(k8s\.io/[^\s]+)\s+=>\s+\./staging/`)
var goDirectives = regexp.MustCompile(`(?m)^(go|godebug) .*$`)

// Kubernetes builds the named commands (e.g. "kube-apiserver") into outDir.
// Binaries already present are kept: a warm call does no Go work at all.
func (b *Builder) Kubernetes(ctx context.Context, outDir string, commands ...string) error {
	missing := missingBinaries(outDir, commands)
	if len(missing) == 0 {
		b.logf("kubernetes %s: %s already built in %s", b.KubernetesVersion, strings.Join(commands, ", "), outDir)
		return nil
	}
	kdir, err := b.ModuleDir(ctx, "k8s.io/kubernetes", b.KubernetesVersion)
	if err != nil {
		return err
	}
	kgomod, err := os.ReadFile(filepath.Join(kdir, "go.mod"))
	if err != nil {
		return err
	}
	// The staging modules' replace directives point into k8s.io/kubernetes'
	// own tree and are ignored for a dependency: pin each to its v0.x release.
	staging := "v0." + strings.TrimPrefix(b.KubernetesVersion, "v1.")
	mod := filepath.Join(b.WorkDir, "kubernetes-"+b.KubernetesVersion)
	if err := os.MkdirAll(mod, 0o755); err != nil {
		return err
	}
	var gomod strings.Builder
	gomod.WriteString("module ptahlab/kubebuild\n\n")
	for _, line := range goDirectives.FindAll(kgomod, -1) {
		gomod.Write(line)
		gomod.WriteString("\n")
	}
	for _, m := range stagingReplace.FindAllSubmatch(kgomod, -1) {
		fmt.Fprintf(&gomod, "replace %s => %s %s\n", m[1], m[1], staging)
	}
	pkgs := make([]string, len(missing))
	for i, c := range missing {
		pkgs[i] = "k8s.io/kubernetes/cmd/" + c
	}
	if prev, _ := os.ReadFile(filepath.Join(mod, "go.mod.base")); string(prev) != gomod.String() {
		if err := os.WriteFile(filepath.Join(mod, "go.mod"), []byte(gomod.String()), 0o644); err != nil {
			return err
		}
		os.Remove(filepath.Join(mod, "go.sum"))
		if err := os.WriteFile(filepath.Join(mod, "go.mod.base"), []byte(gomod.String()), 0o644); err != nil {
			return err
		}
	}
	get := []string{"get"}
	for _, p := range pkgs {
		get = append(get, p+"@"+b.KubernetesVersion)
	}
	b.logf("kubernetes %s: resolving %s", b.KubernetesVersion, strings.Join(missing, ", "))
	if _, err := b.goCmd(ctx, mod, nil, get...); err != nil {
		return err
	}
	return b.build(ctx, mod, outDir, b.versionLDFlags(), pkgs)
}

// versionLDFlags stamps the release into the binaries; kubeadm and the API
// server's /version read these fields.
func (b *Builder) versionLDFlags() string {
	minor := strings.SplitN(strings.TrimPrefix(b.KubernetesVersion, "v"), ".", 3)[1]
	flags := []string{"-s", "-w"}
	for _, p := range []string{"k8s.io/component-base/version", "k8s.io/client-go/pkg/version"} {
		flags = append(flags,
			"-X", p+".gitVersion="+b.KubernetesVersion,
			"-X", p+".gitMajor=1",
			"-X", p+".gitMinor="+minor,
			"-X", p+".gitTreeState=clean",
			"-X", p+".gitCommit=0000000000000000000000000000000000000000",
			"-X", p+".buildDate=2026-01-01T00:00:00Z")
	}
	return strings.Join(flags, " ")
}

// Etcd builds the etcd server kubeadm of this release pins into outDir/etcd.
func (b *Builder) Etcd(ctx context.Context, outDir string) error {
	if len(missingBinaries(outDir, []string{"etcd"})) == 0 {
		b.logf("etcd: already built in %s", outDir)
		return nil
	}
	pins, err := b.KubeadmPins(ctx)
	if err != nil {
		return err
	}
	version := pins.EtcdModuleVersion()
	mod := filepath.Join(b.WorkDir, "etcd-"+version)
	if err := os.MkdirAll(mod, 0o755); err != nil {
		return err
	}
	if _, err := os.Stat(filepath.Join(mod, "go.sum")); err != nil {
		if err := os.WriteFile(filepath.Join(mod, "go.mod"), []byte("module ptahlab/etcdbuild\n\ngo 1.26\n"), 0o644); err != nil {
			return err
		}
		b.logf("etcd %s (pinned by kubeadm %s): resolving", version, b.KubernetesVersion)
		if _, err := b.goCmd(ctx, mod, nil, "get", "go.etcd.io/etcd/server/v3@"+version); err != nil {
			return err
		}
	}
	// A package path ending in /v3 would name the binary "server".
	return b.build(ctx, mod, outDir, "-s -w", []string{"go.etcd.io/etcd/server/v3"}, "etcd")
}

// build compiles pkgs into outDir; name, when given, names the single binary.
func (b *Builder) build(ctx context.Context, mod, outDir, ldflags string, pkgs []string, name ...string) error {
	if err := os.MkdirAll(outDir, 0o755); err != nil {
		return err
	}
	// Build into a staging directory and rename, so an interrupted build never
	// leaves a half-written binary that a later warm run would trust.
	stage, err := os.MkdirTemp(outDir, ".build-")
	if err != nil {
		return err
	}
	defer os.RemoveAll(stage)
	start := time.Now()
	b.logf("building %s", strings.Join(pkgs, ", "))
	out := stage + "/"
	if len(name) == 1 && len(pkgs) == 1 {
		out = filepath.Join(stage, name[0])
	}
	args := append([]string{"build", "-trimpath", "-ldflags", ldflags, "-o", out}, pkgs...)
	if _, err := b.goCmd(ctx, mod, []string{"CGO_ENABLED=0"}, args...); err != nil {
		return err
	}
	entries, err := os.ReadDir(stage)
	if err != nil {
		return err
	}
	for _, e := range entries {
		if err := os.Rename(filepath.Join(stage, e.Name()), filepath.Join(outDir, e.Name())); err != nil {
			return err
		}
	}
	b.logf("built %s in %s", strings.Join(pkgs, ", "), time.Since(start).Round(time.Second))
	return nil
}

func missingBinaries(dir string, names []string) []string {
	var missing []string
	for _, n := range names {
		if fi, err := os.Stat(filepath.Join(dir, n)); err != nil || fi.Mode()&0o111 == 0 {
			missing = append(missing, n)
		}
	}
	return missing
}
