package schema

import (
	"context"
	"fmt"
	"strings"
	"testing"
	"time"

	"ptah.run/operator/internal/testenv"
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
	devPG.Exec(t, "postgres", "ALTER ROLE dev CREATEDB CREATEROLE")
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
// the desired SQL is the desired side. Where the proof refuses, the
// planner's own answer (unproven) is asked too. Wherever the planner alone
// claims in sync (an empty plan) over catalogs that differ, plan and drift
// must be refused with unplanned_difference naming a line that differs;
// pairs that are the same must stay in sync. A plan with statements is
// applied and planned again, as the Proof Job does after an Apply: an
// empty second plan over catalogs still differing is refused the same way.
// The planner must be found missing at least one pair, or this test shows
// nothing the proof adds.
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
			// refusedOverEmpty says whether the proof refused a plan the
			// planner alone would have written empty, and checks the
			// refusal names a differing line.
			refusedOverEmpty := func(err error) bool {
				if err == nil || report.AsError(err).Code != report.UnplannedDifference || !strings.Contains(err.Error(), "the planner found nothing to change") {
					return false
				}
				p0, err0 := computePlan(ctx, db, fs, opts, false)
				t.Logf("the planner alone: %s", outcome(p0, nil, err0))
				if outcome(p0, nil, err0) != "empty" {
					return false
				}
				if m := err.Error(); !strings.Contains(m, "only in the database: ") && !strings.Contains(m, "only in the desired schema: ") {
					t.Fatalf("the refusal names no line: %v", err)
				}
				t.Logf("refused: %v", err)
				return true
			}
			p1, err1 := ComputePlan(ctx, db, fs, opts)
			t.Logf("plan: %s", outcome(p1, nil, err1))
			if c.Same {
				d1, errD1 := ComputeDrift(ctx, db, fs, opts, true)
				if outcome(p1, nil, err1) != "empty" || outcome(nil, d1, errD1) != "no drift" {
					t.Fatalf("the same schema built two ways: plan %s (%v), drift %s (%v); want an empty plan and no drift",
						outcome(p1, nil, err1), err1, outcome(nil, d1, errD1), errD1)
				}
				return
			}
			if outcome(p1, nil, err1) == "empty" {
				t.Fatalf("the catalogs differ (%s) but the plan is empty", c.Name)
			}
			if refusedOverEmpty(err1) {
				missed = append(missed, c.Name)
				// Drift may see what the plan does not plan (then it is
				// drift, no claim of in sync); if it reports none, the
				// proof must refuse it naming the same line.
				d1, errD1 := ComputeDrift(ctx, db, fs, opts, true)
				t.Logf("drift: %s", outcome(nil, d1, errD1))
				switch {
				case errD1 == nil && d1.Drift:
				case errD1 == nil || report.AsError(errD1).Code != report.UnplannedDifference || !strings.Contains(errD1.Error(), "the planner found no drift"):
					t.Fatalf("want drift refused with %s, got %s (%v)", report.UnplannedDifference, outcome(nil, d1, errD1), errD1)
				default:
					if want := strings.SplitN(strings.SplitN(err1.Error(), ": ", 4)[3], " ", 3)[:2]; !strings.Contains(errD1.Error(), strings.Join(want, " ")) {
						t.Fatalf("drift's refusal does not name the line plan's names (%s): %v", strings.Join(want, " "), errD1)
					}
				}
				return
			}
			if p1 == nil {
				return
			}
			// The Proof after an Apply: the plan applied, planned again.
			if _, err := Apply(ctx, db, p1, ApplyOptions{AllowDestructive: true, LockTimeout: 10 * time.Second}); err != nil {
				t.Logf("apply: %v", err)
				return
			}
			again, errA := ComputePlan(ctx, db, fs, opts)
			t.Logf("applied; planned again: %s", outcome(again, nil, errA))
			if refusedOverEmpty(errA) {
				missedAfterApply = append(missedAfterApply, c.Name)
			}
		})
	}
	t.Logf("the planner alone claimed in sync over differing catalogs in %d pairs, each refused by the proof: %s", len(missed), strings.Join(missed, "; "))
	t.Logf("after applying the planner's plan, a second plan was empty over differing catalogs in %d pairs, each refused by the proof: %s", len(missedAfterApply), strings.Join(missedAfterApply, "; "))
	if len(missed)+len(missedAfterApply) == 0 {
		t.Fatalf("the planner missed no pair: this test shows nothing the proof adds")
	}
}
