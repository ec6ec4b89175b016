// Package database opens the PostgreSQL connections ptah works through and
// takes the advisory lock that serialises every ptah writer on a database.
// Its errors name the server's host and port and never the user, password or
// any other part of the URL, because they end up in Job logs and status.
package database

import (
	"context"
	"database/sql"
	"errors"
	"fmt"
	"hash/fnv"
	"net"
	"os"
	"strconv"
	"syscall"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgconn"
	"github.com/jackc/pgx/v5/stdlib"

	"ptah.run/operator/operator/catalogread"
	"ptah.run/operator/operator/report"
)

// URLEnv is the environment variable read when --url is not given.
const URLEnv = "PTAH_DB_URL"

// LockKey is the advisory-lock key every ptah writer (schema apply and
// migrations up) takes, so two writers on one database never interleave.
var LockKey = func() int64 {
	h := fnv.New64a()
	h.Write([]byte("ptah.run/writer"))
	return int64(h.Sum64())
}()

// DB is an open database with the address it was opened on.
type DB struct {
	*sql.DB
	// Target is "host:port", the only part of the URL that may be shown.
	Target string
}

// Open parses url, connects and pings within connectTimeout. The error is a
// *report.Error coded Usage, Connection or Auth.
func Open(ctx context.Context, url string, connectTimeout time.Duration) (*DB, error) {
	cfg, err := ParseURL(url)
	if err != nil {
		return nil, err
	}
	return OpenConfig(ctx, cfg, connectTimeout)
}

// OpenReadOnly is Open for an operation that only reads: every transaction
// of the session is read-only (default_transaction_read_only, a startup
// parameter), so not even a bug in ptah can write through it, and every
// statement is one of package catalogread's reviewed catalog reads: the
// rest is refused before it is sent, since a read-only transaction still
// runs functions that sleep, lock, signal other sessions or change settings.
func OpenReadOnly(ctx context.Context, url string, connectTimeout time.Duration) (*DB, error) {
	cfg, err := ParseURL(url)
	if err != nil {
		return nil, err
	}
	cfg.RuntimeParams["default_transaction_read_only"] = "on"
	cfg.RuntimeParams["statement_timeout"] = strconv.FormatInt(ReadOnlyStatementTimeout.Milliseconds(), 10)
	return openConfig(ctx, cfg, connectTimeout, catalogread.Check)
}

// ParseURL parses a database URL (or key=value connection string) into a
// configuration without repeating any of it in the error.
func ParseURL(url string) (*pgx.ConnConfig, error) {
	if url == "" {
		return nil, report.Errorf(report.Usage, "no database URL: pass --url or set %s", URLEnv)
	}
	cfg, err := pgx.ParseConfig(url)
	if err != nil {
		// pgx quotes the URL (user included) in its parse errors: say only what to fix.
		return nil, report.Errorf(report.Usage, "the database URL is malformed; expected postgres://USER:PASSWORD@HOST:PORT/DATABASE")
	}
	return cfg, nil
}

// OpenConfig connects with cfg and pings within connectTimeout.
func OpenConfig(ctx context.Context, cfg *pgx.ConnConfig, connectTimeout time.Duration) (*DB, error) {
	return openConfig(ctx, cfg, connectTimeout, nil)
}

// openConfig is OpenConfig whose connections send only the statements
// check accepts, when check is not nil.
func openConfig(ctx context.Context, cfg *pgx.ConnConfig, connectTimeout time.Duration, check func(string) error) (*DB, error) {
	if connectTimeout > 0 {
		cfg.ConnectTimeout = connectTimeout
	}
	cfg.DialFunc = boundedDialer(cfg.ConnectTimeout)
	serverBounds(cfg.RuntimeParams, cfg.ConnectTimeout)
	target := net.JoinHostPort(cfg.Host, strconv.Itoa(int(cfg.Port)))
	db := &DB{Target: target}
	if check != nil {
		db.DB = sql.OpenDB(guardedConnector{inner: stdlib.GetConnector(*cfg), check: check})
	} else {
		db.DB = stdlib.OpenDB(*cfg)
	}
	pingCtx, cancel := context.WithTimeout(ctx, cfg.ConnectTimeout+5*time.Second)
	defer cancel()
	if err := db.PingContext(pingCtx); err != nil {
		db.Close()
		return nil, ConnectError(target, err)
	}
	return db, nil
}

// URLFrom returns flagValue, or the environment's PTAH_DB_URL when it is empty.
func URLFrom(flagValue string) string {
	if flagValue != "" {
		return flagValue
	}
	return os.Getenv(URLEnv)
}

// ConnectError describes a failure to connect to target without repeating
// the driver's text, which names the user.
func ConnectError(target string, err error) *report.Error {
	var pgErr *pgconn.PgError
	var dnsErr *net.DNSError
	switch {
	case errors.As(err, &pgErr) && (pgErr.Code == "28P01" || pgErr.Code == "28000"):
		return report.Errorf(report.Auth, "the database server at %s refused the credentials in the database URL (SQLSTATE %s); check the Secret holding the URL", target, pgErr.Code)
	case errors.As(err, &pgErr) && pgErr.Code == "3D000":
		return report.Errorf(report.Connection, "the database named in the URL does not exist on the server at %s", target)
	case errors.As(err, &pgErr):
		return report.Errorf(report.Connection, "the database server at %s refused the connection (SQLSTATE %s)", target, pgErr.Code)
	case errors.Is(err, syscall.ECONNREFUSED):
		return report.Errorf(report.Connection, "cannot connect to %s: connection refused; is the database running and reachable from here?", target)
	case errors.As(err, &dnsErr):
		return report.Errorf(report.Connection, "cannot connect to %s: the host name does not resolve", target)
	case errors.Is(err, context.DeadlineExceeded) || isTimeout(err):
		return report.Errorf(report.Connection, "cannot connect to %s: timed out; check the address and any network policy in between", target)
	default:
		return report.Errorf(report.Connection, "cannot connect to %s", target)
	}
}

func isTimeout(err error) bool {
	var ne net.Error
	return errors.As(err, &ne) && ne.Timeout()
}

// LockTx takes the writers' advisory lock for the life of tx, waiting at most
// timeout. lock_timeout stays set for the rest of tx, so no statement of the
// transaction waits on any lock longer than that either.
func LockTx(ctx context.Context, tx *sql.Tx, target string, timeout time.Duration) error {
	if timeout <= 0 {
		return report.Errorf(report.Usage, "--lock-timeout must be positive")
	}
	if _, err := tx.ExecContext(ctx, catalogread.SetLockTimeout, strconv.FormatInt(timeout.Milliseconds(), 10), true); err != nil {
		return StatementError(target, "set lock_timeout", err)
	}
	if _, err := tx.ExecContext(ctx, catalogread.WriterLockXact, LockKey); err != nil {
		if IsLockTimeout(err) {
			return report.Errorf(report.LockTimeout, "another session holds the ptah writer lock on %s; not granted within %s, nothing was changed", target, timeout)
		}
		return StatementError(target, "take the ptah writer lock", err)
	}
	return nil
}

// LockSession takes the writers' advisory lock for the session of conn,
// waiting at most timeout, until pg_advisory_unlock or the end of the
// session (sql.Conn.Close only returns it to the pool). As with
// LockTx, lock_timeout stays set for the session.
func LockSession(ctx context.Context, conn *sql.Conn, target string, timeout time.Duration) error {
	if timeout <= 0 {
		return report.Errorf(report.Usage, "--lock-timeout must be positive")
	}
	if _, err := conn.ExecContext(ctx, catalogread.SetLockTimeout, strconv.FormatInt(timeout.Milliseconds(), 10), false); err != nil {
		return StatementError(target, "set lock_timeout", err)
	}
	if _, err := conn.ExecContext(ctx, catalogread.WriterLock, LockKey); err != nil {
		if IsLockTimeout(err) {
			return report.Errorf(report.LockTimeout, "another session holds the ptah writer lock on %s; not granted within %s, nothing was changed", target, timeout)
		}
		return StatementError(target, "take the ptah writer lock", err)
	}
	return nil
}

// StalePremise is the SQLSTATE a plan's guard raises when what the plan
// read of the data, and took as losing nothing, no longer holds (an
// identity's sequence has moved since): the plan is stale, not failed.
const StalePremise = "PTAH1"

// LossyConversion is the SQLSTATE a plan's guard raises when a column
// holds a value its change of type would not give back.
const LossyConversion = "PTAH2"

// IsLockTimeout reports whether err is PostgreSQL giving up on a lock wait.
func IsLockTimeout(err error) bool {
	var pgErr *pgconn.PgError
	return errors.As(err, &pgErr) && pgErr.Code == "55P03"
}

// CommitError codes the error of what commits a change (a COMMIT, or a
// statement run outside a transaction): an ERROR the server sent means it
// did not commit, and is coded as StatementError codes it; a session that
// ended with no answer (lost, reset, or ended by a FATAL that may come
// after the commit was written, as a termination during a synchronous
// commit's wait does) leaves the outcome unknown, and says so rather than
// claim anything was rolled back.
func CommitError(target, doing string, err error) *report.Error {
	var pgErr *pgconn.PgError
	if errors.As(err, &pgErr) && pgErr.Severity != "FATAL" && pgErr.Severity != "PANIC" || IsLockTimeout(err) {
		return StatementError(target, doing, err)
	}
	// No answer came: whatever the error (a timeout, a reset, an end of
	// stream), the session is gone with the answer.
	cause := "the connection was lost mid-operation (the server stopped answering, or reset the connection)"
	switch {
	case errors.As(err, &pgErr):
		cause = fmt.Sprintf("the server ended the session: %s (SQLSTATE %s)", pgErr.Message, pgErr.Code)
	case errors.Is(err, context.Canceled) || errors.Is(err, context.DeadlineExceeded):
		cause = "the operation was stopped (" + err.Error() + ")"
	}
	return report.Errorf(report.OutcomeUnknown, "%s on %s: %s before the server said whether it committed, so whether it did is unknown: read the database before applying anything again", doing, target, cause)
}

// StatementError codes an error of an established session: a lost
// connection (or the server ending the session) is Connection, a lock wait is LockTimeout, anything else is
// Execution with PostgreSQL's own message (which holds no credential).
func StatementError(target, doing string, err error) *report.Error {
	var pgErr *pgconn.PgError
	switch {
	case errors.As(err, &pgErr) && pgErr.Code == StalePremise:
		return report.Errorf(report.StalePlan, "%s on %s: %s", doing, target, pgErr.Message)
	case IsLockTimeout(err):
		return report.Errorf(report.LockTimeout, "%s on %s: a lock was not granted within the lock timeout", doing, target)
	case errors.As(err, &pgErr) && (pgErr.Severity == "FATAL" || pgErr.Severity == "PANIC"):
		// The server ended the session (terminated, shutting down).
		return report.Errorf(report.Connection, "%s on %s: the connection failed: %s (SQLSTATE %s)", doing, target, pgErr.Message, pgErr.Code)
	case errors.As(err, &pgErr):
		return report.Errorf(report.Execution, "%s on %s: %s (SQLSTATE %s)", doing, target, pgErr.Message, pgErr.Code)
	case lostMidOperation(err):
		return report.Errorf(report.ConnectionLost, "%s on %s: the connection was lost mid-operation (the server stopped answering, or reset the connection)", doing, target)
	default:
		return report.Errorf(report.Connection, "%s on %s: the connection failed", doing, target)
	}
}
