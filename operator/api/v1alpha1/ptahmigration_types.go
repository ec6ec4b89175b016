package v1alpha1

import (
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
)

// MigrationsSource is the artifact holding the ordered migration files: a
// directory of NNN_name.up.sql files and their ptah.sum, pushed with
// `ptah migrations push`.
type MigrationsSource struct {
	// OCIRef is the migrations artifact, pinned by digest:
	// oci://host[:port]/repo@sha256:<64 hex> (a tag may precede the digest).
	// A tag alone is refused: a version once applied must never be read
	// from a different artifact by a later run.
	// +kubebuilder:validation:MaxLength=512
	// +kubebuilder:validation:Pattern=`^oci://[A-Za-z0-9]([A-Za-z0-9.-]*[A-Za-z0-9])?(:[0-9]{1,5})?(/[a-z0-9]+((\.|_|__|-+)[a-z0-9]+)*)+(:[A-Za-z0-9_][A-Za-z0-9_.-]{0,127})?@sha256:[a-f0-9]{64}$`
	// +kubebuilder:validation:XValidation:rule="self.matches('@sha256:[a-f0-9]{64}$')",message="must be pinned by digest, oci://HOST/REPOSITORY[:TAG]@sha256:<64 hex digits> (ptah migrations push prints it): a tag alone can be moved to other files"
	// +required
	OCIRef string `json:"ociRef"`
	// RegistryAuthFrom is a Secret of type kubernetes.io/basic-auth (keys
	// username and password) for the registry; omit it for a public registry.
	// +optional
	RegistryAuthFrom *LocalRef `json:"registryAuthFrom,omitempty"`
}

// MigrationPolicy says when pending migrations may be applied.
type MigrationPolicy struct {
	// Apply is when a plan with pending migrations is applied.
	// +kubebuilder:default=OnApproval
	// +optional
	Apply ApplyPolicy `json:"apply,omitempty"`
	// LockTimeout bounds how long Apply waits for the database's advisory
	// lock (1s to 10m).
	// +kubebuilder:default="30s"
	// +kubebuilder:validation:Type=string
	// +kubebuilder:validation:MaxLength=32
	// +kubebuilder:validation:Pattern=`^([0-9]+(\.[0-9]+)?(ms|s|m|h))+$`
	// +kubebuilder:validation:XValidation:rule="duration(self) >= duration('1s') && duration(self) <= duration('10m')",message="must be between 1s and 10m"
	// +optional
	LockTimeout *metav1.Duration `json:"lockTimeout,omitempty"`
}

// TargetVersionLatest applies every migration of the artifact.
const TargetVersionLatest = "latest"

// PtahMigrationSpec declares the migrations a database should have applied
// and how the operator may apply them.
type PtahMigrationSpec struct {
	// +required
	Target Target `json:"target"`
	// +required
	Migrations MigrationsSource `json:"migrations"`
	// +kubebuilder:default={}
	// +optional
	Policy MigrationPolicy `json:"policy,omitempty"`
	// TargetVersion is the last version to apply: latest, or a version
	// number of the artifact. Versions above it stay pending.
	// +kubebuilder:default=latest
	// +kubebuilder:validation:MaxLength=19
	// +kubebuilder:validation:Pattern=`^(latest|[1-9][0-9]{0,17})$`
	// +optional
	TargetVersion string `json:"targetVersion,omitempty"`
	// Interval is how often the history is read again once in sync (30s to 24h).
	// +kubebuilder:default="5m"
	// +kubebuilder:validation:Type=string
	// +kubebuilder:validation:MaxLength=32
	// +kubebuilder:validation:Pattern=`^([0-9]+(\.[0-9]+)?(ms|s|m|h))+$`
	// +kubebuilder:validation:XValidation:rule="duration(self) >= duration('30s') && duration(self) <= duration('24h')",message="must be between 30s and 24h"
	// +optional
	Interval *metav1.Duration `json:"interval,omitempty"`
	// Execution is shared with PtahSchema: the same Jobs, accounts and
	// deadlines. Migrations load no desired SQL, so they have no dev
	// database: a spec naming one is refused rather than silently ignored.
	// +kubebuilder:validation:XValidation:rule="!has(self.devDatabase)",message="a migration loads no desired SQL: execution.devDatabase is PtahSchema's only"
	// +kubebuilder:default={}
	// +optional
	Execution Execution `json:"execution,omitempty"`
	// Suspend stops new operations; one already running finishes.
	// +optional
	Suspend bool `json:"suspend,omitempty"`
}

// RunOutcome is what a migration run did, as read from the database or as a
// person acknowledged it.
// +kubebuilder:validation:Enum=Applied;NotApplied;Partial
type RunOutcome string

const (
	// RunApplied: every version the run was to apply was committed.
	RunApplied RunOutcome = "Applied"
	// RunNotApplied: none was committed.
	RunNotApplied RunOutcome = "NotApplied"
	// RunPartial: versions up to lastCommittedVersion were committed.
	RunPartial RunOutcome = "Partial"
)

// UnresolvedRun is an Apply that ended without establishing what it
// committed. While it is recorded nothing is planned; a reading of the
// database or a PtahMigrationRunAcknowledgment settles it. The manager keeps
// a copy in the operator.ptah.run/unresolved-run annotation, so a restore
// that drops status does not lose it.
type UnresolvedRun struct {
	// Operation is the ID of the Apply operation; an acknowledgment names it.
	// +kubebuilder:validation:MinLength=1
	// +kubebuilder:validation:MaxLength=128
	Operation string `json:"operation"`
	// JobName is the Apply's Job.
	// +kubebuilder:validation:MaxLength=63
	// +optional
	JobName string `json:"jobName,omitempty"`
	// Attempt is the attempt of the operation that ended unresolved.
	// +kubebuilder:validation:Minimum=1
	Attempt int32 `json:"attempt"`
	// FromVersion is the version applied before the run, 0 when none.
	// +kubebuilder:validation:Minimum=0
	FromVersion int64 `json:"fromVersion"`
	// Versions are those the run was to apply, in order.
	// +listType=atomic
	// +kubebuilder:validation:MaxItems=4096
	// +optional
	Versions []int64 `json:"versions,omitempty"`
	// Reason says why the outcome is not known, never a credential.
	// +kubebuilder:validation:MaxLength=4096
	Reason string `json:"reason"`
	// Database names the target by its Secret reference ("Secret NAME key
	// KEY"): the manager never reads the URL, so it never names a host.
	// +kubebuilder:validation:MaxLength=512
	// +optional
	Database string `json:"database,omitempty"`
	// +optional
	Time metav1.Time `json:"time,omitzero"`
}

// MigrationPlanSummary is a compact copy of the current PtahMigrationPlan.
type MigrationPlanSummary struct {
	Name        string `json:"name"`
	Fingerprint string `json:"fingerprint"`
	// +listType=atomic
	// +optional
	Versions []int64 `json:"versions,omitempty"`
}

// PtahMigrationStatus is what the operator last established.
type PtahMigrationStatus struct {
	OperationStatus `json:",inline"`
	// AppliedVersion is the highest version the database's history shows
	// applied, as last read; 0 when none.
	// +optional
	AppliedVersion int64 `json:"appliedVersion,omitempty"`
	// +optional
	Plan *MigrationPlanSummary `json:"plan,omitempty"`
	// +optional
	UnresolvedRun *UnresolvedRun `json:"unresolvedRun,omitempty"`
}

// PtahMigration keeps one database's versioned migrations applied, in order
// and each exactly once.
//
// +kubebuilder:object:root=true
// +kubebuilder:subresource:status
// +kubebuilder:resource:shortName=ptahm,categories=ptah
// +kubebuilder:printcolumn:name="Phase",type=string,JSONPath=`.status.phase`
// +kubebuilder:printcolumn:name="Version",type=integer,JSONPath=`.status.appliedVersion`
// +kubebuilder:printcolumn:name="Unresolved",type=string,JSONPath=`.status.conditions[?(@.type=="UnresolvedRun")].status`
// +kubebuilder:printcolumn:name="Approval",type=string,JSONPath=`.status.conditions[?(@.type=="ApprovalRequired")].reason`
// +kubebuilder:printcolumn:name="InSync",type=string,JSONPath=`.status.conditions[?(@.type=="InSync")].status`
// +kubebuilder:printcolumn:name="Ready",type=string,JSONPath=`.status.conditions[?(@.type=="Ready")].status`
// +kubebuilder:printcolumn:name="Age",type=date,JSONPath=`.metadata.creationTimestamp`
type PtahMigration struct {
	metav1.TypeMeta `json:",inline"`
	// +optional
	metav1.ObjectMeta `json:"metadata,omitempty"`
	// +required
	Spec PtahMigrationSpec `json:"spec"`
	// +optional
	Status PtahMigrationStatus `json:"status,omitempty"`
}

// PtahMigrationList is a list of PtahMigration.
//
// +kubebuilder:object:root=true
type PtahMigrationList struct {
	metav1.TypeMeta `json:",inline"`
	metav1.ListMeta `json:"metadata,omitempty"`
	Items           []PtahMigration `json:"items"`
}

func init() {
	SchemeBuilder.Register(&PtahMigration{}, &PtahMigrationList{})
}
