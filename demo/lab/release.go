package lab

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"sort"
	"strings"
	"time"

	v1 "github.com/google/go-containerregistry/pkg/v1"
	"github.com/google/go-containerregistry/pkg/v1/tarball"
	"helm.sh/helm/v3/pkg/action"
	helmchart "helm.sh/helm/v3/pkg/chart"
	"helm.sh/helm/v3/pkg/chart/loader"
	"helm.sh/helm/v3/pkg/cli"
	"helm.sh/helm/v3/pkg/registry"
	"helm.sh/helm/v3/pkg/release"
	"helm.sh/helm/v3/pkg/storage/driver"
	"k8s.io/cli-runtime/pkg/genericclioptions"

	ptahrelease "ptah.run/operator/internal/release"
	"ptah.run/operator/operator/chart"
	"ptah.run/operator/operator/image"
)

// ReleaseName is the Helm release the lab installs the operator as; the
// chart names the manager's Deployment after it (ReleaseName-manager).
const ReleaseName = "ptah"

// installTimeout bounds an install that waits for its Deployment.
const installTimeout = 3 * time.Minute

// labRelease is the operator release the lab installs: published to its
// own registry and installed from there, as a user installs a release.
type labRelease struct {
	// Chart is the chart's OCI reference and Version the release's.
	Chart, Version string
	// Registry is the lab registry's host:port and Password its password.
	Registry, Password string
}

// publish publishes the operator images the lab built and the chart of
// this tree to the lab's registry as release 0.0.0-lab.<digest of both
// images and the chart> (a version the registry holds is the same
// release, not published again), and puts the released images into the
// node's containerd under their release names, so the kubelet runs them
// without a pull (the node does not reach the registry's host port).
func (l *Lab) publish(ctx context.Context, s *state, registryPort string) (*labRelease, error) {
	imgs := map[string]v1.Image{}
	h := sha256.New()
	for _, repo := range []string{"ptah-manager", "ptah-executor"} {
		file := filepath.Join(l.OperatorImagesDir(), strings.TrimPrefix(repo, "ptah-")+".tar")
		img, err := tarball.ImageFromPath(file, nil)
		if err != nil {
			return nil, fmt.Errorf("image %s: %w (make images builds it)", file, err)
		}
		d, err := img.Digest()
		if err != nil {
			return nil, fmt.Errorf("image %s: %w", file, err)
		}
		imgs[repo] = img
		fmt.Fprintln(h, repo, d)
	}
	c, err := chart.Load()
	if err != nil {
		return nil, err
	}
	sort.Slice(c.Raw, func(i, j int) bool { return c.Raw[i].Name < c.Raw[j].Name })
	for _, f := range c.Raw {
		fmt.Fprintln(h, f.Name, len(f.Data))
		h.Write(f.Data)
	}
	return l.publishRelease(ctx, s, registryPort, "0.0.0-lab."+hex.EncodeToString(h.Sum(nil))[:12], imgs, nil)
}

// publishRelease publishes imgs (by repository) and c (nil: this tree's
// chart) to the lab's registry as release version, unless the registry
// holds it already, and puts the images into the node's containerd under
// their release names.
func (l *Lab) publishRelease(ctx context.Context, s *state, registryPort, version string, imgs map[string]v1.Image, c *helmchart.Chart) (*labRelease, error) {
	r := &labRelease{
		Version:  version,
		Registry: "127.0.0.1:" + registryPort,
		Password: s.creds.Registry,
	}
	reg := r.Registry + "/" + releasePath
	r.Chart = chartRef(r.Registry)
	_, err := ptahrelease.Run(ctx, ptahrelease.Options{Version: r.Version, Registry: reg, PlainHTTP: true, Username: registryUser, Password: r.Password, Chart: c},
		ptahrelease.Images{Manager: imgs["ptah-manager"], Executor: imgs["ptah-executor"]})
	if err != nil && !errors.Is(err, ptahrelease.ErrReleased) {
		return nil, err
	}
	dir, err := os.MkdirTemp("", "ptah-lab-release-")
	if err != nil {
		return nil, err
	}
	defer os.RemoveAll(dir)
	nodeList, err := l.provider().ListInternalNodes(s.cluster)
	if err != nil {
		return nil, err
	}
	for repo, img := range imgs {
		file := filepath.Join(dir, repo+".tar")
		if err := image.WriteTarball(file, reg+"/"+repo+":"+r.Version, img); err != nil {
			return nil, err
		}
		for _, n := range nodeList {
			if err := loadArchive(n, file); err != nil {
				return nil, err
			}
		}
	}
	return r, nil
}

// releasePath is where under the lab registry the lab publishes its release.
const releasePath = "ptah"

// chartRef is the OCI reference of the chart the lab releases to registry.
func chartRef(registry string) string {
	return "oci://" + registry + "/" + releasePath + "/charts/" + ptahrelease.ChartName
}

// helmConfig is Helm's configuration for namespace of the lab's cluster,
// with a registry client logged in to the lab's registry.
func (l *Lab) helmConfig(namespace string, r *labRelease) (*action.Configuration, error) {
	kubeconfig := l.kubeconfig()
	flags := &genericclioptions.ConfigFlags{KubeConfig: &kubeconfig, Namespace: &namespace}
	cfg := new(action.Configuration)
	if err := cfg.Init(flags, namespace, "secret", func(string, ...any) {}); err != nil {
		return nil, fmt.Errorf("helm: reach the lab's cluster: %w", err)
	}
	rc, err := registry.NewClient(registry.ClientOptPlainHTTP(), registry.ClientOptBasicAuth(registryUser, r.Password), registry.ClientOptWriter(discard{}))
	if err != nil {
		return nil, err
	}
	cfg.RegistryClient = rc
	return cfg, nil
}

// installChart installs release name in namespace, or upgrades it, from
// the lab's OCI release r (helm install NAME oci://... --version V), with
// values. It returns the release's Deployment name.
func (l *Lab) installChart(ctx context.Context, r *labRelease, name, namespace string, values map[string]any, wait bool) (string, error) {
	cfg, err := l.helmConfig(namespace, r)
	if err != nil {
		return "", err
	}
	in := action.NewInstall(cfg)
	in.ReleaseName, in.Namespace, in.CreateNamespace, in.Version = name, namespace, true, r.Version
	in.PlainHTTP = true
	in.SetRegistryClient(cfg.RegistryClient)
	path, err := in.LocateChart(r.Chart, cli.New())
	if err != nil {
		return "", fmt.Errorf("helm: pull %s --version %s: %w", r.Chart, r.Version, err)
	}
	c, err := loader.Load(path)
	if err != nil {
		return "", fmt.Errorf("helm: load %s %s: %w", r.Chart, r.Version, err)
	}
	var rel *release.Release
	if _, err := action.NewHistory(cfg).Run(name); err == driver.ErrReleaseNotFound {
		in.Wait, in.Timeout = wait, installTimeout
		rel, err = in.RunWithContext(ctx, c, values)
		if err != nil {
			return "", fmt.Errorf("helm install %s %s --version %s: %w", name, r.Chart, r.Version, err)
		}
	} else if err != nil {
		return "", fmt.Errorf("helm history %s: %w", name, err)
	} else {
		up := action.NewUpgrade(cfg)
		up.Namespace, up.Wait, up.Timeout = namespace, wait, installTimeout
		rel, err = up.RunWithContext(ctx, name, c, values)
		if err != nil {
			return "", fmt.Errorf("helm upgrade %s %s --version %s: %w", name, r.Chart, r.Version, err)
		}
	}
	return releaseDeployment(rel.Manifest)
}

// releaseDeployment is the name of the one Deployment a release's manifest holds.
func releaseDeployment(manifest string) (string, error) {
	for _, doc := range strings.Split(manifest, "\n---") {
		if !strings.Contains(doc, "\nkind: Deployment\n") {
			continue
		}
		_, rest, ok := strings.Cut(doc, "\nmetadata:\n  name: ")
		if ok {
			name, _, _ := strings.Cut(rest, "\n")
			return strings.TrimSpace(name), nil
		}
	}
	return "", errors.New("the release installs no Deployment")
}

type discard struct{}

func (discard) Write(p []byte) (int, error) { return len(p), nil }
