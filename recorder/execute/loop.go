package execute

import (
	"context"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"syscall"
	"time"

	"golang.org/x/sys/unix"
)

// wait reads the command's output as it comes and waits for it to exit, in
// one loop on poll(2) over the terminal, the stderr pipe, the shell's pidfd
// and a wake-up for an interruption: no goroutine stands between a byte
// written and a byte read, or between the exit and its notice. The
// deadline and the output limit end the whole process group; after the
// exit, output is read until the terminal closes or drainGrace has passed.
func wait(ctx context.Context, cmd *exec.Cmd, term, errR *os.File, timeout time.Duration, limit int, start time.Time) (Result, error, error) {
	var res Result
	pid := cmd.Process.Pid
	pidfd, err := unix.PidfdOpen(pid, 0)
	if err != nil {
		_ = syscall.Kill(-pid, syscall.SIGKILL)
		_ = cmd.Wait()
		return res, nil, fmt.Errorf("execute: pidfd_open for the shell (Linux 5.3 or later is needed): %w", err)
	}
	defer unix.Close(pidfd)
	wake, err := unix.Eventfd(0, unix.EFD_CLOEXEC|unix.EFD_NONBLOCK)
	if err != nil {
		_ = syscall.Kill(-pid, syscall.SIGKILL)
		_ = cmd.Wait()
		return res, nil, fmt.Errorf("execute: eventfd: %w", err)
	}
	defer unix.Close(wake)
	stop := context.AfterFunc(ctx, func() { _, _ = unix.Write(wake, []byte{1, 0, 0, 0, 0, 0, 0, 0}) })
	defer stop()

	streams := []struct {
		name string
		fd   int
	}{{Terminal, int(term.Fd())}}
	if errR != nil {
		streams = append(streams, struct {
			name string
			fd   int
		}{Stderr, int(errR.Fd())})
	}
	// fds: the streams, then the pidfd, then the wake-up.
	fds := make([]unix.PollFd, 0, len(streams)+2)
	for _, st := range streams {
		fds = append(fds, unix.PollFd{Fd: int32(st.fd), Events: unix.POLLIN})
	}
	exitAt, wakeAt := len(fds), len(fds)+1
	fds = append(fds, unix.PollFd{Fd: int32(pidfd), Events: unix.POLLIN}, unix.PollFd{Fd: int32(wake), Events: unix.POLLIN})

	buf := make([]byte, 32*1024)
	size, open := 0, len(streams)
	killed, exited := false, false
	var exitedAt time.Time
	var waitErr error
	kill := func() {
		if !killed {
			killed = true
			_ = syscall.Kill(-pid, syscall.SIGKILL)
		}
	}
	deadline := start.Add(timeout)
	for open > 0 || !exited {
		until := deadline
		if exited {
			until = exitedAt.Add(drainGrace)
		}
		ms := int(time.Until(until).Milliseconds()) + 1
		if ms < 0 {
			ms = 0
		}
		n, err := unix.Poll(fds, ms)
		if errors.Is(err, unix.EINTR) {
			continue
		}
		if err != nil {
			kill()
			return res, nil, fmt.Errorf("execute: poll: %w", err)
		}
		if n == 0 {
			if exited {
				// What escaped the group holds the terminal open: its
				// output is no longer the command's.
				break
			}
			res.TimedOut = true
			kill()
			deadline = time.Now().Add(time.Hour)
			continue
		}
		for i, st := range streams {
			if fds[i].Fd < 0 || fds[i].Revents == 0 {
				continue
			}
			r, err := unix.Read(st.fd, buf)
			if r > 0 {
				// Past the limit the command is stopped; what it printed
				// meanwhile is read and dropped, so it is never blocked.
				data := buf[:r]
				if keep := limit - size; len(data) > keep {
					data = data[:max(keep, 0)]
					res.Overflow = true
					kill()
				}
				if len(data) > 0 {
					res.Chunks = append(res.Chunks, Chunk{At: time.Since(start), Stream: st.name, Data: append([]byte(nil), data...)})
					size += len(data)
				}
			}
			// A pseudo-terminal reports EIO once the last writer is gone:
			// that is its end of file.
			if r == 0 || (err != nil && !errors.Is(err, unix.EAGAIN) && !errors.Is(err, unix.EINTR)) {
				fds[i].Fd = -1
				open--
			}
		}
		if fds[wakeAt].Revents != 0 {
			kill()
			fds[wakeAt].Fd = -1
		}
		if fds[exitAt].Revents != 0 && !exited {
			exited, exitedAt = true, time.Now()
			fds[exitAt].Fd = -1
			waitErr = cmd.Wait()
			res.Duration = time.Since(start)
			// What the command left running in its group would hold the
			// terminal open and outlive the step: it ends with the
			// command, and so does what left the group but kept the
			// command's environment.
			_ = syscall.Kill(-pid, syscall.SIGKILL)
			endOrphans(pid, cmd.Env)
		}
	}
	return res, waitErr, nil
}
