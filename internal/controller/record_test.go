package controller

import (
	"context"
	"strings"
	"sync"
	"testing"
	"time"

	authenticationv1 "k8s.io/api/authentication/v1"
	batchv1 "k8s.io/api/batch/v1"
	corev1 "k8s.io/api/core/v1"
	rbacv1 "k8s.io/api/rbac/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/rand"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/rest"
	"k8s.io/utils/ptr"
	"sigs.k8s.io/controller-runtime/pkg/client"

	v1alpha1 "ptah.run/operator/operator/api/v1alpha1"
)

// recordWriter is a service account that may create PtahResultRecords in
// ns, with a Pod named pod running as it; client writes as that Pod (a
// token bound to it), or as the bare account when pod is "".
func recordWriter(t *testing.T, ns, account, pod string) client.Client {
	t.Helper()
	ctx := context.Background()
	cs, err := kubernetes.NewForConfig(shared.api.Config)
	must(t, err)
	for _, o := range []client.Object{
		&corev1.ServiceAccount{ObjectMeta: metav1.ObjectMeta{Name: account, Namespace: ns}},
		&rbacv1.Role{ObjectMeta: metav1.ObjectMeta{Name: account, Namespace: ns}, Rules: []rbacv1.PolicyRule{{
			APIGroups: []string{v1alpha1.GroupVersion.Group}, Resources: []string{"ptahresultrecords"}, Verbs: []string{"create"}}}},
		&rbacv1.RoleBinding{ObjectMeta: metav1.ObjectMeta{Name: account, Namespace: ns},
			RoleRef:  rbacv1.RoleRef{APIGroup: rbacv1.GroupName, Kind: "Role", Name: account},
			Subjects: []rbacv1.Subject{{Kind: rbacv1.ServiceAccountKind, Name: account, Namespace: ns}}},
	} {
		if err := shared.c.Create(ctx, o); err != nil && !strings.Contains(err.Error(), "already exists") {
			t.Fatalf("create %T %s: %v", o, o.GetName(), err)
		}
	}
	tr := &authenticationv1.TokenRequest{Spec: authenticationv1.TokenRequestSpec{ExpirationSeconds: ptr.To[int64](600)}}
	if pod != "" {
		p := &corev1.Pod{ObjectMeta: metav1.ObjectMeta{Name: pod, Namespace: ns}, Spec: corev1.PodSpec{
			ServiceAccountName: account, AutomountServiceAccountToken: ptr.To(false),
			Containers: []corev1.Container{{Name: "forger", Image: "forger:1"}}}}
		must(t, shared.c.Create(ctx, p))
		tr.Spec.BoundObjectRef = &authenticationv1.BoundObjectReference{Kind: "Pod", APIVersion: "v1", Name: p.Name, UID: p.UID}
	}
	tok, err := cs.CoreV1().ServiceAccounts(ns).CreateToken(ctx, account, tr, metav1.CreateOptions{})
	must(t, err)
	cfg := rest.AnonymousClientConfig(shared.api.Config)
	cfg.BearerToken = tok.Status.Token
	c, err := client.New(cfg, client.Options{Scheme: shared.sch})
	must(t, err)
	return c
}

func forgedRecord(ns, name, schema, id, digest string) *v1alpha1.PtahResultRecord {
	return &v1alpha1.PtahResultRecord{
		ObjectMeta: metav1.ObjectMeta{Name: name, Namespace: ns},
		Spec: v1alpha1.PtahResultRecordSpec{
			Subject:     v1alpha1.ResultSubject{Kind: v1alpha1.KindPtahSchema, Name: schema},
			OperationID: id, Digest: digest,
			Result: &v1alpha1.OperationResult{ResolvedDigest: "sha256:" + strings.Repeat("e", 64)},
		},
		// What a forger would claim; admission replaces it.
		CreatedBy: &v1alpha1.Creator{Username: "system:serviceaccount:" + ns + ":ptah-op-0123456789abcdef", PodName: name + "-abcde", PodUID: "forged"},
	}
}

// TestRecordAdmission: a result record is admitted only from a Pod of the
// Job it is named after, running as that operation's account, and its
// creator is stamped from the request, never taken from the client.
func TestRecordAdmission(t *testing.T) {
	t.Parallel()
	ns := "records-" + rand.String(6)
	must(t, shared.c.Create(context.Background(), &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: ns}}))
	const hex = "0123456789abcdef"
	name := "ptah-plan-shop-" + hex
	cases := []struct {
		what, account, pod string
		writer             func() client.Client
		refusal            string // "" when admitted
	}{
		{what: "the operation's account from a Pod of its Job", account: "ptah-op-" + hex, pod: name + "-abcde"},
		{what: "a cluster administrator", writer: func() client.Client { return shared.c }, refusal: "only by an operation's service account"},
		{what: "the operation's account with a token bound to no Pod", account: "ptah-op-" + hex, refusal: "only be written from a Pod of Job"},
		{what: "the operation's account from a Pod of another name", account: "ptah-op-" + hex, pod: "debug-shell", refusal: "only be written from a Pod of Job"},
		{what: "another operation's account from a Pod named like the Job's", account: "ptah-op-fedcba9876543210", pod: name + "-fghij", refusal: "writes only its own operation's record"},
	}
	for i, tc := range cases {
		t.Run(tc.what, func(t *testing.T) {
			var w client.Client
			if tc.writer != nil {
				w = tc.writer()
			} else {
				w = recordWriter(t, ns, tc.account, tc.pod)
			}
			rec := forgedRecord(ns, name, "shop", "sha256:"+strings.Repeat("a", 63)+string(rune('0'+i)), "sha256:"+hex)
			err := w.Create(context.Background(), rec, client.DryRunAll)
			if tc.refusal == "" {
				if err != nil {
					t.Fatalf("refused: %v", err)
				}
				want := v1alpha1.Creator{Username: "system:serviceaccount:" + ns + ":" + tc.account, PodName: tc.pod}
				if rec.CreatedBy == nil || rec.CreatedBy.Username != want.Username || rec.CreatedBy.PodName != want.PodName || rec.CreatedBy.PodUID == "forged" || rec.CreatedBy.PodUID == "" {
					t.Errorf("createdBy %+v, want the request's identity %+v with the Pod's UID", rec.CreatedBy, want)
				}
				return
			}
			if err == nil || !strings.Contains(err.Error(), tc.refusal) {
				t.Errorf("admission said %v, want a refusal saying %q", err, tc.refusal)
			}
		})
	}
}

// TestForgedRecordIsNotConsumed: while the Plan Job runs, someone who may
// create Pods and records in the namespace writes, under the claim's name
// and with the claim's id and digest, a record saying the plan is empty.
//
//   - With record admission in force, admission lets it through (the account
//     is not an operation's) and stamps the intruder; the manager refuses it,
//     claims the Plan again under a new name, and the schema converges
//     through a real Apply.
//   - With record admission down in the namespace (the bindings leave it
//     out), the forger writes createdBy itself, naming the operation's
//     account and the Job's live Pod: a record every check of the manager's
//     own would pass. The self-test sees admission down, the schema is
//     held (ConfigurationError) and the record is not consumed; when
//     admission is back, the record is deleted unread, the Plan's result
//     comes from a record admission stamped, and the schema converges
//     through a real Apply.
func TestForgedRecordIsNotConsumed(t *testing.T) {
	t.Parallel()
	t.Run("stamped by admission", func(t *testing.T) {
		t.Parallel()
		forgedWhile(t, true)
	})
	t.Run("written while record admission is down", func(t *testing.T) {
		t.Parallel()
		forgedWhile(t, false)
	})
}

func forgedWhile(t *testing.T, admission bool) {
	var once sync.Once
	forge := make(chan *batchv1.Job)
	forged := make(chan struct{})
	e := newEnv(t, checkedEverySecond, func(o *envOption) {
		o.kubelet.Hold = func(ctx context.Context, j *batchv1.Job) {
			// The first Resolve, which plans too: its record carries the plan.
			if !strings.HasPrefix(j.Name, "ptah-resolve-") {
				return
			}
			once.Do(func() {
				forge <- j
				<-forged
			})
		}
	})
	e.schema()
	j := <-forge
	s := e.get("shop")
	c := s.Status.ActiveOperation
	if c == nil || c.JobName != j.Name {
		t.Fatalf("active claim %+v is not the held Resolve Job %s", c, j.Name)
	}
	ctx := context.Background()
	w := recordWriter(t, e.ns, "intruder", j.Name+"-forge")
	rec := forgedRecord(e.ns, j.Name, "shop", c.ID, c.CoordinationDigest)
	rec.Spec.Result = &v1alpha1.OperationResult{ResolvedDigest: "sha256:" + strings.Repeat("b", 64), Plan: &v1alpha1.PlanResult{
		Fingerprint: "sha256:" + strings.Repeat("b", 64), BaseFingerprint: "forged", DesiredFingerprint: "forged",
		Digest: "sha256:" + strings.Repeat("b", 64), Statements: []v1alpha1.Statement{}}}
	if !admission {
		// The Job's live Pod, which the forged stamp names.
		var pods corev1.PodList
		must(t, shared.c.List(ctx, &pods, client.InNamespace(e.ns), client.MatchingLabels{"batch.kubernetes.io/job-name": j.Name}))
		if len(pods.Items) != 1 {
			t.Fatalf("Job %s has %d Pods, want its one live Pod", j.Name, len(pods.Items))
		}
		pod := pods.Items[0]
		rec.CreatedBy = &v1alpha1.Creator{Username: "system:serviceaccount:" + e.ns + ":" + pod.Spec.ServiceAccountName, PodName: pod.Name, PodUID: string(pod.UID)}
		setRecordAdmission(t, e.ns, false)
		e.await("shop", "ReconciliationFailed=True (ConfigurationError) for record admission", converge, func(s *v1alpha1.PtahSchema) bool {
			return admissionLapsed(s) && s.GetGeneration() == findCondition(s, v1alpha1.ConditionReconciliationFailed).ObservedGeneration
		})
	}
	must(t, w.Create(ctx, rec))
	close(forged)

	if admission {
		ev := e.awaitEvent(v1alpha1.EventResultReadFailed, converge)
		assertEvent(t, ev, "shop")
		if !strings.Contains(ev.Message, j.Name) || !strings.Contains(ev.Message, "intruder") {
			t.Errorf("the refusal does not name the record and its creator: %s", ev.Message)
		}
	} else {
		// Nothing stamped over the forgery, and the manager's own checks
		// would take it: only the self-test stands between it and the plan.
		var stored v1alpha1.PtahResultRecord
		must(t, shared.c.Get(ctx, client.ObjectKeyFromObject(rec), &stored))
		if stored.CreatedBy == nil || *stored.CreatedBy != *rec.CreatedBy {
			t.Fatalf("admission was not down: the stored createdBy %+v is not the forged %+v", stored.CreatedBy, rec.CreatedBy)
		}
		if _, err := readRecord(ctx, shared.c, shared.c, nil, 10*time.Second, s, c); err != nil {
			t.Fatalf("the forgery does not pass the manager's record checks, so it proves nothing here: %v", err)
		}
		if _, err := readRecord(ctx, shared.c, shared.c, e.rec.Admission, 10*time.Second, s, c); err == nil || !strings.Contains(err.Error(), "record admission is not enforcing") {
			t.Errorf("with the self-test, the forgery is read as %v, want a refusal naming record admission", err)
		}
		time.Sleep(5 * time.Second) // the Resolve Job ends meanwhile
		s := e.get("shop")
		if !admissionLapsed(s) || s.Status.Plan != nil {
			t.Errorf("while record admission is down: conditions %s, plan %+v; want the schema held and no plan", conditions(s), s.Status.Plan)
		}
		setRecordAdmission(t, e.ns, true)
		ev := e.awaitEventSaying(v1alpha1.EventResultReadFailed, "created while record admission was not enforcing", converge)
		assertEvent(t, ev, "shop")
		if !strings.Contains(ev.Message, j.Name) || !strings.Contains(ev.Message, "deleted unread") || !strings.Contains(ev.Message, rec.CreatedBy.PodName) {
			t.Errorf("the Event does not say the forged record %s, naming Pod %s, was deleted unread: %s", j.Name, rec.CreatedBy.PodName, ev.Message)
		}
	}
	s = inSync(e)
	if s.Status.Plan != nil && strings.HasPrefix(s.Status.Plan.Digest, "sha256:bbbb") {
		t.Errorf("the forged empty plan was consumed: %+v", s.Status.Plan)
	}
	// InSync came from a real Apply: the tables are there.
	shared.pg.Exec(t, e.db, "SELECT id, email FROM customers; SELECT id, customer_id, note FROM orders")
	if !admission {
		// The plan came from a record of the Resolve Job written once
		// admission stamped again (its runner writes again when its record is
		// gone), or from an operation claimed anew: never from the forgery.
		var now v1alpha1.PtahResultRecord
		err := shared.c.Get(ctx, client.ObjectKeyFromObject(rec), &now)
		if err == nil && now.UID == rec.UID {
			t.Errorf("the forged record %s is still there: %+v", rec.Name, now.CreatedBy)
		}
		return
	}
	plans := 0
	for _, m := range e.eventsOf(v1alpha1.EventOperationStarted) {
		if strings.HasPrefix(m, "Resolve Job ") && !strings.Contains(m, j.Name) {
			plans++
		}
	}
	if plans == 0 {
		t.Errorf("the Resolve was not claimed again under a new name; events:\n%s", e.eventLines())
	}
}

// awaitEventSaying waits for an Event of reason whose message contains says.
func (e *env) awaitEventSaying(reason, says string, timeout time.Duration) corev1.Event {
	e.t.Helper()
	deadline := time.Now().Add(timeout)
	for {
		for _, ev := range e.events() {
			if ev.Reason == reason && strings.Contains(ev.Message, says) {
				return ev
			}
		}
		if time.Now().After(deadline) {
			e.t.Fatalf("no %s Event saying %q within %s; events:\n%s", reason, says, timeout, e.eventLines())
		}
		time.Sleep(200 * time.Millisecond)
	}
}
