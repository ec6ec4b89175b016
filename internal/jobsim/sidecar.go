package jobsim

import (
	"bytes"
	"context"
	"fmt"
	"os"
	"os/exec"
	"os/user"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"time"

	corev1 "k8s.io/api/core/v1"

	"ptah.run/operator/operator/devdb"
)

// jobsim has no images and no mount namespaces. A container other than the
// runner runs its own command on this host, with PostgreSQL's server
// programs first on PATH (the dev database sidecar's image holds them), and
// as the system user postgres when jobsim is root, since PostgreSQL refuses
// to run as root. Each volume is a directory under the Pod's root, and the
// mount paths named in a container's environment and commands are rewritten
// to those directories.

// sidecars are the native sidecars of a Pod (init containers that keep
// running) as this host runs them.
type sidecars struct {
	procs []*sidecar
}

type sidecar struct {
	name   string
	cmd    *exec.Cmd
	log    *lockedBuffer
	exited chan struct{}
}

// isSidecar says whether c is a native sidecar.
func isSidecar(c corev1.Container) bool {
	return c.RestartPolicy != nil && *c.RestartPolicy == corev1.ContainerRestartPolicyAlways
}

// startSidecars starts the Pod's sidecars in order, each once its postStart
// hook has returned, as the kubelet does before the main container starts.
func (k *Kubelet) startSidecars(ctx context.Context, pod *corev1.Pod, root string) (*sidecars, error) {
	sc := &sidecars{}
	for _, c := range pod.Spec.InitContainers {
		if c.StartupProbe != nil {
			sc.stop()
			return nil, fmt.Errorf("jobsim does not run startup probes (sidecar %s names one); the manager gates its runner on a postStart hook", c.Name)
		}
		env, err := k.containerEnv(ctx, pod, c)
		if err != nil {
			sc.stop()
			return nil, err
		}
		p, err := startSidecar(c, root, env)
		if err != nil {
			sc.stop()
			return nil, err
		}
		sc.procs = append(sc.procs, p)
		if err := p.postStart(ctx, c, root); err != nil {
			sc.stop()
			return nil, err
		}
	}
	return sc, nil
}

func startSidecar(c corev1.Container, root string, env []string) (*sidecar, error) {
	argv := append(append([]string{}, c.Command...), c.Args...)
	if len(argv) == 0 {
		return nil, fmt.Errorf("jobsim runs a sidecar's own command; %s names none (its image's entrypoint is not known here)", c.Name)
	}
	bin, err := devdb.BinDir()
	if err != nil {
		return nil, err
	}
	p := &sidecar{name: c.Name, log: &lockedBuffer{}, exited: make(chan struct{})}
	p.cmd = exec.Command(argv[0], rewriteAll(argv[1:], c, root)...)
	// exec keeps the last of duplicate names: this PATH wins over the image's.
	p.cmd.Env = append(rewriteAll(env, c, root), "PATH="+bin+":/usr/local/bin:/usr/bin:/bin", "HOME=/nonexistent")
	p.cmd.Stdout, p.cmd.Stderr = p.log, p.log
	p.cmd.SysProcAttr = &syscall.SysProcAttr{Pdeathsig: syscall.SIGKILL}
	if os.Geteuid() == 0 {
		cred, err := postgresCredential()
		if err != nil {
			return nil, err
		}
		p.cmd.SysProcAttr.Credential = cred
	}
	if err := p.cmd.Start(); err != nil {
		return nil, fmt.Errorf("start sidecar %s: %w", c.Name, err)
	}
	go func() { _ = p.cmd.Wait(); close(p.exited) }()
	return p, nil
}

// postStart runs c's postStart exec hook to its end, as the kubelet does
// before it starts the Pod's next container; a hook that fails fails the
// start (the kubelet would restart the sidecar).
func (p *sidecar) postStart(ctx context.Context, c corev1.Container, root string) error {
	if c.Lifecycle == nil || c.Lifecycle.PostStart == nil || c.Lifecycle.PostStart.Exec == nil {
		return nil
	}
	bin, _ := devdb.BinDir()
	argv := rewriteAll(c.Lifecycle.PostStart.Exec.Command, c, root)
	cmd := exec.CommandContext(ctx, argv[0], argv[1:]...)
	cmd.Env = []string{"PATH=" + bin + ":/usr/bin:/bin"}
	out, err := cmd.CombinedOutput()
	if err != nil {
		return fmt.Errorf("sidecar %s: postStart hook failed (%v): %s; the sidecar logged: %s", p.name, err, strings.TrimSpace(string(out)), strings.TrimSpace(p.log.String()))
	}
	return nil
}

// stop ends the sidecars in reverse order with SIGTERM, as the kubelet does
// once the main container has exited, and returns what they logged.
func (sc *sidecars) stop() string {
	var logs strings.Builder
	for i := len(sc.procs) - 1; i >= 0; i-- {
		p := sc.procs[i]
		_ = p.cmd.Process.Signal(syscall.SIGTERM)
		select {
		case <-p.exited:
		case <-time.After(30 * time.Second):
			_ = p.cmd.Process.Kill()
			<-p.exited
		}
		fmt.Fprintf(&logs, "sidecar %s: %s\n", p.name, strings.TrimSpace(p.log.String()))
	}
	return logs.String()
}

// rewrite maps the mount paths of c named in v (as the value itself, or
// after "=") to their directories under root.
func rewrite(v string, c corev1.Container, root string) string {
	for _, m := range c.VolumeMounts {
		mp := m.MountPath
		if v == mp || strings.HasPrefix(v, mp+"/") {
			v = root + v
		}
		v = strings.ReplaceAll(v, "="+mp, "="+root+mp)
	}
	return v
}

func rewriteAll(vs []string, c corev1.Container, root string) []string {
	out := make([]string, len(vs))
	for i, v := range vs {
		out[i] = rewrite(v, c, root)
	}
	return out
}

func postgresCredential() (*syscall.Credential, error) {
	u, err := user.Lookup("postgres")
	if err != nil {
		return nil, fmt.Errorf("jobsim runs the dev database sidecar as the system user postgres when root, and there is none (apt-get install postgresql-15 creates it): %w", err)
	}
	uid, _ := strconv.Atoi(u.Uid)
	gid, _ := strconv.Atoi(u.Gid)
	return &syscall.Credential{Uid: uint32(uid), Gid: uint32(gid)}, nil
}

// lockedBuffer is a process's output, written by exec's copiers.
type lockedBuffer struct {
	mu sync.Mutex
	b  bytes.Buffer
}

func (w *lockedBuffer) Write(p []byte) (int, error) {
	w.mu.Lock()
	defer w.mu.Unlock()
	return w.b.Write(p)
}

func (w *lockedBuffer) String() string {
	w.mu.Lock()
	defer w.mu.Unlock()
	return w.b.String()
}

// volumeDir is the directory standing for volume name of a Pod rooted at root.
func volumeDir(root, name string) string { return filepath.Join(root, "volumes", name) }
