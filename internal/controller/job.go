package controller

import (
	"encoding/json"
	"path"
	"slices"

	batchv1 "k8s.io/api/batch/v1"
	corev1 "k8s.io/api/core/v1"
	rbacv1 "k8s.io/api/rbac/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/utils/ptr"

	"ptah.run/operator/internal/runner"
	v1alpha1 "ptah.run/operator/operator/api/v1alpha1"
	"ptah.run/operator/operator/artifact"
)

// Labels the manager puts on what it creates for an operation.
const (
	LabelManagedBy = "app.kubernetes.io/managed-by"
	ManagedBy      = "ptah-operator"
)

// Pod layout: the result credential is a projected volume at the directory
// of runner.TokenPath; /tmp is the only writable path.
const (
	runnerContainer  = "runner"
	credentialVolume = "result-credential"
	tmpVolume        = "tmp"
	tokenSeconds     = 3600
	runAsUser        = 65532
)

// operationLabels mark an operation's Job, Pod and credential objects.
func operationLabels(s subject, c *v1alpha1.ActiveOperation) map[string]string {
	return map[string]string{
		LabelManagedBy:         ManagedBy,
		subjectLabel(s):        s.GetName(),
		"operator.ptah.run/op": runnerOp(c.Type),
	}
}

func ownedBy(s subject) []metav1.OwnerReference {
	return []metav1.OwnerReference{*metav1.NewControllerRef(s, v1alpha1.GroupVersion.WithKind(s.SubjectKind()))}
}

// credentialName names the per-operation ServiceAccount, Role and RoleBinding.
func credentialName(c *v1alpha1.ActiveOperation) string { return "ptah-op-" + claimHex(c) }

// credential is the operation-bound identity: a ServiceAccount whose Role may
// only create PtahResultRecords and, for an Apply, get the one plan it
// applies. Deleting the three revokes its token. When
// spec.execution.serviceAccountName names the owner's account (for the
// database's workload identity), the Pod runs as that account and the Role is
// bound to it for the operation alone: sa is nil, as the account is not ours
// to create or delete.
func credential(s subject, c *v1alpha1.ActiveOperation, reads ...rbacv1.PolicyRule) (*corev1.ServiceAccount, *rbacv1.Role, *rbacv1.RoleBinding) {
	om := metav1.ObjectMeta{Name: credentialName(c), Namespace: s.GetNamespace(), Labels: operationLabels(s, c), OwnerReferences: ownedBy(s)}
	var sa *corev1.ServiceAccount
	if s.SubjectExecution().ServiceAccountName == "" {
		sa = &corev1.ServiceAccount{ObjectMeta: om, AutomountServiceAccountToken: ptr.To(false)}
	}
	role := &rbacv1.Role{ObjectMeta: om, Rules: []rbacv1.PolicyRule{{
		APIGroups: []string{v1alpha1.GroupVersion.Group},
		Resources: []string{"ptahresultrecords"},
		Verbs:     []string{"create"},
	}}}
	role.Rules = append(role.Rules, reads...)
	rb := &rbacv1.RoleBinding{
		ObjectMeta: om,
		RoleRef:    rbacv1.RoleRef{APIGroup: rbacv1.GroupName, Kind: "Role", Name: om.Name},
		Subjects:   []rbacv1.Subject{{Kind: rbacv1.ServiceAccountKind, Name: podServiceAccount(s, c), Namespace: s.GetNamespace()}},
	}
	return sa, role, rb
}

// podServiceAccount is the account the operation's Pod runs as.
func podServiceAccount(s subject, c *v1alpha1.ActiveOperation) string {
	if n := s.SubjectExecution().ServiceAccountName; n != "" {
		return n
	}
	return credentialName(c)
}

// operation is what the runner is told to do, in runner.EnvOperation.
func operation(s *v1alpha1.PtahSchema, c *v1alpha1.ActiveOperation, plainHTTP bool) runner.Operation {
	op := runner.Operation{
		Type:       runnerOp(c.Type),
		ID:         c.ID,
		Digest:     c.CoordinationDigest,
		Namespace:  s.Namespace,
		Schema:     s.Name,
		SchemaUID:  string(s.UID),
		RecordName: c.JobName,
		OCIRef:     s.Spec.Desired.OCIRef,
		PlainHTTP:  plainHTTP,
	}
	if c.Type != v1alpha1.OperationResolve && s.Status.Source != nil && s.Status.Source.ResolvedDigest != "" {
		op.OCIRef = artifact.Pinned(s.Spec.Desired.OCIRef, s.Status.Source.ResolvedDigest)
	}
	op.ThenPlan = c.ThenPlan && c.Type == v1alpha1.OperationResolve
	if c.Type == v1alpha1.OperationObserve || c.Type == v1alpha1.OperationPlan || c.Type == v1alpha1.OperationProof || op.ThenPlan {
		op.Schemas = s.Spec.Schemas
	}
	op.Verify = c.Type == v1alpha1.OperationResolve && s.Spec.Desired.VerificationPolicyFrom != nil
	switch {
	case c.Type == v1alpha1.OperationPlan, c.Type == v1alpha1.OperationProof, op.ThenPlan:
		op.ProtectedTables = s.Spec.Policy.ProtectedTables
		op.ConcurrentIndexes = s.Spec.Policy.Indexes == v1alpha1.IndexesConcurrently
	case c.Type == v1alpha1.OperationApply:
		if p := s.Status.Plan; p != nil {
			op.Plan, op.PlanDigest = p.Name, p.Digest
		}
		op.AllowDestructive = s.Spec.Policy.AllowDestructive
		if lt := s.Spec.Policy.LockTimeout; lt != nil {
			op.LockTimeout = lt.Duration.String()
		}
	}
	if ct := s.Spec.Execution.ConnectTimeout; ct != nil && (op.ThenPlan || c.Type != v1alpha1.OperationResolve && c.Type != v1alpha1.OperationVerify) {
		op.ConnectTimeout = ct.Duration.String()
	}
	return op
}

// plansAfterResolve: a claim of typ is a Resolve of a schema no fresh plan has
// proved at this generation, whatever artifact, so whatever digest it finds
// a Plan of it comes next (readNext), and the Resolve's Pod makes that plan
// too: a first apply runs one Pod fewer. Where the Resolve could find the
// proved artifact and lead to an Observe, it plans nothing.
func plansAfterResolve(s *v1alpha1.PtahSchema, typ v1alpha1.OperationType) bool {
	return typ == v1alpha1.OperationResolve && !provable(s)
}

// job is the Job the manager dispatches for claim c, as this release builds it.
func (r *SchemaReconciler) job(s *v1alpha1.PtahSchema, c *v1alpha1.ActiveOperation) *batchv1.Job {
	op := operation(s, c, slices.Contains(r.PlainHTTP, registryHost(s.Spec.Desired.OCIRef)))
	var env []corev1.EnvVar
	if pol := s.Spec.Desired.VerificationPolicyFrom; pol != nil && (c.Type == v1alpha1.OperationVerify || op.Verify) {
		env = append(env, corev1.EnvVar{Name: runner.EnvPolicy, ValueFrom: &corev1.EnvVarSource{ConfigMapKeyRef: &corev1.ConfigMapKeySelector{
			LocalObjectReference: corev1.LocalObjectReference{Name: pol.Name}, Key: policyKey,
		}}})
	}
	j := job(s, c, r.Binding.of(s), op, env...)
	r.withDevDatabase(j, s, c)
	return j
}

// job is the Job that runs one operation. Secrets reach it only as
// secretKeyRefs: the manager never reads them.
func job(s subject, c *v1alpha1.ActiveOperation, b v1alpha1.ExecutionBinding, op runner.Operation, extra ...corev1.EnvVar) *batchv1.Job {
	transport := runner.TransportDurable
	if op.ResultTransport == runner.TransportPodLog {
		// A legacy summary names its attempt; a durable record's digest
		// already binds it, so durable Pod templates stay as they were.
		transport, op.Attempt = runner.TransportPodLog, c.Attempt
	}
	opJSON, err := json.Marshal(op)
	if err != nil {
		panic(err) // a plain struct
	}
	env := []corev1.EnvVar{
		{Name: runner.EnvProtocol, Value: b.RunnerProtocol},
		{Name: runner.EnvOperation, Value: string(opJSON)},
		{Name: runner.EnvDatabaseURL, ValueFrom: &corev1.EnvVarSource{SecretKeyRef: &corev1.SecretKeySelector{
			LocalObjectReference: corev1.LocalObjectReference{Name: s.SubjectTarget().URLFrom.Name},
			Key:                  s.SubjectTarget().URLFrom.Key,
		}}},
	}
	if auth := s.SubjectRegistryAuth(); auth != nil {
		ref := func(name, key string, optional bool) corev1.EnvVar {
			return corev1.EnvVar{Name: name, ValueFrom: &corev1.EnvVarSource{SecretKeyRef: &corev1.SecretKeySelector{
				LocalObjectReference: corev1.LocalObjectReference{Name: auth.Name}, Key: key, Optional: ptr.To(optional),
			}}}
		}
		env = append(env,
			ref(runner.EnvOCIRegistry, "registry", true),
			ref(runner.EnvOCIUsername, "username", false),
			ref(runner.EnvOCIPassword, "password", false))
	}
	env = append(env, extra...)

	labels := operationLabels(s, c)
	podMeta := metav1.ObjectMeta{Labels: map[string]string{}, Annotations: map[string]string{}}
	if pm := s.SubjectExecution().PodMetadata; pm != nil {
		for k, v := range pm.Labels {
			podMeta.Labels[k] = v
		}
		for k, v := range pm.Annotations {
			podMeta.Annotations[k] = v
		}
	}
	for k, v := range labels {
		podMeta.Labels[k] = v
	}
	container := corev1.Container{
		Name:            runnerContainer,
		Image:           b.ExecutorImage,
		ImagePullPolicy: corev1.PullIfNotPresent,
		Env:             env,
		SecurityContext: &corev1.SecurityContext{
			ReadOnlyRootFilesystem:   ptr.To(true),
			AllowPrivilegeEscalation: ptr.To(false),
			RunAsNonRoot:             ptr.To(true),
			Capabilities:             &corev1.Capabilities{Drop: []corev1.Capability{"ALL"}},
		},
		VolumeMounts: []corev1.VolumeMount{
			{Name: credentialVolume, MountPath: path.Dir(runner.TokenPath), ReadOnly: true},
			{Name: tmpVolume, MountPath: "/tmp"},
		},
		TerminationMessagePolicy: corev1.TerminationMessageReadFile,
	}
	if r := s.SubjectExecution().Resources; r != nil {
		container.Resources = *r
	}
	j := &batchv1.Job{
		ObjectMeta: metav1.ObjectMeta{Name: c.JobName, Namespace: s.GetNamespace(), Labels: labels, OwnerReferences: ownedBy(s),
			Annotations: map[string]string{runner.AnnotationResultTransport: transport}},
		Spec: batchv1.JobSpec{
			BackoffLimit: ptr.To[int32](0),
			Template: corev1.PodTemplateSpec{
				ObjectMeta: podMeta,
				Spec: corev1.PodSpec{
					RestartPolicy:                corev1.RestartPolicyNever,
					ServiceAccountName:           podServiceAccount(s, c),
					AutomountServiceAccountToken: ptr.To(false),
					EnableServiceLinks:           ptr.To(false),
					SecurityContext: &corev1.PodSecurityContext{
						RunAsNonRoot:   ptr.To(true),
						RunAsUser:      ptr.To[int64](runAsUser),
						RunAsGroup:     ptr.To[int64](runAsUser),
						SeccompProfile: &corev1.SeccompProfile{Type: corev1.SeccompProfileTypeRuntimeDefault},
					},
					Containers: []corev1.Container{container},
					Volumes: []corev1.Volume{
						{Name: credentialVolume, VolumeSource: corev1.VolumeSource{Projected: &corev1.ProjectedVolumeSource{
							Sources: []corev1.VolumeProjection{
								{ServiceAccountToken: &corev1.ServiceAccountTokenProjection{
									Audience: runner.TokenAudience, ExpirationSeconds: ptr.To[int64](tokenSeconds), Path: path.Base(runner.TokenPath),
								}},
								{ConfigMap: &corev1.ConfigMapProjection{
									LocalObjectReference: corev1.LocalObjectReference{Name: "kube-root-ca.crt"},
									Items:                []corev1.KeyToPath{{Key: "ca.crt", Path: path.Base(runner.CAPath)}},
								}},
							},
						}}},
						{Name: tmpVolume, VolumeSource: corev1.VolumeSource{EmptyDir: &corev1.EmptyDirVolumeSource{}}},
					},
				},
			},
		},
	}
	if d := s.SubjectExecution().Deadline; d != nil {
		j.Spec.ActiveDeadlineSeconds = ptr.To(int64(d.Duration.Seconds()))
	}
	return j
}

// policyKey is the ConfigMap key holding the verification policy.
const policyKey = "policy.json"
