package jobsim_test

import (
	"context"
	"encoding/json"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	admissionregistrationv1 "k8s.io/api/admissionregistration/v1"
	authenticationv1 "k8s.io/api/authentication/v1"
	authorizationv1 "k8s.io/api/authorization/v1"
	batchv1 "k8s.io/api/batch/v1"
	corev1 "k8s.io/api/core/v1"
	rbacv1 "k8s.io/api/rbac/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/rest"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"ptah.run/operator/internal/jobsim"
	"ptah.run/operator/internal/runner"
	"ptah.run/operator/internal/testenv"
	v1alpha1 "ptah.run/operator/operator/api/v1alpha1"
	"ptah.run/operator/operator/devdb"
)

const desiredSQL = `CREATE TABLE customers (id bigint PRIMARY KEY, email text NOT NULL);
CREATE TABLE orders (id bigint PRIMARY KEY, customer_id bigint NOT NULL REFERENCES customers (id));
`

// lab is one API server, database, registry and simulated kubelet shared by
// the subtests, each of which runs its own Jobs in its own namespace.
type lab struct {
	api      *testenv.APIServer
	cs       kubernetes.Interface
	c        client.Client
	pg       *testenv.Postgres
	reg      *testenv.Registry
	kubelet  *jobsim.Kubelet
	dbURL    string
	ociRef   string
	ptahRuns string // file the ptah wrapper appends each invocation's Pod name to
}

func startLab(t testing.TB) *lab {
	l := &lab{}
	// The record's CRD (the runner writes nothing else) and the plan's (an Apply reads it).
	l.api = testenv.StartAPIServer(t, testenv.WithCRDs(
		filepath.Join("..", "..", "operator", "config", "crd", "bases", "operator.ptah.run_ptahresultrecords.yaml"),
		filepath.Join("..", "..", "operator", "config", "crd", "bases", "operator.ptah.run_ptahschemaplans.yaml")))
	l.pg = testenv.StartPostgres(t)
	l.reg = testenv.StartRegistry(t)
	l.dbURL = l.pg.CreateDatabase(t, "shop")
	var err error
	if l.cs, err = kubernetes.NewForConfig(l.api.Config); err != nil {
		t.Fatal(err)
	}
	scheme := clientScheme(t)
	if l.c, err = client.New(l.api.Config, client.Options{Scheme: scheme}); err != nil {
		t.Fatal(err)
	}

	ptah := jobsim.BuildPtah(t, filepath.Join("..", ".."))
	// The wrapper is the real ptah; it only notes which Pod started it, so
	// a test can prove ptah never ran.
	l.ptahRuns = filepath.Join(t.TempDir(), "ptah-runs")
	wrapper := filepath.Join(t.TempDir(), "ptah")
	script := fmt.Sprintf("#!/bin/sh\necho \"$HOSTNAME\" >> %q\nexec %q \"$@\"\n", l.ptahRuns, ptah)
	if err := os.WriteFile(wrapper, []byte(script), 0o755); err != nil {
		t.Fatal(err)
	}

	sqlFile := filepath.Join(t.TempDir(), "shop.sql")
	if err := os.WriteFile(sqlFile, []byte(desiredSQL), 0o644); err != nil {
		t.Fatal(err)
	}
	l.ociRef = "oci://" + l.reg.Host + "/shop/schema:v1"
	push := exec.Command(ptah, "schema", "push", l.ociRef, "--schema-file", sqlFile, "--plain-http", "--json")
	push.Env = append(os.Environ(), "PTAH_OCI_REGISTRY="+l.reg.Host, "PTAH_OCI_USERNAME="+l.reg.Username, "PTAH_OCI_PASSWORD="+l.reg.Password)
	if out, err := push.CombinedOutput(); err != nil {
		t.Fatalf("ptah schema push: %v\n%s", err, out)
	}

	l.kubelet = jobsim.Start(t, l.api.Config, jobsim.Options{
		Ptah:   wrapper,
		Runner: runner.Config{CredentialTimeout: 20 * time.Second},
		// Jobs in namespace "late" run out of time before their Pod starts.
		Fail: func(job *batchv1.Job) (string, string, bool) {
			return batchv1.JobReasonDeadlineExceeded, "Job was active longer than specified deadline", job.Namespace == "late"
		},
	})
	return l
}

// operation sets up what the manager would for one operation in namespace:
// the Secrets, the operation-bound ServiceAccount, Role and RoleBinding, and
// the Job running the runner. It returns the Job.
type operation struct {
	ns        string
	op        runner.Operation
	protocol  string
	dbURL     string
	deadline  int64
	podLabels map[string]string
	env       []corev1.EnvVar
	// noGrant leaves out the RoleBinding, so the credential never works.
	noGrant bool
	// plan, for an Apply, is published as the PtahSchemaPlan the operation
	// names, and the Role may get it, as the manager does.
	plan *v1alpha1.PlanResult
	// devCommand replaces the dev database sidecar's command.
	devCommand []string
}

func (l *lab) run(t testing.TB, o operation) *batchv1.Job {
	t.Helper()
	ctx := context.Background()
	created(t)(l.cs.CoreV1().Namespaces().Create(ctx, &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: o.ns}}, metav1.CreateOptions{}))
	created(t)(l.cs.CoreV1().Secrets(o.ns).Create(ctx, &corev1.Secret{
		ObjectMeta: metav1.ObjectMeta{Name: "shop-db"}, StringData: map[string]string{"url": o.dbURL},
	}, metav1.CreateOptions{}))
	created(t)(l.cs.CoreV1().Secrets(o.ns).Create(ctx, &corev1.Secret{
		ObjectMeta: metav1.ObjectMeta{Name: "registry"}, Type: corev1.SecretTypeBasicAuth,
		StringData: map[string]string{"registry": l.reg.Host, "username": l.reg.Username, "password": l.reg.Password},
	}, metav1.CreateOptions{}))
	sa := "ptah-result-" + o.op.ID
	created(t)(l.cs.CoreV1().ServiceAccounts(o.ns).Create(ctx, &corev1.ServiceAccount{ObjectMeta: metav1.ObjectMeta{Name: sa}}, metav1.CreateOptions{}))
	rules := []rbacv1.PolicyRule{{APIGroups: []string{v1alpha1.GroupVersion.Group}, Resources: []string{"ptahresultrecords"}, Verbs: []string{"create"}}}
	if p := o.plan; p != nil {
		name := "shop-" + o.op.ID
		if err := l.c.Create(ctx, &v1alpha1.PtahSchemaPlan{ObjectMeta: metav1.ObjectMeta{Name: name, Namespace: o.ns}, Spec: v1alpha1.PtahSchemaPlanSpec{
			SchemaRef: v1alpha1.LocalRef{Name: "shop"}, Fingerprint: p.Fingerprint, BaseFingerprint: p.BaseFingerprint, DesiredFingerprint: p.DesiredFingerprint,
			Digest: p.Digest, Destructive: p.Destructive, Statements: p.Statements,
		}}); err != nil {
			t.Fatalf("publish PtahSchemaPlan %s: %v", name, err)
		}
		o.op.Plan, o.op.PlanDigest = name, p.Digest
		rules = append(rules, rbacv1.PolicyRule{APIGroups: []string{v1alpha1.GroupVersion.Group}, Resources: []string{"ptahschemaplans"}, ResourceNames: []string{name}, Verbs: []string{"get"}})
	}
	created(t)(l.cs.RbacV1().Roles(o.ns).Create(ctx, &rbacv1.Role{ObjectMeta: metav1.ObjectMeta{Name: sa}, Rules: rules}, metav1.CreateOptions{}))
	if !o.noGrant {
		created(t)(l.cs.RbacV1().RoleBindings(o.ns).Create(ctx, &rbacv1.RoleBinding{
			ObjectMeta: metav1.ObjectMeta{Name: sa},
			RoleRef:    rbacv1.RoleRef{APIGroup: rbacv1.GroupName, Kind: "Role", Name: sa},
			Subjects:   []rbacv1.Subject{{Kind: rbacv1.ServiceAccountKind, Name: sa, Namespace: o.ns}},
		}, metav1.CreateOptions{}))
	}

	o.op.Namespace = o.ns
	o.op.RecordName = "ptah-" + o.op.Type + "-" + o.op.ID
	opJSON, err := json.Marshal(o.op)
	if err != nil {
		t.Fatal(err)
	}
	if o.protocol == "" {
		o.protocol = runner.ProtocolVersion
	}
	if o.deadline == 0 {
		o.deadline = 120
	}
	secret := func(name, key string) *corev1.EnvVarSource {
		return &corev1.EnvVarSource{SecretKeyRef: &corev1.SecretKeySelector{LocalObjectReference: corev1.LocalObjectReference{Name: name}, Key: key}}
	}
	resultDir := filepath.Dir(runner.TokenPath)
	job := &batchv1.Job{
		ObjectMeta: metav1.ObjectMeta{Name: "ptah-" + o.op.Type + "-shop-" + o.op.ID, Namespace: o.ns},
		Spec: batchv1.JobSpec{
			BackoffLimit:          ptr(int32(0)),
			ActiveDeadlineSeconds: &o.deadline,
			Template: corev1.PodTemplateSpec{
				ObjectMeta: metav1.ObjectMeta{Labels: o.podLabels},
				Spec: corev1.PodSpec{
					RestartPolicy:                corev1.RestartPolicyNever,
					ServiceAccountName:           sa,
					AutomountServiceAccountToken: ptr(false),
					Containers: []corev1.Container{{
						Name: "runner", Image: "ptah-executor:dev",
						Env: append([]corev1.EnvVar{
							{Name: runner.EnvProtocol, Value: o.protocol},
							{Name: runner.EnvOperation, Value: string(opJSON)},
							{Name: runner.EnvDatabaseURL, ValueFrom: secret("shop-db", "url")},
							{Name: runner.EnvOCIRegistry, ValueFrom: secret("registry", "registry")},
							{Name: runner.EnvOCIUsername, ValueFrom: secret("registry", "username")},
							{Name: runner.EnvOCIPassword, ValueFrom: secret("registry", "password")},
						}, o.env...),
						VolumeMounts: []corev1.VolumeMount{
							{Name: "result", MountPath: resultDir, ReadOnly: true},
							{Name: "tmp", MountPath: "/tmp"},
						},
					}},
					Volumes: []corev1.Volume{
						{Name: "result", VolumeSource: corev1.VolumeSource{Projected: &corev1.ProjectedVolumeSource{Sources: []corev1.VolumeProjection{
							{ServiceAccountToken: &corev1.ServiceAccountTokenProjection{Audience: runner.TokenAudience, Path: filepath.Base(runner.TokenPath), ExpirationSeconds: ptr(int64(600))}},
							{ConfigMap: &corev1.ConfigMapProjection{LocalObjectReference: corev1.LocalObjectReference{Name: "kube-root-ca.crt"},
								Items: []corev1.KeyToPath{{Key: "ca.crt", Path: filepath.Base(runner.CAPath)}}}},
						}}}},
						{Name: "tmp", VolumeSource: corev1.VolumeSource{EmptyDir: &corev1.EmptyDirVolumeSource{}}},
					},
				},
			},
		},
	}
	if loadsDesired(o.op.Type) {
		withDevSidecar(&job.Spec.Template.Spec)
		if o.devCommand != nil {
			job.Spec.Template.Spec.InitContainers[0].Command = o.devCommand
		}
	}
	created, err := l.cs.BatchV1().Jobs(o.ns).Create(ctx, job, metav1.CreateOptions{})
	if err != nil {
		t.Fatalf("create Job: %v", err)
	}
	return created
}

func loadsDesired(op string) bool {
	return op == runner.OpObserve || op == runner.OpPlan || op == runner.OpProof
}

// withDevSidecar gives a Pod the dev database as the manager does: a native
// sidecar running devdb.Script, its unix socket in an emptyDir shared with
// the runner, a postStart hook that waits for the server, and the socket's
// URL in the runner's env.
func withDevSidecar(pod *corev1.PodSpec) {
	const sock, data = "/run/ptah-dev", "/var/lib/ptah-dev"
	pod.InitContainers = append(pod.InitContainers, corev1.Container{
		Name: "dev-database", Image: "ptah-dev-database:15", RestartPolicy: ptr(corev1.ContainerRestartPolicyAlways),
		Command:      []string{"/bin/sh", "-c", devdb.Script, "ptah-dev-database"},
		Env:          []corev1.EnvVar{{Name: "PGDATA", Value: data + "/data"}, {Name: "PTAH_DEV_SOCKET_DIR", Value: sock}},
		VolumeMounts: []corev1.VolumeMount{{Name: "dev-socket", MountPath: sock}, {Name: "dev-data", MountPath: data}},
		Lifecycle: &corev1.Lifecycle{PostStart: &corev1.LifecycleHandler{Exec: &corev1.ExecAction{
			Command: []string{"/bin/sh", "-c", devdb.Ready, "ptah-dev-ready", sock, "60"}}}},
	})
	run := &pod.Containers[0]
	run.Env = append(run.Env, corev1.EnvVar{Name: devdb.URLEnv, Value: devdb.SocketURL(sock)})
	run.VolumeMounts = append(run.VolumeMounts, corev1.VolumeMount{Name: "dev-socket", MountPath: sock})
	pod.Volumes = append(pod.Volumes,
		corev1.Volume{Name: "dev-socket", VolumeSource: corev1.VolumeSource{EmptyDir: &corev1.EmptyDirVolumeSource{}}},
		corev1.Volume{Name: "dev-data", VolumeSource: corev1.VolumeSource{EmptyDir: &corev1.EmptyDirVolumeSource{}}})
}

func (l *lab) wait(t testing.TB, job *batchv1.Job) jobsim.Run {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	r, err := l.kubelet.Wait(ctx, job.Namespace, job.Name)
	if err != nil {
		t.Fatal(err)
	}
	return r
}

func (l *lab) record(t testing.TB, ns, name string) *v1alpha1.PtahResultRecord {
	t.Helper()
	rec := &v1alpha1.PtahResultRecord{}
	if err := l.c.Get(context.Background(), client.ObjectKey{Namespace: ns, Name: name}, rec); err != nil {
		t.Fatalf("read PtahResultRecord %s/%s: %v", ns, name, err)
	}
	return rec
}

func (l *lab) jobCondition(t *testing.T, job *batchv1.Job) (batchv1.JobConditionType, *batchv1.Job) {
	t.Helper()
	live, err := l.cs.BatchV1().Jobs(job.Namespace).Get(context.Background(), job.Name, metav1.GetOptions{})
	if err != nil {
		t.Fatal(err)
	}
	for _, c := range live.Status.Conditions {
		if (c.Type == batchv1.JobComplete || c.Type == batchv1.JobFailed) && c.Status == corev1.ConditionTrue {
			return c.Type, live
		}
	}
	return "", live
}

// ptahRanFor says whether the ptah wrapper was started by a Pod of job.
func (l *lab) ptahRanFor(t *testing.T, job *batchv1.Job) bool {
	b, err := os.ReadFile(l.ptahRuns)
	if err != nil && !os.IsNotExist(err) {
		t.Fatal(err)
	}
	for _, pod := range strings.Fields(string(b)) {
		if strings.HasPrefix(pod, job.Name+"-") {
			return true
		}
	}
	return false
}

func TestKubeletRunsTheRunner(t *testing.T) {
	l := startLab(t)

	t.Run("a plan Job ends with a record carrying ptah's plan", func(t *testing.T) {
		job := l.run(t, operation{ns: "plan", dbURL: l.dbURL, op: runner.Operation{
			Type: runner.OpPlan, ID: "op1", Digest: "sha256:claim1", Schema: "shop", OCIRef: l.ociRef, PlainHTTP: true,
		}})
		run := l.wait(t, job)
		if run.Err != nil {
			t.Fatalf("runner delivered nothing: %v\n%s", run.Err, run.Log)
		}
		if cond, live := l.jobCondition(t, job); cond != batchv1.JobComplete || live.Status.Succeeded != 1 || live.Status.CompletionTime == nil || live.Status.StartTime == nil {
			t.Errorf("Job status %+v, want Complete with succeeded 1, startTime and completionTime", live.Status)
		}
		rec := l.record(t, "plan", "ptah-plan-op1")
		if rec.Spec.ChildExitCode == nil || *rec.Spec.ChildExitCode != 0 || rec.Spec.Error != nil {
			t.Fatalf("record spec %+v, want childExitCode 0 and no error\n%s", rec.Spec, run.Log)
		}
		if rec.Spec.OperationID != "op1" || rec.Spec.Digest != "sha256:claim1" || rec.Labels[runner.LabelSchema] != "shop" || rec.Labels[runner.LabelOperation] != "op1" {
			t.Errorf("record does not echo the operation: %+v labels %v", rec.Spec, rec.Labels)
		}
		p := rec.Spec.Result.Plan
		// Two tables, then the foreign key between them as its own statement.
		if p == nil || len(p.Statements) != 3 || !strings.HasPrefix(p.Digest, "sha256:") || p.Destructive {
			t.Fatalf("record plan %+v, want two safe CREATE TABLE statements and a foreign key, with a digest", p)
		}
		for i, want := range []string{"CREATE TABLE \"public\".\"customers\"", "CREATE TABLE \"public\".\"orders\"", "ADD CONSTRAINT orders_customer_id_fkey FOREIGN KEY"} {
			if s := p.Statements[i]; !strings.Contains(s.SQL, want) || s.Severity != v1alpha1.SeveritySafe {
				t.Errorf("statement %d = %+v, want a safe statement containing %s", i, s, want)
			}
		}
		// The plan the record carries is the one the manager hands to Apply.
		if _, err := runner.PlanDocument(p, nil); err != nil {
			t.Errorf("the recorded plan does not rebuild ptah's document: %v", err)
		}
	})

	t.Run("the runner starts once the dev database sidecar accepts connections, and the sidecar stops after", func(t *testing.T) {
		// The sidecar takes 3 s before it starts PostgreSQL: a runner that
		// did not wait for the startup probe would find no socket.
		slow := []string{"/bin/sh", "-c", "sleep 3; " + devdb.Script, "ptah-dev-database"}
		job := l.run(t, operation{ns: "slow-dev", dbURL: l.dbURL, devCommand: slow, op: runner.Operation{
			Type: runner.OpObserve, ID: "op9", Digest: "sha256:claim9", Schema: "shop", OCIRef: l.ociRef, PlainHTTP: true,
		}})
		run := l.wait(t, job)
		rec := l.record(t, "slow-dev", "ptah-observe-op9")
		if rec.Spec.Error != nil || rec.Spec.Result == nil || rec.Spec.Result.DriftDetected == nil {
			t.Fatalf("record %+v, want a drift verdict\n%s", rec.Spec, run.Log)
		}
		if !strings.Contains(run.Log, "sidecar dev-database:") || !strings.Contains(run.Log, "database system is shut down") {
			t.Errorf("the sidecar's log does not show PostgreSQL stopped after the runner:\n%s", run.Log)
		}
	})

	t.Run("a sidecar that never starts keeps the runner and ptah from running", func(t *testing.T) {
		job := l.run(t, operation{ns: "dead-dev", dbURL: l.dbURL, devCommand: []string{"/bin/sh", "-c", "echo no server here >&2; exit 3"}, op: runner.Operation{
			Type: runner.OpPlan, ID: "op10", Digest: "sha256:claim10", Schema: "shop", OCIRef: l.ociRef, PlainHTTP: true,
		}})
		run := l.wait(t, job)
		if run.Condition != batchv1.JobFailed || run.Outcome != nil {
			t.Fatalf("run %+v, want a failed Job whose runner never ran", run)
		}
		if l.ptahRanFor(t, job) {
			t.Errorf("ptah ran without its dev database")
		}
		if !strings.Contains(run.Log, "no server here") {
			t.Errorf("the Job's log does not carry the sidecar's: %s", run.Log)
		}
	})

	t.Run("an unreachable database gives child_exit and childExitCode 2", func(t *testing.T) {
		planted := "planted-" + fmt.Sprint(time.Now().UnixNano())
		unreachable := l.pg.URL("shop", planted, "shop")
		unreachable = strings.Replace(unreachable, fmt.Sprintf(":%d/", l.pg.Port), ":1/", 1)
		job := l.run(t, operation{ns: "unreachable", dbURL: unreachable, op: runner.Operation{
			Type: runner.OpPlan, ID: "op2", Digest: "sha256:claim2", Schema: "shop", OCIRef: l.ociRef, PlainHTTP: true, ConnectTimeout: "2s",
		}})
		run := l.wait(t, job)
		if run.Err != nil {
			t.Fatalf("runner delivered nothing: %v\n%s", run.Err, run.Log)
		}
		rec := l.record(t, "unreachable", "ptah-plan-op2")
		if rec.Spec.ChildExitCode == nil || *rec.Spec.ChildExitCode != 2 {
			t.Fatalf("childExitCode %v, want 2", rec.Spec.ChildExitCode)
		}
		if e := rec.Spec.Error; e == nil || e.Code != runner.ErrChildExit || e.Message != "ptah exited with code 2" {
			t.Errorf("error %+v, want child_exit: ptah exited with code 2", e)
		}
		if e := rec.Spec.ChildError; e == nil || e.Code != "connection" {
			t.Errorf("childError %+v, want ptah's connection error", e)
		}
		if !l.ptahRanFor(t, job) {
			t.Error("ptah did not run for the unreachable database")
		}
		// The planted password is in the Secret only.
		recJSON, _ := json.Marshal(rec)
		_, live := l.jobCondition(t, job)
		jobJSON, _ := json.Marshal(live)
		events, err := l.cs.CoreV1().Events("unreachable").List(context.Background(), metav1.ListOptions{})
		if err != nil {
			t.Fatal(err)
		}
		eventsJSON, _ := json.Marshal(events)
		for what, text := range map[string]string{"record": string(recJSON), "Job": string(jobJSON), "Events": string(eventsJSON), "runner log": run.Log} {
			for name, secret := range map[string]string{"database password": planted, "registry password": l.reg.Password} {
				if strings.Contains(text, secret) {
					t.Errorf("the %s is in the %s", name, what)
				}
			}
		}
		if !strings.Contains(run.Log, "runner: delivered") {
			t.Errorf("runner log lacks the delivery line:\n%s", run.Log)
		}
	})

	t.Run("a protocol mismatch is refused before ptah runs", func(t *testing.T) {
		job := l.run(t, operation{ns: "mismatch", dbURL: l.dbURL, protocol: "ptah.run/runner/v0", op: runner.Operation{
			Type: runner.OpPlan, ID: "op3", Digest: "sha256:claim3", Schema: "shop", OCIRef: l.ociRef, PlainHTTP: true,
		}})
		run := l.wait(t, job)
		if run.Err != nil {
			t.Fatalf("runner delivered nothing: %v\n%s", run.Err, run.Log)
		}
		rec := l.record(t, "mismatch", "ptah-plan-op3")
		if e := rec.Spec.Error; e == nil || e.Code != runner.ErrProtocolMismatch || !strings.Contains(e.Message, "ptah.run/runner/v0") {
			t.Errorf("error %+v, want protocol_mismatch naming the manager's protocol", e)
		}
		if rec.Spec.ChildExitCode != nil {
			t.Errorf("childExitCode %d, want none: ptah must not start", *rec.Spec.ChildExitCode)
		}
		if l.ptahRanFor(t, job) {
			t.Error("ptah ran despite the protocol mismatch")
		}
	})

	t.Run("the result credential can only create records", func(t *testing.T) {
		job := l.run(t, operation{ns: "credential", dbURL: l.dbURL, op: runner.Operation{
			Type: runner.OpResolve, ID: "op4", Digest: "sha256:claim4", Schema: "shop", OCIRef: l.ociRef, PlainHTTP: true,
		}})
		run := l.wait(t, job)
		if run.Err != nil {
			t.Fatalf("runner delivered nothing: %v\n%s", run.Err, run.Log)
		}
		rec := l.record(t, "credential", "ptah-resolve-op4")
		if d := rec.Spec.Result.ResolvedDigest; !strings.HasPrefix(d, "sha256:") || len(d) != 71 {
			t.Errorf("resolvedDigest %q, want the artifact's digest", d)
		}
		// The same token the kubelet mounted: for the Pod's service account.
		token, err := l.cs.CoreV1().ServiceAccounts("credential").CreateToken(context.Background(), "ptah-result-op4", &authenticationv1.TokenRequest{}, metav1.CreateOptions{})
		if err != nil {
			t.Fatal(err)
		}
		cfg := rest.AnonymousClientConfig(l.api.Config)
		cfg.BearerToken = token.Status.Token
		as, err := kubernetes.NewForConfig(cfg)
		if err != nil {
			t.Fatal(err)
		}
		if _, err := as.CoreV1().Secrets("credential").Get(context.Background(), "shop-db", metav1.GetOptions{}); !apierrors.IsForbidden(err) {
			t.Errorf("reading the database Secret with the result token: %v, want Forbidden", err)
		}
		for _, attrs := range []authorizationv1.ResourceAttributes{
			{Namespace: "credential", Verb: "get", Resource: "secrets"},
			{Namespace: "credential", Verb: "create", Resource: "jobs", Group: "batch"},
			{Namespace: "credential", Verb: "get", Resource: "ptahresultrecords", Group: v1alpha1.GroupVersion.Group},
			{Namespace: "credential", Verb: "update", Resource: "ptahschemas", Group: v1alpha1.GroupVersion.Group, Subresource: "status"},
			{Namespace: "plan", Verb: "create", Resource: "ptahresultrecords", Group: v1alpha1.GroupVersion.Group},
		} {
			review, err := as.AuthorizationV1().SelfSubjectAccessReviews().Create(context.Background(), &authorizationv1.SelfSubjectAccessReview{
				Spec: authorizationv1.SelfSubjectAccessReviewSpec{ResourceAttributes: &attrs}}, metav1.CreateOptions{})
			if err != nil {
				t.Fatal(err)
			}
			if review.Status.Allowed {
				t.Errorf("the result token may %s %s/%s in %s", attrs.Verb, attrs.Resource, attrs.Subresource, attrs.Namespace)
			}
		}
	})

	t.Run("a deleted Job's Pod is collected and its runner stopped", func(t *testing.T) {
		ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
		defer cancel()
		job := l.run(t, operation{ns: "deleted", dbURL: l.dbURL, noGrant: true, op: runner.Operation{
			Type: runner.OpResolve, ID: "op6", Digest: "sha256:claim6", Schema: "shop", OCIRef: l.ociRef, PlainHTTP: true,
		}})
		// The runner is waiting for a credential that never comes.
		pods := func() []corev1.Pod {
			list, err := l.cs.CoreV1().Pods("deleted").List(ctx, metav1.ListOptions{})
			if err != nil {
				t.Fatal(err)
			}
			return list.Items
		}
		for len(pods()) == 0 || pods()[0].Status.Phase != corev1.PodRunning {
			if ctx.Err() != nil {
				t.Fatal("the Job's Pod never ran")
			}
			time.Sleep(100 * time.Millisecond)
		}
		if err := l.cs.BatchV1().Jobs("deleted").Delete(ctx, job.Name, metav1.DeleteOptions{PropagationPolicy: ptr(metav1.DeletePropagationBackground)}); err != nil {
			t.Fatal(err)
		}
		for {
			var stopped bool
			for _, r := range l.kubelet.Runs() {
				stopped = stopped || (r.Job == job.Name && r.Err != nil)
			}
			if stopped && len(pods()) == 0 {
				break
			}
			if ctx.Err() != nil {
				t.Fatalf("after the Job's deletion: runner stopped %v, Pods left %d", stopped, len(pods()))
			}
			time.Sleep(100 * time.Millisecond)
		}
		if l.ptahRanFor(t, job) {
			t.Error("ptah ran without a result credential")
		}

		// Deleted without a propagation policy, a batch/v1 Job orphans its Pod.
		job = l.run(t, operation{ns: "deleted", dbURL: l.dbURL, noGrant: true, op: runner.Operation{
			Type: runner.OpResolve, ID: "op7", Digest: "sha256:claim7", Schema: "shop", OCIRef: l.ociRef, PlainHTTP: true,
		}})
		for len(pods()) == 0 {
			if ctx.Err() != nil {
				t.Fatal("the second Job's Pod never appeared")
			}
			time.Sleep(100 * time.Millisecond)
		}
		if err := l.cs.BatchV1().Jobs("deleted").Delete(ctx, job.Name, metav1.DeleteOptions{}); err != nil {
			t.Fatal(err)
		}
		for {
			_, err := l.cs.BatchV1().Jobs("deleted").Get(ctx, job.Name, metav1.GetOptions{})
			if apierrors.IsNotFound(err) {
				break
			}
			if ctx.Err() != nil {
				t.Fatalf("the orphaning deletion never finished: %v", err)
			}
			time.Sleep(100 * time.Millisecond)
		}
		if p := pods(); len(p) != 1 || len(p[0].OwnerReferences) != 0 {
			t.Errorf("after an orphaning deletion: %d Pods, want the one, without an owner", len(p))
		}
	})

	t.Run("the Fail hook fails a Job without a Pod", func(t *testing.T) {
		job := l.run(t, operation{ns: "late", dbURL: l.dbURL, op: runner.Operation{
			Type: runner.OpResolve, ID: "op8", Digest: "sha256:claim8", Schema: "shop", OCIRef: l.ociRef, PlainHTTP: true,
		}})
		run := l.wait(t, job)
		cond, live := l.jobCondition(t, job)
		if cond != batchv1.JobFailed || run.Reason != batchv1.JobReasonDeadlineExceeded || live.Status.Succeeded != 0 || run.Pod != "" {
			t.Errorf("Job %s (%s), status %+v, Pod %q: want Failed (DeadlineExceeded) and no Pod", cond, run.Reason, live.Status, run.Pod)
		}
		if l.ptahRanFor(t, job) {
			t.Error("ptah ran for a failed Job")
		}
	})

	t.Run("every operation type, plan to proof", func(t *testing.T) { everyOperation(t, l) })

	t.Run("a refused Pod leaves FailedCreate and the Job fails at its deadline", func(t *testing.T) {
		ctx := context.Background()
		policy := &admissionregistrationv1.ValidatingAdmissionPolicy{
			ObjectMeta: metav1.ObjectMeta{Name: "pods-need-team"},
			Spec: admissionregistrationv1.ValidatingAdmissionPolicySpec{
				FailurePolicy: ptr(admissionregistrationv1.Fail),
				MatchConstraints: &admissionregistrationv1.MatchResources{ResourceRules: []admissionregistrationv1.NamedRuleWithOperations{{
					RuleWithOperations: admissionregistrationv1.RuleWithOperations{
						Operations: []admissionregistrationv1.OperationType{admissionregistrationv1.Create},
						Rule:       admissionregistrationv1.Rule{APIGroups: []string{""}, APIVersions: []string{"v1"}, Resources: []string{"pods"}},
					}}}},
				Validations: []admissionregistrationv1.Validation{{Expression: "has(object.metadata.labels) && 'team' in object.metadata.labels", Message: "pods here must carry a team label"}},
			},
		}
		created(t)(l.cs.AdmissionregistrationV1().ValidatingAdmissionPolicies().Create(ctx, policy, metav1.CreateOptions{}))
		created(t)(l.cs.AdmissionregistrationV1().ValidatingAdmissionPolicyBindings().Create(ctx, &admissionregistrationv1.ValidatingAdmissionPolicyBinding{
			ObjectMeta: metav1.ObjectMeta{Name: "pods-need-team"},
			Spec: admissionregistrationv1.ValidatingAdmissionPolicyBindingSpec{
				PolicyName:        "pods-need-team",
				ValidationActions: []admissionregistrationv1.ValidationAction{admissionregistrationv1.Deny},
				MatchResources: &admissionregistrationv1.MatchResources{NamespaceSelector: &metav1.LabelSelector{
					MatchLabels: map[string]string{"kubernetes.io/metadata.name": "refused"}}},
			},
		}, metav1.CreateOptions{}))
		// A binding takes effect asynchronously: wait until a dry-run Pod is refused.
		created(t)(l.cs.CoreV1().Namespaces().Create(ctx, &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: "refused"}}, metav1.CreateOptions{}))
		probe := &corev1.Pod{ObjectMeta: metav1.ObjectMeta{Name: "probe"}, Spec: corev1.PodSpec{Containers: []corev1.Container{{Name: "c", Image: "x"}}}}
		for start := time.Now(); ; time.Sleep(200 * time.Millisecond) {
			_, err := l.cs.CoreV1().Pods("refused").Create(ctx, probe, metav1.CreateOptions{DryRun: []string{metav1.DryRunAll}})
			if err != nil && strings.Contains(err.Error(), "team label") {
				break
			}
			if time.Since(start) > 30*time.Second {
				t.Fatalf("the admission policy never refused a Pod: %v", err)
			}
		}
		job := l.run(t, operation{ns: "refused", dbURL: l.dbURL, deadline: 8, op: runner.Operation{
			Type: runner.OpResolve, ID: "op5", Digest: "sha256:claim5", Schema: "shop", OCIRef: l.ociRef, PlainHTTP: true,
		}})
		run := l.wait(t, job)
		if run.Condition != batchv1.JobFailed || run.Reason != batchv1.JobReasonDeadlineExceeded {
			t.Fatalf("Job ended %s (%s), want Failed (DeadlineExceeded); log:\n%s", run.Condition, run.Reason, run.Log)
		}
		if run.Pod != "" || run.Outcome != nil {
			t.Errorf("a Pod %q was admitted or the runner ran (%+v)", run.Pod, run.Outcome)
		}
		events, err := l.cs.CoreV1().Events("refused").List(ctx, metav1.ListOptions{FieldSelector: "involvedObject.name=" + job.Name})
		if err != nil {
			t.Fatal(err)
		}
		var refused bool
		for _, e := range events.Items {
			refused = refused || (e.Reason == "FailedCreate" && e.Type == corev1.EventTypeWarning && strings.Contains(e.Message, "pods here must carry a team label"))
		}
		if !refused {
			t.Errorf("no FailedCreate Warning carrying the refusal on the Job; events: %+v; refusals: %q", events.Items, run.Refusals)
		}
		if l.ptahRanFor(t, job) {
			t.Error("ptah ran for a Job whose Pod was refused")
		}
	})
}

// everyOperation takes one database through the whole pipeline, each step
// a Job whose record feeds the next, as the manager does.
func everyOperation(t *testing.T, l *lab) {
	ctx := context.Background()
	dbURL := l.pg.CreateDatabase(t, "pipeline")
	ns := "pipeline"
	step := 0
	run := func(t *testing.T, typ string, mutate func(*operation)) *v1alpha1.PtahResultRecord {
		t.Helper()
		step++
		o := operation{ns: ns, dbURL: dbURL, op: runner.Operation{
			Type: typ, ID: fmt.Sprintf("s%d", step), Digest: fmt.Sprintf("sha256:step%d", step), Schema: "shop", OCIRef: l.ociRef, PlainHTTP: true,
		}}
		if mutate != nil {
			mutate(&o)
		}
		job := l.run(t, o)
		r := l.wait(t, job)
		if r.Err != nil {
			t.Fatalf("%s: runner delivered nothing: %v\n%s", typ, r.Err, r.Log)
		}
		return l.record(t, ns, "ptah-"+o.op.Type+"-"+o.op.ID)
	}
	policy := func(prefix string) func(*operation) {
		return func(o *operation) {
			name := "policy-" + o.op.ID
			created(t)(l.cs.CoreV1().Namespaces().Create(ctx, &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: ns}}, metav1.CreateOptions{}))
			created(t)(l.cs.CoreV1().ConfigMaps(ns).Create(ctx, &corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Name: name},
				Data: map[string]string{"policy.json": fmt.Sprintf(`{"allowedRepositoryPrefixes": [%q]}`, prefix)}}, metav1.CreateOptions{}))
			o.env = append(o.env, corev1.EnvVar{Name: runner.EnvPolicy, ValueFrom: &corev1.EnvVarSource{ConfigMapKeyRef: &corev1.ConfigMapKeySelector{
				LocalObjectReference: corev1.LocalObjectReference{Name: name}, Key: "policy.json"}}})
		}
	}

	if rec := run(t, runner.OpVerify, policy(l.reg.Host+"/shop/")); rec.Spec.Error != nil || rec.Spec.Result.Verified == nil || !*rec.Spec.Result.Verified {
		t.Errorf("verify under a policy the artifact meets: %+v, want verified", rec.Spec)
	}
	rec := run(t, runner.OpVerify, policy(l.reg.Host+"/elsewhere/"))
	if rec.Spec.Result == nil || rec.Spec.Result.Verified == nil || *rec.Spec.Result.Verified || rec.Spec.ChildError == nil || rec.Spec.ChildError.Code != "policy_refused" {
		t.Errorf("verify under a policy the artifact breaks: %+v, want verified false with childError policy_refused", rec.Spec)
	}
	// A Resolve that verifies reports the digest it resolved and the verdict
	// about that digest, refused or not.
	verifying := func(prefix string) func(*operation) {
		return func(o *operation) { policy(prefix)(o); o.op.Verify = true }
	}
	rec = run(t, runner.OpResolve, verifying(l.reg.Host+"/shop/"))
	if r := rec.Spec.Result; rec.Spec.Error != nil || r == nil || r.ResolvedDigest == "" || r.Verified == nil || !*r.Verified {
		t.Errorf("resolve verifying under a policy the artifact meets: %+v, want a digest and verified", rec.Spec)
	}
	admitted := rec.Spec.Result.ResolvedDigest
	rec = run(t, runner.OpResolve, verifying(l.reg.Host+"/elsewhere/"))
	if r := rec.Spec.Result; r == nil || r.ResolvedDigest != admitted || r.Verified == nil || *r.Verified || rec.Spec.ChildError == nil || rec.Spec.ChildError.Code != "policy_refused" {
		t.Errorf("resolve verifying under a policy the artifact breaks: %+v, want digest %s, verified false, childError policy_refused", rec.Spec, admitted)
	}
	rec = run(t, runner.OpResolve, nil)
	if r := rec.Spec.Result; rec.Spec.Error != nil || r == nil || r.ResolvedDigest != admitted || r.Verified != nil {
		t.Errorf("resolve with no policy: %+v, want digest %s and no verdict", rec.Spec, admitted)
	}
	rec = run(t, runner.OpObserve, nil)
	if rec.Spec.Error != nil || *rec.Spec.ChildExitCode != 1 || rec.Spec.Result.DriftDetected == nil || !*rec.Spec.Result.DriftDetected {
		t.Errorf("observe of an empty database: %+v, want drift (exit 1) and no error", rec.Spec)
	}
	plan := run(t, runner.OpPlan, nil).Spec.Result.Plan
	rec = run(t, runner.OpApply, func(o *operation) { o.plan = plan })
	if rec.Spec.Error != nil || rec.Spec.Result.AppliedPlanFingerprint != plan.Digest {
		t.Fatalf("apply: %+v (child %+v), want plan %s applied", rec.Spec, rec.Spec.ChildError, plan.Digest)
	}
	rec = run(t, runner.OpProof, nil)
	if p := rec.Spec.Result.Plan; rec.Spec.Error != nil || p == nil || len(p.Statements) != 0 || *rec.Spec.Result.DriftDetected || p.BaseFingerprint != plan.DesiredFingerprint {
		t.Errorf("proof after apply: %+v, want an empty plan from the applied state", rec.Spec.Result)
	}
	// Applying the same plan again is refused: the database left its base.
	rec = run(t, runner.OpApply, func(o *operation) { o.plan = plan })
	if rec.Spec.Error == nil || rec.Spec.Error.Code != runner.ErrChildExit || rec.Spec.ChildError == nil || rec.Spec.ChildError.Code != "stale_plan" {
		t.Errorf("second apply: %+v (child %+v), want child_exit with stale_plan", rec.Spec.Error, rec.Spec.ChildError)
	}
}

func clientScheme(t testing.TB) *runtime.Scheme {
	s := runtime.NewScheme()
	if err := v1alpha1.AddToScheme(s); err != nil {
		t.Fatal(err)
	}
	return s
}

// created fails the test unless a create succeeded or found the object there.
func created(t testing.TB) func(any, error) {
	return func(_ any, err error) {
		t.Helper()
		if err != nil && !apierrors.IsAlreadyExists(err) {
			t.Fatal(err)
		}
	}
}

func ptr[T any](v T) *T { return &v }

// BenchmarkPlanJob measures one plan operation end to end: the Job created,
// its Pod admitted, the credential issued and checked, ptah pulling the
// artifact and planning against PostgreSQL, the record created, the Job's
// status written.
func BenchmarkPlanJob(b *testing.B) {
	l := startLab(b)
	b.ResetTimer()
	for i := 0; i < b.N; i++ {
		job := l.run(b, operation{ns: fmt.Sprintf("bench-%d", i), dbURL: l.dbURL, op: runner.Operation{
			Type: runner.OpPlan, ID: fmt.Sprintf("b%d", i), Digest: "sha256:bench", Schema: "shop", OCIRef: l.ociRef, PlainHTTP: true,
		}})
		if r := l.wait(b, job); r.Err != nil || r.Condition != batchv1.JobComplete {
			b.Fatalf("Job %s: %s, %v\n%s", job.Name, r.Condition, r.Err, r.Log)
		}
	}
}
