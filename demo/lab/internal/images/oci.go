package images

import (
	"archive/tar"
	"fmt"
	"io"
	"io/fs"
	"os"
	"path/filepath"

	"github.com/google/go-containerregistry/pkg/name"
	v1 "github.com/google/go-containerregistry/pkg/v1"
	"github.com/google/go-containerregistry/pkg/v1/empty"
	"github.com/google/go-containerregistry/pkg/v1/mutate"
	"github.com/google/go-containerregistry/pkg/v1/tarball"
)

// dirImage is an image of one layer holding a directory tree, the way the lab
// assembles images of static binaries without a Dockerfile.
type dirImage struct {
	Ref        string
	Dir        string
	Entrypoint []string
	Cmd        []string
	Env        []string
	User       string
}

const defaultPath = "PATH=/usr/local/bin:/usr/local/sbin:/usr/bin:/usr/sbin:/bin:/sbin"

func (d dirImage) image(tmp string) (v1.Image, error) {
	layerTar := filepath.Join(tmp, filepath.Base(d.Dir)+".layer.tar")
	if err := tarDir(d.Dir, layerTar); err != nil {
		return nil, fmt.Errorf("image %s: %w", d.Ref, err)
	}
	layer, err := tarball.LayerFromFile(layerTar)
	if err != nil {
		return nil, fmt.Errorf("image %s: %w", d.Ref, err)
	}
	img, err := mutate.AppendLayers(empty.Image, layer)
	if err != nil {
		return nil, err
	}
	cf, err := img.ConfigFile()
	if err != nil {
		return nil, err
	}
	cf = cf.DeepCopy()
	cf.OS, cf.Architecture = "linux", "amd64"
	env := d.Env
	if len(env) == 0 {
		env = []string{defaultPath}
	}
	cf.Config = v1.Config{Entrypoint: d.Entrypoint, Cmd: d.Cmd, Env: env, User: d.User}
	return mutate.ConfigFile(img, cf)
}

// writeImages writes the images as one docker-save tarball, which both
// `docker load` and containerd's `ctr images import` read.
func writeImages(path, tmp string, imgs ...dirImage) error {
	refs := map[name.Reference]v1.Image{}
	for _, d := range imgs {
		ref, err := name.NewTag(d.Ref)
		if err != nil {
			return fmt.Errorf("image reference %s: %w", d.Ref, err)
		}
		img, err := d.image(tmp)
		if err != nil {
			return err
		}
		refs[ref] = img
	}
	if err := tarball.MultiRefWriteToFile(path+".tmp", refs); err != nil {
		return fmt.Errorf("write %s: %w", path, err)
	}
	return os.Rename(path+".tmp", path)
}

// tarDir writes dir's tree as a tar owned by root, keeping symlinks and modes.
func tarDir(dir, out string) error {
	f, err := os.Create(out)
	if err != nil {
		return err
	}
	defer f.Close()
	tw := tar.NewWriter(f)
	err = filepath.WalkDir(dir, func(path string, e fs.DirEntry, err error) error {
		if err != nil || path == dir {
			return err
		}
		fi, err := os.Lstat(path)
		if err != nil {
			return err
		}
		link := ""
		if fi.Mode()&fs.ModeSymlink != 0 {
			if link, err = os.Readlink(path); err != nil {
				return err
			}
		} else if !fi.Mode().IsRegular() && !fi.IsDir() {
			return nil
		}
		h, err := tar.FileInfoHeader(fi, link)
		if err != nil {
			return err
		}
		rel, _ := filepath.Rel(dir, path)
		h.Name = filepath.ToSlash(rel)
		if fi.IsDir() {
			h.Name += "/"
		}
		h.Uid, h.Gid, h.Uname, h.Gname = 0, 0, "root", "root"
		if err := tw.WriteHeader(h); err != nil {
			return err
		}
		if fi.Mode().IsRegular() {
			src, err := os.Open(path)
			if err != nil {
				return err
			}
			defer src.Close()
			if _, err := io.Copy(tw, src); err != nil {
				return err
			}
		}
		return nil
	})
	if err != nil {
		return err
	}
	if err := tw.Close(); err != nil {
		return err
	}
	return f.Close()
}
