package devdb_test

import (
	"context"
	"fmt"
	"net/url"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/jackc/pgx/v5"

	"ptah.run/operator/operator/devdb"
)

// TestTemplateStartIsAFreshStart: a sidecar whose image holds a template
// cluster (made by the script itself, as an image build runs it) starts a
// server that reads, to ptah and to anyone else, exactly as one started by
// initdb does: the same roles with the same attributes, the same
// authentication rules (pg_hba.conf, and the superuser refused), settings,
// databases and encoding. So an image's
// template can only make a start faster.
func TestTemplateStartIsAFreshStart(t *testing.T) {
	bin, err := devdb.BinDir()
	if err != nil {
		t.Skip(err)
	}
	// Not t.TempDir: its parent is the test user's alone, and the server
	// runs as postgres when the test runs as root.
	root, err := os.MkdirTemp("", "ptah-template-")
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { os.RemoveAll(root) })
	cred := serverUser(t)
	giveTo(t, cred, root)
	run := func(env []string, args ...string) *exec.Cmd {
		cmd := exec.Command("/bin/sh", append([]string{"-c", devdb.Script, "ptah-dev-database"}, args...)...)
		cmd.Env = append([]string{"PATH=" + bin + ":/usr/bin:/bin", "LANG=C"}, env...)
		cmd.SysProcAttr = &syscall.SysProcAttr{Credential: cred, Pdeathsig: syscall.SIGKILL}
		return cmd
	}
	template := filepath.Join(root, "template")
	if out, err := run([]string{"PTAH_DEV_TEMPLATE=" + template}, "template").CombinedOutput(); err != nil {
		t.Fatalf("make the template: %v: %s", err, out)
	}
	// read starts the server in a directory of its own, with env, and
	// reads what it is. password, when set, is the superuser's (its
	// verifier in env): the superuser logs in by it, and only by it.
	read := func(name, password string, env ...string) string {
		dir := filepath.Join(root, name)
		sock := filepath.Join(dir, "socket")
		for _, d := range []string{dir, sock} {
			if err := os.Mkdir(d, 0o700); err != nil {
				t.Fatal(err)
			}
			giveTo(t, cred, d)
		}
		cmd := run(append(env, "PGDATA="+filepath.Join(dir, "data"), "PTAH_DEV_SOCKET_DIR="+sock))
		var log strings.Builder
		cmd.Stdout, cmd.Stderr = &log, &log
		if err := cmd.Start(); err != nil {
			t.Fatal(err)
		}
		defer func() { _ = cmd.Process.Signal(syscall.SIGINT); _ = cmd.Wait() }()
		ctx := context.Background()
		var conn *pgx.Conn
		for deadline := time.Now().Add(60 * time.Second); ; {
			if conn, err = pgx.Connect(ctx, devdb.SocketURL(sock)); err == nil {
				break
			}
			if time.Now().After(deadline) {
				t.Fatalf("%s: the server did not accept ptah: %v: %s", name, err, log.String())
			}
			time.Sleep(50 * time.Millisecond)
		}
		defer conn.Close(ctx)
		hba, err := os.ReadFile(filepath.Join(dir, "data", "pg_hba.conf"))
		if err != nil {
			t.Fatal(err)
		}
		facts := []string{string(hba)}
		for _, q := range []string{
			`SELECT rolname, rolsuper, rolinherit, rolcreaterole, rolcreatedb, rolcanlogin, rolreplication, rolbypassrls, rolconnlimit FROM pg_roles ORDER BY rolname`,
			`SELECT name, setting FROM pg_settings WHERE name NOT IN ('data_directory', 'config_file', 'hba_file', 'ident_file', 'unix_socket_directories') ORDER BY name`,
			`SELECT datname, pg_encoding_to_char(encoding), datcollate, datctype, datallowconn, datistemplate FROM pg_database ORDER BY datname`,
		} {
			rows, err := conn.Query(ctx, q)
			if err != nil {
				t.Fatalf("%s: %s: %v", name, q, err)
			}
			for rows.Next() {
				vs, _ := rows.Values()
				var line []string
				for _, v := range vs {
					line = append(line, strings.TrimSpace(strings.ReplaceAll(strings.ReplaceAll(fmtValue(v), "\n", " "), "\t", " ")))
				}
				facts = append(facts, strings.Join(line, " | "))
			}
			if err := rows.Err(); err != nil {
				t.Fatal(err)
			}
		}
		if c, err := pgx.Connect(ctx, strings.Replace(devdb.SocketURL(sock), devdb.Role+"@", "postgres@", 1)); err == nil {
			c.Close(ctx)
			t.Fatalf("%s: the superuser logged in without a password", name)
		}
		if password != "" {
			su := url.URL{Scheme: "postgres", User: url.UserPassword("postgres", password), Path: "/postgres", RawQuery: url.Values{"host": {sock}, "sslmode": {"disable"}}.Encode()}
			c, err := pgx.Connect(ctx, su.String())
			if err != nil {
				t.Fatalf("%s: the superuser cannot log in by its password: %v", name, err)
			}
			c.Close(ctx)
		}
		return strings.Join(facts, "\n")
	}
	fresh := read("fresh", "")
	copied := read("copied", "", "PTAH_DEV_TEMPLATE="+template)
	if fresh != copied {
		t.Fatalf("a start from the template differs from a fresh one:\n%s", lineDiff(fresh, copied))
	}
	// A PTAH_DEV_TEMPLATE that holds no cluster is no template: initdb runs.
	empty := filepath.Join(root, "empty")
	if err := os.Mkdir(empty, 0o755); err != nil {
		t.Fatal(err)
	}
	if got := read("no-template", "", "PTAH_DEV_TEMPLATE="+empty); got != fresh {
		t.Fatalf("a start with an empty PTAH_DEV_TEMPLATE differs from a fresh one:\n%s", lineDiff(fresh, got))
	}
	// ptah's own throwaway server sets a superuser verifier: from the
	// template too, the superuser logs in by that password alone.
	password := "Pw-" + strconv.Itoa(os.Getpid())
	verifier := "PTAH_DEV_SUPER_VERIFIER=" + devdb.ScramVerifier(password)
	freshSuper := read("fresh-super", password, verifier)
	if got := read("copied-super", password, verifier, "PTAH_DEV_TEMPLATE="+template); got != freshSuper {
		t.Fatalf("with a superuser verifier, a start from the template differs from a fresh one:\n%s", lineDiff(freshSuper, got))
	}
	if !strings.Contains(fresh, devdb.Role+" | false | true | true | true | true | false | false | -1") {
		t.Fatalf("no role %s with CREATEDB and CREATEROLE only:\n%s", devdb.Role, fresh)
	}
	// The template is copied, never used in place: it is as it was made.
	if _, err := os.Stat(filepath.Join(template, "postmaster.pid")); !os.IsNotExist(err) {
		t.Fatalf("the template was started in place (%v)", err)
	}
}

func fmtValue(v any) string {
	if v == nil {
		return "NULL"
	}
	return fmt.Sprint(v)
}

func lineDiff(a, b string) string {
	as, bs := strings.Split(a, "\n"), strings.Split(b, "\n")
	var out []string
	for i := 0; i < max(len(as), len(bs)); i++ {
		var x, y string
		if i < len(as) {
			x = as[i]
		}
		if i < len(bs) {
			y = bs[i]
		}
		if x != y {
			out = append(out, "- "+x, "+ "+y)
		}
	}
	return strings.Join(out, "\n")
}
