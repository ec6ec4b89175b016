package image

import (
	"fmt"
	"os"
	"path/filepath"
)

// The operator's images and the binaries they are assembled from.
const (
	ExecutorRef = "ptah-executor:dev"
	ManagerRef  = "ptah-manager:dev"
	// Binaries expected in the build directory, as `CGO_ENABLED=0 go build`
	// of cmd/ptah, cmd/ptah-runner and cmd/manager writes them.
	PtahBinary    = "ptah"
	RunnerBinary  = "ptah-runner"
	ManagerBinary = "manager"
)

// Executor is the image every operation Job runs: the runner as entrypoint,
// ptah next to it on PATH for the runner to spawn.
func Executor(ptahBin, runnerBin string) Spec {
	return Spec{
		Ref: ExecutorRef,
		Files: []File{
			{Path: "/usr/local/bin/ptah", Source: ptahBin},
			{Path: "/usr/local/bin/ptah-runner", Source: runnerBin},
		},
		Entrypoint: []string{"/usr/local/bin/ptah-runner"},
	}
}

// Manager is the operator's controller manager.
func Manager(managerBin string) Spec {
	return Spec{
		Ref:        ManagerRef,
		Files:      []File{{Path: "/manager", Source: managerBin}},
		Entrypoint: []string{"/manager"},
	}
}

// Built is one image written as a tarball.
type Built struct {
	Ref, File, Digest string
}

// BuildOperator assembles the manager and executor images from the static
// binaries in binDir and writes them to outDir as manager.tar and
// executor.tar, the docker-save tarballs the lab loads into its cluster.
func BuildOperator(binDir, outDir string) ([]Built, error) {
	if err := os.MkdirAll(outDir, 0o755); err != nil {
		return nil, err
	}
	bin := func(name string) string { return filepath.Join(binDir, name) }
	var built []Built
	for file, spec := range map[string]Spec{
		"executor.tar": Executor(bin(PtahBinary), bin(RunnerBinary)),
		"manager.tar":  Manager(bin(ManagerBinary)),
	} {
		img, err := Build(spec)
		if err != nil {
			return nil, fmt.Errorf("%w (build the binaries into %s first: CGO_ENABLED=0 go build -o %s ./cmd/...)", err, binDir, binDir)
		}
		digest, err := img.Digest()
		if err != nil {
			return nil, fmt.Errorf("image %s: %w", spec.Ref, err)
		}
		path := filepath.Join(outDir, file)
		if err := WriteTarball(path, spec.Ref, img); err != nil {
			return nil, err
		}
		built = append(built, Built{Ref: spec.Ref, File: path, Digest: digest.String()})
	}
	if built[0].Ref != ExecutorRef {
		built[0], built[1] = built[1], built[0]
	}
	return built, nil
}
