package controller

import (
	"context"
	"database/sql"
	"encoding/json"
	"errors"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	batchv1 "k8s.io/api/batch/v1"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/client/interceptor"

	v1alpha1 "ptah.run/operator/operator/api/v1alpha1"
	"ptah.run/operator/operator/database"
)

// One test per Event reason the reference records on a PtahMigration: the
// reasons recorded only there as TestEvent<Reason>, the shared ones as
// TestEvent<Reason>OnMigration. Each provokes the trigger against the real
// API server, with the real runner and ptah against PostgreSQL.

// restartMigration stops the manager and starts a new one whose migration
// reconciler mod adjusts (schema adjusts the schema reconciler, whose
// binding and plain-HTTP hosts the migration reconciler shares).
func (e *env) restartMigration(schema func(*SchemaReconciler), mod func(*MigrationReconciler)) {
	e.migrationMod = mod
	e.restart(schema)
}

func TestEventOperationStartedOnMigration(t *testing.T) {
	t.Parallel()
	e := newEnv(t)
	e.migration(pushMigrations(t, "started-"+e.ns, migrationsV1))
	ev := e.awaitMigrationEvent(v1alpha1.EventOperationStarted, converge, nil)
	assertEvent(t, ev, "shop")
	if !strings.HasPrefix(ev.Message, "Observe Job ptah-observe-shop-") || !strings.HasSuffix(ev.Message, " started") {
		t.Errorf("OperationStarted says %q", ev.Message)
	}
	job := strings.TrimSuffix(strings.TrimPrefix(ev.Message, "Observe Job "), " started")
	if js := e.jobs(job); len(js) != 1 || js[0].OwnerReferences[0].Kind != v1alpha1.KindPtahMigration {
		t.Errorf("the Event names Job %s, which is not the migration's: %v", job, names(js))
	}
	migrated(e, 3)
}

func TestEventOperationFailedOnMigration(t *testing.T) {
	t.Parallel()
	e := newEnv(t, func(o *envOption) { o.migration = func(r *MigrationReconciler) { r.MaxAttempts = 1 } })
	e.migration(pushMigrations(t, "failed-"+e.ns, migrationsV1), func(m *v1alpha1.PtahMigration) { m.Spec.Target.URLFrom.Name = "shop-db-broken" })
	ev := e.awaitMigrationEvent(v1alpha1.EventOperationFailed, converge, nil)
	assertEvent(t, ev, "shop")
	if !strings.HasPrefix(ev.Message, "child_exit: ptah exited with code 2: ") || !strings.Contains(ev.Message, "attempt 1 of 1") {
		t.Errorf("OperationFailed says %q, want the failure and the attempt", ev.Message)
	}
	m := e.awaitMigration("ReconciliationFailed=True (OperationFailed)", 10*time.Second,
		migrationCondition(v1alpha1.ConditionReconciliationFailed, metav1.ConditionTrue, v1alpha1.ReasonOperationFailed))
	if !conditionIs(m, v1alpha1.ConditionDatabaseReachable, metav1.ConditionFalse, v1alpha1.ReasonConnectionFailed) {
		t.Errorf("an unreachable database is not DatabaseReachable=False: %s", conditions(m))
	}
	if retried := e.migrationEvents(v1alpha1.EventOperationRetried); len(retried) != 0 {
		t.Errorf("OperationRetried past the bound of 1 attempt: %q", retried)
	}
}

// holdWriterLock takes the ptah writer lock on e's database in a session of
// its own, as another writer would; unlock lets it go.
func holdWriterLock(e *env) (unlock func()) {
	e.t.Helper()
	db, err := sql.Open("pgx", shared.pg.SuperURL(e.db))
	must(e.t, err)
	e.t.Cleanup(func() { db.Close() })
	conn, err := db.Conn(context.Background())
	must(e.t, err)
	_, err = conn.ExecContext(context.Background(), "SELECT pg_advisory_lock($1)", database.LockKey)
	must(e.t, err)
	return func() {
		e.t.Helper()
		_, err := conn.ExecContext(context.Background(), "SELECT pg_advisory_unlock($1)", database.LockKey)
		must(e.t, err)
	}
}

// TestEventOperationRetried: another session holds the ptah writer lock, so
// the first Apply attempt is refused before it changes anything; it is
// retried with the attempt named, and once the lock is free the second
// attempt applies every version exactly once.
func TestEventOperationRetried(t *testing.T) {
	t.Parallel()
	e := newEnv(t)
	unlock := holdWriterLock(e)
	e.migration(pushMigrations(t, "retried-"+e.ns, migrationsV1), func(m *v1alpha1.PtahMigration) {
		m.Spec.Policy.LockTimeout = &metav1.Duration{Duration: time.Second}
	})
	ev := e.awaitMigrationEvent(v1alpha1.EventOperationRetried, converge, nil)
	assertEvent(t, ev, "shop")
	if !strings.Contains(ev.Message, "attempt 1 of 3 of the Apply operation failed, attempt 2 follows") || !strings.Contains(ev.Message, "lock") {
		t.Errorf("OperationRetried says %q, want the attempt numbers and the lock", ev.Message)
	}
	if h := e.history(); h != "" {
		t.Errorf("the refused attempt changed the history: %q", h)
	}
	unlock()
	migrated(e, 3)
	if h, n := e.history(), e.query("SELECT count(*)::text FROM audit"); h != "1 2 3" || n != "1" {
		t.Errorf("after the retry: history %q, migration 3 ran %s times", h, n)
	}
	applies := e.jobs("ptah-apply-shop-")
	if len(applies) != 2 {
		t.Errorf("%d Apply Jobs, want the refused attempt and its retry", len(applies))
	}
}

// unresolvedRun brings a migration to an Apply whose Job is deleted before
// it delivered a record, while readings of the history fail (failing is
// set), so the run stays unresolved. It returns the migration then.
func unresolvedRun(t *testing.T, failing *atomic.Bool, opts ...func(*envOption)) (*env, *v1alpha1.PtahMigration) {
	t.Helper()
	held := make(chan string, 1)
	var once atomic.Bool
	e := newEnv(t, append([]func(*envOption){func(o *envOption) {
		o.kubelet.Hold = func(ctx context.Context, j *batchv1.Job) {
			if strings.HasPrefix(j.Name, "ptah-apply-shop-") && once.CompareAndSwap(false, true) {
				held <- j.Name
				<-ctx.Done()
			}
		}
		o.kubelet.Fail = func(j *batchv1.Job) (string, string, bool) {
			if strings.HasPrefix(j.Name, "ptah-observe-shop-") && failing.Load() {
				return batchv1.JobReasonDeadlineExceeded, "Job was active longer than specified deadline", true
			}
			return "", "", false
		}
	}}, opts...)...)
	e.migration(pushMigrations(t, "unresolved-"+e.ns, migrationsV1))
	var job string
	select {
	case job = <-held:
	case <-time.After(converge):
		t.Fatalf("no Apply Job ran; events:\n%s", e.eventLines())
	}
	failing.Store(true)
	e.awaitMigration("the Apply Job recorded", 20*time.Second, func(m *v1alpha1.PtahMigration) bool {
		return m.Status.ActiveOperation != nil && m.Status.ActiveOperation.JobUID != ""
	})
	must(t, shared.c.Delete(context.Background(), &batchv1.Job{ObjectMeta: metav1.ObjectMeta{Name: job, Namespace: e.ns}},
		client.PropagationPolicy(metav1.DeletePropagationForeground)))
	m := e.awaitMigration("UnresolvedRun=True (RunOutcomeUnknown)", converge, migrationCondition(v1alpha1.ConditionUnresolvedRun, metav1.ConditionTrue, v1alpha1.ReasonRunOutcomeUnknown))
	if u := m.Status.UnresolvedRun; u == nil || u.JobName != job || u.FromVersion != 0 || len(u.Versions) != 3 || u.Database != "Secret shop-db key url" {
		t.Fatalf("status.unresolvedRun %+v, want the Apply Job %s of versions 1,2,3", u, job)
	}
	return e, m
}

// awaitCopy waits for the annotation copy of the unresolved run.
func awaitCopy(e *env) *v1alpha1.PtahMigration {
	e.t.Helper()
	return e.awaitMigration("the unresolved run copied to its annotation", 20*time.Second, func(m *v1alpha1.PtahMigration) bool {
		var u v1alpha1.UnresolvedRun
		return m.Status.UnresolvedRun != nil && json.Unmarshal([]byte(m.Annotations[AnnotationUnresolvedRun]), &u) == nil && u.Operation == m.Status.UnresolvedRun.Operation
	})
}

// assertNothingPlanned: while the run is unresolved, no plan is in status
// and no Apply Job but the unresolved run's exists.
func assertNothingPlanned(t *testing.T, e *env, m *v1alpha1.PtahMigration, unresolved string) {
	t.Helper()
	var others []string
	for _, j := range e.jobs("ptah-apply-shop-") {
		if j.Name != unresolved {
			others = append(others, j.Name)
		}
	}
	if m.Status.Plan != nil || len(others) != 0 {
		t.Errorf("planned while a run is unresolved: plan %+v, Apply Jobs %v", m.Status.Plan, others)
	}
}

func TestEventMigrationRunUncertain(t *testing.T) {
	t.Parallel()
	var failing atomic.Bool
	e, m := unresolvedRun(t, &failing)
	ev := e.awaitMigrationEvent(v1alpha1.EventMigrationRunUncertain, 10*time.Second, nil)
	assertEvent(t, ev, "shop")
	if !strings.Contains(ev.Message, m.Status.UnresolvedRun.JobName) || !strings.Contains(ev.Message, "versions 1,2,3 over version 0") ||
		!strings.Contains(ev.Message, "ended without establishing what it committed") {
		t.Errorf("MigrationRunUncertain says %q", ev.Message)
	}
	job := m.Status.UnresolvedRun.JobName
	awaitCopy(e)
	// Readings fail for a while: nothing is planned meanwhile.
	e.awaitMigrationEvent(v1alpha1.EventOperationRetried, converge, func(msg string) bool { return strings.Contains(msg, "Observe") })
	assertNothingPlanned(t, e, e.getMigration(), job)
	// A clean reading settles it: the Apply never started, so nothing was
	// committed, and the migration converges through a new plan.
	failing.Store(false)
	m = migrated(e, 3)
	if !conditionIs(m, v1alpha1.ConditionUnresolvedRun, metav1.ConditionFalse, v1alpha1.ReasonRunSettled) ||
		!strings.Contains(conditionMessage(m, v1alpha1.ConditionUnresolvedRun), "outcome NotApplied") || m.Status.UnresolvedRun != nil {
		t.Errorf("the reading did not settle the run: %s %q", conditions(m), conditionMessage(m, v1alpha1.ConditionUnresolvedRun))
	}
	if _, ok := m.Annotations[AnnotationUnresolvedRun]; ok {
		t.Errorf("the annotation copy outlived the settled run")
	}
	if h := e.history(); h != "1 2 3" {
		t.Errorf("history %q", h)
	}
}

func conditionMessage(m *v1alpha1.PtahMigration, typ string) string {
	for _, c := range m.Status.Conditions {
		if c.Type == typ {
			return c.Message
		}
	}
	return ""
}

// acknowledge creates bob's acknowledgment of operation, claiming to be
// someone else: admission stamps bob instead.
func acknowledge(t *testing.T, e *env, operation string, outcome v1alpha1.RunOutcome) *v1alpha1.PtahMigrationRunAcknowledgment {
	t.Helper()
	a := &v1alpha1.PtahMigrationRunAcknowledgment{
		ObjectMeta:     metav1.ObjectMeta{Name: "settled", Namespace: e.ns},
		Spec:           v1alpha1.PtahMigrationRunAcknowledgmentSpec{MigrationName: "shop", Operation: operation, Outcome: outcome, Note: "read the history by hand"},
		AcknowledgedBy: &v1alpha1.Acknowledger{Username: "admin"},
	}
	must(t, bobClient(t).Create(context.Background(), a))
	if a.AcknowledgedBy == nil || a.AcknowledgedBy.Username != "bob" {
		t.Fatalf("admission did not stamp bob as the acknowledger: %+v", a.AcknowledgedBy)
	}
	return a
}

func TestEventUnresolvedRunAcknowledged(t *testing.T) {
	t.Parallel()
	var failing atomic.Bool
	e, m := unresolvedRun(t, &failing)
	op := m.Status.UnresolvedRun.Operation
	// An acknowledgment of another operation settles nothing.
	acknowledgeOther := &v1alpha1.PtahMigrationRunAcknowledgment{
		ObjectMeta: metav1.ObjectMeta{Name: "other", Namespace: e.ns},
		Spec:       v1alpha1.PtahMigrationRunAcknowledgmentSpec{MigrationName: "shop", Operation: "sha256:another", Outcome: v1alpha1.RunApplied},
	}
	must(t, bobClient(t).Create(context.Background(), acknowledgeOther))
	e.awaitMigrationEvent(v1alpha1.EventOperationRetried, converge, func(msg string) bool { return strings.Contains(msg, "Observe") })
	if m := e.getMigration(); m.Status.UnresolvedRun == nil {
		t.Fatalf("an acknowledgment of another operation settled the run")
	}
	acknowledge(t, e, op, v1alpha1.RunNotApplied)
	ev := e.awaitMigrationEvent(v1alpha1.EventUnresolvedRunAcknowledged, 30*time.Second, nil)
	assertEvent(t, ev, "shop")
	if !strings.HasPrefix(ev.Message, "bob acknowledged Apply operation "+op) || !strings.Contains(ev.Message, "outcome NotApplied") ||
		!strings.Contains(ev.Message, "read again before anything is planned") {
		t.Errorf("UnresolvedRunAcknowledged says %q, want who, the operation and the outcome", ev.Message)
	}
	m = e.awaitMigration("UnresolvedRun=False (RunSettled)", 10*time.Second, migrationCondition(v1alpha1.ConditionUnresolvedRun, metav1.ConditionFalse, v1alpha1.ReasonRunSettled))
	// The database is read again before anything is planned: the claim
	// after the acknowledgment is a reading, not an Apply.
	if c := m.Status.ActiveOperation; c != nil && c.Type != v1alpha1.OperationObserve {
		t.Errorf("the claim after the acknowledgment is %s, want Observe", c.Type)
	}
	failing.Store(false)
	migrated(e, 3)
	if h := e.history(); h != "1 2 3" {
		t.Errorf("history %q", h)
	}
}

// TestEventUnresolvedRunRestored: the migration is deleted and created
// again from a backup that kept its annotations and dropped its status.
func TestEventUnresolvedRunRestored(t *testing.T) {
	t.Parallel()
	var failing atomic.Bool
	e, _ := unresolvedRun(t, &failing)
	backup := awaitCopy(e)
	must(t, shared.c.Delete(context.Background(), backup))
	e.awaitMigrationEvent(v1alpha1.EventUnresolvedRunDiscarded, 30*time.Second, nil)
	awaitGone(t, e)
	restored := &v1alpha1.PtahMigration{ObjectMeta: metav1.ObjectMeta{Name: "shop", Namespace: e.ns, Annotations: backup.Annotations}, Spec: backup.Spec}
	must(t, shared.c.Create(context.Background(), restored))
	ev := e.awaitMigrationEvent(v1alpha1.EventUnresolvedRunRestored, 30*time.Second, nil)
	assertEvent(t, ev, "shop")
	if !strings.Contains(ev.Message, backup.Status.UnresolvedRun.Operation) || !strings.Contains(ev.Message, AnnotationUnresolvedRun) {
		t.Errorf("UnresolvedRunRestored says %q", ev.Message)
	}
	m := e.awaitMigration("UnresolvedRun=True after the restore", 20*time.Second, migrationCondition(v1alpha1.ConditionUnresolvedRun, metav1.ConditionTrue, v1alpha1.ReasonRunOutcomeUnknown))
	if m.UID == backup.UID || m.Status.UnresolvedRun == nil || m.Status.UnresolvedRun.Operation != backup.Status.UnresolvedRun.Operation {
		t.Fatalf("the restored migration's unresolved run: %+v", m.Status.UnresolvedRun)
	}
	e.awaitMigrationEvent(v1alpha1.EventOperationRetried, converge, func(msg string) bool { return strings.Contains(msg, "Observe") })
	assertNothingPlanned(t, e, e.getMigration(), backup.Status.UnresolvedRun.JobName)
}

func awaitGone(t *testing.T, e *env) {
	t.Helper()
	deadline := time.Now().Add(30 * time.Second)
	for {
		err := shared.c.Get(context.Background(), client.ObjectKey{Namespace: e.ns, Name: "shop"}, &v1alpha1.PtahMigration{})
		if apierrors.IsNotFound(err) {
			return
		}
		if time.Now().After(deadline) {
			t.Fatalf("the PtahMigration was not deleted: %v", err)
		}
		time.Sleep(200 * time.Millisecond)
	}
}

func TestEventUnresolvedRunDiscarded(t *testing.T) {
	t.Parallel()
	var failing atomic.Bool
	e, m := unresolvedRun(t, &failing)
	must(t, shared.c.Delete(context.Background(), m))
	ev := e.awaitMigrationEvent(v1alpha1.EventUnresolvedRunDiscarded, 30*time.Second, nil)
	awaitGone(t, e)
	assertEvent(t, ev, "shop")
	for _, want := range []string{"outcome unknown", "versions 1,2,3 over version 0", "database Secret shop-db key url", m.Status.UnresolvedRun.Operation} {
		if !strings.Contains(ev.Message, want) {
			t.Errorf("UnresolvedRunDiscarded does not say %q: %q", want, ev.Message)
		}
	}
}

func TestEventExecutionBindingChangedOnMigration(t *testing.T) {
	t.Parallel()
	e := newEnv(t, func(o *envOption) { o.migration = failMigrationJobCreates(anyJob) })
	e.migration(pushMigrations(t, "binding-"+e.ns, migrationsV1))
	claimed := *e.awaitMigration("a claim in status", 20*time.Second, func(m *v1alpha1.PtahMigration) bool { return m.Status.ActiveOperation != nil }).Status.ActiveOperation
	e.restartMigration(func(r *SchemaReconciler) { r.Binding.ExecutorImage = "ptah-executor:next" }, nil)
	ev := e.awaitMigrationEvent(v1alpha1.EventExecutionBindingChanged, 30*time.Second, nil)
	assertEvent(t, ev, "shop")
	if !strings.Contains(ev.Message, "its Observe claim "+claimed.JobName+" is discarded") || !strings.Contains(ev.Message, "ptah-executor:next") {
		t.Errorf("ExecutionBindingChanged says %q, want the discarded claim %s and the new binding", ev.Message, claimed.JobName)
	}
	m := migrated(e, 3)
	if m.Status.ExecutionBinding.ExecutorImage != "ptah-executor:next" || len(e.jobs(claimed.JobName)) != 0 {
		t.Errorf("binding %+v; Jobs of the discarded claim %v", m.Status.ExecutionBinding, names(e.jobs(claimed.JobName)))
	}
}

func TestEventRunnerProtocolMismatchOnMigration(t *testing.T) {
	t.Parallel()
	e := newEnv(t, func(o *envOption) {
		o.reconcile = func(r *SchemaReconciler) { r.Binding.Protocol = "ptah.run/runner/v0" }
	})
	e.migration(pushMigrations(t, "protocol-"+e.ns, migrationsV1))
	ev := e.awaitMigrationEvent(v1alpha1.EventRunnerProtocolMismatch, converge, nil)
	assertEvent(t, ev, "shop")
	m := e.awaitMigration("the Observe retried", 20*time.Second, func(m *v1alpha1.PtahMigration) bool {
		return m.Status.ActiveOperation != nil && m.Status.ActiveOperation.Attempt == 2
	})
	if !conditionIs(m, v1alpha1.ConditionReconciliationFailed, metav1.ConditionTrue, v1alpha1.ReasonOperationFailed) {
		t.Errorf("conditions after a protocol mismatch: %s", conditions(m))
	}
}

func TestEventResultCredentialFailedOnMigration(t *testing.T) {
	t.Parallel()
	e := newEnv(t)
	q := quota(e, "count/serviceaccounts")
	e.migration(pushMigrations(t, "credential-"+e.ns, migrationsV1))
	ev := e.awaitMigrationEvent(v1alpha1.EventResultCredentialFailed, 30*time.Second, nil)
	assertEvent(t, ev, "shop")
	if n := len(e.jobs("")); n != 0 {
		t.Errorf("%d Jobs were created without a result credential", n)
	}
	must(t, shared.c.Delete(context.Background(), q))
	migrated(e, 3)
}

func TestEventPodAdmissionRefusedOnMigration(t *testing.T) {
	t.Parallel()
	e := newEnv(t)
	q := quota(e, "count/pods")
	e.migration(pushMigrations(t, "pods-"+e.ns, migrationsV1))
	ev := e.awaitMigrationEvent(v1alpha1.EventPodAdmissionRefused, converge, nil)
	assertEvent(t, ev, "shop")
	if !strings.Contains(ev.Message, "forbidden") {
		t.Errorf("PodAdmissionRefused does not carry the refusal: %q", ev.Message)
	}
	must(t, shared.c.Delete(context.Background(), q))
	migrated(e, 3)
}

func TestEventAdmissionSnapshotRefreshedOnMigration(t *testing.T) {
	t.Parallel()
	tls := func(r *SchemaReconciler) { r.PlainHTTP = nil }
	e := newEnv(t, func(o *envOption) {
		o.reconcile = tls
		o.migration = failMigrationJobCreates(anyJob)
	})
	e.migration(pushMigrations(t, "snapshot-"+e.ns, migrationsV1))
	claimed := *e.awaitMigration("a claim in status", 20*time.Second, func(m *v1alpha1.PtahMigration) bool { return m.Status.ActiveOperation != nil }).Status.ActiveOperation
	e.restartMigration(nil, nil)
	ev := e.awaitMigrationEvent(v1alpha1.EventAdmissionSnapshotRefreshed, 30*time.Second, nil)
	assertEvent(t, ev, "shop")
	if !strings.Contains(ev.Message, claimed.JobName) || !strings.Contains(ev.Message, claimed.PodTemplateDigest) {
		t.Errorf("AdmissionSnapshotRefreshed does not name the claim %s and its recorded template: %q", claimed.JobName, ev.Message)
	}
	migrated(e, 3)
	if observes := e.jobs("ptah-observe-shop-"); len(observes) == 0 || observes[0].Name != claimed.JobName {
		t.Errorf("Observe Jobs %v, want the claimed %s first", names(observes), claimed.JobName)
	}
}

func TestEventResultReadTimedOutOnMigration(t *testing.T) {
	t.Parallel()
	api := startSlowAPI(t, "ptahresultrecords", 4*time.Second)
	e := newEnv(t, func(o *envOption) {
		o.config = api.config
		o.migration = func(r *MigrationReconciler) { r.ResultTimeout = time.Second }
	})
	api.slow.Store(true)
	e.migration(pushMigrations(t, "slow-"+e.ns, migrationsV1))
	ev := e.awaitMigrationEvent(v1alpha1.EventResultReadTimedOut, converge, nil)
	api.slow.Store(false)
	assertEvent(t, ev, "shop")
	if !strings.Contains(ev.Message, "exceeded its time bound of 1s") || !strings.Contains(ev.Message, "ptah-observe-shop-") {
		t.Errorf("ResultReadTimedOut does not name the read of the Observe's record and its time bound: %q", ev.Message)
	}
	migrated(e, 3)
}

// TestEventResultReadFailedOnMigration: the manager's reads of result
// records fail (a fault only the interceptor can provoke at will, as an
// API server that refuses for a while would), then succeed.
func TestEventResultReadFailedOnMigration(t *testing.T) {
	t.Parallel()
	var refusals atomic.Int32
	refusals.Store(2)
	refuse := func(ctx context.Context, c client.WithWatch, key client.ObjectKey, o client.Object, opts ...client.GetOption) error {
		if _, ok := o.(*v1alpha1.PtahResultRecord); ok && refusals.Add(-1) >= 0 {
			return apierrors.NewServiceUnavailable("the API server is restarting")
		}
		return c.Get(ctx, key, o, opts...)
	}
	e := newEnv(t, func(o *envOption) {
		o.migration = func(r *MigrationReconciler) {
			r.Client = interceptor.NewClient(noWatch{r.Client}, interceptor.Funcs{Get: refuse})
		}
	})
	e.migration(pushMigrations(t, "readfailed-"+e.ns, migrationsV1))
	ev := e.awaitMigrationEvent(v1alpha1.EventResultReadFailed, converge, nil)
	assertEvent(t, ev, "shop")
	if !strings.Contains(ev.Message, "reading the result of Observe operation ptah-observe-shop-") || !strings.Contains(ev.Message, "restarting") {
		t.Errorf("ResultReadFailed does not identify the failed read: %q", ev.Message)
	}
	migrated(e, 3)
}

// TestMigrationEditedAppliedMigrationIsRefused: a new artifact whose
// already applied version 2 was edited is refused by name, and nothing is
// planned or applied from it; the artifact as applied plus a new version
// goes on.
func TestMigrationEditedAppliedMigrationIsRefused(t *testing.T) {
	t.Parallel()
	e := newEnv(t)
	e.migration(pushMigrations(t, "edited-"+e.ns, migrationsV1))
	migrated(e, 3)
	edited := pushMigrations(t, "edited2-"+e.ns, with(with(migrationsV1, "0002_orders.up.sql",
		"CREATE TABLE orders (id bigint PRIMARY KEY, customer_id bigint NOT NULL REFERENCES customers (id), total numeric);\n"),
		"0004_notes.up.sql", "ALTER TABLE orders ADD COLUMN note text;\n"))
	e.updateMigration(func(m *v1alpha1.PtahMigration) { m.Spec.Migrations.OCIRef = edited })
	m := e.awaitMigration("Ready=False (AppliedMigrationModified)", converge, migrationCondition(v1alpha1.ConditionReady, metav1.ConditionFalse, v1alpha1.ReasonAppliedMigrationModified))
	msg := conditionMessage(m, v1alpha1.ConditionReady)
	if !strings.Contains(msg, "migration 2 was applied with checksum") || m.Status.Phase != v1alpha1.PhaseBlocked || m.Status.Plan != nil {
		t.Errorf("the refusal: phase %s, plan %+v, %q", m.Status.Phase, m.Status.Plan, msg)
	}
	refused := e.awaitMigrationEvent(v1alpha1.EventOperationFailed, 5*time.Second, nil)
	if !strings.Contains(refused.Message, "history_modified") || !strings.Contains(refused.Message, "migration 2") {
		t.Errorf("the Event does not name the edited version: %q", refused.Message)
	}
	if applies := e.jobs("ptah-apply-shop-"); len(applies) != 1 {
		t.Errorf("Apply Jobs %v after the refusal, want only the first run's", names(applies))
	}
	if h := e.history(); h != "1 2 3" || strings.Contains(e.query("SELECT string_agg(column_name, ' ') FROM information_schema.columns WHERE table_name = 'orders'"), "note") {
		t.Errorf("the refused artifact changed the database: history %q", h)
	}
}

// TestMigrationOnApproval: nothing is applied before a stamped approval
// names the plan; the approval is consumed once, by the Apply's claim.
func TestMigrationOnApproval(t *testing.T) {
	t.Parallel()
	e := newEnv(t)
	e.migration(pushMigrations(t, "approval-"+e.ns, migrationsV1), func(m *v1alpha1.PtahMigration) { m.Spec.Policy.Apply = v1alpha1.ApplyOnApproval })
	m := e.awaitMigration("ApprovalRequired=True", converge, migrationCondition(v1alpha1.ConditionApprovalRequired, metav1.ConditionTrue, v1alpha1.ReasonAwaitingApproval))
	if m.Status.Phase != v1alpha1.PhaseAwaitingApproval || m.Status.Plan == nil || len(e.jobs("ptah-apply-")) != 0 || e.history() != "" {
		t.Fatalf("awaiting approval: phase %s, plan %+v, Apply Jobs %d", m.Status.Phase, m.Status.Plan, len(e.jobs("ptah-apply-")))
	}
	// An approval of another fingerprint is not consumed.
	wrong := &v1alpha1.PtahMigrationApproval{ObjectMeta: metav1.ObjectMeta{Name: "wrong", Namespace: e.ns},
		Spec: v1alpha1.PtahMigrationApprovalSpec{MigrationName: "shop", PlanName: m.Status.Plan.Name, PlanFingerprint: "sha256:other"}}
	must(t, bobClient(t).Create(context.Background(), wrong))
	a := &v1alpha1.PtahMigrationApproval{ObjectMeta: metav1.ObjectMeta{Name: "ok", Namespace: e.ns},
		Spec:       v1alpha1.PtahMigrationApprovalSpec{MigrationName: "shop", PlanName: m.Status.Plan.Name, PlanFingerprint: m.Status.Plan.Fingerprint},
		ApprovedBy: &v1alpha1.Approver{Username: "admin"}}
	must(t, bobClient(t).Create(context.Background(), a))
	if a.ApprovedBy == nil || a.ApprovedBy.Username != "bob" {
		t.Fatalf("admission did not stamp bob: %+v", a.ApprovedBy)
	}
	migrated(e, 3)
	for name, want := range map[string]bool{"ok": true, "wrong": false} {
		var got v1alpha1.PtahMigrationApproval
		must(t, shared.c.Get(context.Background(), client.ObjectKey{Namespace: e.ns, Name: name}, &got))
		if consumed := got.Annotations[AnnotationConsumedBy] != ""; consumed != want {
			t.Errorf("approval %s consumed %v, want %v", name, consumed, want)
		}
	}
	if applies := e.jobs("ptah-apply-shop-"); len(applies) != 1 {
		t.Errorf("Apply Jobs %v, want one", names(applies))
	}
}

// TestMigrationAppliedOnceAcrossRestart: the manager stops while the Apply
// Job runs; the Job finishes while no manager runs, and a new manager
// consumes its record. Each version's history row exists once, and the DDL
// and data of each version ran once.
func TestMigrationAppliedOnceAcrossRestart(t *testing.T) {
	t.Parallel()
	g := holdFirst("ptah-apply-shop-")
	e := newEnv(t, func(o *envOption) {
		o.kubelet.Hold = g.hold
	})
	e.migration(pushMigrations(t, "restart-"+e.ns, migrationsV1))
	var job string
	select {
	case job = <-g.held:
	case <-time.After(converge):
		t.Fatalf("no Apply Job ran; events:\n%s", e.eventLines())
	}
	e.stop()
	g.open()
	wctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	if _, err := e.kubelet.Wait(wctx, e.ns, job); err != nil {
		t.Fatal(err)
	}
	e.startManager(nil)
	migrated(e, 3)
	if h, n := e.history(), e.query("SELECT count(*)::text FROM audit"); h != "1 2 3" || n != "1" {
		t.Errorf("history %q, migration 3 ran %s times", h, n)
	}
	if applies := e.jobs("ptah-apply-shop-"); len(applies) != 1 || applies[0].Name != job {
		t.Errorf("Apply Jobs %v, want only %s", names(applies), job)
	}
	finished := e.migrationEvents(v1alpha1.EventMigrationRunFinished)
	if len(finished) != 1 || !strings.Contains(finished[0], "Applied: versions 1,2,3") {
		t.Errorf("MigrationRunFinished %q, want one Applied run", finished)
	}
}

// TestMigrationApplyOutlivesSuspendAndEdits: while the Apply Job runs the
// spec is suspended and its target changed; the Job is not deleted, its
// result is recorded, and only then does the migration stop.
func TestMigrationApplyOutlivesSuspendAndEdits(t *testing.T) {
	t.Parallel()
	g := holdFirst("ptah-apply-shop-")
	e := newEnv(t, func(o *envOption) {
		o.kubelet.Hold = g.hold
	})
	e.migration(pushMigrations(t, "suspend-"+e.ns, migrationsV1))
	job := <-g.held
	e.updateMigration(func(m *v1alpha1.PtahMigration) { m.Spec.Suspend = true; m.Spec.TargetVersion = "1" })
	time.Sleep(2 * time.Second) // the manager sees the edit while the Job is held
	var j batchv1.Job
	must(t, shared.c.Get(context.Background(), client.ObjectKey{Namespace: e.ns, Name: job}, &j))
	if !j.DeletionTimestamp.IsZero() {
		t.Fatalf("the running Apply Job was deleted after a spec edit")
	}
	g.open()
	e.awaitMigrationEvent(v1alpha1.EventMigrationRunFinished, converge, func(msg string) bool { return strings.Contains(msg, "Applied: versions 1,2,3") })
	e.awaitMigration("Suspended", 30*time.Second, func(m *v1alpha1.PtahMigration) bool {
		return m.Status.Phase == v1alpha1.PhaseSuspended && m.Status.ActiveOperation == nil && m.Status.ObservedGeneration == m.Generation
	})
	if h := e.history(); h != "1 2 3" {
		t.Errorf("history %q", h)
	}
	e.updateMigration(func(m *v1alpha1.PtahMigration) { m.Spec.Suspend = false })
	m := migrated(e, 3)
	if m.Status.Plan != nil {
		t.Errorf("a plan for target 1 below the applied version 3: %+v", m.Status.Plan)
	}
}

// TestEventMigrationJobCleanupDeferred: a running Observe's claim is
// discarded by a spec edit, and the API server refuses to delete its Job
// (a fault only the interceptor can provoke at will). The Job keeps its
// deadline, and the new generation goes on.
func TestEventMigrationJobCleanupDeferred(t *testing.T) {
	t.Parallel()
	g := holdFirst("ptah-observe-shop-")
	e := newEnv(t, func(o *envOption) {
		o.kubelet.Hold = g.hold
		o.migration = func(r *MigrationReconciler) {
			r.Client = interceptor.NewClient(noWatch{r.Client}, interceptor.Funcs{
				Delete: func(ctx context.Context, c client.WithWatch, o client.Object, opts ...client.DeleteOption) error {
					if _, ok := o.(*batchv1.Job); ok {
						return apierrors.NewInternalError(errors.New("etcd is unavailable"))
					}
					return c.Delete(ctx, o, opts...)
				},
			})
		}
	})
	t.Cleanup(func() { g.open() })
	e.migration(pushMigrations(t, "cleanup-"+e.ns, migrationsV1))
	job := <-g.held
	e.updateMigration(func(m *v1alpha1.PtahMigration) { m.Spec.TargetVersion = "2" })
	ev := e.awaitMigrationEvent(v1alpha1.EventMigrationJobCleanupDeferred, 30*time.Second, nil)
	assertEvent(t, ev, "shop")
	if !strings.Contains(ev.Message, job) || !strings.Contains(ev.Message, "keeps its own deadline of 2m0s") {
		t.Errorf("MigrationJobCleanupDeferred says %q, want the Job %s and its deadline", ev.Message, job)
	}
	var j batchv1.Job
	must(t, shared.c.Get(context.Background(), client.ObjectKey{Namespace: e.ns, Name: job}, &j))
	if j.Spec.ActiveDeadlineSeconds == nil || *j.Spec.ActiveDeadlineSeconds != 120 {
		t.Errorf("the Job left to its deadline has activeDeadlineSeconds %v", j.Spec.ActiveDeadlineSeconds)
	}
	migrated(e, 2)
	if h := e.history(); h != "1 2" {
		t.Errorf("history %q, want 1 2 under target 2", h)
	}
}

// TestEventTargetLockReleaseOwed: the Apply's Job is gone, and a session
// of the run still holds the ptah writer lock (here: a session the test
// opens, as a run whose Pod died leaves one until PostgreSQL ends it). The
// reading that would settle the run is not granted the lock, and is tried
// again; once the lock is released, the reading settles the run.
func TestEventTargetLockReleaseOwed(t *testing.T) {
	t.Parallel()
	var failing atomic.Bool
	e, m := unresolvedRun(t, &failing, func(o *envOption) {
		o.migration = func(r *MigrationReconciler) { r.MaxAttempts = 10 }
	})
	db, err := sql.Open("pgx", shared.pg.SuperURL(e.db))
	must(t, err)
	t.Cleanup(func() { db.Close() })
	conn, err := db.Conn(context.Background())
	must(t, err)
	_, err = conn.ExecContext(context.Background(), "SELECT pg_advisory_lock($1)", database.LockKey)
	must(t, err)
	e.updateMigration(func(m *v1alpha1.PtahMigration) { m.Spec.Policy.LockTimeout = &metav1.Duration{Duration: time.Second} })
	failing.Store(false)
	ev := e.awaitMigrationEvent(v1alpha1.EventTargetLockReleaseOwed, converge, nil)
	assertEvent(t, ev, "shop")
	if !strings.Contains(ev.Message, m.Status.UnresolvedRun.Operation) || !strings.Contains(ev.Message, "Secret shop-db key url") {
		t.Errorf("TargetLockReleaseOwed says %q", ev.Message)
	}
	if m := e.getMigration(); m.Status.UnresolvedRun == nil || m.Status.Plan != nil {
		t.Fatalf("the run was settled, or planned, without the lock: %+v %+v", m.Status.UnresolvedRun, m.Status.Plan)
	}
	_, err = conn.ExecContext(context.Background(), "SELECT pg_advisory_unlock($1)", database.LockKey)
	must(t, err)
	m = migrated(e, 3)
	if !conditionIs(m, v1alpha1.ConditionUnresolvedRun, metav1.ConditionFalse, v1alpha1.ReasonRunSettled) {
		t.Errorf("the run is not settled: %s", conditions(m))
	}
}

// TestMigrationDeletionWaitsForApply: the migration is deleted while its
// Apply runs. The Job is not collected before it ends (the finalizer holds
// the migration, and with it the Job), the versions are applied once, and
// then the deletion completes.
func TestMigrationDeletionWaitsForApply(t *testing.T) {
	t.Parallel()
	g := holdFirst("ptah-apply-shop-")
	e := newEnv(t, func(o *envOption) {
		o.kubelet.Hold = g.hold
	})
	e.migration(pushMigrations(t, "delete-"+e.ns, migrationsV1))
	job := <-g.held
	e.awaitMigration("the Apply Job recorded", 20*time.Second, func(m *v1alpha1.PtahMigration) bool {
		return m.Status.ActiveOperation != nil && m.Status.ActiveOperation.JobUID != ""
	})
	must(t, shared.c.Delete(context.Background(), e.getMigration()))
	time.Sleep(2 * time.Second) // the manager sees the deletion while the Job is held
	if err := shared.c.Get(context.Background(), client.ObjectKey{Namespace: e.ns, Name: "shop"}, &v1alpha1.PtahMigration{}); err != nil {
		t.Fatalf("the migration went while its Apply ran: %v", err)
	}
	g.open()
	wctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	if _, err := e.kubelet.Wait(wctx, e.ns, job); err != nil {
		t.Fatal(err)
	}
	awaitGone(t, e)
	if h, n := e.history(), e.query("SELECT count(*)::text FROM audit"); h != "1 2 3" || n != "1" {
		t.Errorf("history %q, migration 3 ran %s times", h, n)
	}
	if d := e.migrationEvents(v1alpha1.EventUnresolvedRunDiscarded); len(d) != 0 {
		t.Errorf("a run that delivered its record was reported discarded: %q", d)
	}
}

// TestMigrationRefusalsHaveTheirOwnReasons: a history row left dirty reads
// MigrationRunDirty, not AppliedMigrationModified, and an artifact holding a
// migration that commits part of itself (pushed with a hand-written
// checksum file) reads MigrationNotTransactional; neither plans nor applies.
func TestMigrationRefusalsHaveTheirOwnReasons(t *testing.T) {
	t.Parallel()
	e := newEnv(t)
	e.migration(pushMigrations(t, "refusals-"+e.ns, migrationsV1))
	migrated(e, 3)
	e.query("WITH u AS (UPDATE ptah.migration_revisions SET dirty = true WHERE version = 3 RETURNING 1) SELECT count(*)::text FROM u")
	next := with(migrationsV1, "0004_notes.up.sql", "ALTER TABLE orders ADD COLUMN note text;\n")
	e.updateMigration(func(m *v1alpha1.PtahMigration) { m.Spec.Migrations.OCIRef = pushMigrations(t, "refusals2-"+e.ns, next) })
	m := e.awaitMigration("PlanReady=False (MigrationRunDirty)", converge, migrationCondition(v1alpha1.ConditionPlanReady, metav1.ConditionFalse, v1alpha1.ReasonMigrationRunDirty))
	for _, typ := range []string{v1alpha1.ConditionReady, v1alpha1.ConditionInSync, v1alpha1.ConditionStalled} {
		want := metav1.ConditionFalse
		if typ == v1alpha1.ConditionStalled {
			want = metav1.ConditionTrue
		}
		if !holds(m, typ, want, v1alpha1.ReasonMigrationRunDirty) {
			t.Errorf("%s is not %s (MigrationRunDirty): %+v", typ, want, m.Status.Conditions)
		}
	}
	if msg := conditionMessage(m, v1alpha1.ConditionReady); !strings.Contains(msg, "migration 3 (audit) was started and never recorded as finished") || m.Status.Plan != nil {
		t.Errorf("the dirty refusal: plan %+v, %q", m.Status.Plan, msg)
	}

	e.query("WITH u AS (UPDATE ptah.migration_revisions SET dirty = false WHERE version = 3 RETURNING 1) SELECT count(*)::text FROM u")
	half := with(next, "0004_notes.up.sql", "ALTER TABLE orders ADD COLUMN note text;\nCOMMIT;\nDROP TABLE audit;\n")
	e.updateMigration(func(m *v1alpha1.PtahMigration) {
		m.Spec.Migrations.OCIRef = pushUncheckedMigrations(t, "refusals3-"+e.ns, half)
	})
	m = e.awaitMigration("PlanReady=False (MigrationNotTransactional)", converge, migrationCondition(v1alpha1.ConditionPlanReady, metav1.ConditionFalse, v1alpha1.ReasonMigrationNotTransactional))
	if msg := conditionMessage(m, v1alpha1.ConditionReady); !holds(m, v1alpha1.ConditionReady, metav1.ConditionFalse, v1alpha1.ReasonMigrationNotTransactional) ||
		!strings.Contains(msg, "0004_notes.up.sql:2") || !strings.Contains(msg, "remove the COMMIT at line 2") || m.Status.Plan != nil {
		t.Errorf("the refusal: plan %+v, %q", m.Status.Plan, msg)
	}
	refused := e.awaitMigrationEvent(v1alpha1.EventOperationFailed, 5*time.Second, func(msg string) bool { return strings.Contains(msg, "not_transactional") })
	if refused.Type != corev1.EventTypeWarning {
		t.Errorf("OperationFailed is %s", refused.Type)
	}
	if applies := e.jobs("ptah-apply-shop-"); len(applies) != 1 {
		t.Errorf("Apply Jobs %v after the refusals, want only the first run's", names(applies))
	}
	if h, audit := e.history(), e.query("SELECT (to_regclass('public.audit') IS NOT NULL)::text"); h != "1 2 3" || audit != "true" {
		t.Errorf("history %q, audit table %s: the refused migration ran", h, audit)
	}

	// An applied version without its file, then a pending one below the applied ones.
	missing := map[string]string{}
	for n, text := range next {
		if n != "0002_orders.up.sql" {
			missing[n] = text
		}
	}
	for _, c := range []struct {
		tag    string
		files  map[string]string
		reason string
		says   string
		before string
	}{
		{"refusals4-", missing, v1alpha1.ReasonAppliedMigrationMissing, "migration 2 (orders) was applied but has no file", ""},
		{"refusals5-", with(next, "0005_more.up.sql", "CREATE TABLE more (id int);\n"), v1alpha1.ReasonMigrationOutOfOrder, "migration 2 (0002_orders.up.sql) is pending but older than the applied 3",
			"WITH d AS (DELETE FROM ptah.migration_revisions WHERE version = 2 RETURNING 1) SELECT count(*)::text FROM d"},
	} {
		if c.before != "" {
			e.query(c.before)
		}
		e.updateMigration(func(m *v1alpha1.PtahMigration) { m.Spec.Migrations.OCIRef = pushMigrations(t, c.tag+e.ns, c.files) })
		m = e.awaitMigration("Ready=False ("+c.reason+")", converge, migrationCondition(v1alpha1.ConditionReady, metav1.ConditionFalse, c.reason))
		if msg := conditionMessage(m, v1alpha1.ConditionPlanReady); !holds(m, v1alpha1.ConditionPlanReady, metav1.ConditionFalse, c.reason) || !strings.Contains(msg, c.says) {
			t.Errorf("%s: PlanReady %q", c.reason, msg)
		}
	}
	if applies := e.jobs("ptah-apply-shop-"); len(applies) != 1 || e.history() != "1 3" {
		t.Errorf("Apply Jobs %v, history %q after the refusals", names(applies), e.history())
	}
}
