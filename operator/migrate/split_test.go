package migrate

import (
	"context"
	"fmt"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/jackc/pgx/v5"

	"ptah.run/operator/operator/report"
)

// runCase is a run of migration files on a case database, with what
// PostgreSQL's statement log shows of it.
type runCase struct {
	name string
	// settings are the database's defaults, which every session on it
	// starts with (ALTER DATABASE ... SET).
	settings []string
	files    []string // versions 1, 2 ...
	// sent is what the server must receive of each version, when not its
	// file (a BEGIN ... COMMIT wrapper blanked out).
	sent []string
	// fast says whether the last file must skip the parser (special does
	// not match it) or be parsed.
	fast bool

	status  string      // the report's status
	code    report.Code // the error's code, "" for none
	message []string    // in the error's message
	rows    string      // the planted table's rows after the run
	objects string      // what else exists after the run
	history string
}

func versionFile(v int) string { return fmt.Sprintf("%04d_v%d.up.sql", v, v) }

// check runs c and holds the run to the log: a refusal sent nothing of any
// migration; otherwise each version that ran is one transaction holding
// its script in one statement, ended by COMMIT, or (the last) by ROLLBACK.
func (c runCase) check(t *testing.T, srv *loggedServer) {
	t.Helper()
	db := srv.db(t, c.settings...)
	defer db.drop(t)
	files := map[string]string{}
	for i, text := range c.files {
		files[versionFile(i+1)] = text
	}
	if got := !special.MatchString(c.files[len(c.files)-1]); got != c.fast {
		t.Fatalf("special matches the last file: %t, want %t", !got, !c.fast)
	}
	dir := handHashed(t, files)
	offset := srv.logSize(t)
	r, err := Up(context.Background(), db.DB, read(t, dir), UpOptions{LockTimeout: 5 * time.Second})
	entries := srv.entries(t, db.name, offset)
	items := sentOf(entries)
	if err := transactionWarnings(entries); err != nil {
		t.Error(err)
	}
	if c.code == "" && err != nil || c.code != "" && (err == nil || report.AsError(err).Code != c.code) {
		t.Fatalf("error %v, want code %q", err, c.code)
	}
	if r == nil || r.Status != c.status {
		t.Fatalf("report %+v, want status %s", r, c.status)
	}
	for _, want := range c.message {
		if !strings.Contains(report.AsError(err).Message, want) {
			t.Errorf("the message does not say %q: %s", want, report.AsError(err).Message)
		}
	}
	refused := c.code == report.NotTransactional || c.code == report.PinnedSetting || c.code == report.Parse && c.status == Failed && r.FailedVersion == nil
	if refused {
		if err := refusedBeforeRunning(items); err != nil {
			t.Errorf("%v\nlog: %+v", err, items)
		}
	} else {
		texts := slices.Clone(c.files)
		for i, s := range c.sent {
			if s != "" {
				texts[i] = s
			}
		}
		txs, err := transactions(items, texts)
		if err != nil {
			t.Fatalf("the log: %v\n%+v", err, items)
		}
		for i, tx := range txs {
			failed := r.FailedVersion != nil && r.FailedVersion.Version == int64(i+1)
			if want := map[bool]string{true: "ROLLBACK", false: "COMMIT"}[failed]; tx.end != want {
				t.Errorf("version %d ended with %s, want %s (its error: %s)", i+1, tx.end, want, tx.error)
			}
		}
		if r.FailedVersion != nil && len(txs) != int(r.FailedVersion.Version) {
			t.Errorf("%d versions ran, the report says version %d failed", len(txs), r.FailedVersion.Version)
		}
	}
	if got := db.rows(t); got != c.rows {
		t.Errorf("planted rows %q, want %q", got, c.rows)
	}
	if got := db.objects(t); got != c.objects {
		t.Errorf("objects %q, want %q", got, c.objects)
	}
	if got := db.history(t); got != c.history {
		t.Errorf("history %q, want %q", got, c.history)
	}
}

// TestTheServerRunsWhatWasChecked: a migration runs as PostgreSQL's parser
// read it, whatever a second lexer or the session's settings would have
// made of it, with PostgreSQL's statement log as the oracle. The cases a
// split by another lexer, or a session under other settings, got wrong:
// a nested comment, standard_conforming_strings off, backslash_quote off,
// a client_encoding changed by an earlier migration.
func TestTheServerRunsWhatWasChecked(t *testing.T) {
	srv := startLogged(t)
	const committing = "SELECT set_config(lower('STANDARD_CONFORMING_STRINGS'), 'off', false), set_config(lower('BACKSLASH_QUOTE'), 'off', false), set_config(lower('CLIENT_ENCODING'), 'LATIN1', false);\n"
	for _, c := range []runCase{
		{name: "a nested comment holding a COMMIT is one comment",
			files:  []string{"INSERT INTO planted VALUES (10, 'ten');\n/* /* */ ; COMMIT; */\nSELECT 1/0;\n"},
			status: Failed, code: report.Execution, rows: plantedRows,
			message: []string{versionFile(1) + ":3: division by zero (SQLSTATE 22012); its transaction was rolled back, so nothing of migration 1 was committed; its history row was removed"}},
		{name: "a nested comment, not parsed (no special word)", fast: true,
			files:  []string{"INSERT INTO planted VALUES (10, 'ten');\n/* /* */ ; DROP TABLE planted; */\nCREATE TABLE made (id int);\nSELECT 1/0;\n"},
			status: Failed, code: report.Execution, rows: plantedRows, message: []string{versionFile(1) + ":4: division by zero"}},
		{name: "standard_conforming_strings off by default: a COMMIT read out of a string", settings: []string{"standard_conforming_strings=off"},
			files:  []string{"INSERT INTO planted VALUES (10, 'ten');\nSELECT 'a\\', '; COMMIT; --';\nSELECT 1/0;\n"},
			status: Failed, code: report.Execution, rows: plantedRows, message: []string{versionFile(1) + ":3: division by zero"}},
		{name: "standard_conforming_strings off by default, the brief's text", settings: []string{"standard_conforming_strings=off"},
			files:  []string{"INSERT INTO planted VALUES (10, 'ten');\nSELECT 'a\\'; SELECT ' COMMIT; --';\nSELECT 1/0;\n"},
			status: Failed, code: report.Execution, rows: plantedRows, message: []string{versionFile(1) + ":3: division by zero"}},
		{name: "backslash_quote off by default: E'\\'' reads as the parser reads it", settings: []string{"backslash_quote=off"},
			files:  []string{"INSERT INTO planted VALUES (10, E'it\\'s');\n"},
			status: Applied, rows: plantedRows + ",10:it's", history: "1"},
		{name: "the settings changed at run time by a migration are pinned again for the next",
			files:  []string{committing, "INSERT INTO planted VALUES (10, E'it\\'s é');\nSELECT 'a\\', '; COMMIT; --';\nSELECT 1/0;\n"},
			status: Partial, code: report.Execution, rows: plantedRows, history: "1", message: []string{versionFile(2) + ":3: division by zero"}},
		{name: "the settings changed at run time, then a migration that commits",
			files:  []string{committing, "INSERT INTO planted VALUES (10, E'it\\'s é'), (11, 'a\\');\n"},
			status: Applied, rows: plantedRows + ",10:it's é,11:a\\", history: "1 2"},
		{name: "a setting changed at run time in the file changes nothing of how it is read",
			files:  []string{"SELECT set_config(lower('STANDARD_CONFORMING_STRINGS'), 'off', true);\nINSERT INTO planted VALUES (10, 'ten');\nSELECT 'a\\', '; COMMIT; --';\nSELECT 1/0;\n"},
			status: Failed, code: report.Execution, rows: plantedRows, message: []string{versionFile(1) + ":4: division by zero"}},
		{name: "a deferred constraint fails at COMMIT: rolled back, not unknown",
			files:  []string{"CREATE TABLE d (id int UNIQUE DEFERRABLE INITIALLY DEFERRED);\nINSERT INTO d VALUES (1), (1);\nINSERT INTO planted VALUES (10, 'ten');\n"},
			status: Failed, code: report.Execution, rows: plantedRows, fast: true,
			message: []string{"commit migration 1", "duplicate key value violates unique constraint", "its transaction was rolled back, so nothing of migration 1 was committed; its history row was removed"}},
		{name: "a syntax error not parsed before the run runs nothing", fast: true,
			files:  []string{"INSERT INTO planted VALUES (10, 'ten');\nCREATE TABLE made (id int,,);\n"},
			status: Failed, code: report.Parse, rows: plantedRows, message: []string{versionFile(1) + ":2: syntax error at or near \",\""}},
		{name: "rows sent before the failing statement, and rows of the failing one", fast: true,
			files:  []string{"SELECT * FROM planted;\nINSERT INTO planted VALUES (10, 'ten');\nSELECT 2;\n\nSELECT 1/(id - 2) FROM planted;\n"},
			status: Failed, code: report.Execution, rows: plantedRows, message: []string{versionFile(1) + ":5: division by zero"}},
		{name: "a wrapped file runs its body in ptah's transaction",
			files:  []string{"BEGIN;\nINSERT INTO planted VALUES (10, 'ten');\nSELECT 1/0;\nCOMMIT;\n"},
			sent:   []string{"      \nINSERT INTO planted VALUES (10, 'ten');\nSELECT 1/0;\n       \n"},
			status: Failed, code: report.Execution, rows: plantedRows, message: []string{versionFile(1) + ":3: division by zero"}},
		{name: "SET standard_conforming_strings is refused before anything runs",
			files:  []string{"CREATE TABLE first (id int);\n", "INSERT INTO planted VALUES (10, 'ten');\nSET standard_conforming_strings = off;\n"},
			status: Failed, code: report.PinnedSetting, rows: plantedRows,
			message: []string{"migration 2 refused, so nothing was applied: ", versionFile(2) + ":2: \"SET standard_conforming_strings = off\" sets standard_conforming_strings", "remove the statement at line 2"}},
	} {
		t.Run(c.name, func(t *testing.T) { c.check(t, srv) })
	}

	// The cases are the server's: a session that is not pinned reads the
	// text otherwise, and commits half of it.
	t.Run("control: unpinned, standard_conforming_strings off commits the INSERT", func(t *testing.T) {
		db := srv.db(t, "standard_conforming_strings=off")
		defer db.drop(t)
		ctx := context.Background()
		conn, err := pgx.Connect(ctx, srv.pg.URL("owner", "owner-pw", db.name))
		if err != nil {
			t.Fatal(err)
		}
		defer conn.Close(ctx)
		conn.Exec(ctx, "BEGIN")
		_, err = conn.Exec(ctx, "INSERT INTO planted VALUES (10, 'ten');\nSELECT 'a\\', '; COMMIT; --';\nSELECT 1/0;\n")
		conn.Exec(ctx, "ROLLBACK")
		if err == nil || db.rows(t) != plantedRows+",10:ten" {
			t.Fatalf("unpinned: %v, rows %s", err, db.rows(t))
		}
	})
}
