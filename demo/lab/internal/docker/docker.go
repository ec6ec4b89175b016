// Package docker is the lab's container runtime: the few docker CLI calls it
// needs, each through the run package. kind drives the same daemon for the
// cluster; this package handles the lab's own containers and images.
package docker

import (
	"context"
	"fmt"
	"io"
	"os"
	"strings"
	"time"

	"ptah.run/operator/demo/lab/internal/run"
)

// LabelRun marks every container the lab creates with its run id.
const LabelRun = "run.ptah.lab/id"

// Docker runs docker commands.
type Docker struct{ R *run.Runner }

// ImageID returns the image's id, or "" when it is not present locally.
func (d Docker) ImageID(ctx context.Context, ref string) string {
	id, err := d.R.Output(ctx, "docker", "image", "inspect", "--format", "{{.Id}}", ref)
	if err != nil {
		return ""
	}
	return id
}

// Pull tries to pull ref within timeout; an error means no registry answered.
func (d Docker) Pull(ctx context.Context, ref string, timeout time.Duration) error {
	ctx, cancel := context.WithTimeout(ctx, timeout)
	defer cancel()
	_, err := d.R.Output(ctx, "docker", "pull", "-q", ref)
	return err
}

// Load loads an image tarball (docker save format).
func (d Docker) Load(ctx context.Context, path string) error {
	_, err := d.R.Output(ctx, "docker", "load", "-q", "-i", path)
	return err
}

// Import makes an image of a root filesystem tar stream.
func (d Docker) Import(ctx context.Context, rootfs io.Reader, tag string, changes ...string) error {
	args := []string{"import"}
	for _, c := range changes {
		args = append(args, "--change", c)
	}
	args = append(args, "-", tag)
	_, err := d.R.Run(ctx, run.Cmd{Name: "docker", Args: args, Stdin: rootfs})
	return err
}

// Build runs a classic (non-BuildKit) build of a Dockerfile text with no context.
func (d Docker) Build(ctx context.Context, tag, dockerfile string) error {
	dir, err := os.MkdirTemp("", "ptah-lab-build-")
	if err != nil {
		return err
	}
	defer os.RemoveAll(dir)
	if err := os.WriteFile(dir+"/Dockerfile", []byte(dockerfile), 0o644); err != nil {
		return err
	}
	_, err = d.R.Run(ctx, run.Cmd{Name: "docker", Args: []string{"build", "-q", "-t", tag, dir}, Env: []string{"DOCKER_BUILDKIT=0"}})
	return err
}

// Tag adds a tag to an image.
func (d Docker) Tag(ctx context.Context, src, dst string) error {
	_, err := d.R.Output(ctx, "docker", "tag", src, dst)
	return err
}

// RemoveImages removes images; absent ones are not an error.
func (d Docker) RemoveImages(ctx context.Context, refs ...string) {
	for _, ref := range refs {
		_, _ = d.R.Output(ctx, "docker", "image", "rm", ref)
	}
}

// Container is the state of one named container.
type Container struct {
	Exists, Running bool
}

// Inspect reports whether the container exists and runs.
func (d Docker) Inspect(ctx context.Context, name string) Container {
	out, err := d.R.Output(ctx, "docker", "container", "inspect", "--format", "{{.State.Running}}", name)
	if err != nil {
		return Container{}
	}
	return Container{Exists: true, Running: out == "true"}
}

// Run starts a detached container; args go between "run -d" and the image.
func (d Docker) Run(ctx context.Context, args ...string) error {
	_, err := d.R.Output(ctx, "docker", append([]string{"run", "-d"}, args...)...)
	return err
}

// Exec runs a command in a container with stdin, returning its output.
func (d Docker) Exec(ctx context.Context, container string, stdin io.Reader, args ...string) (string, error) {
	a := []string{"exec"}
	if stdin != nil {
		a = append(a, "-i")
	}
	a = append(a, container)
	return d.R.Run(ctx, run.Cmd{Name: "docker", Args: append(a, args...), Stdin: stdin})
}

// Remove force-removes containers with their anonymous volumes.
func (d Docker) Remove(ctx context.Context, names ...string) error {
	if len(names) == 0 {
		return nil
	}
	_, err := d.R.Output(ctx, "docker", append([]string{"rm", "-f", "-v"}, names...)...)
	return err
}

// ContainersWithLabel lists the names of containers (any state) carrying label=value.
func (d Docker) ContainersWithLabel(ctx context.Context, label, value string) ([]string, error) {
	out, err := d.R.Output(ctx, "docker", "ps", "-a", "--filter", "label="+label+"="+value, "--format", "{{.Names}}")
	if err != nil {
		return nil, err
	}
	return fields(out), nil
}

// IP is the container's address on network.
func (d Docker) IP(ctx context.Context, container, network string) (string, error) {
	out, err := d.R.Output(ctx, "docker", "container", "inspect", "--format",
		fmt.Sprintf(`{{with index .NetworkSettings.Networks %q}}{{.IPAddress}}{{end}}`, network), container)
	if err != nil {
		return "", err
	}
	if out == "" {
		return "", fmt.Errorf("container %s has no address on network %s", container, network)
	}
	return out, nil
}

// HostPort is the host port published for the container's port (e.g. "5000/tcp").
func (d Docker) HostPort(ctx context.Context, container, port string) (string, error) {
	out, err := d.R.Output(ctx, "docker", "port", container, port)
	if err != nil {
		return "", err
	}
	first := fields(out)[0]
	return first[strings.LastIndex(first, ":")+1:], nil
}

// NetworkExists reports whether a docker network of that name exists.
func (d Docker) NetworkExists(ctx context.Context, name string) bool {
	return d.R.Succeeds(ctx, "docker", "network", "inspect", name)
}

// NetworkContainers lists the containers attached to a network.
func (d Docker) NetworkContainers(ctx context.Context, name string) ([]string, error) {
	out, err := d.R.Output(ctx, "docker", "network", "inspect", "--format", "{{range .Containers}}{{.Name}} {{end}}", name)
	if err != nil {
		return nil, err
	}
	return fields(out), nil
}

// RemoveNetwork removes a network.
func (d Docker) RemoveNetwork(ctx context.Context, name string) error {
	_, err := d.R.Output(ctx, "docker", "network", "rm", name)
	return err
}

func fields(s string) []string {
	return strings.Fields(s)
}
