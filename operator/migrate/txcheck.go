package migrate

import (
	"errors"
	"fmt"
	"regexp"
	"strings"

	pg "github.com/pganalyze/pg_query_go/v6"

	"ptah.run/operator/operator/report"
	"ptah.run/operator/operator/sqlsplit"
)

// How a migration runs, decided from its statements before anything runs.
type runMode int

const (
	// inTransaction: the file (or the body of its BEGIN ... COMMIT wrapper)
	// runs inside ptah's transaction, with its history row.
	inTransaction runMode = iota
	// alone: the file is one statement PostgreSQL refuses inside a
	// transaction block; it runs on its own, between the dirty row and its
	// clearing (Flyway's rule).
	alone
)

// script is a migration as it will be sent.
type script struct {
	mode runMode
	// text is what runs, sent whole in one Query message: the file, or its
	// body with the wrapper's BEGIN and COMMIT blanked out so that line
	// numbers and error positions still match the file.
	text string
	// stmts are the statements of text as PostgreSQL's parser reads them;
	// nil when the file was not parsed (special), and then split only if
	// it fails, to find the statement that failed.
	stmts []sqlsplit.Stmt
	// stmt names the lone statement of an alone script, for messages.
	stmt string
}

// prepare reads m with PostgreSQL's own parser (libpg_query, run in
// WebAssembly so that ptah stays a static binary) and refuses what would
// break "one migration, one transaction, its history row in it": any
// transaction control but one leading BEGIN and one trailing COMMIT, a
// statement that cannot run in a transaction block mixed with others, and
// a change of a setting PostgreSQL reads the text of a migration under.
// Dollar-quoted bodies, strings and comments are the parser's business, so
// a COMMIT inside a function body is not a statement of the file.
func prepare(m Migration) (script, error) {
	stmts, err := sqlsplit.Split(m.text)
	if err != nil {
		var se *sqlsplit.SyntaxError
		if errors.As(err, &se) && se.Line > 0 {
			return script{}, report.Errorf(report.Parse, "%s:%d: %s (PostgreSQL's parser reads every pending migration before any runs)", m.path, se.Line, se.Message)
		}
		return script{}, report.Errorf(report.Parse, "%s: %v (PostgreSQL's parser reads every pending migration before any runs)", m.path, err)
	}
	text := m.text
	wrapped := false
	if n := len(stmts); n >= 2 && isPlainBegin(stmts[0].Node) && isPlainCommit(stmts[n-1].Node) {
		wrapped = true
		text = blank(blank(text, stmts[0].Start, stmts[0].Term), stmts[n-1].Start, stmts[n-1].Term)
		stmts = stmts[1 : n-1]
	}
	for _, s := range stmts {
		if what := transactionControl(s.Node); what != "" {
			return script{}, report.Errorf(report.NotTransactional,
				"%s:%d: %s: ptah runs each migration in its own transaction; remove the %s at line %d, or split the file into two migrations (a file may only be wrapped whole in one leading BEGIN and one trailing COMMIT)",
				m.path, s.Line, quote(s.Text(m.text)), what, s.Line)
		}
	}
	for _, s := range stmts {
		if what := settingChange(s.Node); what != "" {
			return script{}, report.Errorf(report.PinnedSetting,
				"%s:%d: %s %s: PostgreSQL reads the text of SQL by these settings, and ptah runs every migration as its parser reads it, under %s (set again before each migration); remove the statement at line %d (write a string with backslash escapes as E'...'; migration files are UTF-8)",
				m.path, s.Line, quote(s.Text(m.text)), what, pinnedList(), s.Line)
		}
	}
	for _, s := range stmts {
		what := outsideTransaction(s.Node)
		switch {
		case what == "":
			continue
		case wrapped:
			return script{}, report.Errorf(report.NotTransactional,
				"%s:%d: %s cannot run inside a transaction block, and the file wraps it in BEGIN ... COMMIT; remove the BEGIN and the COMMIT so that it runs on its own",
				m.path, s.Line, what)
		case len(stmts) > 1:
			return script{}, report.Errorf(report.NotTransactional,
				"%s:%d: %s cannot run inside a transaction block, so ptah runs it only as the single statement of a migration; move it to a migration of its own",
				m.path, s.Line, what)
		}
		return script{mode: alone, text: text, stmts: stmts, stmt: what}, nil
	}
	return script{mode: inTransaction, text: text, stmts: stmts}, nil
}

// special decides which files status and up read with the parser before
// the run: a text it does not match runs without being parsed (the
// parser's WebAssembly build costs a process about 1.3 s and 250 MB of
// memory the first time it parses), and runs exactly as a parsed one
// does, sent whole in one Query message. It matches, in any case, each
// word that can begin or mark a statement prepare refuses or runs alone,
// "transaction" anywhere, "U&" anywhere and any backslash.
//
// It over-approximates every refusal of prepare but one kind of syntax
// error:
//
//   - Transaction control and the statements that run alone are written
//     with a keyword of the list (BEGIN, START, COMMIT, END, ROLLBACK,
//     ABORT, SAVEPOINT, RELEASE, PREPARE; CONCURRENTLY, REINDEX, VACUUM,
//     CLUSTER, DATABASE, TABLESPACE, SYSTEM, SUBSCRIPTION, DISCARD), or set
//     a setting whose name holds "transaction" (SET TRANSACTION, SET SESSION
//     CHARACTERISTICS AS TRANSACTION, transaction_*, default_transaction_*).
//     A keyword is never quoted nor escaped and PostgreSQL folds only ASCII
//     letters, so its letters are in the text, in some case; its token ends
//     where SQL's identifier characters (letters, digits, _, $ and every
//     non-ASCII byte) end, and Go's \w is a subset of those, so \b holds on
//     both sides of it.
//   - A change of a pinned setting (settingChange) names the setting as an
//     identifier (SET, RESET) or is SET NAMES or RESET ALL, or calls
//     set_config or updates pg_settings. An identifier is its letters,
//     bare or in double quotes, or U&"..." with escapes, which "U&"
//     matches; the setting given to set_config as a string, however
//     escaped, is the parser's to read once set_config is matched.
//   - psql's meta-commands (\set, \i, \gexec ...), which PostgreSQL cannot
//     read, hold a backslash.
//
// Any other syntax error gets through: no expression tells SQL from a near
// miss. PostgreSQL then refuses the Query message whole before running any
// of it, so nothing of the file runs, and its version is Failed with its
// history row removed, as for any other error; only the versions before it
// in the same run have committed (hash, which parses every file, refuses
// it before it can be pushed).
var special = regexp.MustCompile(`(?i)\b(begin|start|commit|end|rollback|abort|savepoint|release|prepare|concurrently|reindex|vacuum|cluster|database|tablespace|system|subscription|discard|standard_conforming_strings|backslash_quote|client_encoding|names|reset|set_config|pg_settings)\b|transaction|u&|\\`)

// checkPending refuses the run when any migration of it would be refused,
// before any of them runs: an Apply never stops half way for a reason
// known in advance.
func checkPending(pending []Migration) ([]script, error) {
	scripts := make([]script, len(pending))
	for i, m := range pending {
		if !special.MatchString(m.text) {
			scripts[i] = script{mode: inTransaction, text: m.text}
			continue
		}
		s, err := prepare(m)
		if err != nil {
			e := report.AsError(err)
			e.Message = fmt.Sprintf("migration %d refused, so nothing was applied: %s", m.Version, e.Message)
			return nil, e
		}
		scripts[i] = s
	}
	return scripts, nil
}

func isPlainBegin(n *pg.Node) bool {
	t := n.GetTransactionStmt()
	return t != nil && (t.Kind == pg.TransactionStmtKind_TRANS_STMT_BEGIN || t.Kind == pg.TransactionStmtKind_TRANS_STMT_START) && len(t.Options) == 0
}

func isPlainCommit(n *pg.Node) bool {
	t := n.GetTransactionStmt()
	return t != nil && t.Kind == pg.TransactionStmtKind_TRANS_STMT_COMMIT && !t.Chain
}

// transactionControl names a statement that would end, split or reshape
// the transaction ptah runs the migration in, or the ones after it.
func transactionControl(n *pg.Node) string {
	if t := n.GetTransactionStmt(); t != nil {
		switch t.Kind {
		case pg.TransactionStmtKind_TRANS_STMT_BEGIN, pg.TransactionStmtKind_TRANS_STMT_START:
			return "BEGIN"
		case pg.TransactionStmtKind_TRANS_STMT_COMMIT:
			return "COMMIT"
		case pg.TransactionStmtKind_TRANS_STMT_ROLLBACK:
			return "ROLLBACK"
		case pg.TransactionStmtKind_TRANS_STMT_SAVEPOINT:
			return "SAVEPOINT"
		case pg.TransactionStmtKind_TRANS_STMT_RELEASE:
			return "RELEASE"
		case pg.TransactionStmtKind_TRANS_STMT_ROLLBACK_TO:
			return "ROLLBACK TO"
		case pg.TransactionStmtKind_TRANS_STMT_PREPARE:
			return "PREPARE TRANSACTION"
		case pg.TransactionStmtKind_TRANS_STMT_COMMIT_PREPARED:
			return "COMMIT PREPARED"
		case pg.TransactionStmtKind_TRANS_STMT_ROLLBACK_PREPARED:
			return "ROLLBACK PREPARED"
		}
		return "transaction statement"
	}
	if v := n.GetVariableSetStmt(); v != nil {
		name := strings.ToLower(v.Name)
		switch {
		case name == "transaction":
			return "SET TRANSACTION"
		case name == "session characteristics":
			return "SET SESSION CHARACTERISTICS"
		case strings.HasPrefix(name, "transaction_") || strings.HasPrefix(name, "default_transaction_"):
			return "SET " + name
		}
	}
	return ""
}

// outsideTransaction names a statement PostgreSQL refuses inside a
// transaction block (PreventInTransactionBlock in its source).
func outsideTransaction(n *pg.Node) string {
	switch {
	case n.GetIndexStmt() != nil && n.GetIndexStmt().Concurrent:
		return "CREATE INDEX CONCURRENTLY"
	case n.GetDropStmt() != nil && n.GetDropStmt().Concurrent:
		return "DROP INDEX CONCURRENTLY"
	case n.GetReindexStmt() != nil:
		r := n.GetReindexStmt()
		for _, p := range r.Params {
			if d := p.GetDefElem(); d != nil && strings.EqualFold(d.Defname, "concurrently") {
				return "REINDEX CONCURRENTLY"
			}
		}
		if r.Kind == pg.ReindexObjectType_REINDEX_OBJECT_SYSTEM || r.Kind == pg.ReindexObjectType_REINDEX_OBJECT_DATABASE {
			return "REINDEX " + strings.TrimPrefix(r.Kind.String(), "REINDEX_OBJECT_")
		}
	case n.GetAlterTableStmt() != nil:
		for _, c := range n.GetAlterTableStmt().Cmds {
			if cmd := c.GetAlterTableCmd(); cmd != nil && cmd.Subtype == pg.AlterTableType_AT_DetachPartition {
				if pc := cmd.Def.GetPartitionCmd(); pc != nil && pc.Concurrent {
					return "ALTER TABLE ... DETACH PARTITION ... CONCURRENTLY"
				}
			}
		}
	case n.GetVacuumStmt() != nil && n.GetVacuumStmt().IsVacuumcmd:
		return "VACUUM"
	case n.GetClusterStmt() != nil && n.GetClusterStmt().Relation == nil:
		return "CLUSTER of every table"
	case n.GetCreatedbStmt() != nil:
		return "CREATE DATABASE"
	case n.GetDropdbStmt() != nil:
		return "DROP DATABASE"
	case n.GetAlterDatabaseStmt() != nil:
		for _, o := range n.GetAlterDatabaseStmt().Options {
			if d := o.GetDefElem(); d != nil && strings.EqualFold(d.Defname, "tablespace") {
				return "ALTER DATABASE ... SET TABLESPACE"
			}
		}
	case n.GetCreateTableSpaceStmt() != nil:
		return "CREATE TABLESPACE"
	case n.GetDropTableSpaceStmt() != nil:
		return "DROP TABLESPACE"
	case n.GetAlterSystemStmt() != nil:
		return "ALTER SYSTEM"
	case n.GetCreateSubscriptionStmt() != nil:
		return "CREATE SUBSCRIPTION"
	case n.GetDropSubscriptionStmt() != nil:
		return "DROP SUBSCRIPTION"
	case n.GetAlterSubscriptionStmt() != nil:
		return "ALTER SUBSCRIPTION"
	case n.GetDiscardStmt() != nil && n.GetDiscardStmt().Target == pg.DiscardMode_DISCARD_ALL:
		return "DISCARD ALL"
	}
	return ""
}

// blank replaces s[start:end] with spaces, keeping line breaks so that
// later lines keep their numbers and error positions their characters.
func blank(s string, start, end int) string {
	b := []byte(s)
	for i := start; i < end; i++ {
		if b[i] != '\n' {
			b[i] = ' '
		}
	}
	return string(b)
}

func quote(stmt string) string {
	stmt = strings.Join(strings.Fields(stmt), " ")
	if len(stmt) > 60 {
		stmt = stmt[:57] + "..."
	}
	return fmt.Sprintf("%q", stmt)
}
