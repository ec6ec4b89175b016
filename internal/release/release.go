// Package release publishes a versioned release of the operator to an OCI
// registry: the manager and executor images tagged with the version, and
// the Helm chart, with version and appVersion set and its values naming
// those images, pushed as an OCI artifact, as `helm install oci://...`
// takes it. A version once published is never overwritten.
package release

import (
	"context"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"regexp"
	"strings"

	v1 "github.com/google/go-containerregistry/pkg/v1"
	"github.com/google/go-containerregistry/pkg/v1/empty"
	"github.com/google/go-containerregistry/pkg/v1/layout"
	helmchart "helm.sh/helm/v3/pkg/chart"
	"helm.sh/helm/v3/pkg/chartutil"
	"helm.sh/helm/v3/pkg/registry"
	"oras.land/oras-go/v2"
	"oras.land/oras-go/v2/content/oci"
	"oras.land/oras-go/v2/errdef"
	"oras.land/oras-go/v2/registry/remote"
	"oras.land/oras-go/v2/registry/remote/auth"

	"ptah.run/operator/operator/chart"
	"ptah.run/operator/operator/image"
)

// Options say what to release and where.
type Options struct {
	// Version is the release's semantic version, x.y.z (no leading v).
	Version string
	// Registry is host[:port][/path] the images and the chart go under.
	Registry string
	// PlainHTTP speaks HTTP, not HTTPS, to the registry (a lab's).
	PlainHTTP bool
	// Username and Password authenticate to the registry, if set.
	Username, Password string
	// Chart is the chart to publish; nil publishes this tree's (an upgrade
	// check publishes an older tree's).
	Chart *helmchart.Chart
}

// Images are the two images a release publishes.
type Images struct {
	Manager, Executor v1.Image
}

// FromBinaries assembles the images from the static binaries in dir (make
// binaries writes them).
func FromBinaries(dir string) (Images, error) {
	bin := func(n string) string { return filepath.Join(dir, n) }
	m, err := image.Build(image.Manager(bin(image.ManagerBinary)))
	if err != nil {
		return Images{}, fmt.Errorf("%w (build the binaries into %s first: make binaries)", err, dir)
	}
	e, err := image.Build(image.Executor(bin(image.PtahBinary), bin(image.RunnerBinary)))
	if err != nil {
		return Images{}, fmt.Errorf("%w (build the binaries into %s first: make binaries)", err, dir)
	}
	return Images{Manager: m, Executor: e}, nil
}

// ErrReleased is a version the registry already holds.
var ErrReleased = errors.New("already released")

// Published is what a release pushed.
type Published struct {
	// Manager and Executor are the images' references, tag and digest.
	Manager, Executor string
	// Chart is the chart's OCI reference (oci://.../charts/ptah-operator)
	// and ChartDigest its manifest's digest.
	Chart, ChartDigest string
}

var semver = regexp.MustCompile(`^(0|[1-9]\d*)\.(0|[1-9]\d*)\.(0|[1-9]\d*)(-[0-9A-Za-z.-]+)?$`)

// ChartName is the chart's name, the last part of its OCI reference.
const ChartName = "ptah-operator"

// Run publishes release o.Version to o.Registry. It refuses a version that
// is not x.y.z, and a version any of whose images or chart the registry
// already holds, before it pushes anything.
func Run(ctx context.Context, o Options, imgs Images) (*Published, error) {
	if !semver.MatchString(o.Version) {
		return nil, fmt.Errorf("release version %q is not a semantic version x.y.z (without a leading v): set VERSION=1.2.3", o.Version)
	}
	reg := strings.TrimSuffix(strings.TrimPrefix(o.Registry, "oci://"), "/")
	if reg == "" {
		return nil, errors.New("no registry to release to: set REGISTRY=host[:port][/path]")
	}
	host, _, _ := strings.Cut(reg, "/")
	cred := auth.EmptyCredential
	if o.Username != "" {
		cred = auth.Credential{Username: o.Username, Password: o.Password}
	}
	repository := func(path string) (*remote.Repository, error) {
		repo, err := remote.NewRepository(reg + "/" + path)
		if err != nil {
			return nil, fmt.Errorf("repository %s/%s: %w", reg, path, err)
		}
		repo.PlainHTTP = o.PlainHTTP
		repo.Client = &auth.Client{Cache: auth.NewCache(), Credential: auth.StaticCredential(host, cred)}
		return repo, nil
	}
	images := []struct {
		img  v1.Image
		path string
	}{
		{imgs.Manager, "ptah-manager"},
		{imgs.Executor, "ptah-executor"},
	}
	repos := map[string]*remote.Repository{}
	for _, path := range []string{"ptah-manager", "ptah-executor", "charts/" + ChartName} {
		repo, err := repository(path)
		if err != nil {
			return nil, err
		}
		repos[path] = repo
		// A release is immutable: what users installed as this version
		// stays what it was.
		switch _, err := repo.Resolve(ctx, o.Version); {
		case err == nil:
			return nil, fmt.Errorf("%s/%s:%s exists: version %s is %w; release a new version", reg, path, o.Version, o.Version, ErrReleased)
		case !errors.Is(err, errdef.ErrNotFound):
			return nil, fmt.Errorf("ask %s whether %s:%s exists: %w", reg, path, o.Version, err)
		}
	}
	dir, err := os.MkdirTemp("", "ptah-release-")
	if err != nil {
		return nil, err
	}
	defer os.RemoveAll(dir)
	pub := &Published{}
	for _, im := range images {
		img := im.img
		// The image goes through an OCI layout, from which oras copies it.
		lay := filepath.Join(dir, im.path)
		p, err := layout.Write(lay, empty.Index)
		if err != nil {
			return nil, err
		}
		if err := p.AppendImage(img, layout.WithAnnotations(map[string]string{"org.opencontainers.image.ref.name": o.Version})); err != nil {
			return nil, err
		}
		store, err := oci.New(lay)
		if err != nil {
			return nil, err
		}
		desc, err := oras.Copy(ctx, store, o.Version, repos[im.path], o.Version, oras.DefaultCopyOptions)
		if err != nil {
			return nil, fmt.Errorf("push %s/%s:%s: %w", reg, im.path, o.Version, err)
		}
		ref := fmt.Sprintf("%s/%s:%s@%s", reg, im.path, o.Version, desc.Digest)
		if im.path == "ptah-manager" {
			pub.Manager = ref
		} else {
			pub.Executor = ref
		}
	}

	c := o.Chart
	if c == nil {
		if c, err = chart.Load(); err != nil {
			return nil, err
		}
	}
	c.Metadata.Version, c.Metadata.AppVersion = o.Version, o.Version
	// The published chart installs the published images: the tags default
	// to appVersion, the repositories are the registry's. Its values.yaml
	// is edited as text, so every comment a user reads stays.
	if err := setValues(c, map[string]string{
		"image:\n  repository: ptah-manager\n": "image:\n  repository: " + reg + "/ptah-manager\n",
		"executor:\n  image: \"\"\n":           "executor:\n  image: " + reg + "/ptah-executor:" + o.Version + "\n",
	}); err != nil {
		return nil, err
	}
	tgz, err := chartutil.Save(c, dir)
	if err != nil {
		return nil, fmt.Errorf("package the chart %s %s: %w", ChartName, o.Version, err)
	}
	data, err := os.ReadFile(tgz)
	if err != nil {
		return nil, err
	}
	clientOpts := []registry.ClientOption{registry.ClientOptWriter(nopWriter{})}
	if o.PlainHTTP {
		clientOpts = append(clientOpts, registry.ClientOptPlainHTTP())
	}
	if o.Username != "" {
		clientOpts = append(clientOpts, registry.ClientOptBasicAuth(o.Username, o.Password))
	}
	client, err := registry.NewClient(clientOpts...)
	if err != nil {
		return nil, err
	}
	res, err := client.Push(data, reg+"/charts/"+ChartName+":"+o.Version, registry.PushOptStrictMode(true))
	if err != nil {
		return nil, fmt.Errorf("push the chart to oci://%s/charts/%s:%s: %w", reg, ChartName, o.Version, err)
	}
	pub.Chart = "oci://" + reg + "/charts/" + ChartName
	pub.ChartDigest = res.Manifest.Digest
	return pub, nil
}

// setValues replaces, in the chart's values.yaml, each key of edits, which
// must occur exactly once, by its value, and reads the values again.
func setValues(c *helmchart.Chart, edits map[string]string) error {
	for _, f := range c.Raw {
		if f.Name != chartutil.ValuesfileName {
			continue
		}
		text := string(f.Data)
		for old, repl := range edits {
			if n := strings.Count(text, old); n != 1 {
				return fmt.Errorf("the chart's values.yaml holds %q %d times, not once: the release cannot set it", old, n)
			}
			text = strings.Replace(text, old, repl, 1)
		}
		f.Data = []byte(text)
		vals, err := chartutil.ReadValues(f.Data)
		if err != nil {
			return fmt.Errorf("the released values.yaml: %w", err)
		}
		c.Values = vals
		return nil
	}
	return errors.New("the chart has no values.yaml")
}

type nopWriter struct{}

func (nopWriter) Write(p []byte) (int, error) { return len(p), nil }
