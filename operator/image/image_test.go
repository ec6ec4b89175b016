package image

import (
	"archive/tar"
	"io"
	"os"
	"path/filepath"
	"testing"

	"github.com/google/go-containerregistry/pkg/v1/tarball"
)

func TestBuildIsReproducibleAndCarriesTheFiles(t *testing.T) {
	dir := t.TempDir()
	bin := filepath.Join(dir, "ptah")
	if err := os.WriteFile(bin, []byte("#!binary v1"), 0o755); err != nil {
		t.Fatal(err)
	}
	spec := Spec{Ref: "ptah-executor:dev", Files: []File{{Path: "/usr/local/bin/ptah", Source: bin}}, Entrypoint: []string{"/usr/local/bin/ptah"}}
	a, err := Build(spec)
	if err != nil {
		t.Fatal(err)
	}
	b, err := Build(spec)
	if err != nil {
		t.Fatal(err)
	}
	da, _ := a.Digest()
	db, _ := b.Digest()
	if da != db {
		t.Fatalf("same inputs gave %s and %s", da, db)
	}
	if err := os.WriteFile(bin, []byte("#!binary v2"), 0o755); err != nil {
		t.Fatal(err)
	}
	c, err := Build(spec)
	if err != nil {
		t.Fatal(err)
	}
	if dc, _ := c.Digest(); dc == da {
		t.Fatalf("a changed binary kept digest %s", da)
	}

	out := filepath.Join(dir, "executor.tar")
	if err := WriteTarball(out, spec.Ref, c); err != nil {
		t.Fatal(err)
	}
	loaded, err := tarball.ImageFromPath(out, nil)
	if err != nil {
		t.Fatalf("read back the tarball: %v", err)
	}
	cf, err := loaded.ConfigFile()
	if err != nil {
		t.Fatal(err)
	}
	if cf.Config.User != "65532" || cf.OS != "linux" || cf.Config.Entrypoint[0] != "/usr/local/bin/ptah" {
		t.Fatalf("config: user %q os %q entrypoint %v", cf.Config.User, cf.OS, cf.Config.Entrypoint)
	}
	layers, _ := loaded.Layers()
	rc, err := layers[0].Uncompressed()
	if err != nil {
		t.Fatal(err)
	}
	defer rc.Close()
	found := map[string]string{}
	tr := tar.NewReader(rc)
	for {
		h, err := tr.Next()
		if err == io.EOF {
			break
		}
		if err != nil {
			t.Fatal(err)
		}
		data, _ := io.ReadAll(tr)
		found[h.Name] = string(data)
	}
	if found["usr/local/bin/ptah"] != "#!binary v2" {
		t.Errorf("binary in image: %q", found["usr/local/bin/ptah"])
	}
	if _, ok := found["tmp/"]; !ok {
		t.Error("no /tmp in the image")
	}
	if found["etc/passwd"] == "" {
		t.Error("no /etc/passwd in the image")
	}
}
