// Package image assembles container images from static binaries with
// go-containerregistry: no Dockerfile, no base image, no registry. The same
// binaries give the same image digest, so a recording can name the executor
// it ran by digest and a reader can rebuild it.
package image

import (
	"archive/tar"
	"bytes"
	"fmt"
	"io"
	"os"
	"path"
	"sort"
	"time"

	"github.com/google/go-containerregistry/pkg/name"
	v1 "github.com/google/go-containerregistry/pkg/v1"
	"github.com/google/go-containerregistry/pkg/v1/empty"
	"github.com/google/go-containerregistry/pkg/v1/mutate"
	"github.com/google/go-containerregistry/pkg/v1/tarball"
)

// NonRootUID is the user every image runs as unless a Spec says otherwise.
const NonRootUID = 65532

// File is one file placed in the image: read from Source on the host, or Data.
type File struct {
	Path   string // absolute path in the image
	Source string
	Data   []byte
	Mode   int64
}

// Spec describes one image.
type Spec struct {
	Ref        string // e.g. "ptah-executor:dev"
	Files      []File
	Dirs       []string // empty directories, e.g. "/tmp"
	Entrypoint []string
	Env        []string
	// User defaults to NonRootUID.
	User string
}

// epoch fixes every timestamp, so the digest depends on content only.
var epoch = time.Unix(0, 0).UTC()

// Build assembles the image of spec as a single layer over an empty base.
func Build(spec Spec) (v1.Image, error) {
	user := spec.User
	if user == "" {
		user = fmt.Sprint(NonRootUID)
	}
	layerTar, err := spec.layer(user)
	if err != nil {
		return nil, fmt.Errorf("image %s: %w", spec.Ref, err)
	}
	layer, err := tarball.LayerFromOpener(func() (io.ReadCloser, error) {
		return io.NopCloser(bytes.NewReader(layerTar)), nil
	})
	if err != nil {
		return nil, fmt.Errorf("image %s: layer: %w", spec.Ref, err)
	}
	img, err := mutate.AppendLayers(empty.Image, layer)
	if err != nil {
		return nil, fmt.Errorf("image %s: %w", spec.Ref, err)
	}
	cf, err := img.ConfigFile()
	if err != nil {
		return nil, err
	}
	cf = cf.DeepCopy()
	cf.Architecture, cf.OS = "amd64", "linux"
	cf.Created = v1.Time{Time: epoch}
	cf.Config.Entrypoint = spec.Entrypoint
	cf.Config.Env = append([]string{"PATH=/usr/local/bin:/usr/bin:/bin"}, spec.Env...)
	cf.Config.User = user
	cf.Config.WorkingDir = "/"
	return mutate.ConfigFile(img, cf)
}

// layer writes the files, the directories they need, /tmp, and an
// /etc/passwd naming the non-root user, in a fixed order.
func (s Spec) layer(user string) ([]byte, error) {
	files := append([]File(nil), s.Files...)
	files = append(files,
		File{Path: "/etc/passwd", Mode: 0o644, Data: []byte(fmt.Sprintf("root:x:0:0:root:/root:/sbin/nologin\nnonroot:x:%d:%d:nonroot:/home/nonroot:/sbin/nologin\n", NonRootUID, NonRootUID))},
		File{Path: "/etc/group", Mode: 0o644, Data: []byte(fmt.Sprintf("root:x:0:\nnonroot:x:%d:\n", NonRootUID))},
	)
	dirs := map[string]int64{"/tmp": 0o1777, "/home/nonroot": 0o755}
	for _, d := range s.Dirs {
		dirs[path.Clean(d)] = 0o755
	}
	for _, f := range files {
		for d := path.Dir(f.Path); d != "/"; d = path.Dir(d) {
			if _, ok := dirs[d]; !ok {
				dirs[d] = 0o755
			}
		}
	}
	sort.Slice(files, func(i, j int) bool { return files[i].Path < files[j].Path })
	dirNames := make([]string, 0, len(dirs))
	for d := range dirs {
		dirNames = append(dirNames, d)
	}
	sort.Strings(dirNames)

	var buf bytes.Buffer
	tw := tar.NewWriter(&buf)
	for _, d := range dirNames {
		uid := 0
		if d == "/home/nonroot" {
			uid = NonRootUID
		}
		if err := tw.WriteHeader(&tar.Header{Typeflag: tar.TypeDir, Name: d[1:] + "/", Mode: dirs[d], ModTime: epoch, Uid: uid, Gid: uid}); err != nil {
			return nil, err
		}
	}
	for _, f := range files {
		data := f.Data
		if f.Source != "" {
			var err error
			if data, err = os.ReadFile(f.Source); err != nil {
				return nil, fmt.Errorf("read %s for %s: %w", f.Source, f.Path, err)
			}
		}
		mode := f.Mode
		if mode == 0 {
			mode = 0o755
		}
		if err := tw.WriteHeader(&tar.Header{Typeflag: tar.TypeReg, Name: f.Path[1:], Mode: mode, Size: int64(len(data)), ModTime: epoch}); err != nil {
			return nil, err
		}
		if _, err := tw.Write(data); err != nil {
			return nil, err
		}
	}
	if err := tw.Close(); err != nil {
		return nil, err
	}
	return buf.Bytes(), nil
}

// WriteTarball writes img under ref as a `docker save` style tarball, the
// form `docker load` and kind's image-archive loader read.
func WriteTarball(file, ref string, img v1.Image) error {
	tag, err := name.NewTag(ref)
	if err != nil {
		return fmt.Errorf("image reference %q: %w", ref, err)
	}
	tmp := file + ".tmp"
	if err := tarball.WriteToFile(tmp, tag, img); err != nil {
		os.Remove(tmp)
		return fmt.Errorf("write %s: %w", file, err)
	}
	return os.Rename(tmp, file)
}
