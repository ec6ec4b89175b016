package execute

import (
	"bytes"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"syscall"

	"golang.org/x/sys/unix"
)

// A command's children that outlive it are reparented to the recorder
// (PR_SET_CHILD_SUBREAPER) rather than to init, so the recorder can find and
// end them: the ones still in the command's process group, and the ones that
// left it (setsid, a daemon) but still carry the command's environment.
var subreaper sync.Once

func becomeSubreaper() {
	subreaper.Do(func() { _ = unix.Prctl(unix.PR_SET_CHILD_SUBREAPER, 1, 0, 0, 0) })
}

// starting is held shared from a shell's start until it is in running, and
// exclusively while orphans are looked for, so a shell that a concurrent
// Run is starting is never taken for one.
var starting sync.RWMutex

// running are the shells in flight, which are never orphans.
var running = pids{m: map[int]bool{}}

type pids struct {
	mu sync.Mutex
	m  map[int]bool
}

func (p *pids) add(pid int)    { p.mu.Lock(); p.m[pid] = true; p.mu.Unlock() }
func (p *pids) remove(pid int) { p.mu.Lock(); delete(p.m, pid); p.mu.Unlock() }
func (p *pids) has(pid int) bool {
	p.mu.Lock()
	defer p.mu.Unlock()
	return p.m[pid]
}

// endOrphans kills and reaps the recorder's adopted children that the
// command whose shell was pgid left behind. Process ids are handed out in
// increasing order, so only the ids from the shell's to the last one the
// kernel handed out are read (/proc/loadavg names it); when the counter
// has wrapped, or the range is large, every process is read instead.
func endOrphans(pgid int, env []string) {
	// With no child at all (none adopted, none running) there is nothing
	// to look for; WNOWAIT leaves any child's exit for its own Wait.
	var info unix.Siginfo
	if unix.Waitid(unix.P_ALL, 0, &info, unix.WEXITED|unix.WNOHANG|unix.WNOWAIT, nil) == unix.ECHILD {
		return
	}
	starting.Lock()
	defer starting.Unlock()
	self := os.Getpid()
	for _, pid := range younger(pgid) {
		if pid == pgid || running.has(pid) {
			continue
		}
		d := "/proc/" + strconv.Itoa(pid)
		ppid, pgrp, ok := stat(d)
		if !ok || ppid != self {
			continue
		}
		if pgrp != pgid && !carries(d, env) {
			continue
		}
		_ = syscall.Kill(pid, syscall.SIGKILL)
		var ws syscall.WaitStatus
		_, _ = syscall.Wait4(pid, &ws, 0, nil)
	}
}

// maxRange is how many process ids are tried one by one before reading
// the whole process table is cheaper.
const maxRange = 2048

// younger lists the process ids that may have been started after pid.
func younger(pid int) []int {
	if raw, err := os.ReadFile("/proc/loadavg"); err == nil {
		f := strings.Fields(string(raw))
		if len(f) == 5 {
			if last, err := strconv.Atoi(f[4]); err == nil && last >= pid && last-pid <= maxRange {
				out := make([]int, 0, last-pid)
				for p := pid + 1; p <= last; p++ {
					out = append(out, p)
				}
				return out
			}
		}
	}
	proc, err := os.Open("/proc")
	if err != nil {
		return nil
	}
	defer proc.Close()
	names, _ := proc.Readdirnames(-1)
	var out []int
	for _, n := range names {
		if p, err := strconv.Atoi(n); err == nil {
			out = append(out, p)
		}
	}
	return out
}

// stat reads a process's parent and process group from /proc/PID/stat.
func stat(dir string) (ppid, pgrp int, ok bool) {
	raw, err := os.ReadFile(filepath.Join(dir, "stat"))
	if err != nil {
		return 0, 0, false
	}
	// The command name is in parentheses and may hold anything.
	i := bytes.LastIndexByte(raw, ')')
	if i < 0 {
		return 0, 0, false
	}
	f := strings.Fields(string(raw[i+1:]))
	if len(f) < 3 {
		return 0, 0, false
	}
	ppid, err1 := strconv.Atoi(f[1])
	pgrp, err2 := strconv.Atoi(f[2])
	return ppid, pgrp, err1 == nil && err2 == nil
}

// carries says whether the process's environment holds every entry of env.
func carries(dir string, env []string) bool {
	if len(env) == 0 {
		return false
	}
	raw, err := os.ReadFile(filepath.Join(dir, "environ"))
	if err != nil || len(raw) == 0 {
		return false
	}
	have := map[string]bool{}
	for _, e := range bytes.Split(raw, []byte{0}) {
		have[string(e)] = true
	}
	for _, e := range env {
		if !have[e] {
			return false
		}
	}
	return true
}
