package main

import (
	"bytes"
	"context"
	"errors"
	"io"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	utilyaml "k8s.io/apimachinery/pkg/util/yaml"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"ptah.run/operator/internal/runner"
	v1alpha1 "ptah.run/operator/operator/api/v1alpha1"
)

// TestApproveAndEvents: `kubectl ptah approve` writes the approval of
// exactly the plan the schema awaits, stamped by the real admission policy
// with the requester; it refuses a plan whose object no longer matches what
// the schema records, and a schema that awaits nothing. `kubectl ptah
// events` shows what was recorded on the schema and its approvals.
func TestApproveAndEvents(t *testing.T) {
	dir := filepath.Join("..", "..", "operator", "config")
	api, c, must := cluster(t)
	ctx := context.Background()
	var err error
	for _, f := range []string{"approval-stamp.yaml", "approval-approver.yaml"} {
		data, err := os.ReadFile(filepath.Join(dir, "admission", f))
		must(err)
		dec := utilyaml.NewYAMLOrJSONDecoder(bytes.NewReader(data), 4096)
		for {
			u := &unstructured.Unstructured{}
			if err := dec.Decode(&u.Object); errors.Is(err, io.EOF) {
				break
			}
			must(err)
			must(c.Create(ctx, u))
		}
	}
	must(c.Create(ctx, &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: "team"}}))
	plan := func(name string) *v1alpha1.PlanResult {
		r := &v1alpha1.PlanResult{BaseFingerprint: "sha256:base", DesiredFingerprint: "sha256:" + name,
			Statements: []v1alpha1.Statement{{SQL: `CREATE TABLE "` + name + `" ("id" bigint)`, Severity: v1alpha1.SeveritySafe, Reason: "create table"}}}
		r.Digest, err = runner.PlanDigest(r, nil)
		must(err)
		r.Fingerprint = r.Digest
		must(c.Create(ctx, &v1alpha1.PtahSchemaPlan{ObjectMeta: metav1.ObjectMeta{Name: name + "-1", Namespace: "team"},
			Spec: v1alpha1.PtahSchemaPlanSpec{SchemaRef: v1alpha1.LocalRef{Name: name}, Fingerprint: r.Fingerprint, BaseFingerprint: r.BaseFingerprint,
				DesiredFingerprint: r.DesiredFingerprint, Digest: r.Digest, Statements: r.Statements}}))
		return r
	}
	schema := func(name string, phase v1alpha1.Phase, p *v1alpha1.PlanSummary) {
		s := &v1alpha1.PtahSchema{ObjectMeta: metav1.ObjectMeta{Name: name, Namespace: "team"}, Spec: v1alpha1.PtahSchemaSpec{
			Target: v1alpha1.Target{URLFrom: v1alpha1.SecretKeyRef{Name: "db", Key: "url"}}, Desired: v1alpha1.Desired{OCIRef: "oci://r.example/" + name + ":v1"}}}
		must(c.Create(ctx, s))
		s.Status = v1alpha1.PtahSchemaStatus{OperationStatus: v1alpha1.OperationStatus{Phase: phase}, Plan: p}
		must(c.Status().Update(ctx, s))
	}
	orders := plan("orders")
	schema("orders", v1alpha1.PhaseAwaitingApproval, &v1alpha1.PlanSummary{Name: "orders-1", Fingerprint: orders.Fingerprint, Digest: orders.Digest, Statements: 1})
	// The status names a fingerprint the plan object does not carry.
	other := plan("other")
	schema("other", v1alpha1.PhaseAwaitingApproval, &v1alpha1.PlanSummary{Name: "other-1", Fingerprint: "sha256:" + strings.Repeat("0", 64), Digest: other.Digest, Statements: 1})
	schema("idle", v1alpha1.PhaseInSync, nil)
	t.Setenv("KUBECONFIG", api.Kubeconfig)

	// Admission takes a moment to see the policies.
	var out bytes.Buffer
	deadline := time.Now().Add(30 * time.Second)
	for {
		out.Reset()
		err := run([]string{"approve", "orders", "-n", "team", "--name", "probe"}, &out)
		if err == nil && !strings.Contains(out.String(), "not stamped") {
			break
		}
		if err == nil {
			must(c.Delete(ctx, &v1alpha1.PtahSchemaApproval{ObjectMeta: metav1.ObjectMeta{Name: "probe", Namespace: "team"}}))
		}
		if time.Now().After(deadline) {
			t.Fatalf("no stamped approval within 30s: %v %s", err, out.String())
		}
		time.Sleep(200 * time.Millisecond)
	}
	must(c.Delete(ctx, &v1alpha1.PtahSchemaApproval{ObjectMeta: metav1.ObjectMeta{Name: "probe", Namespace: "team"}}))
	out.Reset()
	must(run([]string{"approve", "orders", "-n", "team"}, &out))
	var a v1alpha1.PtahSchemaApproval
	name := "orders-" + strings.TrimPrefix(orders.Fingerprint, "sha256:")[:8]
	must(c.Get(ctx, client.ObjectKey{Namespace: "team", Name: name}, &a))
	if a.Spec.PlanName != "orders-1" || a.Spec.PlanFingerprint != orders.Fingerprint || a.Spec.SchemaName != "orders" {
		t.Errorf("approval %+v does not name plan orders-1 and its fingerprint", a.Spec)
	}
	if a.ApprovedBy == nil || a.ApprovedBy.Username == "" || !strings.Contains(out.String(), "by "+a.ApprovedBy.Username) {
		t.Errorf("approver %+v, printed %q", a.ApprovedBy, out.String())
	}
	for _, tc := range []struct{ schema, want string }{
		{"other", "does not match what ptahschema other records"},
		{"idle", "awaits no approval"},
		{"orders", "already exists"},
	} {
		if err := run([]string{"approve", tc.schema, "-n", "team"}, io.Discard); err == nil || !strings.Contains(err.Error(), tc.want) {
			t.Errorf("approve %s: %v, want a refusal saying %q", tc.schema, err, tc.want)
		}
	}
	var list v1alpha1.PtahSchemaApprovalList
	must(c.List(ctx, &list, client.InNamespace("team")))
	if len(list.Items) != 1 {
		t.Errorf("%d approvals, want only the one for orders", len(list.Items))
	}

	now := metav1.Now()
	for _, ev := range []corev1.Event{
		{ObjectMeta: metav1.ObjectMeta{Name: "e1", Namespace: "team"}, InvolvedObject: corev1.ObjectReference{Kind: v1alpha1.KindPtahSchema, Namespace: "team", Name: "orders"},
			Type: corev1.EventTypeNormal, Reason: v1alpha1.EventApprovalRequired, Message: "plan orders-1 needs an approval", LastTimestamp: now},
		{ObjectMeta: metav1.ObjectMeta{Name: "e2", Namespace: "team"}, InvolvedObject: corev1.ObjectReference{Kind: v1alpha1.KindPtahSchemaApproval, Namespace: "team", Name: name},
			Type: corev1.EventTypeWarning, Reason: v1alpha1.EventApprovalStale, Message: "stale", LastTimestamp: now},
		{ObjectMeta: metav1.ObjectMeta{Name: "e3", Namespace: "team"}, InvolvedObject: corev1.ObjectReference{Kind: v1alpha1.KindPtahSchema, Namespace: "team", Name: "idle"},
			Type: corev1.EventTypeNormal, Reason: v1alpha1.EventOperationStarted, Message: "not orders'", LastTimestamp: now},
	} {
		must(c.Create(ctx, &ev))
	}
	out.Reset()
	must(run([]string{"events", "orders", "-n", "team"}, &out))
	for _, want := range []string{"ApprovalRequired", "PtahSchema/orders", "ApprovalStale", "PtahSchemaApproval/" + name} {
		if !strings.Contains(out.String(), want) {
			t.Errorf("events printed:\n%s\nwant %q", out.String(), want)
		}
	}
	if strings.Contains(out.String(), "not orders'") {
		t.Errorf("events printed another schema's Event:\n%s", out.String())
	}
}
