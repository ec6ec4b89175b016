package devdb

import (
	"bytes"
	"context"
	_ "embed"
	"net/url"
	"os"
	"os/exec"
	"os/user"
	"path/filepath"
	"sort"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"time"

	"github.com/jackc/pgx/v5"

	"ptah.run/operator/operator/database"
	"ptah.run/operator/operator/report"
)

// Script starts a throwaway dev server in the foreground (sh -c Script):
// the operator's sidecar runs it, and so does StartLocal. It reads PGDATA and
// PTAH_DEV_SOCKET_DIR and finds initdb, postgres and pg_isready on PATH.
//
//go:embed server.sh
var Script string

// Ready waits for a server Script started (sh -c Ready ptah-dev-ready
// SOCKET_DIR SECONDS): the operator's sidecar runs it as its postStart
// hook, which holds the runner back until the server accepts connections.
//
//go:embed ready.sh
var Ready string

// Role is the role ptah logs in to a server Script started as: it may
// create databases and roles and is no superuser.
const Role = "ptah"

// SocketURL is the dev URL of a server Script started with its socket in dir.
// The directory stays readable in it (slashes unescaped).
func SocketURL(dir string) string {
	return socketURL(url.User(Role), dir)
}

// socketURL reaches the server with its socket in dir as user. pgx reads a
// "+" in the query as itself, not as the space url.QueryEscape meant by
// it, so a space is written %20.
func socketURL(user *url.Userinfo, dir string) string {
	host := strings.NewReplacer("+", "%20", "%2F", "/").Replace(url.QueryEscape(dir))
	u := url.URL{Scheme: "postgres", User: user, Path: "/postgres", RawQuery: "host=" + host + "&sslmode=disable"}
	return u.String()
}

// BinDir is the directory of PostgreSQL's server programs: initdb's on PATH,
// else the newest of Debian's /usr/lib/postgresql/*/bin.
func BinDir() (string, error) {
	if p, err := exec.LookPath("initdb"); err == nil {
		return filepath.Dir(p), nil
	}
	found, _ := filepath.Glob("/usr/lib/postgresql/*/bin/initdb")
	sort.Slice(found, func(i, j int) bool { return version(found[i]) > version(found[j]) })
	if len(found) == 0 {
		return "", report.Errorf(report.Usage, "no PostgreSQL server programs: initdb is neither on PATH nor in /usr/lib/postgresql/*/bin; install the PostgreSQL server (apt-get install postgresql-15) or pass --dev-url")
	}
	return filepath.Dir(found[0]), nil
}

func version(initdb string) int {
	v, _ := strconv.Atoi(filepath.Base(filepath.Dir(filepath.Dir(initdb))))
	return v
}

// Local is a throwaway dev server on a unix socket in a temporary directory.
type Local struct {
	// URL reaches it as Role.
	URL string
	// superURL reaches it as its superuser, by a password only this
	// process knows; Open gives it to the Server for MarkLeakproof alone.
	superURL string
	dir      string
	cmd      *exec.Cmd
	exited   chan struct{}
	err      error
	log      *syncBuffer
}

// StartLocal runs Script in a new temporary directory and waits until the
// server accepts connections. As root, the server runs as the system user
// postgres, as PostgreSQL requires. Stop ends it and removes the directory.
func StartLocal(ctx context.Context) (*Local, error) {
	bin, err := BinDir()
	if err != nil {
		return nil, err
	}
	dir, err := os.MkdirTemp("", "ptah-dev-")
	if err != nil {
		return nil, report.Errorf(report.Internal, "create the throwaway server's directory: %v", err)
	}
	l := &Local{dir: dir, exited: make(chan struct{}), log: &syncBuffer{}}
	sock := filepath.Join(dir, "socket")
	if err := os.Mkdir(sock, 0o700); err != nil {
		l.Stop()
		return nil, report.Errorf(report.Internal, "create the throwaway server's socket directory: %v", err)
	}
	l.cmd = exec.Command("/bin/sh", "-c", Script, "ptah-dev-database")
	superPassword := randomHex(32)
	l.cmd.Env = []string{"PATH=" + bin + ":/usr/bin:/bin", "PGDATA=" + filepath.Join(dir, "data"), "PTAH_DEV_SOCKET_DIR=" + sock, "LANG=C",
		"PTAH_DEV_SUPER_VERIFIER=" + scramVerifier(superPassword)}
	l.cmd.Stdout, l.cmd.Stderr = l.log, l.log
	l.cmd.SysProcAttr = serverProcAttr()
	if os.Geteuid() == 0 {
		cred, err := postgresUser()
		if err != nil {
			l.Stop()
			return nil, err
		}
		for _, d := range []string{dir, sock} {
			if err := os.Chown(d, int(cred.Uid), int(cred.Gid)); err != nil {
				l.Stop()
				return nil, report.Errorf(report.Internal, "hand %s to the postgres user: %v", d, err)
			}
		}
		l.cmd.SysProcAttr.Credential = cred
	}
	if err := l.cmd.Start(); err != nil {
		l.Stop()
		return nil, report.Errorf(report.Internal, "start the throwaway PostgreSQL: %v", err)
	}
	go func() { l.err = l.cmd.Wait(); close(l.exited) }()
	l.URL = SocketURL(sock)
	l.superURL = socketURL(url.UserPassword("postgres", superPassword), sock)
	if err := l.waitReady(ctx, 60*time.Second); err != nil {
		l.Stop()
		return nil, err
	}
	return l, nil
}

func (l *Local) waitReady(ctx context.Context, timeout time.Duration) error {
	deadline := time.Now().Add(timeout)
	for {
		cctx, cancel := context.WithTimeout(ctx, time.Second)
		conn, err := pgx.Connect(cctx, l.URL)
		cancel()
		if err == nil {
			conn.Close(ctx)
			return nil
		}
		select {
		case <-l.exited:
			return report.Errorf(report.Internal, "the throwaway PostgreSQL exited (%v): %s", l.err, lastLines(l.log.String(), 5))
		case <-ctx.Done():
			return ctx.Err()
		case <-time.After(50 * time.Millisecond):
		}
		if time.Now().After(deadline) {
			return report.Errorf(report.Internal, "the throwaway PostgreSQL did not accept connections within %s: %s", timeout, lastLines(l.log.String(), 5))
		}
	}
}

// Stop shuts the server down (fast shutdown) and removes its directory.
func (l *Local) Stop() {
	if l.cmd != nil && l.cmd.Process != nil {
		_ = l.cmd.Process.Signal(syscall.SIGINT)
		select {
		case <-l.exited:
		case <-time.After(30 * time.Second):
			_ = l.cmd.Process.Kill()
			<-l.exited
		}
	}
	os.RemoveAll(l.dir)
}

func postgresUser() (*syscall.Credential, error) {
	u, err := user.Lookup("postgres")
	if err != nil {
		return nil, report.Errorf(report.Usage, "PostgreSQL does not run as root, and there is no system user postgres to run it as (Debian's postgresql package creates it); run ptah as another user or pass --dev-url")
	}
	uid, _ := strconv.Atoi(u.Uid)
	gid, _ := strconv.Atoi(u.Gid)
	return &syscall.Credential{Uid: uint32(uid), Gid: uint32(gid)}, nil
}

func lastLines(s string, n int) string {
	lines := strings.Split(strings.TrimSpace(s), "\n")
	return strings.Join(lines[max(0, len(lines)-n):], " | ")
}

// syncBuffer is the server's output, written by the process's copier
// goroutines and read on failure.
type syncBuffer struct {
	mu sync.Mutex
	b  bytes.Buffer
}

func (w *syncBuffer) Write(p []byte) (int, error) {
	w.mu.Lock()
	defer w.mu.Unlock()
	return w.b.Write(p)
}

func (w *syncBuffer) String() string {
	w.mu.Lock()
	defer w.mu.Unlock()
	return w.b.String()
}

// Open opens the throwaway server as Open does, and lets the Server mark
// LEAKPROOF functions as the server's superuser.
func (l *Local) Open(ctx context.Context, connectTimeout time.Duration) (*Server, error) {
	s, err := Open(ctx, l.URL, connectTimeout)
	if err != nil {
		return nil, err
	}
	if s.markCfg, err = database.ParseURL(l.superURL); err != nil {
		s.Close()
		return nil, err
	}
	return s, nil
}
