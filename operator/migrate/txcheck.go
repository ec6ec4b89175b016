package migrate

import (
	"errors"
	"fmt"
	"regexp"
	"strings"

	pg "github.com/pganalyze/pg_query_go/v6"
	pgquery "github.com/wasilibs/go-pgquery"
	pgparser "github.com/wasilibs/go-pgquery/parser"

	"ptah.run/operator/operator/report"
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
	// text is what runs: the file, or its body with the wrapper's BEGIN and
	// COMMIT blanked out so that line numbers still match the file.
	text string
	// stmt names the lone statement of an alone script, for messages.
	stmt string
}

// prepare reads m with PostgreSQL's own parser (libpg_query, run in
// WebAssembly so that ptah stays a static binary) and refuses what would
// break "one migration, one transaction, its history row in it": any
// transaction control but one leading BEGIN and one trailing COMMIT, and a
// statement that cannot run in a transaction block mixed with others.
// Dollar-quoted bodies, strings and comments are the parser's business, so
// a COMMIT inside a function body is not a statement of the file.
func prepare(m Migration) (script, error) {
	tree, err := pgquery.Parse(m.text)
	if err != nil {
		var pe *pgparser.Error
		if errors.As(err, &pe) && pe.Cursorpos > 0 {
			// The cursor counts characters, not bytes.
			r := []rune(m.text)
			before := string(r[:min(pe.Cursorpos-1, len(r))])
			return script{}, report.Errorf(report.Parse, "%s:%d: %s (PostgreSQL's parser reads every pending migration before any runs)", m.path, lineAt(before, len(before)), pe.Message)
		}
		return script{}, report.Errorf(report.Parse, "%s: %v (PostgreSQL's parser reads every pending migration before any runs)", m.path, err)
	}
	type stmt struct {
		node       *pg.Node
		start, end int // byte range, without the terminating semicolon
		line       int
	}
	var stmts []stmt
	for _, raw := range tree.Stmts {
		start := skipBlank(m.text, int(raw.StmtLocation))
		end := len(m.text)
		if raw.StmtLen > 0 {
			end = int(raw.StmtLocation + raw.StmtLen)
		}
		stmts = append(stmts, stmt{node: raw.Stmt, start: start, end: end, line: lineAt(m.text, start)})
	}
	text := m.text
	wrapped := false
	if n := len(stmts); n >= 2 && isPlainBegin(stmts[0].node) && isPlainCommit(stmts[n-1].node) {
		wrapped = true
		text = blank(blank(text, stmts[0].start, stmts[0].end), stmts[n-1].start, stmts[n-1].end)
		stmts = stmts[1 : n-1]
	}
	for _, s := range stmts {
		if what := transactionControl(s.node); what != "" {
			return script{}, report.Errorf(report.NotTransactional,
				"%s:%d: %s: ptah runs each migration in its own transaction; remove the %s at line %d, or split the file into two migrations (a file may only be wrapped whole in one leading BEGIN and one trailing COMMIT)",
				m.path, s.line, quote(m.text[s.start:s.end]), what, s.line)
		}
	}
	for _, s := range stmts {
		what := outsideTransaction(s.node)
		switch {
		case what == "":
			continue
		case wrapped:
			return script{}, report.Errorf(report.NotTransactional,
				"%s:%d: %s cannot run inside a transaction block, and the file wraps it in BEGIN ... COMMIT; remove the BEGIN and the COMMIT so that it runs on its own",
				m.path, s.line, what)
		case len(stmts) > 1:
			return script{}, report.Errorf(report.NotTransactional,
				"%s:%d: %s cannot run inside a transaction block, so ptah runs it only as the single statement of a migration; move it to a migration of its own",
				m.path, s.line, what)
		}
		return script{mode: alone, text: text, stmt: what}, nil
	}
	return script{mode: inTransaction, text: text}, nil
}

// special matches, in any case, each word that can begin or mark a
// statement prepare refuses or runs alone, and "transaction" anywhere (the
// settings named after it). A text without one holds no such statement:
// it runs as it is, without the parser, whose WebAssembly build costs a
// process about 1.3 s and 250 MB of memory the first time it parses. A
// syntax error in it is PostgreSQL's to report, inside its transaction.
var special = regexp.MustCompile(`(?i)\b(begin|start|commit|end|rollback|abort|savepoint|release|prepare|concurrently|reindex|vacuum|cluster|database|tablespace|system|subscription|discard)\b|transaction`)

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

// skipBlank moves i past white space and comments: a statement's location
// is where the previous one ended.
func skipBlank(s string, i int) int {
	for i < len(s) {
		switch {
		case strings.ContainsRune(" \t\r\n\f\v", rune(s[i])):
			i++
		case strings.HasPrefix(s[i:], "--"):
			j := strings.IndexByte(s[i:], '\n')
			if j < 0 {
				return len(s)
			}
			i += j + 1
		case strings.HasPrefix(s[i:], "/*"):
			depth := 0
			for i < len(s) {
				if strings.HasPrefix(s[i:], "/*") {
					depth, i = depth+1, i+2
				} else if strings.HasPrefix(s[i:], "*/") {
					depth, i = depth-1, i+2
					if depth == 0 {
						break
					}
				} else {
					i++
				}
			}
		default:
			return i
		}
	}
	return i
}

// lineAt is the 1-based line of byte offset i of s.
func lineAt(s string, i int) int {
	return 1 + strings.Count(s[:min(max(i, 0), len(s))], "\n")
}

// blank replaces s[start:end] and the semicolon after it with spaces,
// keeping line breaks so that later lines keep their numbers.
func blank(s string, start, end int) string {
	if i := skipBlank(s, end); i < len(s) && s[i] == ';' {
		end = i + 1
	}
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
