package schema

import (
	"context"
	"fmt"
	"strings"
	"testing"
	"time"

	"ptah.run/operator/acceptance/testenv"
	"ptah.run/operator/operator/catalogproof/proofcases"
	"ptah.run/operator/operator/devdb"
	"ptah.run/operator/operator/report"
)

// proofEngine is a target server and a dev server that both have the
// roles proofcases grants to.
func proofEngine(t *testing.T) *engine {
	t.Helper()
	e := &engine{pg: testenv.StartPostgres(t)}
	devPG := testenv.StartPostgres(t)
	devURL := devPG.CreateDatabase(t, "dev")
	devPG.Exec(t, "postgres", "ALTER ROLE dev CREATEDB")
	for _, r := range proofcases.Roles {
		e.pg.Exec(t, "postgres", "CREATE ROLE "+r)
		devPG.Exec(t, "postgres", "CREATE ROLE "+r)
	}
	var err error
	if e.dev, err = devdb.Open(context.Background(), devURL, 5*time.Second); err != nil {
		t.Fatalf("open the dev server: %v", err)
	}
	t.Cleanup(e.dev.Close)
	return e
}

// outcome says what a plan or a drift came to: "empty", "N statements",
// "no drift", "drift" or the error code.
func outcome(p *Plan, d *Drift, err error) string {
	switch {
	case err != nil:
		return string(report.AsError(err).Code)
	case p != nil && len(p.Statements) == 0:
		return "empty"
	case p != nil:
		return fmt.Sprintf("%d statements", len(p.Statements))
	case d.Drift:
		return "drift"
	}
	return "no drift"
}

// TestProofCatchesWhatThePlannerMisses runs every pair of proofcases
// against `ptah schema plan` and `drift`: the target holds the live side,
// the desired SQL is the desired side. The planner's own answer (unproven)
// is recorded beside the answer with the proof. Wherever the planner alone
// claims in sync (an empty plan, no drift) over catalogs that differ, the
// proof must turn the claim into unplanned_difference naming a line that
// differs; pairs that are the same must stay in sync; and the planner
// must be found missing at least one pair, or this test shows nothing.
func TestProofCatchesWhatThePlannerMisses(t *testing.T) {
	e := proofEngine(t)
	ctx := context.Background()
	var missed, missedAfterApply []string
	for _, c := range proofcases.Pairs {
		t.Run(c.Name, func(t *testing.T) {
			db, _ := e.db(t)
			exec(t, db, proofcases.Base+c.Live)
			fs := files(proofcases.Base + c.Desired)
			opts := e.o(Options{})
			p0, err0 := computePlan(ctx, db, fs, opts, false)
			d0, errD0 := computeDrift(ctx, db, fs, opts, true, false)
			p1, err1 := ComputePlan(ctx, db, fs, opts)
			d1, errD1 := ComputeDrift(ctx, db, fs, opts, true)
			before, after := outcome(p0, nil, err0), outcome(p1, nil, err1)
			driftBefore, driftAfter := outcome(nil, d0, errD0), outcome(nil, d1, errD1)
			t.Logf("plan: planner alone %s, with the proof %s; drift: planner alone %s, with the proof %s", before, after, driftBefore, driftAfter)
			if c.Same {
				if after != "empty" || driftAfter != "no drift" {
					t.Fatalf("the same schema built two ways: plan %s (%v), drift %s (%v); want an empty plan and no drift", after, err1, driftAfter, errD1)
				}
				return
			}
			if after == "empty" || driftAfter == "no drift" {
				t.Fatalf("catalogs differ (%s) but plan is %s and drift %s", c.Name, after, driftAfter)
			}
			if before == string(report.Internal) {
				t.Logf("the planner fails: %v", err0)
			}
			if p0 != nil && len(p0.Statements) > 0 {
				// The Proof after an Apply: the plan applied, planned again.
				if _, err := Apply(ctx, db, p1, ApplyOptions{AllowDestructive: true, LockTimeout: 10 * time.Second}); err != nil {
					t.Logf("apply: %v", err)
					return
				}
				again0, errA0 := computePlan(ctx, db, fs, opts, false)
				again1, errA1 := ComputePlan(ctx, db, fs, opts)
				a0, a1 := outcome(again0, nil, errA0), outcome(again1, nil, errA1)
				t.Logf("applied; planned again: planner alone %s, with the proof %s", a0, a1)
				if a0 == "empty" && a1 != "empty" {
					missedAfterApply = append(missedAfterApply, c.Name)
					if e := report.AsError(errA1); e.Code != report.UnplannedDifference {
						t.Fatalf("want %s, got %v", report.UnplannedDifference, errA1)
					}
					t.Logf("refused: %s", report.AsError(errA1).Message)
				}
			}
			if before == "empty" {
				missed = append(missed, c.Name)
				for what, err := range map[string]error{"plan": err1, "drift": errD1} {
					e := report.AsError(err)
					if e.Code != report.UnplannedDifference || !strings.Contains(e.Message, "only in the database: ") && !strings.Contains(e.Message, "only in the desired schema: ") {
						t.Fatalf("the planner alone gave an empty plan; want %s refused with %s naming a line, got %v", what, report.UnplannedDifference, err)
					}
				}
				t.Logf("refused: %s", report.AsError(err1).Message)
			}
		})
	}
	t.Logf("the planner alone claimed in sync over differing catalogs in %d pairs, each refused by the proof: %s", len(missed), strings.Join(missed, "; "))
	t.Logf("after applying the planner's plan, a second plan was empty over differing catalogs in %d pairs, each refused by the proof: %s", len(missedAfterApply), strings.Join(missedAfterApply, "; "))
	if len(missed) == 0 {
		t.Fatalf("the planner missed no pair: this test shows nothing the proof adds")
	}
}

