package v1alpha1

import (
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
)

// PendingMigration is one version a plan would apply.
type PendingMigration struct {
	// +kubebuilder:validation:Minimum=1
	Version int64 `json:"version"`
	// +kubebuilder:validation:MinLength=1
	// +kubebuilder:validation:MaxLength=255
	Name string `json:"name"`
	// Checksum is sha256 over the file as pushed; Apply refuses a file that
	// no longer has it.
	// +kubebuilder:validation:Pattern=`^sha256:[a-f0-9]{64}$`
	Checksum string `json:"checksum"`
}

// PtahMigrationPlanSpec is a plan exactly as computed; it never changes.
// +kubebuilder:validation:XValidation:rule="self.pending.all(p, p.version > self.baseVersion)",message="every pending version must be above baseVersion"
// +kubebuilder:validation:XValidation:rule="self.pending.map(p, p.version).isSorted()",message="pending versions must be in ascending order"
type PtahMigrationPlanSpec struct {
	// MigrationRef is the PtahMigration the plan was computed for.
	// +required
	MigrationRef LocalRef `json:"migrationRef"`
	// Fingerprint identifies the plan; the object's name is derived from it
	// and an approval names it.
	// +kubebuilder:validation:MinLength=1
	// +kubebuilder:validation:MaxLength=128
	// +required
	Fingerprint string `json:"fingerprint"`
	// ArtifactDigest is the resolved migrations artifact.
	// +kubebuilder:validation:Pattern=`^sha256:[a-f0-9]{64}$`
	// +required
	ArtifactDigest string `json:"artifactDigest"`
	// BaseVersion is the highest applied version the plan was computed
	// against, 0 when none.
	// +kubebuilder:validation:Minimum=0
	// +optional
	BaseVersion int64 `json:"baseVersion"`
	// HistoryDigest is sha256 over the history read (versions and
	// checksums); a different history invalidates the plan.
	// +kubebuilder:validation:Pattern=`^sha256:[a-f0-9]{64}$`
	// +required
	HistoryDigest string `json:"historyDigest"`
	// Pending are the versions the plan applies, in order.
	// +listType=map
	// +listMapKey=version
	// +kubebuilder:validation:MaxItems=1024
	// +optional
	Pending []PendingMigration `json:"pending"`
}

// PtahMigrationPlan is one immutable plan for a PtahMigration.
//
// +kubebuilder:object:root=true
// +kubebuilder:resource:categories=ptah
// +kubebuilder:printcolumn:name="Migration",type=string,JSONPath=`.spec.migrationRef.name`
// +kubebuilder:printcolumn:name="Base",type=integer,JSONPath=`.spec.baseVersion`
// +kubebuilder:printcolumn:name="Artifact",type=string,JSONPath=`.spec.artifactDigest`,priority=1
// +kubebuilder:printcolumn:name="Age",type=date,JSONPath=`.metadata.creationTimestamp`
type PtahMigrationPlan struct {
	metav1.TypeMeta `json:",inline"`
	// +optional
	metav1.ObjectMeta `json:"metadata,omitempty"`
	// +kubebuilder:validation:XValidation:rule="self == oldSelf",message="a plan is immutable; publish a new one"
	// +required
	Spec PtahMigrationPlanSpec `json:"spec"`
}

// PtahMigrationPlanList is a list of PtahMigrationPlan.
//
// +kubebuilder:object:root=true
type PtahMigrationPlanList struct {
	metav1.TypeMeta `json:",inline"`
	metav1.ListMeta `json:"metadata,omitempty"`
	Items           []PtahMigrationPlan `json:"items"`
}

func init() {
	SchemeBuilder.Register(&PtahMigrationPlan{}, &PtahMigrationPlanList{})
}
