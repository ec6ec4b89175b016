package image

import (
	"archive/tar"
	"io"
	"os"
	"path/filepath"
	"testing"

	"github.com/google/go-containerregistry/pkg/name"
	"github.com/google/go-containerregistry/pkg/v1/tarball"
)

func TestBuildOperatorWritesBothImagesReproducibly(t *testing.T) {
	// Any real executable stands in for each binary: the images only place
	// files, so the test binary itself will do.
	self, err := os.Executable()
	if err != nil {
		t.Fatal(err)
	}
	bin := t.TempDir()
	for _, n := range []string{PtahBinary, RunnerBinary, ManagerBinary} {
		if err := os.Symlink(self, filepath.Join(bin, n)); err != nil {
			t.Fatal(err)
		}
	}
	first, err := BuildOperator(bin, t.TempDir())
	if err != nil {
		t.Fatal(err)
	}
	second, err := BuildOperator(bin, t.TempDir())
	if err != nil {
		t.Fatal(err)
	}
	if len(first) != 2 || first[0].Ref != ExecutorRef || first[1].Ref != ManagerRef {
		t.Fatalf("built %+v, want the executor then the manager", first)
	}
	for i := range first {
		if first[i].Digest != second[i].Digest {
			t.Errorf("%s: digests %s and %s from the same binaries", first[i].Ref, first[i].Digest, second[i].Digest)
		}
	}
	want := map[string]struct {
		entrypoint string
		files      []string
	}{
		ExecutorRef: {"/usr/local/bin/ptah-runner", []string{"usr/local/bin/ptah", "usr/local/bin/ptah-runner"}},
		ManagerRef:  {"/manager", []string{"manager"}},
	}
	for _, b := range first {
		tag, _ := name.NewTag(b.Ref)
		img, err := tarball.ImageFromPath(b.File, &tag)
		if err != nil {
			t.Fatalf("%s: read %s back under its tag: %v", b.Ref, b.File, err)
		}
		if d, _ := img.Digest(); d.String() != b.Digest {
			t.Errorf("%s: tarball holds %s, reported %s", b.Ref, d, b.Digest)
		}
		cf, _ := img.ConfigFile()
		if cf.Config.Entrypoint[0] != want[b.Ref].entrypoint || cf.Config.User != "65532" {
			t.Errorf("%s: entrypoint %v user %q", b.Ref, cf.Config.Entrypoint, cf.Config.User)
		}
		layers, _ := img.Layers()
		rc, _ := layers[0].Uncompressed()
		sizes := map[string]int64{}
		tr := tar.NewReader(rc)
		for h, err := tr.Next(); err != io.EOF; h, err = tr.Next() {
			if err != nil {
				t.Fatal(err)
			}
			sizes[h.Name] = h.Size
		}
		rc.Close()
		st, _ := os.Stat(self)
		for _, f := range want[b.Ref].files {
			if sizes[f] != st.Size() {
				t.Errorf("%s: %s is %d bytes, want the binary's %d", b.Ref, f, sizes[f], st.Size())
			}
		}
	}
}
