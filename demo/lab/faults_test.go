package lab

import (
	"context"
	"encoding/base64"
	"encoding/json"
	"fmt"
	"io"
	"net/url"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"sort"
	"strconv"
	"strings"
	"testing"
	"time"

	batchv1 "k8s.io/api/batch/v1"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/tools/clientcmd"
	"sigs.k8s.io/controller-runtime/pkg/client"
	ctrllog "sigs.k8s.io/controller-runtime/pkg/log"
	"sigs.k8s.io/controller-runtime/pkg/log/zap"

	"ptah.run/operator/demo/lab/internal/run"
	"ptah.run/operator/internal/runner"
	v1alpha1 "ptah.run/operator/operator/api/v1alpha1"
)

// The fault table: each row lands one real fault (the manager SIGKILLed and
// kept down past the database lease, PostgreSQL stopped or paused, the
// kube-apiserver killed, an operation Pod deleted, the registry stopped, the
// database's network cut) in one phase of a PtahSchema's pipeline, then
// checks what the database and the cluster say, never what the operator
// claims: converged with a fresh proof (or stopped with ApplyOutcomeUnknown),
// every DDL statement committed at most once (PostgreSQL's own log of each
// statement with its transaction id, and pg_xact_status of that id), the rows
// planted before the fault all there, no credential in status, Events or Pod
// logs, nothing of an operation left running, and the time from the fault's
// end to convergence.
//
// Each run moves the schema "faults" one revision forward (revision n adds
// column cn to customers and table fault_n), so no run needs a reset and
// every DDL statement of the whole table is distinct.
//
// The PtahMigration rows (a fault in the middle of a multi-version run,
// faultsmig_test.go) run after them in TestFaults' PtahMigration subtest.

const faultsSchema = "faults"

// faultLab is the lab as the fault table reaches it.
type faultLab struct {
	t          *testing.T
	l          *Lab
	ctx        context.Context
	kube       kubernetes.Interface
	c          client.Client
	node       string // the control-plane container
	postgres   string
	registry   string
	controller string
	secrets    []string
	ptah       string
	digests    []string // published artifact per revision
	rev        int      // the revision the last run applied
	converged  int      // the last revision the schema converged at
	runs       int
	planted    map[string]int
	postgresIP string
	registryIP string
	// The PtahMigration rows (faultsmig_test.go).
	migDigests   []string // published migrations artifact per revision
	migRun       int      // the revision the last migration row applied
	migConverged int      // the last version the migration converged at
	// What a fault changes for one run (reset before each), when the run
	// began, and the executor image of the previous runner protocol.
	spec        runSpec
	runStart    time.Time
	oldExecutor string
}

// fault is one way the bad day goes: inject starts it, down is how long it
// lasts, lift ends it (and waits until the component is back).
type fault struct {
	name   string
	inject func(f *faultLab, hit *moment) error
	down   time.Duration
	lift   func(f *faultLab) error
	// settle: release the phase's hold only once the manager has noticed the
	// fault (the active operation moved on), so its retry meets what the
	// fault left in the database.
	settle bool
	// prepare changes the run's spec (f.spec) before its revision is applied.
	prepare func(f *faultLab) error
	// provokes are the Event reasons the run must see recorded on its subject.
	provokes []string
	// lasting: the fault outlasts lossBound, and the subject must report
	// its database unreachable within lossBound while it lasts.
	lasting bool
}

// phase is where a fault lands: hold (if any) keeps the phase open with a
// real lock before the revision is applied and returns its release; reached
// reports the moment once the pipeline is there.
type phase struct {
	name    string
	hold    func(f *faultLab) (release func(), err error)
	reached func(f *faultLab) (*moment, error)
	// recheck: the phase comes in a re-examination of a schema already
	// proved InSync at this generation, so after the fault the schema comes
	// back to rest on that proof rather than on a fresh one.
	recheck bool
}

// moment is what the fault hit.
type moment struct {
	what string
	job  string
	// release ends the phase's hold, for a fault that lets the operation
	// go on while it lasts; releasing twice is releasing once.
	release func()
}

type faultRow struct {
	fault fault
	phase phase
}

type faultResult struct {
	fault, phase, moment, outcome string
	ddl                           string
	appliedOnce, rowsIntact       bool
	leftovers, credentials        string
	recover                       time.Duration
	// reported is, for a lasting fault, how long after it began the
	// subject said its database was not reached (0: it did not), and what.
	reported     time.Duration
	reportedWhat string
	holds        bool
	// harness says what the harness itself could not do (prepare, hold,
	// inject, lift, settle as a person): such a row cannot hold. It is
	// kept apart from the outcome, whose text is the operator's.
	harness string
	// events are the warning reasons recorded on the subject during the
	// run; provoked and missing split the fault's provokes by them.
	events            string
	provoked, missing []string
}

// TestFaults runs the whole fault table (make faults). With
// PTAH_LAB_FAULTS_REUSE=1 it uses the lab in demo/.lab and leaves it up;
// otherwise it brings a lab up beside any other and takes it down.
func TestFaults(t *testing.T) {
	if os.Getenv("PTAH_LAB_FAULTS") != "1" {
		t.Skip("set PTAH_LAB_FAULTS=1 to inject faults into a real lab")
	}
	root, err := filepath.Abs("../..")
	if err != nil {
		t.Fatal(err)
	}
	ctx := context.Background()
	var l *Lab
	if os.Getenv("PTAH_LAB_FAULTS_REUSE") == "1" {
		l = New(root, os.Stdout, os.Stderr)
		if _, err := l.up(ctx); err != nil {
			t.Fatalf("PTAH_LAB_FAULTS_REUSE=1 needs a lab up in %s: %v", l.Dir, err)
		}
	} else {
		var progress lockedBuffer
		l = New(root, os.Stdout, &progress).WithDir(filepath.Join(t.TempDir(), ".lab"))
		t.Cleanup(func() {
			if _, err := os.Stat(l.createdFile()); err == nil {
				if err := l.Down(context.Background(), false); err != nil {
					t.Errorf("lab down: %v", err)
				}
			}
		})
		start := time.Now()
		if err := l.Up(ctx); err != nil {
			t.Fatalf("lab up: %v\n%s", err, progress.String())
		}
		t.Logf("lab up: %s", time.Since(start).Round(time.Second))
	}
	rows := allFaultRows()
	if only := os.Getenv("FAULTS_ONLY"); only != "" {
		re := regexp.MustCompile(only)
		var some []faultRow
		for _, r := range rows {
			if re.MatchString(r.fault.name + " / " + r.phase.name) {
				some = append(some, r)
			}
		}
		rows = some
	}
	migRows := allMigrationRows()
	if only := os.Getenv("FAULTS_ONLY"); only != "" {
		re := regexp.MustCompile(only)
		var some []migrationRow
		for _, r := range migRows {
			if re.MatchString(r.fault.name + " / " + migPhase) {
				some = append(some, r)
			}
		}
		migRows = some
	}
	results := runFaultTable(t, l, ctx, rows, migRows)
	if os.Getenv("FAULTS_ONLY") == "" {
		checkLabReasons(t, results)
	}
	table := faultTable(results, l.commit(ctx))
	t.Logf("fault table:\n%s", table)
	if out := os.Getenv("PTAH_FAULTS_TABLE"); out != "" {
		if err := os.WriteFile(out, []byte(table), 0o644); err != nil {
			t.Error(err)
		}
	}
}

// ciFaultRows are the faults `make test` runs on the lab lab-e2e brought up.
func ciFaultRows() []faultRow {
	return []faultRow{
		{managerKilled, applyLockWait},
		{postgresStopped, observeRunning},
		{apiServerRestarted, planRunning},
		{opPodDeleted, applyLockWait},
		{deadlineExpired, applyLockWait},
		{networkCutLasting, applyLockWait},
	}
}

// ciMigrationRows are the PtahMigration faults `make test` runs after
// ciFaultRows: the operation Pod deleted mid-run, which ends in an
// unresolved run a person acknowledges (the path migration-uncertain-run
// records), on a real kubelet.
func ciMigrationRows() []migrationRow {
	return []migrationRow{{fault: opPodDeleted}}
}

func allFaultRows() []faultRow {
	return []faultRow{
		{managerKilled, applyLockWait},
		{managerKilled, applyCommitting},
		{managerKilled, planRunning},
		{postgresStopped, observeRunning},
		{postgresStopped, proofRunning},
		{postgresPaused, applyLockWait},
		{apiServerRestarted, resolveClaimed},
		{apiServerRestarted, planRunning},
		{apiServerRestarted, applyCommitting},
		{opPodDeleted, observeRunning},
		{opPodDeleted, applyLockWait},
		{opPodDeleted, applyCommitting},
		{opPodDeleted, proofRunning},
		{registryStopped, resolveClaimed},
		{networkCut, observeRunning},
		{networkCut, applyLockWait},
		{networkCutLasting, observeRunning},
		{networkCutLasting, planRunning},
		{networkCutLasting, proofRunning},
		{networkCutLasting, applyLockWait},
		{networkCutLasting, applyCommitting},
		{deadlineExpired, applyLockWait},
		{previousProtocol, resolveClaimed},
		{apiServerStopped, applyLockWait},
	}
}

// runFaultTable sets the lab up for the table (a fresh schema at revision
// 0, the database logging each statement of the application role with its
// transaction), runs each row, then the PtahMigration rows in a subtest,
// and fails the test for each row that does not hold.
func runFaultTable(t *testing.T, l *Lab, ctx context.Context, rows []faultRow, migRows []migrationRow) []faultResult {
	t.Helper()
	f := newFaultLab(t, l, ctx, len(rows))
	// Before the caller goes on (lab-e2e takes the lab down next), whatever
	// a row left: not at the test's cleanup, when the lab may be gone.
	defer f.teardown()
	var results []faultResult
	for i, r := range rows {
		start := time.Now()
		res := f.run(r)
		t.Logf("fault %d/%d %s / %s: %s, moment %q, recovered in %s, applied once %v, rows intact %v, leftovers %q, credentials %q (run took %s)",
			i+1, len(rows), res.fault, res.phase, res.outcome, res.moment, res.recover.Round(time.Second), res.appliedOnce, res.rowsIntact,
			res.leftovers, res.credentials, time.Since(start).Round(time.Second))
		if !res.holds {
			t.Errorf("fault %s / %s does not hold: %+v", res.fault, res.phase, res)
		}
		results = append(results, res)
	}
	if len(migRows) > 0 {
		t.Run("PtahMigration", func(t *testing.T) {
			parent := f.t
			f.t = t
			defer func() { f.t = parent }()
			results = append(results, f.runMigrationTable(migRows)...)
		})
	}
	return results
}

func newFaultLab(t *testing.T, l *Lab, ctx context.Context, runs int) *faultLab {
	t.Helper()
	env, err := l.environment()
	if err != nil {
		t.Fatal(err)
	}
	cfg, err := clientcmd.BuildConfigFromFlags("", l.kubeconfig())
	if err != nil {
		t.Fatal(err)
	}
	cfg.Timeout = 15 * time.Second
	kube, err := kubernetes.NewForConfig(cfg)
	if err != nil {
		t.Fatal(err)
	}
	ctrllog.SetLogger(zap.New(zap.WriteTo(io.Discard))) // the client logs nothing the table needs
	scheme := runtime.NewScheme()
	if err := v1alpha1.AddToScheme(scheme); err != nil {
		t.Fatal(err)
	}
	c, err := client.New(cfg, client.Options{Scheme: scheme})
	if err != nil {
		t.Fatal(err)
	}
	cluster := env.get("PTAH_LAB_CLUSTER")
	f := &faultLab{t: t, l: l, ctx: ctx, kube: kube, c: c,
		node: cluster + "-control-plane", postgres: cluster + "-postgres", registry: cluster + "-registry",
		controller: l.controllerName(ctx), planted: map[string]int{}}
	creds, err := l.loadCredentials()
	if err != nil || creds == nil {
		t.Fatalf("the lab's credentials: %v", err)
	}
	f.secrets = creds.values()
	if f.postgresIP, err = l.d.IP(ctx, f.postgres, "kind"); err != nil {
		t.Fatal(err)
	}
	if f.registryIP, err = l.d.IP(ctx, f.registry, "kind"); err != nil {
		t.Fatal(err)
	}

	ptah := filepath.Join(t.TempDir(), "ptah")
	if _, err := l.r.Run(ctx, runCmd("go", l.Root, "build", "-o", ptah, "./cmd/ptah")); err != nil {
		t.Fatalf("build ptah to publish the fault revisions: %v", err)
	}
	f.ptah = ptah
	// Each statement of the application role is logged once it completes,
	// with its transaction id: the database's own count of what ran.
	f.super(`ALTER SYSTEM SET log_line_prefix = '%m [%p] xid=%x db=%d user=%u '`)
	f.super(`ALTER SYSTEM RESET synchronous_standby_names`)
	f.super(`ALTER ROLE ` + appRole + ` SET log_min_duration_statement = 0`)
	f.super(`SELECT pg_reload_conf()`)
	ready := false
	defer func() {
		if !ready { // a Fatal below: put the lab back all the same
			f.teardown()
		}
	}()
	// A lab that ran a table before holds many finished Jobs: their deletion
	// may outlast one reset's wait.
	if err := l.Reset(ctx); err != nil {
		t.Logf("lab reset before the fault table, again: %v", err)
		if err := l.Reset(ctx); err != nil {
			t.Fatalf("lab reset before the fault table: %v", err)
		}
	}
	for rev := 0; rev <= runs; rev++ {
		f.digests = append(f.digests, f.publish(rev, env))
	}
	start := time.Now()
	f.applyRevision(0)
	if out := f.converge(start, 0, 8*time.Minute); out != "converged" {
		t.Fatalf("revision 0 of schema %s did not converge before any fault: %s", faultsSchema, out)
	}
	t.Logf("revision 0 converged with no fault in %s (the whole pipeline, Resolve to Proof)", time.Since(start).Round(time.Second))
	ready = true
	return f
}

func runCmd(name, dir string, args ...string) run.Cmd {
	return run.Cmd{Name: name, Dir: dir, Args: args}
}

// teardown leaves the lab as a scenario expects it, whatever a row left:
// the database serving, no fault schema, no fault tables, the role's
// statement logging off.
func (f *faultLab) teardown() {
	_, _ = f.l.r.Output(f.ctx, "docker", "unpause", f.postgres)
	_, _ = f.l.r.Output(f.ctx, "docker", "start", f.postgres, f.registry)
	if err := f.startAPIServer(); err != nil {
		f.t.Errorf("after the fault table: %v", err)
	}
	_, _ = f.l.kubectlCmd(f.ctx, "", "-n", OperatorNamespace, "scale", "deployment/"+f.controller, "--replicas=1")
	if err := f.postgresReady(); err != nil {
		f.t.Errorf("after the fault table: %v", err)
		return
	}
	if err := f.healNetwork(); err != nil {
		f.t.Errorf("after the fault table: %v", err)
	}
	for _, sql := range []string{
		`ALTER ROLE ` + appRole + ` RESET log_min_duration_statement`,
		`ALTER SYSTEM RESET log_line_prefix`, `ALTER SYSTEM RESET synchronous_standby_names`,
		`SELECT pg_cancel_backend(pid) FROM pg_stat_activity WHERE application_name = 'faults-locker'`,
		`SELECT pg_reload_conf()`,
	} {
		if _, err := f.superErr(sql); err != nil {
			f.t.Errorf("after the fault table: %v", err)
		}
	}
	if _, err := f.l.kubectlCmd(f.ctx, "", "-n", OperatorNamespace, "rollout", "status", "deployment/"+f.controller, "--timeout=3m"); err != nil {
		f.t.Errorf("after the fault table: %v", err)
	}
	if err := f.l.Reset(f.ctx); err != nil {
		f.t.Logf("lab reset after the fault table, again: %v", err)
		if err := f.l.Reset(f.ctx); err != nil {
			f.t.Errorf("lab reset after the fault table: %v", err)
		}
	}
}

// revisionSQL is the desired schema of revision n.
func revisionSQL(n int) string {
	var b strings.Builder
	b.WriteString("-- the fault table's revision " + strconv.Itoa(n) + "\nCREATE TABLE customers (\n" +
		"    id         bigint GENERATED ALWAYS AS IDENTITY PRIMARY KEY,\n" +
		"    email      text        NOT NULL UNIQUE,\n" +
		"    name       text        NOT NULL,\n" +
		"    created_at timestamptz NOT NULL DEFAULT now()")
	for i := 1; i <= n; i++ {
		fmt.Fprintf(&b, ",\n    c%d text", i)
	}
	b.WriteString("\n);\n")
	for i := 1; i <= n; i++ {
		fmt.Fprintf(&b, "\nCREATE TABLE fault_%d (\n    id   bigint PRIMARY KEY,\n    note text NOT NULL\n);\n", i)
	}
	return b.String()
}

func (f *faultLab) publish(rev int, env *environment) string {
	f.t.Helper()
	file := filepath.Join(f.t.TempDir(), fmt.Sprintf("faults-%d.sql", rev))
	if err := os.WriteFile(file, []byte(revisionSQL(rev)), 0o644); err != nil {
		f.t.Fatal(err)
	}
	ref := fmt.Sprintf("oci://%s/storefront:faults-%d-%s", env.get("PTAH_OCI_REGISTRY"), rev, randomHex(3))
	return f.push(fmt.Sprintf("fault revision %d", rev), env, env.get("PTAH_OCI_REGISTRY"), "schema", "push", ref, "--schema-file", file, "--plain-http")
}

// push runs ptah with args against registry, with the lab's registry
// credentials, and returns the digest it printed for what it published.
func (f *faultLab) push(what string, env *environment, registry string, args ...string) string {
	out, err := f.l.r.Run(f.ctx, run.Cmd{Name: f.ptah, Args: args,
		Env: []string{"PTAH_OCI_REGISTRY=" + registry, "PTAH_OCI_USERNAME=" + env.get("PTAH_OCI_USERNAME"), "PTAH_OCI_PASSWORD=" + env.get("PTAH_OCI_PASSWORD")}})
	if err != nil {
		f.t.Fatalf("publish %s: %v", what, err)
	}
	d := digestInOutput.FindString(out)
	if d == "" {
		f.t.Fatalf("publish %s printed no digest: %q", what, out)
	}
	return d
}

func (f *faultLab) manifest(rev int) string {
	return fmt.Sprintf(`apiVersion: operator.ptah.run/v1alpha1
kind: PtahSchema
metadata:
  name: %s
  namespace: %s
spec:
  target:
    engine: postgres
    urlFrom: {name: %s, key: url}
  desired:
    ociRef: oci://%s/storefront@%s
    registryAuthFrom: {name: %s}
    verificationPolicyFrom: {name: %s}
  policy:
    apply: Always
    allowDestructive: false
    lockTimeout: 5m
  interval: %s
  execution:
    deadline: %s
    failureRetryInterval: 10s
    connectTimeout: 5s%s
`, faultsSchema, Namespace, databaseSecret, registryInCluster(), f.digests[rev], registrySecret, policyConfigMap, f.spec.intervalOr("1h"), f.spec.deadlineOr("15m"), f.spec.runnerImageLine())
}

func (s runSpec) intervalOr(def string) string {
	if s.interval == "" {
		return def
	}
	return s.interval
}

func (s runSpec) deadlineOr(def string) string {
	if s.deadline == "" {
		return def
	}
	return s.deadline
}

func (s runSpec) runnerImageLine() string {
	if s.runnerImage == "" {
		return ""
	}
	return "\n    runnerImage: " + s.runnerImage
}

func (f *faultLab) applyRevision(rev int) {
	f.t.Helper()
	if _, err := f.l.kubectlCmd(f.ctx, f.manifest(rev), "apply", "-f", "-"); err != nil {
		f.t.Fatalf("apply fault revision %d: %v", rev, err)
	}
}

// super runs SQL as PostgreSQL's superuser inside its container (never over
// the network the faults cut), its own commits never waiting on a standby.
func (f *faultLab) super(sql string) string {
	f.t.Helper()
	out, err := f.superErr(sql)
	if err != nil {
		f.t.Fatalf("superuser SQL %q: %v", sql, err)
	}
	return out
}

func (f *faultLab) superErr(sql string) (string, error) {
	return f.l.d.Exec(f.ctx, f.postgres, strings.NewReader("SET synchronous_commit = local;\n"+sql+";\n"),
		"psql", "-X", "-q", "-t", "-A", "-v", "ON_ERROR_STOP=1", "-U", "postgres", "-d", databaseName)
}

func (f *faultLab) schema() (*v1alpha1.PtahSchema, error) {
	var s v1alpha1.PtahSchema
	err := f.c.Get(f.ctx, types.NamespacedName{Namespace: Namespace, Name: faultsSchema}, &s)
	return &s, err
}

// converge waits for InSync=True (ScopedConverged) at the current
// generation, proved after since, with the revision's artifact applied; or
// for the schema to rest with ApplyOutcomeUnknown, which asks a person.
func (f *faultLab) converge(since time.Time, rev int, timeout time.Duration) string {
	deadline := time.Now().Add(timeout)
	last := ""
	for time.Now().Before(deadline) {
		s, err := f.schema()
		if err != nil {
			last = "read: " + err.Error()
			time.Sleep(time.Second)
			continue
		}
		in := meta.FindStatusCondition(s.Status.Conditions, v1alpha1.ConditionInSync)
		failed := meta.FindStatusCondition(s.Status.Conditions, v1alpha1.ConditionReconciliationFailed)
		switch {
		case in != nil && in.Status == metav1.ConditionTrue && in.Reason == v1alpha1.ReasonScopedConverged &&
			in.ObservedGeneration == s.Generation && s.Status.ObservedGeneration == s.Generation &&
			!in.LastTransitionTime.Time.Before(since.Truncate(time.Second)) &&
			s.Status.Applied != nil && s.Status.Applied.ArtifactDigest == f.digests[rev] && s.Status.ActiveOperation == nil:
			return "converged"
		case s.Status.ActiveOperation == nil && failed != nil && failed.Status == metav1.ConditionTrue && failed.Reason == v1alpha1.ReasonApplyOutcomeUnknown:
			return "stopped: ApplyOutcomeUnknown: " + failed.Message
		}
		op := "none"
		if a := s.Status.ActiveOperation; a != nil {
			op = string(a.Type) + " " + a.JobName
		}
		last = fmt.Sprintf("phase %s, active operation %s, conditions %s", s.Status.Phase, op, conditionsLine(s.Status.Conditions))
		time.Sleep(time.Second)
	}
	return "not converged within " + timeout.String() + ": " + last
}

// rested waits, after a fault on a re-examination (job), for the schema to
// rest again on the proof it had: InSync=True (ScopedConverged) at the current
// generation with the revision's artifact applied, nothing active, the
// reconciliation not failed (so job, or its retry, ended well). The proof
// came before the fault; the re-examination must not have lost it.
func (f *faultLab) rested(job string, rev int, timeout time.Duration) string {
	deadline := time.Now().Add(timeout)
	last := ""
	for time.Now().Before(deadline) {
		s, err := f.schema()
		if err != nil {
			last = "read: " + err.Error()
			time.Sleep(time.Second)
			continue
		}
		in := meta.FindStatusCondition(s.Status.Conditions, v1alpha1.ConditionInSync)
		failed := meta.FindStatusCondition(s.Status.Conditions, v1alpha1.ConditionReconciliationFailed)
		if in != nil && in.Status == metav1.ConditionTrue && in.Reason == v1alpha1.ReasonScopedConverged &&
			in.ObservedGeneration == s.Generation && s.Status.ObservedGeneration == s.Generation &&
			(failed == nil || failed.Status != metav1.ConditionTrue) &&
			s.Status.Applied != nil && s.Status.Applied.ArtifactDigest == f.digests[rev] && s.Status.ActiveOperation == nil {
			return "converged"
		}
		op := "none"
		if a := s.Status.ActiveOperation; a != nil {
			op = string(a.Type) + " " + a.JobName
		}
		last = fmt.Sprintf("phase %s, active operation %s, conditions %s", s.Status.Phase, op, conditionsLine(s.Status.Conditions))
		time.Sleep(time.Second)
	}
	return "not at rest within " + timeout.String() + " after the fault on " + job + ": " + last
}

func conditionsLine(cs []metav1.Condition) string {
	var parts []string
	for _, c := range cs {
		parts = append(parts, fmt.Sprintf("%s=%s(%s)", c.Type, c.Status, c.Reason))
	}
	return strings.Join(parts, " ")
}

// run lands one fault in one phase and checks the invariants.
func (f *faultLab) run(r faultRow) faultResult {
	res := faultResult{fault: r.fault.name, phase: r.phase.name}
	next := f.rev + 1
	// The next run moves on whatever this one ends in: a new revision is
	// a spec change, which discards whatever this run left claimed.
	f.rev = next
	f.runs++
	f.plant(f.runs)
	since := time.Now().Add(-time.Second)
	f.runStart = since
	f.spec = runSpec{}
	defer func() { f.spec = runSpec{} }()
	if r.fault.prepare != nil {
		if err := r.fault.prepare(f); err != nil {
			res.outcome, res.harness = "prepare failed: "+err.Error(), "prepare"
			return res
		}
	}
	var release func()
	if r.phase.hold != nil {
		rel, err := r.phase.hold(f)
		if err != nil {
			res.outcome, res.harness = "could not hold the phase open: "+err.Error(), "hold"
			return res
		}
		release = rel
	}
	released := false
	releaseOnce := func() {
		if release != nil && !released {
			released = true
			release()
		}
	}
	defer releaseOnce()
	f.applyRevision(next)
	var hit *moment
	deadline := time.Now().Add(5 * time.Minute)
	for hit == nil {
		m, err := r.phase.reached(f)
		if err != nil {
			f.t.Logf("looking for %s: %v", r.phase.name, err)
		}
		hit = m
		if hit == nil {
			if time.Now().After(deadline) {
				s, _ := f.schema()
				res.outcome = fmt.Sprintf("phase %s never reached within 5m (phase %s, conditions %s)", r.phase.name, s.Status.Phase, conditionsLine(s.Status.Conditions))
				releaseOnce()
				f.converge(since, next, 5*time.Minute)
				return res
			}
			time.Sleep(300 * time.Millisecond)
		}
	}
	if hit.job != "" {
		hit.what += "; " + f.recordState(hit.job)
	}
	hit.release = releaseOnce
	start := time.Now()
	if err := r.fault.inject(f, hit); err != nil {
		res.outcome, res.harness = "inject failed: "+err.Error(), "inject"
	}
	f.faultDown(r.fault, start, &res, func() ([]metav1.Condition, error) {
		s, err := f.schema()
		return s.Status.Conditions, err
	})
	if r.fault.lift != nil {
		if err := r.fault.lift(f); err != nil {
			res.outcome, res.harness = "lift failed: "+err.Error(), "lift"
		}
	}
	end := time.Now()
	if hit.job != "" {
		hit.what += "; " + f.jobState(hit.job, start)
	}
	if r.fault.settle {
		f.noticed(hit.job, 2*time.Minute)
	}
	releaseOnce()
	var outcome string
	if r.phase.recheck {
		outcome = f.rested(hit.job, next, 10*time.Minute)
	} else {
		outcome = f.converge(start, next, 10*time.Minute)
	}
	if hit.job != "" {
		hit.what += "; " + f.hitOutcome(hit.job)
	}
	res.moment = hit.what
	res.recover = time.Since(end)
	if res.outcome == "" {
		res.outcome = outcome
	} else {
		res.outcome += "; " + outcome
	}
	if outcome == "converged" {
		f.converged = next
	}
	res.ddl, res.appliedOnce = f.ddlOnce(since, next, outcome == "converged")
	res.rowsIntact = f.rowsIntact()
	res.leftovers = f.leftovers(runner.LabelSchema + "=" + faultsSchema)
	res.credentials = f.credentialsShown()
	res.holds = (outcome == "converged" || strings.HasPrefix(outcome, "stopped: ApplyOutcomeUnknown")) &&
		res.harness == "" && res.appliedOnce && res.rowsIntact && res.leftovers == "none" && res.credentials == "none" &&
		res.reportedInTime(r.fault)
	provoked(&res, r.fault.provokes, f.reasonsSince(faultsSchema, since))
	return res
}

// faultDown waits out the fault's down time; for a lasting fault it
// watches, meanwhile, for the subject to report the loss.
func (f *faultLab) faultDown(ft fault, start time.Time, res *faultResult, conditions func() ([]metav1.Condition, error)) {
	if !ft.lasting {
		time.Sleep(ft.down)
		return
	}
	res.reported, res.reportedWhat = f.lossReported(start, ft.down, conditions)
	if res.reported == 0 {
		res.outcome = fmt.Sprintf("loss not reported: DatabaseReachable never turned False in the %s the partition lasted", ft.down)
	} else if res.reported > lossBound {
		res.outcome = fmt.Sprintf("loss reported late: %s after the cut, past the bound of %s", res.reported.Round(time.Second), lossBound)
	}
}

// reportedInTime: a lasting fault's loss was reported within lossBound.
func (r faultResult) reportedInTime(ft fault) bool {
	return !ft.lasting || r.reported > 0 && r.reported <= lossBound
}

// noticed waits until the schema's active operation is no longer job.
func (f *faultLab) noticed(job string, timeout time.Duration) {
	deadline := time.Now().Add(timeout)
	for time.Now().Before(deadline) {
		if s, err := f.schema(); err == nil && (s.Status.ActiveOperation == nil || s.Status.ActiveOperation.JobName != job) {
			return
		}
		time.Sleep(time.Second)
	}
	f.t.Logf("the manager had not moved on from %s within %s", job, timeout)
}

// recordState says whether the operation's result had reached the API
// server when the fault hit: after it, the fault lands on a finished operation.
func (f *faultLab) recordState(job string) string {
	var rec v1alpha1.PtahResultRecord
	err := f.c.Get(f.ctx, types.NamespacedName{Namespace: Namespace, Name: job}, &rec)
	switch {
	case err == nil:
		return "its result record was already written"
	case apierrors.IsNotFound(err):
		return "no result record yet"
	default:
		return "result record unknown (" + shortErr(err) + ")"
	}
}

// jobState says how the Job the fault hit had ended by the fault's end.
func (f *faultLab) jobState(name string, since time.Time) string {
	j, err := f.kube.BatchV1().Jobs(Namespace).Get(f.ctx, name, metav1.GetOptions{})
	if err != nil {
		return "its Job is gone (" + shortErr(err) + ")"
	}
	for _, c := range j.Status.Conditions {
		if (c.Type == batchv1.JobComplete || c.Type == batchv1.JobFailed) && c.Status == corev1.ConditionTrue {
			at := "after the fault began"
			if c.LastTransitionTime.Time.Before(since.Truncate(time.Second)) {
				at = "BEFORE the fault began"
			}
			return fmt.Sprintf("its Job ended %s %s", c.Type, at)
		}
	}
	return "its Job was still running when the fault ended"
}

// hitOutcome says what became of the operation the fault hit, by its
// result record: whether the fault made it fail, or it got through.
func (f *faultLab) hitOutcome(job string) string {
	var rec v1alpha1.PtahResultRecord
	err := f.c.Get(f.ctx, types.NamespacedName{Namespace: Namespace, Name: job}, &rec)
	switch {
	case apierrors.IsNotFound(err):
		return "it delivered no result"
	case err != nil:
		return "its result unknown (" + shortErr(err) + ")"
	case rec.Spec.ChildError != nil:
		return "it failed: " + rec.Spec.ChildError.Code
	case rec.Spec.Error != nil:
		return "it failed: " + rec.Spec.Error.Code
	}
	return "it succeeded"
}

func shortErr(err error) string {
	s := err.Error()
	if len(s) > 80 {
		s = s[:80] + "..."
	}
	return s
}

// plant inserts rows into customers and every fault table before a run.
func (f *faultLab) plant(run int) {
	f.t.Helper()
	sql := fmt.Sprintf("INSERT INTO customers (email, name) SELECT 'run%d-' || g || '@faults.invalid', 'planted' FROM generate_series(1, 20) g", run)
	f.planted["customers"] += 20
	for i := 1; i <= f.converged; i++ {
		sql += fmt.Sprintf(";\nINSERT INTO fault_%d (id, note) SELECT %d * 1000 + g, 'planted' FROM generate_series(1, 5) g", i, run)
		f.planted[fmt.Sprintf("fault_%d", i)] += 5
	}
	f.super(sql)
}

// rowsIntact counts the planted rows table by table.
func (f *faultLab) rowsIntact() bool {
	var names []string
	for n := range f.planted {
		names = append(names, n)
	}
	sort.Strings(names)
	var q []string
	for _, n := range names {
		q = append(q, fmt.Sprintf("SELECT '%s', count(*) FROM %s WHERE %s = 'planted'", n, n, map[bool]string{true: "name", false: "note"}[n == "customers"]))
	}
	out, err := f.superErr(strings.Join(q, " UNION ALL "))
	if err != nil {
		f.t.Logf("count the planted rows: %v", err)
		return false
	}
	ok := true
	for _, line := range strings.Split(strings.TrimSpace(out), "\n") {
		name, n, _ := strings.Cut(line, "|")
		if got, _ := strconv.Atoi(n); got != f.planted[name] {
			f.t.Logf("table %s holds %d planted rows, want %d", name, got, f.planted[name])
			ok = false
		}
	}
	return ok
}

var ddlLine = regexp.MustCompile(`xid=(\d+) db=` + databaseName + ` user=` + appRole + ` LOG:  duration: [0-9.]+ ms  (?:statement|execute [^:]*): (.*)$`)
var ddlVerb = regexp.MustCompile(`(?i)^\s*(CREATE|ALTER|DROP|COMMENT|GRANT|REVOKE|TRUNCATE|RENAME)\b`)

// ddlRun reads PostgreSQL's log since then: each DDL statement the
// application role ran to its end, how many times it ran and how many of
// those runs' transactions committed (pg_xact_status of each one's id).
func (f *faultLab) ddlRun(since time.Time) (executed, committed map[string]int, err error) {
	return f.statementsRun(since, func(line string) (string, bool) {
		m := ddlLine.FindStringSubmatch(line)
		if m != nil && ddlVerb.MatchString(m[2]) {
			return m[1] + " " + strings.TrimSpace(m[2]), true
		}
		return "", false
	})
}

// statementsRun reads PostgreSQL's log since then: match turns a line into
// "xid key" for each statement counted; each key's runs and how many of
// them committed are returned.
func (f *faultLab) statementsRun(since time.Time, match func(line string) (string, bool)) (executed, committed map[string]int, err error) {
	out, err := exec.CommandContext(f.ctx, "docker", "logs", "--since", since.UTC().Format(time.RFC3339Nano), f.postgres).CombinedOutput()
	if err != nil {
		return nil, nil, fmt.Errorf("docker logs: %w", err)
	}
	type execution struct{ xid, sql string }
	var ran []execution
	for _, line := range strings.Split(string(out), "\n") {
		if got, ok := match(line); ok {
			xid, key, _ := strings.Cut(got, " ")
			ran = append(ran, execution{xid, key})
		}
	}
	status := map[string]string{}
	if len(ran) > 0 {
		var xids []string
		for _, e := range ran {
			xids = append(xids, e.xid)
		}
		res, err := f.superErr(fmt.Sprintf("SELECT x || '|' || coalesce(pg_xact_status(x::text::xid8), 'unknown') FROM unnest('{%s}'::bigint[]) x", strings.Join(xids, ",")))
		if err != nil {
			return nil, nil, fmt.Errorf("pg_xact_status: %w", err)
		}
		for _, line := range strings.Split(res, "\n") {
			if x, st, ok := strings.Cut(strings.TrimSpace(line), "|"); ok {
				status[x] = st
			}
		}
	}
	committed = map[string]int{}
	executed = map[string]int{}
	for _, e := range ran {
		executed[e.sql]++
		if status[e.xid] == "committed" {
			committed[e.sql]++
		}
	}
	return executed, committed, nil
}

// ddlOnce reads PostgreSQL's log since the run began: every DDL statement
// the application role ran to its end, with its transaction, and whether
// that transaction committed. No statement may have committed twice, and a
// converged run committed its two statements exactly once.
func (f *faultLab) ddlOnce(since time.Time, rev int, converged bool) (string, bool) {
	executed, committed, err := f.ddlRun(since)
	if err != nil {
		return err.Error(), false
	}
	want := []string{fmt.Sprintf(`"c%d"`, rev), fmt.Sprintf(`"fault_%d"`, rev)}
	ok := true
	var parts []string
	for sql, n := range committed {
		if n > 1 {
			ok = false
			parts = append(parts, fmt.Sprintf("COMMITTED %dx: %s", n, sql))
		}
	}
	for _, w := range want {
		n, e := 0, 0
		for sql, c := range committed {
			if strings.Contains(sql, w) {
				n += c
			}
		}
		for sql, c := range executed {
			if strings.Contains(sql, w) {
				e += c
			}
		}
		if converged && n != 1 {
			ok = false
		}
		parts = append(parts, fmt.Sprintf("%s committed %d of %d run", strings.Trim(w, `"`), n, e))
	}
	return strings.Join(parts, ", "), ok
}

// leftovers lists what an operation of the subject selector names left behind: a Job not finished, a
// Pod still running, an operation's ServiceAccount, a held database Lease.
// Finished Jobs are kept by design for the retention (an hour) to be read.
func (f *faultLab) leftovers(selector string) string {
	deadline := time.Now().Add(30 * time.Second)
	for {
		left := f.leftoversNow(selector)
		if len(left) == 0 {
			return "none"
		}
		if time.Now().After(deadline) {
			return strings.Join(left, "; ")
		}
		time.Sleep(2 * time.Second)
	}
}

func (f *faultLab) leftoversNow(selector string) []string {
	var left []string
	sel := metav1.ListOptions{LabelSelector: selector}
	jobs, err := f.kube.BatchV1().Jobs(Namespace).List(f.ctx, sel)
	if err != nil {
		return []string{"list jobs: " + err.Error()}
	}
	for _, j := range jobs.Items {
		finished := false
		for _, c := range j.Status.Conditions {
			if (c.Type == batchv1.JobComplete || c.Type == batchv1.JobFailed) && c.Status == corev1.ConditionTrue {
				finished = true
			}
		}
		if !finished {
			left = append(left, "job "+j.Name+" not finished")
		}
	}
	pods, err := f.kube.CoreV1().Pods(Namespace).List(f.ctx, sel)
	if err != nil {
		return []string{"list pods: " + err.Error()}
	}
	for _, p := range pods.Items {
		if p.Status.Phase != corev1.PodSucceeded && p.Status.Phase != corev1.PodFailed {
			left = append(left, "pod "+p.Name+" "+string(p.Status.Phase))
		}
	}
	sas, err := f.kube.CoreV1().ServiceAccounts(Namespace).List(f.ctx, sel)
	if err != nil {
		return []string{"list serviceaccounts: " + err.Error()}
	}
	for _, sa := range sas.Items {
		left = append(left, "serviceaccount "+sa.Name)
	}
	leases, err := f.kube.CoordinationV1().Leases(Namespace).List(f.ctx, metav1.ListOptions{})
	if err != nil {
		return []string{"list leases: " + err.Error()}
	}
	for _, l := range leases.Items {
		if h := l.Spec.HolderIdentity; h != nil && *h != "" && strings.HasPrefix(l.Name, "ptah-db-") {
			left = append(left, "lease "+l.Name+" held by "+*h)
		}
	}
	return left
}

// credentialsShown scans the schema's status, every Event of the two
// namespaces and every container log of the manager and of the operations
// for every lab credential, raw, base64 and URL-escaped.
func (f *faultLab) credentialsShown() string {
	var forms []string
	for _, v := range f.secrets {
		forms = append(forms, v, base64.StdEncoding.EncodeToString([]byte(v)), url.QueryEscape(v))
	}
	texts := map[string]string{}
	if s, err := f.schema(); err == nil {
		b, _ := json.Marshal(s.Status)
		texts["status"] = string(b)
	}
	if m, err := f.migration(); err == nil {
		b, _ := json.Marshal(m.Status)
		texts["migration status"] = string(b)
	}
	for _, ns := range []string{Namespace, OperatorNamespace} {
		if evs, err := f.kube.CoreV1().Events(ns).List(f.ctx, metav1.ListOptions{}); err == nil {
			b, _ := json.Marshal(evs.Items)
			texts["events in "+ns] = string(b)
		}
		pods, err := f.kube.CoreV1().Pods(ns).List(f.ctx, metav1.ListOptions{LabelSelector: "app.kubernetes.io/managed-by"})
		if ns == OperatorNamespace {
			pods, err = f.kube.CoreV1().Pods(ns).List(f.ctx, metav1.ListOptions{})
		}
		if err != nil {
			return "list pods: " + err.Error()
		}
		for _, p := range pods.Items {
			var containers []corev1.Container
			containers = append(containers, p.Spec.InitContainers...)
			containers = append(containers, p.Spec.Containers...)
			for _, c := range containers {
				for _, prev := range []bool{false, true} {
					raw, err := f.kube.CoreV1().Pods(ns).GetLogs(p.Name, &corev1.PodLogOptions{Container: c.Name, Previous: prev}).DoRaw(f.ctx)
					if err == nil {
						texts["log of "+p.Name+"/"+c.Name] += string(raw)
					}
				}
			}
		}
	}
	var found []string
	for where, text := range texts {
		for _, v := range forms {
			if v != "" && strings.Contains(text, v) {
				found = append(found, where)
				break
			}
		}
	}
	if len(found) == 0 {
		return "none"
	}
	sort.Strings(found)
	return "FOUND in " + strings.Join(found, ", ")
}

// faultTable is the summary as markdown.
func faultTable(results []faultResult, commit string) string {
	var b strings.Builder
	fmt.Fprintf(&b, "Measured %s at commit %s.\n\n", time.Now().UTC().Format("2006-01-02"), commit)
	b.WriteString("| fault | phase | moment hit | outcome | loss reported (from the cut) | warning Events on the subject | applied once (committed of run, from PostgreSQL's log) | rows intact | left behind | credentials shown | recovery (fault end to proof) | holds |\n")
	b.WriteString("|---|---|---|---|---|---|---|---|---|---|---|---|\n")
	for _, r := range results {
		reported := "-"
		if r.reported > 0 {
			reported = r.reported.Round(time.Second).String() + ": " + r.reportedWhat
		}
		fmt.Fprintf(&b, "| %s | %s | %s | %s | %s | %s | %s: %s | %s | %s | %s | %s | %s |\n",
			r.fault, r.phase, cell(r.moment), cell(r.outcome), cell(reported), cell(r.events), yes(r.appliedOnce), cell(r.ddl), yes(r.rowsIntact), cell(r.leftovers), cell(r.credentials),
			r.recover.Round(time.Second), yes(r.holds))
	}
	return b.String()
}

func cell(s string) string { return strings.ReplaceAll(strings.ReplaceAll(s, "|", "/"), "\n", " ") }

func yes(b bool) string {
	if b {
		return "yes"
	}
	return "**NO**"
}
