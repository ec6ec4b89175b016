package images

import (
	"context"
	_ "embed"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"strings"
	"sync"

	"ptah.run/operator/demo/kubebuild"
	"ptah.run/operator/demo/lab/internal/run"
)

//go:embed node-rootfs.sh
var nodeRootfsScript string

// recipe changes whenever the way a node image is assembled changes, so a
// new recipe never reuses an image built by an old one.
const recipe = "node-2"

var kubernetesCommands = []string{"kubeadm", "kubelet", "kubectl", "kube-apiserver", "kube-controller-manager", "kube-scheduler", "kube-proxy"}

// KubernetesBin is where the Kubernetes binaries for the node (and the lab's kubectl) are built.
func (b *Builder) KubernetesBin() string {
	return filepath.Join(b.Cache, "kubernetes-"+b.KubernetesVersion)
}

// Kubectl builds (once) a kubectl of the cluster's version and returns its path.
func (b *Builder) Kubectl(ctx context.Context) (string, error) {
	if err := b.kube().Kubernetes(ctx, b.KubernetesBin(), "kubectl"); err != nil {
		return "", err
	}
	return filepath.Join(b.KubernetesBin(), "kubectl"), nil
}

// Kind builds the kind command line at the version the lab creates its
// clusters with (the lab itself uses kind's Go library), so a reader can ask
// `kind get clusters` without installing anything.
func (b *Builder) Kind(ctx context.Context) (string, error) {
	dir := filepath.Join(b.Cache, "kind-"+b.KindVersion)
	if err := b.kube().Program(ctx, dir, kubebuild.Program{
		Name: "kind", Module: "sigs.k8s.io/kind", Version: b.KindVersion,
		Doc: "the kind command line", Imports: []string{"sigs.k8s.io/kind/cmd/kind/app"}, Main: "app.Main()",
	}); err != nil {
		return "", err
	}
	return filepath.Join(dir, "kind"), nil
}

// Node returns the kind node image: kindest/node when present or pullable,
// else one built offline and cached by the content of everything in it.
func (b *Builder) Node(ctx context.Context) (Provenance, error) {
	if p, ok := b.presentOrPulled(ctx, "node", "kindest/node:"+b.KubernetesVersion); ok {
		return p, nil
	}
	// The rootfs (network bound) and the Go builds (CPU bound) overlap.
	var rootfs string
	var rootErr error
	var wg sync.WaitGroup
	wg.Add(1)
	go func() {
		defer wg.Done()
		rootfs, rootErr = Rootfs{Name: "node", Packages: nodePackages}.Ensure(ctx, b.R, b.Cache)
	}()
	extra, goErr := b.nodeBinaries(ctx)
	wg.Wait()
	if rootErr != nil {
		return Provenance{}, rootErr
	}
	if goErr != nil {
		return Provenance{}, goErr
	}
	kindFiles, err := b.kindFiles(ctx)
	if err != nil {
		return Provenance{}, err
	}
	// A cached root filesystem never changes under its name, which holds its key.
	key, err := contentKey([]string{b.KubernetesBin(), extra, kindFiles}, recipe, nodeRootfsScript, filepath.Base(rootfs))
	if err != nil {
		return Provenance{}, fmt.Errorf("node image: content key: %w", err)
	}
	ref := fmt.Sprintf("ptah-lab/kind-node:%s-%s", b.KubernetesVersion, key)
	if b.D.ImageID(ctx, ref) != "" {
		b.R.Printf("node: %s already built from the same inputs", ref)
		return Provenance{"node", ref, "cached"}, nil
	}
	if err := b.buildNode(ctx, ref, rootfs, extra, kindFiles); err != nil {
		return Provenance{}, err
	}
	return Provenance{"node", ref, "built"}, nil
}

// nodeBinaries builds Kubernetes, and etcd, CoreDNS and pause into a directory it returns.
func (b *Builder) nodeBinaries(ctx context.Context) (string, error) {
	done := b.R.Step("node: Go builds (Kubernetes " + b.KubernetesVersion + ", etcd, coredns, pause)")
	kb := b.kube()
	if err := kb.Kubernetes(ctx, b.KubernetesBin(), kubernetesCommands...); err != nil {
		return "", err
	}
	extra := filepath.Join(b.Cache, "node-extra-"+b.KubernetesVersion)
	if err := kb.Etcd(ctx, extra); err != nil {
		return "", err
	}
	if err := kb.CoreDNS(ctx, extra); err != nil {
		return "", err
	}
	if err := b.goBuild(ctx, filepath.Join(extra, "pause"), "./demo/lab/internal/images/pause"); err != nil {
		return "", err
	}
	done("ready")
	return extra, nil
}

// kindFiles is kind's images/base/files from the kind module in the module cache.
func (b *Builder) kindFiles(ctx context.Context) (string, error) {
	dir, err := b.kube().ModuleDir(ctx, "sigs.k8s.io/kind", b.KindVersion)
	if err != nil {
		return "", err
	}
	return filepath.Join(dir, "images", "base", "files"), nil
}

func (b *Builder) buildNode(ctx context.Context, ref, rootfs, extra, kindFiles string) error {
	done := b.R.Step("node: build " + ref)
	work := filepath.Join(b.Cache, "node-work")
	root := filepath.Join(work, "rootfs")
	imgs := filepath.Join(work, "images")
	if err := os.RemoveAll(work); err != nil {
		return err
	}
	if err := os.MkdirAll(work, 0o755); err != nil {
		return err
	}
	defer os.RemoveAll(work)
	step := b.R.Step("node: customize the root filesystem")
	if _, err := b.R.Output(ctx, "cp", "-a", rootfs, root); err != nil {
		return err
	}
	os.Remove(filepath.Join(root, ".ptah-complete"))
	if _, err := b.R.Run(ctx, run.Cmd{Name: "bash", Args: []string{"-c", nodeRootfsScript},
		Env: []string{"R=" + root, "F=" + kindFiles, "BIN=" + b.KubernetesBin(), "X=" + extra, "I=" + imgs, "KV=" + b.KubernetesVersion}}); err != nil {
		return fmt.Errorf("node: customize root filesystem: %w", err)
	}
	step("done")

	step = b.R.Step("node: component images")
	pins, err := b.kube().KubeadmPins(ctx)
	if err != nil {
		return err
	}
	sandbox, err := sandboxImage(filepath.Join(root, "etc/containerd/config.toml"))
	if err != nil {
		return err
	}
	kv := b.KubernetesVersion
	components := []dirImage{
		{Ref: "registry.k8s.io/kube-apiserver:" + kv, Dir: filepath.Join(imgs, "kube-apiserver")},
		{Ref: "registry.k8s.io/kube-controller-manager:" + kv, Dir: filepath.Join(imgs, "kube-controller-manager")},
		{Ref: "registry.k8s.io/kube-scheduler:" + kv, Dir: filepath.Join(imgs, "kube-scheduler")},
		{Ref: "registry.k8s.io/kube-proxy:" + kv, Dir: filepath.Join(imgs, "kube-proxy")},
		{Ref: "registry.k8s.io/etcd:" + pins.Etcd, Dir: filepath.Join(imgs, "etcd")},
		{Ref: "registry.k8s.io/coredns/coredns:" + pins.CoreDNS, Dir: filepath.Join(imgs, "coredns"), Entrypoint: []string{"/coredns"}},
		{Ref: "registry.k8s.io/pause:" + pins.Pause, Dir: filepath.Join(imgs, "pause"), Entrypoint: []string{"/pause"}},
	}
	if sandbox != "registry.k8s.io/pause:"+pins.Pause {
		components = append(components, dirImage{Ref: sandbox, Dir: filepath.Join(imgs, "pause"), Entrypoint: []string{"/pause"}})
	}
	tarPath := filepath.Join(work, "components.tar")
	if err := writeImages(tarPath, work, components...); err != nil {
		return err
	}
	step(fmt.Sprintf("%d images", len(components)))

	step = b.R.Step("node: import the root filesystem")
	stage := ref + "-stage"
	if err := b.importDir(ctx, root, stage, "ENV container=docker", `ENTRYPOINT ["/usr/local/bin/entrypoint", "/sbin/init"]`); err != nil {
		return err
	}
	defer b.D.RemoveImages(context.WithoutCancel(ctx), stage, stage+"-preloaded")
	step("done")

	step = b.R.Step("node: preload the component images into the node's containerd")
	if err := b.preload(ctx, stage, tarPath); err != nil {
		return err
	}
	step("done")
	// Docker 20.10 refuses STOPSIGNAL in --change; a classic build sets it.
	if err := b.D.Build(ctx, ref, fmt.Sprintf("FROM %s-preloaded\nSTOPSIGNAL SIGRTMIN+3\n", stage)); err != nil {
		return err
	}
	done("built")
	return nil
}

// importDir makes an image of a directory with docker import.
func (b *Builder) importDir(ctx context.Context, dir, ref string, changes ...string) error {
	pr, pw := io.Pipe()
	tarErr := make(chan error, 1)
	go func() {
		_, err := b.R.Run(ctx, run.Cmd{Name: "tar", Args: []string{"--numeric-owner", "-C", dir, "-c", "."}, Stdout: pw})
		pw.CloseWithError(err)
		tarErr <- err
	}()
	err := b.D.Import(ctx, pr, ref, changes...)
	pr.Close()
	if terr := <-tarErr; terr != nil && err == nil {
		err = terr
	}
	return err
}

const preloadScript = `p=$(cat /tmp/containerd.pid); kill $p
for i in $(seq 1 60); do { [ ! -e /proc/$p/status ] || grep -qs "^State:[[:space:]]*Z" /proc/$p/status; } && exit 0; sleep 0.5; done; exit 1`

// preload runs containerd in a container of the stage image, imports the
// component images pinned, and commits the result as <stage>-preloaded.
func (b *Builder) preload(ctx context.Context, stage, tarPath string) error {
	name := "ptah-lab-node-preload"
	_ = b.D.Remove(ctx, name)
	if err := b.D.Run(ctx, "--name", name, "--entrypoint=sleep", "--security-opt", "seccomp=unconfined", stage, "infinity"); err != nil {
		return err
	}
	defer b.D.Remove(context.WithoutCancel(ctx), name)
	if _, err := b.D.Exec(ctx, name, nil, "bash", "-c", "nohup containerd > /tmp/containerd.log 2>&1 & echo $! > /tmp/containerd.pid"); err != nil {
		return err
	}
	if _, err := b.D.Exec(ctx, name, nil, "bash", "-c", "for i in $(seq 1 60); do ctr version >/dev/null 2>&1 && exit 0; sleep 0.5; done; cat /tmp/containerd.log; exit 1"); err != nil {
		return fmt.Errorf("node: containerd did not start for the preload: %w", err)
	}
	f, err := os.Open(tarPath)
	if err != nil {
		return err
	}
	defer f.Close()
	if _, err := b.D.Exec(ctx, name, f, "ctr", "--namespace=k8s.io", "images", "import", "--label=io.cri-containerd.pinned=pinned", "--all-platforms", "--no-unpack", "--digests", "-"); err != nil {
		return err
	}
	if _, err := b.D.Exec(ctx, name, nil, "bash", "-c", preloadScript+"\n"); err != nil {
		return fmt.Errorf("node: containerd did not stop after the preload: %w", err)
	}
	if _, err := b.D.Exec(ctx, name, nil, "rm", "-f", "/tmp/containerd.pid", "/tmp/containerd.log"); err != nil {
		return err
	}
	_, err = b.R.Output(ctx, "docker", "commit",
		"--change", `ENTRYPOINT ["/usr/local/bin/entrypoint", "/sbin/init"]`, "--change", "CMD []", "--change", "ENV container=docker",
		name, stage+"-preloaded")
	return err
}

// sandboxImage reads the pause image containerd's config names for pod sandboxes.
func sandboxImage(configToml string) (string, error) {
	raw, err := os.ReadFile(configToml)
	if err != nil {
		return "", err
	}
	for _, l := range strings.Split(string(raw), "\n") {
		if v, ok := strings.CutPrefix(strings.TrimSpace(l), "sandbox_image = "); ok {
			return strings.Trim(v, `"`), nil
		}
	}
	return "", fmt.Errorf("node: no sandbox_image in %s", configToml)
}
