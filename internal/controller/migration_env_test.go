package controller

import (
	"context"
	"database/sql"
	"fmt"
	"sync"
	"testing"
	"time"

	batchv1 "k8s.io/api/batch/v1"
	corev1 "k8s.io/api/core/v1"
	rbacv1 "k8s.io/api/rbac/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/rest"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/client/interceptor"

	v1alpha1 "ptah.run/operator/operator/api/v1alpha1"
)

// What the PtahMigration tests share: the artifacts, a migration "shop" in
// the test's namespace, waits on its status, and bob, who may write
// migration approvals and acknowledgments through the admission policies.

var (
	migrationsV1 = map[string]string{
		"0001_customers.up.sql": "CREATE TABLE customers (id bigint PRIMARY KEY, email text NOT NULL);\n",
		"0002_orders.up.sql":    "CREATE TABLE orders (id bigint PRIMARY KEY, customer_id bigint NOT NULL REFERENCES customers (id));\n",
		"0003_audit.up.sql":     "CREATE TABLE audit (what text NOT NULL);\nINSERT INTO audit VALUES ('applied 3');\n",
	}
	// migrationsGapped is migrationsV1 with its third version numbered 5.
	migrationsGapped = map[string]string{
		"0001_customers.up.sql": migrationsV1["0001_customers.up.sql"],
		"0002_orders.up.sql":    migrationsV1["0002_orders.up.sql"],
		"0005_audit.up.sql":     migrationsV1["0003_audit.up.sql"],
	}
	bobOnce sync.Once
	bob     client.Client
)

// with is files plus name=text.
func with(files map[string]string, name, text string) map[string]string {
	out := map[string]string{}
	for k, v := range files {
		out[k] = v
	}
	out[name] = text
	return out
}

// bobClient is a user who may create and read migration approvals and
// acknowledgments, reaching the API server through impersonation, so
// admission stamps him.
func bobClient(t *testing.T) client.Client {
	t.Helper()
	bobOnce.Do(func() {
		ctx := context.Background()
		role := &rbacv1.ClusterRole{ObjectMeta: metav1.ObjectMeta{Name: "ptah-migration-approver"}, Rules: []rbacv1.PolicyRule{{
			APIGroups: []string{v1alpha1.GroupVersion.Group}, Resources: []string{"ptahmigrationapprovals", "ptahmigrationrunacknowledgments"},
			Verbs: []string{"create", "get", "list"},
		}}}
		binding := &rbacv1.ClusterRoleBinding{ObjectMeta: metav1.ObjectMeta{Name: "ptah-migration-approver-bob"},
			RoleRef:  rbacv1.RoleRef{APIGroup: rbacv1.GroupName, Kind: "ClusterRole", Name: role.Name},
			Subjects: []rbacv1.Subject{{APIGroup: rbacv1.GroupName, Kind: rbacv1.UserKind, Name: "bob"}},
		}
		for _, o := range []client.Object{role, binding} {
			if err := shared.c.Create(ctx, o); err != nil && !apierrors.IsAlreadyExists(err) {
				t.Fatal(err)
			}
		}
		cfg := rest.CopyConfig(shared.api.Config)
		cfg.Impersonate = rest.ImpersonationConfig{UserName: "bob", Groups: []string{"ptah-operators"}}
		var err error
		if bob, err = client.New(cfg, client.Options{Scheme: shared.sch}); err != nil {
			t.Fatal(err)
		}
	})
	if bob == nil {
		t.Fatal("no client for bob")
	}
	return bob
}

type migrationOption func(*v1alpha1.PtahMigration)

// migration creates the PtahMigration "shop" for ref under Always.
func (e *env) migration(ref string, opts ...migrationOption) *v1alpha1.PtahMigration {
	e.t.Helper()
	m := &v1alpha1.PtahMigration{
		ObjectMeta: metav1.ObjectMeta{Name: "shop", Namespace: e.ns},
		Spec: v1alpha1.PtahMigrationSpec{
			Target:     v1alpha1.Target{URLFrom: v1alpha1.SecretKeyRef{Name: "shop-db", Key: "url"}},
			Migrations: v1alpha1.MigrationsSource{OCIRef: ref, RegistryAuthFrom: &v1alpha1.LocalRef{Name: "registry"}},
			Policy:     v1alpha1.MigrationPolicy{Apply: v1alpha1.ApplyAlways, LockTimeout: &metav1.Duration{Duration: 10 * time.Second}},
			Execution: v1alpha1.Execution{
				FailureRetryInterval: &metav1.Duration{Duration: 10 * time.Second},
				Deadline:             &metav1.Duration{Duration: 2 * time.Minute},
			},
		},
	}
	for _, o := range opts {
		o(m)
	}
	must(e.t, shared.c.Create(context.Background(), m))
	return m
}

func (e *env) getMigration() *v1alpha1.PtahMigration {
	e.t.Helper()
	var m v1alpha1.PtahMigration
	must(e.t, shared.c.Get(context.Background(), client.ObjectKey{Namespace: e.ns, Name: "shop"}, &m))
	return &m
}

// updateMigration re-reads the migration, changes it and writes it back.
func (e *env) updateMigration(f func(*v1alpha1.PtahMigration)) {
	e.t.Helper()
	for {
		m := e.getMigration()
		f(m)
		err := shared.c.Update(context.Background(), m)
		if err == nil {
			return
		}
		if !apierrors.IsConflict(err) {
			e.t.Fatalf("update PtahMigration shop: %v", err)
		}
	}
}

func (e *env) awaitMigration(what string, timeout time.Duration, ok func(*v1alpha1.PtahMigration) bool) *v1alpha1.PtahMigration {
	e.t.Helper()
	deadline := time.Now().Add(timeout)
	for {
		m := e.getMigration()
		if ok(m) {
			return m
		}
		if time.Now().After(deadline) {
			e.t.Fatalf("PtahMigration shop: %s did not happen within %s; phase %s, conditions %s, lastFailure %+v, active %+v\nevents:\n%s\nlast runs:\n%s",
				what, timeout, m.Status.Phase, conditions(m), m.Status.LastFailure, m.Status.ActiveOperation, e.eventLines(), e.runLogs(2))
		}
		time.Sleep(200 * time.Millisecond)
	}
}

func migrationCondition(typ string, status metav1.ConditionStatus, reason string) func(*v1alpha1.PtahMigration) bool {
	return func(m *v1alpha1.PtahMigration) bool { return holds(m, typ, status, reason) }
}

// migrated waits for InSync=True (ScopedConverged) at version.
func migrated(e *env, version int64) *v1alpha1.PtahMigration {
	e.t.Helper()
	return e.awaitMigration(fmt.Sprintf("InSync=True (ScopedConverged) at version %d", version), converge, func(m *v1alpha1.PtahMigration) bool {
		return migrationCondition(v1alpha1.ConditionInSync, metav1.ConditionTrue, v1alpha1.ReasonScopedConverged)(m) &&
			m.Status.AppliedVersion == version && m.Status.ActiveOperation == nil
	})
}

// migrationEvents are the Events of reason recorded on a PtahMigration.
func (e *env) migrationEvents(reason string) []string {
	var out []string
	for _, ev := range e.events() {
		if ev.Reason == reason && ev.InvolvedObject.Kind == v1alpha1.KindPtahMigration {
			out = append(out, ev.Type+": "+ev.Message)
		}
	}
	return out
}

// awaitMigrationEvent waits for an Event of reason on the PtahMigration.
func (e *env) awaitMigrationEvent(reason string, timeout time.Duration, match func(msg string) bool) corev1.Event {
	e.t.Helper()
	deadline := time.Now().Add(timeout)
	for {
		for _, ev := range e.events() {
			if ev.Reason == reason && ev.InvolvedObject.Kind == v1alpha1.KindPtahMigration && (match == nil || match(ev.Message)) {
				return ev
			}
		}
		if time.Now().After(deadline) {
			e.t.Fatalf("no %s Event on the PtahMigration within %s; events:\n%s\nlast runs:\n%s", reason, timeout, e.eventLines(), e.runLogs(2))
		}
		time.Sleep(200 * time.Millisecond)
	}
}

// query runs q as the superuser on the test's database and returns its one
// text value.
func (e *env) query(q string) string {
	e.t.Helper()
	db, err := sql.Open("pgx", shared.pg.SuperURL(e.db))
	must(e.t, err)
	defer db.Close()
	var out string
	must(e.t, db.QueryRowContext(context.Background(), q).Scan(&out))
	return out
}

// history is the database's migration history, in order: each version, a
// "!" after one left dirty.
func (e *env) history() string {
	e.t.Helper()
	if e.query("SELECT (to_regclass('ptah.migration_revisions') IS NOT NULL)::text") != "true" {
		return ""
	}
	return e.query("SELECT coalesce(string_agg(version::text || (CASE WHEN dirty THEN '!' ELSE '' END), ' ' ORDER BY version), '') FROM ptah.migration_revisions")
}

// failMigrationJobCreates refuses the migration reconciler's Job
// creations that match, as a manager stopped before it reached the API
// server would leave them: the claim is in status, no Job exists.
func failMigrationJobCreates(match func(*batchv1.Job) bool) func(*MigrationReconciler) {
	return func(r *MigrationReconciler) {
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
