package schema

import (
	"context"
	"database/sql"
	"fmt"

	"ptah.run/operator/operator/database"
	"ptah.run/operator/operator/report"
)

// outsideTransaction reports whether a statement of p must run outside a
// transaction.
func (p *Plan) outsideTransaction() bool {
	for _, s := range p.Statements {
		if s.OutsideTransaction {
			return true
		}
	}
	return false
}

// applyInSteps runs a plan that is partly non-transactional on one session
// holding the ptah writer lock for the session: the statements up to the
// first one outside a transaction run in a transaction that first checks
// the base fingerprint; each one outside a transaction (CREATE INDEX
// CONCURRENTLY) runs alone; the statements between run in transactions of
// their own. The lock's session is never inside a transaction while a
// concurrent build waits for older ones, so it does not wait for itself.
// A failure leaves what committed before it; the error says so, and the
// next plan starts from there (an index a failed concurrent build left
// invalid is dropped and built again).
func applyInSteps(ctx context.Context, db *database.DB, p *Plan, opts ApplyOptions) (*Applied, error) {
	conn, err := db.Conn(ctx)
	if err != nil {
		return nil, database.StatementError(db.Target, "connect", err)
	}
	defer conn.Close()
	if err := database.LockSession(ctx, conn, db.Target, opts.LockTimeout); err != nil {
		return nil, err
	}
	// Closing a pooled conn keeps the session: give the lock back.
	defer conn.ExecContext(context.WithoutCancel(ctx), "SELECT pg_advisory_unlock($1)", database.LockKey)
	tx, err := conn.BeginTx(ctx, nil)
	if err != nil {
		return nil, database.StatementError(db.Target, "begin", err)
	}
	live, err := inspectSide(ctx, tx, p.schemas(), p.Exclude, false)
	if err != nil {
		tx.Rollback()
		return nil, err
	}
	if live.fingerprint != p.BaseFingerprint {
		tx.Rollback()
		return nil, report.Errorf(report.StalePlan, "schema %s changed since plan %s was computed (planned against %s, now %s); nothing was executed; plan again", p.Schema, p.Digest, p.BaseFingerprint, live.fingerprint)
	}
	res := &Applied{DryRun: opts.DryRun, PlanDigest: p.Digest, Statements: len(p.Statements), Fingerprint: live.fingerprint}
	if opts.DryRun {
		tx.Rollback()
		res.Converged = live.fingerprint == p.DesiredFingerprint
		return res, nil
	}
	committed, path := 0, ""
	failed := func(i int, doing string, err error, commits bool) error {
		e := database.StatementError(db.Target, doing, err)
		if commits {
			e = database.CommitError(db.Target, doing, err)
		}
		switch {
		case e.Code == report.OutcomeUnknown && committed == 0:
		case e.Code == report.OutcomeUnknown:
			e.Message += fmt.Sprintf("; statements 1 to %d of plan %s were committed before it", committed, p.Digest)
		case committed == 0:
			e.Message += "; nothing was applied"
		default:
			e.Message += fmt.Sprintf("; statements 1 to %d of plan %s were committed before it, the rest did not run: plan again from there", committed, p.Digest)
		}
		return e
	}
	for i, s := range p.Statements {
		doing := fmt.Sprintf("statement %d of plan %s", i+1, p.Digest)
		if s.OutsideTransaction {
			if tx != nil {
				if err := tx.Commit(); err != nil {
					return nil, failed(i, "commit before "+doing, err, true)
				}
				committed, tx = i, nil
			}
			if _, err := conn.ExecContext(ctx, s.SQL); err != nil {
				return nil, failed(i, doing, err, true)
			}
			committed = i + 1
			continue
		}
		if tx == nil {
			if tx, err = conn.BeginTx(ctx, nil); err != nil {
				return nil, failed(i, "begin "+doing, err, false)
			}
			path = ""
		}
		if err := p.setSearchPath(ctx, tx, s, &path); err != nil {
			tx.Rollback()
			return nil, failed(i, "set the search path for "+doing, err, false)
		}
		if _, err := tx.ExecContext(ctx, s.SQL); err != nil {
			tx.Rollback()
			return nil, failed(i, doing, err, false)
		}
	}
	if tx != nil {
		if err := tx.Commit(); err != nil {
			return nil, failed(len(p.Statements), "commit plan "+p.Digest, err, true)
		}
	}
	after, err := readState(ctx, conn, p)
	if err != nil {
		return nil, err
	}
	res.Applied, res.Fingerprint, res.Converged = true, after.fingerprint, after.fingerprint == p.DesiredFingerprint
	return res, nil
}

func readState(ctx context.Context, conn *sql.Conn, p *Plan) (*side, error) {
	tx, err := conn.BeginTx(ctx, &sql.TxOptions{ReadOnly: true})
	if err != nil {
		return nil, fmt.Errorf("begin reading the applied schema: %w", err)
	}
	defer tx.Rollback()
	return inspectSide(ctx, tx, p.schemas(), p.Exclude, false)
}
