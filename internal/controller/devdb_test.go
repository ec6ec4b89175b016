package controller

import (
	"context"
	"encoding/json"
	"fmt"
	neturl "net/url"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/jackc/pgx/v5"
	batchv1 "k8s.io/api/batch/v1"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"ptah.run/operator/internal/runner"
	"ptah.run/operator/internal/testenv"
	v1alpha1 "ptah.run/operator/operator/api/v1alpha1"
	"ptah.run/operator/operator/devdb"
)

// hostileUnderNever are the artifacts of testenv.HostileSchemas the operator
// is tried with: transaction control, settings and roles, server-wide
// statements, side effects at load time.
// (ptah's own tests try every one; each here costs a few Jobs.)
var hostileUnderNever = []string{
	"commit then drop", "rollback then delete", "release the loader's savepoint", "DO block after commit",
	"function with side effects called at load", "search_path by set_config", "set session authorization",
	"alter system", "alter role", "drop database", "copy to program", "terminate backends",
}

// TestHostileArtifactsUnderApplyNever runs Observe and Plan through real
// Jobs (jobsim, the dev database sidecar, real ptah) for artifacts written
// to change the managed database, each its own PtahSchema under apply:
// Never on one database of a server of its own. Its catalog, rows and
// server must be what they were.
func TestHostileArtifactsUnderApplyNever(t *testing.T) {
	t.Parallel()
	e := newEnv(t)
	pg := testenv.StartPostgres(t)
	url := pg.CreateDatabase(t, "victim")
	pg.SeedVictim(t, "victim", "victim")
	e.secret("victim-db", map[string]string{"url": url})
	marker := filepath.Join(os.TempDir(), "ptah-operator-hostile-"+e.ns)
	before := pg.Snapshot(t, "victim")

	byName := map[string]testenv.Hostile{}
	for _, h := range testenv.HostileSchemas("victim", "victim", marker) {
		byName[h.Name] = h
	}
	var names []string
	for i, n := range hostileUnderNever {
		h, ok := byName[n]
		if !ok {
			t.Fatalf("no hostile schema %q", n)
		}
		name := fmt.Sprintf("hostile-%02d", i)
		ref := push(t, e.ns+"-"+name, h.SQL)
		e.schema(func(s *v1alpha1.PtahSchema) {
			s.Name = name
			s.Spec.Target.URLFrom.Name = "victim-db"
			s.Spec.Desired.OCIRef = ref
			s.Spec.Policy.Apply = v1alpha1.ApplyNever
		})
		names = append(names, name)
	}
	done := func(s *v1alpha1.PtahSchema) bool {
		switch s.Status.Phase {
		case v1alpha1.PhaseFailed, v1alpha1.PhaseReadyToApply, v1alpha1.PhaseBlocked, v1alpha1.PhaseInSync:
			return s.Status.ObservedGeneration == s.Generation
		}
		return false
	}
	for i, name := range names {
		s := e.await(name, "an Observe or Plan result", 3*time.Minute, done)
		f := ""
		if s.Status.LastFailure != nil {
			f = s.Status.LastFailure.Message
		}
		t.Logf("%s (%s): phase %s %s", name, hostileUnderNever[i], s.Status.Phase, f)
		// Done with: its retries would only slow the others.
		must(t, shared.c.Delete(context.Background(), s))
	}
	if after := pg.Snapshot(t, "victim"); after != before {
		t.Fatalf("the managed database changed:\nbefore:\n%s\nafter:\n%s", before, after)
	}
	if _, err := os.Stat(marker); err == nil {
		t.Fatalf("%s was created", marker)
	}
	sidecars := 0
	for _, r := range e.kubelet.Runs() {
		if strings.Contains(r.Log, "sidecar "+devContainer+":") {
			sidecars++
		}
	}
	if sidecars < len(names) {
		t.Fatalf("%d Jobs ran the dev database sidecar, want at least one per schema (%d)", sidecars, len(names))
	}
}

// TestOperationPodsCarryTheDevDatabase reads the Jobs the manager created
// on the way to InSync and in the first re-check after it (the Observe):
// each Observe, Plan and Proof Pod has the sidecar as the issue describes
// it, and no other operation has a dev database.
func TestOperationPodsCarryTheDevDatabase(t *testing.T) {
	t.Parallel()
	e := newEnv(t, func(o *envOption) {
		o.reconcile = func(r *SchemaReconciler) { r.DevDatabaseImage = "example.test/dev-postgres:15" }
	})
	e.schema(func(s *v1alpha1.PtahSchema) { s.Spec.Interval = &metav1.Duration{Duration: 30 * time.Second} })
	e.await("shop", "InSync", converge, condition(v1alpha1.ConditionInSync, metav1.ConditionTrue, v1alpha1.ReasonScopedConverged))
	for deadline := time.Now().Add(30*time.Second + converge); len(e.jobs("ptah-observe-shop-")) == 0; time.Sleep(time.Second) {
		if time.Now().After(deadline) {
			t.Fatalf("no Observe Job in the re-check after spec.interval")
		}
	}
	seen := map[string]bool{}
	for _, j := range e.jobs("") {
		pod := j.Spec.Template.Spec
		op := j.Labels["operator.ptah.run/op"]
		plans := jobOperation(t, j).ThenPlan
		if plans {
			op += "+plan"
		}
		seen[op] = true
		run := pod.Containers[0]
		devURL := envValue(run, devdb.URLEnv)
		if op != runner.OpObserve && op != runner.OpPlan && op != runner.OpProof && !plans {
			if len(pod.InitContainers) != 0 || devURL != nil {
				t.Errorf("%s: a %s Job has a dev database: %+v", j.Name, op, pod.InitContainers)
			}
			continue
		}
		if len(pod.InitContainers) != 1 {
			t.Fatalf("%s: %d init containers, want the dev database sidecar", j.Name, len(pod.InitContainers))
		}
		sc := pod.InitContainers[0]
		sec := sc.SecurityContext
		switch {
		case sc.Image != "example.test/dev-postgres:15":
			t.Errorf("%s: sidecar image %s, want the manager's", j.Name, sc.Image)
		case sc.RestartPolicy == nil || *sc.RestartPolicy != corev1.ContainerRestartPolicyAlways:
			t.Errorf("%s: the sidecar is not native (restartPolicy Always)", j.Name)
		case sc.Lifecycle == nil || sc.Lifecycle.PostStart == nil || sc.Lifecycle.PostStart.Exec == nil:
			t.Errorf("%s: the sidecar has no postStart hook to hold the runner until it accepts connections", j.Name)
		case len(sc.Ports) != 0:
			t.Errorf("%s: the sidecar exposes ports %v", j.Name, sc.Ports)
		case sec == nil || sec.ReadOnlyRootFilesystem == nil || !*sec.ReadOnlyRootFilesystem || sec.RunAsNonRoot == nil || !*sec.RunAsNonRoot ||
			sec.AllowPrivilegeEscalation == nil || *sec.AllowPrivilegeEscalation || sec.Capabilities == nil || len(sec.Capabilities.Drop) != 1 || sec.Capabilities.Drop[0] != "ALL":
			t.Errorf("%s: sidecar security context %+v, want the runner's", j.Name, sec)
		case devURL == nil || devURL.Value != devdb.SocketURL(devSocketDir):
			t.Errorf("%s: runner's %s = %+v, want the sidecar's socket", j.Name, devdb.URLEnv, devURL)
		}
		for _, ev := range sc.Env {
			if ev.ValueFrom != nil {
				t.Errorf("%s: the sidecar reads %s from %+v: it holds no credential", j.Name, ev.Name, ev.ValueFrom)
			}
		}
		if envValue(sc, runner.EnvDatabaseURL) != nil {
			t.Errorf("%s: the sidecar holds the target's URL", j.Name)
		}
		for _, v := range pod.Volumes {
			if v.Name == devDataVolume && (v.EmptyDir == nil || v.EmptyDir.Medium != corev1.StorageMediumMemory || v.EmptyDir.SizeLimit == nil || v.EmptyDir.SizeLimit.IsZero()) {
				t.Errorf("%s: the dev database's data volume is %+v, want an emptyDir in memory with a size limit", j.Name, v.VolumeSource)
			}
		}
	}
	// The first plan is made in the Resolve's Pod; the re-check's Resolve,
	// of a proved schema, plans nothing and has no dev database.
	for _, op := range []string{runner.OpResolve + "+plan", runner.OpResolve, runner.OpObserve, runner.OpApply, runner.OpProof} {
		if !seen[op] {
			t.Errorf("no %s Job on the way to InSync; saw %v", op, seen)
		}
	}
}

// TestOwnerNamedDevDatabase converges with spec.execution.devDatabase.urlFrom
// naming a server of the owner's: no sidecar runs, the comparison database
// and its role are created there and dropped.
func TestOwnerNamedDevDatabase(t *testing.T) {
	t.Parallel()
	e := newEnv(t)
	dev := testenv.StartPostgres(t)
	devURL := dev.CreateDatabase(t, "devrole")
	dev.Exec(t, "postgres", "ALTER ROLE devrole CREATEDB CREATEROLE")
	e.secret("dev-db", map[string]string{"url": devURL})
	e.schema(func(s *v1alpha1.PtahSchema) {
		s.Spec.Execution.DevDatabase = &v1alpha1.DevDatabase{URLFrom: &v1alpha1.SecretKeyRef{Name: "dev-db", Key: "url"}}
	})
	e.await("shop", "InSync", converge, condition(v1alpha1.ConditionInSync, metav1.ConditionTrue, v1alpha1.ReasonScopedConverged))
	for _, j := range e.jobs("") {
		if n := len(j.Spec.Template.Spec.InitContainers); n != 0 {
			t.Errorf("%s: %d init containers, want no sidecar", j.Name, n)
		}
	}
	conn, err := pgx.Connect(context.Background(), dev.SuperURL("postgres"))
	if err != nil {
		t.Fatal(err)
	}
	defer conn.Close(context.Background())
	var left int
	if err := conn.QueryRow(context.Background(), `SELECT count(*) FROM pg_database WHERE datname LIKE 'ptah\_dev\_%'`).Scan(&left); err != nil {
		t.Fatal(err)
	}
	if left != 0 {
		t.Errorf("%d comparison databases left on the owner's dev server", left)
	}
	if err := conn.QueryRow(context.Background(), `SELECT count(*) FROM pg_roles WHERE rolname LIKE 'ptah\_dev\_%'`).Scan(&left); err != nil {
		t.Fatal(err)
	}
	if left != 0 {
		t.Errorf("%d comparison roles left on the owner's dev server", left)
	}
	// Its password never reaches status, Events or logs either.
	u, _ := neturl.Parse(devURL)
	devPassword, _ := u.User.Password()
	target := e.password
	e.password = devPassword
	e.assertNoPassword()
	e.password = target
}

// TestDevDatabaseAdmission refuses at admission what cannot be right.
func TestDevDatabaseAdmission(t *testing.T) {
	t.Parallel()
	e := newEnv(t)
	for name, dev := range map[string]*v1alpha1.DevDatabase{
		"the target's own URL":    {URLFrom: &v1alpha1.SecretKeyRef{Name: "shop-db", Key: "url"}},
		"urlFrom and an image":    {URLFrom: &v1alpha1.SecretKeyRef{Name: "dev-db", Key: "url"}, Image: "postgres:15"},
		"an image with a space":   {Image: "postgres 15"},
		"urlFrom and a sidecar's": {URLFrom: &v1alpha1.SecretKeyRef{Name: "dev-db", Key: "url"}, Resources: &corev1.ResourceRequirements{}},
	} {
		s := &v1alpha1.PtahSchema{
			ObjectMeta: metav1.ObjectMeta{Name: "refused", Namespace: e.ns},
			Spec: v1alpha1.PtahSchemaSpec{
				Target:    v1alpha1.Target{URLFrom: v1alpha1.SecretKeyRef{Name: "shop-db", Key: "url"}},
				Desired:   v1alpha1.Desired{OCIRef: shared.refV1},
				Execution: v1alpha1.Execution{DevDatabase: dev},
			},
		}
		if err := shared.c.Create(context.Background(), s); err == nil {
			t.Errorf("%s: admitted", name)
			_ = shared.c.Delete(context.Background(), s)
		} else {
			t.Logf("%s: %v", name, err)
		}
	}
}

// jobOperation is the operation a Job's runner is told to run.
func jobOperation(t *testing.T, j batchv1.Job) runner.Operation {
	t.Helper()
	var op runner.Operation
	v := envValue(j.Spec.Template.Spec.Containers[0], runner.EnvOperation)
	if v == nil {
		t.Fatalf("Job %s sets no %s", j.Name, runner.EnvOperation)
	}
	must(t, json.Unmarshal([]byte(v.Value), &op))
	return op
}

func envValue(c corev1.Container, name string) *corev1.EnvVar {
	for i := range c.Env {
		if c.Env[i].Name == name {
			return &c.Env[i]
		}
	}
	return nil
}
