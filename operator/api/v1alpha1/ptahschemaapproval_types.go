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
// create request. Admission (config/admission) overwrites whatever the client
// sent and refuses an object whose approver differs from the requesting user.
// Admission policies cannot see the request's UID; the object's own
// metadata.uid and creationTimestamp, both set by the API server on create,
// identify the request and its time instead.
//
// The stamp never changes; empty fields are left out rather than written
// empty, so an object reads back the same through clients that omit them.
// +kubebuilder:validation:XValidation:rule="self.username == oldSelf.username && has(self.uid) == has(oldSelf.uid) && has(self.groups) == has(oldSelf.groups)",message="approvedBy is stamped at creation and never changes"
type Approver struct {
	// +kubebuilder:validation:MaxLength=512
	Username string `json:"username"`
	// +kubebuilder:validation:MaxLength=256
	// +kubebuilder:validation:XValidation:rule="self == oldSelf",message="approvedBy is stamped at creation and never changes"
	// +optional
	UID string `json:"uid,omitempty"`
	// +listType=atomic
	// +kubebuilder:validation:MaxItems=256
	// +kubebuilder:validation:items:MaxLength=512
	// +kubebuilder:validation:XValidation:rule="self == oldSelf",message="approvedBy is stamped at creation and never changes"
	// +optional
	Groups []string `json:"groups,omitempty"`
}

// PtahSchemaApproval approves one immutable plan of one PtahSchema. Who
// approved is approvedBy; when is metadata.creationTimestamp.
//
// +kubebuilder:object:root=true
// +kubebuilder:resource:categories=ptah
// +kubebuilder:printcolumn:name="Schema",type=string,JSONPath=`.spec.schemaName`
// +kubebuilder:printcolumn:name="Plan",type=string,JSONPath=`.spec.planName`
// +kubebuilder:printcolumn:name="Approver",type=string,JSONPath=`.approvedBy.username`
// +kubebuilder:printcolumn:name="Age",type=date,JSONPath=`.metadata.creationTimestamp`
// +kubebuilder:validation:XValidation:rule="has(self.approvedBy) == has(oldSelf.approvedBy)",message="approvedBy is stamped at creation and never changes"
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
