package controller

import (
	"context"
	"errors"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"net/http/httputil"
	"net/url"
	"os"
	"slices"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	authorizationv1 "k8s.io/api/authorization/v1"
	batchv1 "k8s.io/api/batch/v1"
	rbacv1 "k8s.io/api/rbac/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/watch"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/rest"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/client/interceptor"
	"sigs.k8s.io/yaml"

	"ptah.run/operator/operator/chart"
)

// The faults the tests provoke, each through a real component: a manager
// whose Job creations fail (as one killed between its claim and its Job), a
// manager running under a copy of the shipped ClusterRole whose rules a test
// can revoke, and an API server that answers slowly.

// failJobCreates makes the reconciler's Job creations fail for the Jobs match
// selects, as they do for a manager stopped right after writing its claim.
func failJobCreates(match func(*batchv1.Job) bool) func(*SchemaReconciler) {
	return func(r *SchemaReconciler) {
		r.Client = interceptor.NewClient(noWatch{r.Client}, interceptor.Funcs{
			Create: func(ctx context.Context, c client.WithWatch, o client.Object, opts ...client.CreateOption) error {
				if j, ok := o.(*batchv1.Job); ok && match(j) {
					return fmt.Errorf("create Job %s: the manager was stopped before it reached the API server", j.Name)
				}
				return c.Create(ctx, o, opts...)
			},
		})
	}
}

func anyJob(*batchv1.Job) bool { return true }

// noWatch adapts the manager's client, which the reconciler never watches
// through, to the interceptor's client.WithWatch.
type noWatch struct{ client.Client }

func (noWatch) Watch(context.Context, client.ObjectList, ...client.ListOption) (watch.Interface, error) {
	return nil, errors.New("the reconciler does not watch through its client")
}

// shippedRole is the manager's ClusterRole as the chart installs it with its
// defaults (release ptah in ptah-system).
func shippedRole(t testing.TB) *rbacv1.ClusterRole {
	t.Helper()
	var role rbacv1.ClusterRole
	shipped(t, "ClusterRole", &role)
	if len(role.Rules) == 0 {
		t.Fatalf("the chart's ClusterRole has no rules: %+v", role)
	}
	return &role
}

// shipped decodes the one object of kind the chart renders with its
// defaults, as `helm install ptah --namespace ptah-system` installs it.
func shipped(t testing.TB, kind string, into any) {
	t.Helper()
	objs, err := chart.Render("ptah", "ptah-system", nil)
	if err != nil {
		t.Fatal(err)
	}
	var found []*unstructured.Unstructured
	for _, o := range objs {
		if o.GetKind() == kind {
			found = append(found, o)
		}
	}
	if len(found) != 1 {
		t.Fatalf("the chart renders %d objects of kind %s, want 1", len(found), kind)
	}
	if err := runtime.DefaultUnstructuredConverter.FromUnstructured(found[0].Object, into); err != nil {
		t.Fatal(err)
	}
}

func readYAML(t testing.TB, path string, into any) {
	t.Helper()
	data, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	if err := yaml.UnmarshalStrict(data, into); err != nil {
		t.Fatalf("%s: %v", path, err)
	}
}

// managerIdentity runs the test's manager as a user of its own, bound to a
// copy of the shipped ClusterRole that the test may change while it runs.
type managerIdentity struct {
	user string
	role *rbacv1.ClusterRole
}

// asShippedRole gives e's manager the identity and returns it.
func asShippedRole(id **managerIdentity) func(*env) *rest.Config {
	return func(e *env) *rest.Config {
		t := e.t
		ctx := context.Background()
		m := &managerIdentity{user: "ptah-manager-" + e.ns}
		m.role = shippedRole(t)
		m.role.ObjectMeta = metav1.ObjectMeta{Name: m.user}
		must(t, shared.c.Create(ctx, m.role))
		must(t, shared.c.Create(ctx, &rbacv1.ClusterRoleBinding{ObjectMeta: metav1.ObjectMeta{Name: m.user},
			RoleRef:  rbacv1.RoleRef{APIGroup: rbacv1.GroupName, Kind: "ClusterRole", Name: m.user},
			Subjects: []rbacv1.Subject{{APIGroup: rbacv1.GroupName, Kind: rbacv1.UserKind, Name: m.user}},
		}))
		*id = m
		cfg := rest.CopyConfig(shared.api.Config)
		cfg.Impersonate = rest.ImpersonationConfig{UserName: m.user}
		return cfg
	}
}

// revoke removes verbs on group/resource from the identity's role and waits
// until the API server's authorizer refuses them.
func (m *managerIdentity) revoke(t testing.TB, ns, group, resource string, verbs ...string) {
	t.Helper()
	ctx := context.Background()
	var role rbacv1.ClusterRole
	must(t, shared.c.Get(ctx, client.ObjectKey{Name: m.user}, &role))
	var rules []rbacv1.PolicyRule
	for _, r := range role.Rules {
		for _, res := range r.Resources {
			one := rbacv1.PolicyRule{APIGroups: r.APIGroups, Resources: []string{res}, Verbs: r.Verbs}
			if slices.Contains(r.APIGroups, group) && res == resource {
				one.Verbs = slices.DeleteFunc(slices.Clone(r.Verbs), func(v string) bool { return slices.Contains(verbs, v) })
			}
			if len(one.Verbs) > 0 {
				rules = append(rules, one)
			}
		}
	}
	role.Rules = rules
	must(t, shared.c.Update(ctx, &role))
	m.await(t, ns, group, resource, verbs[0], false)
}

// restore gives the identity the shipped rules back.
func (m *managerIdentity) restore(t testing.TB, ns, group, resource, verb string) {
	t.Helper()
	ctx := context.Background()
	var role rbacv1.ClusterRole
	must(t, shared.c.Get(ctx, client.ObjectKey{Name: m.user}, &role))
	role.Rules = shippedRole(t).Rules
	must(t, shared.c.Update(ctx, &role))
	m.await(t, ns, group, resource, verb, true)
}

// await asks the API server whether the identity may verb group/resource in
// ns until the answer is allowed.
func (m *managerIdentity) await(t testing.TB, ns, group, resource, verb string, allowed bool) {
	t.Helper()
	cs, err := kubernetes.NewForConfig(shared.api.Config)
	must(t, err)
	deadline := time.Now().Add(10 * time.Second)
	for {
		sar, err := cs.AuthorizationV1().SubjectAccessReviews().Create(context.Background(), &authorizationv1.SubjectAccessReview{
			Spec: authorizationv1.SubjectAccessReviewSpec{User: m.user, Groups: []string{"system:authenticated"},
				ResourceAttributes: &authorizationv1.ResourceAttributes{Namespace: ns, Group: group, Resource: resource, Verb: verb}},
		}, metav1.CreateOptions{})
		must(t, err)
		if sar.Status.Allowed == allowed {
			return
		}
		if time.Now().After(deadline) {
			t.Fatalf("%s may %s %s.%s: %v after 10s, want %v", m.user, verb, resource, group, sar.Status.Allowed, allowed)
		}
		time.Sleep(100 * time.Millisecond)
	}
}

// slowAPI is a reverse proxy in front of the real API server: while slow is
// set, it holds the reads of one resource for delay before answering, and
// holds each event of that resource's watches for delay before passing it on.
type slowAPI struct {
	resource string
	delay    time.Duration
	slow     atomic.Bool
	srv      *httptest.Server
}

func startSlowAPI(t testing.TB, resource string, delay time.Duration) *slowAPI {
	t.Helper()
	upstream, err := url.Parse(shared.api.Config.Host)
	must(t, err)
	rt, err := rest.TransportFor(shared.api.Config)
	must(t, err)
	p := &slowAPI{resource: resource, delay: delay}
	proxy := &httputil.ReverseProxy{
		Rewrite:       func(r *httputil.ProxyRequest) { r.SetURL(upstream) },
		Transport:     rt,
		FlushInterval: -1,
		ModifyResponse: func(resp *http.Response) error {
			if p.watches(resp.Request) {
				resp.Body = &slowBody{ReadCloser: resp.Body, p: p}
			}
			return nil
		},
	}
	p.srv = httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if p.slow.Load() && p.reads(r) {
			select {
			case <-time.After(p.delay):
			case <-r.Context().Done():
				return
			}
		}
		proxy.ServeHTTP(w, r)
	}))
	t.Cleanup(p.srv.Close)
	return p
}

// config reaches the API server through the proxy, as admin.
func (p *slowAPI) config(*env) *rest.Config {
	return &rest.Config{Host: p.srv.URL, QPS: shared.api.Config.QPS, Burst: shared.api.Config.Burst}
}

func (p *slowAPI) names(r *http.Request) bool {
	return r.Method == http.MethodGet && strings.Contains(r.URL.Path, "/"+p.resource+"/")
}

func (p *slowAPI) reads(r *http.Request) bool { return p.names(r) && r.URL.Query().Get("watch") == "" }

func (p *slowAPI) watches(r *http.Request) bool {
	return r.Method == http.MethodGet && strings.HasSuffix(r.URL.Path, "/"+p.resource) && r.URL.Query().Get("watch") == "true"
}

type slowBody struct {
	io.ReadCloser
	p *slowAPI
}

func (b *slowBody) Read(buf []byte) (int, error) {
	n, err := b.ReadCloser.Read(buf)
	if n > 0 && b.p.slow.Load() {
		time.Sleep(b.p.delay)
	}
	return n, err
}
