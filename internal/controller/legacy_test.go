package controller

import (
	"context"
	"fmt"
	"slices"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	batchv1 "k8s.io/api/batch/v1"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/client/interceptor"

	"ptah.run/operator/internal/jobsim"
	"ptah.run/operator/internal/runner"
	v1alpha1 "ptah.run/operator/operator/api/v1alpha1"
)

// kubeletLogs serves a Pod's log from what the real runner wrote in it under
// jobsim. It is the one fake of these tests, and says why: envtest runs no
// kubelet, so the API server's pods/log subresource has nowhere to read a
// container's log from (it answers that the Pod has no host). The bytes it
// serves are the runner's own, unchanged; lose makes the log unreadable, as
// a container the node already removed is.
type kubeletLogs struct {
	k     *jobsim.Kubelet
	reads atomic.Int32
	lose  atomic.Bool
	// lost names Pods whose logs are always lost.
	lost string
}

func (l *kubeletLogs) ContainerLog(_ context.Context, namespace, pod, container string) ([]byte, error) {
	l.reads.Add(1)
	if container != runnerContainer {
		return nil, fmt.Errorf("container %s is not in Pod %s", container, pod)
	}
	log, ok := l.k.PodLog(namespace, pod)
	if !ok || l.lose.Load() || l.lost != "" && strings.HasPrefix(pod, l.lost) {
		return nil, fmt.Errorf("the log of container %s of Pod %s/%s is not available", container, namespace, pod)
	}
	return []byte(log), nil
}

// legacyRun dispatches claim c of m as a legacy Job, as the manager builds
// it, lets jobsim run the real runner and ptah in it, and returns the
// finished Job.
func legacyRun(e *env, m *v1alpha1.PtahMigration, c *v1alpha1.ActiveOperation, op runner.Operation, b v1alpha1.ExecutionBinding) *batchv1.Job {
	t := e.t
	op.ID, op.Digest, op.Namespace, op.Schema, op.SchemaUID, op.Kind, op.RecordName = c.ID, c.CoordinationDigest, m.Namespace, m.Name, string(m.UID), v1alpha1.KindPtahMigration, c.JobName
	op.OCIRef, op.PlainHTTP, op.ResultTransport = m.Spec.Migrations.OCIRef, true, runner.TransportPodLog
	j := job(m, c, b, op)
	if got := jobTransport(j); got != runner.TransportPodLog {
		t.Fatalf("a Job built for the legacy transport records %q", got)
	}
	// The Pod is the durable one's, account and token included, so the
	// credential is issued as for any Job; the runner does not use it.
	must(t, issueCredential(context.Background(), shared.c, m, c))
	must(t, shared.c.Create(context.Background(), j))
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	run, err := e.kubelet.Wait(ctx, e.ns, j.Name)
	must(t, err)
	if run.Condition != batchv1.JobComplete {
		t.Fatalf("legacy Job %s: %s %s\n%s", j.Name, run.Condition, run.Reason, run.Log)
	}
	must(t, shared.c.Get(context.Background(), client.ObjectKeyFromObject(j), j))
	return j
}

// TestLegacyResultRead runs migration Jobs under the legacy transport with
// the real runner, ptah, registry and PostgreSQL, and reads their results as
// the manager does, from the Pod's log and termination message on a real
// API server: a reading and an Apply are read from their frames; an Apply
// whose log is lost is read from its summary; and the summary is refused
// when it belongs to another attempt, when it was cut short, or when the
// log holds another operation's frame. A durable Job whose record is
// missing is never read from its log or summary, though both are there.
func TestLegacyResultRead(t *testing.T) {
	t.Parallel()
	e := newEnv(t)
	ctx := context.Background()
	ref := pushMigrations(t, "legacy-"+e.ns, map[string]string{
		"0001_accounts.up.sql": "CREATE TABLE accounts (id bigserial PRIMARY KEY);\n",
		"0002_entries.up.sql":  "CREATE TABLE entries (id bigserial PRIMARY KEY, account_id bigint REFERENCES accounts (id));\n",
	})
	m := &v1alpha1.PtahMigration{ObjectMeta: metav1.ObjectMeta{Name: "ledger", Namespace: e.ns}, Spec: v1alpha1.PtahMigrationSpec{
		Target:     v1alpha1.Target{URLFrom: v1alpha1.SecretKeyRef{Name: "shop-db", Key: "url"}},
		Migrations: v1alpha1.MigrationsSource{OCIRef: ref, RegistryAuthFrom: &v1alpha1.LocalRef{Name: "registry"}},
		// The test plays the manager's part by hand: the running manager,
		// which revokes credentials no claim of its own names (and so keeps
		// a Pod of this test Pending for its missing ServiceAccount), starts
		// nothing.
		Suspend: true,
	}}
	must(t, shared.c.Create(ctx, m))
	b := Binding{ExecutorImage: "ptah-executor:test", PtahVersion: "test", Protocol: runner.ProtocolVersion}.of(m)
	logs := &kubeletLogs{k: e.kubelet}
	const timeout = 5 * time.Second
	read := func(c *v1alpha1.ActiveOperation, j *batchv1.Job, now time.Time) (*v1alpha1.PtahResultRecord, *legacyRead) {
		t.Helper()
		_, finished := jobFinished(j)
		rec, lr, err := jobResult(ctx, shared.c, shared.c, nil, logs, timeout, m, c, j, finished, now)
		if err != nil {
			t.Fatalf("read the result of %s: %v", j.Name, err)
		}
		return rec, lr
	}

	observe := subjectClaim(m, m.Spec, "", v1alpha1.OperationObserve, 1, b, time.Now())
	jo := legacyRun(e, m, observe, runner.Operation{Type: runner.OpMigrationObserve}, b)
	rec, _ := read(observe, jo, time.Now())
	if rec == nil || rec.Spec.Result == nil || rec.Spec.Result.Migrations == nil || rec.Spec.Result.Migrations.Status != v1alpha1.MigrationPending ||
		len(rec.Spec.Result.Migrations.Pending) != 2 {
		t.Fatalf("the reading read from its log: %+v", rec)
	}

	apply := subjectClaim(m, m.Spec, "plan-1", v1alpha1.OperationApply, 1, b, time.Now())
	ja := legacyRun(e, m, apply, runner.Operation{Type: runner.OpMigrationApply, ExpectSequence: []int64{1, 2}}, b)
	applied := func(rec *v1alpha1.PtahResultRecord) bool {
		mr := rec.Spec.Result.Migrations
		return mr.Status == v1alpha1.MigrationApplied && slices.Equal(mr.AppliedNow, []int64{1, 2}) && mr.Current == 2
	}
	rec, _ = read(apply, ja, time.Now())
	if rec == nil || rec.Spec.Result == nil || !applied(rec) || rec.Spec.OperationID != apply.ID {
		t.Fatalf("the Apply read from its log: %+v", rec)
	}

	// The log is lost: within the log-loss window the read fails (and is
	// retried); after it, the Apply's summary stands in.
	logs.lose.Store(true)
	_, finished := jobFinished(ja)
	if _, _, err := jobResult(ctx, shared.c, shared.c, nil, logs, timeout, m, apply, ja, finished, finished.Add(timeout/2)); err == nil ||
		!strings.Contains(err.Error(), "read the log of Pod") {
		t.Errorf("a lost log inside the window: %v, want a read failure to retry", err)
	}
	after := finished.Add(2 * timeout)
	rec, lr := read(apply, ja, after)
	if rec == nil || !lr.FromSummary || !applied(rec) {
		t.Fatalf("the Apply read from its summary: %+v %+v", rec, lr)
	}
	// A read-only operation whose log is lost is run again, never read from a summary.
	if rec, lr := read(observe, jo, after); rec != nil || lr.Unreadable == "" {
		t.Errorf("a reading whose log is lost: %+v %+v, want unreadable", rec, lr)
	}

	// The next attempt of the Apply finds attempt 1's Pod: its summary
	// belongs to another attempt.
	second := subjectClaim(m, m.Spec, "plan-1", v1alpha1.OperationApply, 2, b, time.Now())
	if rec, lr := read(second, ja, after); rec != nil || !strings.Contains(lr.Refused, "belongs to another attempt") ||
		!strings.Contains(lr.Refused, fmt.Sprintf("attempt 1, and the claim is operation %s attempt 2", second.ID)) {
		t.Errorf("attempt 2 reading attempt 1's summary: %+v %+v", rec, lr)
	}
	// With the log there, the same Pod holds a different frame: refused
	// whatever its summary says.
	logs.lose.Store(false)
	if rec, lr := read(second, ja, after); rec != nil || !strings.Contains(lr.Refused, "holds a different frame ("+apply.ID+")") {
		t.Errorf("attempt 2 reading attempt 1's log: %+v %+v", rec, lr)
	}

	// The summary cut short, as the kubelet cuts a message past 4096 bytes
	// (written into the Pod's status here: no runner writes one that long).
	logs.lose.Store(true)
	var pods corev1.PodList
	must(t, shared.c.List(ctx, &pods, client.InNamespace(e.ns), client.MatchingLabels{"batch.kubernetes.io/controller-uid": string(ja.UID)}))
	if len(pods.Items) != 1 || terminated(&pods.Items[0]) == nil || terminated(&pods.Items[0]).Message == "" {
		t.Fatalf("the Apply's Pod and its termination message: %+v", pods.Items)
	}
	pod := &pods.Items[0]
	msg := terminated(pod).Message
	terminated(pod).Message = msg[:len(msg)-12]
	must(t, shared.c.Status().Update(ctx, pod))
	if rec, lr := read(apply, ja, after); rec != nil || !strings.Contains(lr.Refused, "cut short") {
		t.Errorf("a summary cut short: %+v %+v", rec, lr)
	}

	// A durable Job: no record, and a log and summary that would read as
	// its result. Neither is read.
	terminated(pod).Message = msg
	must(t, shared.c.Status().Update(ctx, pod))
	logs.lose.Store(false)
	before := logs.reads.Load()
	durable := ja.DeepCopy()
	durable.Annotations[runner.AnnotationResultTransport] = runner.TransportDurable
	for _, j := range []*batchv1.Job{durable, withoutTransport(ja)} {
		rec, lr, err := jobResult(ctx, shared.c, shared.c, nil, logs, timeout, m, apply, j, finished, after)
		if rec != nil || lr != nil || err != nil {
			t.Errorf("a durable Job (annotations %v) without its record read as %+v %+v %v", j.Annotations, rec, lr, err)
		}
	}
	if n := logs.reads.Load() - before; n != 0 {
		t.Errorf("reading a durable Job's result read its Pod's log %d times", n)
	}
}

func withoutTransport(j *batchv1.Job) *batchv1.Job {
	j = j.DeepCopy()
	delete(j.Annotations, runner.AnnotationResultTransport)
	return j
}

// legacyMigrations runs the PtahMigration reconciler under the legacy
// transport, the logs of its Apply Pods lost (a node that removed the
// container), and cut, when set, applied to the termination message the
// manager reads of them.
func legacyMigrations(t *testing.T, cut func(string) string) *env {
	logs := &kubeletLogs{lost: "ptah-apply-shop-"}
	e := newEnv(t, func(o *envOption) {
		o.migration = func(r *MigrationReconciler) {
			r.ResultTransport, r.Logs, r.ResultTimeout = runner.TransportPodLog, logs, 3*time.Second
			if cut == nil {
				return
			}
			// The kubelet cuts a termination message at 4096 bytes; the
			// runner's summary is never that long, so the cut is made here,
			// in what the manager reads of the Apply's Pod.
			r.APIReader = interceptor.NewClient(noWatch{r.APIReader.(client.Client)}, interceptor.Funcs{
				List: func(ctx context.Context, c client.WithWatch, list client.ObjectList, opts ...client.ListOption) error {
					if err := c.List(ctx, list, opts...); err != nil {
						return err
					}
					if pods, ok := list.(*corev1.PodList); ok {
						for i := range pods.Items {
							if st := terminated(&pods.Items[i]); st != nil && strings.HasPrefix(pods.Items[i].Name, "ptah-apply-shop-") {
								st.Message = cut(st.Message)
							}
						}
					}
					return nil
				},
			})
		}
	})
	logs.k = e.kubelet
	return e
}

// TestLegacyMigrationConverges: under the legacy transport every Job's
// result comes from its Pod; the Apply's log is lost, so its termination
// summary says what it committed, and the read-only proof converges.
func TestLegacyMigrationConverges(t *testing.T) {
	t.Parallel()
	e := legacyMigrations(t, nil)
	e.migration(pushMigrations(t, "legacy-converges-"+e.ns, migrationsV1))
	m := migrated(e, 3)
	if m.Status.UnresolvedRun != nil || e.history() != "1 2 3" {
		t.Errorf("unresolved %+v, history %q", m.Status.UnresolvedRun, e.history())
	}
	ev := e.awaitMigrationEvent(v1alpha1.EventMigrationRunFinished, 5*time.Second, nil)
	if ev.Type != corev1.EventTypeNormal || !strings.Contains(ev.Message, "Applied: versions 1,2,3 committed") {
		t.Errorf("MigrationRunFinished from the summary: %s %q", ev.Type, ev.Message)
	}
	if n := len(e.migrationEvents(v1alpha1.EventTerminationSummaryRefused)); n != 0 {
		t.Errorf("%d TerminationSummaryRefused Events for a summary of this attempt", n)
	}
	for _, j := range e.jobs("ptah-") {
		if jobTransport(&j) != runner.TransportPodLog {
			t.Errorf("Job %s records transport %q", j.Name, jobTransport(&j))
		}
	}
	var recs v1alpha1.PtahResultRecordList
	must(t, shared.c.List(context.Background(), &recs, client.InNamespace(e.ns)))
	if n := len(recs.Items); n != 0 {
		t.Errorf("%d PtahResultRecords under the legacy transport", n)
	}
}

// TestEventTerminationSummaryRefused: a legacy Apply whose log is lost and
// whose summary was cut short is not read from its summary: the Event says
// why, the run is recorded as unknown, and nothing is planned until the
// read-only reading settles it (it committed all three).
func TestEventTerminationSummaryRefused(t *testing.T) {
	t.Parallel()
	e := legacyMigrations(t, func(msg string) string { return msg[:len(msg)/2] })
	e.migration(pushMigrations(t, "legacy-refused-"+e.ns, migrationsV1))
	ev := e.awaitMigrationEvent(v1alpha1.EventTerminationSummaryRefused, converge, nil)
	assertEvent(t, ev, "shop")
	if !strings.Contains(ev.Message, "the log held no readable result") || !strings.Contains(ev.Message, "cut short") ||
		!strings.Contains(ev.Message, "recorded as unknown") {
		t.Errorf("TerminationSummaryRefused says %q", ev.Message)
	}
	unc := e.awaitMigrationEvent(v1alpha1.EventMigrationRunUncertain, 10*time.Second, nil)
	if !strings.Contains(unc.Message, "termination summary was refused") {
		t.Errorf("MigrationRunUncertain says %q", unc.Message)
	}
	m := migrated(e, 3)
	if !conditionIs(m, v1alpha1.ConditionUnresolvedRun, metav1.ConditionFalse, v1alpha1.ReasonRunSettled) ||
		!strings.Contains(conditionMessage(m, v1alpha1.ConditionUnresolvedRun), "outcome Applied") {
		t.Errorf("the reading did not settle the run as Applied: %s %q", conditions(m), conditionMessage(m, v1alpha1.ConditionUnresolvedRun))
	}
	if h := e.history(); h != "1 2 3" {
		t.Errorf("history %q", h)
	}
}
