package controller

import (
	"context"
	"strings"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/utils/ptr"
	"sigs.k8s.io/controller-runtime/pkg/client"

	v1alpha1 "ptah.run/operator/operator/api/v1alpha1"
)

// TestBadReferencesAreDiagnosedAtOnce: a spec naming a Secret, key or
// ConfigMap that is not there is ReconciliationFailed=True
// (ConfigurationError) within seconds, not at the Job's deadline, with a
// message naming the object, the field and the fix, and no operation runs.
// Creating what was missing lets the retry converge.
func TestBadReferencesAreDiagnosedAtOnce(t *testing.T) {
	t.Parallel()
	const quick = 30 * time.Second // the Jobs' deadline is 2m, the old diagnosis
	cases := []struct {
		name   string
		spec   schemaOption
		code   string
		says   []string
		repair func(e *env)
	}{
		{name: "database Secret missing", spec: func(s *v1alpha1.PtahSchema) { s.Spec.Target.URLFrom.Name = "shop-db-typo" },
			code: "secret_missing", says: []string{"Secret ", "/shop-db-typo", "spec.target.urlFrom", "does not exist"},
			repair: func(e *env) {
				e.secret("shop-db-typo", map[string]string{"url": shared.pg.URL(e.db, e.password, e.db)})
			}},
		{name: "database URL key missing", spec: func(s *v1alpha1.PtahSchema) { s.Spec.Target.URLFrom.Key = "dsn" },
			code: "secret_key_missing", says: []string{"/shop-db", "spec.target.urlFrom", "has no key dsn"}},
		{name: "registry Secret missing", spec: func(s *v1alpha1.PtahSchema) {
			s.Spec.Desired.RegistryAuthFrom = &v1alpha1.LocalRef{Name: "registry-typo"}
		},
			code: "secret_missing", says: []string{"/registry-typo", "spec.desired.registryAuthFrom"}},
		{name: "dev database Secret missing", spec: func(s *v1alpha1.PtahSchema) {
			s.Spec.Execution.DevDatabase = &v1alpha1.DevDatabase{URLFrom: &v1alpha1.SecretKeyRef{Name: "dev-typo", Key: "url"}}
		}, code: "secret_missing", says: []string{"/dev-typo", "spec.execution.devDatabase.urlFrom"}},
		{name: "policy ConfigMap missing", spec: verifiedBy("policy-typo"),
			code: "configmap_missing", says: []string{"ConfigMap ", "/policy-typo", "spec.desired.verificationPolicyFrom"}},
		{name: "policy key missing", spec: verifiedBy("policy-empty"),
			code: "configmap_key_missing", says: []string{"/policy-empty", "has no key policy.json"}},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			e := newEnv(t)
			must(t, shared.c.Create(context.Background(), &corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Name: "policy-empty", Namespace: e.ns},
				Immutable: ptr.To(true), Data: map[string]string{"other.json": "{}"}}))
			e.schema(tc.spec)
			s := e.await("shop", "ReconciliationFailed=True (ConfigurationError)", quick,
				condition(v1alpha1.ConditionReconciliationFailed, metav1.ConditionTrue, v1alpha1.ReasonConfigurationError))
			c := findCondition(s, v1alpha1.ConditionReconciliationFailed)
			if !strings.HasPrefix(c.Message, tc.code+": ") {
				t.Errorf("message %q does not start with %s:", c.Message, tc.code)
			}
			for _, w := range tc.says {
				if !strings.Contains(c.Message, w) {
					t.Errorf("message %q does not say %q", c.Message, w)
				}
			}
			if s.Status.LastFailure == nil {
				t.Fatalf("no lastFailure for the configuration error")
			}
			failed := "ptah-" + runnerOp(s.Status.LastFailure.Operation) + "-"
			for _, r := range e.kubelet.Runs() {
				if strings.HasPrefix(r.Job, failed) && r.Outcome != nil && r.Outcome.ChildExitCode >= 0 {
					t.Errorf("ptah ran in Job %s, although the operation could not be configured", r.Job)
				}
			}
			// The Job of the operation that could not start is not left to its deadline.
			var jobs int
			for _, j := range e.jobs("ptah-") {
				if j.DeletionTimestamp == nil {
					if finished, _ := jobFinished(&j); !finished {
						jobs++
					}
				}
			}
			if jobs > 0 {
				t.Errorf("%d Jobs still running after the diagnosis: %v", jobs, names(e.jobs("ptah-")))
			}
			if tc.repair != nil {
				tc.repair(e)
				inSync(e)
			}
		})
	}
}

// TestBlockedIsReexamined: a schema Blocked by a destructive plan is planned
// again every interval, so when the owner makes the change by hand the
// evidence changes and it converges without any edit of its spec.
func TestBlockedIsReexamined(t *testing.T) {
	t.Parallel()
	e := newEnv(t)
	e.schema(func(s *v1alpha1.PtahSchema) { s.Spec.Interval = &metav1.Duration{Duration: 30 * time.Second} })
	inSync(e)
	e.update("shop", func(s *v1alpha1.PtahSchema) { s.Spec.Desired.OCIRef = shared.refV2 })
	s := e.await("shop", "Ready=False (PolicyBlocked)", converge, condition(v1alpha1.ConditionReady, metav1.ConditionFalse, v1alpha1.ReasonPolicyBlocked))
	gen := s.Generation
	shared.pg.Exec(t, e.db, "ALTER TABLE orders DROP COLUMN note")
	s = e.await("shop", "InSync after the owner dropped the column", 2*time.Minute, condition(v1alpha1.ConditionInSync, metav1.ConditionTrue, v1alpha1.ReasonScopedConverged))
	if s.Generation != gen {
		t.Errorf("generation %d, want %d: the spec was not to be edited", s.Generation, gen)
	}
	var sch v1alpha1.PtahSchema
	must(t, shared.c.Get(context.Background(), client.ObjectKey{Namespace: e.ns, Name: "shop"}, &sch))
	if sch.Status.Phase != v1alpha1.PhaseInSync {
		t.Errorf("phase %s, want InSync", sch.Status.Phase)
	}
}
