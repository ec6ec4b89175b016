package schema

import (
	"context"
	"errors"
	"os"
	"regexp"
	"strings"

	"github.com/jackc/pgx/v5"
	pg "github.com/pganalyze/pg_query_go/v6"
	pgquery "github.com/wasilibs/go-pgquery"
	"google.golang.org/protobuf/proto"

	"ptah.run/operator/operator/database"
	"ptah.run/operator/operator/report"
	"ptah.run/operator/operator/sqlsplit"
)

// File is one desired-state SQL file: its path as given (messages name it) and text.
type File struct {
	Name string
	Text string
}

// ReadFiles reads the desired-state SQL files in the order given.
func ReadFiles(paths []string) ([]File, error) {
	if len(paths) == 0 {
		return nil, report.Errorf(report.Usage, "no desired schema: pass --schema-file FILE.sql at least once")
	}
	files := make([]File, 0, len(paths))
	for _, p := range paths {
		b, err := os.ReadFile(p)
		if err != nil {
			return nil, report.Errorf(report.Usage, "read schema file %s: %v", p, errors.Unwrap(err))
		}
		files = append(files, File{Name: p, Text: string(b)})
	}
	return files, nil
}

// loadDesired runs the desired SQL in db, a fresh database of the dev
// server, in one transaction as its role, with the server's defaults
// (search_path "$user", public), so public-qualified names as pg_dump writes
// them land where unqualified ones do. Each file is sent whole in one Query
// message, read under the settings the splitter reads SQL with
// (sqlsplit.Settings, set before each file). Whatever the SQL does stays on
// the dev server: transaction control, settings and roles included.
//
// It returns the comparison's role, whose marker each LEAKPROOF was loaded
// as (withoutLeakproof), and how many were, for the dev server to mark.
func loadDesired(ctx context.Context, db *database.DB, files []File) (role string, leakproof int, err error) {
	conn, err := db.Conn(ctx)
	if err != nil {
		return "", 0, database.StatementError(db.Target, "connect", err)
	}
	defer conn.Close()
	err = database.WithPgx(conn, func(c *pgx.Conn) error {
		// The comparison's role, whose name the LEAKPROOF marker carries.
		if err := c.QueryRow(ctx, "SELECT current_user").Scan(&role); err != nil {
			return database.StatementError(db.Target, "read the comparison's role", err)
		}
		markable := leakproofMarkable(files)
		if _, err := c.Exec(ctx, "BEGIN"); err != nil {
			return database.StatementError(db.Target, "begin", err)
		}
		committed := false
		defer func() {
			if !committed {
				c.Exec(context.WithoutCancel(ctx), "ROLLBACK")
			}
		}()
		for _, f := range files {
			if _, err := c.Exec(ctx, sqlsplit.Pin()); err != nil {
				return database.StatementError(db.Target, "set the settings SQL is read under", err)
			}
			text := withoutOwners(withoutConcurrently(f.Text))
			if markable {
				var n int
				text, n = withoutLeakproof(text, leakproofMarker(role))
				leakproof += n
			}
			if err := database.ExecScript(ctx, c.PgConn(), text); err != nil {
				e := database.ScriptError(err, db.Target, f.Name, text, nil, report.Parse)
				e.Message += " (loading the desired schema into the dev database)"
				var refused *database.ScriptFailure
				if errors.As(err, &refused) && refused.Err.Code == "42501" { // insufficient_privilege
					e.Message += "; desired SQL runs there as a role ptah makes for the comparison, with no privileges (no superuser, no memberships), so a statement that needs a superuser (an untrusted language or extension, server files, a LEAKPROOF that could not be loaded as a marker for the dev server's superuser to set) cannot be part of a desired schema: keep it in a migration"
				}
				return e
			}
		}
		// The SQL may have ended the transaction itself; a COMMIT then only warns.
		if _, err := c.Exec(ctx, "COMMIT"); err != nil {
			return database.StatementError(db.Target, "commit the desired schema", err)
		}
		committed = true
		return nil
	})
	return role, leakproof, err
}

// withoutOwners blanks the statements of desired SQL text that only give
// an object to a role (ALTER ... OWNER TO, as pg_dump writes after each
// object) and takes the role out of CREATE SCHEMA ... AUTHORIZATION: owners are the deployment's, neither planned nor proven, and
// the comparison's role, a member of no role, could give nothing away.
// Lines keep their numbers; a statement doing more than that is run as
// written.
func withoutOwners(text string) string {
	if up := strings.ToUpper(text); !strings.Contains(up, "OWNER") && !strings.Contains(up, "AUTHORIZATION") {
		return text
	}
	return rewrite(text, func(st sqlsplit.Stmt) (string, bool) {
		if out, ok := schemaWithoutOwner(st.Node, st.Text(text)); ok {
			return out, true
		}
		return blank(st.Text(text)), onlyOwner(st.Node)
	})
}

// schemaWithoutOwner is CREATE SCHEMA ... AUTHORIZATION role as it reads
// without the role (a schema named only by its role keeps that name),
// padded to the lines it had; not ok for any other statement, or when the
// name would be the session's (AUTHORIZATION CURRENT_USER alone).
func schemaWithoutOwner(n *pg.Node, stmt string) (string, bool) {
	cs := n.GetCreateSchemaStmt()
	if cs == nil || cs.GetAuthrole() == nil {
		return "", false
	}
	c := proto.Clone(n).(*pg.Node)
	s := c.GetCreateSchemaStmt()
	if s.Schemaname == "" {
		if s.Authrole.GetRoletype() != pg.RoleSpecType_ROLESPEC_CSTRING {
			return "", false
		}
		s.Schemaname = s.Authrole.GetRolename()
	}
	s.Authrole = nil
	out, err := pgquery.Deparse(&pg.ParseResult{Stmts: []*pg.RawStmt{{Stmt: c}}})
	if err != nil {
		return "", false
	}
	if pad := strings.Count(stmt, "\n") - strings.Count(out, "\n"); pad > 0 {
		out += strings.Repeat("\n", pad)
	}
	return out, true
}

// onlyOwner says whether n is ALTER ... OWNER TO and nothing else.
func onlyOwner(n *pg.Node) bool {
	if n.GetAlterOwnerStmt() != nil {
		return true
	}
	a := n.GetAlterTableStmt()
	if a == nil || len(a.GetCmds()) == 0 {
		return false
	}
	for _, c := range a.GetCmds() {
		if c.GetAlterTableCmd().GetSubtype() != pg.AlterTableType_AT_ChangeOwner {
			return false
		}
	}
	return true
}

// blank is s with every character but a line break made a space.
func blank(s string) string {
	return strings.Map(func(r rune) rune {
		if r == '\n' || r == '\r' {
			return r
		}
		return ' '
	}, s)
}

// concurrently matches a statement PostgreSQL refuses in a transaction
// only for its CONCURRENTLY, up to that word.
var concurrently = regexp.MustCompile(`(?is)^((?:CREATE\s+(?:UNIQUE\s+)?INDEX|DROP\s+INDEX|REINDEX\s+(?:\([^)]*\)\s*)?[a-z]+)\s+)CONCURRENTLY\b`)

// withoutConcurrently drops CONCURRENTLY from the index statements of
// desired SQL text: in the fresh dev database, loaded in one transaction,
// each builds the same index, and how the target's indexes are built is
// the plan's to say (Options.ConcurrentIndexes). Lines keep their numbers.
func withoutConcurrently(text string) string {
	if !strings.Contains(strings.ToUpper(text), "CONCURRENTLY") {
		return text
	}
	return rewrite(text, func(st sqlsplit.Stmt) (string, bool) {
		return concurrently.ReplaceAllString(st.Text(text), "$1"), concurrently.MatchString(st.Text(text))
	})
}

// rewrite is text with each statement f rewrites replaced by what it
// returns; text as it is when it does not split (the error is reported
// when it is run).
func rewrite(text string, f func(st sqlsplit.Stmt) (string, bool)) string {
	stmts, err := sqlsplit.Split(text)
	if err != nil {
		return text
	}
	var b strings.Builder
	last := 0
	for _, st := range stmts {
		out, ok := f(st)
		if !ok {
			continue
		}
		b.WriteString(text[last:st.Start])
		b.WriteString(out)
		last = st.End
	}
	b.WriteString(text[last:])
	return b.String()
}
