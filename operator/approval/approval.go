// Package approval writes a person's decisions: the approval of a schema's
// or a migration's current plan, its withdrawal, and the acknowledgment of
// what an unresolved migration run did. An approval names the plan and its
// fingerprint exactly; who decided is never written here: the cluster's
// admission policies stamp the requester.
package approval

import (
	"context"
	"fmt"
	"slices"
	"strconv"
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

// Revoke withdraws the approval of the plan schema awaits: it deletes every
// PtahSchemaApproval naming that plan and its fingerprint, and returns them.
// The manager consumes an approval just before it creates the Apply Job, so
// a deleted one stops an Apply whose Job is not created yet (Event
// ApprovalRevoked); one whose Job exists is never stopped, so revoking its
// approval is refused rather than reported as done.
func Revoke(ctx context.Context, c client.Client, namespace, schema string) ([]v1alpha1.PtahSchemaApproval, error) {
	var s v1alpha1.PtahSchema
	if err := c.Get(ctx, client.ObjectKey{Namespace: namespace, Name: schema}, &s); err != nil {
		return nil, fmt.Errorf("read ptahschema %s in namespace %s: %w", schema, namespace, err)
	}
	p := s.Status.Plan
	if p == nil {
		return nil, fmt.Errorf("ptahschema %s/%s has no current plan (phase %s): nothing to revoke", namespace, schema, s.Status.Phase)
	}
	if a := s.Status.Applied; a != nil && a.PlanFingerprint == p.Fingerprint {
		return nil, fmt.Errorf("ptahschema %s/%s already applied plan %s: nothing to revoke", namespace, schema, p.Name)
	}
	var list v1alpha1.PtahSchemaApprovalList
	if err := c.List(ctx, &list, client.InNamespace(namespace)); err != nil {
		return nil, fmt.Errorf("list ptahschemaapprovals in namespace %s: %w", namespace, err)
	}
	var named []v1alpha1.PtahSchemaApproval
	for _, a := range list.Items {
		if a.Spec.SchemaName == schema && a.Spec.PlanName == p.Name && a.Spec.PlanFingerprint == p.Fingerprint {
			named = append(named, a)
		}
	}
	if len(named) == 0 {
		return nil, fmt.Errorf("no ptahschemaapproval in namespace %s names plan %s of ptahschema %s: nothing to revoke", namespace, p.Name, schema)
	}
	if op := s.Status.ActiveOperation; op != nil && op.Type == v1alpha1.OperationApply && op.JobUID != "" {
		return nil, fmt.Errorf("ptahschema %s/%s is applying plan %s in Job %s, and a running Apply is never stopped: not revoked; follow it with kubectl ptah status %s",
			namespace, schema, p.Name, op.JobName, schema)
	}
	var deleted []v1alpha1.PtahSchemaApproval
	for _, a := range named {
		// The UID precondition deletes only the approval read, never one
		// created again under its name since.
		if err := c.Delete(ctx, &a, client.Preconditions{UID: &a.UID}); err != nil && !apierrors.IsNotFound(err) {
			return deleted, fmt.Errorf("delete ptahschemaapproval %s/%s: %w", namespace, a.Name, err)
		}
		deleted = append(deleted, a)
	}
	return deleted, nil
}

// ApproveMigration creates a PtahMigrationApproval for the plan migration
// awaits, named name (default: the migration's name and the plan's first 8
// hex digits), after the same checks as Approve: the migration awaits an
// approval, and the plan object is the one its status records.
func ApproveMigration(ctx context.Context, c client.Client, namespace, migration, name string) (*v1alpha1.PtahMigrationApproval, error) {
	var m v1alpha1.PtahMigration
	if err := c.Get(ctx, client.ObjectKey{Namespace: namespace, Name: migration}, &m); err != nil {
		return nil, fmt.Errorf("read ptahmigration %s in namespace %s: %w", migration, namespace, err)
	}
	p := m.Status.Plan
	if m.Status.Phase != v1alpha1.PhaseAwaitingApproval || p == nil {
		return nil, fmt.Errorf("ptahmigration %s/%s awaits no approval (phase %s): nothing to approve", namespace, migration, m.Status.Phase)
	}
	var plan v1alpha1.PtahMigrationPlan
	if err := c.Get(ctx, client.ObjectKey{Namespace: namespace, Name: p.Name}, &plan); err != nil {
		return nil, fmt.Errorf("read the plan ptahmigration %s awaits, %s: %w", migration, p.Name, err)
	}
	if plan.Spec.MigrationRef.Name != migration || plan.Spec.Fingerprint != p.Fingerprint {
		return nil, fmt.Errorf("ptahmigrationplan %s does not match what ptahmigration %s records (fingerprint %s; the plan is for %s with %s): not approved",
			p.Name, migration, p.Fingerprint, plan.Spec.MigrationRef.Name, plan.Spec.Fingerprint)
	}
	if name == "" {
		name = migration + "-" + short(p.Fingerprint, 8)
	}
	a := &v1alpha1.PtahMigrationApproval{
		ObjectMeta: metav1.ObjectMeta{Name: name, Namespace: namespace},
		Spec:       v1alpha1.PtahMigrationApprovalSpec{MigrationName: migration, PlanName: p.Name, PlanFingerprint: p.Fingerprint},
	}
	if err := c.Create(ctx, a); err != nil {
		if apierrors.IsAlreadyExists(err) {
			return nil, fmt.Errorf("ptahmigrationapproval %s/%s already exists: approvals are immutable; name another with --name", namespace, name)
		}
		return nil, fmt.Errorf("create ptahmigrationapproval %s/%s: %w", namespace, name, err)
	}
	return a, nil
}

// Acknowledge creates a PtahMigrationRunAcknowledgment of the run migration
// records as unresolved, saying what it did: outcome, and lastCommitted
// (0: left out), the last version it committed. name defaults to
// describe.AckName's. Who acknowledged is stamped by admission.
func Acknowledge(ctx context.Context, c client.Client, namespace, migration, name string, outcome v1alpha1.RunOutcome, lastCommitted int64, note string) (*v1alpha1.PtahMigrationRunAcknowledgment, error) {
	var m v1alpha1.PtahMigration
	if err := c.Get(ctx, client.ObjectKey{Namespace: namespace, Name: migration}, &m); err != nil {
		return nil, fmt.Errorf("read ptahmigration %s in namespace %s: %w", migration, namespace, err)
	}
	u := m.Status.UnresolvedRun
	if u == nil {
		return nil, fmt.Errorf("ptahmigration %s/%s records no unresolved run: nothing to acknowledge", namespace, migration)
	}
	if lastCommitted != 0 && !slices.Contains(u.Versions, lastCommitted) {
		return nil, fmt.Errorf("version %d is not one the unresolved run of ptahmigration %s was to apply (%s): name one of those with --last-committed-version",
			lastCommitted, migration, versions(u.Versions))
	}
	if name == "" {
		name = describe.AckName(migration, u.Operation)
	}
	a := &v1alpha1.PtahMigrationRunAcknowledgment{
		ObjectMeta: metav1.ObjectMeta{Name: name, Namespace: namespace},
		Spec:       v1alpha1.PtahMigrationRunAcknowledgmentSpec{MigrationName: migration, Operation: u.Operation, Outcome: outcome, Note: note},
	}
	if lastCommitted != 0 {
		a.Spec.LastCommittedVersion = &lastCommitted
	}
	if err := c.Create(ctx, a); err != nil {
		if apierrors.IsAlreadyExists(err) {
			return nil, fmt.Errorf("ptahmigrationrunacknowledgment %s/%s already exists: acknowledgments are immutable; delete it if the manager has not consumed it, or name another with --name", namespace, name)
		}
		return nil, fmt.Errorf("create ptahmigrationrunacknowledgment %s/%s: %w", namespace, name, err)
	}
	return a, nil
}

// short is the first n hex digits of a sha256:-prefixed digest.
func short(digest string, n int) string {
	hex := strings.TrimPrefix(digest, "sha256:")
	if len(hex) > n {
		hex = hex[:n]
	}
	return hex
}

func versions(vs []int64) string {
	s := make([]string, len(vs))
	for i, v := range vs {
		s[i] = strconv.FormatInt(v, 10)
	}
	return strings.Join(s, ", ")
}
