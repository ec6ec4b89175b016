package database

import (
	"time"

	"golang.org/x/sys/unix"
)

// setUserTimeout bounds how long data sent on fd may be retransmitted
// before the kernel ends the connection (whole seconds, rounded up); the
// keepalive probe count bounds silence.
func setUserTimeout(fd uintptr, d time.Duration) error {
	return unix.SetsockoptInt(int(fd), unix.IPPROTO_TCP, unix.TCP_RXT_CONNDROPTIME, int((d+time.Second-1)/time.Second))
}
