package chart_test

import (
	"bytes"
	"os"
	"path/filepath"
	"testing"

	"helm.sh/helm/v3/pkg/chart/loader"
	"helm.sh/helm/v3/pkg/chartutil"
	"helm.sh/helm/v3/pkg/registry"

	"ptah.run/operator/internal/testenv"
	"ptah.run/operator/operator/chart"
)

// TestChartIsAnOCIArtifact packages the chart as `helm package` does, pushes
// it to a real OCI registry with credentials, pulls it back, and finds the
// same chart.
func TestChartIsAnOCIArtifact(t *testing.T) {
	t.Parallel()
	c, err := chart.Load()
	if err != nil {
		t.Fatal(err)
	}
	dir := t.TempDir()
	tgz, err := chartutil.Save(c, dir)
	if err != nil {
		t.Fatalf("package the chart: %v", err)
	}
	data, err := os.ReadFile(tgz)
	if err != nil {
		t.Fatal(err)
	}
	if filepath.Base(tgz) != c.Metadata.Name+"-"+c.Metadata.Version+".tgz" {
		t.Errorf("packaged as %s", filepath.Base(tgz))
	}
	reg := testenv.StartRegistry(t)
	client, err := registry.NewClient(registry.ClientOptPlainHTTP(), registry.ClientOptCredentialsFile(filepath.Join(dir, "config.json")))
	if err != nil {
		t.Fatal(err)
	}
	if err := client.Login(reg.Host, registry.LoginOptBasicAuth(reg.Username, reg.Password), registry.LoginOptInsecure(true)); err != nil {
		t.Fatalf("log in to the registry: %v", err)
	}
	ref := reg.Host + "/charts/" + c.Metadata.Name + ":" + c.Metadata.Version
	pushed, err := client.Push(data, ref)
	if err != nil {
		t.Fatalf("push %s: %v", ref, err)
	}
	pulled, err := client.Pull(ref)
	if err != nil {
		t.Fatalf("pull %s: %v", ref, err)
	}
	if pulled.Manifest.Digest != pushed.Manifest.Digest || !bytes.Equal(pulled.Chart.Data, data) {
		t.Errorf("pulled manifest %s (%d bytes of chart), pushed %s (%d bytes)", pulled.Manifest.Digest, len(pulled.Chart.Data), pushed.Manifest.Digest, len(data))
	}
	back, err := loader.LoadArchive(bytes.NewReader(pulled.Chart.Data))
	if err != nil {
		t.Fatal(err)
	}
	if back.Metadata.Name != "ptah-operator" || len(back.Templates) != len(c.Templates) || len(back.Files) != len(c.Files) {
		t.Errorf("pulled chart %s with %d templates and %d files, want ptah-operator with %d and %d",
			back.Metadata.Name, len(back.Templates), len(back.Files), len(c.Templates), len(c.Files))
	}
}
