package testenv

import (
	"bytes"
	"context"
	"crypto/rand"
	"encoding/hex"
	"fmt"
	"net"
	"net/url"
	"os"
	"os/exec"
	"os/user"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/jackc/pgx/v5"
)

// PostgresBinDir holds Debian's PostgreSQL 15 server binaries.
const PostgresBinDir = "/usr/lib/postgresql/15/bin"

// Postgres is a throwaway PostgreSQL server on a loopback port.
type Postgres struct {
	Host string
	Port int
	// SuperPassword is the password of the superuser "postgres".
	SuperPassword string
	Started       time.Duration
	// LogFile is the server's log: its stderr, appended to while it runs
	// (logging_collector is off), removed with the cluster.
	LogFile string
	dataDir string
	// socketDir holds the server's unix socket, which a partition of its
	// network does not cut.
	socketDir string
}

// StartPostgres initialises a cluster in a temporary directory, starts it on
// a free loopback port, and stops and removes it when t ends. As root the
// server runs as the unprivileged system user postgres, as PostgreSQL requires.
// Settings and Behind change how it runs.
func StartPostgres(t testing.TB, opts ...PostgresOption) *Postgres {
	t.Helper()
	var o postgresOptions
	for _, opt := range opts {
		opt(&o)
	}
	for _, bin := range []string{"initdb", "postgres"} {
		if _, err := os.Stat(filepath.Join(PostgresBinDir, bin)); err != nil {
			t.Fatalf("testenv: %s not found in %s: install Debian's postgresql-15 (apt-get install postgresql-15; .ci/run does)", bin, PostgresBinDir)
		}
	}
	start := time.Now()
	cred, uid, gid := postgresCredential(t)
	dir, err := os.MkdirTemp("", "ptah-pg-")
	if err != nil {
		t.Fatalf("testenv: %v", err)
	}
	t.Cleanup(func() { os.RemoveAll(dir) })
	if err := os.Chown(dir, uid, gid); err != nil {
		t.Fatalf("testenv: chown %s to the postgres user: %v", dir, err)
	}
	host := "127.0.0.1"
	if o.netns != nil {
		host = o.netns.ServerAddr
	}
	p := &Postgres{Host: host, SuperPassword: randomHex(12), dataDir: filepath.Join(dir, "data"), LogFile: filepath.Join(dir, "server.log"), socketDir: dir}
	pwfile := filepath.Join(dir, "pw")
	if err := os.WriteFile(pwfile, []byte(p.SuperPassword+"\n"), 0o600); err != nil {
		t.Fatalf("testenv: %v", err)
	}
	if err := os.Chown(pwfile, uid, gid); err != nil {
		t.Fatalf("testenv: %v", err)
	}
	initdb := exec.Command(filepath.Join(PostgresBinDir, "initdb"), "-D", p.dataDir, "-U", "postgres",
		"--auth-local=trust", "--auth-host=scram-sha-256", "--pwfile="+pwfile, "--encoding=UTF8", "--locale=C", "--no-sync")
	initdb.SysProcAttr = &syscall.SysProcAttr{Credential: cred}
	if out, err := initdb.CombinedOutput(); err != nil {
		t.Fatalf("testenv: initdb: %v\n%s", err, out)
	}
	if o.netns != nil {
		// Clients come from the other end of the namespace's link.
		hba, err := os.OpenFile(filepath.Join(p.dataDir, "pg_hba.conf"), os.O_APPEND|os.O_WRONLY, 0)
		if err != nil {
			t.Fatalf("testenv: %v", err)
		}
		fmt.Fprintf(hba, "host all all %s/32 scram-sha-256\n", o.netns.ClientAddr)
		hba.Close()
	}
	// A free port can be taken between the probe and the bind: try a few.
	var srv *exec.Cmd
	logs := func() []byte { b, _ := os.ReadFile(p.LogFile); return b }
	for attempt := 0; attempt < 5; attempt++ {
		p.Port = freePort(t)
		if o.netns != nil {
			p.Port = 5432 // the namespace is the server's alone
		}
		args := []string{"-D", p.dataDir, "-p", strconv.Itoa(p.Port),
			"-c", "listen_addresses=" + host, "-c", "unix_socket_directories=" + dir,
			"-c", "fsync=off", "-c", "synchronous_commit=off", "-c", "full_page_writes=off", "-c", "logging_collector=off"}
		for _, s := range o.settings {
			args = append(args, "-c", s)
		}
		srv = exec.Command(filepath.Join(PostgresBinDir, "postgres"), args...)
		// The server writes its log straight into the file (no copy by this
		// process), in appends, so a reader sees every line it wrote.
		logFile, err := os.OpenFile(p.LogFile, os.O_WRONLY|os.O_CREATE|os.O_TRUNC|os.O_APPEND, 0o644)
		if err != nil {
			t.Fatalf("testenv: %v", err)
		}
		srv.Stdout, srv.Stderr = logFile, logFile
		// Pdeathsig stops the server if the test binary is killed outright.
		srv.SysProcAttr = &syscall.SysProcAttr{Credential: cred, Pdeathsig: syscall.SIGKILL}
		if o.netns != nil {
			// ip netns exec needs root; setpriv then drops to postgres.
			srv = exec.Command("ip", append([]string{"netns", "exec", o.netns.Name, "setpriv",
				fmt.Sprintf("--reuid=%d", uid), fmt.Sprintf("--regid=%d", gid), "--clear-groups", "--",
				filepath.Join(PostgresBinDir, "postgres")}, args...)...)
			srv.SysProcAttr = &syscall.SysProcAttr{Pdeathsig: syscall.SIGKILL}
			srv.Stdout, srv.Stderr = logFile, logFile
		}
		err = srv.Start()
		logFile.Close() // the server holds its own descriptor
		if err != nil {
			t.Fatalf("testenv: start postgres: %v", err)
		}
		exited := make(chan error, 1)
		go func() { exited <- srv.Wait() }()
		if err := p.waitReady(exited); err == nil {
			t.Cleanup(func() {
				_ = srv.Process.Signal(syscall.SIGINT) // fast shutdown
				select {
				case <-exited:
				case <-time.After(30 * time.Second):
					_ = srv.Process.Kill()
					<-exited
				}
			})
			p.Started = time.Since(start)
			t.Logf("testenv: postgres 15 on %s:%d up in %s", p.Host, p.Port, p.Started.Round(time.Millisecond))
			return p
		} else if !bytes.Contains(logs(), []byte("could not bind")) {
			_ = srv.Process.Kill()
			t.Fatalf("testenv: postgres did not start: %v\n%s", err, logs())
		}
	}
	t.Fatalf("testenv: postgres found no free port:\n%s", logs())
	return nil
}

func (p *Postgres) waitReady(exited <-chan error) error {
	deadline := time.Now().Add(30 * time.Second)
	for time.Now().Before(deadline) {
		select {
		case err := <-exited:
			return fmt.Errorf("postgres exited: %v", err)
		default:
		}
		ctx, cancel := context.WithTimeout(context.Background(), time.Second)
		conn, err := pgx.Connect(ctx, p.SuperURL("postgres"))
		cancel()
		if err == nil {
			conn.Close(context.Background())
			return nil
		}
		time.Sleep(50 * time.Millisecond)
	}
	return fmt.Errorf("postgres on port %d did not accept connections within 30s", p.Port)
}

// URL is a connection URL for user/password on database db.
func (p *Postgres) URL(user, password, db string) string {
	u := url.URL{Scheme: "postgres", User: url.UserPassword(user, password),
		Host: net.JoinHostPort(p.Host, strconv.Itoa(p.Port)), Path: "/" + db, RawQuery: "sslmode=disable"}
	return u.String()
}

// SocketURL connects as the superuser to database db over the server's
// unix socket: the way in that stays open while its network is cut.
func (p *Postgres) SocketURL(db string) string {
	return fmt.Sprintf("host=%s port=%d user=postgres dbname=%s sslmode=disable", p.socketDir, p.Port, db)
}

// SuperURL connects as the superuser to database db.
func (p *Postgres) SuperURL(db string) string { return p.URL("postgres", p.SuperPassword, db) }

// Exec runs SQL as the superuser on database db and fails the test on error.
func (p *Postgres) Exec(t testing.TB, db, sql string, args ...any) {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	conn, err := pgx.Connect(ctx, p.SuperURL(db))
	if err != nil {
		t.Fatalf("testenv: connect to %s as postgres: %v", db, err)
	}
	defer conn.Close(context.Background())
	if _, err := conn.Exec(ctx, sql, args...); err != nil {
		t.Fatalf("testenv: on %s: %s: %v", db, sql, err)
	}
}

// CreateDatabase creates a login role with a random password and a database
// it owns, and returns the role's connection URL.
func (p *Postgres) CreateDatabase(t testing.TB, name string) string {
	t.Helper()
	password := randomHex(12)
	ident := pgx.Identifier{name}.Sanitize()
	p.Exec(t, "postgres", fmt.Sprintf("CREATE ROLE %s LOGIN PASSWORD '%s'", ident, password))
	p.Exec(t, "postgres", fmt.Sprintf("CREATE DATABASE %s OWNER %s", ident, ident))
	return p.URL(name, password, name)
}

func postgresCredential(t testing.TB) (*syscall.Credential, int, int) {
	if os.Geteuid() != 0 {
		return nil, os.Geteuid(), os.Getegid()
	}
	u, err := user.Lookup("postgres")
	if err != nil {
		t.Fatalf("testenv: running as root needs the system user postgres (Debian's postgresql package creates it): %v", err)
	}
	uid, _ := strconv.Atoi(u.Uid)
	gid, _ := strconv.Atoi(u.Gid)
	return &syscall.Credential{Uid: uint32(uid), Gid: uint32(gid)}, uid, gid
}

func freePort(t testing.TB) int {
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatalf("testenv: find a free port: %v", err)
	}
	defer l.Close()
	return l.Addr().(*net.TCPAddr).Port
}

func randomHex(n int) string {
	b := make([]byte, n)
	if _, err := rand.Read(b); err != nil {
		panic(err)
	}
	return hex.EncodeToString(b)
}

// LogLinePrefix begins every entry of the log LogStatements turns on: the
// time, the backend's pid, then user@database.
const LogLinePrefix = "%m [%p] %q%u@%d "

// LogStatements makes the server log every statement it receives
// (log_statement=all), from the next statement of every session on.
func (p *Postgres) LogStatements(t testing.TB) {
	t.Helper()
	p.Exec(t, "postgres", "ALTER SYSTEM SET log_statement = 'all'")
	p.Exec(t, "postgres", "ALTER SYSTEM SET log_line_prefix = '"+LogLinePrefix+"'")
	p.Exec(t, "postgres", "SELECT pg_reload_conf()")
	p.SyncLog(t)
}

// SyncLog returns once everything the server logged before the call has
// reached Log: it logs a statement of its own and waits to read it (with
// log_statement=all; the reload of LogStatements also reaches backends
// only asynchronously).
func (p *Postgres) SyncLog(t testing.TB) {
	t.Helper()
	probe := "ptah_log_probe_" + randomHex(6)
	deadline := time.Now().Add(10 * time.Second)
	for !strings.Contains(p.Log(), probe) {
		if time.Now().After(deadline) {
			t.Fatalf("testenv: log_statement=all did not take effect within 10s")
		}
		p.Exec(t, "postgres", "SELECT '"+probe+"'")
		time.Sleep(20 * time.Millisecond)
	}
}

// Log is everything the server wrote to its standard output and error so far.
func (p *Postgres) Log() string {
	b, _ := os.ReadFile(p.LogFile)
	return string(b)
}
