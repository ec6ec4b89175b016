package controller

import (
	"context"
	"database/sql"
	"slices"
	"strings"
	"testing"

	_ "github.com/jackc/pgx/v5/stdlib"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"

	v1alpha1 "ptah.run/operator/operator/api/v1alpha1"
)

const billingV1 = `
CREATE SCHEMA billing;
CREATE TABLE public.customers (id int PRIMARY KEY, name text NOT NULL);
CREATE TABLE billing.invoices (
  id int PRIMARY KEY,
  customer_id int NOT NULL REFERENCES public.customers (id),
  total numeric(10,2) NOT NULL DEFAULT 0
);
CREATE VIEW billing.totals AS
  SELECT c.name, sum(i.total) AS total FROM billing.invoices i JOIN public.customers c ON c.id = i.customer_id GROUP BY c.name;
`

// TestSchemasAndIndexPolicyThroughTheOperator: a PtahSchema keeping public
// and billing, with indexes built concurrently, converges through real
// Jobs; an index added to an existing table is planned CONCURRENTLY
// outside the transaction and every statement carries its hazards on the
// PtahSchemaPlan; a schema the PtahSchema does not name is left alone.
func TestSchemasAndIndexPolicyThroughTheOperator(t *testing.T) {
	t.Parallel()
	e := newEnv(t)
	ctx := context.Background()
	shared.pg.Exec(t, e.db, "CREATE SCHEMA scratch; CREATE TABLE scratch.junk (id int); INSERT INTO scratch.junk VALUES (1); GRANT USAGE ON SCHEMA scratch TO "+e.db+"; GRANT SELECT ON scratch.junk TO "+e.db)
	v1 := push(t, e.ns+"-billing-v1", billingV1)
	e.schema(func(s *v1alpha1.PtahSchema) {
		s.Spec.Desired.OCIRef = v1
		s.Spec.Schemas = []string{"public", "billing"}
		s.Spec.Policy.Indexes = v1alpha1.IndexesConcurrently
	})
	inSync := condition(v1alpha1.ConditionInSync, metav1.ConditionTrue, v1alpha1.ReasonScopedConverged)
	s := e.await("shop", "InSync", converge, inSync)

	db, err := sql.Open("pgx", shared.pg.URL(e.db, e.password, e.db))
	must(t, err)
	defer db.Close()
	must(t, db.QueryRow(`SELECT 1 FROM billing.totals LIMIT 0`).Err())
	exec := func(q string) {
		t.Helper()
		if _, err := db.Exec(q); err != nil {
			t.Fatalf("%s: %v", q, err)
		}
	}
	exec(`INSERT INTO public.customers VALUES (1, 'ada'); INSERT INTO billing.invoices VALUES (1, 1, 250)`)

	v2 := push(t, e.ns+"-billing-v2", billingV1+"CREATE INDEX invoices_total_idx ON billing.invoices (total);\nALTER TABLE billing.invoices ADD COLUMN note text;\n")
	must(t, shared.c.Get(ctx, client.ObjectKeyFromObject(s), s))
	s.Spec.Desired.OCIRef = v2
	must(t, shared.c.Update(ctx, s))
	s = e.await("shop", "InSync with v2", converge, inSync)

	var plans v1alpha1.PtahSchemaPlanList
	must(t, shared.c.List(ctx, &plans, client.InNamespace(e.ns)))
	var concurrent, addColumn *v1alpha1.Statement
	for _, p := range plans.Items {
		for i := range p.Spec.Statements {
			st := &p.Spec.Statements[i]
			if strings.Contains(st.SQL, "scratch") {
				t.Errorf("plan %s touches the unmanaged schema: %s", p.Name, st.SQL)
			}
			switch {
			case strings.HasPrefix(st.SQL, `CREATE INDEX CONCURRENTLY "invoices_total_idx"`):
				concurrent = st
				if !slices.Equal(p.Spec.Schemas, []string{"public", "billing"}) {
					t.Errorf("plan %s keeps schemas %v", p.Name, p.Spec.Schemas)
				}
			case strings.Contains(st.SQL, `ADD COLUMN "note"`):
				addColumn = st
			}
		}
	}
	if concurrent == nil || !concurrent.OutsideTransaction || slices.Contains(concurrent.Hazards, v1alpha1.HazardBuildsIndex) {
		t.Fatalf("the index on billing.invoices was not planned concurrently outside the transaction: %+v", concurrent)
	}
	if addColumn == nil || !slices.Equal(addColumn.Hazards, []v1alpha1.Hazard{v1alpha1.HazardAccessExclusiveLock}) {
		t.Fatalf("ADD COLUMN statement: %+v", addColumn)
	}
	var valid bool
	must(t, db.QueryRow(`SELECT indisvalid FROM pg_index WHERE indexrelid = 'billing.invoices_total_idx'::regclass`).Scan(&valid))
	var junk, total string
	must(t, db.QueryRow(`SELECT count(*)::text FROM scratch.junk`).Scan(&junk))
	must(t, db.QueryRow(`SELECT total::text FROM billing.totals WHERE name = 'ada'`).Scan(&total))
	if !valid || junk != "1" || total != "250.00" {
		t.Fatalf("index valid %v, scratch.junk rows %s, billing.totals %s", valid, junk, total)
	}
}
