package images

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"fmt"
	"io"
	"io/fs"
	"os"
	"path/filepath"
	"sort"
	"strings"
	"time"

	"ptah.run/operator/demo/kubebuild"
	"ptah.run/operator/demo/lab/internal/docker"
	"ptah.run/operator/demo/lab/internal/run"
)

// Builder provides images, building what no registry can give.
type Builder struct {
	R *run.Runner
	D docker.Docker
	// Cache holds root filesystems, binaries and build work across runs.
	Cache string
	// RepoRoot is the repository, for the lab's own small programs.
	RepoRoot          string
	KubernetesVersion string
	KindVersion       string
	// PullTimeout bounds each attempt to pull an image.
	PullTimeout time.Duration
}

// Provenance says where an image came from, for the record.
type Provenance struct {
	Role string // "node", "registry", "postgres", "psql"
	Ref  string
	// How: "present" (found locally), "pulled", "built", or "cached" (built earlier, same inputs).
	How string
}

func (p Provenance) String() string { return fmt.Sprintf("%s=%s (%s)", p.Role, p.Ref, p.How) }

func (b *Builder) kube() *kubebuild.Builder {
	return &kubebuild.Builder{KubernetesVersion: b.KubernetesVersion, WorkDir: filepath.Join(b.Cache, "build"), Log: logWriter{b.R}}
}

// logWriter turns kubebuild's lines into progress lines.
type logWriter struct{ r *run.Runner }

func (w logWriter) Write(p []byte) (int, error) {
	for _, l := range strings.Split(strings.TrimRight(string(p), "\n"), "\n") {
		w.r.Printf("  %s", l)
	}
	return len(p), nil
}

// presentOrPulled returns the provenance of ref when it is local or pullable.
func (b *Builder) presentOrPulled(ctx context.Context, role, ref string) (Provenance, bool) {
	if b.D.ImageID(ctx, ref) != "" {
		return Provenance{role, ref, "present"}, true
	}
	done := b.R.Step(fmt.Sprintf("%s: pull %s", role, ref))
	if err := b.D.Pull(ctx, ref, b.PullTimeout); err != nil {
		done("no registry answered; building offline")
		return Provenance{}, false
	}
	done("pulled")
	return Provenance{role, ref, "pulled"}, true
}

// contentKey hashes files and directory trees (names, modes, contents) and extra strings.
func contentKey(paths []string, extra ...string) (string, error) {
	h := sha256.New()
	for _, e := range extra {
		fmt.Fprintf(h, "%s\n", e)
	}
	for _, root := range paths {
		var files []string
		err := filepath.WalkDir(root, func(p string, d fs.DirEntry, err error) error {
			if err != nil {
				return err
			}
			if !d.IsDir() {
				files = append(files, p)
			}
			return nil
		})
		if err != nil {
			return "", err
		}
		sort.Strings(files)
		for _, p := range files {
			fi, err := os.Lstat(p)
			if err != nil {
				return "", err
			}
			rel, _ := filepath.Rel(root, p)
			fmt.Fprintf(h, "%s %s %o\n", filepath.Base(root), rel, fi.Mode())
			if fi.Mode().IsRegular() {
				f, err := os.Open(p)
				if err != nil {
					return "", err
				}
				_, err = io.Copy(h, f)
				f.Close()
				if err != nil {
					return "", err
				}
			}
		}
	}
	return hex.EncodeToString(h.Sum(nil))[:12], nil
}

// goBuild builds a package of this repository as a static binary.
func (b *Builder) goBuild(ctx context.Context, out, pkg string) error {
	if _, err := os.Stat(out); err == nil {
		return nil
	}
	_, err := b.R.Run(ctx, run.Cmd{Name: "go", Args: []string{"build", "-trimpath", "-ldflags=-s -w", "-o", out, pkg}, Dir: b.RepoRoot, Env: []string{"CGO_ENABLED=0"}})
	return err
}
