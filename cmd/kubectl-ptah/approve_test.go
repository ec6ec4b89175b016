package main

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"io"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
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
// events` shows what was recorded on the schema and its approvals, and
// `kubectl ptah revoke` deletes the approval of the plan awaited.
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
	deadline := time.Now().Add(30 * time.Second)
	for {
		out, errOut, code := ptah("approve", "orders", "-n", "team", "--name", "probe")
		if code == 0 && !strings.Contains(out, "not stamped") {
			break
		}
		if code == 0 {
			must(c.Delete(ctx, &v1alpha1.PtahSchemaApproval{ObjectMeta: metav1.ObjectMeta{Name: "probe", Namespace: "team"}}))
		}
		if time.Now().After(deadline) {
			t.Fatalf("no stamped approval within 30s: exit %d %s%s", code, out, errOut)
		}
		time.Sleep(200 * time.Millisecond)
	}
	must(c.Delete(ctx, &v1alpha1.PtahSchemaApproval{ObjectMeta: metav1.ObjectMeta{Name: "probe", Namespace: "team"}}))
	out, errOut, code := ptah("approve", "orders", "-n", "team")
	if code != 0 {
		t.Fatalf("approve orders: exit %d: %s", code, errOut)
	}
	var a v1alpha1.PtahSchemaApproval
	name := "orders-" + strings.TrimPrefix(orders.Fingerprint, "sha256:")[:8]
	must(c.Get(ctx, client.ObjectKey{Namespace: "team", Name: name}, &a))
	if a.Spec.PlanName != "orders-1" || a.Spec.PlanFingerprint != orders.Fingerprint || a.Spec.SchemaName != "orders" {
		t.Errorf("approval %+v does not name plan orders-1 and its fingerprint", a.Spec)
	}
	if a.ApprovedBy == nil || a.ApprovedBy.Username == "" || !strings.Contains(out, "by "+a.ApprovedBy.Username) {
		t.Errorf("approver %+v, printed %q", a.ApprovedBy, out)
	}
	for _, tc := range []struct{ schema, want string }{
		{"other", "does not match what ptahschema other records"},
		{"idle", "awaits no approval"},
		{"orders", "already exists"},
	} {
		if _, errOut, code := ptah("approve", tc.schema, "-n", "team"); code != 1 || !strings.Contains(errOut, tc.want) {
			t.Errorf("approve %s: exit %d %s, want exit 1 and a refusal saying %q", tc.schema, code, errOut, tc.want)
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
			Type: corev1.EventTypeWarning, Reason: v1alpha1.EventApprovalStale, Message: "stale", LastTimestamp: metav1.NewTime(now.Add(time.Second))},
		{ObjectMeta: metav1.ObjectMeta{Name: "e3", Namespace: "team"}, InvolvedObject: corev1.ObjectReference{Kind: v1alpha1.KindPtahSchema, Namespace: "team", Name: "idle"},
			Type: corev1.EventTypeNormal, Reason: v1alpha1.EventOperationStarted, Message: "not orders'", LastTimestamp: now},
	} {
		must(c.Create(ctx, &ev))
	}
	out, errOut, code = ptah("events", "orders", "-n", "team")
	for _, want := range []string{"ApprovalRequired", "PtahSchema/orders", "ApprovalStale", "PtahSchemaApproval/" + name} {
		if code != 0 || !strings.Contains(out, want) {
			t.Errorf("events: exit %d, printed:\n%s%s\nwant %q", code, out, errOut, want)
		}
	}
	if strings.Contains(out, "not orders'") {
		t.Errorf("events printed another schema's Event:\n%s", out)
	}
	if out, errOut, code := ptah("events", "orders", "-n", "team", "-o", "name"); code != 0 || out != "event/e1\nevent/e2\n" {
		t.Errorf("events -o name: exit %d, printed %q %s, want e1 and e2, oldest first", code, out, errOut)
	}

	// revoke: refused while the Apply it allowed runs, then deletes the
	// approval of the plan the schema awaits; nothing else.
	s := &v1alpha1.PtahSchema{}
	must(c.Get(ctx, client.ObjectKey{Namespace: "team", Name: "orders"}, s))
	s.Status.ActiveOperation = &v1alpha1.ActiveOperation{Type: v1alpha1.OperationApply, ID: "op-1", InputFingerprint: orders.Fingerprint, Attempt: 1,
		JobName: "ptah-apply-orders-0123456789abcdef", CoordinationDigest: "sha256:c", JobUID: "0f0f", Approval: name}
	must(c.Status().Update(ctx, s))
	if _, errOut, code := ptah("revoke", "orders", "-n", "team"); code != 1 || !strings.Contains(errOut, "Job ptah-apply-orders-0123456789abcdef") ||
		!strings.Contains(errOut, "never stopped: not revoked") {
		t.Errorf("revoke while the Apply runs: exit %d, %s", code, errOut)
	}
	must(c.Get(ctx, client.ObjectKey{Namespace: "team", Name: name}, &a))
	s.Status.ActiveOperation.JobUID = ""
	must(c.Status().Update(ctx, s))
	if out, errOut, code := ptah("revoke", "orders", "-n", "team", "-o", "name"); code != 0 || out != "ptahschemaapproval.operator.ptah.run/"+name+"\n" {
		t.Errorf("revoke orders -o name: exit %d, printed %q %s", code, out, errOut)
	}
	if err := c.Get(ctx, client.ObjectKey{Namespace: "team", Name: name}, &a); !apierrors.IsNotFound(err) {
		t.Errorf("approval %s after revoke: %v, want it deleted", name, err)
	}
	for _, tc := range []struct{ schema, want string }{
		{"orders", "no ptahschemaapproval in namespace team names plan orders-1 of ptahschema orders: nothing to revoke"},
		{"idle", "has no current plan"},
		{"nonesuch", "read ptahschema nonesuch in namespace team"},
	} {
		if _, errOut, code := ptah("revoke", tc.schema, "-n", "team"); code != 1 || !strings.Contains(errOut, tc.want) {
			t.Errorf("revoke %s: exit %d %s, want exit 1 and %q", tc.schema, code, errOut, tc.want)
		}
	}
	// Approved again, printed as the object admission stamped; revoked as text.
	out, errOut, code = ptah("approve", "orders", "-n", "team", "-o", "json")
	var again v1alpha1.PtahSchemaApproval
	if code != 0 || json.Unmarshal([]byte(out), &again) != nil || again.Kind != v1alpha1.KindPtahSchemaApproval || again.Name != name ||
		again.ApprovedBy == nil || again.ApprovedBy.Username == "" {
		t.Errorf("approve -o json: exit %d, printed %s%s", code, out, errOut)
	}
	if out, errOut, code := ptah("revoke", "orders", "-n", "team"); code != 0 ||
		out != "ptahschemaapproval.operator.ptah.run/"+name+" deleted: plan orders-1 of ptahschema orders is no longer approved\n" {
		t.Errorf("revoke orders: exit %d, printed %q %s", code, out, errOut)
	}
	must(c.List(ctx, &list, client.InNamespace("team")))
	if len(list.Items) != 0 {
		t.Errorf("%d approvals left after revoke, want none", len(list.Items))
	}
	// A plan already applied has nothing left to withdraw.
	must(c.Get(ctx, client.ObjectKey{Namespace: "team", Name: "orders"}, s))
	s.Status.ActiveOperation = nil
	s.Status.Applied = &v1alpha1.Applied{ArtifactDigest: "sha256:" + strings.Repeat("a", 64), PlanFingerprint: orders.Fingerprint}
	must(c.Status().Update(ctx, s))
	if _, errOut, code := ptah("revoke", "orders", "-n", "team"); code != 1 || !strings.Contains(errOut, "ptahschema team/orders already applied plan orders-1: nothing to revoke") {
		t.Errorf("revoke of an applied plan: exit %d %s", code, errOut)
	}
}
