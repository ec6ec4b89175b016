package release_test

import (
	"context"
	"errors"
	"io"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"helm.sh/helm/v3/pkg/action"
	"helm.sh/helm/v3/pkg/chart/loader"
	"helm.sh/helm/v3/pkg/chartutil"
	"helm.sh/helm/v3/pkg/registry"
	"oras.land/oras-go/v2"
	"oras.land/oras-go/v2/registry/remote"
	"oras.land/oras-go/v2/registry/remote/auth"

	"ptah.run/operator/internal/release"
	"ptah.run/operator/internal/testenv"
	"ptah.run/operator/operator/image"
)

// TestReleaseIsInstallableAndImmutable publishes a release to a real
// registry and reads it back as a user's helm does: the chart pulled from
// oci://, its version and appVersion the release's, rendered for a cluster
// it installs the images the release pushed (resolved in the registry to
// the digests it reported). Publishing the same version again is refused
// and changes nothing; a version that is not x.y.z pushes nothing.
func TestReleaseIsInstallableAndImmutable(t *testing.T) {
	reg := testenv.StartRegistry(t)
	bin := t.TempDir()
	for _, b := range []string{image.ManagerBinary, image.PtahBinary, image.RunnerBinary} {
		// Stand-ins for the static binaries: the release publishes what
		// it is given, and what is checked here is where it lands.
		if err := os.WriteFile(filepath.Join(bin, b), []byte("#!/bin/sh\necho "+b+"\n"), 0o755); err != nil {
			t.Fatal(err)
		}
	}
	ctx := context.Background()
	o := release.Options{Version: "1.4.2", Registry: reg.Host + "/ptah", PlainHTTP: true, Username: reg.Username, Password: reg.Password}
	imgs, err := release.FromBinaries(bin)
	if err != nil {
		t.Fatal(err)
	}
	pub, err := release.Run(ctx, o, imgs)
	if err != nil {
		t.Fatal(err)
	}
	if want := "oci://" + reg.Host + "/ptah/charts/ptah-operator"; pub.Chart != want {
		t.Errorf("chart published as %s, want %s", pub.Chart, want)
	}

	client, err := registry.NewClient(registry.ClientOptPlainHTTP(), registry.ClientOptBasicAuth(reg.Username, reg.Password), registry.ClientOptWriter(io.Discard))
	if err != nil {
		t.Fatal(err)
	}
	pulled, err := client.Pull(strings.TrimPrefix(pub.Chart, "oci://") + ":1.4.2")
	if err != nil {
		t.Fatalf("pull %s:1.4.2: %v", pub.Chart, err)
	}
	if pulled.Manifest.Digest != pub.ChartDigest {
		t.Errorf("pulled chart manifest %s, published %s", pulled.Manifest.Digest, pub.ChartDigest)
	}
	c, err := loader.LoadArchive(strings.NewReader(string(pulled.Chart.Data)))
	if err != nil {
		t.Fatal(err)
	}
	if c.Metadata.Version != "1.4.2" || c.Metadata.AppVersion != "1.4.2" {
		t.Errorf("chart version %s, appVersion %s; want 1.4.2 both", c.Metadata.Version, c.Metadata.AppVersion)
	}
	in := action.NewInstall(&action.Configuration{})
	in.ReleaseName, in.Namespace, in.DryRun, in.ClientOnly = "ptah", "ptah-system", true, true
	in.KubeVersion = &chartutil.KubeVersion{Version: "v1.37.2", Major: "1", Minor: "37"}
	rel, err := in.RunWithContext(ctx, c, map[string]any{})
	if err != nil {
		t.Fatalf("render the pulled chart: %v", err)
	}
	manager, executor := reg.Host+"/ptah/ptah-manager:1.4.2", reg.Host+"/ptah/ptah-executor:1.4.2"
	for _, want := range []string{"image: " + manager, "--executor-image=" + executor} {
		if !strings.Contains(rel.Manifest, want) {
			t.Errorf("the pulled chart, rendered with its defaults, has no %q", want)
		}
	}
	for ref, published := range map[string]string{manager: pub.Manager, executor: pub.Executor} {
		if got := resolve(t, reg, ref); ref+"@"+got != published {
			t.Errorf("%s resolves to %s; the release reported %s", ref, got, published)
		}
	}

	if _, err := release.Run(ctx, o, imgs); !errors.Is(err, release.ErrReleased) {
		t.Errorf("publishing 1.4.2 again: %v, want a refusal naming what exists", err)
	}
	if got := resolve(t, reg, manager); manager+"@"+got != pub.Manager {
		t.Errorf("a refused second release changed %s to %s", manager, got)
	}
	// Half a release already there (an earlier run pushed the chart only)
	// is a release: refused before either image is pushed.
	partial := o
	partial.Version = "1.5.0"
	if _, err := release.Run(ctx, partial, release.Images{Manager: imgs.Executor, Executor: imgs.Executor}); err != nil {
		t.Fatal(err)
	}
	partial.Registry = reg.Host + "/other"
	if err := copyChart(reg, reg.Host+"/ptah/charts/ptah-operator:1.5.0", reg.Host+"/other/charts/ptah-operator:1.5.0"); err != nil {
		t.Fatal(err)
	}
	if _, err := release.Run(ctx, partial, imgs); !errors.Is(err, release.ErrReleased) {
		t.Errorf("releasing 1.5.0 where only its chart is: %v, want ErrReleased", err)
	}
	if got := resolve(t, reg, reg.Host+"/other/ptah-manager:1.5.0"); got != "" {
		t.Errorf("a refused release pushed its manager image (%s)", got)
	}
	for _, v := range []string{"v1.4.3", "1.4", "latest", "1.4.3+build"} {
		bad := o
		bad.Version = v
		if _, err := release.Run(ctx, bad, imgs); err == nil {
			t.Errorf("version %q was released", v)
		}
	}
}

// resolve is the digest ref (host/path:tag) names in reg, or "" when it
// is not there.
func resolve(t *testing.T, reg *testenv.Registry, ref string) string {
	t.Helper()
	at := strings.LastIndex(ref, ":")
	repo, err := remote.NewRepository(ref[:at])
	if err != nil {
		t.Fatal(err)
	}
	repo.PlainHTTP = true
	repo.Client = &auth.Client{Credential: auth.StaticCredential(reg.Host, auth.Credential{Username: reg.Username, Password: reg.Password})}
	d, err := repo.Resolve(context.Background(), ref[at+1:])
	if err != nil {
		return ""
	}
	return d.Digest.String()
}

// copyChart copies the chart manifest src names, with its blobs, to dst in
// reg, as a release run that stopped after the chart would leave it.
func copyChart(reg *testenv.Registry, src, dst string) error {
	repo := func(ref string) (*remote.Repository, string, error) {
		at := strings.LastIndex(ref, ":")
		r, err := remote.NewRepository(ref[:at])
		if err != nil {
			return nil, "", err
		}
		r.PlainHTTP = true
		r.Client = &auth.Client{Credential: auth.StaticCredential(reg.Host, auth.Credential{Username: reg.Username, Password: reg.Password})}
		return r, ref[at+1:], nil
	}
	from, tag, err := repo(src)
	if err != nil {
		return err
	}
	to, dstTag, err := repo(dst)
	if err != nil {
		return err
	}
	_, err = oras.Copy(context.Background(), from, tag, to, dstTag, oras.DefaultCopyOptions)
	return err
}
