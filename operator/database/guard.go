package database

import (
	"context"
	"database/sql/driver"

	"github.com/jackc/pgx/v5/stdlib"

	"ptah.run/operator/operator/report"
)

// guardedConnector makes connections that hand a statement to the server
// only when check accepts its text. It sits below database/sql, so no
// caller (ptah's own code, atlas's inspector) can send a statement around
// it; arguments go as bind parameters and are never read as SQL.
type guardedConnector struct {
	inner driver.Connector
	check func(query string) error
}

func (c guardedConnector) Connect(ctx context.Context) (driver.Conn, error) {
	conn, err := c.inner.Connect(ctx)
	if err != nil {
		return nil, err
	}
	return &guardedConn{conn: conn.(*stdlib.Conn), check: c.check}, nil
}

func (c guardedConnector) Driver() driver.Driver { return c.inner.Driver() }

// guardedConn forwards to pgx's connection every method database/sql uses,
// checking each statement first. It does not expose the pgx connection.
type guardedConn struct {
	conn  *stdlib.Conn
	check func(query string) error
}

var (
	_ driver.ConnBeginTx        = (*guardedConn)(nil)
	_ driver.ConnPrepareContext = (*guardedConn)(nil)
	_ driver.ExecerContext      = (*guardedConn)(nil)
	_ driver.QueryerContext     = (*guardedConn)(nil)
	_ driver.Pinger             = (*guardedConn)(nil)
	_ driver.SessionResetter    = (*guardedConn)(nil)
	_ driver.NamedValueChecker  = (*guardedConn)(nil)
	_ driver.Conn               = (*guardedConn)(nil)
	_ driver.Connector          = guardedConnector{}
)

func (g *guardedConn) allow(query string) error {
	if err := g.check(query); err != nil {
		return report.Errorf(report.Internal, "%v", err)
	}
	return nil
}

func (g *guardedConn) Prepare(query string) (driver.Stmt, error) {
	return g.PrepareContext(context.Background(), query)
}

func (g *guardedConn) PrepareContext(ctx context.Context, query string) (driver.Stmt, error) {
	if err := g.allow(query); err != nil {
		return nil, err
	}
	return g.conn.PrepareContext(ctx, query)
}

func (g *guardedConn) ExecContext(ctx context.Context, query string, args []driver.NamedValue) (driver.Result, error) {
	if err := g.allow(query); err != nil {
		return nil, err
	}
	return g.conn.ExecContext(ctx, query, args)
}

func (g *guardedConn) QueryContext(ctx context.Context, query string, args []driver.NamedValue) (driver.Rows, error) {
	if err := g.allow(query); err != nil {
		return nil, err
	}
	return g.conn.QueryContext(ctx, query, args)
}

func (g *guardedConn) Close() error { return g.conn.Close() }
func (g *guardedConn) Begin() (driver.Tx, error) {
	return g.BeginTx(context.Background(), driver.TxOptions{})
}
func (g *guardedConn) BeginTx(ctx context.Context, opts driver.TxOptions) (driver.Tx, error) {
	return g.conn.BeginTx(ctx, opts)
}
func (g *guardedConn) Ping(ctx context.Context) error         { return g.conn.Ping(ctx) }
func (g *guardedConn) ResetSession(ctx context.Context) error { return g.conn.ResetSession(ctx) }
func (g *guardedConn) CheckNamedValue(v *driver.NamedValue) error {
	return g.conn.CheckNamedValue(v)
}
