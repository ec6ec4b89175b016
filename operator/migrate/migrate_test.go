package migrate

import (
	"context"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"ptah.run/operator/internal/testenv"
	"ptah.run/operator/operator/database"
	"ptah.run/operator/operator/report"
)

type fixture struct {
	pg *testenv.Postgres
	n  int
}

func (f *fixture) db(t *testing.T) *database.DB {
	t.Helper()
	f.n++
	db, err := database.Open(context.Background(), f.pg.CreateDatabase(t, fmt.Sprintf("m%d", f.n)), 5*time.Second)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { db.Close() })
	return db
}

// migrations writes files into a new directory and hashes it.
func migrations(t *testing.T, files map[string]string) string {
	t.Helper()
	dir := t.TempDir()
	for name, text := range files {
		if err := os.WriteFile(filepath.Join(dir, name), []byte(text), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	if _, err := Hash(dir); err != nil {
		t.Fatalf("hash: %v", err)
	}
	return dir
}

func read(t *testing.T, dir string) *Dir {
	t.Helper()
	d, err := ReadDir(dir)
	if err != nil {
		t.Fatalf("read %s: %v", dir, err)
	}
	return d
}

func up(t *testing.T, db *database.DB, dir string) *Report {
	t.Helper()
	r, err := Up(context.Background(), db, read(t, dir), UpOptions{LockTimeout: 10 * time.Second})
	if err != nil {
		t.Fatalf("up: %v", err)
	}
	return r
}

func wantCode(t *testing.T, err error, code report.Code) *report.Error {
	t.Helper()
	var e *report.Error
	if !errors.As(err, &e) || e.Code != code {
		t.Fatalf("want error code %s, got %v", code, err)
	}
	return e
}

func versions(vs []Version) []int64 {
	out := make([]int64, len(vs))
	for i, v := range vs {
		out[i] = v.Version
	}
	return out
}

func tables(t *testing.T, db *database.DB) string {
	t.Helper()
	var s string
	if err := db.QueryRow(`SELECT coalesce(string_agg(table_name, ',' ORDER BY table_name), '') FROM information_schema.tables WHERE table_schema='public'`).Scan(&s); err != nil {
		t.Fatal(err)
	}
	return s
}

var three = map[string]string{
	"0000000001_customers.up.sql":   "CREATE TABLE customers (id bigserial PRIMARY KEY, email text);\n",
	"0000000001_customers.down.sql": "DROP TABLE customers;\n",
	"0000000002_orders.up.sql":      "CREATE TABLE orders (id bigserial PRIMARY KEY, customer_id bigint REFERENCES customers(id));\n",
	"0000000003_email_index.up.sql": "CREATE INDEX customers_email ON customers (email);\n",
}

func with(base map[string]string, name, text string) map[string]string {
	m := map[string]string{}
	for k, v := range base {
		m[k] = v
	}
	if text == "" {
		delete(m, name)
	} else {
		m[name] = text
	}
	return m
}

func TestMigrations(t *testing.T) {
	f := &fixture{pg: testenv.StartPostgres(t)}
	ctx := context.Background()

	t.Run("up to a version leaves the later ones pending", func(t *testing.T) {
		db := f.db(t)
		dir := migrations(t, three)
		if _, err := Up(ctx, db, read(t, dir), UpOptions{LockTimeout: 5 * time.Second, To: 2, ExpectSequence: []int64{1, 2, 3}}); err == nil {
			t.Fatal("up --to 2 expecting 1,2,3 ran; want the sequence refused")
		}
		r, err := Up(ctx, db, read(t, dir), UpOptions{LockTimeout: 5 * time.Second, To: 2, ExpectSequence: []int64{1, 2}})
		if err != nil || r.Status != Applied || !slices.Equal(versions(r.AppliedNow), []int64{1, 2}) || r.Current != 2 || !slices.Equal(versions(r.Pending), []int64{3}) {
			t.Fatalf("up --to 2: %+v %v", r, err)
		}
		r, err = Up(ctx, db, read(t, dir), UpOptions{LockTimeout: 5 * time.Second, To: 2, ExpectSequence: []int64{}})
		if err != nil || r.Status != UpToDate || len(r.AppliedNow) != 0 {
			t.Fatalf("up --to 2 again: %+v %v", r, err)
		}
	})

	t.Run("fresh apply, then up to date", func(t *testing.T) {
		db := f.db(t)
		dir := migrations(t, three)
		st, err := Status(ctx, db, read(t, dir))
		if err != nil || st.Status != Pending || !slices.Equal(versions(st.Pending), []int64{1, 2, 3}) {
			t.Fatalf("status before: %+v %v", st, err)
		}
		r := up(t, db, dir)
		if r.Status != Applied || !slices.Equal(versions(r.AppliedNow), []int64{1, 2, 3}) || len(r.Pending) != 0 || r.Current != 3 || len(r.History) != 3 {
			t.Fatalf("up: %+v", r)
		}
		if r.History[1].Checksum != read(t, dir).Migrations[1].Checksum || r.History[1].Dirty {
			t.Fatalf("history: %+v", r.History)
		}
		if got := tables(t, db); got != "customers,orders" {
			t.Fatalf("tables: %s", got)
		}
		r = up(t, db, dir)
		if r.Status != UpToDate || len(r.AppliedNow) != 0 {
			t.Fatalf("second up: %+v", r)
		}
		st, err = Status(ctx, db, read(t, dir))
		if err != nil || st.Status != UpToDate {
			t.Fatalf("status after: %+v %v", st, err)
		}
	})

	t.Run("a modified applied migration is refused", func(t *testing.T) {
		db := f.db(t)
		dir := migrations(t, three)
		up(t, db, dir)
		edited := filepath.Join(dir, "0000000002_orders.up.sql")
		os.WriteFile(edited, []byte("CREATE TABLE orders (id int);\n"), 0o644)
		_, err := ReadDir(dir)
		wantCode(t, err, report.ChecksumMismatch)
		Hash(dir)
		_, err = Up(ctx, db, read(t, dir), UpOptions{LockTimeout: time.Second})
		if e := wantCode(t, err, report.HistoryModified); !strings.Contains(e.Message, "migration 2") {
			t.Fatalf("message: %s", e.Message)
		}
		_, err = Status(ctx, db, read(t, dir))
		wantCode(t, err, report.HistoryModified)
	})

	t.Run("a missing, out-of-order or dirty history is refused", func(t *testing.T) {
		db := f.db(t)
		up(t, db, migrations(t, with(three, "0000000003_email_index.up.sql", "")))
		_, err := Up(ctx, db, read(t, migrations(t, with(three, "0000000002_orders.up.sql", ""))), UpOptions{LockTimeout: time.Second})
		wantCode(t, err, report.HistoryMissing)

		db = f.db(t)
		up(t, db, migrations(t, with(three, "0000000002_orders.up.sql", "")))
		_, err = Up(ctx, db, read(t, migrations(t, three)), UpOptions{LockTimeout: time.Second})
		wantCode(t, err, report.OutOfOrder)

		db = f.db(t)
		dir := migrations(t, three)
		up(t, db, dir)
		if _, err := db.Exec(`UPDATE ptah.migration_revisions SET dirty = true WHERE version = 3`); err != nil {
			t.Fatal(err)
		}
		_, err = Up(ctx, db, read(t, dir), UpOptions{LockTimeout: time.Second})
		wantCode(t, err, report.Dirty)
	})

	t.Run("a failing migration in the middle is Partial, exactly", func(t *testing.T) {
		db := f.db(t)
		files := with(with(three, "0000000003_email_index.up.sql", ""), "0000000003_broken.up.sql", "ALTER TABLE orders ADD COLUMN note text;\n\nALTER TABLE nosuch ADD COLUMN x int;\n")
		files = with(files, "0000000004_later.up.sql", "CREATE TABLE later (id int);\n")
		dir := migrations(t, files)
		r, err := Up(ctx, db, read(t, dir), UpOptions{LockTimeout: time.Second})
		e := wantCode(t, err, report.Execution)
		if !strings.Contains(e.Message, "0000000003_broken.up.sql:3") || !strings.Contains(e.Message, "nosuch") {
			t.Fatalf("message: %s", e.Message)
		}
		if r.Status != Partial || !slices.Equal(versions(r.AppliedNow), []int64{1, 2}) || r.FailedVersion.Version != 3 ||
			!slices.Equal(versions(r.Pending), []int64{3, 4}) || r.Current != 2 || len(r.History) != 2 {
			t.Fatalf("report: %+v", r)
		}
		var notes int
		db.QueryRow(`SELECT count(*) FROM information_schema.columns WHERE table_name='orders' AND column_name='note'`).Scan(&notes)
		if notes != 0 || tables(t, db) != "customers,orders" {
			t.Fatalf("the failed migration left changes: note columns %d, tables %s", notes, tables(t, db))
		}
		os.WriteFile(filepath.Join(dir, "0000000003_broken.up.sql"), []byte("ALTER TABLE orders ADD COLUMN note text;\nALTER TABLE orders ADD COLUMN oops int,,;\n"), 0o644)
		// PostgreSQL's parser refuses the syntax error at hash already, and
		// at up (a checksum file written by hand) before anything runs.
		_, err = Hash(dir)
		if e := wantCode(t, err, report.Parse); !strings.Contains(e.Message, "0000000003_broken.up.sql:2") {
			t.Fatalf("hash: syntax error message: %s", e.Message)
		}
		writeSum(t, dir)
		r, err = Up(ctx, db, read(t, dir), UpOptions{LockTimeout: time.Second})
		if e := wantCode(t, err, report.Parse); !strings.Contains(e.Message, "0000000003_broken.up.sql:2") {
			t.Fatalf("syntax error message: %s", e.Message)
		}
		// Nothing committed in this run: Failed, and the history is clean for a fixed retry.
		if r.Status != Failed || len(r.AppliedNow) != 0 || len(r.History) != 2 {
			t.Fatalf("retry report: %+v", r)
		}
		os.WriteFile(filepath.Join(dir, "0000000003_broken.up.sql"), []byte("ALTER TABLE orders ADD COLUMN note text;\n"), 0o644)
		Hash(dir)
		if r := up(t, db, dir); r.Status != Applied || !slices.Equal(versions(r.AppliedNow), []int64{3, 4}) {
			t.Fatalf("after the fix: %+v", r)
		}
	})

	t.Run("a lock held by another session times out", func(t *testing.T) {
		db := f.db(t)
		holder, err := db.Conn(ctx)
		if err != nil {
			t.Fatal(err)
		}
		defer holder.Close()
		if _, err := holder.ExecContext(ctx, "SELECT pg_advisory_lock($1)", database.LockKey); err != nil {
			t.Fatal(err)
		}
		dir := migrations(t, three)
		_, err = Up(ctx, db, read(t, dir), UpOptions{LockTimeout: 300 * time.Millisecond})
		wantCode(t, err, report.LockTimeout)
		if got := tables(t, db); got != "" {
			t.Fatalf("migrations ran without the lock: %s", got)
		}
		// A reading under the lock waits for the run that holds it, and
		// gives up rather than report a history a run is still writing.
		_, err = StatusLocked(ctx, db, read(t, dir), 300*time.Millisecond)
		wantCode(t, err, report.LockTimeout)
		if st, err := Status(ctx, db, read(t, dir)); err != nil || st.Status != Pending {
			t.Fatalf("a reading without the lock: %+v %v", st, err)
		}
		holder.ExecContext(ctx, "SELECT pg_advisory_unlock($1)", database.LockKey)
		up(t, db, dir)
		if st, err := StatusLocked(ctx, db, read(t, dir), 300*time.Millisecond); err != nil || st.Status != UpToDate {
			t.Fatalf("a reading under the free lock: %+v %v", st, err)
		}
	})

	t.Run("concurrent runs are serialised by the lock", func(t *testing.T) {
		db := f.db(t)
		dir := read(t, migrations(t, three))
		reports := make([]*Report, 3)
		errs := make([]error, 3)
		var wg sync.WaitGroup
		for i := range reports {
			wg.Add(1)
			go func() {
				defer wg.Done()
				reports[i], errs[i] = Up(ctx, db, dir, UpOptions{LockTimeout: 30 * time.Second})
			}()
		}
		wg.Wait()
		statuses := map[string]int{}
		for i, r := range reports {
			if errs[i] != nil {
				t.Fatalf("run %d: %v", i, errs[i])
			}
			statuses[r.Status]++
		}
		if statuses[Applied] != 1 || statuses[UpToDate] != 2 {
			t.Fatalf("statuses %v, want one Applied and two UpToDate", statuses)
		}
	})

	t.Run("a connection lost mid-migration is Unknown, then dirty", func(t *testing.T) {
		db := f.db(t)
		dir := read(t, migrations(t, with(with(three, "0000000003_email_index.up.sql", ""), "0000000002_orders.up.sql", "SELECT pg_sleep(60);\n")))
		go func() {
			// Kill the backend running the migration, as a failover would.
			for range 200 {
				var n int
				row := db.QueryRow(`SELECT count(pg_terminate_backend(pid)) FROM pg_stat_activity WHERE query LIKE 'SELECT pg_sleep(60)%' AND pid <> pg_backend_pid()`)
				if row.Scan(&n) == nil && n > 0 {
					return
				}
				time.Sleep(50 * time.Millisecond)
			}
		}()
		r, err := Up(ctx, db, dir, UpOptions{LockTimeout: 10 * time.Second})
		wantCode(t, err, report.Connection)
		if r.Status != Unknown || r.FailedVersion.Version != 2 || !slices.Equal(versions(r.AppliedNow), []int64{1}) {
			t.Fatalf("report: %+v", r)
		}
		_, err = Up(ctx, db, dir, UpOptions{LockTimeout: 10 * time.Second})
		wantCode(t, err, report.Dirty)
	})

	t.Run("expect-sequence refuses another pending set", func(t *testing.T) {
		db := f.db(t)
		dir := migrations(t, three)
		_, err := Up(ctx, db, read(t, dir), UpOptions{LockTimeout: time.Second, ExpectSequence: []int64{1, 2}})
		wantCode(t, err, report.SequenceMismatch)
		if got := tables(t, db); got != "" {
			t.Fatalf("refused run applied: %s", got)
		}
		r, err := Up(ctx, db, read(t, dir), UpOptions{LockTimeout: time.Second, ExpectSequence: []int64{1, 2, 3}})
		if err != nil || r.Status != Applied {
			t.Fatalf("approved run: %+v %v", r, err)
		}
		// The approved versions were applied since (by the run above, as by
		// a person's up): a second run of the same approval runs nothing.
		r, err = Up(ctx, db, read(t, dir), UpOptions{LockTimeout: time.Second, ExpectSequence: []int64{1, 2, 3}})
		if err != nil || r.Status != UpToDate || len(r.AppliedNow) != 0 || r.Current != 3 {
			t.Fatalf("the approved run again: %+v %v", r, err)
		}
		var rows int
		if err := db.QueryRow("SELECT count(*) FROM ptah.migration_revisions").Scan(&rows); err != nil || rows != 3 {
			t.Fatalf("%d history rows after the approved run again (%v), want 3", rows, err)
		}
	})
}

func TestReadDirRefusesBadNames(t *testing.T) {
	dir := t.TempDir()
	os.WriteFile(filepath.Join(dir, "create.sql"), []byte("SELECT 1;"), 0o644)
	_, err := Hash(dir)
	wantCode(t, err, report.Parse)
	_, err = ReadDir(t.TempDir())
	wantCode(t, err, report.ChecksumMismatch)
	zero := t.TempDir()
	os.WriteFile(filepath.Join(zero, "0000_zero.up.sql"), []byte("SELECT 1;"), 0o644)
	_, err = Hash(zero)
	wantCode(t, err, report.Parse)
}
