package v1alpha1

import (
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
)

// ResultSubject names the resource whose operation produced a result.
type ResultSubject struct {
	// +kubebuilder:validation:Enum=PtahSchema;PtahMigration
	Kind string `json:"kind"`
	// +kubebuilder:validation:MinLength=1
	// +kubebuilder:validation:MaxLength=253
	Name string `json:"name"`
}

// PlanResult is a plan as the executor computed it, before the manager
// publishes it as a PtahSchemaPlan.
type PlanResult struct {
	// +kubebuilder:validation:MaxLength=128
	Fingerprint string `json:"fingerprint"`
	// +kubebuilder:validation:MaxLength=128
	BaseFingerprint string `json:"baseFingerprint"`
	// +kubebuilder:validation:MaxLength=128
	DesiredFingerprint string `json:"desiredFingerprint"`
	// +kubebuilder:validation:Pattern=`^sha256:[a-f0-9]{64}$`
	Digest string `json:"digest"`
	// +optional
	Destructive bool `json:"destructive"`
	// +listType=atomic
	// +kubebuilder:validation:MaxItems=64
	// +optional
	Schemas []string `json:"schemas,omitempty"`
	// +listType=atomic
	// +kubebuilder:validation:MaxItems=4096
	// +optional
	Statements []Statement `json:"statements"`
}

// OperationResult holds the fields an operation reports; which ones are set
// depends on the operation type.
type OperationResult struct {
	// ResolvedDigest is what a Resolve found the reference to point at.
	// +kubebuilder:validation:Pattern=`^sha256:[a-f0-9]{64}$`
	// +optional
	ResolvedDigest string `json:"resolvedDigest,omitempty"`
	// Verified is a Verify's verdict.
	// +optional
	Verified *bool `json:"verified,omitempty"`
	// DriftDetected is an Observe's or Plan's verdict on the live schema.
	// +optional
	DriftDetected *bool `json:"driftDetected,omitempty"`
	// Plan is a Plan's output.
	// +optional
	Plan *PlanResult `json:"plan,omitempty"`
	// AppliedPlanFingerprint is the plan an Apply ran.
	// +kubebuilder:validation:MaxLength=128
	// +optional
	AppliedPlanFingerprint string `json:"appliedPlanFingerprint,omitempty"`
	// Migrations is a migration Observe's or Apply's reading of the
	// database's migration history against the artifact.
	// +optional
	Migrations *MigrationResult `json:"migrations,omitempty"`
}

// MigrationStatus is ptah's verdict on a migration history: Pending or
// UpToDate from a reading, Applied, UpToDate, Failed, Partial or Unknown
// from a run.
// +kubebuilder:validation:Enum=UpToDate;Pending;Applied;Failed;Partial;Unknown
type MigrationStatus string

const (
	MigrationUpToDate MigrationStatus = "UpToDate"
	MigrationPending  MigrationStatus = "Pending"
	MigrationApplied  MigrationStatus = "Applied"
	MigrationFailed   MigrationStatus = "Failed"
	MigrationPartial  MigrationStatus = "Partial"
	MigrationUnknown  MigrationStatus = "Unknown"
)

// MigrationResult is what a migration operation established.
type MigrationResult struct {
	Status MigrationStatus `json:"status"`
	// Current is the highest applied version, 0 when none.
	// +kubebuilder:validation:Minimum=0
	Current int64 `json:"current"`
	// HistoryDigest is sha256 over the applied versions and their
	// checksums, as read.
	// +kubebuilder:validation:Pattern=`^sha256:[a-f0-9]{64}$`
	// +optional
	HistoryDigest string `json:"historyDigest,omitempty"`
	// AppliedNow are the versions this run committed, in order.
	// +listType=atomic
	// +kubebuilder:validation:MaxItems=1024
	// +optional
	AppliedNow []int64 `json:"appliedNow,omitempty"`
	// FailedVersion is the version that failed, when one did.
	// +optional
	FailedVersion *int64 `json:"failedVersion,omitempty"`
	// Pending are the versions not yet applied, with their checksums.
	// +listType=atomic
	// +kubebuilder:validation:MaxItems=1024
	// +optional
	Pending []PendingMigration `json:"pending,omitempty"`
}

// OperationError is why an operation failed.
type OperationError struct {
	// Code is machine-readable, e.g. child_exit or protected_table.
	// +kubebuilder:validation:MinLength=1
	// +kubebuilder:validation:MaxLength=64
	Code string `json:"code"`
	// Message in full, e.g. "ptah exited with code 2"; never a credential.
	// +kubebuilder:validation:MaxLength=32768
	Message string `json:"message"`
}

// PtahResultRecordSpec is what a runner reports for one operation.
// +kubebuilder:validation:XValidation:rule="has(self.result) || has(self.error)",message="a record carries a result, an error or both"
type PtahResultRecordSpec struct {
	// +required
	Subject ResultSubject `json:"subject"`
	// OperationID is status.activeOperation.id of the claim the runner ran.
	// +kubebuilder:validation:MinLength=1
	// +kubebuilder:validation:MaxLength=128
	// +required
	OperationID string `json:"operationID"`
	// Digest is status.activeOperation.coordinationDigest of that claim; the
	// manager accepts the record only when both match its active claim.
	// +kubebuilder:validation:MinLength=1
	// +kubebuilder:validation:MaxLength=128
	// +required
	Digest string `json:"digest"`
	// RunnerProtocol is the protocol version the runner spoke.
	// +kubebuilder:validation:MaxLength=32
	// +optional
	RunnerProtocol string `json:"runnerProtocol,omitempty"`
	// ChildExitCode is how ptah exited; absent when it never started.
	// +optional
	ChildExitCode *int32 `json:"childExitCode,omitempty"`
	// +optional
	Result *OperationResult `json:"result,omitempty"`
	// +optional
	Error *OperationError `json:"error,omitempty"`
	// ChildError is ptah's own error from its --json report when ptah failed
	// (e.g. protected_table, policy_refused, stale_plan); Error then says how
	// the child exited.
	// +optional
	ChildError *OperationError `json:"childError,omitempty"`
}

// Creator is who created a result record, stamped by admission from the
// authenticated request (never taken from the client). A runner's token is
// bound to its Pod, so the stamp names the Pod that wrote the record.
type Creator struct {
	// +kubebuilder:validation:MaxLength=512
	Username string `json:"username"`
	// +kubebuilder:validation:MaxLength=256
	// +optional
	UID string `json:"uid,omitempty"`
	// PodName and PodUID come from the service account token's binding
	// (authentication.kubernetes.io/pod-name and pod-uid).
	// +kubebuilder:validation:MaxLength=253
	// +optional
	PodName string `json:"podName,omitempty"`
	// +kubebuilder:validation:MaxLength=64
	// +optional
	PodUID string `json:"podUID,omitempty"`
}

// PtahResultRecord is the durable receipt of one operation's result.
//
// +kubebuilder:object:root=true
// +kubebuilder:resource:categories=ptah
// +kubebuilder:printcolumn:name="Kind",type=string,JSONPath=`.spec.subject.kind`
// +kubebuilder:printcolumn:name="Subject",type=string,JSONPath=`.spec.subject.name`
// +kubebuilder:printcolumn:name="Operation",type=string,JSONPath=`.spec.operationID`
// +kubebuilder:printcolumn:name="Exit",type=integer,JSONPath=`.spec.childExitCode`
// +kubebuilder:printcolumn:name="Error",type=string,JSONPath=`.spec.error.code`
// +kubebuilder:printcolumn:name="Age",type=date,JSONPath=`.metadata.creationTimestamp`
type PtahResultRecord struct {
	metav1.TypeMeta `json:",inline"`
	// +optional
	metav1.ObjectMeta `json:"metadata,omitempty"`
	// +kubebuilder:validation:XValidation:rule="self == oldSelf",message="a result record is immutable"
	// +required
	Spec PtahResultRecordSpec `json:"spec"`
	// CreatedBy is stamped by admission; the manager accepts a record only
	// when it names the operation's own account and a Pod of its Job.
	// +kubebuilder:validation:XValidation:rule="self == oldSelf",message="createdBy is stamped at creation and never changes"
	// +optional
	CreatedBy *Creator `json:"createdBy,omitempty"`
}

// PtahResultRecordList is a list of PtahResultRecord.
//
// +kubebuilder:object:root=true
type PtahResultRecordList struct {
	metav1.TypeMeta `json:",inline"`
	metav1.ListMeta `json:"metadata,omitempty"`
	Items           []PtahResultRecord `json:"items"`
}

func init() {
	SchemeBuilder.Register(&PtahResultRecord{}, &PtahResultRecordList{})
}
