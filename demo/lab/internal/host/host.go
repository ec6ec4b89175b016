// Package host prepares this machine for the lab: the Debian packages it
// needs, a Docker daemon that answers, and, only where the kernel's capability
// bounding set lacks CAP_SYS_RESOURCE, an OCI runtime wrapper so privileged
// kind nodes can start.
package host

import (
	"context"
	_ "embed"
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
	"time"

	"ptah.run/operator/demo/lab/internal/run"
)

// The wrapper is a shell script rather than a Go binary: dockerd execs it for
// every container start and exec, so it must live at a fixed path, and a
// script of a few lines has no build step to go stale. It needs jq.
//
//go:embed runc-nosysres.sh
var wrapperScript []byte

const (
	// WrapperPath is where the runtime wrapper is installed.
	WrapperPath = "/usr/local/libexec/ptah-lab/runc-nosysres"
	// RuntimeName is the name the wrapper is registered under in daemon.json.
	RuntimeName    = "ptah-runc-nosysres"
	daemonJSON     = "/etc/docker/daemon.json"
	dockerdLog     = "/var/log/ptah-lab-dockerd.log"
	capSysResource = 24
)

// packages maps each Debian package the lab needs to a file proving it is installed.
var packages = []struct{ name, proof string }{
	{"docker.io", "/usr/sbin/dockerd"},
	{"debootstrap", "/usr/sbin/debootstrap"},
	{"jq", "/usr/bin/jq"},
	{"iptables", "/usr/sbin/iptables"},
}

// Prepare makes the host ready; it is idempotent and says what it changed.
func Prepare(ctx context.Context, r *run.Runner) error {
	if err := installPackages(ctx, r); err != nil {
		return err
	}
	lacks, err := LacksSysResource()
	if err != nil {
		return err
	}
	changed := false
	if lacks {
		if changed, err = installWrapper(r); err != nil {
			return err
		}
	}
	if err := ensureDockerd(ctx, r, changed); err != nil {
		return err
	}
	if lacks {
		info, _ := r.Output(ctx, "docker", "info", "--format", "{{.DefaultRuntime}}")
		if info != RuntimeName {
			return fmt.Errorf("dockerd's default runtime is %q, not %s after a reload: restart dockerd (it reads %s at start)", info, RuntimeName, daemonJSON)
		}
	}
	return nil
}

func installPackages(ctx context.Context, r *run.Runner) error {
	var missing []string
	for _, p := range packages {
		if _, err := os.Stat(p.proof); err != nil {
			missing = append(missing, p.name)
		}
	}
	if len(missing) == 0 {
		r.Printf("host: packages present (%s)", names())
		return nil
	}
	if os.Getuid() != 0 {
		return fmt.Errorf("host: missing Debian packages %s: install them with apt-get as root", strings.Join(missing, " "))
	}
	done := r.Step("host: apt-get install " + strings.Join(missing, " "))
	if _, err := r.Output(ctx, "apt-get", "update", "-q"); err != nil {
		return err
	}
	args := append([]string{"install", "-y", "-q", "--no-install-recommends"}, missing...)
	if _, err := r.Run(ctx, run.Cmd{Name: "apt-get", Args: args, Env: []string{"DEBIAN_FRONTEND=noninteractive"}}); err != nil {
		return err
	}
	done("installed")
	return nil
}

func names() string {
	var n []string
	for _, p := range packages {
		n = append(n, p.name)
	}
	return strings.Join(n, ", ")
}

// LacksSysResource reports whether this process's capability bounding set
// lacks CAP_SYS_RESOURCE (as in some VMs), which breaks privileged containers.
func LacksSysResource() (bool, error) {
	status, err := os.ReadFile("/proc/self/status")
	if err != nil {
		return false, fmt.Errorf("host: read capability bounding set: %w", err)
	}
	return lacksSysResource(string(status))
}

func lacksSysResource(status string) (bool, error) {
	for _, line := range strings.Split(status, "\n") {
		if v, ok := strings.CutPrefix(line, "CapBnd:"); ok {
			bits, err := strconv.ParseUint(strings.TrimSpace(v), 16, 64)
			if err != nil {
				return false, fmt.Errorf("host: parse CapBnd %q: %w", v, err)
			}
			return bits&(1<<capSysResource) == 0, nil
		}
	}
	return false, errors.New("host: no CapBnd line in /proc/self/status")
}

// installWrapper writes the wrapper and registers it as Docker's default
// runtime, keeping every other daemon.json setting. It reports whether
// daemon.json changed.
func installWrapper(r *run.Runner) (bool, error) {
	if cur, _ := os.ReadFile(WrapperPath); string(cur) != string(wrapperScript) {
		if err := os.MkdirAll(filepath.Dir(WrapperPath), 0o755); err != nil {
			return false, fmt.Errorf("host: install runtime wrapper: %w", err)
		}
		if err := os.WriteFile(WrapperPath+".tmp", wrapperScript, 0o755); err != nil {
			return false, fmt.Errorf("host: install runtime wrapper: %w", err)
		}
		if err := os.Rename(WrapperPath+".tmp", WrapperPath); err != nil {
			return false, fmt.Errorf("host: install runtime wrapper: %w", err)
		}
		r.Printf("host: CapBnd lacks CAP_SYS_RESOURCE: installed the OCI runtime wrapper %s", WrapperPath)
	}
	cfg := map[string]any{}
	raw, err := os.ReadFile(daemonJSON)
	if err == nil && len(strings.TrimSpace(string(raw))) > 0 {
		if err := json.Unmarshal(raw, &cfg); err != nil {
			return false, fmt.Errorf("host: %s is not JSON (%v): fix it by hand", daemonJSON, err)
		}
	}
	runtimes, _ := cfg["runtimes"].(map[string]any)
	if runtimes == nil {
		runtimes = map[string]any{}
	}
	entry, _ := runtimes[RuntimeName].(map[string]any)
	if entry["path"] == WrapperPath && cfg["default-runtime"] == RuntimeName {
		r.Printf("host: CapBnd lacks CAP_SYS_RESOURCE: runtime wrapper already Docker's default runtime")
		return false, nil
	}
	runtimes[RuntimeName] = map[string]any{"path": WrapperPath}
	cfg["runtimes"] = runtimes
	cfg["default-runtime"] = RuntimeName
	out, _ := json.MarshalIndent(cfg, "", "  ")
	if err := os.MkdirAll(filepath.Dir(daemonJSON), 0o755); err != nil {
		return false, err
	}
	if err := os.WriteFile(daemonJSON, append(out, '\n'), 0o644); err != nil {
		return false, fmt.Errorf("host: write %s: %w", daemonJSON, err)
	}
	r.Printf("host: CapBnd lacks CAP_SYS_RESOURCE: registered %s as Docker's default runtime in %s", RuntimeName, daemonJSON)
	return true, nil
}

// ensureDockerd starts dockerd when none answers; when one runs and its
// configuration changed, it is reloaded with SIGHUP (runtimes reload live),
// never restarted.
func ensureDockerd(ctx context.Context, r *run.Runner, reload bool) error {
	if r.Succeeds(ctx, "docker", "info", "--format", "{{.ServerVersion}}") {
		if reload {
			pid, err := dockerdPID()
			if err != nil {
				return fmt.Errorf("host: %s changed but the running dockerd was not found to reload: %w; restart dockerd", daemonJSON, err)
			}
			if err := syscall.Kill(pid, syscall.SIGHUP); err != nil {
				return fmt.Errorf("host: reload dockerd (pid %d): %w", pid, err)
			}
			r.Printf("host: reloaded the running dockerd (pid %d) with SIGHUP to pick up the runtime wrapper; not restarted", pid)
			time.Sleep(2 * time.Second)
		}
		v, _ := r.Output(ctx, "docker", "info", "--format", "{{.ServerVersion}}")
		r.Printf("host: dockerd %s answers", v)
		return nil
	}
	if _, err := exec.LookPath("dockerd"); err != nil {
		return errors.New("host: no dockerd: install docker.io (run lab prepare as root)")
	}
	done := r.Step("host: starting dockerd (log " + dockerdLog + ")")
	logf, err := os.OpenFile(dockerdLog, os.O_CREATE|os.O_WRONLY|os.O_APPEND, 0o644)
	if err != nil {
		return fmt.Errorf("host: start dockerd: %w", err)
	}
	defer logf.Close()
	// Detached in its own session so it outlives this command, as a service would.
	cmd := exec.Command("dockerd")
	cmd.Stdout, cmd.Stderr = logf, logf
	cmd.SysProcAttr = &syscall.SysProcAttr{Setsid: true}
	if err := cmd.Start(); err != nil {
		return fmt.Errorf("host: start dockerd: %w", err)
	}
	_ = cmd.Process.Release()
	deadline := time.Now().Add(60 * time.Second)
	for !r.Succeeds(ctx, "docker", "info", "--format", "{{.ServerVersion}}") {
		if time.Now().After(deadline) {
			return fmt.Errorf("host: dockerd did not answer within 60s: read %s", dockerdLog)
		}
		time.Sleep(time.Second)
	}
	done("answering")
	return nil
}

func dockerdPID() (int, error) {
	if raw, err := os.ReadFile("/var/run/docker.pid"); err == nil {
		if pid, err := strconv.Atoi(strings.TrimSpace(string(raw))); err == nil && syscall.Kill(pid, 0) == nil {
			return pid, nil
		}
	}
	return 0, errors.New("no live pid in /var/run/docker.pid")
}
