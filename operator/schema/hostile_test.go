package schema

import (
	"context"
	"errors"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"ptah.run/operator/internal/testenv"
	"ptah.run/operator/operator/catalogread"
	"ptah.run/operator/operator/database"
	"ptah.run/operator/operator/devdb"
	"ptah.run/operator/operator/report"
)

// TestHostileDesiredSchemaLeavesTheTargetAlone plans and reads drift with
// desired SQL written to change the managed database; its catalog, rows and
// server must be identical afterwards, whatever ptah answered.
func TestHostileDesiredSchemaLeavesTheTargetAlone(t *testing.T) {
	ctx := context.Background()
	e := newEngine(t)
	url := e.pg.CreateDatabase(t, "victim")
	e.pg.SeedVictim(t, "victim", "victim")
	db, err := database.OpenReadOnly(ctx, url, 5*time.Second)
	if err != nil {
		t.Fatal(err)
	}
	defer db.Close()
	marker := filepath.Join(os.TempDir(), "ptah-hostile-"+t.Name())
	os.Remove(marker)
	before := e.pg.Snapshot(t, "victim")
	for _, h := range testenv.HostileSchemas("victim", "victim", marker) {
		t.Run(h.Name, func(t *testing.T) {
			_, planErr := ComputePlan(ctx, db, files(h.SQL), e.o(Options{}))
			_, driftErr := ComputeDrift(ctx, db, files(h.SQL), e.o(Options{}), true)
			t.Logf("plan: %v; drift: %v", planErr, driftErr)
			if after := e.pg.Snapshot(t, "victim"); after != before {
				t.Fatalf("the managed database changed:\nbefore:\n%s\nafter:\n%s", before, after)
			}
			if _, err := os.Stat(marker); err == nil {
				t.Fatalf("%s was created", marker)
			}
		})
	}
	t.Run("the desired SQL ran, on the dev server", func(t *testing.T) {
		// pg_dump writes public-qualified names; they are the managed schema.
		p, err := ComputePlan(ctx, db, files("CREATE TABLE public.customers (id bigserial PRIMARY KEY, name text NOT NULL);\nCREATE VIEW public.customer_names AS SELECT name FROM public.customers;\nCREATE TABLE public.canary (id int);"), e.o(Options{}))
		if err != nil {
			t.Fatal(err)
		}
		if len(p.Statements) != 1 || !strings.Contains(p.Statements[0].SQL, `CREATE TABLE "public"."canary"`) {
			t.Fatalf("want one statement creating canary, got %+v", p.Statements)
		}
		if after := e.pg.Snapshot(t, "victim"); after != before {
			t.Fatalf("the managed database changed:\n%s\n%s", before, after)
		}
	})
	// The dev server survived every artifact and kept no comparison database.
	if n := devDatabases(t, e, db); n != 0 {
		t.Errorf("%d comparison databases left on the dev server", n)
	}

}

// devDatabases counts the comparison databases on the dev server besides
// the one it opens to count them.
func devDatabases(t *testing.T, e *engine, target *database.DB) int {
	t.Helper()
	probe, drop, err := e.dev.Fresh(context.Background(), target)
	if err != nil {
		t.Fatalf("the dev server no longer answers: %v", err)
	}
	defer drop()
	var n int
	if err := probe.QueryRow(`SELECT count(*) FROM pg_database WHERE datname LIKE 'ptah\_dev\_%' AND datname <> current_database()`).Scan(&n); err != nil {
		t.Fatal(err)
	}
	return n
}

func mustOpen(t *testing.T, url string) *database.DB {
	t.Helper()
	db, err := database.Open(context.Background(), url, 5*time.Second)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { db.Close() })
	return db
}

// TestTargetSessionIsReadOnly writes through the session a read-only
// operation opens: the statements are refused before they are sent (none
// is one of catalogread's), and the table is not there.
func TestTargetSessionIsReadOnly(t *testing.T) {
	pg := testenv.StartPostgres(t)
	db, err := database.OpenReadOnly(context.Background(), pg.CreateDatabase(t, "app"), 5*time.Second)
	if err != nil {
		t.Fatal(err)
	}
	defer db.Close()
	for _, q := range []string{"CREATE TABLE x (id int)", "BEGIN; CREATE TABLE x (id int); COMMIT"} {
		_, err := db.Exec(q)
		if e := report.AsError(err); err == nil || e.Code != report.Internal || !strings.Contains(e.Message, "catalogread") {
			t.Errorf("%s: want it refused before it is sent, got %v", q, err)
		}
	}
	var exists bool
	if err := db.QueryRow(catalogread.RevisionTableSeen, "public.x").Scan(&exists); err != nil || exists {
		t.Fatalf("table x exists (%v) or could not be looked for: %v", exists, err)
	}
}

// TestDevServerOnTheTargetsServerIsRefused names, as the dev database, the
// target's own server: through another database, the same database, and a
// role that may not create databases. Nothing is loaded and nothing stays.
func TestDevServerOnTheTargetsServerIsRefused(t *testing.T) {
	ctx := context.Background()
	pg := testenv.StartPostgres(t)
	url := pg.CreateDatabase(t, "victim")
	pg.SeedVictim(t, "victim", "victim")
	target, err := database.OpenReadOnly(ctx, url, 5*time.Second)
	if err != nil {
		t.Fatal(err)
	}
	defer target.Close()
	other := pg.CreateDatabase(t, "other")
	pg.Exec(t, "postgres", "ALTER ROLE other CREATEDB")
	before := pg.Snapshot(t, "victim")
	for name, devURL := range map[string]string{
		"another database, a role with CREATEDB": other,
		"the target's own URL, as superuser":     pg.SuperURL("victim"),
		"the target's own URL and role":          url,
	} {
		t.Run(name, func(t *testing.T) {
			dev, err := devdb.Open(ctx, devURL, 5*time.Second)
			if err != nil {
				t.Fatal(err)
			}
			defer dev.Close()
			_, err = ComputePlan(ctx, target, files("COMMIT; DROP TABLE public.customers; ALTER SYSTEM SET max_connections = 7;"), Options{Dev: dev})
			var e *report.Error
			if !errors.As(err, &e) || (e.Code != report.Usage && e.Code != report.Permission) {
				t.Fatalf("want a refusal, got %v", err)
			}
			t.Logf("refused: %s: %s", e.Code, e.Message)
			if after := pg.Snapshot(t, "victim"); after != before {
				t.Fatalf("the managed database changed:\n%s\n%s", before, after)
			}
		})
	}
}

// TestDevRoleWithoutCreateDB is told what to grant.
func TestDevRoleWithoutCreateDB(t *testing.T) {
	ctx := context.Background()
	e := newEngine(t)
	devPG := testenv.StartPostgres(t)
	dev, err := devdb.Open(ctx, devPG.CreateDatabase(t, "nocreate"), 5*time.Second)
	if err != nil {
		t.Fatal(err)
	}
	defer dev.Close()
	_, err = ComputePlan(ctx, mustOpen(t, e.pg.CreateDatabase(t, "app")), files(shop), Options{Dev: dev})
	if rerr := wantCode(t, err, report.Permission); !strings.Contains(rerr.Message, "CREATEDB") {
		t.Fatalf("message: %s", rerr.Message)
	}
}
