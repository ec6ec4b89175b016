package controller

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	batchv1 "k8s.io/api/batch/v1"
	corev1 "k8s.io/api/core/v1"
	rbacv1 "k8s.io/api/rbac/v1"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/util/rand"
	utilyaml "k8s.io/apimachinery/pkg/util/yaml"
	clientgoscheme "k8s.io/client-go/kubernetes/scheme"
	"k8s.io/client-go/rest"
	"k8s.io/utils/ptr"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/cache"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/config"
	"sigs.k8s.io/controller-runtime/pkg/envtest"
	ctrllog "sigs.k8s.io/controller-runtime/pkg/log"
	"sigs.k8s.io/controller-runtime/pkg/log/zap"
	metricsserver "sigs.k8s.io/controller-runtime/pkg/metrics/server"

	"ptah.run/operator/internal/jobsim"
	"ptah.run/operator/internal/runner"
	"ptah.run/operator/internal/testenv"
	v1alpha1 "ptah.run/operator/operator/api/v1alpha1"
)

// The components every test of this package shares: one API server, one
// PostgreSQL, one registry and one ptah build. Each test gets its own
// namespace, database, simulated kubelet and manager.
var shared struct {
	api  *testenv.APIServer
	pg   *testenv.Postgres
	reg  *testenv.Registry
	ptah string
	c    client.Client
	// alice is the approver: a user who may only write approvals, reaching
	// the API server through impersonation, so admission stamps her.
	alice client.Client
	sch   *runtime.Scheme
	refV1 string // oci://.../shop/schema:v1
	refV2 string // v1 minus orders.note: a destructive change
}

const schemaV1 = `CREATE TABLE customers (id bigint PRIMARY KEY, email text NOT NULL);
CREATE TABLE orders (id bigint PRIMARY KEY, customer_id bigint NOT NULL REFERENCES customers (id), note text);
`

const schemaV2 = `CREATE TABLE customers (id bigint PRIMARY KEY, email text NOT NULL);
CREATE TABLE orders (id bigint PRIMARY KEY, customer_id bigint NOT NULL REFERENCES customers (id));
`

func TestMain(m *testing.M) {
	tb := &mainTB{}
	code := func() int {
		defer tb.cleanup()
		if !setup(tb) {
			return 1
		}
		code := m.Run()
		if !eventsRecordedAsReferenced(os.Stdout) {
			code = 1
		}
		return code
	}()
	os.Exit(code)
}

func setup(tb *mainTB) (ok bool) {
	defer func() {
		if r := recover(); r != nil {
			if _, fatal := r.(mainFatal); !fatal {
				panic(r)
			}
			ok = false
		}
	}()
	ctrllog.SetLogger(zap.New(zap.WriteTo(io.Discard)))
	shared.api = testenv.StartAPIServer(tb, testenv.WithCRDs(filepath.Join("..", "..", "operator", "config", "crd", "bases")), ownerReferencesEnforced)
	shared.pg = testenv.StartPostgres(tb)
	shared.reg = testenv.StartRegistry(tb)
	shared.ptah = jobsim.BuildPtah(tb, filepath.Join("..", ".."))
	shared.sch = runtime.NewScheme()
	if err := clientgoscheme.AddToScheme(shared.sch); err != nil {
		tb.Fatalf("%v", err)
	}
	if err := v1alpha1.AddToScheme(shared.sch); err != nil {
		tb.Fatalf("%v", err)
	}
	var err error
	if shared.c, err = client.New(shared.api.Config, client.Options{Scheme: shared.sch}); err != nil {
		tb.Fatalf("%v", err)
	}
	installAdmission(tb)
	shared.refV1 = push(tb, "v1", schemaV1)
	shared.refV2 = push(tb, "v2", schemaV2)
	return true
}

// ownerReferencesEnforced runs the API server with the admission plugin some
// distributions enable (OpenShift does): setting blockOwnerDeletion on an
// owner reference needs update on the owner's finalizers. The manager's
// ClusterRole is tested against it.
func ownerReferencesEnforced(e *envtest.Environment) {
	e.ControlPlane.GetAPIServer().Configure().Append("enable-admission-plugins", "OwnerReferencesPermissionEnforcement")
}

// noAdmission labels a namespace the approval admission policies skip: it
// stands for a cluster where they are not installed.
const noAdmission = "ptah.run/test-approval-admission"

// noRecordAdmission labels a namespace the record admission policies skip:
// an admin's binding whose matchResources leaves the namespace out, so
// nothing stamps or refuses a client-written createdBy there.
const noRecordAdmission = "ptah.run/test-record-admission"

// installAdmission installs the policies of operator/config/admission as
// shipped, except that the approval bindings skip namespaces labelled
// noAdmission=off and the record bindings those labelled
// noRecordAdmission=off, and makes alice an approver.
func installAdmission(tb *mainTB) {
	ctx := context.Background()
	for _, f := range []string{"approval-stamp.yaml", "approval-approver.yaml", "acknowledgment-stamp.yaml", "acknowledgment-acknowledger.yaml", "record-stamp.yaml", "record-creator.yaml"} {
		data, err := os.ReadFile(filepath.Join("..", "..", "operator", "config", "admission", f))
		if err != nil {
			tb.Fatalf("%v", err)
		}
		dec := utilyaml.NewYAMLOrJSONDecoder(bytes.NewReader(data), 4096)
		for {
			u := &unstructured.Unstructured{}
			if err := dec.Decode(&u.Object); errors.Is(err, io.EOF) {
				break
			} else if err != nil {
				tb.Fatalf("decode %s: %v", f, err)
			}
			if label := map[string]string{"approval-": noAdmission, "record-": noRecordAdmission}[f[:strings.IndexByte(f, '-')+1]]; strings.HasSuffix(u.GetKind(), "Binding") && label != "" {
				sel := map[string]any{"matchExpressions": []any{map[string]any{"key": label, "operator": "NotIn", "values": []any{"off"}}}}
				if err := unstructured.SetNestedField(u.Object, sel, "spec", "matchResources", "namespaceSelector"); err != nil {
					tb.Fatalf("%v", err)
				}
			}
			if err := shared.c.Create(ctx, u); err != nil {
				tb.Fatalf("install %s %s: %v", u.GetKind(), u.GetName(), err)
			}
		}
	}
	role := &rbacv1.ClusterRole{ObjectMeta: metav1.ObjectMeta{Name: "ptah-approver"}, Rules: []rbacv1.PolicyRule{{
		APIGroups: []string{v1alpha1.GroupVersion.Group}, Resources: []string{"ptahschemaapprovals"},
		Verbs: []string{"create", "get", "list"},
	}}}
	binding := &rbacv1.ClusterRoleBinding{ObjectMeta: metav1.ObjectMeta{Name: "ptah-approver-alice"},
		RoleRef:  rbacv1.RoleRef{APIGroup: rbacv1.GroupName, Kind: "ClusterRole", Name: role.Name},
		Subjects: []rbacv1.Subject{{APIGroup: rbacv1.GroupName, Kind: rbacv1.UserKind, Name: "alice"}},
	}
	for _, o := range []client.Object{role, binding, &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: "admission-probe"}}} {
		if err := shared.c.Create(ctx, o); err != nil {
			tb.Fatalf("%v", err)
		}
	}
	cfg := rest.CopyConfig(shared.api.Config)
	cfg.Impersonate = rest.ImpersonationConfig{UserName: "alice", Groups: []string{"ptah-approvers"}}
	var err error
	if shared.alice, err = client.New(cfg, client.Options{Scheme: shared.sch}); err != nil {
		tb.Fatalf("%v", err)
	}
	// Policies take effect when the API server's informers catch up.
	deadline := time.Now().Add(30 * time.Second)
	for {
		a := &v1alpha1.PtahSchemaApproval{ObjectMeta: metav1.ObjectMeta{Name: "probe", Namespace: "admission-probe"},
			Spec:       v1alpha1.PtahSchemaApprovalSpec{SchemaName: "shop", PlanName: "shop-0", PlanFingerprint: "f"},
			ApprovedBy: &v1alpha1.Approver{Username: "admin"}}
		err := shared.alice.Create(ctx, a, client.DryRunAll)
		if err == nil && a.ApprovedBy != nil && a.ApprovedBy.Username == "alice" {
			return
		}
		if time.Now().After(deadline) {
			tb.Fatalf("the approval admission policies did not stamp alice within 30s: %v, %+v", err, a.ApprovedBy)
		}
		time.Sleep(100 * time.Millisecond)
	}
}

// push publishes sql as the shop schema artifact under tag with the real ptah.
func push(tb testing.TB, tag, sql string) string {
	f := filepath.Join(tb.TempDir(), tag+".sql")
	if err := os.WriteFile(f, []byte(sql), 0o644); err != nil {
		tb.Fatalf("%v", err)
	}
	ref := "oci://" + shared.reg.Host + "/shop/schema:" + tag
	cmd := exec.Command(shared.ptah, "schema", "push", ref, "--schema-file", f, "--plain-http", "--json")
	cmd.Env = append(os.Environ(), "PTAH_OCI_REGISTRY="+shared.reg.Host, "PTAH_OCI_USERNAME="+shared.reg.Username, "PTAH_OCI_PASSWORD="+shared.reg.Password)
	if out, err := cmd.CombinedOutput(); err != nil {
		tb.Fatalf("ptah schema push %s: %v\n%s", ref, err, out)
	}
	return ref
}

// env is one test's world: a namespace with the database Secret (whose URL
// carries the planted password), the registry Secret, a simulated kubelet
// for the namespace, and a manager running the reconciler.
type env struct {
	t        *testing.T
	ns       string
	db       string
	password string
	kubelet  *jobsim.Kubelet
	logs     *syncBuffer
	stop     func()
	rec      *SchemaReconciler
	// mrec is the PtahMigration reconciler the manager runs beside rec;
	// migration adjusts it at every start.
	mrec         *MigrationReconciler
	migrationMod func(*MigrationReconciler)
	// cfg is how the manager reaches the API server (default: as admin).
	cfg *rest.Config
	// manager adjusts the manager's options.
	manager func(*ctrl.Options)
}

type envOption struct {
	kubelet   jobsim.Options
	reconcile func(*SchemaReconciler)
	// migration adjusts the PtahMigration reconciler.
	migration func(*MigrationReconciler)
	// config is how the manager reaches the API server, given the test's
	// namespace before anything is created in it (default: as admin).
	config func(e *env) *rest.Config
	// manager adjusts the manager's options.
	manager func(*ctrl.Options)
	// noAdmission: the approval admission policies skip the namespace.
	noAdmission bool
	// noRecordAdmission: the record admission policies skip the namespace.
	noRecordAdmission bool
}

func newEnv(t *testing.T, opts ...func(*envOption)) *env {
	t.Helper()
	var o envOption
	for _, f := range opts {
		f(&o)
	}
	e := &env{t: t, ns: "t-" + rand.String(8), logs: &syncBuffer{}, cfg: shared.api.Config, manager: o.manager, migrationMod: o.migration}
	provoked.ran(t)
	e.db = strings.ReplaceAll(e.ns, "-", "_")
	e.password = "planted-" + rand.String(16)
	ctx := context.Background()
	ns := &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: e.ns}}
	ns.Labels = map[string]string{}
	if o.noAdmission {
		ns.Labels[noAdmission] = "off"
	}
	if o.noRecordAdmission {
		ns.Labels[noRecordAdmission] = "off"
	}
	must(t, shared.c.Create(ctx, ns))
	shared.pg.Exec(t, "postgres", fmt.Sprintf("CREATE ROLE %s LOGIN PASSWORD '%s'", e.db, e.password))
	shared.pg.Exec(t, "postgres", fmt.Sprintf("CREATE DATABASE %s OWNER %s", e.db, e.db))
	e.secret("shop-db", map[string]string{"url": shared.pg.URL(e.db, e.password, e.db)})
	// A database that does not answer: a closed port on loopback.
	e.secret("shop-db-broken", map[string]string{"url": fmt.Sprintf("postgres://%s:%s@127.0.0.1:1/%s?sslmode=disable&connect_timeout=2", e.db, e.password, e.db)})
	reg := &corev1.Secret{ObjectMeta: metav1.ObjectMeta{Name: "registry", Namespace: e.ns}, Type: corev1.SecretTypeBasicAuth,
		StringData: map[string]string{"registry": shared.reg.Host, "username": shared.reg.Username, "password": shared.reg.Password}}
	must(t, shared.c.Create(ctx, reg))
	// kube-root-ca.crt is published by a controller envtest does not run.
	must(t, shared.c.Create(ctx, &corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Name: "kube-root-ca.crt", Namespace: e.ns},
		Data: map[string]string{"ca.crt": string(shared.api.Config.CAData)}}))

	ko := o.kubelet
	ko.Namespace, ko.Ptah = e.ns, shared.ptah
	if ko.Runner.CredentialTimeout == 0 {
		ko.Runner.CredentialTimeout = 20 * time.Second
	}
	e.kubelet = jobsim.Start(t, shared.api.Config, ko)
	if o.config != nil {
		e.cfg = o.config(e)
	}
	e.startManager(o.reconcile)
	t.Cleanup(func() {
		e.stop()
		e.assertNoPassword()
	})
	return e
}

func (e *env) secret(name string, data map[string]string) {
	must(e.t, shared.c.Create(context.Background(), &corev1.Secret{ObjectMeta: metav1.ObjectMeta{Name: name, Namespace: e.ns}, StringData: data}))
}

// startManager runs a manager for the test's namespace until stop is called.
func (e *env) startManager(mod func(*SchemaReconciler)) {
	t := e.t
	logger := zap.New(zap.WriteTo(e.logs), zap.UseDevMode(true))
	opts := ctrl.Options{
		Scheme:                 shared.sch,
		Logger:                 logger,
		Metrics:                metricsserver.Options{BindAddress: "0"},
		HealthProbeBindAddress: "0",
		// Many objects at once, as the manager's default reconciles them.
		Controller: config.Controller{SkipNameValidation: ptr.To(true), MaxConcurrentReconciles: 4},
		Cache: func() cache.Options {
			o := CacheOptions(nil, nil)
			o.DefaultNamespaces = map[string]cache.Config{e.ns: {}}
			return o
		}(),
	}
	if e.manager != nil {
		e.manager(&opts)
	}
	mgr, err := ctrl.NewManager(e.cfg, opts)
	if err != nil {
		t.Fatalf("create manager: %v", err)
	}
	r := New(mgr, Binding{ExecutorImage: "ptah-executor:test", PtahVersion: "test", Protocol: runner.ProtocolVersion}, []string{shared.reg.Host})
	r.Admission = NewRecordAdmission(mgr, 0)
	if mod != nil {
		mod(r)
	}
	if err := r.SetupWithManager(mgr); err != nil {
		t.Fatalf("set up controller: %v", err)
	}
	if err := mgr.Add(r.Admission); err != nil {
		t.Fatalf("add the record admission check: %v", err)
	}
	mr := NewMigration(mgr, r.Binding, r.PlainHTTP)
	mr.Admission = r.Admission
	if e.migrationMod != nil {
		e.migrationMod(mr)
	}
	if err := mr.SetupWithManager(mgr); err != nil {
		t.Fatalf("set up the PtahMigration controller: %v", err)
	}
	e.mrec = mr
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error, 1)
	go func() { done <- mgr.Start(ctx) }()
	e.rec = r
	var once sync.Once
	e.stop = func() {
		once.Do(func() {
			cancel()
			if err := <-done; err != nil {
				t.Errorf("manager: %v", err)
			}
		})
	}
}

// restart stops the manager and starts a new one, as a crash and restart would.
func (e *env) restart(mod func(*SchemaReconciler)) {
	e.stop()
	e.startManager(mod)
}

type schemaOption func(*v1alpha1.PtahSchema)

// schema creates the PtahSchema "shop" for the v1 artifact under Always.
func (e *env) schema(opts ...schemaOption) *v1alpha1.PtahSchema {
	s := &v1alpha1.PtahSchema{
		ObjectMeta: metav1.ObjectMeta{Name: "shop", Namespace: e.ns},
		Spec: v1alpha1.PtahSchemaSpec{
			Target:  v1alpha1.Target{URLFrom: v1alpha1.SecretKeyRef{Name: "shop-db", Key: "url"}},
			Desired: v1alpha1.Desired{OCIRef: shared.refV1, RegistryAuthFrom: &v1alpha1.LocalRef{Name: "registry"}},
			Policy:  v1alpha1.Policy{Apply: v1alpha1.ApplyAlways},
			Execution: v1alpha1.Execution{
				FailureRetryInterval: &metav1.Duration{Duration: 10 * time.Second},
				Deadline:             &metav1.Duration{Duration: 2 * time.Minute},
			},
		},
	}
	for _, o := range opts {
		o(s)
	}
	must(e.t, shared.c.Create(context.Background(), s))
	return s
}

func (e *env) get(name string) *v1alpha1.PtahSchema {
	var s v1alpha1.PtahSchema
	must(e.t, shared.c.Get(context.Background(), client.ObjectKey{Namespace: e.ns, Name: name}, &s))
	return &s
}

// update re-reads the schema, changes its spec and writes it back.
func (e *env) update(name string, f func(*v1alpha1.PtahSchema)) {
	e.t.Helper()
	for {
		s := e.get(name)
		f(s)
		err := shared.c.Update(context.Background(), s)
		if err == nil {
			return
		}
		if !strings.Contains(err.Error(), "modified") {
			e.t.Fatalf("update PtahSchema %s: %v", name, err)
		}
	}
}

// await polls until ok holds for the schema or the timeout passes. Watching
// would be faster; polling keeps the failure report simple.
func (e *env) await(name, what string, timeout time.Duration, ok func(*v1alpha1.PtahSchema) bool) *v1alpha1.PtahSchema {
	e.t.Helper()
	deadline := time.Now().Add(timeout)
	for {
		s := e.get(name)
		if ok(s) {
			return s
		}
		if time.Now().After(deadline) {
			e.t.Fatalf("PtahSchema %s: %s did not happen within %s; phase %s, conditions %s, lastFailure %+v\nevents:\n%s\nlast runs:\n%s",
				name, what, timeout, s.Status.Phase, conditions(s), s.Status.LastFailure, e.eventLines(), e.runLogs(2))
		}
		time.Sleep(200 * time.Millisecond)
	}
}

// condition is a wait predicate: type=status (reason) at the current generation.
func condition(typ string, status metav1.ConditionStatus, reason string) func(*v1alpha1.PtahSchema) bool {
	return func(s *v1alpha1.PtahSchema) bool { return holds(s, typ, status, reason) }
}

// holds reports whether o's condition typ is status (reason) at o's
// current generation.
func holds(o subject, typ string, status metav1.ConditionStatus, reason string) bool {
	c := meta.FindStatusCondition(*o.SubjectConditions(), typ)
	return c != nil && c.Status == status && c.Reason == reason && c.ObservedGeneration == o.GetGeneration()
}

// conditions lists o's conditions for a failure message.
func conditions(o subject) string {
	var b strings.Builder
	for _, c := range *o.SubjectConditions() {
		fmt.Fprintf(&b, "%s=%s(%s) ", c.Type, c.Status, c.Reason)
	}
	return b.String()
}

func (e *env) events() []corev1.Event {
	var list corev1.EventList
	must(e.t, shared.c.List(context.Background(), &list, client.InNamespace(e.ns)))
	return list.Items
}

// runLogs is what the runner logged in the last n Jobs.
func (e *env) runLogs(n int) string {
	runs := e.kubelet.Runs()
	var b strings.Builder
	for _, r := range runs[max(0, len(runs)-n):] {
		fmt.Fprintf(&b, "  Job %s (%s %s, err %v):\n%s\n", r.Job, r.Condition, r.Reason, r.Err, r.Log)
	}
	return b.String()
}

func (e *env) eventLines() string {
	var b strings.Builder
	for _, ev := range e.events() {
		fmt.Fprintf(&b, "  %s %s %s/%s: %s\n", ev.Type, ev.Reason, ev.InvolvedObject.Kind, ev.InvolvedObject.Name, ev.Message)
	}
	return b.String()
}

// awaitEvent waits for an Event of reason and returns it.
func (e *env) awaitEvent(reason string, timeout time.Duration) corev1.Event {
	e.t.Helper()
	deadline := time.Now().Add(timeout)
	for {
		for _, ev := range e.events() {
			if ev.Reason == reason {
				return ev
			}
		}
		if time.Now().After(deadline) {
			e.t.Fatalf("no %s Event within %s; events:\n%s", reason, timeout, e.eventLines())
		}
		time.Sleep(200 * time.Millisecond)
	}
}

// assertEvent checks an Event against the Events reference: its type and the
// kind it is recorded on come from v1alpha1.EventReasons.
func assertEvent(t *testing.T, ev corev1.Event, onName string) {
	t.Helper()
	provoked.add(t, ev)
	var row *v1alpha1.EventReason
	for i := range v1alpha1.EventReasons {
		if v1alpha1.EventReasons[i].Reason == ev.Reason {
			row = &v1alpha1.EventReasons[i]
		}
	}
	if row == nil {
		t.Fatalf("Event reason %s is not in the Events reference", ev.Reason)
	}
	if !contains(row.Types, ev.Type) {
		t.Errorf("%s Event has type %s, the reference says %v", ev.Reason, ev.Type, row.Types)
	}
	if !contains(row.On, ev.InvolvedObject.Kind) {
		t.Errorf("%s Event is recorded on a %s, the reference says %v", ev.Reason, ev.InvolvedObject.Kind, row.On)
	}
	if ev.InvolvedObject.Name != onName {
		t.Errorf("%s Event is recorded on %s, want %s", ev.Reason, ev.InvolvedObject.Name, onName)
	}
	if len(ev.Message) > maxEventNote {
		t.Errorf("%s Event message is %d bytes, over the bound %d", ev.Reason, len(ev.Message), maxEventNote)
	}
}

func contains(list []string, s string) bool {
	for _, x := range list {
		if x == s {
			return true
		}
	}
	return false
}

// jobs lists the namespace's Jobs whose names start with prefix.
func (e *env) jobs(prefix string) []batchv1.Job {
	var list batchv1.JobList
	must(e.t, shared.c.List(context.Background(), &list, client.InNamespace(e.ns)))
	var out []batchv1.Job
	for _, j := range list.Items {
		if strings.HasPrefix(j.Name, prefix) {
			out = append(out, j)
		}
	}
	return out
}

// assertNoPassword searches everything the test produced for the planted
// database password and the registry's password: schemas' and migrations'
// status, Events, plans, approvals, acknowledgments, result records, Jobs'
// and Pods' specs and status, and every manager log line.
func (e *env) assertNoPassword() {
	t := e.t
	ctx := context.Background()
	var texts []string
	add := func(kind string, list client.ObjectList) {
		if err := shared.c.List(ctx, list, client.InNamespace(e.ns)); err != nil {
			t.Errorf("list %s: %v", kind, err)
			return
		}
		items, _ := meta.ExtractList(list)
		for _, o := range items {
			texts = append(texts, fmt.Sprintf("%s %+v", kind, o))
		}
	}
	add("PtahSchema", &v1alpha1.PtahSchemaList{})
	add("PtahSchemaPlan", &v1alpha1.PtahSchemaPlanList{})
	add("PtahResultRecord", &v1alpha1.PtahResultRecordList{})
	add("PtahSchemaApproval", &v1alpha1.PtahSchemaApprovalList{})
	add("PtahMigration", &v1alpha1.PtahMigrationList{})
	add("PtahMigrationPlan", &v1alpha1.PtahMigrationPlanList{})
	add("PtahMigrationApproval", &v1alpha1.PtahMigrationApprovalList{})
	add("PtahMigrationRunAcknowledgment", &v1alpha1.PtahMigrationRunAcknowledgmentList{})
	add("Event", &corev1.EventList{})
	add("Job", &batchv1.JobList{})
	add("Pod", &corev1.PodList{})
	texts = append(texts, e.logs.String())
	for _, s := range texts {
		for what, secret := range map[string]string{"database": e.password, "registry": shared.reg.Password} {
			if i := strings.Index(s, secret); i >= 0 {
				t.Errorf("the %s password appears in %.60s... near %q", what, s, s[max(0, i-80):i])
			}
		}
	}
}

type syncBuffer struct {
	mu sync.Mutex
	b  bytes.Buffer
}

func (s *syncBuffer) Write(p []byte) (int, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.b.Write(p)
}

func (s *syncBuffer) String() string {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.b.String()
}

func must(t testing.TB, err error) {
	t.Helper()
	if err != nil {
		t.Fatal(err)
	}
}

// mainTB lets TestMain start the shared components with the testenv helpers,
// which take a testing.TB: cleanups run when the package's tests end.
type mainTB struct {
	testing.TB
	cleanups []func()
	dirs     []string
}

type mainFatal struct{}

func (m *mainTB) Helper()                         {}
func (m *mainTB) Cleanup(f func())                { m.cleanups = append(m.cleanups, f) }
func (m *mainTB) Logf(format string, args ...any) { fmt.Fprintf(os.Stderr, format+"\n", args...) }
func (m *mainTB) Errorf(format string, args ...any) {
	fmt.Fprintf(os.Stderr, format+"\n", args...)
}
func (m *mainTB) Fatalf(format string, args ...any) {
	fmt.Fprintf(os.Stderr, format+"\n", args...)
	panic(mainFatal{})
}
func (m *mainTB) Fatal(args ...any) {
	fmt.Fprintln(os.Stderr, args...)
	panic(mainFatal{})
}
func (m *mainTB) TempDir() string {
	d, err := os.MkdirTemp("", "ptah-controller-test-")
	if err != nil {
		m.Fatalf("%v", err)
	}
	m.dirs = append(m.dirs, d)
	return d
}
func (m *mainTB) cleanup() {
	for i := len(m.cleanups) - 1; i >= 0; i-- {
		m.cleanups[i]()
	}
	for _, d := range m.dirs {
		os.RemoveAll(d)
	}
}

// jobGate holds the first Job whose name starts with prefix in the simulated
// kubelet until it is opened; held receives that Job's name.
type jobGate struct {
	prefix  string
	held    chan string
	release chan struct{}
	once    atomic.Bool
}

func holdFirst(prefix string) *jobGate {
	return &jobGate{prefix: prefix, held: make(chan string, 1), release: make(chan struct{})}
}

// hold is a kubelet Hold function.
func (g *jobGate) hold(ctx context.Context, j *batchv1.Job) {
	if !strings.HasPrefix(j.Name, g.prefix) || !g.once.CompareAndSwap(false, true) {
		return
	}
	g.held <- j.Name
	select {
	case <-g.release:
	case <-ctx.Done():
	}
}

func (g *jobGate) open() { close(g.release) }
