package config_test

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"strings"
	"testing"

	appsv1 "k8s.io/api/apps/v1"
	authorizationv1 "k8s.io/api/authorization/v1"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/envtest"

	"ptah.run/operator/internal/testenv"
	v1alpha1 "ptah.run/operator/operator/api/v1alpha1"
	"ptah.run/operator/operator/chart"
)

// manager is the identity the manager's Pod authenticates as.
const manager = "system:serviceaccount:ptah-system:ptah-manager"

func allowed(ctx context.Context, c client.Client, group, resource, subresource, verb string) (bool, error) {
	sar := &authorizationv1.SubjectAccessReview{Spec: authorizationv1.SubjectAccessReviewSpec{
		User:   manager,
		Groups: []string{"system:serviceaccounts", "system:serviceaccounts:ptah-system", "system:authenticated"},
		ResourceAttributes: &authorizationv1.ResourceAttributes{
			Namespace: "tenant", Verb: verb, Group: group, Resource: resource, Subresource: subresource,
		},
	}}
	if err := c.Create(ctx, sar); err != nil {
		return false, err
	}
	return sar.Status.Allowed, nil
}

// TestChartInstalls renders the chart with its defaults as `helm install
// ptah --namespace ptah-system` would, creates every object in a real API
// server, and asks the server's RBAC what the manager's service account may
// do.
func TestChartInstalls(t *testing.T) {
	t.Parallel()
	objs, err := chart.Render("ptah", "ptah-system", nil)
	if err != nil {
		t.Fatal(err)
	}
	api := testenv.StartAPIServer(t)
	c := newClient(t, api.Config)
	ctx := context.Background()
	if err := c.Create(ctx, &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: "ptah-system"}}); err != nil {
		t.Fatal(err)
	}
	kinds := map[string]int{}
	for _, o := range objs {
		if err := c.Create(ctx, o); err != nil {
			t.Fatalf("create %s %s: %v", o.GetKind(), o.GetName(), err)
		}
		kinds[o.GetKind()]++
	}
	for kind, n := range map[string]int{
		"CustomResourceDefinition": 8, "ServiceAccount": 1, "ClusterRole": 1, "ClusterRoleBinding": 1,
		"Deployment": 1, "MutatingAdmissionPolicy": 3, "MutatingAdmissionPolicyBinding": 3,
		"ValidatingAdmissionPolicy": 3, "ValidatingAdmissionPolicyBinding": 3,
	} {
		if kinds[kind] != n {
			t.Errorf("the chart installs %d %s, want %d", kinds[kind], kind, n)
		}
	}

	var d appsv1.Deployment
	if err := c.Get(ctx, client.ObjectKey{Namespace: "ptah-system", Name: "ptah-manager"}, &d); err != nil {
		t.Fatal(err)
	}
	// Image tags follow the chart's appVersion unless set.
	ch, err := chart.Load()
	if err != nil {
		t.Fatal(err)
	}
	app := ch.Metadata.AppVersion
	if img := d.Spec.Template.Spec.Containers[0].Image; img != "ptah-manager:"+app {
		t.Errorf("manager image %q, want ptah-manager:%s", img, app)
	}
	if args := d.Spec.Template.Spec.Containers[0].Args; !slices.Contains(args, "--executor-image=ptah-executor:"+app) || !slices.Contains(args, "--ptah-version="+app) {
		t.Errorf("manager args %v, want the executor image and ptah version of appVersion %s", args, app)
	}
	if sc := d.Spec.Template.Spec.SecurityContext; sc == nil || sc.RunAsNonRoot == nil || !*sc.RunAsNonRoot {
		t.Errorf("the manager's Pod may run as root: %+v", sc)
	}

	// RBAC takes effect once the authorizer's informers see the binding.
	eventually(t, "the manager may create Jobs", func() error {
		ok, err := allowed(ctx, c, "batch", "jobs", "", "create")
		if err == nil && !ok {
			err = errors.New("denied")
		}
		return err
	})
	for _, tc := range []struct {
		group, resource, subresource, verb string
		want                               bool
	}{
		{"", "secrets", "", "get", false},
		{"", "secrets", "", "list", false},
		{"", "secrets", "", "watch", false},
		{"operator.ptah.run", "ptahschemas", "status", "update", true},
		{"operator.ptah.run", "ptahschemaplans", "", "create", true},
		{"operator.ptah.run", "ptahschemaapprovals", "", "create", false},
		{"operator.ptah.run", "ptahschemaapprovals", "", "update", false},
		// No token for any account in the cluster: the operations' Pods get
		// theirs projected by the kubelet.
		{"", "serviceaccounts", "token", "create", false},
		{"operator.ptah.run", "ptahschemas", "", "update", false},
	} {
		name := fmt.Sprintf("%s %s/%s in group %q", tc.verb, tc.resource, tc.subresource, tc.group)
		ok, err := allowed(ctx, c, tc.group, tc.resource, tc.subresource, tc.verb)
		if err != nil {
			t.Fatalf("%s: %v", name, err)
		}
		if ok != tc.want {
			t.Errorf("manager may %s: %v, want %v", name, ok, tc.want)
		}
	}
}

// TestChartValues: the values that change what is installed do what
// values.yaml says.
func TestChartValues(t *testing.T) {
	t.Parallel()
	count := func(objs []*unstructured.Unstructured, kind string) (n int, namespaces []string) {
		for _, o := range objs {
			if o.GetKind() == kind {
				n++
				namespaces = append(namespaces, o.GetNamespace())
			}
		}
		return n, namespaces
	}
	render := func(values map[string]any) []*unstructured.Unstructured {
		objs, err := chart.Render("team-a", "ops", values)
		if err != nil {
			t.Fatal(err)
		}
		return objs
	}
	scoped := render(map[string]any{"watchNamespaces": []any{"payments", "billing"}, "selector": "team=a",
		"concurrency": 8, "crds": map[string]any{"install": false}, "admission": map[string]any{"install": false},
		"image": map[string]any{"digest": "sha256:" + strings.Repeat("ab", 32)}, "extraArgs": []any{"--history-retention=24h"}})
	if n, ns := count(scoped, "RoleBinding"); n != 3 || !slices.Equal(ns, []string{"payments", "billing", "ops"}) {
		t.Errorf("watchNamespaces binds the role in %v, want payments, billing and the release's ops", ns)
	}
	for _, kind := range []string{"ClusterRoleBinding", "CustomResourceDefinition", "MutatingAdmissionPolicy", "ValidatingAdmissionPolicy"} {
		if n, _ := count(scoped, kind); n != 0 {
			t.Errorf("%d %s rendered, want none", n, kind)
		}
	}
	var d appsv1.Deployment
	for _, o := range scoped {
		if o.GetKind() == "Deployment" {
			if err := runtime.DefaultUnstructuredConverter.FromUnstructured(o.Object, &d); err != nil {
				t.Fatal(err)
			}
		}
	}
	if d.Name != "team-a-manager" || d.Namespace != "ops" {
		t.Errorf("Deployment %s/%s, want ops/team-a-manager", d.Namespace, d.Name)
	}
	m := d.Spec.Template.Spec.Containers[0]
	if !strings.HasSuffix(m.Image, "@sha256:"+strings.Repeat("ab", 32)) {
		t.Errorf("image %s is not pinned by the digest", m.Image)
	}
	for _, want := range []string{"--watch-namespaces=payments,billing", "--selector=team=a", "--history-retention=24h", "--leader-elect",
		"--leader-election-id=team-a-manager.operator.ptah.run", "--max-concurrent-reconciles=8", "--metrics-bind-address=127.0.0.1:8080"} {
		if !slices.Contains(m.Args, want) {
			t.Errorf("manager args %v lack %s", m.Args, want)
		}
	}
	monitored := render(map[string]any{"metrics": map[string]any{"serviceMonitor": map[string]any{"enabled": true}}})
	if n, _ := count(monitored, "ServiceMonitor"); n != 1 {
		t.Errorf("%d ServiceMonitors with metrics.serviceMonitor.enabled, want 1", n)
	}
}

// TestChartRefusesBadValues: values.schema.json refuses a misspelt key, a
// concurrency below 1 and a digest that is none, naming what is wrong,
// before anything renders.
func TestChartRefusesBadValues(t *testing.T) {
	for _, tc := range []struct {
		values map[string]any
		names  string
	}{
		{map[string]any{"concurency": 8}, "concurency"},
		{map[string]any{"concurrency": 0}, "concurrency"},
		{map[string]any{"image": map[string]any{"digest": "latest"}}, "digest"},
		{map[string]any{"crds": map[string]any{"keep": "yes"}}, "keep"},
	} {
		_, err := chart.Render("team-a", "ops", tc.values)
		if err == nil || !strings.Contains(err.Error(), tc.names) {
			t.Errorf("values %v: %v, want a refusal naming %s", tc.values, err, tc.names)
		}
	}
}

// TestChartKeepsCRDs: the CRDs outlive an uninstall unless crds.keep is
// false (deleting a CRD deletes every object of its kind).
func TestChartKeepsCRDs(t *testing.T) {
	for _, keep := range []bool{true, false} {
		objs, err := chart.Render("team-a", "ops", map[string]any{"crds": map[string]any{"keep": keep}})
		if err != nil {
			t.Fatal(err)
		}
		n := 0
		for _, o := range objs {
			if o.GetKind() != "CustomResourceDefinition" {
				continue
			}
			n++
			if got := o.GetAnnotations()["helm.sh/resource-policy"] == "keep"; got != keep {
				t.Errorf("crds.keep=%t: CRD %s has resource-policy keep %t", keep, o.GetName(), got)
			}
			if o.GetAnnotations()["controller-gen.kubebuilder.io/version"] == "" {
				t.Errorf("CRD %s lost its own annotations", o.GetName())
			}
		}
		if n == 0 {
			t.Fatalf("crds.keep=%t: no CRD rendered", keep)
		}
	}
}

// TestChartAdmissionOnV1beta1: on a cluster serving MutatingAdmissionPolicy
// only as v1beta1 (Kubernetes 1.34 and 1.35 with it enabled), the chart
// installs the stamps as v1beta1, and a real API server serving v1beta1
// stamps a forged approver with the requesting user as the v1 policies do.
// Where neither version is served the chart installs the manager's stamp
// webhook instead.
func TestChartAdmissionOnV1beta1(t *testing.T) {
	t.Parallel()
	const beta = "admissionregistration.k8s.io/v1beta1"
	objs, err := chart.RenderOn("v1.35.0", []string{"v1/Pod", beta, beta + "/MutatingAdmissionPolicy", beta + "/MutatingAdmissionPolicyBinding"}, "ptah", "ptah-system", nil)
	if err != nil {
		t.Fatal(err)
	}
	n := 0
	for _, o := range objs {
		if strings.HasPrefix(o.GetKind(), "MutatingAdmissionPolicy") {
			n++
			if o.GetAPIVersion() != beta {
				t.Errorf("%s %s installed as %s, want %s", o.GetKind(), o.GetName(), o.GetAPIVersion(), beta)
			}
		}
	}
	if n != 6 {
		t.Fatalf("the chart installs %d MutatingAdmissionPolicies and bindings, want 6", n)
	}
	// Served neither: the manager's webhook (TestStampWebhook installs it).
	if plain, err := chart.RenderOn("v1.35.0", []string{"v1/Pod"}, "ptah", "ptah-system", nil); err != nil || admissionPath(plain) != "webhook" {
		t.Errorf("a cluster serving no MutatingAdmissionPolicy: the stamps install as %q (%v), want the webhook", admissionPath(plain), err)
	}

	api := testenv.StartAPIServer(t, func(e *envtest.Environment) {
		e.ControlPlane.GetAPIServer().Configure().Append("runtime-config", beta+"=true")
	})
	admin := newClient(t, api.Config)
	ctx := context.Background()
	if err := admin.Create(ctx, &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: "ptah-system"}}); err != nil {
		t.Fatal(err)
	}
	for _, o := range objs {
		eventually(t, "create "+o.GetKind()+" "+o.GetName(), func() error { return admin.Create(ctx, o.DeepCopy()) })
	}
	alice := impersonated(t, ctx, admin, api.Config, "alice", []string{"ptah-approvers"},
		[]string{"ptahschemaapprovals"}, []string{"create", "get"})
	var a *v1alpha1.PtahSchemaApproval
	eventually(t, "the v1beta1 policy stamps approvals", func() error {
		a = approval("orders-f1-alice", forgedApprover())
		if err := alice.Create(ctx, a, client.DryRunAll); err != nil {
			return err
		}
		if a.ApprovedBy == nil || a.ApprovedBy.Username != "alice" {
			return fmt.Errorf("approvedBy = %+v, want alice", a.ApprovedBy)
		}
		return nil
	})
}
