package devdb_test

import (
	"context"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/jackc/pgx/v5"
	"pgregory.net/rapid"

	"ptah.run/operator/internal/testenv"
	"ptah.run/operator/operator/devdb"
)

// serverUser is the user a dev server runs as in these tests: postgres
// when the test runs as root (devdb.PostgresUser, as StartLocal does), else
// nil (the test's own). It skips the test when there is none.
func serverUser(t testing.TB) *syscall.Credential {
	if os.Geteuid() != 0 {
		return nil
	}
	cred, err := devdb.PostgresUser()
	if err != nil {
		t.Skip(err)
	}
	return cred
}

// giveTo makes dirs cred's, when there is one.
func giveTo(t testing.TB, cred *syscall.Credential, dirs ...string) {
	if cred == nil {
		return
	}
	for _, d := range dirs {
		if err := os.Chown(d, int(cred.Uid), int(cred.Gid)); err != nil {
			t.Fatal(err)
		}
	}
}

// TestReadyReturnsOnlyOnceTheServerAnswers holds the sidecar's postStart
// hook (devdb.Ready), which is all that keeps the runner from starting
// before its dev database: over generated delays between the hook's start
// and the server's (the server started first, at once, late, or never),
// the hook returns success only after the server was started and when
// ptah's role can connect at once, and without a server it fails at its
// limit, naming the socket directory, whatever characters its path holds. The oracle is a real PostgreSQL
// started by devdb.Script, as the sidecar starts it. 30 cases by default
// (about half a minute); -rapid.checks=N runs N.
func TestReadyReturnsOnlyOnceTheServerAnswers(t *testing.T) {
	testenv.RapidChecks(t, 30)
	bin, err := devdb.BinDir()
	if err != nil {
		t.Skip(err)
	}
	cred := serverUser(t)
	root, err := os.MkdirTemp("", "ptah-ready-")
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { os.RemoveAll(root) })
	giveTo(t, cred, root)
	env := []string{"PATH=" + bin + ":/usr/bin:/bin", "LANG=C"}
	template := filepath.Join(root, "template")
	mk := exec.Command("/bin/sh", "-c", devdb.Script, "ptah-dev-database", "template")
	mk.Env = append(env, "PTAH_DEV_TEMPLATE="+template)
	mk.SysProcAttr = &syscall.SysProcAttr{Credential: cred}
	if out, err := mk.CombinedOutput(); err != nil {
		t.Fatalf("make the template: %v: %s", err, out)
	}
	n := 0
	rapid.Check(t, func(rt *rapid.T) {
		n++
		// The socket directory as the hook's argument, quoted or not.
		name := rapid.SampledFrom([]string{"", " with space", "'quoted'", "$(false)", "*"}).Draw(rt, "directory name")
		dir := filepath.Join(root, "case"+strconv.Itoa(n)+name)
		sock := filepath.Join(dir, "socket")
		for _, d := range []string{dir, sock} {
			if err := os.Mkdir(d, 0o700); err != nil {
				rt.Fatal(err)
			}
		}
		giveTo(t, cred, dir, sock)
		start := rapid.SampledFrom([]string{"before the hook", "with the hook", "after the hook", "never"}).Draw(rt, "server")
		delay := time.Duration(rapid.IntRange(0, 1500).Draw(rt, "delay ms")) * time.Millisecond
		limit := 3
		if start == "never" {
			limit = rapid.IntRange(1, 2).Draw(rt, "limit s")
		}
		server := exec.Command("/bin/sh", "-c", devdb.Script, "ptah-dev-database")
		server.Env = append(env, "PGDATA="+filepath.Join(dir, "data"), "PTAH_DEV_SOCKET_DIR="+sock, "PTAH_DEV_TEMPLATE="+template)
		server.SysProcAttr = &syscall.SysProcAttr{Credential: cred, Pdeathsig: syscall.SIGKILL}
		var log strings.Builder
		server.Stdout, server.Stderr = &log, &log
		var started time.Time
		startServer := func() {
			started = time.Now()
			if err := server.Start(); err != nil {
				rt.Fatal(err)
			}
		}
		defer func() {
			if server.Process != nil {
				_ = server.Process.Signal(syscall.SIGINT)
				_ = server.Wait()
			}
		}()
		if start == "before the hook" {
			startServer()
			time.Sleep(delay)
		}
		// The hook runs as the kubelet runs it: in the sidecar's
		// container, as its user.
		hook := exec.Command("/bin/sh", "-c", devdb.Ready, "ptah-dev-ready", sock, strconv.Itoa(limit))
		hook.Env = env
		hook.SysProcAttr = &syscall.SysProcAttr{Credential: cred}
		var hookOut strings.Builder
		hook.Stdout, hook.Stderr = &hookOut, &hookOut
		hookStarted := time.Now()
		if err := hook.Start(); err != nil {
			rt.Fatal(err)
		}
		switch start {
		case "with the hook":
			startServer()
		case "after the hook":
			time.Sleep(delay)
			startServer()
		}
		err := hook.Wait()
		returned := time.Now()
		if start == "never" {
			switch {
			case err == nil:
				rt.Fatalf("the hook succeeded with no server on %s", sock)
			case returned.Sub(hookStarted) < time.Duration(limit)*time.Second:
				rt.Fatalf("the hook gave up after %v, before its limit of %d s", returned.Sub(hookStarted), limit)
			case !strings.Contains(hookOut.String(), sock):
				rt.Fatalf("the hook's failure does not name the socket directory %s: %q", sock, hookOut.String())
			}
			return
		}
		if err != nil {
			rt.Fatalf("the hook failed with the server started %s: %v: %s; the server logged: %s", start, err, hookOut.String(), log.String())
		}
		if returned.Before(started) {
			rt.Fatalf("the hook returned %v before the server was started", started.Sub(returned))
		}
		// The runner connects the moment the hook has returned.
		ctx, cancel := context.WithTimeout(context.Background(), 2*time.Second)
		defer cancel()
		conn, err := pgx.Connect(ctx, devdb.SocketURL(sock))
		if err != nil {
			rt.Fatalf("the hook returned, but ptah's role cannot connect: %v; the server logged: %s", err, log.String())
		}
		conn.Close(ctx)
	})
}
