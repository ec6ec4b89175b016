package lab

import (
	"context"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"

	"ptah.run/operator/operator/image"
	"ptah.run/operator/recorder/opsource"
)

// buildFile records what the operator images were built from; Up copies it
// into the environment, so a recording names the images it really ran.
func (l *Lab) buildFile() string { return filepath.Join(l.OperatorImagesDir(), "build.env") }

// Images assembles the manager and executor images from the static binaries
// in binDir (as `make images` builds them) into OperatorImagesDir, and
// records the commit, the ptah version and the executor digest.
func (l *Lab) Images(ctx context.Context, binDir string) error {
	built, err := image.BuildOperator(binDir, l.OperatorImagesDir())
	if err != nil {
		return err
	}
	out, err := exec.CommandContext(ctx, filepath.Join(binDir, image.PtahBinary), "version").Output()
	if err != nil {
		return fmt.Errorf("%s version: %w (rebuild the binaries: make images)", filepath.Join(binDir, image.PtahBinary), err)
	}
	src, err := opsource.Read(l.Root)
	if err != nil {
		return err
	}
	e := &environment{}
	e.set("PTAH_LAB_OPERATOR_COMMIT", l.commit(ctx))
	// What the binaries were built from, file by file: the recorder refuses
	// to record on images built from another operator source.
	e.set("PTAH_LAB_OPERATOR_SOURCE", src.Digest)
	e.set("PTAH_LAB_PTAH_VERSION", strings.TrimSpace(string(out)))
	for _, b := range built {
		fmt.Fprintf(l.Stdout, "%s %s -> %s\n", b.Ref, b.Digest, b.File)
		switch b.Ref {
		case image.ExecutorRef:
			e.set("PTAH_LAB_EXECUTOR_DIGEST", b.Digest)
		case image.ManagerRef:
			e.set("PTAH_LAB_MANAGER_DIGEST", b.Digest)
		}
	}
	return os.WriteFile(l.buildFile(), e.bytes(), 0o644)
}

// imageBuild reads what Images recorded; absent when no images were built.
func (l *Lab) imageBuild() *environment {
	e, err := loadEnvironment(l.buildFile())
	if err != nil {
		return &environment{}
	}
	return e
}
