// Package devdb is the dev database desired SQL is loaded into, never the
// managed one: a PostgreSQL server on which each comparison gets a fresh
// database and a role of its own, both dropped after, and the throwaway
// server ptah and the operator's Pods start for it.
package devdb

import (
	"context"
	"crypto/hmac"
	"crypto/pbkdf2"
	"crypto/rand"
	"crypto/sha256"
	"database/sql"
	"encoding/base64"
	"encoding/hex"
	"errors"
	"fmt"
	"strings"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgconn"

	"ptah.run/operator/operator/catalogread"
	"ptah.run/operator/operator/database"
	"ptah.run/operator/operator/report"
)

// URLEnv is the environment variable read when --dev-url is not given
// (runner.EnvDevURL, set by the operator).
const URLEnv = "PTAH_DEV_URL"

// RolePrefix begins the name of each comparison's database and of the role
// that owns it and loads the desired SQL into it.
const RolePrefix = "ptah_dev_"

// roleConnectionLimit is how many sessions a comparison's role may hold:
// the desired SQL is loaded, then inspected, one session at a time.
const roleConnectionLimit = 4

// Server is a dev server: it holds one session on the database its URL
// names, from which it creates and drops the comparison databases and roles.
type Server struct {
	cfg            *pgx.ConnConfig
	connectTimeout time.Duration
	admin          *database.DB
	conn           *sql.Conn
	marker         string
	// markCfg, when set, reaches the server as a superuser, for
	// MarkLeakproof only (Local.Open); otherwise the dev URL's role marks,
	// if it is a superuser.
	markCfg *pgx.ConnConfig
	// super, createRole and createDB are the dev URL's role's attributes.
	super, createRole, createDB bool
	// Target is "host:port" of the dev server, the only part of its URL shown.
	Target string
}

// Open connects to the dev server url names. Its session carries a random
// application_name, by which Fresh recognises a target on the same server.
func Open(ctx context.Context, url string, connectTimeout time.Duration) (*Server, error) {
	cfg, err := database.ParseURL(url)
	if err != nil {
		e := report.AsError(err)
		e.Message = "the dev database URL is malformed; expected postgres://USER:PASSWORD@HOST:PORT/DATABASE"
		return nil, e
	}
	s := &Server{cfg: cfg.Copy(), connectTimeout: connectTimeout, marker: "ptah-dev-" + randomHex(8)}
	cfg.RuntimeParams["application_name"] = s.marker
	if s.admin, err = database.OpenConfig(ctx, cfg, connectTimeout); err != nil {
		e := report.AsError(err)
		e.Message = "dev database: " + e.Message
		return nil, e
	}
	s.Target = s.admin.Target
	if s.conn, err = s.admin.Conn(ctx); err != nil {
		s.admin.Close()
		return nil, database.ConnectError(s.Target, err)
	}
	if err := s.conn.QueryRowContext(ctx, "SELECT rolsuper, rolcreaterole, rolcreatedb FROM pg_roles WHERE rolname = current_user").Scan(&s.super, &s.createRole, &s.createDB); err != nil {
		s.Close()
		return nil, database.StatementError(s.Target, "read the dev database role", err)
	}
	return s, nil
}

// why is what a dev database role's CREATEDB and CREATEROLE are for.
const why = "each comparison loads the desired SQL into a database of its own, as a role of its own that owns only that database and has no other privilege, both created for it and dropped after; the dev URL's role never runs desired SQL"

// Close ends the server's session.
func (s *Server) Close() {
	s.conn.Close()
	s.admin.Close()
}

// Fresh creates an empty database on the dev server and a role of its own
// that owns it, and connects to it as that role; drop closes that connection
// and drops the database and the role. The role has no privilege beyond its
// database (no superuser, CREATEDB, CREATEROLE, REPLICATION or BYPASSRLS,
// member of no role, so of none of pg_execute_server_program,
// pg_read_server_files and pg_write_server_files) and logs in with a random
// password, so the desired SQL loaded through db can reach neither the
// server's files and programs nor its other roles and databases, whatever
// the dev URL's role may do.
//
// Fresh refuses a dev server that is target's server, before any desired
// SQL could run there: desired SQL can reach a whole server (DROP DATABASE,
// ALTER ROLE, ALTER SYSTEM).
func (s *Server) Fresh(ctx context.Context, target *database.DB) (db *database.DB, drop func(), err error) {
	refuse := report.Errorf(report.Usage, "the dev database at %s is on the target's own server (%s): desired SQL can run statements that reach the whole server, so it is never loaded there; name a separate PostgreSQL server with --dev-url (or $%s), or pass --dev-throwaway", s.Target, target.Target, URLEnv)
	var seen bool
	if err := target.QueryRowContext(ctx, catalogread.DevSessionSeen, s.marker).Scan(&seen); err != nil {
		return nil, nil, database.StatementError(target.Target, "look for the dev session", err)
	}
	if seen {
		return nil, nil, refuse
	}
	if !s.super && (!s.createRole || !s.createDB) {
		var lacks []string
		if !s.createDB {
			lacks = append(lacks, "CREATEDB")
		}
		if !s.createRole {
			lacks = append(lacks, "CREATEROLE")
		}
		return nil, nil, report.Errorf(report.Permission, "the dev database role on %s lacks %s: grant it %s (ALTER ROLE ... CREATEDB CREATEROLE); %s", s.Target, strings.Join(lacks, " and "), strings.Join(lacks, " and "), why)
	}
	name := RolePrefix + randomHex(8)
	password := randomHex(32)
	// Only a SCRAM verifier reaches the server: the password is in no
	// statement the server could log. The role is a member of no role; it
	// INHERITs nonetheless, for the one membership PostgreSQL gives it
	// implicitly, pg_database_owner in its own database: that role owns the
	// public schema, and a NOINHERIT owner may neither create in it nor
	// comment on it, which desired SQL does.
	if _, err := s.conn.ExecContext(ctx, fmt.Sprintf("CREATE ROLE %s WITH LOGIN NOSUPERUSER NOCREATEDB NOCREATEROLE NOREPLICATION NOBYPASSRLS INHERIT CONNECTION LIMIT %d PASSWORD '%s'",
		name, roleConnectionLimit, scramVerifier(password))); err != nil {
		var pgErr *pgconn.PgError
		if errors.As(err, &pgErr) && pgErr.Code == "42501" {
			return nil, nil, report.Errorf(report.Permission, "the dev database role may not create roles on %s: grant it CREATEROLE (ALTER ROLE ... CREATEROLE); %s", s.Target, why)
		}
		return nil, nil, database.StatementError(s.Target, "create the comparison role", err)
	}
	var dbCreated bool
	cleanup := func() {
		ctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), 30*time.Second)
		defer cancel()
		// No new session of the role, and none left in any database.
		_, _ = s.conn.ExecContext(ctx, "ALTER ROLE "+name+" NOLOGIN")
		_, _ = s.conn.ExecContext(ctx, "SELECT pg_terminate_backend(pid) FROM pg_stat_activity WHERE usename = $1", name)
		if dbCreated {
			_, _ = s.conn.ExecContext(ctx, "DROP DATABASE IF EXISTS "+name+" WITH (FORCE)")
		}
		if _, err := s.conn.ExecContext(ctx, "DROP ROLE IF EXISTS "+name); err != nil {
			// What it owns or was granted in the dev URL's database.
			_, _ = s.conn.ExecContext(ctx, "DROP OWNED BY "+name)
			_, _ = s.conn.ExecContext(ctx, "DROP ROLE IF EXISTS "+name)
		}
	}
	defer func() {
		if err != nil {
			cleanup()
		}
	}()
	// PostgreSQL 15 lets a role that is no superuser name another as a
	// database's owner only if it is a member of it.
	if !s.super {
		if _, err := s.conn.ExecContext(ctx, "GRANT "+name+" TO CURRENT_USER"); err != nil {
			return nil, nil, database.StatementError(s.Target, "grant the comparison role to the dev database role", err)
		}
	}
	if _, err := s.conn.ExecContext(ctx, "CREATE DATABASE "+name+" OWNER "+name+" TEMPLATE template0 ENCODING 'UTF8'"); err != nil {
		var pgErr *pgconn.PgError
		if errors.As(err, &pgErr) && pgErr.Code == "42501" {
			return nil, nil, report.Errorf(report.Permission, "the dev database role may not create databases on %s: grant it CREATEDB (ALTER ROLE ... CREATEDB); %s", s.Target, why)
		}
		return nil, nil, database.StatementError(s.Target, "create the comparison database", err)
	}
	dbCreated = true
	if _, err := s.conn.ExecContext(ctx, "REVOKE ALL ON DATABASE "+name+" FROM PUBLIC"); err != nil {
		return nil, nil, database.StatementError(s.Target, "revoke the comparison database from PUBLIC", err)
	}
	// The database just created is in the target's catalog only if both are
	// one server: the check that holds whatever pg_stat_activity shows.
	if err := target.QueryRowContext(ctx, catalogread.DevDatabaseSeen, name).Scan(&seen); err != nil || seen {
		if err != nil {
			return nil, nil, database.StatementError(target.Target, "look for the comparison database", err)
		}
		return nil, nil, refuse
	}
	if db, err = s.openAs(ctx, name, password); err != nil {
		return nil, nil, err
	}
	return db, func() { db.Close(); cleanup() }, nil
}

// MirrorRoles creates on the dev server, as roles that can do nothing
// (NOLOGIN, no attribute, member of none), those of names it lacks: the
// target's roles, for the desired SQL's grants to them (GRANT ... TO
// app_reader) to load as they apply on the target. The comparison's role
// cannot become them, so it gains nothing by their being there. They are
// kept: other comparisons may be granting to them, and a role is the
// server's, not one database's.
func (s *Server) MirrorRoles(ctx context.Context, names []string) error {
	rows, err := s.conn.QueryContext(ctx, "SELECT rolname FROM pg_roles WHERE rolname = ANY($1)", names)
	if err != nil {
		return database.StatementError(s.Target, "read the dev server's roles", err)
	}
	has := map[string]bool{}
	for rows.Next() {
		var n string
		if err := rows.Scan(&n); err != nil {
			rows.Close()
			return database.StatementError(s.Target, "read the dev server's roles", err)
		}
		has[n] = true
	}
	rows.Close()
	if err := rows.Err(); err != nil {
		return database.StatementError(s.Target, "read the dev server's roles", err)
	}
	for _, n := range names {
		if has[n] {
			continue
		}
		_, err := s.conn.ExecContext(ctx, "CREATE ROLE "+pgx.Identifier{n}.Sanitize()+" NOLOGIN NOSUPERUSER NOCREATEDB NOCREATEROLE NOREPLICATION NOBYPASSRLS")
		var pgErr *pgconn.PgError
		if err != nil && !(errors.As(err, &pgErr) && pgErr.Code == "42710") { // made meanwhile
			return database.StatementError(s.Target, "create role "+pgx.Identifier{n}.Sanitize()+" as the target has it", err)
		}
	}
	return nil
}

// openAs connects to database name as role name with password: same
// host, port and TLS as the dev URL, none of its credentials.
func (s *Server) openAs(ctx context.Context, name, password string) (*database.DB, error) {
	cfg := s.cfg.Copy()
	cfg.User, cfg.Password, cfg.Database = name, password, name
	if s.connectTimeout > 0 {
		cfg.ConnectTimeout = s.connectTimeout
	}
	// OpenConfig: the session is bounded like every other ptah opens.
	db, err := database.OpenConfig(ctx, cfg, cfg.ConnectTimeout)
	if err != nil {
		e := report.AsError(err)
		if e.Code == report.Auth {
			return nil, report.Errorf(report.Permission, "the dev database server at %s refused a login as the role ptah created for this comparison, so no desired SQL ran: ptah loads the desired SQL as a role it creates for each run, with a random password, named like the comparison database it owns (%[2]s<hex>), never as the dev URL's role; let pg_hba.conf admit roles named %[2]s* to the database of the same name by password (scram-sha-256 or md5) or trust, e.g. `host sameuser all 0.0.0.0/0 scram-sha-256`", s.Target, RolePrefix)
		}
		e.Message = "dev database, as the comparison's role: " + e.Message
		return nil, e
	}
	db.Target = s.Target
	// A connection the desired SQL changed (SET, SET ROLE) is not reused.
	db.SetMaxIdleConns(0)
	return db, nil
}

// scramVerifier is what PostgreSQL stores for password under
// SCRAM-SHA-256 (RFC 5802, 7677), in the form CREATE ROLE ... PASSWORD
// accepts as already encrypted. password is ASCII, SASLprep's identity.
func scramVerifier(password string) string {
	const iterations = 4096
	salt := make([]byte, 16)
	if _, err := rand.Read(salt); err != nil {
		panic(err)
	}
	salted, err := pbkdf2.Key(sha256.New, password, salt, iterations, sha256.Size)
	if err != nil {
		panic(err)
	}
	mac := func(key []byte, msg string) []byte {
		h := hmac.New(sha256.New, key)
		h.Write([]byte(msg))
		return h.Sum(nil)
	}
	stored := sha256.Sum256(mac(salted, "Client Key"))
	b64 := base64.StdEncoding.EncodeToString
	return fmt.Sprintf("SCRAM-SHA-256$%d:%s$%s:%s", iterations, b64(salt), b64(stored[:]), b64(mac(salted, "Server Key")))
}

func randomHex(n int) string {
	b := make([]byte, n)
	if _, err := rand.Read(b); err != nil {
		panic(err)
	}
	return hex.EncodeToString(b)
}

// MarkLeakproof marks LEAKPROOF, in the comparison database of role, the
// functions the desired SQL declared LEAKPROOF, which it loaded as the
// setting application_name = marker (only a superuser may mark a function
// LEAKPROOF; the comparison's role is none). It runs as the dev URL's role,
// with search_path pg_catalog so that each function is named in full, and
// sends only the ALTER FUNCTION statements, built from the catalog's own
// quoting of each signature: no desired SQL, and no function is run. want
// is how many LEAKPROOF were loaded so (fewer functions may carry the
// marker: a later CREATE OR REPLACE without LEAKPROOF replaces it, as it
// makes the function not LEAKPROOF).
func (s *Server) MarkLeakproof(ctx context.Context, role, marker string, want int) error {
	cfg := s.cfg.Copy()
	switch {
	case s.markCfg != nil:
		cfg = s.markCfg.Copy()
	case !s.super:
		return report.Errorf(report.Permission, "the desired schema declares %d LEAKPROOF function(s); only a superuser may mark a function LEAKPROOF, and ptah marks them in the comparison database as the dev URL's role, which on %s is no superuser: use a superuser's dev URL or --dev-throwaway, or keep the LEAKPROOF function in a migration", want, s.Target)
	}
	cfg.Database = role
	cfg.RuntimeParams["search_path"] = "pg_catalog"
	db, err := database.OpenConfig(ctx, cfg, s.connectTimeout)
	if err != nil {
		e := report.AsError(err)
		e.Message = "dev database, to mark LEAKPROOF functions: " + e.Message
		return e
	}
	defer db.Close()
	rows, err := db.QueryContext(ctx, "SELECT oid::regprocedure::text FROM pg_proc WHERE proconfig @> ARRAY['application_name=' || $1]", marker)
	if err != nil {
		return database.StatementError(s.Target, "find the functions to mark LEAKPROOF", err)
	}
	var fns []string
	for rows.Next() {
		var f string
		if err := rows.Scan(&f); err != nil {
			rows.Close()
			return database.StatementError(s.Target, "find the functions to mark LEAKPROOF", err)
		}
		fns = append(fns, f)
	}
	rows.Close()
	if err := rows.Err(); err != nil {
		return database.StatementError(s.Target, "find the functions to mark LEAKPROOF", err)
	}
	for _, f := range fns {
		if _, err := db.ExecContext(ctx, "ALTER FUNCTION "+f+" LEAKPROOF RESET application_name"); err != nil {
			return database.StatementError(s.Target, "mark "+f+" LEAKPROOF", err)
		}
	}
	return nil
}
