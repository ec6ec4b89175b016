package database

import (
	"context"
	"errors"
	"io"
	"net"
	"strconv"
	"syscall"
	"time"
)

// How long a session may go without an answer from the server before it
// is taken for lost. Without a bound, a database cut off mid-operation (a
// partition: no refusal, no reset, only silence) holds the operation until
// its Job's deadline. Keepalive probes start after keepaliveIdle of silence
// and every keepaliveInterval after; the kernel ends the connection at the
// first probe after userTimeout (TCP_USER_TIMEOUT on Linux, which also
// bounds data the server leaves unacknowledged; TCP_RXT_CONNDROPTIME on
// macOS bounds the data, and the probe count bounds the silence).
const (
	keepaliveIdle     = 5 * time.Second
	keepaliveInterval = 5 * time.Second
	// lostMargin is added to the connect timeout for the user timeout.
	lostMargin = 25 * time.Second
	// ReadOnlyStatementTimeout bounds each statement of a read-only
	// session: the catalog reads of 2,000 objects take well under a second.
	ReadOnlyStatementTimeout = 2 * time.Minute
)

// LostAfter is the longest an operation whose session was opened with
// connectTimeout waits on a server that stopped answering before it fails
// with a Connection error: the connect timeout plus 30 s (the user timeout
// and the keepalive probe that finds it passed).
func LostAfter(connectTimeout time.Duration) time.Duration {
	return userTimeout(connectTimeout) + keepaliveInterval
}

func userTimeout(connectTimeout time.Duration) time.Duration {
	return max(connectTimeout, 0) + lostMargin
}

// boundedDialer dials TCP with keepalives and the user timeout of
// connectTimeout; unix sockets need neither.
func boundedDialer(connectTimeout time.Duration) func(ctx context.Context, network, addr string) (net.Conn, error) {
	user := userTimeout(connectTimeout)
	d := &net.Dialer{
		// The probes end the connection by the time the user timeout passes
		// where no socket option makes the kernel do so for silence.
		KeepAliveConfig: net.KeepAliveConfig{Enable: true, Idle: keepaliveIdle, Interval: keepaliveInterval,
			Count: int((user - keepaliveIdle + keepaliveInterval - 1) / keepaliveInterval)},
		Control: func(network, _ string, c syscall.RawConn) error {
			if network != "tcp" && network != "tcp4" && network != "tcp6" {
				return nil
			}
			var serr error
			if err := c.Control(func(fd uintptr) { serr = setUserTimeout(fd, user) }); err != nil {
				return err
			}
			return serr
		},
	}
	return d.DialContext
}

// serverBounds asks the server to bound its end of the session the same
// way: a client cut off mid-transaction leaves a backend that holds its
// locks, idle in transaction, until the server's kernel gives up on it
// (two hours by default). With these, the server ends that backend, and so
// rolls back its transaction and releases its locks, within the bound the
// client keeps. They are startup parameters any role may set; PostgreSQL
// ignores them on a unix socket.
func serverBounds(params map[string]string, connectTimeout time.Duration) {
	user := userTimeout(connectTimeout)
	params["tcp_keepalives_idle"] = strconv.Itoa(int(keepaliveIdle.Seconds()))
	params["tcp_keepalives_interval"] = strconv.Itoa(int(keepaliveInterval.Seconds()))
	params["tcp_keepalives_count"] = strconv.Itoa(int(user/keepaliveInterval) + 1)
	params["tcp_user_timeout"] = strconv.FormatInt(user.Milliseconds(), 10)
}

// lostMidOperation reports whether err is an established session that
// stopped answering (a timeout, a reset, or a path to the server that
// went away under it: the kernel reports a retransmission timeout as
// unreachable once a neighbour or router said so; or an end of stream with
// no word from the server, which is what a read sees once another read of
// the same socket took the timeout), not a refusal.
func lostMidOperation(err error) bool {
	var ne net.Error
	return errors.As(err, &ne) && ne.Timeout() || errors.Is(err, syscall.ETIMEDOUT) || errors.Is(err, syscall.ECONNRESET) ||
		errors.Is(err, syscall.EPIPE) || errors.Is(err, syscall.EHOSTUNREACH) || errors.Is(err, syscall.ENETUNREACH) ||
		errors.Is(err, io.ErrUnexpectedEOF) || errors.Is(err, io.EOF)
}
