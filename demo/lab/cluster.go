package lab

import (
	"bytes"
	"context"
	"fmt"
	"io"
	"os"
	"strings"
	"time"

	"github.com/distribution/reference"
	"sigs.k8s.io/kind/pkg/apis/config/v1alpha4"
	"sigs.k8s.io/kind/pkg/cluster"
	"sigs.k8s.io/kind/pkg/cluster/nodes"
	"sigs.k8s.io/kind/pkg/cluster/nodeutils"
	kindlog "sigs.k8s.io/kind/pkg/log"

	"ptah.run/operator/demo/lab/internal/run"
)

func (l *Lab) provider() *cluster.Provider {
	return cluster.NewProvider(cluster.ProviderWithDocker(), cluster.ProviderWithLogger(kindLogger{l.r}))
}

// kindConfig is one control-plane node; kubelet 1.35+ refuses cgroup v1
// unless told otherwise, and these hosts run cgroup v1.
func kindConfig() *v1alpha4.Cluster {
	c := &v1alpha4.Cluster{
		TypeMeta: v1alpha4.TypeMeta{Kind: "Cluster", APIVersion: "kind.x-k8s.io/v1alpha4"},
		Nodes:    []v1alpha4.Node{{Role: v1alpha4.ControlPlaneRole}},
		KubeadmConfigPatches: []string{
			"kind: KubeletConfiguration\nfailCgroupV1: false\n",
		},
	}
	v1alpha4.SetDefaultsCluster(c)
	return c
}

func (l *Lab) clusterExists(name string) (bool, error) {
	names, err := l.provider().List()
	if err != nil {
		return false, err
	}
	for _, n := range names {
		if n == name {
			return true, nil
		}
	}
	return false, nil
}

func (l *Lab) upCluster(ctx context.Context, s *state, made *created) (string, error) {
	p := l.provider()
	exists, err := l.clusterExists(s.cluster)
	if err != nil {
		return "", err
	}
	how := "already up"
	if exists {
		// The cluster keeps the node image it was created from; record that one.
		if img, err := l.r.Output(ctx, "docker", "container", "inspect", "--format", "{{.Config.Image}}", s.cluster+"-control-plane"); err == nil && img != s.node.Ref {
			l.r.Printf("  cluster %s runs node image %s (a newer one, %s, is used by the next new cluster)", s.cluster, img, s.node.Ref)
			s.node.Ref = img
		}
	} else {
		if !l.d.NetworkExists(ctx, "kind") {
			// kind creates the network; it is ours to remove when the lab goes.
			if err := made.add("network", "kind"); err != nil {
				return "", err
			}
		}
		if err := made.add("cluster", s.cluster); err != nil {
			return "", err
		}
		err := p.Create(s.cluster,
			cluster.CreateWithV1Alpha4Config(kindConfig()),
			cluster.CreateWithNodeImage(s.node.Ref),
			cluster.CreateWithWaitForReady(5*time.Minute),
			cluster.CreateWithKubeconfigPath(l.kubeconfig()),
			cluster.CreateWithDisplayUsage(false),
			cluster.CreateWithDisplaySalutation(false))
		if err != nil {
			return "", fmt.Errorf("kind create cluster %s: %w", s.cluster, err)
		}
		how = "created"
	}
	cfg, err := p.KubeConfig(s.cluster, false)
	if err != nil {
		return "", err
	}
	if err := writePrivate(l.kubeconfig(), []byte(cfg)); err != nil {
		return "", err
	}
	return fmt.Sprintf("%s %s (node image %s), kubeconfig %s", s.cluster, how, s.node.Ref, l.kubeconfig()), nil
}

// upLoadImages puts the psql and dev database images into the node's
// containerd, skipping images the node already holds. The operator's images
// go in under their release names when the lab publishes its release
// (publish).
func (l *Lab) upLoadImages(ctx context.Context, s *state, _ *created) (string, error) {
	nodeList, err := l.provider().ListInternalNodes(s.cluster)
	if err != nil {
		return "", err
	}
	var loaded, present []string
	for _, n := range nodeList {
		for _, ref := range []string{s.postgresIm.Ref, s.devIm.Ref} {
			if nodeHasImage(n, ref) {
				present = append(present, ref)
				continue
			}
			if err := l.loadDockerImage(ctx, n, ref); err != nil {
				return "", err
			}
			loaded = append(loaded, ref)
		}
	}
	return fmt.Sprintf("loaded [%s], already present [%s]", strings.Join(loaded, " "), strings.Join(present, " ")), nil
}

// nodeHasImage asks the node's containerd (the node image has ctr, not crictl).
func nodeHasImage(n nodes.Node, ref string) bool {
	named, err := reference.ParseNormalizedNamed(ref)
	if err != nil {
		return false
	}
	var out bytes.Buffer
	if err := n.Command("ctr", "--namespace=k8s.io", "images", "ls", "-q").SetStdout(&out).Run(); err != nil {
		return false
	}
	for _, line := range strings.Fields(out.String()) {
		if line == named.String() {
			return true
		}
	}
	return false
}

func loadArchive(n nodes.Node, path string) error {
	f, err := os.Open(path)
	if err != nil {
		return err
	}
	defer f.Close()
	if err := nodeutils.LoadImageArchive(n, f); err != nil {
		return fmt.Errorf("load %s into node %s: %w", path, n.String(), err)
	}
	return nil
}

func (l *Lab) loadDockerImage(ctx context.Context, n nodes.Node, ref string) error {
	pr, pw := io.Pipe()
	go func() {
		_, err := l.r.Run(ctx, run.Cmd{Name: "docker", Args: []string{"save", ref}, Stdout: pw})
		pw.CloseWithError(err)
	}()
	err := nodeutils.LoadImageArchive(n, pr)
	pr.CloseWithError(io.ErrClosedPipe)
	if err != nil {
		return fmt.Errorf("load %s into node %s: %w", ref, n.String(), err)
	}
	return nil
}

// kindLogger shows kind's user-facing lines as lab progress.
type kindLogger struct{ r *run.Runner }

func (k kindLogger) Warn(m string)                        { k.r.Printf("  kind: warning: %s", m) }
func (k kindLogger) Warnf(f string, a ...any)             { k.Warn(fmt.Sprintf(f, a...)) }
func (k kindLogger) Error(m string)                       { k.r.Printf("  kind: error: %s", m) }
func (k kindLogger) Errorf(f string, a ...any)            { k.Error(fmt.Sprintf(f, a...)) }
func (k kindLogger) V(v kindlog.Level) kindlog.InfoLogger { return kindInfo{k.r, v == 0} }

type kindInfo struct {
	r  *run.Runner
	on bool
}

func (i kindInfo) Info(m string) {
	if i.on {
		i.r.Printf("  kind: %s", strings.TrimSpace(m))
	}
}
func (i kindInfo) Infof(f string, a ...any) { i.Info(fmt.Sprintf(f, a...)) }
func (i kindInfo) Enabled() bool            { return i.on }
