package v1alpha1

import corev1 "k8s.io/api/core/v1"

// Kinds an Event may be recorded on (the "Recorded on" column of the Events
// reference).
const (
	KindPtahSchema         = "PtahSchema"
	KindPtahSchemaApproval = "PtahSchemaApproval"
	KindPtahMigration      = "PtahMigration"
)

// Condition types on PtahSchema and PtahMigration status. Readers decide on these, never on
// Event text.
const (
	ConditionInSync               = "InSync"
	ConditionReady                = "Ready"
	ConditionReconciliationFailed = "ReconciliationFailed"
	ConditionApplying             = "Applying"
	ConditionApprovalRequired     = "ApprovalRequired"
	ConditionDriftDetected        = "DriftDetected"
	ConditionArtifactResolved     = "ArtifactResolved"
	ConditionArtifactVerified     = "ArtifactVerified"
	ConditionDatabaseReachable    = "DatabaseReachable"
	ConditionPlanReady            = "PlanReady"
	ConditionSuspended            = "Suspended"
	// Reconciling and Stalled are the kstatus conventions (sigs.k8s.io/cli-utils
	// pkg/kstatus) that Flux, kubectl wait-style tools and Argo CD read:
	// derived from the phase and the conditions above on every status write.
	ConditionReconciling = "Reconciling"
	ConditionStalled     = "Stalled"
	// ConditionUnresolvedRun is True on a PtahMigration while an Apply whose
	// outcome is not established is recorded (status.unresolvedRun).
	ConditionUnresolvedRun = "UnresolvedRun"
)

// Condition reasons. They are CamelCase and stable: they are the interface.
// The comment names the condition and status each is used with.
const (
	// InSync=True, Ready=True: a fresh plan at the current generation had no changes.
	ReasonScopedConverged = "ScopedConverged"
	// InSync=False: the live schema differs from the desired one.
	ReasonChangesPending = "ChangesPending"
	// InSync, Ready and others =Unknown/False while the pipeline runs.
	ReasonProgressing = "Progressing"
	// Ready=False: the policy gate stopped the plan (destructive, Never).
	ReasonPolicyBlocked = "PolicyBlocked"
	// Ready=False: the plan waits for a PtahSchemaApproval.
	ReasonAwaitingApproval = "AwaitingApproval"

	// ReconciliationFailed=True: an operation failed; message is "<code>: <message>".
	ReasonOperationFailed = "OperationFailed"
	// ReconciliationFailed=True: the spec or what it references cannot work.
	ReasonConfigurationError = "ConfigurationError"
	// ReconciliationFailed=True: an Apply ended without proof either way.
	ReasonApplyOutcomeUnknown = "ApplyOutcomeUnknown"
	// ReconciliationFailed=False: the last result was consumed.
	ReasonSucceeded = "Succeeded"

	// Applying=True: an Apply Job runs an approved (or policy-allowed) plan.
	ReasonApprovedPlan = "ApprovedPlan"
	// Applying=False: the Apply Job finished and its result was read.
	ReasonJobCompleted = "JobCompleted"
	// Applying=False: an Apply claim was retired before its Job was created.
	ReasonClaimRetired = "ClaimRetired"

	// ApprovalRequired=False: an approval for the current plan was accepted.
	ReasonApproved = "Approved"
	// ApprovalRequired=False: the policy needs no approval, or nothing to apply.
	ReasonNotRequired = "NotRequired"

	// DriftDetected=True/False.
	ReasonDriftFound = "DriftFound"
	ReasonNoDrift    = "NoDrift"

	// ArtifactResolved=True/False.
	ReasonResolved      = "Resolved"
	ReasonResolveFailed = "ResolveFailed"

	// ArtifactVerified=True/False.
	ReasonVerified            = "Verified"
	ReasonVerificationRefused = "VerificationRefused"
	// ArtifactVerified=True: no verification policy is declared, so none applies.
	ReasonNoPolicy = "NoPolicy"
	// ArtifactVerified=Unknown, PlanReady=False: the verification policy
	// changed since the artifact was verified; it is verified again.
	ReasonPolicyInvalidated = "VerificationPolicyInvalidated"

	// DatabaseReachable=True/False (False on any connection failure).
	ReasonConnected        = "Connected"
	ReasonConnectionFailed = "ConnectionFailed"
	// ReasonConnectionLost: the last operation's session to the database
	// stopped answering mid-operation; it reached the database, then lost it.
	ReasonConnectionLost = "ConnectionLost"

	// PlanReady=True: a plan is published; False with the reasons below.
	ReasonPlanPublished         = "PlanPublished"
	ReasonPlanStale             = "PlanStale"
	ReasonProtectedTableRefused = "ProtectedTableRefused"

	// Reconciling=False and Stalled=False: nothing is in progress, nothing is stuck.
	ReasonIdle       = "Idle"
	ReasonNotStalled = "NotStalled"
	// Suspended=True/False, following spec.suspend.
	ReasonSuspendedBySpec = "SuspendedBySpec"
	ReasonNotSuspended    = "NotSuspended"

	// UnresolvedRun=True: an Apply ended without establishing what it committed.
	ReasonRunOutcomeUnknown = "RunOutcomeUnknown"
	// UnresolvedRun=False: a reading of the history or an acknowledgment settled it.
	ReasonRunSettled = "RunSettled"
	// Stalled=True on a PtahMigration in phase Blocked whose conditions
	// name no refusal (PlanReady and Ready name it when they do).
	ReasonMigrationBlocked = "MigrationBlocked"
	// Ready=False, InSync=False, PlanReady=False on a PtahMigration: the
	// history refuses the artifact, or the artifact holds a migration ptah
	// refuses to run; nothing is planned. Each reason names one refusal.
	//
	// AppliedMigrationModified: an applied version's file no longer has the
	// checksum it was applied with; only a new artifact lifts it.
	ReasonAppliedMigrationModified = "AppliedMigrationModified"
	// AppliedMigrationMissing: an applied version has no file in the artifact.
	ReasonAppliedMigrationMissing = "AppliedMigrationMissing"
	// MigrationOutOfOrder: a pending version is numbered below an applied one.
	ReasonMigrationOutOfOrder = "MigrationOutOfOrder"
	// MigrationRunDirty: a version was started and never recorded as
	// finished (its history row is dirty); a person finds out whether it took
	// effect and fixes or deletes the row.
	ReasonMigrationRunDirty = "MigrationRunDirty"
	// MigrationNotTransactional: a pending migration holds transaction
	// control (other than one BEGIN ... COMMIT around the whole file), or
	// mixes a statement PostgreSQL runs only outside a transaction block
	// (CREATE INDEX CONCURRENTLY, ...) with other statements.
	ReasonMigrationNotTransactional = "MigrationNotTransactional"
	// MigrationPinnedSetting: a pending migration changes a setting
	// PostgreSQL reads SQL text under (standard_conforming_strings,
	// backslash_quote, client_encoding), which ptah pins to the values its
	// parser reads migrations with.
	ReasonMigrationPinnedSetting = "MigrationPinnedSetting"
)

// Event reasons: every row of the Events reference (seed 000). EventReasons
// says which type and kinds each is recorded with.
const (
	EventAdmissionSnapshotRefreshed    = "AdmissionSnapshotRefreshed"
	EventApplyOutcomeUnknown           = "ApplyOutcomeUnknown"
	EventApprovalAccepted              = "ApprovalAccepted"
	EventApprovalRequired              = "ApprovalRequired"
	EventApprovalRevoked               = "ApprovalRevoked"
	EventApprovalStale                 = "ApprovalStale"
	EventArtifactVerificationRefused   = "ArtifactVerificationRefused"
	EventExecutionBindingChanged       = "ExecutionBindingChanged"
	EventLeaseContinuityLost           = "LeaseContinuityLost"
	EventMigrationJobCleanupDeferred   = "MigrationJobCleanupDeferred"
	EventMigrationRunFinished          = "MigrationRunFinished"
	EventMigrationRunUncertain         = "MigrationRunUncertain"
	EventOperationCompleted            = "OperationCompleted"
	EventOperationFailed               = "OperationFailed"
	EventOperationRetried              = "OperationRetried"
	EventOperationStarted              = "OperationStarted"
	EventPlanStale                     = "PlanStale"
	EventPodAdmissionRefused           = "PodAdmissionRefused"
	EventProtectedTableRefused         = "ProtectedTableRefused"
	EventResultCredentialFailed        = "ResultCredentialFailed"
	EventResultReadFailed              = "ResultReadFailed"
	EventResultReadTimedOut            = "ResultReadTimedOut"
	EventRunnerProtocolMismatch        = "RunnerProtocolMismatch"
	EventTargetLockReleaseOwed         = "TargetLockReleaseOwed"
	EventTerminationSummaryRefused     = "TerminationSummaryRefused"
	EventUnresolvedRunAcknowledged     = "UnresolvedRunAcknowledged"
	EventUnresolvedRunDiscarded        = "UnresolvedRunDiscarded"
	EventUnresolvedRunRestored         = "UnresolvedRunRestored"
	EventVerificationPolicyInvalidated = "VerificationPolicyInvalidated"
)

// EventReason is one row of the Events reference.
//
// +kubebuilder:object:generate=false
type EventReason struct {
	Reason string
	// Types are the Event types it may carry; two only when the outcome
	// decides (MigrationRunFinished).
	Types []string
	// On are the kinds it is recorded on.
	On []string
}

var (
	normal       = []string{corev1.EventTypeNormal}
	warning      = []string{corev1.EventTypeWarning}
	normalOrWarn = []string{corev1.EventTypeNormal, corev1.EventTypeWarning}
	onSchema     = []string{KindPtahSchema}
	onMigration  = []string{KindPtahMigration}
	onBoth       = []string{KindPtahSchema, KindPtahMigration}
	onApproval   = []string{KindPtahSchemaApproval}
)

// EventReasons is the Events reference as a table, in its order.
var EventReasons = []EventReason{
	{EventAdmissionSnapshotRefreshed, normal, onBoth},
	{EventApplyOutcomeUnknown, warning, onSchema},
	{EventApprovalAccepted, normal, onSchema},
	{EventApprovalRequired, normal, onSchema},
	{EventApprovalRevoked, warning, onSchema},
	{EventApprovalStale, warning, onApproval},
	{EventArtifactVerificationRefused, warning, onSchema},
	{EventExecutionBindingChanged, warning, onBoth},
	{EventLeaseContinuityLost, warning, onSchema},
	{EventMigrationJobCleanupDeferred, warning, onMigration},
	{EventMigrationRunFinished, normalOrWarn, onMigration},
	{EventMigrationRunUncertain, warning, onMigration},
	{EventOperationCompleted, normal, onSchema},
	{EventOperationFailed, warning, onBoth},
	{EventOperationRetried, warning, onMigration},
	{EventOperationStarted, normal, onBoth},
	{EventPlanStale, warning, onSchema},
	{EventPodAdmissionRefused, warning, onBoth},
	{EventProtectedTableRefused, warning, onSchema},
	{EventResultCredentialFailed, warning, onBoth},
	{EventResultReadFailed, warning, onBoth},
	{EventResultReadTimedOut, warning, onBoth},
	{EventRunnerProtocolMismatch, warning, onBoth},
	{EventTargetLockReleaseOwed, warning, onMigration},
	{EventTerminationSummaryRefused, warning, onMigration},
	{EventUnresolvedRunAcknowledged, normal, onMigration},
	{EventUnresolvedRunDiscarded, warning, onMigration},
	{EventUnresolvedRunRestored, warning, onMigration},
	{EventVerificationPolicyInvalidated, warning, onSchema},
}
