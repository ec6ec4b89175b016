package config_test

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"os/exec"
	"testing"

	appsv1 "k8s.io/api/apps/v1"
	authorizationv1 "k8s.io/api/authorization/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"ptah.run/operator/acceptance/testenv"
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

// TestDefaultBaseInstalls builds the kustomize base as `kubectl apply -k`
// would, creates every object in a real API server, and asks the server's
// RBAC what the manager's service account may do.
func TestDefaultBaseInstalls(t *testing.T) {
	t.Parallel()
	kubectl, err := exec.LookPath("kubectl")
	if err != nil {
		t.Skip("kubectl is not on PATH; it builds the kustomize base")
	}
	out, err := exec.Command(kubectl, "kustomize", "default").Output()
	if err != nil {
		t.Fatalf("kubectl kustomize default: %v", err)
	}
	api := testenv.StartAPIServer(t)
	c := newClient(t, api.Config)
	ctx := context.Background()
	kinds := map[string]int{}
	for _, o := range decodeObjects(t, bytes.NewReader(out)) {
		if err := c.Create(ctx, o); err != nil {
			t.Fatalf("create %s %s: %v", o.GetKind(), o.GetName(), err)
		}
		kinds[o.GetKind()]++
	}
	for kind, n := range map[string]int{
		"Namespace": 1, "CustomResourceDefinition": 8, "ServiceAccount": 1, "ClusterRole": 1, "ClusterRoleBinding": 1,
		"Deployment": 1, "MutatingAdmissionPolicy": 3, "MutatingAdmissionPolicyBinding": 3,
		"ValidatingAdmissionPolicy": 3, "ValidatingAdmissionPolicyBinding": 3,
	} {
		if kinds[kind] != n {
			t.Errorf("the base installs %d %s, want %d", kinds[kind], kind, n)
		}
	}

	var d appsv1.Deployment
	if err := c.Get(ctx, client.ObjectKey{Namespace: "ptah-system", Name: "ptah-manager"}, &d); err != nil {
		t.Fatal(err)
	}
	if img := d.Spec.Template.Spec.Containers[0].Image; img != "ptah-manager:dev" {
		t.Errorf("manager image %q, want ptah-manager:dev", img)
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
