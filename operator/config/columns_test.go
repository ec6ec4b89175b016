package config_test

import (
	"context"
	"encoding/json"
	"fmt"
	"testing"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/rest"
	"sigs.k8s.io/controller-runtime/pkg/client"

	v1alpha1 "ptah.run/operator/operator/api/v1alpha1"
)

// printerColumns writes a status as the manager would and reads the object
// back as the Table kubectl get prints, so each column's JSONPath is proved
// against a live object rather than only present in the CRD.
func printerColumns(t *testing.T, cfg *rest.Config, c client.Client) {
	ctx := context.Background()
	s := &v1alpha1.PtahSchema{}
	if err := c.Create(ctx, validSchema("columns")); err != nil {
		t.Fatal(err)
	}
	if err := c.Get(ctx, client.ObjectKey{Namespace: namespace, Name: "columns"}, s); err != nil {
		t.Fatal(err)
	}
	now := metav1.Now()
	cond := func(typ string, status metav1.ConditionStatus, reason string) metav1.Condition {
		return metav1.Condition{Type: typ, Status: status, Reason: reason, Message: reason, LastTransitionTime: now, ObservedGeneration: s.Generation}
	}
	s.Status = v1alpha1.PtahSchemaStatus{OperationStatus: v1alpha1.OperationStatus{
		ObservedGeneration: s.Generation,
		Phase:              v1alpha1.PhaseAwaitingApproval,
		Source:             &v1alpha1.Source{ResolvedDigest: digest, Verified: true},
		Conditions: []metav1.Condition{
			cond(v1alpha1.ConditionDriftDetected, metav1.ConditionTrue, v1alpha1.ReasonDriftFound),
			cond(v1alpha1.ConditionApprovalRequired, metav1.ConditionTrue, v1alpha1.ReasonAwaitingApproval),
			cond(v1alpha1.ConditionInSync, metav1.ConditionFalse, v1alpha1.ReasonChangesPending),
			cond(v1alpha1.ConditionReady, metav1.ConditionFalse, v1alpha1.ReasonAwaitingApproval),
		},
	}}
	if err := c.Status().Update(ctx, s); err != nil {
		t.Fatal(err)
	}

	cs, err := kubernetes.NewForConfig(cfg)
	if err != nil {
		t.Fatal(err)
	}
	raw, err := cs.CoreV1().RESTClient().Get().
		AbsPath("/apis/operator.ptah.run/v1alpha1/namespaces", namespace, "ptahschemas", "columns").
		SetHeader("Accept", "application/json;as=Table;v=v1;g=meta.k8s.io").
		DoRaw(ctx)
	if err != nil {
		t.Fatal(err)
	}
	var table metav1.Table
	if err := json.Unmarshal(raw, &table); err != nil {
		t.Fatal(err)
	}
	want := []struct{ column, cell string }{
		{"Name", "columns"},
		{"Phase", "AwaitingApproval"},
		{"Digest", digest},
		{"Drift", "True"},
		{"Approval", v1alpha1.ReasonAwaitingApproval},
		{"InSync", "False"},
		{"Ready", "False"},
		{"Age", ""},
	}
	if len(table.ColumnDefinitions) != len(want) || len(table.Rows) != 1 || len(table.Rows[0].Cells) != len(want) {
		t.Fatalf("table has columns %v and rows %v; want the columns of %v", table.ColumnDefinitions, table.Rows, want)
	}
	for i, w := range want {
		if got := table.ColumnDefinitions[i].Name; got != w.column {
			t.Errorf("column %d is %q, want %q", i, got, w.column)
		}
		if cell := fmt.Sprint(table.Rows[0].Cells[i]); w.cell != "" && cell != w.cell {
			t.Errorf("column %s shows %q, want %q", w.column, cell, w.cell)
		}
	}
}
