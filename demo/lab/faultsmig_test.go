package lab

import (
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"regexp"
	"slices"
	"strconv"
	"strings"
	"time"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"

	"ptah.run/operator/demo/lab/internal/run"
	"ptah.run/operator/internal/runner"
	v1alpha1 "ptah.run/operator/operator/api/v1alpha1"
)

// The PtahMigration rows: each fault lands in the middle of a multi-version
// run. Run n of the migration "faults-ledger" adds versions 3n, 3n+1 and
// 3n+2 (revision 0 is versions 1 and 2); each creates table mig_vV and, in
// the same transaction, writes its version into mig_applied, the database's
// own count of what committed. Version 3n+1 creates its table, then waits
// for an advisory lock the test holds (its own lock_timeout off, so the
// wait lasts as long as the test says): the fault lands while 3n is
// committed, 3n+1 is inside its transaction and 3n+2 has not begun.
//
// A run converges to version 3n+2, or stops with UnresolvedRun (the Apply
// ended without establishing what it committed) and a reading that cannot
// settle it. Then the test does what a person would: ends what is left of
// the run's session, finds in the database whether the version left dirty
// took effect (its table and its mig_applied row), fixes or deletes the
// history row, and writes a PtahMigrationRunAcknowledgment naming the
// operation and what the history shows committed; the run must converge
// from there without applying again what committed.

const (
	faultsMigration = "faults-ledger"
	gateKey         = 7161 // the advisory lock class of the gates (pg_advisory_lock(7161, n))
	migPhase        = "PtahMigration mid-run (3n committed, 3n+1 waiting in its transaction, 3n+2 not begun)"
)

// migrationRow is a fault in run n of the migration: in the middle of its
// Apply (phase nil), or in the phase named.
type migrationRow struct {
	fault fault
	phase *migrationPhase
}

func allMigrationRows() []migrationRow {
	return []migrationRow{
		{fault: managerKilled},
		{fault: apiServerRestarted},
		{fault: opPodDeleted},
		{fault: postgresStopped},
		{fault: networkCut},
		{fault: networkCutLasting},
		{fault: apiServerStoppedRetried, phase: migObserveHeld},
	}
}

// migrationVersionSQL is the file of version v.
func migrationVersionSQL(v int) string {
	var b strings.Builder
	fmt.Fprintf(&b, "-- the fault table's migration version %d\n", v)
	if v == 1 {
		b.WriteString("CREATE TABLE mig_applied (version bigint NOT NULL, at timestamptz NOT NULL DEFAULT now());\n")
	} else {
		fmt.Fprintf(&b, "CREATE TABLE mig_v%d (id bigint PRIMARY KEY, note text NOT NULL);\n", v)
	}
	if v >= 3 && v%3 == 1 {
		fmt.Fprintf(&b, "-- the gate of run %d: held by the fault table until the fault is over\nSET LOCAL lock_timeout = 0;\nSELECT pg_advisory_xact_lock(%d, %d);\n", v/3, gateKey, v/3)
	}
	fmt.Fprintf(&b, "INSERT INTO mig_applied (version) VALUES (%d);\n", v)
	return b.String()
}

// migrationTarget is the last version of revision n.
func migrationTarget(n int) int { return 3*n + 2 }

// publishMigrations pushes the migration files of revision n (versions 1
// to 3n+2), hashed by ptah, and returns the artifact's digest.
func (f *faultLab) publishMigrations(n int, env *environment) string {
	f.t.Helper()
	dir := filepath.Join(f.t.TempDir(), fmt.Sprintf("migrations-%d", n))
	if err := os.MkdirAll(dir, 0o755); err != nil {
		f.t.Fatal(err)
	}
	for v := 1; v <= migrationTarget(n); v++ {
		if err := os.WriteFile(filepath.Join(dir, fmt.Sprintf("%04d_v%d.up.sql", v, v)), []byte(migrationVersionSQL(v)), 0o644); err != nil {
			f.t.Fatal(err)
		}
	}
	if _, err := f.l.r.Run(f.ctx, run.Cmd{Name: f.ptah, Args: []string{"migrations", "hash", "--dir", dir}}); err != nil {
		f.t.Fatalf("hash fault migrations %d: %v", n, err)
	}
	// The registry row restarts the registry, and Docker publishes its
	// port anew: the environment's host port is the one it had at lab up.
	port, err := f.l.d.HostPort(f.ctx, f.registry, "5000/tcp")
	if err != nil {
		f.t.Fatalf("the registry's host port: %v", err)
	}
	registry := "127.0.0.1:" + port
	ref := fmt.Sprintf("oci://%s/ledger:faults-%d-%s", registry, n, randomHex(3))
	return f.push(fmt.Sprintf("fault migrations %d", n), env, registry, "migrations", "push", ref, "--dir", dir, "--plain-http")
}

func (f *faultLab) migrationManifest(n int) string {
	return fmt.Sprintf(`apiVersion: operator.ptah.run/v1alpha1
kind: PtahMigration
metadata:
  name: %s
  namespace: %s
spec:
  target:
    engine: postgres
    urlFrom: {name: %s, key: url}
  migrations:
    ociRef: oci://%s/ledger@%s
    registryAuthFrom: {name: %s}
  policy:
    apply: Always
    lockTimeout: 30s
  interval: 2m
  execution:
    deadline: 15m
    failureRetryInterval: 10s
    connectTimeout: 5s
`, faultsMigration, Namespace, databaseSecret, registryInCluster(), f.migDigests[n], registrySecret)
}

func (f *faultLab) migration() (*v1alpha1.PtahMigration, error) {
	var m v1alpha1.PtahMigration
	err := f.c.Get(f.ctx, types.NamespacedName{Namespace: Namespace, Name: faultsMigration}, &m)
	return &m, err
}

// runMigrationTable publishes every revision the rows need, brings the
// migration to revision 0 with no fault (the PtahSchema of the schema rows
// deleted first: the migrations add tables it does not declare), then runs
// each row.
func (f *faultLab) runMigrationTable(rows []migrationRow) []faultResult {
	t := f.t
	t.Helper()
	if _, err := f.l.kubectlCmd(f.ctx, "", "-n", Namespace, "delete", "ptahschema", faultsSchema, "--ignore-not-found", "--wait=true", "--timeout=2m"); err != nil {
		t.Fatalf("delete PtahSchema %s before the migration rows: %v", faultsSchema, err)
	}
	env, err := f.l.environment()
	if err != nil {
		t.Fatal(err)
	}
	for n := 0; n <= len(rows); n++ {
		f.migDigests = append(f.migDigests, f.publishMigrations(n, env))
	}
	start := time.Now()
	f.applyMigration(0)
	if out := f.migConverge(start, 0, "", 8*time.Minute); out != "converged" {
		t.Fatalf("revision 0 of migration %s did not converge before any fault: %s", faultsMigration, out)
	}
	f.migConverged = migrationTarget(0)
	t.Logf("migration revision 0 (versions 1-2) converged with no fault in %s", time.Since(start).Round(time.Second))
	var results []faultResult
	for i, r := range rows {
		start := time.Now()
		res := f.runMigration(r)
		t.Logf("migration fault %d/%d %s: %s, moment %q, recovered in %s, applied once %v (%s), rows intact %v, leftovers %q, credentials %q (run took %s)",
			i+1, len(rows), res.fault, res.outcome, res.moment, res.recover.Round(time.Second), res.appliedOnce, res.ddl, res.rowsIntact,
			res.leftovers, res.credentials, time.Since(start).Round(time.Second))
		if !res.holds {
			t.Errorf("migration fault %s does not hold: %+v", res.fault, res)
		}
		results = append(results, res)
	}
	return results
}

func (f *faultLab) applyMigration(n int) {
	f.t.Helper()
	if _, err := f.l.kubectlCmd(f.ctx, f.migrationManifest(n), "apply", "-f", "-"); err != nil {
		f.t.Fatalf("apply fault migration revision %d: %v", n, err)
	}
}

// holdGate takes the advisory lock version 3n+1 waits for, in a superuser
// session inside PostgreSQL's container, and returns its release.
func (f *faultLab) holdGate(n int) (func(), error) {
	return f.holdSession("faults-gate", fmt.Sprintf("SELECT pg_advisory_lock(%d, %d)", gateKey, n),
		fmt.Sprintf("l.locktype = 'advisory' AND l.granted AND l.classid = %d AND l.objid = %d", gateKey, n))
}

// migMidRunPhase is where a migration row lands unless it names a phase.
var migMidRunPhase = &migrationPhase{
	name:    migPhase,
	hold:    (*faultLab).holdGate,
	reached: (*faultLab).migMidRun,
}

// migMidRun is the moment: the migration's Apply Job running and its
// session waiting at run n's gate, inside version 3n+1's transaction.
func (f *faultLab) migMidRun(n int) (*moment, error) {
	m, err := f.migration()
	if err != nil {
		return nil, err
	}
	c := m.Status.ActiveOperation
	if c == nil || c.Type != v1alpha1.OperationApply || m.Status.ObservedGeneration != m.Generation {
		return nil, nil
	}
	out, err := f.superErr(fmt.Sprintf("SELECT wait_event_type || '/' || wait_event || ': ' || left(query, 80) FROM pg_stat_activity WHERE usename = '%s' AND state = 'active' AND wait_event_type = 'Lock' AND query LIKE '%%pg_advisory_xact_lock(%d, %d)%%' LIMIT 1", appRole, gateKey, n))
	if err != nil || strings.TrimSpace(out) == "" {
		return nil, err
	}
	return &moment{what: fmt.Sprintf("Apply of versions %s waiting on %s; history %s", versionsOf(n), strings.TrimSpace(out), f.historyLine(3*n)), job: c.JobName}, nil
}

func versionsOf(n int) string { return fmt.Sprintf("%d,%d,%d", 3*n, 3*n+1, 3*n+2) }

// historyLine is the history from version from on, a version left dirty
// marked so.
func (f *faultLab) historyLine(from int) string {
	out, err := f.superErr(fmt.Sprintf("SELECT coalesce(string_agg(version::text || CASE WHEN dirty THEN ' (dirty)' ELSE '' END, ', ' ORDER BY version), 'nothing') FROM ptah.migration_revisions WHERE version >= %d", from))
	if err != nil {
		return "unread (" + shortErr(err) + ")"
	}
	return "from version " + strconv.Itoa(from) + ": " + strings.TrimSpace(out)
}

// runMigration lands one fault in the middle of run n and checks the
// invariants, acting as a person when the run stops unresolved.
func (f *faultLab) runMigration(r migrationRow) faultResult {
	p := r.phase
	if p == nil {
		p = migMidRunPhase
	}
	res := faultResult{fault: r.fault.name, phase: p.name}
	f.migRun++
	n := f.migRun
	f.runs++
	f.plant(f.runs)
	f.plantMigrations(f.runs)
	since := time.Now().Add(-time.Second)
	f.runStart = since
	release, err := p.hold(f, n)
	if err != nil {
		res.outcome, res.harness = "could not hold the phase: "+err.Error(), "hold"
		return res
	}
	released := false
	releaseOnce := func() {
		if !released {
			released = true
			release()
		}
	}
	defer releaseOnce()
	f.applyMigration(n)
	var hit *moment
	deadline := time.Now().Add(5 * time.Minute)
	for hit == nil {
		m, err := p.reached(f, n)
		if err != nil {
			f.t.Logf("looking for run %d's phase %s: %v", n, p.name, err)
		}
		hit = m
		if hit == nil {
			if time.Now().After(deadline) {
				mg, _ := f.migration()
				res.outcome = fmt.Sprintf("run %d never reached %s within 5m (phase %s, conditions %s)", n, p.name, mg.Status.Phase, conditionsLine(mg.Status.Conditions))
				return res
			}
			time.Sleep(300 * time.Millisecond)
		}
	}
	hit.what += "; " + f.recordState(hit.job)
	hit.release = releaseOnce
	start := time.Now()
	if err := r.fault.inject(f, hit); err != nil {
		res.outcome, res.harness = "inject failed: "+err.Error(), "inject"
	}
	f.faultDown(r.fault, start, &res, func() ([]metav1.Condition, error) {
		m, err := f.migration()
		return m.Status.Conditions, err
	})
	if r.fault.lift != nil {
		if err := r.fault.lift(f); err != nil {
			res.outcome, res.harness = "lift failed: "+err.Error(), "lift"
		}
	}
	end := time.Now()
	hit.what += "; " + f.jobState(hit.job, start)
	if r.fault.settle {
		f.migNoticed(hit.job, 2*time.Minute)
	}
	releaseOnce()
	outcome := f.migConverge(start, n, "", 10*time.Minute)
	hit.what += "; " + f.hitOutcome(hit.job)
	converged := outcome == "converged"
	if converged && f.migrationEvent(v1alpha1.EventMigrationRunUncertain, since) {
		// The run's own result was lost; a clean reading of the history
		// settled it (what the history says is what committed).
		outcome = "converged, the run recorded uncertain (its result lost) and settled by a reading of the history"
	}
	stopped := strings.HasPrefix(outcome, "stopped:")
	asks := true
	if stopped {
		// The stop must name the run and ask for the acknowledgment.
		asks = strings.Contains(outcome, "PtahMigrationRunAcknowledgment")
		op, did, err := f.actAsPerson(n)
		if err != nil {
			outcome += "; the person could not settle it: " + err.Error()
			res.harness = "settle"
		} else {
			after := time.Now()
			then := f.migConverge(after, n, op, 10*time.Minute)
			outcome += "; " + did + "; then " + then
			converged = then == "converged"
		}
	}
	res.moment = hit.what
	res.recover = time.Since(end)
	if res.outcome == "" {
		res.outcome = outcome
	} else {
		res.outcome += "; " + outcome
	}
	if converged {
		f.migConverged = migrationTarget(n)
	}
	res.ddl, res.appliedOnce = f.migrationsOnce(since, n, converged)
	res.rowsIntact = f.rowsIntact()
	res.leftovers = f.leftovers(runner.LabelMigration + "=" + faultsMigration)
	res.credentials = f.credentialsShown()
	res.holds = converged && asks && res.harness == "" && res.appliedOnce && res.rowsIntact &&
		res.leftovers == "none" && res.credentials == "none" && res.reportedInTime(r.fault)
	provoked(&res, r.fault.provokes, f.reasonsSince(faultsMigration, since))
	return res
}

// plantMigrations inserts 5 rows into the table of every version applied
// so far.
func (f *faultLab) plantMigrations(run int) {
	f.t.Helper()
	var q []string
	for v := 2; v <= f.migConverged; v++ {
		q = append(q, fmt.Sprintf("INSERT INTO mig_v%d (id, note) SELECT %d * 1000 + g, 'planted' FROM generate_series(1, 5) g", v, run))
		f.planted[fmt.Sprintf("mig_v%d", v)] += 5
	}
	if len(q) > 0 {
		f.super(strings.Join(q, ";\n"))
	}
}

// migNoticed waits until the migration's active operation is no longer job.
func (f *faultLab) migNoticed(job string, timeout time.Duration) {
	deadline := time.Now().Add(timeout)
	for time.Now().Before(deadline) {
		if m, err := f.migration(); err == nil && (m.Status.ActiveOperation == nil || m.Status.ActiveOperation.JobName != job) {
			return
		}
		time.Sleep(time.Second)
	}
	f.t.Logf("the manager had not moved on from %s within %s", job, timeout)
}

// migConverge waits for InSync=True (ScopedConverged) at the current
// generation, read after since, at run n's last version; or for the
// migration to rest with an unresolved run, which asks a person (one
// other than the run of operation acknowledged, which the manager is yet
// to settle).
func (f *faultLab) migConverge(since time.Time, n int, acknowledged string, timeout time.Duration) string {
	deadline := time.Now().Add(timeout)
	last := ""
	for time.Now().Before(deadline) {
		m, err := f.migration()
		if err != nil {
			last = "read: " + err.Error()
			time.Sleep(time.Second)
			continue
		}
		in := meta.FindStatusCondition(m.Status.Conditions, v1alpha1.ConditionInSync)
		unresolved := meta.FindStatusCondition(m.Status.Conditions, v1alpha1.ConditionUnresolvedRun)
		switch {
		case in != nil && in.Status == metav1.ConditionTrue && in.Reason == v1alpha1.ReasonScopedConverged &&
			in.ObservedGeneration == m.Generation && m.Status.ObservedGeneration == m.Generation &&
			!in.LastTransitionTime.Time.Before(since.Truncate(time.Second)) &&
			m.Status.AppliedVersion == int64(migrationTarget(n)) && m.Status.ActiveOperation == nil && m.Status.UnresolvedRun == nil:
			return "converged"
		case m.Status.ActiveOperation == nil && m.Status.UnresolvedRun != nil && m.Status.UnresolvedRun.Operation != acknowledged &&
			unresolved != nil && unresolved.Status == metav1.ConditionTrue:
			why := "stopped: UnresolvedRun=True (" + unresolved.Reason + "): " + unresolved.Message
			if c := meta.FindStatusCondition(m.Status.Conditions, v1alpha1.ConditionPlanReady); c != nil && c.Status == metav1.ConditionFalse {
				why += "; PlanReady=False (" + c.Reason + ")"
			}
			if f.migrationEvent(v1alpha1.EventMigrationRunUncertain, since) {
				why += "; Warning MigrationRunUncertain recorded"
			}
			return why
		}
		op := "none"
		if a := m.Status.ActiveOperation; a != nil {
			op = string(a.Type) + " " + a.JobName
		}
		last = fmt.Sprintf("phase %s, version %d, active operation %s, conditions %s", m.Status.Phase, m.Status.AppliedVersion, op, conditionsLine(m.Status.Conditions))
		time.Sleep(time.Second)
	}
	return "not converged within " + timeout.String() + ": " + last
}

// migrationEvent reports whether an Event of reason was recorded on the
// migration since then.
func (f *faultLab) migrationEvent(reason string, since time.Time) bool {
	evs, err := f.kube.CoreV1().Events(Namespace).List(f.ctx, metav1.ListOptions{FieldSelector: "involvedObject.name=" + faultsMigration + ",reason=" + reason})
	if err != nil {
		return false
	}
	for _, e := range evs.Items {
		at := e.LastTimestamp.Time
		if e.EventTime.After(at) {
			at = e.EventTime.Time
		}
		if !at.Before(since.Truncate(time.Second)) {
			return true
		}
	}
	return false
}

// actAsPerson settles run n's unresolved run as the person the condition
// asks for: they end any session the run left, look in the database for
// whether each version left dirty took effect (its table and its
// mig_applied row, written in its transaction), fix its history row
// accordingly, and acknowledge what the history then shows committed.
func (f *faultLab) actAsPerson(n int) (operation, said string, err error) {
	m, err := f.migration()
	if err != nil {
		return "", "", err
	}
	u := m.Status.UnresolvedRun
	if u == nil {
		return "", "", errors.New("no unresolved run recorded")
	}
	var did []string
	ended, err := f.superErr(fmt.Sprintf("SELECT count(pg_terminate_backend(pid, 5000)) FROM pg_stat_activity WHERE usename = '%s' AND pid <> pg_backend_pid() AND state <> 'idle'", appRole))
	if err != nil {
		return "", "", fmt.Errorf("end the run's sessions: %w", err)
	}
	if e := strings.TrimSpace(ended); e != "0" {
		did = append(did, "ended "+e+" session(s) the run left")
	}
	dirty, err := f.superErr("SELECT coalesce(string_agg(version::text, ' '), '') FROM ptah.migration_revisions WHERE dirty")
	if err != nil {
		return "", "", fmt.Errorf("read the history: %w", err)
	}
	for _, v := range strings.Fields(dirty) {
		took, err := f.superErr(fmt.Sprintf("SELECT (to_regclass('public.mig_v%s') IS NOT NULL OR EXISTS (SELECT 1 FROM mig_applied WHERE version = %s))::text", v, v))
		if err != nil {
			return "", "", fmt.Errorf("look for version %s's effect: %w", v, err)
		}
		if strings.TrimSpace(took) == "true" {
			f.super("UPDATE ptah.migration_revisions SET dirty = false WHERE version = " + v)
			did = append(did, "version "+v+" left dirty had taken effect: its row marked clean")
		} else {
			f.super("DELETE FROM ptah.migration_revisions WHERE version = " + v + " AND dirty")
			did = append(did, "version "+v+" left dirty had not taken effect (no table, no count): its row deleted")
		}
	}
	var vs []string
	for _, v := range u.Versions {
		vs = append(vs, strconv.FormatInt(v, 10))
	}
	clean, err := f.superErr(fmt.Sprintf("SELECT coalesce(string_agg(version::text, ' '), '') FROM ptah.migration_revisions WHERE NOT dirty AND version = ANY('{%s}'::bigint[])", strings.Join(vs, ",")))
	if err != nil {
		return "", "", fmt.Errorf("read the history: %w", err)
	}
	var committed []int64
	for _, v := range strings.Fields(clean) {
		x, _ := strconv.ParseInt(v, 10, 64)
		committed = append(committed, x)
	}
	slices.Sort(committed)
	ack := &v1alpha1.PtahMigrationRunAcknowledgment{
		ObjectMeta: metav1.ObjectMeta{Name: fmt.Sprintf("%s-run-%d", faultsMigration, n), Namespace: Namespace},
		Spec: v1alpha1.PtahMigrationRunAcknowledgmentSpec{MigrationName: faultsMigration, Operation: u.Operation,
			Note: "the fault table: " + strings.Join(did, "; ")},
	}
	switch {
	case len(committed) == 0:
		ack.Spec.Outcome = v1alpha1.RunNotApplied
	case len(committed) == len(u.Versions):
		ack.Spec.Outcome = v1alpha1.RunApplied
		ack.Spec.LastCommittedVersion = &committed[len(committed)-1]
	default:
		ack.Spec.Outcome = v1alpha1.RunPartial
		ack.Spec.LastCommittedVersion = &committed[len(committed)-1]
	}
	if err := f.c.Create(f.ctx, ack); err != nil && !apierrors.IsAlreadyExists(err) {
		return "", "", fmt.Errorf("create PtahMigrationRunAcknowledgment %s: %w", ack.Name, err)
	}
	what := string(ack.Spec.Outcome)
	if v := ack.Spec.LastCommittedVersion; v != nil {
		what += fmt.Sprintf(" up to version %d", *v)
	}
	did = append(did, "acknowledged "+what)
	return u.Operation, "a person: " + strings.Join(did, "; "), nil
}

// migrationsOnce counts, on the database side, what the rows' versions
// did: mig_applied (each version writes its own row in its transaction)
// holds no version twice, the history no version left dirty, and
// PostgreSQL's log no DDL statement committed twice; a converged run holds
// every version up to its last exactly once, and committed each of its
// three CREATE TABLE statements exactly once.
func (f *faultLab) migrationsOnce(since time.Time, n int, converged bool) (string, bool) {
	counted, err := f.superErr("SELECT version || '|' || count(*) FROM mig_applied GROUP BY version ORDER BY version")
	if err != nil {
		return "count mig_applied: " + err.Error(), false
	}
	count := map[int]int{}
	for _, line := range strings.Split(strings.TrimSpace(counted), "\n") {
		v, c, _ := strings.Cut(line, "|")
		vi, _ := strconv.Atoi(v)
		ci, _ := strconv.Atoi(c)
		count[vi] = ci
	}
	hist, err := f.superErr("SELECT version || '|' || CASE WHEN dirty THEN 'dirty' ELSE 'clean' END FROM ptah.migration_revisions ORDER BY version")
	if err != nil {
		return "read the history: " + err.Error(), false
	}
	history := map[int]string{}
	for _, line := range strings.Split(strings.TrimSpace(hist), "\n") {
		v, d, _ := strings.Cut(line, "|")
		vi, _ := strconv.Atoi(v)
		history[vi] = d
	}
	ok := true
	var parts []string
	for v, c := range count {
		if c > 1 {
			ok = false
			parts = append(parts, fmt.Sprintf("VERSION %d COUNTED %dx", v, c))
		}
	}
	for v, d := range history {
		if d != "clean" {
			ok = false
			parts = append(parts, fmt.Sprintf("version %d left dirty", v))
		}
	}
	if converged {
		for v := 1; v <= migrationTarget(n); v++ {
			if count[v] != 1 || history[v] != "clean" {
				ok = false
				parts = append(parts, fmt.Sprintf("version %d counted %d, history %q", v, count[v], history[v]))
			}
		}
	}
	var counts []string
	for _, v := range []int{3 * n, 3*n + 1, 3*n + 2} {
		counts = append(counts, strconv.Itoa(count[v]))
	}
	parts = append(parts, fmt.Sprintf("versions %s counted %s in mig_applied, history of %d versions clean", versionsOf(n), strings.Join(counts, ","), len(history)))
	executed, committed, err := f.versionsRun(since)
	if err != nil {
		return err.Error(), false
	}
	for _, v := range []int{3 * n, 3*n + 1, 3*n + 2} {
		key := fmt.Sprintf("version %d", v)
		c, e := committed[key], executed[key]
		if c > 1 || converged && c != 1 {
			ok = false
		}
		parts = append(parts, fmt.Sprintf("version %d's script committed %d of %d run (PostgreSQL's log)", v, c, e))
	}
	return strings.Join(parts, ", "), ok
}

// migLine is PostgreSQL's log line of a version's script run whole, as
// ptah sends it: the file's first line names the version.
var migLine = regexp.MustCompile(`xid=(\d+) db=` + databaseName + ` user=` + appRole + ` LOG:  duration: [0-9.]+ ms  (?:statement|execute [^:]*): -- the fault table's migration version (\d+)$`)

// versionsRun counts each version's script as PostgreSQL ran it to its end
// since then, and how many of those runs committed.
func (f *faultLab) versionsRun(since time.Time) (executed, committed map[string]int, err error) {
	return f.statementsRun(since, func(line string) (string, bool) {
		if m := migLine.FindStringSubmatch(line); m != nil {
			return m[1] + " version " + m[2], true
		}
		return "", false
	})
}
