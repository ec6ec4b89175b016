package v1alpha1

import (
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
)

// Severity says whether a statement deletes data; Hazards say the rest.
// +kubebuilder:validation:Enum=safe;destructive
type Severity string

const (
	// SeveritySafe statements add or widen; they lose nothing.
	SeveritySafe Severity = "safe"
	// SeverityDestructive statements delete data: a table, a column, values
	// rounded by a narrower type.
	SeverityDestructive Severity = "destructive"
)

// Hazard is one thing a statement risks on a table that holds rows and
// serves other sessions.
// +kubebuilder:validation:Enum=deletes-data;may-fail;access-exclusive-lock;rewrites-table;builds-index
type Hazard string

const (
	// HazardDeletesData statements lose rows or values (the statement is
	// destructive).
	HazardDeletesData Hazard = "deletes-data"
	// HazardMayFail statements fail on existing rows that break what they
	// add (SET NOT NULL on a NULL, a unique index over duplicates).
	HazardMayFail Hazard = "may-fail"
	// HazardAccessExclusiveLock statements block every read and write of an
	// existing table until the plan's transaction ends.
	HazardAccessExclusiveLock Hazard = "access-exclusive-lock"
	// HazardRewritesTable statements write a new copy of an existing table.
	HazardRewritesTable Hazard = "rewrites-table"
	// HazardBuildsIndex statements build an index on an existing table
	// while blocking its writes.
	HazardBuildsIndex Hazard = "builds-index"
)

// Statement is one ordered step of a plan.
// +kubebuilder:validation:XValidation:rule="!has(self.hazards) || (self.severity == 'destructive') == ('deletes-data' in self.hazards)",message="severity is destructive exactly when the statement's hazards include deletes-data"
type Statement struct {
	// SQL is the statement as it will run.
	// +kubebuilder:validation:MinLength=1
	// +kubebuilder:validation:MaxLength=65536
	SQL      string   `json:"sql"`
	Severity Severity `json:"severity"`
	// Reason says why the statement is there (and, when destructive, what it
	// loses).
	// +kubebuilder:validation:MaxLength=1024
	// +optional
	Reason string `json:"reason,omitempty"`
	// Hazards are what the statement risks.
	// +listType=set
	// +kubebuilder:validation:MaxItems=5
	// +optional
	Hazards []Hazard `json:"hazards,omitempty"`
	// OutsideTransaction marks a statement that runs on its own, outside
	// the plan's transaction (CREATE INDEX CONCURRENTLY): what ran before it
	// is committed first.
	// +optional
	OutsideTransaction bool `json:"outsideTransaction,omitempty"`
	// Schema, in a plan of several schemas, is the one first on the search
	// path while the statement runs (its unqualified names are that
	// schema's).
	// +kubebuilder:validation:MaxLength=63
	// +optional
	Schema string `json:"schema,omitempty"`
}

// PtahSchemaPlanSpec is a plan exactly as computed; it never changes.
// +kubebuilder:validation:XValidation:rule="self.destructive == self.statements.exists(s, s.severity == 'destructive')",message="destructive must be true exactly when a statement is destructive"
type PtahSchemaPlanSpec struct {
	// SchemaRef is the PtahSchema the plan was computed for.
	// +required
	SchemaRef LocalRef `json:"schemaRef"`
	// Fingerprint identifies the plan; the object's name is derived from it
	// and an approval names it.
	// +kubebuilder:validation:MinLength=1
	// +kubebuilder:validation:MaxLength=128
	// +required
	Fingerprint string `json:"fingerprint"`
	// BaseFingerprint identifies the live schema the plan was computed against.
	// +kubebuilder:validation:MinLength=1
	// +kubebuilder:validation:MaxLength=128
	// +required
	BaseFingerprint string `json:"baseFingerprint"`
	// DesiredFingerprint identifies the desired schema the plan leads to.
	// +kubebuilder:validation:MinLength=1
	// +kubebuilder:validation:MaxLength=128
	// +required
	DesiredFingerprint string `json:"desiredFingerprint"`
	// ArtifactDigest is the resolved artifact the desired schema came from.
	// +kubebuilder:validation:Pattern=`^sha256:[a-f0-9]{64}$`
	// +optional
	ArtifactDigest string `json:"artifactDigest,omitempty"`
	// Digest is sha256 over the statements; readers check it before printing.
	// +kubebuilder:validation:Pattern=`^sha256:[a-f0-9]{64}$`
	// +required
	Digest string `json:"digest"`
	// Destructive is true when any statement is destructive.
	// +optional
	Destructive bool `json:"destructive"`
	// Schemas are the schemas the plan keeps, when not public alone.
	// +listType=atomic
	// +kubebuilder:validation:MaxItems=64
	// +optional
	Schemas []string `json:"schemas,omitempty"`
	// Statements in the order they run.
	// +listType=atomic
	// +kubebuilder:validation:MaxItems=4096
	// +optional
	Statements []Statement `json:"statements"`
}

// PtahSchemaPlan is one immutable plan for a PtahSchema.
//
// +kubebuilder:object:root=true
// +kubebuilder:resource:categories=ptah
// +kubebuilder:printcolumn:name="Schema",type=string,JSONPath=`.spec.schemaRef.name`
// +kubebuilder:printcolumn:name="Destructive",type=boolean,JSONPath=`.spec.destructive`
// +kubebuilder:printcolumn:name="Digest",type=string,JSONPath=`.spec.digest`,priority=1
// +kubebuilder:printcolumn:name="Age",type=date,JSONPath=`.metadata.creationTimestamp`
type PtahSchemaPlan struct {
	metav1.TypeMeta `json:",inline"`
	// +optional
	metav1.ObjectMeta `json:"metadata,omitempty"`
	// +kubebuilder:validation:XValidation:rule="self == oldSelf",message="a plan is immutable; publish a new one"
	// +required
	Spec PtahSchemaPlanSpec `json:"spec"`
}

// PtahSchemaPlanList is a list of PtahSchemaPlan.
//
// +kubebuilder:object:root=true
type PtahSchemaPlanList struct {
	metav1.TypeMeta `json:",inline"`
	metav1.ListMeta `json:"metadata,omitempty"`
	Items           []PtahSchemaPlan `json:"items"`
}

func init() {
	SchemeBuilder.Register(&PtahSchemaPlan{}, &PtahSchemaPlanList{})
}
