package images

import (
	"archive/tar"
	"io"
	"os"
	"path/filepath"
	"testing"

	"github.com/google/go-containerregistry/pkg/name"
	"github.com/google/go-containerregistry/pkg/v1/tarball"
)

func TestContentKeyFollowsContent(t *testing.T) {
	dir := t.TempDir()
	file := filepath.Join(dir, "kubelet")
	if err := os.WriteFile(file, []byte("binary one"), 0o755); err != nil {
		t.Fatal(err)
	}
	first, err := contentKey([]string{dir}, "recipe")
	if err != nil {
		t.Fatal(err)
	}
	again, _ := contentKey([]string{dir}, "recipe")
	if first != again {
		t.Errorf("same content, keys %s and %s", first, again)
	}
	if err := os.WriteFile(file, []byte("binary two"), 0o755); err != nil {
		t.Fatal(err)
	}
	changed, _ := contentKey([]string{dir}, "recipe")
	otherRecipe, _ := contentKey([]string{dir}, "recipe 2")
	if changed == first || otherRecipe == changed {
		t.Errorf("keys did not follow the content or the recipe: %s %s %s", first, changed, otherRecipe)
	}
}

func TestRootfsKeyIgnoresPackageOrder(t *testing.T) {
	a := Rootfs{Name: "x", Packages: []string{"jq", "curl"}}.Key()
	b := Rootfs{Name: "x", Packages: []string{"curl", "jq"}}.Key()
	c := Rootfs{Name: "x", Packages: []string{"curl"}}.Key()
	if a != b || a == c {
		t.Errorf("keys %s %s %s: want order ignored and contents counted", a, b, c)
	}
}

// An image assembled from a directory is a docker-save tarball whose layer
// is owned by root, keeps symlinks, and whose config carries the entrypoint.
func TestDirImageIsALoadableTarball(t *testing.T) {
	dir := filepath.Join(t.TempDir(), "pause")
	if err := os.MkdirAll(filepath.Join(dir, "bin"), 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(dir, "bin", "pause"), []byte("#!/bin/sh\n"), 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.Symlink("bin/pause", filepath.Join(dir, "pause")); err != nil {
		t.Fatal(err)
	}
	out := filepath.Join(t.TempDir(), "images.tar")
	ref := "registry.k8s.io/pause:3.10"
	if err := writeImages(out, t.TempDir(), dirImage{Ref: ref, Dir: dir, Entrypoint: []string{"/pause"}}); err != nil {
		t.Fatal(err)
	}
	tag, _ := name.NewTag(ref)
	img, err := tarball.ImageFromPath(out, &tag)
	if err != nil {
		t.Fatalf("read back %s: %v", out, err)
	}
	cf, err := img.ConfigFile()
	if err != nil {
		t.Fatal(err)
	}
	if len(cf.Config.Entrypoint) != 1 || cf.Config.Entrypoint[0] != "/pause" || cf.OS != "linux" || cf.Architecture != "amd64" {
		t.Errorf("config: entrypoint %v, platform %s/%s", cf.Config.Entrypoint, cf.OS, cf.Architecture)
	}
	layers, err := img.Layers()
	if err != nil || len(layers) != 1 {
		t.Fatalf("layers: %d, %v", len(layers), err)
	}
	rc, err := layers[0].Uncompressed()
	if err != nil {
		t.Fatal(err)
	}
	defer rc.Close()
	seen := map[string]*tar.Header{}
	tr := tar.NewReader(rc)
	for {
		h, err := tr.Next()
		if err == io.EOF {
			break
		}
		if err != nil {
			t.Fatal(err)
		}
		seen[h.Name] = h
		if h.Uid != 0 || h.Gid != 0 {
			t.Errorf("%s owned by %d:%d, want root", h.Name, h.Uid, h.Gid)
		}
	}
	if h := seen["pause"]; h == nil || h.Typeflag != tar.TypeSymlink || h.Linkname != "bin/pause" {
		t.Errorf("symlink pause not kept: %+v", h)
	}
	if h := seen["bin/pause"]; h == nil || h.Mode&0o111 == 0 {
		t.Errorf("bin/pause missing or not executable: %+v", h)
	}
}

func TestSandboxImageIsReadFromContainerdConfig(t *testing.T) {
	cfg := filepath.Join(t.TempDir(), "config.toml")
	if err := os.WriteFile(cfg, []byte("[plugins.\"io.containerd.grpc.v1.cri\"]\n  sandbox_image = \"registry.k8s.io/pause:3.10\"\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	got, err := sandboxImage(cfg)
	if err != nil || got != "registry.k8s.io/pause:3.10" {
		t.Errorf("sandbox image %q, %v", got, err)
	}
	if err := os.WriteFile(cfg, []byte("version = 2\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	if _, err := sandboxImage(cfg); err == nil {
		t.Error("a config without sandbox_image was accepted")
	}
}
