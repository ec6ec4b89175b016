package v1alpha1

import (
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
)

// PtahMigrationRunAcknowledgmentSpec is a person's statement of what an
// unresolved run did.
// +kubebuilder:validation:XValidation:rule="self.outcome != 'Partial' || has(self.lastCommittedVersion)",message="a Partial outcome names lastCommittedVersion, the last version the run committed"
// +kubebuilder:validation:XValidation:rule="self.outcome != 'NotApplied' || !has(self.lastCommittedVersion)",message="a NotApplied outcome committed nothing; leave lastCommittedVersion out"
type PtahMigrationRunAcknowledgmentSpec struct {
	// MigrationName is the PtahMigration in this namespace.
	// +kubebuilder:validation:MinLength=1
	// +kubebuilder:validation:MaxLength=253
	// +required
	MigrationName string `json:"migrationName"`
	// Operation is the unresolved run's operation ID, as its status shows it,
	// so a statement about one run never settles another.
	// +kubebuilder:validation:MinLength=1
	// +kubebuilder:validation:MaxLength=128
	// +required
	Operation string `json:"operation"`
	// Outcome is what the run did.
	// +required
	Outcome RunOutcome `json:"outcome"`
	// LastCommittedVersion is the last version the run committed (Partial,
	// and optionally Applied to confirm the last one).
	// +kubebuilder:validation:Minimum=1
	// +optional
	LastCommittedVersion *int64 `json:"lastCommittedVersion,omitempty"`
	// Note says how the person established it.
	// +kubebuilder:validation:MaxLength=1024
	// +optional
	Note string `json:"note,omitempty"`
}

// Acknowledger is who created the acknowledgment, as the API server
// authenticated the create request: admission (config/admission) overwrites
// whatever the client sent and refuses an object whose acknowledger differs
// from the requesting user. The stamp never changes.
// +kubebuilder:validation:XValidation:rule="self.username == oldSelf.username && has(self.uid) == has(oldSelf.uid) && has(self.groups) == has(oldSelf.groups)",message="acknowledgedBy is stamped at creation and never changes"
type Acknowledger struct {
	// +kubebuilder:validation:MaxLength=512
	Username string `json:"username"`
	// +kubebuilder:validation:MaxLength=256
	// +kubebuilder:validation:XValidation:rule="self == oldSelf",message="acknowledgedBy is stamped at creation and never changes"
	// +optional
	UID string `json:"uid,omitempty"`
	// +listType=atomic
	// +kubebuilder:validation:MaxItems=256
	// +kubebuilder:validation:items:MaxLength=512
	// +kubebuilder:validation:XValidation:rule="self == oldSelf",message="acknowledgedBy is stamped at creation and never changes"
	// +optional
	Groups []string `json:"groups,omitempty"`
}

// PtahMigrationRunAcknowledgment settles one unresolved run of one
// PtahMigration. It is immutable: a wrong statement is corrected by
// deleting it before the manager consumes it, or by a new one for a new run.
//
// +kubebuilder:object:root=true
// +kubebuilder:resource:categories=ptah
// +kubebuilder:printcolumn:name="Migration",type=string,JSONPath=`.spec.migrationName`
// +kubebuilder:printcolumn:name="Outcome",type=string,JSONPath=`.spec.outcome`
// +kubebuilder:printcolumn:name="Version",type=integer,JSONPath=`.spec.lastCommittedVersion`
// +kubebuilder:printcolumn:name="By",type=string,JSONPath=`.acknowledgedBy.username`
// +kubebuilder:printcolumn:name="Age",type=date,JSONPath=`.metadata.creationTimestamp`
// +kubebuilder:validation:XValidation:rule="has(self.acknowledgedBy) == has(oldSelf.acknowledgedBy)",message="acknowledgedBy is stamped at creation and never changes"
type PtahMigrationRunAcknowledgment struct {
	metav1.TypeMeta `json:",inline"`
	// +optional
	metav1.ObjectMeta `json:"metadata,omitempty"`
	// +kubebuilder:validation:XValidation:rule="self == oldSelf",message="an acknowledgment is immutable; create a new one"
	// +required
	Spec PtahMigrationRunAcknowledgmentSpec `json:"spec"`
	// AcknowledgedBy is stamped by admission on create, never taken from the
	// client.
	// +optional
	AcknowledgedBy *Acknowledger `json:"acknowledgedBy,omitempty"`
}

// PtahMigrationRunAcknowledgmentList is a list of PtahMigrationRunAcknowledgment.
//
// +kubebuilder:object:root=true
type PtahMigrationRunAcknowledgmentList struct {
	metav1.TypeMeta `json:",inline"`
	metav1.ListMeta `json:"metadata,omitempty"`
	Items           []PtahMigrationRunAcknowledgment `json:"items"`
}

func init() {
	SchemeBuilder.Register(&PtahMigrationRunAcknowledgment{}, &PtahMigrationRunAcknowledgmentList{})
}
