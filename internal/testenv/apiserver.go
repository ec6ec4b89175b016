package testenv

import (
	"os"
	"os/exec"
	"path/filepath"
	"testing"
	"time"

	"k8s.io/client-go/rest"
	"sigs.k8s.io/controller-runtime/pkg/envtest"

	"ptah.run/operator/demo/kubebuild"
)

// KubernetesVersion is the release whose API server and etcd the tests run.
const KubernetesVersion = "v1.37.2"

// OldestKubernetesVersion is the oldest release the operator supports; the
// compatibility tests run its API server too (make envtest builds both).
const OldestKubernetesVersion = "v1.33.13"

// APIServer is a running kube-apiserver backed by its own etcd.
type APIServer struct {
	Config *rest.Config
	// Kubeconfig is a file kubectl can use (KUBECONFIG=...).
	Kubeconfig string
	// Started is how long the control plane took to come up.
	Started time.Duration
	env     *envtest.Environment
}

// APIServerOption adjusts the control plane before it starts.
type APIServerOption func(*envtest.Environment)

// WithCRDs installs the CustomResourceDefinitions found in dirs before the
// server is handed to the test; a missing directory fails the test.
func WithCRDs(dirs ...string) APIServerOption {
	return func(e *envtest.Environment) {
		e.CRDDirectoryPaths = append(e.CRDDirectoryPaths, dirs...)
		e.ErrorIfCRDPathMissing = true
	}
}

// Version runs the API server and etcd of release v, from the directory
// `go run ./cmd/lab envtest -kubernetes-version v` builds them into.
// The binaries' paths are set, not only the directory: envtest prefers
// KUBEBUILDER_ASSETS (which make exports for the newest) to the directory.
func Version(v string) APIServerOption {
	return func(e *envtest.Environment) {
		dir := kubebuild.DefaultCacheDir(v)
		e.BinaryAssetsDirectory = dir
		e.ControlPlane.GetAPIServer().Path = filepath.Join(dir, "kube-apiserver")
		if e.ControlPlane.Etcd == nil {
			e.ControlPlane.Etcd = &envtest.Etcd{}
		}
		e.ControlPlane.Etcd.Path = filepath.Join(dir, "etcd")
	}
}

// EnvtestDir is where `make envtest` puts kube-apiserver and etcd;
// KUBEBUILDER_ASSETS overrides it, as it does for envtest itself.
func EnvtestDir() string {
	if d := os.Getenv("KUBEBUILDER_ASSETS"); d != "" {
		return d
	}
	return kubebuild.DefaultCacheDir(KubernetesVersion)
}

// StartAPIServer starts kube-apiserver and etcd and stops them when t ends.
func StartAPIServer(t testing.TB, opts ...APIServerOption) *APIServer {
	t.Helper()
	env := &envtest.Environment{
		BinaryAssetsDirectory:    EnvtestDir(),
		ControlPlaneStartTimeout: time.Minute,
		ControlPlaneStopTimeout:  time.Minute,
	}
	if kubectl, err := exec.LookPath("kubectl"); err == nil {
		env.ControlPlane.KubectlPath = kubectl
	}
	for _, o := range opts {
		o(env)
	}
	dir := env.BinaryAssetsDirectory
	for _, bin := range []string{"kube-apiserver", "etcd"} {
		if _, err := os.Stat(filepath.Join(dir, bin)); err != nil {
			t.Fatalf("testenv: %s is not in %s: run `make envtest` first (it builds the API servers and etcd of %s and %s from the Go module proxy)", bin, dir, KubernetesVersion, OldestKubernetesVersion)
		}
	}
	start := time.Now()
	cfg, err := env.Start()
	if err != nil {
		_ = env.Stop()
		t.Fatalf("testenv: start kube-apiserver from %s: %v", dir, err)
	}
	s := &APIServer{Config: cfg, Started: time.Since(start), env: env}
	t.Cleanup(func() {
		if err := env.Stop(); err != nil {
			t.Errorf("testenv: stop kube-apiserver: %v", err)
		}
	})
	s.Kubeconfig = filepath.Join(t.TempDir(), "kubeconfig")
	if err := os.WriteFile(s.Kubeconfig, env.KubeConfig, 0o600); err != nil {
		t.Fatalf("testenv: write kubeconfig: %v", err)
	}
	t.Logf("testenv: kube-apiserver from %s up in %s", dir, s.Started.Round(time.Millisecond))
	return s
}
