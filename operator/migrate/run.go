package migrate

import (
	"context"
	"database/sql"
	"errors"
	"fmt"
	"slices"
	"strings"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgconn"

	"ptah.run/operator/operator/catalogread"
	"ptah.run/operator/operator/database"
	"ptah.run/operator/operator/report"
	"ptah.run/operator/operator/sqlsplit"
)

// The revision table lives in its own schema, outside the managed one.
const (
	revisionSchema = "ptah"
	revisionTable  = "ptah.migration_revisions"
)

// Outcome of `ptah migrations up`, and of `status` (UpToDate or Pending).
const (
	Applied  = "Applied"  // every pending migration was committed
	UpToDate = "UpToDate" // nothing was pending
	Pending  = "Pending"  // status only: some migrations wait
	Failed   = "Failed"   // a migration failed before any other was committed
	Partial  = "Partial"  // some migrations were committed, then one failed
	Unknown  = "Unknown"  // the connection was lost where a commit may or may not have happened
)

// Revision is a row of the revision table.
type Revision struct {
	Version   int64     `json:"version"`
	Name      string    `json:"name"`
	Checksum  string    `json:"checksum"`
	AppliedAt time.Time `json:"appliedAt"`
	Dirty     bool      `json:"dirty"`
}

// Version names one migration.
type Version struct {
	Version int64  `json:"version"`
	Name    string `json:"name"`
}

// Report is what status and up print.
type Report struct {
	Status string `json:"status"`
	// Current is the highest applied version, 0 when none.
	Current int64 `json:"current"`
	// AppliedNow lists what this run committed, in order.
	AppliedNow []Version `json:"appliedNow"`
	// FailedVersion is the migration that failed, when one did.
	FailedVersion *Version   `json:"failedVersion,omitempty"`
	Pending       []Version  `json:"pending"`
	History       []Revision `json:"history"`
}

// Status reads the revision table and checks it against dir.
func Status(ctx context.Context, db *database.DB, dir *Dir) (*Report, error) {
	return StatusLocked(ctx, db, dir, 0)
}

// StatusLocked is Status read under the ptah writer lock, granted within
// lockTimeout (none is taken when it is 0): no run is in progress while it
// reads, so the history it reports is all that any earlier run committed.
// A run whose process died still holds the lock until PostgreSQL ends its
// session, and the reading waits for that or gives up.
func StatusLocked(ctx context.Context, db *database.DB, dir *Dir, lockTimeout time.Duration) (*Report, error) {
	conn, err := db.Conn(ctx)
	if err != nil {
		return nil, database.StatementError(db.Target, "connect", err)
	}
	defer conn.Close()
	if lockTimeout > 0 {
		if err := database.LockSession(ctx, conn, db.Target, lockTimeout); err != nil {
			return nil, err
		}
		defer conn.ExecContext(context.WithoutCancel(ctx), catalogread.WriterUnlock, database.LockKey)
	}
	history, err := readHistory(ctx, conn, db.Target)
	if err != nil {
		return nil, err
	}
	r, pending := newReport(dir, history)
	if err := checkHistory(dir, history, pending); err != nil {
		return r, err
	}
	// Applied files are held to their checksums; pending ones to what Up
	// would refuse, so that a plan is never made of a run refused later.
	if len(pending) > 0 {
		r.Status = Pending
	}
	if _, err := checkPending(pending); err != nil {
		return r, err
	}
	return r, nil
}

// UpOptions bound a run.
type UpOptions struct {
	LockTimeout time.Duration
	// ExpectSequence, when not nil, is the pending versions the caller
	// approved; any other pending set is refused before anything runs.
	ExpectSequence []int64
	// To, when above 0, is the last version to apply: versions above it
	// stay pending and are not part of the run (up --to).
	To int64
}

// Up applies the pending migrations of dir in order, each in its own
// transaction, under the ptah writer lock. A migration that is a single
// statement PostgreSQL refuses in a transaction block (CREATE INDEX
// CONCURRENTLY, VACUUM, ...) runs on its own instead. Every pending
// migration is checked before the first runs, and any refusal refuses the
// whole run. The report is returned with the error too, saying exactly
// which versions were committed.
func Up(ctx context.Context, db *database.DB, dir *Dir, opts UpOptions) (*Report, error) {
	conn, err := db.Conn(ctx)
	if err != nil {
		return nil, database.StatementError(db.Target, "connect", err)
	}
	defer conn.Close()
	if err := database.LockSession(ctx, conn, db.Target, opts.LockTimeout); err != nil {
		return nil, err
	}
	defer conn.ExecContext(context.WithoutCancel(ctx), catalogread.WriterUnlock, database.LockKey)
	for _, q := range []string{
		"CREATE SCHEMA IF NOT EXISTS " + revisionSchema,
		"CREATE TABLE IF NOT EXISTS " + revisionTable + " (version bigint PRIMARY KEY, name text NOT NULL, checksum text NOT NULL, applied_at timestamptz NOT NULL DEFAULT now(), dirty boolean NOT NULL DEFAULT false)",
	} {
		if _, err := conn.ExecContext(ctx, q); err != nil {
			return nil, database.StatementError(db.Target, "create the revision table "+revisionTable, err)
		}
	}
	history, err := readHistory(ctx, conn, db.Target)
	if err != nil {
		return nil, err
	}
	r, pending := newReport(dir, history)
	if err := checkHistory(dir, history, pending); err != nil {
		return r, err
	}
	if opts.To > 0 {
		pending = slices.DeleteFunc(pending, func(m Migration) bool { return m.Version > opts.To })
	}
	// Nothing pending runs nothing, whatever was approved: the approved
	// versions are in the history with the checksums checked above (someone
	// applied them since the plan), and the run is UpToDate.
	if len(pending) == 0 {
		r.Status = UpToDate
		return r, nil
	}
	if opts.ExpectSequence != nil {
		got := make([]int64, len(pending))
		for i, m := range pending {
			got[i] = m.Version
		}
		if !slices.Equal(got, opts.ExpectSequence) {
			return r, report.Errorf(report.SequenceMismatch, "the pending migrations are %s, not the approved %s; nothing was applied", joinVersions(got), joinVersions(opts.ExpectSequence))
		}
	}
	// Every migration of the run is checked before the first one runs.
	scripts, err := checkPending(pending)
	if err != nil {
		r.Status = Failed
		return r, err
	}
	for i, m := range pending {
		status, err := applyOne(ctx, conn, db.Target, m, scripts[i])
		if err == nil {
			r.AppliedNow = append(r.AppliedNow, Version{m.Version, m.Name})
			r.Pending = r.Pending[1:]
			r.Current = m.Version
			continue
		}
		r.FailedVersion = &Version{m.Version, m.Name}
		switch {
		case status == Unknown:
			r.Status = Unknown
		case len(r.AppliedNow) > 0:
			r.Status = Partial
		default:
			r.Status = Failed
		}
		if h, herr := readHistory(ctx, conn, db.Target); herr == nil {
			r.History = h
		}
		return r, err
	}
	r.Status = Applied
	r.History, err = readHistory(ctx, conn, db.Target)
	return r, err
}

// applyOne pins the settings PostgreSQL reads SQL text under to those the
// parser read m with (a migration before it may have changed them), marks
// m dirty, runs it and its revision update in one transaction, and removes
// the mark if it failed. A dirty row left behind means the process died
// between the two, and whether m took effect is for a person to find out.
// A migration that is one statement PostgreSQL refuses in a transaction
// block runs on its own instead (applyAlone).
//
// The session sees, for m: the pinning, the dirty row's INSERT, BEGIN, the
// script in one Query message, the row's UPDATE and COMMIT; or, once
// anything fails, ROLLBACK and the row's DELETE. Nothing else runs in the
// transaction, and nothing of the script runs twice.
func applyOne(ctx context.Context, conn *sql.Conn, target string, m Migration, s script) (status string, err error) {
	status, err = Unknown, nil
	rerr := database.WithPgx(conn, func(c *pgx.Conn) error {
		status, err = apply(ctx, c, target, m, s)
		return nil
	})
	if rerr != nil {
		return Failed, database.StatementError(target, fmt.Sprintf("run migration %d", m.Version), rerr)
	}
	return status, err
}

func apply(ctx context.Context, c *pgx.Conn, target string, m Migration, s script) (string, error) {
	if _, err := c.Exec(ctx, sqlsplit.Pin()); err != nil {
		return Failed, database.StatementError(target, fmt.Sprintf("set %s before migration %d", pinnedList(), m.Version), err)
	}
	if _, err := c.Exec(ctx, "INSERT INTO "+revisionTable+" (version, name, checksum, dirty) VALUES ($1, $2, $3, true)", m.Version, m.Name, m.Checksum); err != nil {
		return Failed, database.StatementError(target, fmt.Sprintf("record migration %d as started", m.Version), err)
	}
	if s.mode == alone {
		return applyAlone(ctx, c, target, m, s)
	}
	// rolledBack ends a transaction that failed, then describes why:
	// PostgreSQL answered with an error, so nothing of it is committed once
	// ROLLBACK is sent (or once the session ends, if that is lost too).
	rolledBack := func(describe func() *report.Error) (string, error) {
		_, rerr := c.Exec(context.WithoutCancel(ctx), "ROLLBACK")
		e := describe()
		e.Message += fmt.Sprintf("; its transaction was rolled back, so nothing of migration %d was committed", m.Version)
		if rerr != nil {
			e.Message += fmt.Sprintf(" (PostgreSQL ends it with the session), but the session was lost before its started mark in %s could be removed, so its history row stays dirty", revisionTable)
			return Unknown, e
		}
		return clearMark(ctx, c, target, m, e)
	}
	if _, err := c.Exec(ctx, "BEGIN"); err != nil {
		return rolledBack(func() *report.Error { return database.StatementError(target, "begin", err) })
	}
	if err := database.ExecScript(ctx, c.PgConn(), s.text); err != nil {
		var failure *database.ScriptFailure
		if !errors.As(err, &failure) {
			// No COMMIT was sent: PostgreSQL rolls the transaction back
			// when it finds the session gone, but the row stays dirty.
			e := database.ScriptError(err, target, m.path, s.text, s.stmts, report.Execution)
			e.Message += fmt.Sprintf("; no COMMIT was sent, so PostgreSQL rolls its transaction back, but its started mark in %s stays: the history row of migration %d is dirty", revisionTable, m.Version)
			return Unknown, e
		}
		// The line is found after ROLLBACK: for a file not parsed before,
		// finding it starts the parser, and its transaction holds locks.
		return rolledBack(func() *report.Error {
			return database.ScriptError(err, target, m.path, s.text, s.stmts, report.Execution)
		})
	}
	if _, err := c.Exec(ctx, "UPDATE "+revisionTable+" SET dirty = false, applied_at = now() WHERE version = $1", m.Version); err != nil {
		e := database.StatementError(target, fmt.Sprintf("record migration %d as applied", m.Version), err)
		if e.Code == report.Connection {
			return Unknown, e
		}
		return rolledBack(func() *report.Error { return e })
	}
	tag, err := c.Exec(ctx, "COMMIT")
	var pgErr *pgconn.PgError
	switch {
	case errors.As(err, &pgErr) && pgErr.Severity == "ERROR":
		// An error at COMMIT (a deferred constraint, a serialization
		// failure) aborts the transaction: nothing of it is committed. The
		// server ending the session there (FATAL) leaves it unknown.
		return clearMark(ctx, c, target, m, report.Errorf(report.Execution, "%s: commit migration %d on %s: %s (SQLSTATE %s); its transaction was rolled back, so nothing of migration %d was committed", m.path, m.Version, target, pgErr.Message, pgErr.Code, m.Version))
	case err != nil:
		return Unknown, database.StatementError(target, fmt.Sprintf("commit migration %d", m.Version), err)
	case tag.String() != "COMMIT":
		return clearMark(ctx, c, target, m, report.Errorf(report.Execution, "%s: PostgreSQL answered COMMIT of migration %d with %s; nothing of it was committed", m.path, m.Version, tag))
	}
	return Applied, nil
}

// clearMark deletes the started mark of m, which failed with e and left
// nothing committed: the version is Failed and has no history row. When
// the mark cannot be deleted, it stays dirty, and the outcome is Unknown.
func clearMark(ctx context.Context, c *pgx.Conn, target string, m Migration, e *report.Error) (string, error) {
	if _, err := c.Exec(context.WithoutCancel(ctx), "DELETE FROM "+revisionTable+" WHERE version = $1 AND dirty", m.Version); err != nil {
		ce := database.StatementError(target, fmt.Sprintf("clear the started mark of migration %d", m.Version), err)
		ce.Message = e.Message + "; then " + ce.Message + ", so its history row stays dirty"
		return Unknown, ce
	}
	e.Message += "; its history row was removed"
	return Failed, e
}

// applyAlone runs a migration whose single statement cannot run in a
// transaction block, between its dirty row and the row's clearing. The
// statement commits by itself or, when PostgreSQL refuses it, rolls back by
// itself: then the row is deleted and the version is Failed. Only an answer
// lost on the way (the statement may have finished) leaves the row dirty.
func applyAlone(ctx context.Context, c *pgx.Conn, target string, m Migration, s script) (string, error) {
	if err := database.ExecScript(ctx, c.PgConn(), s.text); err != nil {
		e := database.ScriptError(err, target, m.path, s.text, s.stmts, report.Execution)
		if e.Code == report.Connection {
			e.Message = fmt.Sprintf("run %s (%s, outside a transaction) on %s: the connection failed", m.path, s.stmt, target)
			return Unknown, e
		}
		hint := ""
		if s.stmt == "CREATE INDEX CONCURRENTLY" || s.stmt == "REINDEX CONCURRENTLY" {
			hint = "; a failed concurrent build can leave an INVALID index behind (pg_index.indisvalid false): drop it before retrying"
		}
		e.Message += fmt.Sprintf("; %s ran outside a transaction, as PostgreSQL requires, and PostgreSQL rolled it back%s", s.stmt, hint)
		if _, cerr := c.Exec(context.WithoutCancel(ctx), "DELETE FROM "+revisionTable+" WHERE version = $1 AND dirty", m.Version); cerr != nil {
			// The session is gone (terminated, failed over): its row stays.
			ce := database.StatementError(target, fmt.Sprintf("clear the started mark of migration %d", m.Version), cerr)
			ce.Message = e.Message + "; then " + ce.Message + ", so its row stays dirty"
			return Unknown, ce
		}
		return Failed, e
	}
	if _, err := c.Exec(ctx, "UPDATE "+revisionTable+" SET dirty = false, applied_at = now() WHERE version = $1", m.Version); err != nil {
		// The statement committed; its row says only that it started.
		return Unknown, database.StatementError(target, fmt.Sprintf("record migration %d as applied after %s committed", m.Version, s.stmt), err)
	}
	return Applied, nil
}

func readHistory(ctx context.Context, conn *sql.Conn, target string) ([]Revision, error) {
	var exists bool
	if err := conn.QueryRowContext(ctx, catalogread.RevisionTableSeen, revisionTable).Scan(&exists); err != nil {
		return nil, database.StatementError(target, "look for the revision table", err)
	}
	history := []Revision{}
	if !exists {
		return history, nil
	}
	rows, err := conn.QueryContext(ctx, catalogread.RevisionHistory)
	if err != nil {
		return nil, database.StatementError(target, "read "+revisionTable, err)
	}
	defer rows.Close()
	for rows.Next() {
		var r Revision
		if err := rows.Scan(&r.Version, &r.Name, &r.Checksum, &r.AppliedAt, &r.Dirty); err != nil {
			return nil, database.StatementError(target, "read "+revisionTable, err)
		}
		r.AppliedAt = r.AppliedAt.UTC()
		history = append(history, r)
	}
	if err := rows.Err(); err != nil {
		return nil, database.StatementError(target, "read "+revisionTable, err)
	}
	return history, nil
}

func newReport(dir *Dir, history []Revision) (*Report, []Migration) {
	applied := map[int64]bool{}
	r := &Report{Status: UpToDate, AppliedNow: []Version{}, Pending: []Version{}, History: history}
	for _, h := range history {
		applied[h.Version] = true
		r.Current = max(r.Current, h.Version)
	}
	var pending []Migration
	for _, m := range dir.Migrations {
		if !applied[m.Version] {
			pending = append(pending, m)
			r.Pending = append(r.Pending, Version{m.Version, m.Name})
		}
	}
	return r, pending
}

// checkHistory refuses a revision table that does not describe a prefix of dir.
func checkHistory(dir *Dir, history []Revision, pending []Migration) error {
	files := map[int64]Migration{}
	for _, m := range dir.Migrations {
		files[m.Version] = m
	}
	var newest int64
	for _, h := range history {
		m, ok := files[h.Version]
		switch {
		case h.Dirty:
			return report.Errorf(report.Dirty, "migration %d (%s) was started and never recorded as finished; check whether it took effect, then fix or delete its row in %s", h.Version, h.Name, revisionTable)
		case !ok:
			return report.Errorf(report.HistoryMissing, "migration %d (%s) was applied but has no file in %s", h.Version, h.Name, dir.Path)
		case m.Checksum != h.Checksum:
			return report.Errorf(report.HistoryModified, "migration %d was applied with checksum %s but %s now has %s; an applied migration must not change, add a new one", h.Version, h.Checksum, m.path, m.Checksum)
		}
		newest = max(newest, h.Version)
	}
	for _, m := range pending {
		if m.Version < newest {
			return report.Errorf(report.OutOfOrder, "migration %d (%s) is pending but older than the applied %d; renumber it after %d", m.Version, m.File, newest, newest)
		}
	}
	return nil
}

func joinVersions(vs []int64) string {
	if len(vs) == 0 {
		return "none"
	}
	s := make([]string, len(vs))
	for i, v := range vs {
		s[i] = fmt.Sprint(v)
	}
	return strings.Join(s, ",")
}
