package controller

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"strings"
	"sync"
	"time"

	admissionregistrationv1 "k8s.io/api/admissionregistration/v1"
	authenticationv1 "k8s.io/api/authentication/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/event"
	"sigs.k8s.io/controller-runtime/pkg/handler"
	"sigs.k8s.io/controller-runtime/pkg/log"
	"sigs.k8s.io/controller-runtime/pkg/reconcile"
	"sigs.k8s.io/controller-runtime/pkg/source"

	v1alpha1 "ptah.run/operator/operator/api/v1alpha1"
)

// The manager trusts a PtahResultRecord whose createdBy names a live Pod of
// the operation's Job. That stamp is worth something only while the record
// admission policies of operator/config/admission are in force in the
// record's namespace: without them a client writes createdBy itself.
// RecordAdmission proves it, per namespace, with the request a forger
// would make: a server-side dry-run create of a PtahResultRecord whose
// createdBy the manager writes itself, naming a user and a Pod that do not
// exist (forgedCreator).
//
// What the policies do to that request decides. ptah-record-stamp (a
// MutatingAdmissionPolicy) replaces createdBy with the requesting identity;
// ptah-record-creator (a ValidatingAdmissionPolicy) then refuses a record
// whose createdBy is not exactly that identity (its first check), and one
// not written from a Pod of the Job it is named after (the later checks,
// which the manager, being no Job's Pod, always fails). So record admission
// is enforcing in a namespace when the dry run either
//
//   - is refused by ptah-record-creator for any reason but its stamp
//     check: the creator's first check passed, so the stamp had replaced
//     the forged createdBy, and the creator refuses records from anyone but
//     a Job's own Pod; or
//   - is admitted with createdBy replaced: none of the forged values is
//     left, and the username is the manager's own (as SelfSubjectReview
//     tells it, when it may ask). The stamp alone suffices: the manager
//     checks a stamped record against the live Pods of the Job itself.
//
// Anything else is not enforcing: a dry run admitted with the forged
// createdBy kept (no stamp and no refusal: a policy or its binding is
// missing, or the binding leaves the namespace out, or the creator's
// binding only warns or audits); a refusal by the creator's stamp check
// (nothing stamped: the creator still refuses forgeries, but also every
// honest runner's record); or a check that cannot be made (refused by
// RBAC, a timeout, an error). MutatingAdmissionPolicy bindings have no
// Warn or Audit mode; failurePolicy Ignore with a failing mutation, or
// matchConditions that skip the request, leave the record unstamped and so
// show as not enforcing too.
//
// While a namespace's record admission is not enforcing, every PtahSchema
// and PtahMigration in it reports ReconciliationFailed=True
// (ConfigurationError) naming the cause, no Job starts, and no record is
// consumed; a running Apply runs on (its database lease is kept). The
// check runs when a namespace is first consulted, every Interval for each
// namespace that holds a PtahSchema or PtahMigration, and again right
// before any record is consumed. When it passes again, the subjects are
// woken, a record written under an active claim meanwhile is deleted
// unread (its stamp proves nothing), and reconciliation resumes.
type RecordAdmission struct {
	// Client makes the dry runs and asks who the manager is.
	Client client.Client
	// Reader reads the admission policies and their bindings past the cache.
	Reader client.Reader
	// Interval is how often every namespace holding a subject is checked
	// again (default DefaultAdmissionCheckInterval).
	Interval time.Duration

	mu sync.Mutex
	// problems is the last verdict per namespace: "" when enforcing.
	problems map[string]string
	self     string
	subs     []chan event.TypedGenericEvent[string]
}

// DefaultAdmissionCheckInterval is how often record admission is checked
// again when nothing else asks.
const DefaultAdmissionCheckInterval = 2 * time.Minute

// The admission objects the self-test looks for, as operator/config/admission names them.
const (
	stampPolicy = "ptah-record-stamp"
	// stampWebhook is the chart's MutatingWebhookConfiguration that stands
	// in for the stamp policies where the cluster serves none.
	stampWebhook  = "ptah-stamp"
	creatorPolicy = "ptah-record-creator"
	// creatorStampCheck is the message of ptah-record-creator's first
	// validation, the one that refuses a createdBy the stamp did not write.
	creatorStampCheck = "createdBy must be stamped by admission with the requesting identity; it is never taken from the client"
	// selfTestRecord is the name of the dry-run record.
	selfTestRecord = "ptah-admission-self-test"
	// admissionCode heads the ReconciliationFailed message while record
	// admission is not enforcing.
	admissionCode = "record_admission"
	// admissionFix is what the message tells a person to do.
	admissionFix = "install the chart's record admission policies and their bindings (admission.install=true), or apply operator/config/admission as shipped"
)

// forgedCreator is the client-written stamp of the dry run: a user and a Pod that do not exist.
var forgedCreator = v1alpha1.Creator{
	Username: "ptah-admission-self-test:forged-user",
	UID:      "ptah-admission-self-test-forged-uid",
	PodName:  "ptah-admission-self-test-forged-pod",
	PodUID:   "ptah-admission-self-test-forged-pod-uid",
}

// NewRecordAdmission builds the check from a manager's clients; add it to
// the manager (mgr.Add) and hand it to both reconcilers.
func NewRecordAdmission(mgr ctrl.Manager, interval time.Duration) *RecordAdmission {
	return &RecordAdmission{Client: mgr.GetClient(), Reader: mgr.GetAPIReader(), Interval: interval}
}

func (a *RecordAdmission) interval() time.Duration {
	if a.Interval > 0 {
		return a.Interval
	}
	return DefaultAdmissionCheckInterval
}

// Problem is the last verdict for namespace ns ("" when record admission is
// enforcing there), checking now when there is none yet.
func (a *RecordAdmission) Problem(ctx context.Context, ns string) string {
	a.mu.Lock()
	p, ok := a.problems[ns]
	a.mu.Unlock()
	if ok {
		return p
	}
	return a.Verify(ctx, ns)
}

// Verify checks namespace ns now and returns the verdict. A verdict that
// changed wakes the namespace's subjects.
func (a *RecordAdmission) Verify(ctx context.Context, ns string) string {
	p := a.check(ctx, ns)
	a.mu.Lock()
	if a.problems == nil {
		a.problems = map[string]string{}
	}
	before, known := a.problems[ns]
	a.problems[ns] = p
	subs := a.subs
	a.mu.Unlock()
	if (known || p != "") && before != p {
		l := log.FromContext(ctx).WithValues("namespace", ns)
		if p == "" {
			l.Info("record admission is enforcing again: reconciliation resumes")
		} else {
			l.Info("record admission is not enforcing: no Job starts and no result record is consumed here", "problem", p)
		}
		for _, ch := range subs {
			select {
			case ch <- event.TypedGenericEvent[string]{Object: ns}:
			default: // the subjects also look again after Interval
			}
		}
	}
	return p
}

// Start checks at once, then every Interval, each namespace that holds a
// PtahSchema or a PtahMigration (the manager's cache says which).
func (a *RecordAdmission) Start(ctx context.Context) error {
	t := time.NewTicker(a.interval())
	defer t.Stop()
	for {
		a.round(ctx)
		select {
		case <-ctx.Done():
			return nil
		case <-t.C:
		}
	}
}

// NeedLeaderElection: only the manager that reconciles checks.
func (a *RecordAdmission) NeedLeaderElection() bool { return true }

func (a *RecordAdmission) round(ctx context.Context) {
	l := log.FromContext(ctx)
	// The policies are read every round even when all is well, so a
	// manager that may not read them shows it at once.
	if _, err := a.inspect(ctx, "", true); err != nil {
		l.Info("cannot read the record admission policies; a failing check will name no cause", "error", err.Error())
	}
	namespaces := map[string]bool{}
	var schemas v1alpha1.PtahSchemaList
	if err := a.Client.List(ctx, &schemas); err != nil {
		l.Error(err, "list PtahSchemas to check record admission in their namespaces")
	}
	for _, s := range schemas.Items {
		namespaces[s.Namespace] = true
	}
	var migrations v1alpha1.PtahMigrationList
	if err := a.Client.List(ctx, &migrations); err != nil {
		l.Error(err, "list PtahMigrations to check record admission in their namespaces")
	}
	for _, m := range migrations.Items {
		namespaces[m.Namespace] = true
	}
	a.mu.Lock()
	for ns := range a.problems {
		if !namespaces[ns] {
			delete(a.problems, ns) // checked again when next consulted
		}
	}
	a.mu.Unlock()
	for ns := range namespaces {
		if ctx.Err() != nil {
			return
		}
		a.Verify(ctx, ns)
	}
}

// source wakes the subjects of a namespace whose verdict changed; subjects
// lists them.
func (a *RecordAdmission) source(subjects func(ctx context.Context, ns string) []reconcile.Request) source.TypedSource[reconcile.Request] {
	ch := make(chan event.TypedGenericEvent[string], 64)
	a.mu.Lock()
	a.subs = append(a.subs, ch)
	a.mu.Unlock()
	return source.TypedChannel[string, reconcile.Request](ch, handler.TypedEnqueueRequestsFromMapFunc(subjects))
}

// check makes the dry run in ns and returns what is wrong, or "".
func (a *RecordAdmission) check(ctx context.Context, ns string) string {
	ctx, cancel := context.WithTimeout(ctx, 10*time.Second)
	defer cancel()
	forged := forgedCreator
	rec := &v1alpha1.PtahResultRecord{
		ObjectMeta: metav1.ObjectMeta{Name: selfTestRecord, Namespace: ns},
		Spec: v1alpha1.PtahResultRecordSpec{
			Subject:     v1alpha1.ResultSubject{Kind: v1alpha1.KindPtahSchema, Name: selfTestRecord},
			OperationID: selfTestRecord, Digest: selfTestRecord,
			Error: &v1alpha1.OperationError{Code: "admission_self_test", Message: "a dry run of the manager's record admission self-test; never stored"},
		},
		CreatedBy: &forged,
	}
	err := a.Client.Create(ctx, rec, client.DryRunAll)
	var status apierrors.APIStatus
	switch {
	case err == nil && a.stampedOver(ctx, rec.CreatedBy):
		return ""
	case err == nil:
		return fmt.Sprintf("a dry-run create of a PtahResultRecord in namespace %s was admitted with the createdBy its client wrote (%s): nothing stamps or refuses it, so a record could name any Pod of a Job; %s; %s",
			ns, describeCreator(rec.CreatedBy), a.causes(ctx, ns, true), admissionFix)
	case errors.As(err, &status) && strings.Contains(status.Status().Message, "ValidatingAdmissionPolicy '"+creatorPolicy+"'"):
		if !strings.Contains(status.Status().Message, creatorStampCheck) {
			return "" // the stamp ran, and the creator refuses records from anyone but a Job's Pod
		}
		return fmt.Sprintf("ValidatingAdmissionPolicy %s refused a dry-run create of a PtahResultRecord in namespace %s because nothing stamped its createdBy: forgeries are refused, and so is every runner's record; %s; %s",
			creatorPolicy, ns, a.causes(ctx, ns, false), admissionFix)
	default:
		return fmt.Sprintf("the dry-run create of a PtahResultRecord in namespace %s that proves record admission is enforcing failed, so it is not shown to be: %v; %s",
			ns, err, admissionFix)
	}
}

// stampedOver reports whether admission replaced the forged createdBy with
// the manager's own identity.
func (a *RecordAdmission) stampedOver(ctx context.Context, by *v1alpha1.Creator) bool {
	if by == nil || by.Username == "" || by.Username == forgedCreator.Username || by.UID == forgedCreator.UID ||
		by.PodName == forgedCreator.PodName || by.PodUID == forgedCreator.PodUID {
		return false
	}
	self := a.identity(ctx)
	return self == "" || by.Username == self
}

// identity is the manager's username, or "" when it may not ask.
func (a *RecordAdmission) identity(ctx context.Context) string {
	a.mu.Lock()
	self := a.self
	a.mu.Unlock()
	if self != "" {
		return self
	}
	review := &authenticationv1.SelfSubjectReview{}
	if err := a.Client.Create(ctx, review); err != nil {
		log.FromContext(ctx).V(1).Info("cannot ask who the manager is; a stamp is checked against the forged values only", "error", err.Error())
		return ""
	}
	a.mu.Lock()
	a.self = review.Status.UserInfo.Username
	a.mu.Unlock()
	return review.Status.UserInfo.Username
}

func describeCreator(by *v1alpha1.Creator) string {
	if by == nil {
		return "none"
	}
	return fmt.Sprintf("username %q, pod %q", by.Username, by.PodName)
}

// causes names what the admission objects show to be wrong for namespace
// ns: the stamp's, and with creator the creator's too.
func (a *RecordAdmission) causes(ctx context.Context, ns string, creator bool) string {
	found, err := a.inspect(ctx, ns, creator)
	switch {
	case err != nil:
		return fmt.Sprintf("the manager cannot read the admission policies to say why (%v): check that MutatingAdmissionPolicy %s and ValidatingAdmissionPolicy %s exist and are bound to namespace %s",
			err, stampPolicy, creatorPolicy, ns)
	case len(found) == 0:
		return "the policies and their bindings look in place, so the API server's admission plugins or a policy of another name may be at fault"
	}
	return strings.Join(found, "; ")
}

// inspect reads the stamp's policy and bindings, and with creator the
// creator's, and says what keeps them from acting in namespace ns ("" when
// not about one namespace). It fails only when it may not read them.
func (a *RecordAdmission) inspect(ctx context.Context, ns string, creator bool) ([]string, error) {
	in := "namespace " + ns
	if ns == "" {
		in = "a team namespace"
	}
	found, err := a.stampFlaws(ctx, in)
	if err != nil {
		return nil, err
	}
	if !creator {
		return found, nil
	}
	var vap admissionregistrationv1.ValidatingAdmissionPolicy
	switch err := a.Reader.Get(ctx, types.NamespacedName{Name: creatorPolicy}, &vap); {
	case apierrors.IsNotFound(err):
		found = append(found, fmt.Sprintf("ValidatingAdmissionPolicy %s does not exist", creatorPolicy))
	case err != nil:
		return nil, fmt.Errorf("read ValidatingAdmissionPolicy %s: %w", creatorPolicy, err)
	default:
		found = append(found, policyFlaws("ValidatingAdmissionPolicy", creatorPolicy, vap.Spec.FailurePolicy, len(vap.Spec.MatchConditions))...)
	}
	var vbindings admissionregistrationv1.ValidatingAdmissionPolicyBindingList
	if err := a.Reader.List(ctx, &vbindings); err != nil {
		return nil, fmt.Errorf("list ValidatingAdmissionPolicyBindings: %w", err)
	}
	bound := false
	for _, b := range vbindings.Items {
		if b.Spec.PolicyName != creatorPolicy {
			continue
		}
		bound = true
		if !slices.Contains(b.Spec.ValidationActions, admissionregistrationv1.Deny) {
			found = append(found, fmt.Sprintf("ValidatingAdmissionPolicyBinding %s has validationActions %v, not Deny, so it refuses nothing", b.Name, b.Spec.ValidationActions))
		}
		found = append(found, bindingFlaws("ValidatingAdmissionPolicyBinding", b.Name, b.Spec.MatchResources, in)...)
	}
	if !bound {
		found = append(found, fmt.Sprintf("no ValidatingAdmissionPolicyBinding binds %s (its binding %s is missing)", creatorPolicy, creatorPolicy))
	}
	return found, nil
}

// stampFlaws says what keeps the record stamp from acting in: the
// MutatingAdmissionPolicy and its bindings where the cluster serves the
// kind and the policy exists, else the stamp webhook's configuration (the
// chart's admission.api=webhook, for clusters that serve no policy).
func (a *RecordAdmission) stampFlaws(ctx context.Context, in string) ([]string, error) {
	var policy admissionregistrationv1.MutatingAdmissionPolicy
	err := a.Reader.Get(ctx, types.NamespacedName{Name: stampPolicy}, &policy)
	served := !meta.IsNoMatchError(err)
	switch {
	case err == nil:
	case apierrors.IsNotFound(err) || !served:
		found, hook, werr := a.webhookFlaws(ctx, in)
		if werr != nil || hook {
			return found, werr
		}
		if !served {
			return []string{fmt.Sprintf("this cluster serves no MutatingAdmissionPolicy v1, and MutatingWebhookConfiguration %s, the stamp webhook that stands in for %s there, does not exist (the chart installs it with admission.api=webhook, which auto chooses on such a cluster)", stampWebhook, stampPolicy)}, nil
		}
		return []string{fmt.Sprintf("MutatingAdmissionPolicy %s does not exist", stampPolicy)}, nil
	default:
		return nil, fmt.Errorf("read MutatingAdmissionPolicy %s: %w", stampPolicy, err)
	}
	found := policyFlaws("MutatingAdmissionPolicy", stampPolicy, policy.Spec.FailurePolicy, len(policy.Spec.MatchConditions))
	var bindings admissionregistrationv1.MutatingAdmissionPolicyBindingList
	if err := a.Reader.List(ctx, &bindings); err != nil {
		return nil, fmt.Errorf("list MutatingAdmissionPolicyBindings: %w", err)
	}
	var matches []*admissionregistrationv1.MatchResources
	for _, b := range bindings.Items {
		if b.Spec.PolicyName == stampPolicy {
			matches = append(matches, b.Spec.MatchResources)
			found = append(found, bindingFlaws("MutatingAdmissionPolicyBinding", b.Name, b.Spec.MatchResources, in)...)
		}
	}
	if len(matches) == 0 {
		found = append(found, fmt.Sprintf("no MutatingAdmissionPolicyBinding binds %s (its binding %s is missing)", stampPolicy, stampPolicy))
	}
	return found, nil
}

// webhookFlaws says what keeps the stamp webhook from stamping result
// records in; hook reports whether its configuration exists.
func (a *RecordAdmission) webhookFlaws(ctx context.Context, in string) (found []string, hook bool, err error) {
	var cfg admissionregistrationv1.MutatingWebhookConfiguration
	switch err := a.Reader.Get(ctx, types.NamespacedName{Name: stampWebhook}, &cfg); {
	case apierrors.IsNotFound(err), apierrors.IsForbidden(err):
		// Only a release that serves the webhook lets its manager read it.
		return nil, false, nil
	case err != nil:
		return nil, false, fmt.Errorf("read MutatingWebhookConfiguration %s: %w", stampWebhook, err)
	}
	name := "MutatingWebhookConfiguration " + stampWebhook
	covers := false
	for _, w := range cfg.Webhooks {
		for _, r := range w.Rules {
			if slices.Contains(r.APIGroups, v1alpha1.GroupVersion.Group) && slices.Contains(r.Resources, "ptahresultrecords") &&
				(slices.Contains(r.Operations, admissionregistrationv1.Create) || slices.Contains(r.Operations, admissionregistrationv1.OperationAll)) {
				covers = true
			}
		}
		found = append(found, policyFlaws(name+" webhook", w.Name, w.FailurePolicy, len(w.MatchConditions))...)
		if len(w.ClientConfig.CABundle) == 0 {
			found = append(found, fmt.Sprintf("%s webhook %s has no caBundle: the manager that serves it puts its CA there when it starts (is a manager of the release running with --stamp-webhook-configuration=%s?)", name, w.Name, stampWebhook))
		}
		found = append(found, bindingFlaws(name+" webhook", w.Name, &admissionregistrationv1.MatchResources{NamespaceSelector: w.NamespaceSelector, ObjectSelector: w.ObjectSelector}, in)...)
	}
	if !covers {
		found = append(found, fmt.Sprintf("%s has no rule for the CREATE of ptahresultrecords", name))
	}
	if len(found) == 0 {
		found = append(found, fmt.Sprintf("%s looks in place: are the manager's Pods that serve it ready, and does its Service reach them?", name))
	}
	return found, true, nil
}

func policyFlaws(kind, name string, failure *admissionregistrationv1.FailurePolicyType, conditions int) []string {
	var found []string
	if failure != nil && *failure == admissionregistrationv1.Ignore {
		found = append(found, fmt.Sprintf("%s %s has failurePolicy Ignore, so a request it fails on passes untouched", kind, name))
	}
	if conditions > 0 {
		found = append(found, fmt.Sprintf("%s %s has matchConditions, which may skip the request", kind, name))
	}
	return found
}

// bindingFlaws names a binding's matchResources that narrow what it
// applies to (the API server defaults both selectors to the empty one,
// which selects everything).
func bindingFlaws(kind, name string, m *admissionregistrationv1.MatchResources, in string) []string {
	if m == nil {
		return nil
	}
	var narrowed []string
	for what, sel := range map[string]*metav1.LabelSelector{"namespaceSelector": m.NamespaceSelector, "objectSelector": m.ObjectSelector} {
		if sel != nil && (len(sel.MatchLabels) > 0 || len(sel.MatchExpressions) > 0) {
			narrowed = append(narrowed, what)
		}
	}
	if len(m.ResourceRules) > 0 {
		narrowed = append(narrowed, "resourceRules")
	}
	if len(m.ExcludeResourceRules) > 0 {
		narrowed = append(narrowed, "excludeResourceRules")
	}
	if len(narrowed) == 0 {
		return nil
	}
	slices.Sort(narrowed)
	return []string{fmt.Sprintf("%s %s narrows its matchResources (%s), which may leave %s out", kind, name, strings.Join(narrowed, ", "), in)}
}

// admissionNotEnforcing is the error of a record read while record admission is
// not enforcing: the record is not consumed, and the read is retried.
type admissionNotEnforcing struct{ problem string }

func (e *admissionNotEnforcing) Error() string {
	return "record admission is not enforcing, so no result record is consumed: " + e.problem
}

// trustRecords returns an *admissionNotEnforcing when a fresh check of ns says
// record admission is not enforcing there; nil when a is nil (a record
// reader outside the reconcilers, as tests use).
func (a *RecordAdmission) trustRecords(ctx context.Context, ns string) error {
	if a == nil {
		return nil
	}
	if p := a.Verify(ctx, ns); p != "" {
		return &admissionNotEnforcing{problem: p}
	}
	return nil
}

// holdForAdmission records on s that record admission is not enforcing in
// its namespace. It reports whether the condition changed.
func holdForAdmission(s subject, problem string) bool {
	msg := bound(admissionCode+": "+problem, maxConditionMessage)
	if c := meta.FindStatusCondition(*s.SubjectConditions(), v1alpha1.ConditionReconciliationFailed); c != nil &&
		c.Status == metav1.ConditionTrue && c.Reason == v1alpha1.ReasonConfigurationError && c.Message == msg && c.ObservedGeneration == s.GetGeneration() {
		return false
	}
	setCondition(s, v1alpha1.ConditionReconciliationFailed, metav1.ConditionTrue, v1alpha1.ReasonConfigurationError, msg)
	return true
}

// admissionLapsed reports whether s records that record admission was not
// enforcing (holdForAdmission).
func admissionLapsed(s subject) bool {
	c := meta.FindStatusCondition(*s.SubjectConditions(), v1alpha1.ConditionReconciliationFailed)
	return c != nil && c.Status == metav1.ConditionTrue && c.Reason == v1alpha1.ReasonConfigurationError && strings.HasPrefix(c.Message, admissionCode+": ")
}

// admissionRestored clears the hold on s now that record admission is
// enforcing again. A record under the active claim's name was written
// while nothing proved its stamp, so it is deleted unread (only that one
// record, by UID): the Job's outcome is then read as one that delivered no
// record, and an honest runner still to write its own writes it stamped.
// The caller saves s.
func admissionRestored(ctx context.Context, cl client.Client, api client.Reader, sink eventSink, s subject) error {
	if c := activeOperation(s); c != nil && c.JobName != "" {
		var rec v1alpha1.PtahResultRecord
		err := api.Get(ctx, types.NamespacedName{Namespace: s.GetNamespace(), Name: c.JobName}, &rec)
		switch {
		case apierrors.IsNotFound(err):
		case err != nil:
			return fmt.Errorf("read PtahResultRecord %s/%s written while record admission was not enforcing: %w", s.GetNamespace(), c.JobName, err)
		default:
			err := cl.Delete(ctx, &rec, client.Preconditions{UID: &rec.UID})
			if err != nil && !apierrors.IsNotFound(err) && !apierrors.IsConflict(err) {
				return fmt.Errorf("delete PtahResultRecord %s/%s written while record admission was not enforcing: %w", s.GetNamespace(), c.JobName, err)
			}
			warning(sink, s, v1alpha1.EventResultReadFailed, "ReadResult",
				"%s operation %s: PtahResultRecord %s/%s was created while record admission was not enforcing, so its createdBy (%s) proves nothing; it is deleted unread, and the operation's outcome is read as if it delivered none",
				c.Type, c.JobName, rec.Namespace, rec.Name, describeCreator(rec.CreatedBy))
		}
	}
	setCondition(s, v1alpha1.ConditionReconciliationFailed, metav1.ConditionFalse, v1alpha1.ReasonProgressing,
		fmt.Sprintf("record admission is enforcing again in namespace %s: reconciliation resumes", s.GetNamespace()))
	return nil
}

func activeOperation(s subject) *v1alpha1.ActiveOperation {
	switch o := s.(type) {
	case *v1alpha1.PtahSchema:
		return o.Status.ActiveOperation
	case *v1alpha1.PtahMigration:
		return o.Status.ActiveOperation
	}
	return nil
}

// inNamespace lists the subjects of kind list in ns as requests.
func inNamespace(ctx context.Context, c client.Reader, ns string, list client.ObjectList) []reconcile.Request {
	if err := c.List(ctx, list, client.InNamespace(ns)); err != nil {
		log.FromContext(ctx).Error(err, "list the subjects to wake after record admission changed", "namespace", ns)
		return nil
	}
	items, _ := meta.ExtractList(list)
	var reqs []reconcile.Request
	for _, o := range items {
		if m, err := meta.Accessor(o); err == nil {
			reqs = append(reqs, reconcile.Request{NamespacedName: types.NamespacedName{Namespace: m.GetNamespace(), Name: m.GetName()}})
		}
	}
	return reqs
}
