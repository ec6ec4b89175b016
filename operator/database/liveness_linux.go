package database

import (
	"time"

	"golang.org/x/sys/unix"
)

// setUserTimeout bounds how long data sent on fd may go unacknowledged,
// and keepalive probes unanswered, before the kernel ends the connection.
func setUserTimeout(fd uintptr, d time.Duration) error {
	return unix.SetsockoptInt(int(fd), unix.IPPROTO_TCP, unix.TCP_USER_TIMEOUT, int(d.Milliseconds()))
}
