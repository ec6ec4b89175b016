// Package approval writes a person's approval of a schema's current plan.
// The approval names the plan and its fingerprint exactly; who approved is
// never written here: the cluster's admission policy stamps the requester.
package approval

import (
	"context"
	"fmt"
	"strings"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"

	v1alpha1 "ptah.run/operator/operator/api/v1alpha1"
	"ptah.run/operator/operator/describe"
)

// Approve creates a PtahSchemaApproval for the plan schema awaits, named
// name (default: the schema's name and the plan's first 8 hex digits). It
// refuses when the schema awaits no approval, or when the plan object does
// not match the fingerprint and digest its status records, so a person
// never approves a plan other than the one they read.
func Approve(ctx context.Context, c client.Client, namespace, schema, name string) (*v1alpha1.PtahSchemaApproval, error) {
	var s v1alpha1.PtahSchema
	if err := c.Get(ctx, client.ObjectKey{Namespace: namespace, Name: schema}, &s); err != nil {
		return nil, fmt.Errorf("read ptahschema %s in namespace %s: %w", schema, namespace, err)
	}
	p := s.Status.Plan
	if s.Status.Phase != v1alpha1.PhaseAwaitingApproval || p == nil {
		return nil, fmt.Errorf("ptahschema %s/%s awaits no approval (phase %s): nothing to approve", namespace, schema, s.Status.Phase)
	}
	var plan v1alpha1.PtahSchemaPlan
	if err := c.Get(ctx, client.ObjectKey{Namespace: namespace, Name: p.Name}, &plan); err != nil {
		return nil, fmt.Errorf("read the plan ptahschema %s awaits, %s: %w", schema, p.Name, err)
	}
	if err := describe.CheckDigest(&plan); err != nil {
		return nil, fmt.Errorf("not approved: %w", err)
	}
	if plan.Spec.Fingerprint != p.Fingerprint || plan.Spec.Digest != p.Digest {
		return nil, fmt.Errorf("plan %s does not match what ptahschema %s records (fingerprint %s, digest %s; the plan says %s, %s): not approved",
			p.Name, schema, p.Fingerprint, p.Digest, plan.Spec.Fingerprint, plan.Spec.Digest)
	}
	if name == "" {
		name = schema + "-" + strings.TrimPrefix(p.Fingerprint, "sha256:")[:8]
	}
	a := &v1alpha1.PtahSchemaApproval{
		ObjectMeta: metav1.ObjectMeta{Name: name, Namespace: namespace},
		Spec:       v1alpha1.PtahSchemaApprovalSpec{SchemaName: schema, PlanName: p.Name, PlanFingerprint: p.Fingerprint},
	}
	if err := c.Create(ctx, a); err != nil {
		if apierrors.IsAlreadyExists(err) {
			return nil, fmt.Errorf("ptahschemaapproval %s/%s already exists: approvals are immutable; name another with --name", namespace, name)
		}
		return nil, fmt.Errorf("create ptahschemaapproval %s/%s: %w", namespace, name, err)
	}
	return a, nil
}
