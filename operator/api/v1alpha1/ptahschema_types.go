package v1alpha1

import (
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
)

// Engine names the database engine a target runs.
// +kubebuilder:validation:Enum=postgres
type Engine string

// EnginePostgres is PostgreSQL, the only engine ptah plans for so far.
const EnginePostgres Engine = "postgres"

// ApplyPolicy says when a plan with changes may be applied.
// +kubebuilder:validation:Enum=Never;OnApproval;Always
type ApplyPolicy string

const (
	// ApplyNever plans and reports drift but never changes the database.
	ApplyNever ApplyPolicy = "Never"
	// ApplyOnApproval applies a plan only once a PtahSchemaApproval names it.
	ApplyOnApproval ApplyPolicy = "OnApproval"
	// ApplyAlways applies every plan the policy allows, drift included.
	ApplyAlways ApplyPolicy = "Always"
)

// Phase is where a PtahSchema stands in the pipeline of docs/design.md section 3.
// +kubebuilder:validation:Enum=Pending;Resolving;Verifying;Observing;Planning;ReadyToApply;AwaitingApproval;Blocked;Applying;VerifyingConvergence;InSync;Suspended;Failed
type Phase string

const (
	PhasePending              Phase = "Pending"
	PhaseResolving            Phase = "Resolving"
	PhaseVerifying            Phase = "Verifying"
	PhaseObserving            Phase = "Observing"
	PhasePlanning             Phase = "Planning"
	PhaseReadyToApply         Phase = "ReadyToApply"
	PhaseAwaitingApproval     Phase = "AwaitingApproval"
	PhaseBlocked              Phase = "Blocked"
	PhaseApplying             Phase = "Applying"
	PhaseVerifyingConvergence Phase = "VerifyingConvergence"
	PhaseInSync               Phase = "InSync"
	PhaseSuspended            Phase = "Suspended"
	PhaseFailed               Phase = "Failed"
)

// OperationType names the work one Job does.
// +kubebuilder:validation:Enum=Resolve;Verify;Observe;Plan;Apply;Proof
type OperationType string

const (
	OperationResolve OperationType = "Resolve"
	OperationVerify  OperationType = "Verify"
	OperationObserve OperationType = "Observe"
	OperationPlan    OperationType = "Plan"
	OperationApply   OperationType = "Apply"
	// OperationProof is the fresh plan after an Apply: converged only if empty.
	OperationProof OperationType = "Proof"
)

// SecretKeyRef names one key of a Secret in the resource's namespace. The
// manager only passes the reference on to the Job's Pod; it never reads it.
type SecretKeyRef struct {
	// Name of the Secret.
	// +kubebuilder:validation:MinLength=1
	// +kubebuilder:validation:MaxLength=253
	// +kubebuilder:validation:Pattern=`^[a-z0-9]([-a-z0-9]*[a-z0-9])?(\.[a-z0-9]([-a-z0-9]*[a-z0-9])?)*$`
	// +required
	Name string `json:"name"`
	// Key within the Secret.
	// +kubebuilder:validation:MinLength=1
	// +kubebuilder:validation:MaxLength=253
	// +kubebuilder:validation:Pattern=`^[-._a-zA-Z0-9]+$`
	// +required
	Key string `json:"key"`
}

// LocalRef names an object in the resource's namespace.
type LocalRef struct {
	// +kubebuilder:validation:MinLength=1
	// +kubebuilder:validation:MaxLength=253
	// +kubebuilder:validation:Pattern=`^[a-z0-9]([-a-z0-9]*[a-z0-9])?(\.[a-z0-9]([-a-z0-9]*[a-z0-9])?)*$`
	// +required
	Name string `json:"name"`
}

// Target is the database a PtahSchema keeps.
type Target struct {
	// Engine of the database.
	// +kubebuilder:default=postgres
	// +optional
	Engine Engine `json:"engine,omitempty"`
	// URLFrom is the Secret key holding the database URL. It reaches the Job's
	// Pod only as a secretKeyRef.
	// +required
	URLFrom SecretKeyRef `json:"urlFrom"`
}

// Desired is where the desired schema comes from.
type Desired struct {
	// OCIRef is the schema artifact: oci://host[:port]/repo:tag or
	// oci://host[:port]/repo@sha256:<64 hex> (a tag may precede the digest).
	// +kubebuilder:validation:MaxLength=512
	// +kubebuilder:validation:Pattern=`^oci://[A-Za-z0-9]([A-Za-z0-9.-]*[A-Za-z0-9])?(:[0-9]{1,5})?(/[a-z0-9]+((\.|_|__|-+)[a-z0-9]+)*)+(:[A-Za-z0-9_][A-Za-z0-9_.-]{0,127}(@sha256:[a-f0-9]{64})?|@sha256:[a-f0-9]{64})$`
	// +required
	OCIRef string `json:"ociRef"`
	// RegistryAuthFrom is a Secret of type kubernetes.io/basic-auth (keys
	// username and password) for the registry; omit it for a public registry.
	// +optional
	RegistryAuthFrom *LocalRef `json:"registryAuthFrom,omitempty"`
	// VerificationPolicyFrom is an immutable ConfigMap holding the policy the
	// resolved artifact is verified against.
	// +optional
	VerificationPolicyFrom *LocalRef `json:"verificationPolicyFrom,omitempty"`
}

// IndexPolicy is how a plan builds the indexes of existing tables.
type IndexPolicy string

const (
	IndexesBlocking     IndexPolicy = "Blocking"
	IndexesConcurrently IndexPolicy = "Concurrently"
)

// Policy says what the operator may do with a plan.
type Policy struct {
	// Apply is when a plan with changes is applied.
	// +kubebuilder:default=OnApproval
	// +optional
	Apply ApplyPolicy `json:"apply,omitempty"`
	// AllowDestructive lets a plan that deletes data (drops a table or a
	// column, rounds values into a narrower type) through the gate; without
	// it such a plan is Blocked. Other hazards (may fail, locks, rewrites,
	// index builds) are shown on the plan and do not block it.
	// +optional
	AllowDestructive bool `json:"allowDestructive,omitempty"`
	// Indexes is how indexes of existing tables are built and dropped:
	// Blocking (the default) in the plan's transaction, blocking writes to
	// the table while an index is built; Concurrently with CREATE/DROP INDEX
	// CONCURRENTLY, each outside the transaction, so writes go on (a build
	// that fails leaves an invalid index, which the next plan drops and
	// builds again).
	// +kubebuilder:validation:Enum=Blocking;Concurrently
	// +optional
	Indexes IndexPolicy `json:"indexes,omitempty"`
	// ProtectedTables are tables (table or schema.table) no plan may touch; a
	// plan that would is refused and not published.
	// +listType=set
	// +kubebuilder:validation:MaxItems=256
	// +kubebuilder:validation:items:MaxLength=127
	// +kubebuilder:validation:items:Pattern=`^([A-Za-z_][A-Za-z0-9_$]*\.)?[A-Za-z_][A-Za-z0-9_$]*$`
	// +optional
	ProtectedTables []string `json:"protectedTables,omitempty"`
	// LockTimeout bounds how long Apply waits for a database lock (1s to 10m).
	// +kubebuilder:default="30s"
	// +kubebuilder:validation:Type=string
	// +kubebuilder:validation:MaxLength=32
	// +kubebuilder:validation:Pattern=`^([0-9]+(\.[0-9]+)?(ms|s|m|h))+$`
	// +kubebuilder:validation:XValidation:rule="duration(self) >= duration('1s') && duration(self) <= duration('10m')",message="must be between 1s and 10m"
	// +optional
	LockTimeout *metav1.Duration `json:"lockTimeout,omitempty"`
}

// PodMetadata is what the operation Pod must carry for the namespace's
// admission policies to let it run.
type PodMetadata struct {
	// +optional
	Labels map[string]string `json:"labels,omitempty"`
	// +optional
	Annotations map[string]string `json:"annotations,omitempty"`
}

// Execution shapes the Jobs that do the database work.
// +kubebuilder:validation:XValidation:rule="!has(self.connectTimeout) || !has(self.deadline) || duration(self.connectTimeout) < duration(self.deadline)",message="connectTimeout must be shorter than deadline",fieldPath=".connectTimeout"
type Execution struct {
	// Deadline is each Job's activeDeadlineSeconds (30s to 1h).
	// +kubebuilder:default="10m"
	// +kubebuilder:validation:Type=string
	// +kubebuilder:validation:MaxLength=32
	// +kubebuilder:validation:Pattern=`^([0-9]+(\.[0-9]+)?(ms|s|m|h))+$`
	// +kubebuilder:validation:XValidation:rule="duration(self) >= duration('30s') && duration(self) <= duration('1h')",message="must be between 30s and 1h"
	// +optional
	Deadline *metav1.Duration `json:"deadline,omitempty"`
	// FailureRetryInterval is how long after a failed read-only operation it
	// is tried again (10s to 1h).
	// +kubebuilder:default="1m"
	// +kubebuilder:validation:Type=string
	// +kubebuilder:validation:MaxLength=32
	// +kubebuilder:validation:Pattern=`^([0-9]+(\.[0-9]+)?(ms|s|m|h))+$`
	// +kubebuilder:validation:XValidation:rule="duration(self) >= duration('10s') && duration(self) <= duration('1h')",message="must be between 10s and 1h"
	// +optional
	FailureRetryInterval *metav1.Duration `json:"failureRetryInterval,omitempty"`
	// ConnectTimeout bounds each database connection attempt (1s to 5m).
	// +kubebuilder:default="10s"
	// +kubebuilder:validation:Type=string
	// +kubebuilder:validation:MaxLength=32
	// +kubebuilder:validation:Pattern=`^([0-9]+(\.[0-9]+)?(ms|s|m|h))+$`
	// +kubebuilder:validation:XValidation:rule="duration(self) >= duration('1s') && duration(self) <= duration('5m')",message="must be between 1s and 5m"
	// +optional
	ConnectTimeout *metav1.Duration `json:"connectTimeout,omitempty"`
	// Resources of the Job's container.
	// +optional
	Resources *corev1.ResourceRequirements `json:"resources,omitempty"`
	// ServiceAccountName is an existing ServiceAccount the Job's Pod runs as,
	// for a database that authenticates by workload identity. Its token is
	// never automounted; the operation's result credential (a Role that may
	// only create PtahResultRecords) is bound to it for that operation alone
	// and revoked when it ends. Unset, each operation runs as a
	// ServiceAccount of its own, created and deleted with it. A missing
	// account is ReconciliationFailed=True (ConfigurationError), retried
	// after failureRetryInterval.
	// +kubebuilder:validation:MaxLength=253
	// +kubebuilder:validation:Pattern=`^[a-z0-9]([-a-z0-9]*[a-z0-9])?(\.[a-z0-9]([-a-z0-9]*[a-z0-9])?)*$`
	// +optional
	ServiceAccountName string `json:"serviceAccountName,omitempty"`
	// PodMetadata is added to the operation Pod.
	// +optional
	PodMetadata *PodMetadata `json:"podMetadata,omitempty"`
	// RunnerImage overrides the executor image the manager was configured with.
	// +kubebuilder:validation:MaxLength=512
	// +kubebuilder:validation:Pattern=`^[^\s]+$`
	// +optional
	RunnerImage string `json:"runnerImage,omitempty"`
	// DevDatabase is where Observe, Plan and Proof load the desired SQL to
	// inspect it; it never runs on the target, which they only read, over a
	// read-only session. Unset, each of their Pods runs a throwaway
	// PostgreSQL as a native sidecar from the manager's --dev-database-image.
	// +optional
	DevDatabase *DevDatabase `json:"devDatabase,omitempty"`
}

// DevDatabase is the throwaway PostgreSQL sidecar's image and resources, or
// instead a PostgreSQL server the owner names.
// +kubebuilder:validation:XValidation:rule="!has(self.urlFrom) || (!has(self.image) && !has(self.resources))",message="urlFrom names a server in place of the sidecar: image and resources are the sidecar's; set either urlFrom or those"
type DevDatabase struct {
	// Image of the sidecar, overriding the manager's --dev-database-image.
	// It runs as UID 65532 with a read-only root filesystem and needs sh,
	// initdb, postgres, pg_isready and sleep on PATH and a passwd entry for 65532.
	// +kubebuilder:validation:MaxLength=512
	// +kubebuilder:validation:Pattern=`^[^\s]+$`
	// +optional
	Image string `json:"image,omitempty"`
	// Resources of the sidecar. Its data directory is in memory (an
	// emptyDir of medium Memory, at most 1Gi), which counts toward the
	// sidecar's memory: a limit must leave room for the copied cluster
	// (about 40 MiB) and the desired schema loaded into it.
	// +optional
	Resources *corev1.ResourceRequirements `json:"resources,omitempty"`
	// URLFrom names the Secret key holding the URL of a PostgreSQL server,
	// never the target's (ptah refuses it), as a role with CREATEDB and
	// CREATEROLE: each operation creates a database there and a role owning
	// it (ptah_dev_*, a random password; pg_hba must let it log in to its
	// own database), loads the desired SQL into it as that role and drops
	// both. No sidecar runs then.
	// +optional
	URLFrom *SecretKeyRef `json:"urlFrom,omitempty"`
}

// PtahSchemaSpec declares the schema a database should have and how the
// operator may get it there.
// +kubebuilder:validation:XValidation:rule="!has(self.execution) || !has(self.execution.devDatabase) || !has(self.execution.devDatabase.urlFrom) || self.execution.devDatabase.urlFrom.name != self.target.urlFrom.name || self.execution.devDatabase.urlFrom.key != self.target.urlFrom.key",message="execution.devDatabase.urlFrom is the target's own URL: the desired SQL is loaded on another server",fieldPath=".execution.devDatabase.urlFrom"
type PtahSchemaSpec struct {
	// +required
	Target Target `json:"target"`
	// +required
	Desired Desired `json:"desired"`
	// Schemas are the database schemas ptah keeps as the desired SQL
	// declares them, in the order they are read (public alone when empty).
	// Objects of any other schema are neither planned nor dropped, and
	// desired SQL declaring one is refused. Each listed schema must be
	// created by the desired SQL (CREATE SCHEMA), public excepted.
	// +listType=set
	// +kubebuilder:validation:MaxItems=64
	// +kubebuilder:validation:items:MaxLength=63
	// +kubebuilder:validation:items:Pattern=`^[a-z_][a-z0-9_$]*$`
	// +kubebuilder:validation:XValidation:rule="self.all(s, !s.startsWith('pg_') && s != 'information_schema')",message="pg_* and information_schema are PostgreSQL's own"
	// +optional
	Schemas []string `json:"schemas,omitempty"`
	// +kubebuilder:default={}
	// +optional
	Policy Policy `json:"policy,omitempty"`
	// Interval is how often drift is read again once in sync (30s to 24h).
	// +kubebuilder:default="5m"
	// +kubebuilder:validation:Type=string
	// +kubebuilder:validation:MaxLength=32
	// +kubebuilder:validation:Pattern=`^([0-9]+(\.[0-9]+)?(ms|s|m|h))+$`
	// +kubebuilder:validation:XValidation:rule="duration(self) >= duration('30s') && duration(self) <= duration('24h')",message="must be between 30s and 24h"
	// +optional
	Interval *metav1.Duration `json:"interval,omitempty"`
	// +kubebuilder:default={}
	// +optional
	Execution Execution `json:"execution,omitempty"`
	// Suspend stops new operations; one already running finishes.
	// +optional
	Suspend bool `json:"suspend,omitempty"`
}

// ActiveOperation is the claim written before an operation's Job is created,
// so a restarted manager resumes it instead of starting a second one.
type ActiveOperation struct {
	Type OperationType `json:"type"`
	// ID identifies the operation; the result record must carry it.
	ID string `json:"id"`
	// InputFingerprint is a digest of the inputs the operation was claimed for.
	InputFingerprint string `json:"inputFingerprint"`
	// Attempt counts tries of this operation, from 1.
	// +kubebuilder:validation:Minimum=1
	Attempt int32 `json:"attempt"`
	// JobName is ptah-<op>-<schema>-<16 hex of the claim's digest>.
	JobName string `json:"jobName"`
	// CoordinationDigest is the digest of the claim a result record must match.
	CoordinationDigest string `json:"coordinationDigest"`
	// ExecutionBindingID identifies the execution binding the claim runs under.
	// +optional
	ExecutionBindingID string `json:"executionBindingID,omitempty"`
	// PodTemplateDigest is the admission snapshot: a digest of the Pod
	// template the claim will dispatch. A different template found before
	// dispatch refreshes it once; a second change retires the claim.
	// +optional
	PodTemplateDigest string `json:"podTemplateDigest,omitempty"`
	// SnapshotRefreshed records that the admission snapshot was refreshed.
	// +optional
	SnapshotRefreshed bool `json:"snapshotRefreshed,omitempty"`
	// JobUID is the UID of the Job created for the claim, written once it
	// exists: a claim with a JobUID was dispatched, so a Job found missing
	// later vanished rather than was never made.
	// +kubebuilder:validation:MaxLength=64
	// +optional
	JobUID string `json:"jobUID,omitempty"`
	// Approval is the PtahSchemaApproval an Apply claim consumes. The claim
	// names it before the approval is marked consumed, so no crash between
	// the two writes leaves an approval consumed by no claim.
	// +kubebuilder:validation:MaxLength=253
	// +optional
	Approval string `json:"approval,omitempty"`
	// ThenPlan marks a Resolve that plans in its own Pod after it resolves
	// (and verifies), because whatever it finds a Plan comes next. Such a
	// claim runs under the database lease, as a Plan does.
	// +optional
	ThenPlan bool `json:"thenPlan,omitempty"`
}

// Source is the artifact spec.desired resolved to.
type Source struct {
	// +optional
	ResolvedDigest string `json:"resolvedDigest,omitempty"`
	// +optional
	Verified bool `json:"verified,omitempty"`
	// PolicyDigest is a digest of the verification policy the artifact was
	// verified under; a policy that no longer digests the same invalidates
	// the verification and the plan.
	// +optional
	PolicyDigest string `json:"policyDigest,omitempty"`
}

// PlanSummary is a compact copy of the current PtahSchemaPlan.
type PlanSummary struct {
	Name        string `json:"name"`
	Fingerprint string `json:"fingerprint"`
	Digest      string `json:"digest"`
	// +optional
	Destructive bool `json:"destructive,omitempty"`
	// +optional
	Statements int32 `json:"statements,omitempty"`
}

// Applied is what was last proved applied, written only after a fresh plan at
// the current generation showed no changes.
type Applied struct {
	ArtifactDigest  string `json:"artifactDigest"`
	PlanFingerprint string `json:"planFingerprint"`
}

// ExecutionBinding is what the evidence in status was produced under; a change
// of any field retires it (ExecutionBindingChanged).
type ExecutionBinding struct {
	ExecutorImage          string `json:"executorImage"`
	PtahVersion            string `json:"ptahVersion"`
	RunnerProtocol         string `json:"runnerProtocol"`
	ControllerStateVersion string `json:"controllerStateVersion"`
}

// Failure is the last failure in full; Events carry a bounded copy.
type Failure struct {
	// Code is machine-readable, e.g. child_exit.
	Code string `json:"code"`
	// Message is the whole message, never a credential.
	Message string `json:"message"`
	// +optional
	Operation OperationType `json:"operation,omitempty"`
	// +optional
	Time metav1.Time `json:"time,omitzero"`
}

// PtahSchemaStatus is what the operator last established.
type PtahSchemaStatus struct {
	OperationStatus `json:",inline"`
	// +optional
	Plan *PlanSummary `json:"plan,omitempty"`
	// +optional
	Applied *Applied `json:"applied,omitempty"`
}

// PtahSchema keeps one database's schema where its owner declared it.
//
// +kubebuilder:object:root=true
// +kubebuilder:subresource:status
// +kubebuilder:resource:shortName=ptahs,categories=ptah
// +kubebuilder:printcolumn:name="Phase",type=string,JSONPath=`.status.phase`
// +kubebuilder:printcolumn:name="Digest",type=string,JSONPath=`.status.source.resolvedDigest`
// +kubebuilder:printcolumn:name="Drift",type=string,JSONPath=`.status.conditions[?(@.type=="DriftDetected")].status`
// +kubebuilder:printcolumn:name="Approval",type=string,JSONPath=`.status.conditions[?(@.type=="ApprovalRequired")].reason`
// +kubebuilder:printcolumn:name="InSync",type=string,JSONPath=`.status.conditions[?(@.type=="InSync")].status`
// +kubebuilder:printcolumn:name="Ready",type=string,JSONPath=`.status.conditions[?(@.type=="Ready")].status`
// +kubebuilder:printcolumn:name="Age",type=date,JSONPath=`.metadata.creationTimestamp`
type PtahSchema struct {
	metav1.TypeMeta `json:",inline"`
	// +optional
	metav1.ObjectMeta `json:"metadata,omitempty"`
	// +required
	Spec PtahSchemaSpec `json:"spec"`
	// +optional
	Status PtahSchemaStatus `json:"status,omitempty"`
}

// PtahSchemaList is a list of PtahSchema.
//
// +kubebuilder:object:root=true
type PtahSchemaList struct {
	metav1.TypeMeta `json:",inline"`
	metav1.ListMeta `json:"metadata,omitempty"`
	Items           []PtahSchema `json:"items"`
}

func init() {
	SchemeBuilder.Register(&PtahSchema{}, &PtahSchemaList{})
}
