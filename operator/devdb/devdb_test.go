package devdb_test

import (
	"context"
	"net/url"
	"os"
	"strings"
	"testing"
	"time"

	"github.com/jackc/pgx/v5"
	"pgregory.net/rapid"

	"ptah.run/operator/internal/testenv"
	"ptah.run/operator/operator/database"
	"ptah.run/operator/operator/devdb"
)

// TestThrowawayServer is what ptah gets: a role that is no superuser and may
// create databases and roles (each comparison's), a server with no TCP
// listener that the superuser cannot log in to, and nothing left once it is
// stopped.
func TestThrowawayServer(t *testing.T) {
	ctx := context.Background()
	local, err := devdb.StartLocal(ctx)
	if err != nil {
		t.Fatal(err)
	}
	u, _ := url.Parse(local.URL)
	dir := u.Query().Get("host")
	conn, err := pgx.Connect(ctx, local.URL)
	if err != nil {
		t.Fatal(err)
	}
	var user, listen string
	var super, createRole, createDB bool
	if err := conn.QueryRow(ctx, "SELECT current_user, rolsuper, rolcreaterole, rolcreatedb, current_setting('listen_addresses') FROM pg_roles WHERE rolname = current_user").
		Scan(&user, &super, &createRole, &createDB, &listen); err != nil {
		t.Fatal(err)
	}
	conn.Close(ctx)
	if user != devdb.Role || super || !createRole || !createDB || listen != "" {
		t.Fatalf("role %s super=%v createrole=%v createdb=%v, listen_addresses %q; want %s, CREATEDB and CREATEROLE only, no TCP", user, super, createRole, createDB, listen, devdb.Role)
	}
	asSuper := strings.Replace(local.URL, devdb.Role+"@", "postgres@", 1)
	if c, err := pgx.Connect(ctx, asSuper); err == nil {
		c.Close(ctx)
		t.Fatalf("the superuser logged in to the throwaway server")
	}
	local.Stop()
	if _, err := os.Stat(dir); !os.IsNotExist(err) {
		t.Fatalf("%s remains after Stop (%v)", dir, err)
	}
}

// TestFreshDatabaseIsDropped: each comparison database is gone once dropped,
// and a session the target's role cannot see is still recognised as the
// target's server.
func TestFreshDatabaseIsDropped(t *testing.T) {
	ctx := context.Background()
	local, err := devdb.StartLocal(ctx)
	if err != nil {
		t.Fatal(err)
	}
	defer local.Stop()
	srv, err := devdb.Open(ctx, local.URL, 5*time.Second)
	if err != nil {
		t.Fatal(err)
	}
	defer srv.Close()
	pg := testenv.StartPostgres(t)
	target, err := database.OpenReadOnly(ctx, pg.CreateDatabase(t, "app"), 5*time.Second)
	if err != nil {
		t.Fatal(err)
	}
	defer target.Close()
	db, drop, err := srv.Fresh(ctx, target)
	if err != nil {
		t.Fatal(err)
	}
	var name string
	if err := db.QueryRow("SELECT current_database()").Scan(&name); err != nil {
		t.Fatal(err)
	}
	drop()
	conn, err := pgx.Connect(ctx, local.URL)
	if err != nil {
		t.Fatal(err)
	}
	defer conn.Close(ctx)
	var n int
	if err := conn.QueryRow(ctx, "SELECT count(*) FROM pg_database WHERE datname = $1", name).Scan(&n); err != nil || n != 0 {
		t.Fatalf("%s: %d left (%v)", name, n, err)
	}

	// Another role's dev session on the target's own server.
	other := pg.CreateDatabase(t, "other")
	pg.Exec(t, "postgres", "ALTER ROLE other CREATEDB")
	same, err := devdb.Open(ctx, other, 5*time.Second)
	if err != nil {
		t.Fatal(err)
	}
	defer same.Close()
	if _, _, err := same.Fresh(ctx, target); err == nil || !strings.Contains(err.Error(), "target's own server") {
		t.Fatalf("want a refusal, got %v", err)
	}
}

// BenchmarkStartLocal is the cost of a throwaway dev server (initdb, the
// role, start, first connection, stop): what every Observe, Plan and Proof
// Pod and each ptah --dev-throwaway run pays.
func BenchmarkStartLocal(b *testing.B) {
	for b.Loop() {
		local, err := devdb.StartLocal(context.Background())
		if err != nil {
			b.Fatal(err)
		}
		local.Stop()
	}
}

// BenchmarkFresh is the cost of one comparison's database and role on a
// throwaway server: created, logged in to as the role, one query, dropped.
func BenchmarkFresh(b *testing.B) {
	ctx := context.Background()
	local, err := devdb.StartLocal(ctx)
	if err != nil {
		b.Fatal(err)
	}
	defer local.Stop()
	srv, err := devdb.Open(ctx, local.URL, 5*time.Second)
	if err != nil {
		b.Fatal(err)
	}
	defer srv.Close()
	pg := testenv.StartPostgres(b)
	target, err := database.OpenReadOnly(ctx, pg.CreateDatabase(b, "app"), 5*time.Second)
	if err != nil {
		b.Fatal(err)
	}
	defer target.Close()
	for b.Loop() {
		db, drop, err := srv.Fresh(ctx, target)
		if err != nil {
			b.Fatal(err)
		}
		if _, err := db.ExecContext(ctx, "SELECT 1"); err != nil {
			b.Fatal(err)
		}
		drop()
	}
}

// TestMirroredRolesCanDoNothing: the target's roles made on the dev server
// are NOLOGIN with no attribute and no membership, whatever their name
// (quoted, uppercase, with a quote in it); a role the server has is left as
// it is, and mirroring twice is no error.
func TestMirroredRolesCanDoNothing(t *testing.T) {
	ctx := context.Background()
	local, err := devdb.StartLocal(ctx)
	if err != nil {
		t.Fatal(err)
	}
	defer local.Stop()
	srv, err := devdb.Open(ctx, local.URL, 5*time.Second)
	if err != nil {
		t.Fatal(err)
	}
	defer srv.Close()
	conn, err := pgx.Connect(ctx, local.URL)
	if err != nil {
		t.Fatal(err)
	}
	defer conn.Close(ctx)
	if _, err := conn.Exec(ctx, "CREATE ROLE kept LOGIN CREATEDB"); err != nil {
		t.Fatal(err)
	}
	names := []string{"app_reader", "Audit Team", `o"brien; DROP ROLE kept`, "kept"}
	for range 2 {
		if err := srv.MirrorRoles(ctx, names); err != nil {
			t.Fatal(err)
		}
	}
	for _, n := range names[:3] {
		var login, super, createDB, createRole, repl, bypass bool
		var members int
		err := conn.QueryRow(ctx, `SELECT rolcanlogin, rolsuper, rolcreatedb, rolcreaterole, rolreplication, rolbypassrls,
		        (SELECT count(*) FROM pg_auth_members m WHERE m.member = r.oid)
		   FROM pg_roles r WHERE rolname = $1`, n).Scan(&login, &super, &createDB, &createRole, &repl, &bypass, &members)
		if err != nil {
			t.Fatalf("role %q: %v", n, err)
		}
		if login || super || createDB || createRole || repl || bypass || members > 0 {
			t.Errorf("role %q can do something: login=%v super=%v createdb=%v createrole=%v replication=%v bypassrls=%v memberships=%d", n, login, super, createDB, createRole, repl, bypass, members)
		}
	}
	var login, createDB bool
	if err := conn.QueryRow(ctx, "SELECT rolcanlogin, rolcreatedb FROM pg_roles WHERE rolname = 'kept'").Scan(&login, &createDB); err != nil || !login || !createDB {
		t.Errorf("a role the dev server had was changed: login=%v createdb=%v (%v)", login, createDB, err)
	}
}

// TestSocketURLNamesItsDirectory: the dev URL of a socket directory reaches
// that directory, as the connection's host, whatever characters its path
// holds (a space, a plus, a percent, query and fragment separators), both
// as pgx reads it and as ptah's own parser does.
func TestSocketURLNamesItsDirectory(t *testing.T) {
	rapid.Check(t, func(rt *rapid.T) {
		seg := rapid.StringOfN(rapid.SampledFrom([]rune("ab Z+%&=#?;:@$'\"\\é-_.~")), 1, 12, -1)
		dir := "/" + strings.Join(rapid.SliceOfN(seg, 1, 4).Draw(rt, "segments"), "/")
		u := devdb.SocketURL(dir)
		cfg, err := pgx.ParseConfig(u)
		if err != nil {
			rt.Fatalf("pgx refuses %s: %v", u, err)
		}
		if cfg.Host != dir || cfg.User != devdb.Role || cfg.Database != "postgres" {
			rt.Fatalf("%s reaches host %q as %q on %q, want %q as %s on postgres", u, cfg.Host, cfg.User, cfg.Database, dir, devdb.Role)
		}
		own, err := database.ParseURL(u)
		if err != nil {
			rt.Fatalf("ptah refuses %s: %v", u, err)
		}
		if own.Host != dir {
			rt.Fatalf("ptah reads host %q from %s, want %q", own.Host, u, dir)
		}
	})
}
