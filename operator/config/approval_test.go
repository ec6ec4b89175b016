package config_test

import (
	"context"
	"errors"
	"slices"
	"strings"
	"testing"
	"time"

	rbacv1 "k8s.io/api/rbac/v1"
	"k8s.io/client-go/rest"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"ptah.run/operator/internal/testenv"
	v1alpha1 "ptah.run/operator/operator/api/v1alpha1"
)

// eventually polls until ok returns nil: admission policies and RBAC take
// effect when the API server's informers catch up, not when they are created.
func eventually(t *testing.T, what string, ok func() error) {
	t.Helper()
	deadline := time.Now().Add(30 * time.Second)
	for {
		err := ok()
		if err == nil {
			return
		}
		if time.Now().After(deadline) {
			t.Fatalf("%s: still not so after 30s: %v", what, err)
		}
		time.Sleep(100 * time.Millisecond)
	}
}

func approval(name string, by *v1alpha1.Approver) *v1alpha1.PtahSchemaApproval {
	a := &v1alpha1.PtahSchemaApproval{
		Spec:       v1alpha1.PtahSchemaApprovalSpec{SchemaName: "orders", PlanName: "orders-f1", PlanFingerprint: "f1"},
		ApprovedBy: by,
	}
	a.Name, a.Namespace = name, namespace
	return a
}

// forgedApprover is what a client claiming to be a cluster admin would send.
func forgedApprover() *v1alpha1.Approver {
	return &v1alpha1.Approver{Username: "admin", UID: "forged", Groups: []string{"system:masters"}}
}

func TestApprovalApprover(t *testing.T) {
	t.Parallel()
	api := testenv.StartAPIServer(t, testenv.WithCRDs("crd/bases"))
	admin := newClient(t, api.Config)
	ctx := context.Background()

	// alice may create and change approvals and nothing else; she reaches the
	// API server as herself through impersonation.
	alice := impersonated(t, ctx, admin, api.Config, "alice", []string{"ptah-approvers"},
		[]string{"ptahschemaapprovals"}, []string{"create", "get", "update", "patch"})

	t.Run("a forged approver is refused by the validating policy alone", func(t *testing.T) {
		createFile(t, admin, "admission/approval-approver.yaml")
		var err error
		eventually(t, "the validating policy refuses a forged approver", func() error {
			err = alice.Create(ctx, approval("probe", forgedApprover()), client.DryRunAll)
			if err == nil {
				return errors.New("accepted")
			}
			return nil
		})
		refusal(t, err, "approvedBy", "must be stamped by admission with the requesting user alice")
	})

	t.Run("a forged approver is overwritten with the requesting user", func(t *testing.T) {
		createFile(t, admin, "admission/approval-stamp.yaml")
		eventually(t, "the mutating policy stamps approvals", func() error {
			return alice.Create(ctx, approval("probe", forgedApprover()), client.DryRunAll)
		})
		a := approval("orders-f1-alice", forgedApprover())
		if err := alice.Create(ctx, a); err != nil {
			t.Fatal(err)
		}
		var got v1alpha1.PtahSchemaApproval
		if err := admin.Get(ctx, client.ObjectKeyFromObject(a), &got); err != nil {
			t.Fatal(err)
		}
		by := got.ApprovedBy
		if by == nil {
			t.Fatal("approvedBy is empty")
		}
		if by.Username != "alice" {
			t.Errorf("approvedBy.username = %q, want alice", by.Username)
		}
		if !slices.Contains(by.Groups, "ptah-approvers") || slices.Contains(by.Groups, "system:masters") {
			t.Errorf("approvedBy.groups = %v, want alice's groups", by.Groups)
		}
		if by.UID == "forged" {
			t.Errorf("approvedBy.uid = %q, taken from the client", by.UID)
		}
		if got.CreationTimestamp.IsZero() || got.UID == "" {
			t.Error("creationTimestamp and uid, the approval's time and request, are not set")
		}
	})

	t.Run("an approval sent without approver is stamped", func(t *testing.T) {
		a := approval("orders-f1-plain", nil)
		if err := alice.Create(ctx, a); err != nil {
			t.Fatal(err)
		}
		if a.ApprovedBy == nil || a.ApprovedBy.Username != "alice" {
			t.Errorf("approvedBy = %+v, want alice", a.ApprovedBy)
		}
	})

	forgeries := []struct {
		name  string
		forge func(*v1alpha1.Approver)
	}{
		{"username", func(a *v1alpha1.Approver) { a.Username = "admin" }},
		{"uid", func(a *v1alpha1.Approver) { a.UID = "admin-uid" }},
		{"groups", func(a *v1alpha1.Approver) { a.Groups = append(a.Groups, "system:masters") }},
	}
	for _, f := range forgeries {
		t.Run("the approver's "+f.name+" cannot be changed afterwards", func(t *testing.T) {
			var a v1alpha1.PtahSchemaApproval
			if err := alice.Get(ctx, client.ObjectKey{Namespace: namespace, Name: "orders-f1-alice"}, &a); err != nil {
				t.Fatal(err)
			}
			f.forge(a.ApprovedBy)
			refusal(t, alice.Update(ctx, &a), "approvedBy", "never changes")
		})
	}

	t.Run("the approver cannot be removed afterwards", func(t *testing.T) {
		var a v1alpha1.PtahSchemaApproval
		if err := admin.Get(ctx, client.ObjectKey{Namespace: namespace, Name: "orders-f1-alice"}, &a); err != nil {
			t.Fatal(err)
		}
		a.ApprovedBy = nil
		refusal(t, admin.Update(ctx, &a), "approvedBy")
	})

	t.Run("labels may still change", func(t *testing.T) {
		var a v1alpha1.PtahSchemaApproval
		if err := admin.Get(ctx, client.ObjectKey{Namespace: namespace, Name: "orders-f1-alice"}, &a); err != nil {
			t.Fatal(err)
		}
		a.Labels = map[string]string{"operator.ptah.run/schema": "orders"}
		if err := admin.Update(ctx, &a); err != nil {
			t.Fatal(err)
		}
	})

	t.Run("the spec cannot be changed, not even by an admin", func(t *testing.T) {
		var a v1alpha1.PtahSchemaApproval
		if err := admin.Get(ctx, client.ObjectKey{Namespace: namespace, Name: "orders-f1-alice"}, &a); err != nil {
			t.Fatal(err)
		}
		a.Spec.PlanFingerprint = "f2"
		refusal(t, admin.Update(ctx, &a), "spec", "an approval is immutable")
	})
}

// impersonated grants user the verbs on the group's resources through a
// ClusterRole and its binding, and returns a client that reaches the API
// server as that user in groups.
func impersonated(t *testing.T, ctx context.Context, admin client.Client, cfg *rest.Config, user string, groups, resources, verbs []string) client.Client {
	t.Helper()
	role := &rbacv1.ClusterRole{Rules: []rbacv1.PolicyRule{{
		APIGroups: []string{v1alpha1.GroupVersion.Group}, Resources: resources, Verbs: verbs,
	}}}
	role.Name = "ptah-" + user + "-" + strings.Join(resources, "-")
	binding := &rbacv1.ClusterRoleBinding{
		RoleRef:  rbacv1.RoleRef{APIGroup: rbacv1.GroupName, Kind: "ClusterRole", Name: role.Name},
		Subjects: []rbacv1.Subject{{APIGroup: rbacv1.GroupName, Kind: rbacv1.UserKind, Name: user}},
	}
	binding.Name = role.Name
	for _, o := range []client.Object{role, binding} {
		if err := admin.Create(ctx, o); err != nil {
			t.Fatal(err)
		}
	}
	as := rest.CopyConfig(cfg)
	as.Impersonate = rest.ImpersonationConfig{UserName: user, Groups: groups}
	return newClient(t, as)
}
