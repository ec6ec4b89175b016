package controller

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

	admissionregistrationv1 "k8s.io/api/admissionregistration/v1"
	corev1 "k8s.io/api/core/v1"
	rbacv1 "k8s.io/api/rbac/v1"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/apimachinery/pkg/util/rand"
	utilyaml "k8s.io/apimachinery/pkg/util/yaml"
	"k8s.io/client-go/rest"
	"sigs.k8s.io/controller-runtime/pkg/client"

	v1alpha1 "ptah.run/operator/operator/api/v1alpha1"
)

// The record admission self-test (admission.go) against the real API
// server, with the policies of operator/config/admission installed by
// TestMain: enforcing as shipped, then with the stamp's policy or binding
// gone (cluster-wide, so that test runs alone), then with a binding that
// leaves one namespace out (that namespace only, so alongside the others).

// probeNamespace is a namespace nothing reconciles, made by installAdmission.
const probeNamespace = "admission-probe"

// probe is the self-test as the cluster administrator makes it.
func probe() *RecordAdmission { return &RecordAdmission{Client: shared.c, Reader: shared.c} }

// awaitVerdict polls the self-test in ns until ok holds for its verdict:
// the API server's admission plugins follow policy changes through
// informers, a moment later.
func awaitVerdict(t *testing.T, ns, what string, ok func(problem string) bool) string {
	t.Helper()
	deadline := time.Now().Add(30 * time.Second)
	for {
		p := probe().check(context.Background(), ns)
		if ok(p) {
			return p
		}
		if time.Now().After(deadline) {
			t.Fatalf("the self-test in namespace %s did not see %s within 30s; it says %q", ns, what, p)
		}
		time.Sleep(200 * time.Millisecond)
	}
}

func enforcing(p string) bool { return p == "" }

// TestSelfTestKnowsTheShippedRecordPolicies: the names the self-test looks
// for and the stamp check it reads a refusal by are those of
// operator/config/admission, and the stamp check is the creator's first.
func TestSelfTestKnowsTheShippedRecordPolicies(t *testing.T) {
	t.Parallel()
	kinds := map[string]string{}
	var creator admissionregistrationv1.ValidatingAdmissionPolicy
	for _, f := range []string{"record-stamp.yaml", "record-creator.yaml"} {
		data, err := os.ReadFile(filepath.Join("..", "..", "operator", "config", "admission", f))
		must(t, err)
		dec := utilyaml.NewYAMLOrJSONDecoder(bytes.NewReader(data), 4096)
		for {
			var raw map[string]any
			if err := dec.Decode(&raw); errors.Is(err, io.EOF) {
				break
			} else if err != nil {
				t.Fatalf("decode %s: %v", f, err)
			}
			kind, _ := raw["kind"].(string)
			name, _ := raw["metadata"].(map[string]any)["name"].(string)
			policy := name
			if spec, ok := raw["spec"].(map[string]any); ok && spec["policyName"] != nil {
				policy = spec["policyName"].(string)
			}
			kinds[kind] = name + "/" + policy
			if kind == "ValidatingAdmissionPolicy" {
				data, err := json.Marshal(raw)
				must(t, err)
				must(t, json.Unmarshal(data, &creator))
			}
		}
	}
	for kind, want := range map[string]string{
		"MutatingAdmissionPolicy":          stampPolicy + "/" + stampPolicy,
		"MutatingAdmissionPolicyBinding":   stampPolicy + "/" + stampPolicy,
		"ValidatingAdmissionPolicy":        creatorPolicy + "/" + creatorPolicy,
		"ValidatingAdmissionPolicyBinding": creatorPolicy + "/" + creatorPolicy,
	} {
		if kinds[kind] != want {
			t.Errorf("%s is %q (name/policy), the self-test looks for %q", kind, kinds[kind], want)
		}
	}
	if v := creator.Spec.Validations; len(v) == 0 || v[0].Message != creatorStampCheck {
		t.Errorf("the first validation of %s is not the stamp check the self-test reads a refusal by (%q): %+v", creatorPolicy, creatorStampCheck, v)
	}
}

// TestRecordAdmissionSelfTest runs alone (not in parallel): it removes the
// cluster's record-stamp policy and then its binding, as an admin could,
// and puts each back.
//
//   - As installed, a dry-run forgery is refused (by the creator, after the
//     stamp replaced the forged createdBy) or, from a Job-named Pod's
//     account, stamped over; and schemas and migrations start Jobs.
//   - Without the policy, or without its binding, the creator refuses every
//     record (nothing stamps it): a PtahSchema and a PtahMigration report
//     ReconciliationFailed=True (ConfigurationError) naming the missing
//     object and the fix, and no Job starts in their namespace. Once it is
//     back, both converge without anyone touching them.
func TestRecordAdmissionSelfTest(t *testing.T) {
	ctx := context.Background()
	t.Run("enforcing as installed", func(t *testing.T) {
		awaitVerdict(t, probeNamespace, "record admission enforcing", enforcing)
		// The administrator's forgery: the stamp names the administrator, so
		// the creator refuses it as written by no operation's account.
		rec := forgedRecord(probeNamespace, "ptah-plan-probe-0123456789abcdef", "shop", "sha256:"+strings.Repeat("c", 64), "sha256:probe")
		err := shared.c.Create(ctx, rec, client.DryRunAll)
		if err == nil || !strings.Contains(err.Error(), "ValidatingAdmissionPolicy '"+creatorPolicy+"'") || strings.Contains(err.Error(), creatorStampCheck) {
			t.Errorf("the administrator's forged record: admission said %v, want the creator's refusal past its stamp check", err)
		}
		// From a Pod named after the Job, as another account: admitted, with
		// that account and Pod stamped over the forged ones.
		w := recordWriter(t, probeNamespace, "selftest-intruder", rec.Name+"-intru")
		rec = forgedRecord(probeNamespace, rec.Name, "shop", "sha256:"+strings.Repeat("c", 64), "sha256:probe")
		must(t, w.Create(ctx, rec, client.DryRunAll))
		if by := rec.CreatedBy; by == nil || by.Username != "system:serviceaccount:"+probeNamespace+":selftest-intruder" || by.PodName != rec.Name+"-intru" || by.PodUID == "forged" {
			t.Errorf("createdBy %+v: the forged stamp was not replaced by the writer's identity", by)
		}
		e := newEnv(t, checkedEverySecond)
		schemaAndMigration(e)
		assertEvent(t, e.awaitEvent(v1alpha1.EventOperationStarted, converge), "shop")
		e.awaitMigrationEvent(v1alpha1.EventOperationStarted, converge, func(string) bool { return true })
		if s := e.get("shop"); admissionLapsed(s) {
			t.Errorf("the schema reports record admission down: %s", conditions(s))
		}
	})
	t.Run("record-stamp policy removed", func(t *testing.T) {
		outage(t, &admissionregistrationv1.MutatingAdmissionPolicy{}, stampPolicy,
			"MutatingAdmissionPolicy "+stampPolicy+" does not exist")
	})
	t.Run("record-stamp binding removed", func(t *testing.T) {
		outage(t, &admissionregistrationv1.MutatingAdmissionPolicyBinding{}, stampPolicy,
			"no MutatingAdmissionPolicyBinding binds "+stampPolicy)
	})
}

// checkedEverySecond makes the manager's self-test round every second.
func checkedEverySecond(o *envOption) {
	o.reconcile = func(r *SchemaReconciler) { r.Admission.Interval = time.Second }
}

// schemaAndMigration creates the PtahSchema shop and, on a database of its
// own, the PtahMigration shop.
func schemaAndMigration(e *env) {
	e.t.Helper()
	e.secret("migrations-db", map[string]string{"url": shared.pg.CreateDatabase(e.t, strings.ReplaceAll(e.ns, "-", "_")+"_m")})
	e.schema()
	e.migration(pushMigrations(e.t, "admission-"+e.ns, migrationsV1), func(m *v1alpha1.PtahMigration) { m.Spec.Target.URLFrom.Name = "migrations-db" })
}

// heldForAdmission waits until the schema and the migration both report
// record admission down with a message that says each of says, then
// checks that no Job starts in the namespace over a few more checks.
func heldForAdmission(e *env, says ...string) {
	e.t.Helper()
	says = append(says, admissionCode+": ", "admission.install=true", "namespace "+e.ns)
	names := func(msg string) bool {
		for _, s := range says {
			if !strings.Contains(msg, s) {
				return false
			}
		}
		return true
	}
	s := e.await("shop", "ReconciliationFailed=True (ConfigurationError) naming "+strings.Join(says, ", "), converge, func(s *v1alpha1.PtahSchema) bool {
		return condition(v1alpha1.ConditionReconciliationFailed, metav1.ConditionTrue, v1alpha1.ReasonConfigurationError)(s) &&
			names(findCondition(s, v1alpha1.ConditionReconciliationFailed).Message)
	})
	e.t.Logf("the schema says: %s", findCondition(s, v1alpha1.ConditionReconciliationFailed).Message)
	e.awaitMigration("ReconciliationFailed=True (ConfigurationError) naming "+strings.Join(says, ", "), converge, func(m *v1alpha1.PtahMigration) bool {
		c := meta.FindStatusCondition(m.Status.Conditions, v1alpha1.ConditionReconciliationFailed)
		return migrationCondition(v1alpha1.ConditionReconciliationFailed, metav1.ConditionTrue, v1alpha1.ReasonConfigurationError)(m) && names(c.Message)
	})
	if s := e.get("shop"); !conditionIs(s, v1alpha1.ConditionStalled, metav1.ConditionTrue, v1alpha1.ReasonConfigurationError) {
		e.t.Errorf("the schema is not Stalled (ConfigurationError): %s", conditions(s))
	}
	time.Sleep(3 * time.Second) // three more rounds of the self-test
	if jobs := e.jobs(""); len(jobs) > 0 {
		e.t.Errorf("%d Jobs started while record admission was down, the first %s", len(jobs), jobs[0].Name)
	}
}

// recovered waits for both to converge, nobody having touched them.
func recovered(e *env) {
	e.t.Helper()
	inSync(e)
	migrated(e, 3)
	for _, o := range []subject{e.get("shop"), e.getMigration()} {
		if admissionLapsed(o) {
			e.t.Errorf("%s still reports record admission down: %s", o.SubjectKind(), conditions(o))
		}
	}
}

// outage deletes the cluster's admission object named name (obj says its
// kind), checks that a schema and a migration are held naming cause, puts
// the object back as it was and checks that both converge.
func outage(t *testing.T, obj client.Object, name, cause string) {
	ctx := context.Background()
	must(t, shared.c.Get(ctx, types.NamespacedName{Name: name}, obj))
	saved := obj.DeepCopyObject().(client.Object)
	must(t, shared.c.Delete(ctx, obj))
	restored := false
	restore := func() {
		if restored {
			return
		}
		restored = true
		saved.SetResourceVersion("")
		saved.SetUID("")
		saved.SetCreationTimestamp(metav1.Time{})
		saved.SetManagedFields(nil)
		saved.SetGeneration(0)
		must(t, shared.c.Create(ctx, saved))
		// The tests that run after this one need it in force.
		awaitVerdict(t, probeNamespace, "record admission enforcing again", enforcing)
	}
	t.Cleanup(restore)
	awaitVerdict(t, probeNamespace, cause, func(p string) bool { return strings.Contains(p, cause) })

	e := newEnv(t, checkedEverySecond)
	schemaAndMigration(e)
	heldForAdmission(e, cause, "refused a dry-run create", "nothing stamped its createdBy")
	restore()
	recovered(e)
}

// TestRecordAdmissionLeftOutOfANamespace: the record bindings' selector
// leaves the test's namespace out, as an admin's namespaceSelector could
// (MutatingAdmissionPolicy has no Warn mode: this is how an installed
// policy ends up not stamping). Nothing stamps or refuses a client-written
// createdBy there, so the schema and the migration are held naming both
// bindings and no Job starts; when the namespace is no longer left out,
// both converge by themselves.
func TestRecordAdmissionLeftOutOfANamespace(t *testing.T) {
	t.Parallel()
	e := newEnv(t, checkedEverySecond, func(o *envOption) { o.noRecordAdmission = true })
	schemaAndMigration(e)
	heldForAdmission(e, "was admitted with the createdBy its client wrote",
		"MutatingAdmissionPolicyBinding "+stampPolicy+" narrows its matchResources (namespaceSelector), which may leave namespace "+e.ns+" out",
		"ValidatingAdmissionPolicyBinding "+creatorPolicy+" narrows its matchResources (namespaceSelector)")
	setRecordAdmission(t, e.ns, true)
	recovered(e)
}

// setRecordAdmission puts namespace ns back in the record bindings' reach
// (on) or leaves it out (off).
func setRecordAdmission(t *testing.T, ns string, on bool) {
	t.Helper()
	value := `"off"`
	if on {
		value = "null"
	}
	patch := []byte(`{"metadata":{"labels":{"` + noRecordAdmission + `":` + value + `}}}`)
	must(t, shared.c.Patch(context.Background(), &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: ns}}, client.RawPatch(types.MergePatchType, patch)))
}

// TestAdmissionSelfTestWithoutTheRightsToLook: a manager that may create records
// but not read the admission policies (an install limited to some
// namespaces binds its ClusterRole per namespace, where cluster-scoped
// reads are refused) still finds a forged stamp admitted, and names the
// cause generically; one that may not even make the dry run is not shown
// enforcing either.
func TestAdmissionSelfTestWithoutTheRightsToLook(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	ns := "selftest-" + rand.String(6)
	must(t, shared.c.Create(ctx, &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: ns, Labels: map[string]string{noRecordAdmission: "off"}}}))
	for _, o := range []client.Object{
		&rbacv1.Role{ObjectMeta: metav1.ObjectMeta{Name: "records", Namespace: ns}, Rules: []rbacv1.PolicyRule{{
			APIGroups: []string{v1alpha1.GroupVersion.Group}, Resources: []string{"ptahresultrecords"}, Verbs: []string{"create"}}}},
		&rbacv1.RoleBinding{ObjectMeta: metav1.ObjectMeta{Name: "records", Namespace: ns},
			RoleRef:  rbacv1.RoleRef{APIGroup: rbacv1.GroupName, Kind: "Role", Name: "records"},
			Subjects: []rbacv1.Subject{{APIGroup: rbacv1.GroupName, Kind: rbacv1.UserKind, Name: "carol"}}},
	} {
		must(t, shared.c.Create(ctx, o))
	}
	cfg := rest.CopyConfig(shared.api.Config)
	cfg.Impersonate = rest.ImpersonationConfig{UserName: "carol"}
	carol, err := client.New(cfg, client.Options{Scheme: shared.sch})
	must(t, err)
	a := &RecordAdmission{Client: carol, Reader: carol}
	var p string
	deadline := time.Now().Add(30 * time.Second)
	for p = a.check(ctx, ns); !strings.Contains(p, "was admitted with the createdBy its client wrote") && time.Now().Before(deadline); p = a.check(ctx, ns) {
		time.Sleep(200 * time.Millisecond) // RBAC and the namespace's labels reach the API server's caches
	}
	for _, want := range []string{"was admitted with the createdBy its client wrote", "the manager cannot read the admission policies to say why", "is forbidden", "admission.install=true"} {
		if !strings.Contains(p, want) {
			t.Errorf("the self-test says %q, want it to say %q", p, want)
		}
	}
	if p := a.check(ctx, probeNamespace); !strings.Contains(p, "not shown to be") || !strings.Contains(p, "is forbidden") {
		t.Errorf("where the dry run is refused by RBAC, the self-test says %q, want it not shown enforcing", p)
	}
}
