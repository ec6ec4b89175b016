package controller

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"slices"
	"sort"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	authenticationv1 "k8s.io/api/authentication/v1"
	batchv1 "k8s.io/api/batch/v1"
	corev1 "k8s.io/api/core/v1"
	rbacv1 "k8s.io/api/rbac/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/rest"
	"k8s.io/utils/ptr"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/client/interceptor"

	"ptah.run/operator/internal/runner"
	v1alpha1 "ptah.run/operator/operator/api/v1alpha1"
)

// TestManagerClusterRole runs the manager as the install runs it: as the
// ServiceAccount of operator/config/rbac, with that account's own token,
// bound by the shipped ClusterRoleBinding to the shipped ClusterRole, with
// leader election on. It drives every path that needs a permission (an
// approval, a lost record read past the cache, a missing owner account, a
// blocked plan, pruning) with real Jobs, while a wrapping transport records
// every request the manager makes, its informers' lists and watches included.
// A missing rule shows as a refused request or a schema that does not
// converge; a rule no request used fails the second subtest.
func TestManagerClusterRole(t *testing.T) {
	t.Parallel()
	calls := &callLog{}
	var lost, unrecorded atomic.Bool
	var managerCfg *rest.Config
	e := newEnv(t, func(o *envOption) {
		o.config = func(e *env) *rest.Config {
			managerCfg = shippedManager(e, calls)
			return managerCfg
		}
		o.manager = func(mo *ctrl.Options) {
			mo.LeaderElection = true
			mo.LeaderElectionNamespace = "ptah-system"
			mo.LeaderElectionID = "ptah-operator.operator.ptah.run"
		}
		o.reconcile = func(r *SchemaReconciler) {
			r.Retention, r.PlanHistory, r.ResultTimeout = time.Nanosecond, 1, 2*time.Second
			// One Apply Job's creation is not recorded in status, as when the
			// manager stops right after creating it: the next reconcile finds
			// the Job past its cache and adopts it.
			r.Client = interceptor.NewClient(noWatch{r.Client}, unrecordedApply(&unrecorded))
		}
		// One record is lost, so the manager reads it past its cache.
		o.kubelet.Complete = func(j *batchv1.Job) bool {
			return strings.HasPrefix(j.Name, "ptah-resolve-shop-") && lost.CompareAndSwap(false, true)
		}
	})
	t.Cleanup(func() {
		if t.Failed() {
			for _, c := range calls.refused() {
				t.Logf("refused: %s %s: %s", c.method, c.path, c.denied)
			}
			t.Logf("the manager's requests:\n%s", calls)
		}
	})
	// An owner account that does not exist is looked up, and refused.
	e.schema(func(s *v1alpha1.PtahSchema) {
		s.Name = "ghost"
		s.Spec.Execution.ServiceAccountName = "missing"
	})
	// The Job controller's Pod refusals are reported as the manager finds
	// them; two found on an unchanged schema are one Event series.
	q := quota(e, "count/pods")
	e.schema(onApproval)
	deadline := time.Now().Add(converge)
	for n := 0; n < 2; {
		if time.Now().After(deadline) {
			t.Fatalf("fewer than two PodAdmissionRefused Events; events:\n%s", e.eventLines())
		}
		time.Sleep(500 * time.Millisecond)
		n = 0
		for _, ev := range e.events() {
			switch {
			case ev.Reason != v1alpha1.EventPodAdmissionRefused:
			case ev.Series != nil:
				n += int(ev.Series.Count)
			default:
				n++
			}
		}
	}
	must(t, shared.c.Delete(context.Background(), q))
	s := awaitApprovalOf(e)
	approvalFor(e, "ok", s.Status.Plan.Name, s.Status.Plan.Fingerprint)
	inSync(e)
	// Without the approval naming it, the applied plan becomes history.
	must(t, shared.c.Delete(context.Background(), &v1alpha1.PtahSchemaApproval{ObjectMeta: metav1.ObjectMeta{Name: "ok", Namespace: e.ns}}))
	e.update("shop", func(s *v1alpha1.PtahSchema) { s.Spec.Desired.OCIRef = shared.refV2 })
	e.await("shop", "Ready=False (PolicyBlocked)", converge, condition(v1alpha1.ConditionReady, metav1.ConditionFalse, v1alpha1.ReasonPolicyBlocked))
	e.update("shop", func(s *v1alpha1.PtahSchema) { s.Spec.Desired.OCIRef = shared.refV1 })
	inSync(e)
	e.await("ghost", "ReconciliationFailed=True (ConfigurationError)", 10*time.Second,
		condition(v1alpha1.ConditionReconciliationFailed, metav1.ConditionTrue, v1alpha1.ReasonConfigurationError))
	// A PtahMigration on a database of its own, through its approval.
	e.secret("migrations-db", map[string]string{"url": shared.pg.CreateDatabase(t, strings.ReplaceAll(e.ns, "-", "_")+"_m")})
	e.migration(pushMigrations(t, "rbac-"+e.ns, migrationsV1), func(m *v1alpha1.PtahMigration) {
		m.Spec.Target.URLFrom.Name = "migrations-db"
		m.Spec.Policy.Apply = v1alpha1.ApplyOnApproval
	})
	m := e.awaitMigration("ApprovalRequired=True", converge, migrationCondition(v1alpha1.ConditionApprovalRequired, metav1.ConditionTrue, v1alpha1.ReasonAwaitingApproval))
	must(t, bobClient(t).Create(context.Background(), &v1alpha1.PtahMigrationApproval{ObjectMeta: metav1.ObjectMeta{Name: "ok", Namespace: e.ns},
		Spec: v1alpha1.PtahMigrationApprovalSpec{MigrationName: "shop", PlanName: m.Status.Plan.Name, PlanFingerprint: m.Status.Plan.Fingerprint}}))
	migrated(e, 3)

	legacyLogRead(t, e, managerCfg)

	role := shippedRole(t)
	// What the manager does after convergence (pruning, Event series) runs
	// on its own time: give it a while to use the rest.
	deadline = time.Now().Add(30 * time.Second)
	for len(unusedRules(role, calls.uses())) > 0 && time.Now().Before(deadline) {
		time.Sleep(500 * time.Millisecond)
	}
	t.Run("grants every request the manager makes", func(t *testing.T) {
		for _, c := range calls.refused() {
			t.Errorf("the shipped ClusterRole refused the manager %s %s: %s", c.method, c.path, c.denied)
		}
	})
	t.Run("holds no rule the manager does not use", func(t *testing.T) {
		for _, u := range unusedRules(role, calls.uses()) {
			t.Errorf("role.yaml grants %s, which the manager never used: remove its marker from rbac.go", u)
		}
	})
}

// TestUnusedRulesAreFound: the check above reports a rule nothing used, a
// verb of a rule nothing used, and a permission only granted to others.
func TestUnusedRulesAreFound(t *testing.T) {
	t.Parallel()
	role := &rbacv1.ClusterRole{Rules: []rbacv1.PolicyRule{
		{APIGroups: []string{"batch"}, Resources: []string{"jobs"}, Verbs: []string{"create", "delete"}},
		{APIGroups: []string{""}, Resources: []string{"serviceaccounts/token"}, Verbs: []string{"create"}},
		{APIGroups: []string{v1alpha1.GroupVersion.Group}, Resources: []string{"ptahresultrecords"}, Verbs: []string{"create"}},
	}}
	used := map[apiUse]bool{{"batch", "jobs", "create"}: true}
	got := fmt.Sprint(unusedRules(role, used))
	if want := "[delete jobs.batch create serviceaccounts/token create ptahresultrecords.operator.ptah.run]"; got != want {
		t.Errorf("unused rules %s, want %s", got, want)
	}
	used[apiUse{v1alpha1.GroupVersion.Group, "ptahresultrecords", "create"}] = true
	used[apiUse{"batch", "jobs", "delete"}] = true
	if got := fmt.Sprint(unusedRules(role, used)); got != "[create serviceaccounts/token]" {
		t.Errorf("unused rules %s, want only the token rule", got)
	}
}

// shippedManager installs the manager's identity as the chart ships it (its
// namespace, its ServiceAccount, ClusterRole and ClusterRoleBinding), and returns a config
// that reaches the API server with a token of that account, recording each
// request in calls.
func shippedManager(e *env, calls *callLog) *rest.Config {
	t := e.t
	ctx := context.Background()
	var sa corev1.ServiceAccount
	var binding rbacv1.ClusterRoleBinding
	shipped(t, "ServiceAccount", &sa)
	shipped(t, "ClusterRoleBinding", &binding)
	role := shippedRole(t)
	if binding.RoleRef.Name != role.Name || len(binding.Subjects) != 1 || binding.Subjects[0].Name != sa.Name || binding.Subjects[0].Namespace != sa.Namespace {
		t.Fatalf("the chart's ClusterRoleBinding does not bind ClusterRole %s to ServiceAccount %s/%s: %+v", role.Name, sa.Namespace, sa.Name, binding)
	}
	for _, o := range []client.Object{&corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: sa.Namespace}}, &sa, role, &binding} {
		if err := shared.c.Create(ctx, o); !apierrors.IsAlreadyExists(err) {
			must(t, err)
		}
	}
	cs, err := kubernetes.NewForConfig(shared.api.Config)
	must(t, err)
	tok, err := cs.CoreV1().ServiceAccounts(sa.Namespace).CreateToken(ctx, sa.Name,
		&authenticationv1.TokenRequest{Spec: authenticationv1.TokenRequestSpec{ExpirationSeconds: ptr.To[int64](3600)}}, metav1.CreateOptions{})
	must(t, err)
	cfg := &rest.Config{
		Host:            shared.api.Config.Host,
		TLSClientConfig: rest.TLSClientConfig{CAData: shared.api.Config.CAData},
		BearerToken:     tok.Status.Token,
		QPS:             shared.api.Config.QPS, Burst: shared.api.Config.Burst,
	}
	// JSON rather than protobuf, so the recorder can read what is created.
	cfg.ContentType = "application/json"
	cfg.Wrap(calls.wrap)
	return cfg
}

// apiUse is one permission: a verb on a resource (with its subresource) of
// an API group.
type apiUse struct{ group, resource, verb string }

func (u apiUse) String() string {
	if u.group == "" {
		return u.verb + " " + u.resource
	}
	return u.verb + " " + u.resource + "." + u.group
}

// apiCall is one request and the permissions it exercised.
type apiCall struct {
	method, path string
	status       int
	// denied: the API server refused it for want of a permission (a 403
	// from a quota is not a missing rule, nor is one from an admission
	// policy: the record admission self-test's dry-run forgery is refused
	// by ptah-record-creator once RBAC allowed it).
	denied string
	uses   []apiUse
}

func (c apiCall) String() string {
	return fmt.Sprintf("%s %s -> %d %s (%v)", c.method, c.path, c.status, c.denied, c.uses)
}

// callLog records the manager's requests.
type callLog struct {
	mu    sync.Mutex
	calls []apiCall
}

func (l *callLog) wrap(rt http.RoundTripper) http.RoundTripper {
	return roundTripper(func(req *http.Request) (*http.Response, error) {
		c := apiCall{method: req.Method, path: req.URL.Path}
		c.uses = requestUses(req)
		resp, err := rt.RoundTrip(req)
		if err == nil {
			c.status = resp.StatusCode
			if c.status == http.StatusForbidden {
				body, _ := io.ReadAll(resp.Body)
				resp.Body.Close()
				resp.Body = io.NopCloser(bytes.NewReader(body))
				var st metav1.Status
				if json.Unmarshal(body, &st) != nil || st.Message == "" {
					st.Message = string(body)
				}
				if !strings.Contains(st.Message, "exceeded quota") && !strings.Contains(st.Message, "ValidatingAdmissionPolicy '") {
					c.denied = st.Message
				}
			}
		}
		l.mu.Lock()
		l.calls = append(l.calls, c)
		l.mu.Unlock()
		return resp, err
	})
}

type roundTripper func(*http.Request) (*http.Response, error)

func (f roundTripper) RoundTrip(r *http.Request) (*http.Response, error) { return f(r) }

// uses are the permissions exercised by requests the API server authorized
// (any answer but a denial and a failed connection).
func (l *callLog) uses() map[apiUse]bool {
	l.mu.Lock()
	defer l.mu.Unlock()
	out := map[apiUse]bool{}
	for _, c := range l.calls {
		if c.status != 0 && c.denied == "" {
			for _, u := range c.uses {
				out[u] = true
			}
		}
	}
	return out
}

func (l *callLog) refused() []apiCall {
	l.mu.Lock()
	defer l.mu.Unlock()
	var out []apiCall
	for _, c := range l.calls {
		if c.denied != "" {
			out = append(out, c)
		}
	}
	return out
}

func (l *callLog) String() string {
	l.mu.Lock()
	defer l.mu.Unlock()
	seen := map[string]int{}
	for _, c := range l.calls {
		seen[fmt.Sprintf("%v -> %d %s", c.uses, c.status, c.denied)]++
	}
	lines := make([]string, 0, len(seen))
	for k, n := range seen {
		lines = append(lines, fmt.Sprintf("  %dx %s", n, k))
	}
	sort.Strings(lines)
	return strings.Join(lines, "\n")
}

// requestUses are the permissions the API server checks for req: its verb on
// its resource, and for a creation the permissions RBAC and admission check
// on what it carries. Granting a Role needs the grantor to hold each of its
// rules, and an owner reference that blocks its owner's deletion needs
// update on the owner's finalizers (OwnerReferencesPermissionEnforcement).
// Discovery and other non-resource requests use no rule of the role.
func requestUses(req *http.Request) []apiUse {
	group, resource, named, ok := resourceOf(req.URL.Path)
	if !ok {
		return nil
	}
	var verb string
	switch req.Method {
	case http.MethodGet:
		verb = "list"
		if named {
			verb = "get"
		} else if q := req.URL.Query(); q.Get("watch") == "true" {
			verb = "watch"
			if q.Get("sendInitialEvents") == "true" {
				// An informer's watch-list: client-go's reflector sends a
				// LIST in its place whenever the API server cannot serve
				// one (older servers, or any error), so it needs both.
				return []apiUse{{group, resource, "list"}, {group, resource, "watch"}}
			}
		}
	case http.MethodPost:
		verb = "create"
	case http.MethodPut:
		verb = "update"
	case http.MethodPatch:
		verb = "patch"
	case http.MethodDelete:
		verb = "delete"
		if !named {
			verb = "deletecollection"
		}
	default:
		return nil
	}
	uses := []apiUse{{group, resource, verb}}
	if verb != "create" || req.GetBody == nil {
		return uses
	}
	body, err := req.GetBody()
	if err != nil {
		return uses
	}
	var obj struct {
		Metadata struct {
			OwnerReferences []metav1.OwnerReference `json:"ownerReferences"`
		} `json:"metadata"`
		Rules []rbacv1.PolicyRule `json:"rules"`
	}
	data, _ := io.ReadAll(body)
	if json.NewDecoder(bytes.NewReader(data)).Decode(&obj) != nil {
		return uses
	}
	for _, o := range obj.Metadata.OwnerReferences {
		if ptr.Deref(o.BlockOwnerDeletion, false) && o.Kind == v1alpha1.KindPtahSchema {
			uses = append(uses, apiUse{v1alpha1.GroupVersion.Group, "ptahschemas/finalizers", "update"})
		}
		if ptr.Deref(o.BlockOwnerDeletion, false) && o.Kind == v1alpha1.KindPtahMigration {
			uses = append(uses, apiUse{v1alpha1.GroupVersion.Group, "ptahmigrations/finalizers", "update"})
		}
	}
	if resource == "roles" && group == rbacv1.GroupName {
		for _, r := range obj.Rules {
			for _, g := range r.APIGroups {
				for _, res := range r.Resources {
					for _, v := range r.Verbs {
						uses = append(uses, apiUse{g, res, v})
					}
				}
			}
		}
	}
	return uses
}

// resourceOf parses /api/v1/... and /apis/<group>/<version>/... paths.
func resourceOf(path string) (group, resource string, named, ok bool) {
	parts := strings.Split(strings.Trim(path, "/"), "/")
	switch {
	case len(parts) >= 3 && parts[0] == "api":
		parts = parts[2:]
	case len(parts) >= 4 && parts[0] == "apis":
		group, parts = parts[1], parts[3:]
	default:
		return "", "", false, false
	}
	if len(parts) >= 3 && parts[0] == "namespaces" {
		parts = parts[2:]
	}
	resource = parts[0]
	if len(parts) >= 3 {
		resource += "/" + parts[2]
	}
	return group, resource, len(parts) >= 2, true
}

// unusedRules are the (group, resource, verb) of role's rules that were not
// used.
func unusedRules(role *rbacv1.ClusterRole, used map[apiUse]bool) []apiUse {
	var out []apiUse
	for _, r := range role.Rules {
		for _, g := range r.APIGroups {
			for _, res := range r.Resources {
				for _, v := range r.Verbs {
					if u := (apiUse{g, res, v}); !used[u] && !slices.Contains(out, u) {
						out = append(out, u)
					}
				}
			}
		}
	}
	return out
}

// TestMissingRuleIsRefused: under the shipped role without one of its rules
// (create Jobs), the recorder sees the API server refuse the manager, and no
// Job exists: what TestManagerClusterRole reports when a marker is missing.
func TestMissingRuleIsRefused(t *testing.T) {
	t.Parallel()
	calls := &callLog{}
	var id *managerIdentity
	e := newEnv(t, func(o *envOption) {
		o.config = func(e *env) *rest.Config {
			cfg := asShippedRole(&id)(e)
			id.revoke(e.t, e.ns, "batch", "jobs", "create")
			cfg.Wrap(calls.wrap)
			return cfg
		}
	})
	e.schema()
	deadline := time.Now().Add(30 * time.Second)
	for len(calls.refused()) == 0 {
		if time.Now().After(deadline) {
			t.Fatalf("no request was refused within 30s; requests:\n%s", calls)
		}
		time.Sleep(200 * time.Millisecond)
	}
	for _, c := range calls.refused() {
		if !slices.Contains(c.uses, apiUse{"batch", "jobs", "create"}) || !strings.Contains(c.denied, `cannot create resource "jobs"`) {
			t.Errorf("refused %s %s (%v): %s; want only the Job creation", c.method, c.path, c.uses, c.denied)
		}
	}
	if n := len(e.jobs("")); n != 0 {
		t.Errorf("%d Jobs created without the permission to create them", n)
	}
}

// legacyLogRead reads, as the manager's identity and through the manager's
// own reader (ClientsetLogs), the result of a finished legacy Job from its
// Pod's log, the one read no PtahSchema makes. envtest runs no kubelet, so
// the API server authorizes the request and, with no node to fetch the log
// from, answers with an empty one: what this proves is that the shipped
// role lets the manager ask (the second subtest below fails when nothing
// used pods/log get), not what a kubelet serves (TestLegacyResultRead).
func legacyLogRead(t *testing.T, e *env, cfg *rest.Config) {
	t.Helper()
	ctx := context.Background()
	m := &v1alpha1.PtahMigration{ObjectMeta: metav1.ObjectMeta{Name: "ledger", Namespace: e.ns}, Spec: v1alpha1.PtahMigrationSpec{
		Target:     v1alpha1.Target{URLFrom: v1alpha1.SecretKeyRef{Name: "shop-db", Key: "url"}},
		Migrations: v1alpha1.MigrationsSource{OCIRef: "oci://r.example/ledger@sha256:" + strings.Repeat("0", 64)},
	}}
	must(t, shared.c.Create(ctx, m))
	c := subjectClaim(m, m.Spec, "", v1alpha1.OperationObserve, 1, e.rec.Binding.of(m), time.Now())
	j := job(m, c, e.rec.Binding.of(m), runner.Operation{Type: runner.OpMigrationObserve, ResultTransport: runner.TransportPodLog})
	// Its finished Pod is made by hand (admin), and the Job itself is not
	// created, so no kubelet runs it: only the read is the manager's.
	j.UID = types.UID("legacy-" + e.ns)
	pod := &corev1.Pod{ObjectMeta: metav1.ObjectMeta{Name: j.Name + "-pod", Namespace: e.ns,
		Labels: map[string]string{"batch.kubernetes.io/controller-uid": string(j.UID)}}, Spec: j.Spec.Template.Spec}
	must(t, shared.c.Create(ctx, pod))
	pod.Status.ContainerStatuses = []corev1.ContainerStatus{{Name: runnerContainer, State: corev1.ContainerState{Terminated: &corev1.ContainerStateTerminated{ExitCode: 0}}}}
	must(t, shared.c.Status().Update(ctx, pod))
	cs, err := kubernetes.NewForConfig(cfg)
	must(t, err)
	api, err := client.New(cfg, client.Options{Scheme: shared.sch})
	must(t, err)
	now := time.Now()
	_, lr, err := jobResult(ctx, api, api, nil, ClientsetLogs{cs}, 5*time.Second, m, c, j, now, now)
	if err != nil || lr == nil || !strings.Contains(lr.Unreadable, "it holds no result frame") {
		t.Errorf("the manager reading a legacy Job's Pod log: %v, %+v; want the API server's empty log of a Pod no node runs", err, lr)
	}
	must(t, shared.c.Delete(ctx, pod))
	must(t, shared.c.Delete(ctx, m))
}
