// Package devdb is the dev database desired SQL is loaded into, never the
// managed one: a PostgreSQL server on which each comparison gets a fresh
// database, dropped after, and the throwaway server ptah and the operator's
// Pods start for it.
package devdb

import (
	"context"
	"crypto/rand"
	"database/sql"
	"encoding/hex"
	"errors"
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

// Server is a dev server: it holds one session on the database its URL
// names, from which it creates and drops the comparison databases.
type Server struct {
	cfg    *pgx.ConnConfig
	admin  *database.DB
	conn   *sql.Conn
	marker string
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
	s := &Server{cfg: cfg.Copy(), marker: "ptah-dev-" + randomHex(8)}
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
	return s, nil
}

// Close ends the server's session.
func (s *Server) Close() {
	s.conn.Close()
	s.admin.Close()
}

// Fresh creates an empty database on the dev server, owned by the dev URL's
// role, and connects to it; drop closes that connection and drops the
// database. It refuses a dev server that is target's server, before any
// desired SQL could run there: desired SQL can reach a whole server (DROP
// DATABASE, ALTER ROLE, ALTER SYSTEM).
func (s *Server) Fresh(ctx context.Context, target *database.DB) (db *database.DB, drop func(), err error) {
	refuse := report.Errorf(report.Usage, "the dev database at %s is on the target's own server (%s): desired SQL can run statements that reach the whole server, so it is never loaded there; name a separate PostgreSQL server with --dev-url (or $%s), or pass --dev-throwaway", s.Target, target.Target, URLEnv)
	var seen bool
	if err := target.QueryRowContext(ctx, catalogread.DevSessionSeen, s.marker).Scan(&seen); err != nil {
		return nil, nil, database.StatementError(target.Target, "look for the dev session", err)
	}
	if seen {
		return nil, nil, refuse
	}
	name := "ptah_dev_" + randomHex(8)
	if _, err := s.conn.ExecContext(ctx, "CREATE DATABASE "+name+" TEMPLATE template0 ENCODING 'UTF8'"); err != nil {
		var pgErr *pgconn.PgError
		if errors.As(err, &pgErr) && pgErr.Code == "42501" {
			return nil, nil, report.Errorf(report.Permission, "the dev database role may not create databases on %s: grant it CREATEDB (each comparison loads the desired SQL into a database of its own and drops it)", s.Target)
		}
		return nil, nil, database.StatementError(s.Target, "create the comparison database", err)
	}
	dropDB := func() {
		ctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), 30*time.Second)
		defer cancel()
		_, _ = s.conn.ExecContext(ctx, "DROP DATABASE IF EXISTS "+name+" WITH (FORCE)")
	}
	// The database just created is in the target's catalog only if both are
	// one server: the check that holds whatever pg_stat_activity shows.
	if err := target.QueryRowContext(ctx, catalogread.DevDatabaseSeen, name).Scan(&seen); err != nil || seen {
		dropDB()
		if err != nil {
			return nil, nil, database.StatementError(target.Target, "look for the comparison database", err)
		}
		return nil, nil, refuse
	}
	cfg := s.cfg.Copy()
	cfg.Database = name
	if db, err = database.OpenConfig(ctx, cfg, cfg.ConnectTimeout); err != nil {
		dropDB()
		return nil, nil, err
	}
	// A connection the desired SQL changed (SET, SET ROLE) is not reused.
	db.SetMaxIdleConns(0)
	return db, func() { db.Close(); dropDB() }, nil
}

func randomHex(n int) string {
	b := make([]byte, n)
	if _, err := rand.Read(b); err != nil {
		panic(err)
	}
	return hex.EncodeToString(b)
}
