package lab

import (
	"bytes"
	"context"
	"encoding/base64"
	"io"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"ptah.run/operator/demo/lab/internal/docker"
	"ptah.run/operator/recorder/labenv"
)

// lockedBuffer collects progress written from several goroutines.
type lockedBuffer struct {
	mu sync.Mutex
	b  bytes.Buffer
}

func (w *lockedBuffer) Write(p []byte) (int, error) {
	w.mu.Lock()
	defer w.mu.Unlock()
	return w.b.Write(p)
}

func (w *lockedBuffer) String() string {
	w.mu.Lock()
	defer w.mu.Unlock()
	return w.b.String()
}

// TestLabUpAndDown brings a real lab up from nothing beside any other, checks
// what it made, brings it up again, and takes it down. It needs root, Docker
// from apt and the network to Debian and the Go module proxy on a cold cache.
func TestLabUpAndDown(t *testing.T) {
	if os.Getenv("PTAH_LAB_E2E") != "1" {
		t.Skip("set PTAH_LAB_E2E=1 to bring a real lab up and down")
	}
	l, stdout, progress := ownLab(t)
	ctx := context.Background()

	start := time.Now()
	if err := l.Up(ctx); err != nil {
		t.Fatalf("lab up: %v", err)
	}
	t.Logf("lab up (first): %s", time.Since(start).Round(time.Second))
	start = time.Now()
	if err := l.Up(ctx); err != nil {
		t.Fatalf("lab up, second time: %v", err)
	}
	t.Logf("lab up (again, idempotent): %s", time.Since(start).Round(time.Second))

	lenv, err := labenv.Load(l.environmentFile())
	if err != nil {
		t.Fatal(err)
	}
	for _, k := range []string{"KUBECONFIG", "NAMESPACE", "OPERATOR_NAMESPACE", "CONTROLLER", "REGISTRY_IN_CLUSTER", "PTAH_OCI_REGISTRY", "PTAH_LAB_RUN_ID", "PTAH_LAB_SECRETS"} {
		if v, _ := lenv.Lookup(k); v == "" {
			t.Errorf("environment has no %s", k)
		}
	}
	if len(lenv.Secrets) < 3 {
		t.Errorf("the recorder sees %d secrets, want every generated password", len(lenv.Secrets))
	}
	get := func(args ...string) string {
		t.Helper()
		out, err := l.kubectlCmd(ctx, "", append([]string{"-n", Namespace, "get"}, args...)...)
		if err != nil {
			t.Fatalf("kubectl get %v: %v", args, err)
		}
		return out
	}
	cluster := lenv.Values["PTAH_LAB_CLUSTER"]
	kind := filepath.Join(l.binDir(), "kind")
	if out, err := l.r.Output(ctx, kind, "get", "clusters"); err != nil || !strings.Contains(out, cluster) {
		t.Errorf("%s get clusters printed %q (%v), want the lab's cluster %s", kind, out, err, cluster)
	}
	postgresIP, err := l.d.IP(ctx, cluster+"-postgres", "kind")
	if err != nil {
		t.Fatal(err)
	}
	if got := get("endpointslice", "postgres-lab", "-o", "jsonpath={.endpoints[0].addresses[0]}"); got != postgresIP {
		t.Errorf("EndpointSlice postgres-lab points at %q, want the container's %s", got, postgresIP)
	}
	if got := get("service", "registry", "postgres", "-o", "name"); got != "service/registry\nservice/postgres" {
		t.Errorf("services: %q", got)
	}
	if got := get("configmap", policyConfigMap, "-o", "jsonpath={.immutable}"); got != "true" {
		t.Errorf("verification policy immutable = %q, want true", got)
	}
	url, err := base64.StdEncoding.DecodeString(get("secret", databaseSecret, "-o", "jsonpath={.data.url}"))
	if err != nil || !strings.HasPrefix(string(url), "postgres://"+appRole+":") {
		t.Errorf("secret %s key url does not hold the application role's URL", databaseSecret)
	}
	if got := get("secret", registrySecret, "-o", "jsonpath={.type}"); got != "kubernetes.io/dockerconfigjson" {
		t.Errorf("secret %s type %q", registrySecret, got)
	}

	stdout.Reset()
	if err := l.Psql(ctx, "select 40 + 2 as answer"); err != nil {
		t.Fatalf("lab psql: %v", err)
	}
	if !strings.Contains(stdout.String(), "42") {
		t.Errorf("lab psql printed %q, want 42", stdout.String())
	}
	stdout.Reset()
	if err := l.Psql(ctx, "select (rolsuper or rolcreatedb or rolcreaterole or rolbypassrls)::text as privileged from pg_roles where rolname = current_user"); err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(stdout.String(), " false") {
		t.Errorf("the application role is not least-privileged: %q", stdout.String())
	}
	start = time.Now()
	newNamespacesAnswerAtOnce(t, l, ctx, 4)
	t.Logf("four scenario namespaces, each queried as soon as it was made: %s", time.Since(start).Round(time.Second))
	stdout.Reset()
	if err := l.Publish(ctx, "v1"); err != nil {
		t.Fatalf("lab publish v1: %v", err)
	}
	digest := strings.TrimSpace(stdout.String())
	if !digestPattern.MatchString(digest) {
		t.Fatalf("lab publish printed %q, want only a digest", digest)
	}
	doc, err := l.Manifest("storefront", digest, env(map[string]string{"APPLY": "Always"}))
	if err != nil {
		t.Fatal(err)
	}
	if _, err := l.kubectlCmd(ctx, doc, "apply", "-f", "-"); err != nil {
		t.Fatalf("the API server refuses the rendered manifest: %v", err)
	}
	convergesThroughRealJobs(t, l, ctx)
	applyOutlivesSuspendAndRestart(t, l, ctx)
	start = time.Now()
	twoReleasesInOneNamespace(t, l, ctx)
	t.Logf("two releases in one namespace: %s", time.Since(start).Round(time.Second))
	start = time.Now()
	readmeQuickStart(t, l, ctx)
	t.Logf("README.md's quick start: %s", time.Since(start).Round(time.Second))
	start = time.Now()
	upgradeFromRelease(t, l, ctx)
	t.Logf("upgrade from release N: %s", time.Since(start).Round(time.Second))
	published := map[string]string{}
	for what, args := range map[string][]string{
		"the schema's status": {"-n", Namespace, "get", "ptahschema", "storefront", "-o", "jsonpath={.status}"},
		"the schema's Events": {"-n", Namespace, "get", "events", "--field-selector", "involvedObject.name=storefront", "-o", "yaml"},
		"the manager's logs":  {"-n", OperatorNamespace, "logs", "deployment/" + l.controllerName(ctx), "--tail=-1"},
	} {
		out, err := l.kubectlCmd(ctx, "", args...)
		if err != nil {
			t.Fatalf("read %s: %v", what, err)
		}
		published[what] = out
	}
	if err := l.Psql(ctx, "create table leftover (id int)"); err != nil {
		t.Fatal(err)
	}
	if err := l.Reset(ctx); err != nil {
		t.Fatalf("lab reset: %v", err)
	}
	stdout.Reset()
	if err := l.Psql(ctx, "select count(*) as tables from pg_tables where schemaname = 'public'"); err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(stdout.String(), "      0") {
		t.Errorf("tables left after reset: %q", stdout.String())
	}
	// The fault subset CI runs, on this lab rather than a second one.
	start = time.Now()
	results := runFaultTable(t, l, ctx, ciFaultRows(), ciMigrationRows())
	t.Logf("fault subset, %d rows, in %s:\n%s", len(results), time.Since(start).Round(time.Second), faultTable(results, l.commit(ctx)))
	creds, err := l.loadCredentials()
	if err != nil || creds == nil {
		t.Fatalf("credentials: %v", err)
	}
	for _, v := range creds.values() {
		if strings.Contains(progress.String(), v) || strings.Contains(stdout.String(), v) {
			t.Errorf("a generated password appears in the lab's output")
		}
	}
	for what, text := range published {
		for _, v := range creds.values() {
			if strings.Contains(text, v) {
				t.Errorf("a generated password appears in %s", what)
			}
		}
	}

	runID := lenv.RunID
	madeNetwork := loadCreated(l.createdFile()).has("network", "kind")
	start = time.Now()
	if err := l.Down(ctx, false); err != nil {
		t.Fatalf("lab down: %v", err)
	}
	t.Logf("lab down: %s", time.Since(start).Round(time.Second))
	if ok, err := l.clusterExists(cluster); err != nil || ok {
		t.Errorf("cluster %s still listed after down (%v)", cluster, err)
	}
	if out, err := l.r.Output(ctx, kind, "get", "clusters"); err != nil || strings.Contains(out, cluster) {
		t.Errorf("after down, kind get clusters printed %q (%v)", out, err)
	}
	if left, _ := l.d.ContainersWithLabel(ctx, docker.LabelRun, runID); len(left) > 0 {
		t.Errorf("containers left after down: %v", left)
	}
	if out, _ := l.r.Output(ctx, "docker", "ps", "-a", "--format", "{{.Names}}"); strings.Contains(out, runID) {
		t.Errorf("docker ps -a still shows the lab: %q", out)
	}
	if madeNetwork && l.d.NetworkExists(ctx, "kind") {
		t.Errorf("network kind, created by the lab, remains")
	}
	if _, err := os.Stat(l.environmentFile()); err == nil {
		t.Errorf("environment file remains after down")
	}
}

// ownLab is a lab of the test's own, kept beside any other in a temporary
// directory and taken down when t ends if it is still up; stdout collects
// what its verbs print, progress its progress (also on stderr).
func ownLab(t *testing.T) (l *Lab, stdout *bytes.Buffer, progress *lockedBuffer) {
	t.Helper()
	root, err := filepath.Abs("../..")
	if err != nil {
		t.Fatal(err)
	}
	stdout, progress = &bytes.Buffer{}, &lockedBuffer{}
	l = New(root, stdout, io.MultiWriter(progress, os.Stderr)).WithDir(filepath.Join(t.TempDir(), ".lab"))
	t.Cleanup(func() {
		if _, err := os.Stat(l.createdFile()); err == nil {
			_ = l.Down(context.Background(), false)
		}
	})
	return l, stdout, progress
}

// convergesThroughRealJobs waits for the applied storefront schema to be
// proved in sync by Jobs whose Pods ran the executor image, and for its
// table to be in the lab's database.
func convergesThroughRealJobs(t *testing.T, l *Lab, ctx context.Context) {
	t.Helper()
	if tars, _ := filepath.Glob(filepath.Join(l.OperatorImagesDir(), "*.tar")); len(tars) == 0 {
		t.Fatalf("no operator images in %s: run make images (make lab-e2e does)", l.OperatorImagesDir())
	}
	start := time.Now()
	if _, err := l.kubectlCmd(ctx, "", "-n", Namespace, "wait", "ptahschema/storefront",
		"--for=jsonpath={.status.conditions[?(@.type==\"InSync\")].reason}=ScopedConverged", "--timeout=6m"); err != nil {
		status, _ := l.kubectlCmd(ctx, "", "-n", Namespace, "get", "ptahschema", "storefront", "-o", "jsonpath={.status.conditions}")
		t.Fatalf("storefront did not converge: %v\nconditions: %s", err, status)
	}
	t.Logf("storefront InSync=True (ScopedConverged) after %s", time.Since(start).Round(time.Second))
	status, err := l.kubectlCmd(ctx, "", "-n", Namespace, "get", "ptahschema", "storefront", "-o",
		"jsonpath={.status.conditions[?(@.type==\"InSync\")].status} {.status.applied.artifactDigest}")
	if err != nil || !strings.HasPrefix(status, "True sha256:") {
		t.Errorf("InSync status and applied digest = %q (%v), want True and a digest", status, err)
	}
	images, err := l.kubectlCmd(ctx, "", "-n", Namespace, "get", "pods", "-l", "job-name", "-o", "jsonpath={.items[*].spec.containers[*].image}")
	r, rerr := l.installed(ctx)
	if rerr != nil {
		t.Fatal(rerr)
	}
	if want := r.Registry + "/" + releasePath + "/ptah-executor:" + r.Version; err != nil || !strings.Contains(images, want) {
		t.Errorf("operation Pods ran %q (%v), want the executor image of the lab's release, %s", images, err, want)
	}
	t.Logf("the operator installed from %s --version %s", r.Chart, r.Version)
	// The Resolve, which made the first plan, and the Proof loaded the
	// desired SQL into the dev database sidecar (ptah refuses to plan
	// without one; a first apply runs no Observe and no Plan Pod, as nothing
	// is proved yet), and the kubelet stops it once the runner has exited.
	sidecars, err := l.kubectlCmd(ctx, "", "-n", Namespace, "get", "pods", "-l", "operator.ptah.run/op in (resolve,observe,plan,proof)", "-o",
		"jsonpath={range .items[*]}{.spec.initContainers[0].image} {.status.initContainerStatuses[0].state.terminated.reason}{\"\\n\"}{end}")
	lines := strings.Fields(strings.ReplaceAll(strings.TrimSpace(sidecars), " ", "|"))
	if err != nil || len(lines) < 2 {
		t.Errorf("the first apply's Resolve and Proof Pods: %q (%v), want at least two", sidecars, err)
	}
	for _, line := range lines {
		if !strings.HasPrefix(line, "ptah-lab/dev-database:") {
			t.Errorf("a first apply's Resolve, Observe, Plan or Proof Pod ran %q, want the lab's dev database sidecar first", line)
		}
	}
	t.Logf("dev database sidecars (image|how it ended): %s", strings.Join(lines, "; "))
	var out bytes.Buffer
	saved := l.Stdout
	l.Stdout = &out
	defer func() { l.Stdout = saved }()
	if err := l.Psql(ctx, "select count(*) as tables from pg_tables where tablename = 'customers'"); err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(out.String(), "      1") {
		t.Errorf("table customers not in the database: %q", out.String())
	}
}

// applyOutlivesSuspendAndRestart: with another session holding a lock on
// customers, storefront moves to v2 and its Apply waits on the lock. The
// schema is then suspended and the manager's Pod deleted: neither may stop
// the Apply. Once the lock is released it commits, once, and the status
// records it; resumed, the schema is proved in sync.
func applyOutlivesSuspendAndRestart(t *testing.T, l *Lab, ctx context.Context) {
	t.Helper()
	kubectl := func(args ...string) string {
		t.Helper()
		out, err := l.kubectlCmd(ctx, "", args...)
		if err != nil {
			t.Fatalf("kubectl %s: %v", strings.Join(args, " "), err)
		}
		return out
	}
	psql := func(sql string) (string, error) {
		return l.kubectlCmd(ctx, sql, "-n", Namespace, "exec", "-i", "deployment/"+psqlDeployment, "--",
			"sh", "-c", `exec psql "$DATABASE_URL" -X -q -t -A -v ON_ERROR_STOP=1 -f -`)
	}
	// The lock is held until the test cancels the session's sleep, which
	// ends its transaction.
	locked := make(chan error, 1)
	go func() {
		_, err := psql("SET application_name = 'e2e-locker'; BEGIN; LOCK TABLE customers IN ACCESS SHARE MODE; SELECT pg_sleep(150); COMMIT;")
		locked <- err
	}()
	var out bytes.Buffer
	saved := l.Stdout
	l.Stdout = &out
	err := l.Publish(ctx, "v2")
	l.Stdout = saved
	if err != nil {
		t.Fatalf("lab publish v2: %v", err)
	}
	doc, err := l.Manifest("storefront", strings.TrimSpace(out.String()), env(map[string]string{"APPLY": "Always"}))
	if err != nil {
		t.Fatal(err)
	}
	if _, err := l.kubectlCmd(ctx, doc, "apply", "-f", "-"); err != nil {
		t.Fatal(err)
	}
	// Long enough for the suspend and the restart below (the default is 30s).
	kubectl("-n", Namespace, "patch", "ptahschema", "storefront", "--type=merge", "-p", `{"spec":{"policy":{"lockTimeout":"3m"}}}`)
	applies := func() []string {
		return strings.Fields(kubectl("-n", Namespace, "get", "jobs", "-l", "operator.ptah.run/op=apply", "-o", "jsonpath={.items[*].metadata.uid}"))
	}
	before := len(applies()) // v1's Apply
	deadline := time.Now().Add(3 * time.Minute)
	for {
		waiting, err := psql("select count(*) from pg_locks l join pg_class c on c.oid = l.relation where not l.granted and c.relname = 'customers'")
		if err == nil && strings.TrimSpace(waiting) != "0" && len(applies()) == before+1 {
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("no v2 Apply waiting on the lock within 3m (%d Apply Jobs, %v)", len(applies()), err)
		}
		time.Sleep(time.Second)
	}
	apply := applies()[before]
	kubectl("-n", Namespace, "patch", "ptahschema", "storefront", "--type=merge", "-p", `{"spec":{"suspend":true}}`)
	kubectl("-n", OperatorNamespace, "delete", "pod", "-l", "app.kubernetes.io/name="+l.controllerName(ctx), "--wait=true")
	kubectl("-n", OperatorNamespace, "rollout", "status", "deployment/"+l.controllerName(ctx), "--timeout=2m")
	time.Sleep(5 * time.Second)
	if got := applies(); len(got) != before+1 || got[before] != apply {
		t.Fatalf("the waiting Apply Job was deleted or replaced by the suspend or the manager's restart: %v, want %s", got, apply)
	}
	if _, err := psql("select pg_cancel_backend(pid) from pg_stat_activity where application_name = 'e2e-locker'"); err != nil {
		t.Fatalf("release the lock: %v", err)
	}
	if err := <-locked; err == nil {
		t.Fatalf("the session holding the lock ended by itself, not when the test released it")
	}
	if _, err := l.kubectlCmd(ctx, "", "-n", Namespace, "wait", "ptahschema/storefront",
		"--for=jsonpath={.status.conditions[?(@.type==\"Suspended\")].status}=True", "--timeout=3m"); err != nil {
		t.Fatalf("not Suspended after the Apply's end: %v", err)
	}
	if got := kubectl("-n", Namespace, "get", "ptahschema", "storefront", "-o", `jsonpath={.status.conditions[?(@.type=="Applying")].reason}`); got != "JobCompleted" {
		t.Errorf("Applying reason %q after the Apply finished, want JobCompleted", got)
	}
	if phone, err := psql("select count(*) from information_schema.columns where table_name = 'customers' and column_name = 'phone'"); err != nil || strings.TrimSpace(phone) != "1" {
		t.Errorf("customers.phone after the Apply: %q (%v), want it added", phone, err)
	}
	if got := applies(); len(got) != before+1 {
		t.Errorf("%d Apply Jobs, want %d: v2 was applied more than once", len(got), before+1)
	}
	kubectl("-n", Namespace, "patch", "ptahschema", "storefront", "--type=merge", "-p", `{"spec":{"suspend":false}}`)
	if _, err := l.kubectlCmd(ctx, "", "-n", Namespace, "wait", "ptahschema/storefront",
		"--for=jsonpath={.status.conditions[?(@.type==\"InSync\")].reason}=ScopedConverged", "--timeout=4m"); err != nil {
		t.Fatalf("not InSync after resuming: %v", err)
	}
	t.Logf("a v2 Apply waiting on a lock outlived a suspend and the manager's restart, and committed once")
}

// newNamespacesAnswerAtOnce makes n scenario namespaces one after another and
// queries each one's database through its Service the moment scenario-up
// returns, as a scenario's reset does: a namespace handed over before
// kube-proxy routes its Services sends psql to whatever answers an address
// nothing routes (CI's smoke met an HTTP reply there).
func newNamespacesAnswerAtOnce(t *testing.T, l *Lab, ctx context.Context, n int) {
	t.Helper()
	for i := range n {
		out := printedBy(t, l, func() error { return l.ScenarioUp(ctx) })
		ns, _, _ := strings.Cut(strings.TrimPrefix(out, "NAMESPACE="), "\n")
		got, err := l.kubectlCmd(ctx, "", "-n", ns, "exec", "deployment/"+psqlDeployment, "--", "psql", "-X", "-tA", "-c", "select 'answered'")
		if err != nil || strings.TrimSpace(got) != "answered" {
			t.Errorf("namespace %d (%s), queried as scenario-up returned: %q, %v", i+1, ns, got, err)
		}
		if err := l.ScenarioDown(ctx, ns); err != nil {
			t.Errorf("scenario-down %s: %v", ns, err)
		}
	}
}
