package v1alpha1

import (
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
)

// PtahSchemaApprovalSpec names exactly the plan a person approves.
type PtahSchemaApprovalSpec struct {
	// SchemaName is the PtahSchema in this namespace.
	// +kubebuilder:validation:MinLength=1
	// +kubebuilder:validation:MaxLength=253
	// +required
	SchemaName string `json:"schemaName"`
	// PlanName is the PtahSchemaPlan approved.
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

// Approver is who created the approval, as the API server authenticated the
// request. Admission (config/admission) overwrites whatever the client sent
// and refuses an object whose approver differs from the requesting user.
type Approver struct {
	Username string `json:"username"`
	// +optional
	UID string `json:"uid,omitempty"`
	// +listType=atomic
	// +optional
	Groups []string `json:"groups,omitempty"`
	// RequestUID is the UID of the create request that stamped this.
	RequestUID string `json:"requestUID"`
}

// PtahSchemaApproval approves one immutable plan of one PtahSchema. When it
// was approved is metadata.creationTimestamp, which the API server sets.
//
// +kubebuilder:object:root=true
// +kubebuilder:resource:categories=ptah
// +kubebuilder:printcolumn:name="Schema",type=string,JSONPath=`.spec.schemaName`
// +kubebuilder:printcolumn:name="Plan",type=string,JSONPath=`.spec.planName`
// +kubebuilder:printcolumn:name="Approver",type=string,JSONPath=`.approvedBy.username`
// +kubebuilder:printcolumn:name="Age",type=date,JSONPath=`.metadata.creationTimestamp`
// +kubebuilder:validation:XValidation:rule="has(self.approvedBy) == has(oldSelf.approvedBy) && (!has(self.approvedBy) || self.approvedBy == oldSelf.approvedBy)",message="approvedBy is stamped at creation and never changes"
type PtahSchemaApproval struct {
	metav1.TypeMeta `json:",inline"`
	// +optional
	metav1.ObjectMeta `json:"metadata,omitempty"`
	// +kubebuilder:validation:XValidation:rule="self == oldSelf",message="an approval is immutable; create a new one"
	// +required
	Spec PtahSchemaApprovalSpec `json:"spec"`
	// ApprovedBy is stamped by admission on create, never taken from the client.
	// +optional
	ApprovedBy *Approver `json:"approvedBy,omitempty"`
}

// PtahSchemaApprovalList is a list of PtahSchemaApproval.
//
// +kubebuilder:object:root=true
type PtahSchemaApprovalList struct {
	metav1.TypeMeta `json:",inline"`
	metav1.ListMeta `json:"metadata,omitempty"`
	Items           []PtahSchemaApproval `json:"items"`
}

func init() {
	SchemeBuilder.Register(&PtahSchemaApproval{}, &PtahSchemaApprovalList{})
}
