// Package lab is the local demonstration lab: a kind cluster with the
// operator installed from this tree's images, an OCI registry that asks for
// credentials and an external PostgreSQL. Its exported API is the verbs a
// user has (Up, Down, Reset, Publish, Manifest, Credentials, Psql, Versions);
// images, the container runtime and host preparation live in internal packages.
package lab

import (
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"time"

	"ptah.run/operator/demo/lab/internal/docker"
	"ptah.run/operator/demo/lab/internal/host"
	"ptah.run/operator/demo/lab/internal/images"
	"ptah.run/operator/demo/lab/internal/run"
)

// Versions the lab is built for.
const (
	KubernetesVersion = "v1.37.2"
	KindVersion       = "v0.33.0"
)

// Names inside the cluster (the published environment names' values).
const (
	Namespace         = "ptah-demo"
	OperatorNamespace = "ptah-system"
	defaultController = "ptah-manager"
	registryService   = "registry"
	postgresService   = "postgres"
	databaseName      = "storefront"
	appRole           = "storefront_app"
	registryUser      = "ptah"
)

// ErrNoLab is returned by verbs that need a lab when none is up.
var ErrNoLab = errors.New("no lab: run make demo-up")

// Lab is the lab of one repository checkout; its state lives in demo/.lab.
type Lab struct {
	// Root is the repository root.
	Root string
	// Dir is the state directory, Root/demo/.lab.
	Dir string
	// Cache holds what outlives a lab: root filesystems, binaries, build work.
	Cache string
	// Stdout receives a verb's result (a digest, credentials, psql output).
	Stdout io.Writer
	// Kubernetes is the release the cluster's node runs (KubernetesVersion
	// unless WithKubernetes says otherwise).
	Kubernetes string
	r          *run.Runner
	d          docker.Docker
}

// New returns the lab of the repository at root; progress goes to log.
func New(root string, stdout, log io.Writer) *Lab {
	r := &run.Runner{Log: log}
	l := &Lab{
		Root:       root,
		Dir:        filepath.Join(root, "demo", ".lab"),
		Cache:      DefaultCache(),
		Stdout:     stdout,
		Kubernetes: KubernetesVersion,
		r:          r,
		d:          docker.Docker{R: r},
	}
	// Everything the lab and the scenarios run finds the lab's kubectl first.
	r.Path = l.binDir()
	return l
}

// WithDir keeps the lab's state in dir instead of demo/.lab (tests use
// this to run a lab beside a user's).
func (l *Lab) WithDir(dir string) *Lab {
	l.Dir = dir
	l.r.Path = l.binDir()
	return l
}

// WithKubernetes runs the cluster on release v (a k8s.io/kubernetes
// version): the node image, kubectl and the envtest-style builds follow it.
// The compatibility check brings a lab up on the oldest supported release.
func (l *Lab) WithKubernetes(v string) *Lab {
	l.Kubernetes = v
	return l
}

// DefaultCache is ~/.cache/ptah/lab (or under XDG_CACHE_HOME).
func DefaultCache() string {
	base := os.Getenv("XDG_CACHE_HOME")
	if base == "" {
		home, err := os.UserHomeDir()
		if err != nil {
			home = os.TempDir()
		}
		base = filepath.Join(home, ".cache")
	}
	return filepath.Join(base, "ptah", "lab")
}

func (l *Lab) binDir() string          { return filepath.Join(l.Dir, "bin") }
func (l *Lab) kubectl() string         { return filepath.Join(l.binDir(), "kubectl") }
func (l *Lab) kubeconfig() string      { return filepath.Join(l.Dir, "kubeconfig") }
func (l *Lab) environmentFile() string { return filepath.Join(l.Dir, "environment") }
func (l *Lab) secretsFile() string     { return filepath.Join(l.Dir, "secrets") }
func (l *Lab) createdFile() string     { return filepath.Join(l.Dir, "created") }
func (l *Lab) provenanceFile() string  { return filepath.Join(l.Dir, "provenance") }

// OperatorImagesDir is where `make images` leaves the operator's image
// tarballs (docker save format); Up loads every *.tar there into the cluster.
// It is fixed under the repository even when Dir is elsewhere (as in tests).
func (l *Lab) OperatorImagesDir() string { return filepath.Join(l.Root, "demo", ".lab", "images") }

func (l *Lab) builder() *images.Builder {
	return &images.Builder{
		R: l.r, D: l.d, Cache: l.Cache, RepoRoot: l.Root,
		KubernetesVersion: l.Kubernetes, KindVersion: KindVersion,
		// Offline, a pull fails at once (no DNS); online, a node image takes minutes.
		PullTimeout: 10 * time.Minute,
	}
}

// Prepare readies the host: Debian packages, dockerd, and the OCI runtime
// wrapper where the capability bounding set needs it.
func (l *Lab) Prepare(ctx context.Context) error {
	done := l.r.Step("prepare the host")
	if err := host.Prepare(ctx, l.r); err != nil {
		return err
	}
	done("ready")
	return nil
}

func (l *Lab) printf(format string, args ...any) {
	fmt.Fprintf(l.Stdout, format, args...)
}
