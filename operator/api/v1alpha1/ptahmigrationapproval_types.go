package v1alpha1

import (
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
)

// PtahMigrationApprovalSpec names exactly the plan a person approves.
type PtahMigrationApprovalSpec struct {
	// MigrationName is the PtahMigration in this namespace.
	// +kubebuilder:validation:MinLength=1
	// +kubebuilder:validation:MaxLength=253
	// +required
	MigrationName string `json:"migrationName"`
	// PlanName is the PtahMigrationPlan approved.
	// +kubebuilder:validation:MinLength=1
	// +kubebuilder:validation:MaxLength=253
	// +required
	PlanName string `json:"planName"`
	// PlanFingerprint must equal the plan's spec.fingerprint, so an approval
	// written for one plan is never consumed for another.
	// +kubebuilder:validation:MinLength=1
	// +kubebuilder:validation:MaxLength=128
	// +required
	PlanFingerprint string `json:"planFingerprint"`
}

// PtahMigrationApproval approves one immutable plan of one PtahMigration.
// Who approved is approvedBy, stamped by the same admission policies as a
// PtahSchemaApproval's; when is metadata.creationTimestamp.
//
// +kubebuilder:object:root=true
// +kubebuilder:resource:categories=ptah
// +kubebuilder:printcolumn:name="Migration",type=string,JSONPath=`.spec.migrationName`
// +kubebuilder:printcolumn:name="Plan",type=string,JSONPath=`.spec.planName`
// +kubebuilder:printcolumn:name="Approver",type=string,JSONPath=`.approvedBy.username`
// +kubebuilder:printcolumn:name="Age",type=date,JSONPath=`.metadata.creationTimestamp`
// +kubebuilder:validation:XValidation:rule="has(self.approvedBy) == has(oldSelf.approvedBy)",message="approvedBy is stamped at creation and never changes"
type PtahMigrationApproval struct {
	metav1.TypeMeta `json:",inline"`
	// +optional
	metav1.ObjectMeta `json:"metadata,omitempty"`
	// +kubebuilder:validation:XValidation:rule="self == oldSelf",message="an approval is immutable; create a new one"
	// +required
	Spec PtahMigrationApprovalSpec `json:"spec"`
	// ApprovedBy is stamped by admission on create, never taken from the client.
	// +optional
	ApprovedBy *Approver `json:"approvedBy,omitempty"`
}

// PtahMigrationApprovalList is a list of PtahMigrationApproval.
//
// +kubebuilder:object:root=true
type PtahMigrationApprovalList struct {
	metav1.TypeMeta `json:",inline"`
	metav1.ListMeta `json:"metadata,omitempty"`
	Items           []PtahMigrationApproval `json:"items"`
}

func init() {
	SchemeBuilder.Register(&PtahMigrationApproval{}, &PtahMigrationApprovalList{})
}
