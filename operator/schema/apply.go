package schema

import (
	"context"
	"database/sql"
	"fmt"
	"time"

	"ptah.run/operator/operator/database"
	"ptah.run/operator/operator/report"
)

// ApplyOptions are the caller's consents and limits.
type ApplyOptions struct {
	AllowDestructive bool
	DryRun           bool
	LockTimeout      time.Duration
}

// Applied is what `ptah schema apply` reports.
type Applied struct {
	// Applied is true once the statements are committed.
	Applied    bool   `json:"applied"`
	DryRun     bool   `json:"dryRun"`
	PlanDigest string `json:"planDigest"`
	Statements int    `json:"statements"`
	// Fingerprint is the managed schema's state after the statements ran
	// (before, on a dry run); Converged says it equals the plan's desired one.
	Fingerprint string `json:"fingerprint"`
	Converged   bool   `json:"converged"`
}

// Apply runs p against db in one transaction holding the ptah writer lock,
// after checking that the managed schema is still in the state p was computed
// from. On any refusal or failure nothing is committed.
func Apply(ctx context.Context, db *database.DB, p *Plan, opts ApplyOptions) (*Applied, error) {
	if p.Destructive && !opts.AllowDestructive {
		return nil, report.Errorf(report.DestructiveRefused, "plan %s is destructive (%s); pass --allow-destructive to apply it; nothing was executed", p.Digest, firstDestructive(p))
	}
	if p.outsideTransaction() {
		return applyInSteps(ctx, db, p, opts)
	}
	tx, err := db.BeginTx(ctx, nil)
	if err != nil {
		return nil, database.StatementError(db.Target, "begin", err)
	}
	defer tx.Rollback()
	if err := database.LockTx(ctx, tx, db.Target, opts.LockTimeout); err != nil {
		return nil, err
	}
	live, err := inspectSide(ctx, tx, p.schemas(), p.Exclude, false)
	if err != nil {
		return nil, err
	}
	if live.fingerprint != p.BaseFingerprint {
		return nil, report.Errorf(report.StalePlan, "schema %s changed since plan %s was computed (planned against %s, now %s); nothing was executed; plan again", p.Schema, p.Digest, p.BaseFingerprint, live.fingerprint)
	}
	res := &Applied{DryRun: opts.DryRun, PlanDigest: p.Digest, Statements: len(p.Statements), Fingerprint: live.fingerprint}
	if opts.DryRun {
		res.Converged = live.fingerprint == p.DesiredFingerprint
		return res, nil
	}
	path := ""
	for i, s := range p.Statements {
		if err := p.setSearchPath(ctx, tx, s, &path); err != nil {
			return nil, database.StatementError(db.Target, fmt.Sprintf("set the search path for statement %d of plan %s", i+1, p.Digest), err)
		}
		if _, err := tx.ExecContext(ctx, s.SQL); err != nil {
			e := database.StatementError(db.Target, fmt.Sprintf("statement %d of plan %s", i+1, p.Digest), err)
			e.Message += "; the transaction was rolled back, nothing was applied"
			return nil, e
		}
	}
	after, err := inspectSide(ctx, tx, p.schemas(), p.Exclude, false)
	if err != nil {
		return nil, err
	}
	if err := tx.Commit(); err != nil {
		return nil, database.CommitError(db.Target, "commit plan "+p.Digest, err)
	}
	res.Applied, res.Fingerprint, res.Converged = true, after.fingerprint, after.fingerprint == p.DesiredFingerprint
	return res, nil
}

// setSearchPath sets, in a plan of several schemas, the search path s was
// planned under (see searchPath) when it is not *current already. A plan
// of public alone runs as it always has, under the session's own.
func (p *Plan) setSearchPath(ctx context.Context, tx *sql.Tx, s Statement, current *string) error {
	if len(p.Schemas) == 0 {
		return nil
	}
	name := s.Schema
	if name == "" {
		name = p.Schemas[0]
	}
	path := searchPath(name)
	if path == *current {
		return nil
	}
	if _, err := tx.ExecContext(ctx, "SET LOCAL search_path TO "+path); err != nil {
		return err
	}
	*current = path
	return nil
}

func firstDestructive(p *Plan) string {
	for _, s := range p.Statements {
		if s.Severity == Destructive {
			return s.Reason
		}
	}
	return "marked destructive"
}
