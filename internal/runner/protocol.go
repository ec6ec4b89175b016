// Package runner is the Job side of the operator: the program an operation's
// Pod runs. It checks the protocol, waits for its operation-bound credential,
// runs ptah as a child and delivers the result as a PtahResultRecord.
//
// This file is the contract between the manager and the runner. The manager
// builds a Job whose one container runs the runner with the environment
// below; the runner answers with exactly one PtahResultRecord. Fields are only
// ever added; a change of meaning bumps ProtocolVersion.
package runner

// ProtocolVersion is spoken by this runner and by the manager built from the
// same tree. A runner that reads another version in EnvProtocol refuses the
// Job before ptah starts (RunnerProtocolMismatch).
const ProtocolVersion = "ptah.run/runner/v2"

// Environment the manager sets on the runner's container.
const (
	// EnvProtocol is the protocol the manager speaks.
	EnvProtocol = "PTAH_RUNNER_PROTOCOL"
	// EnvOperation is the Operation, as JSON.
	EnvOperation = "PTAH_OPERATION"
	// EnvDatabaseURL comes only from a secretKeyRef to spec.target.urlFrom;
	// the manager never reads it. ptah reads it under the same name.
	EnvDatabaseURL = "PTAH_DB_URL"
	// EnvDevURL is the dev database of Observe, Plan and Proof, where ptah
	// loads the desired SQL (never into EnvDatabaseURL's): the sidecar's
	// unix socket, or a secretKeyRef to spec.execution.devDatabase.urlFrom.
	// ptah reads it under the same name; Apply has none.
	EnvDevURL = "PTAH_DEV_URL"
	// Registry credentials, from secretKeyRefs to spec.desired.registryAuthFrom
	// (keys "registry", "username", "password"); ptah reads the same names.
	EnvOCIRegistry = "PTAH_OCI_REGISTRY"
	EnvOCIUsername = "PTAH_OCI_USERNAME"
	EnvOCIPassword = "PTAH_OCI_PASSWORD"
	// EnvPolicy is the verification policy document (from the immutable
	// ConfigMap named by spec.desired.verificationPolicyFrom, key "policy.json").
	EnvPolicy = "PTAH_VERIFICATION_POLICY"
)

// Credential: the Pod runs as a per-operation ServiceAccount whose only
// permissions are to create PtahResultRecords in its namespace and, for an
// Apply, to get the one PtahSchemaPlan it applies (Operation.Plan): the plan
// travels through the API, not the environment, whose variables Linux caps
// at 128 KiB each. Its token is a
// projected serviceAccountToken volume (the automounted token is off) at
// TokenPath, with the cluster CA from the kube-root-ca.crt ConfigMap at
// CAPath. The manager deletes the ServiceAccount, Role and RoleBinding when
// the operation ends, which revokes the token. The runner waits until
// SelfSubjectAccessReview says it may create the record before running ptah.
const (
	TokenPath = "/var/run/secrets/ptah.run/result/token"
	CAPath    = "/var/run/secrets/ptah.run/result/ca.crt"
	// TokenAudience is the projected token's audience: empty, which means
	// the API server's own. The runner presents the token to the API server,
	// and kube-apiserver refuses (401) a token for any audience outside its
	// --api-audiences, so a custom audience such as "ptah.run/result" would
	// make every record undeliverable (internal/jobsim tests this).
	TokenAudience = ""
)

// Operation types, one Job each.
const (
	OpResolve = "resolve" // ptah oci resolve: tag -> digest
	OpVerify  = "verify"  // ptah oci verify against the policy
	OpObserve = "observe" // ptah schema pull + drift: is the database where declared?
	OpPlan    = "plan"    // ptah schema pull + plan
	OpApply   = "apply"   // ptah schema apply of the PtahSchemaPlan Operation.Plan names
	OpProof   = "proof"   // ptah schema pull + plan after an Apply: converged only if empty
	// OpMigrationObserve is ptah migrations pull + status: the database's
	// migration history, its applied checksums verified against the
	// artifact (an edited applied migration is refused), and what is pending.
	OpMigrationObserve = "migration-observe"
	// OpMigrationApply is ptah migrations pull + up of exactly the versions
	// Operation.ExpectSequence names, under the ptah writer lock, each in its
	// own transaction with its history row.
	OpMigrationApply = "migration-apply"
)

// Operation is what one Job does, set by the manager in EnvOperation.
type Operation struct {
	// Type is one of the Op constants.
	Type string `json:"type"`
	// ID identifies the claim (status.activeOperation.id); a record for any
	// other id is ignored by the manager.
	ID string `json:"id"`
	// Digest covers the operation's inputs; the record must carry it back.
	Digest string `json:"digest"`
	// Schema is the subject's namespace/name, for the record's labels;
	// SchemaUID makes the subject the record's owner. Kind is the subject's
	// kind: PtahSchema when empty, or PtahMigration.
	Namespace string `json:"namespace"`
	Schema    string `json:"schema"`
	SchemaUID string `json:"schemaUID,omitempty"`
	Kind      string `json:"kind,omitempty"`
	// RecordName is the name the PtahResultRecord must have.
	RecordName string `json:"recordName"`
	// OCIRef is the artifact: a tag for Resolve, a digest-pinned reference otherwise.
	OCIRef    string `json:"ociRef,omitempty"`
	PlainHTTP bool   `json:"plainHTTP,omitempty"`
	// Verify, on a Resolve, checks what the tag names against the policy in
	// EnvPolicy in the same inspection, so the verdict is about the digest
	// reported and no Verify Pod follows. A runner that does not know the
	// field resolves only, and the manager then claims a Verify.
	Verify bool `json:"verify,omitempty"`
	// ThenPlan, on a Resolve of a schema no fresh plan has proved, plans in
	// the same Pod from the digest just resolved (and, under a policy,
	// verified), as the Plan that would follow would: the fields a Plan
	// reads (Schemas, ProtectedTables, ConcurrentIndexes, ConnectTimeout)
	// are set, and the Pod has the Plan's dev database. A plan step that
	// fails leaves the Resolve's result whole and without a plan; the
	// manager then claims a Plan, whose failure is reported as any Plan's.
	// A runner that does not know the field reports no plan either.
	ThenPlan bool `json:"thenPlan,omitempty"`
	// ProtectedTables and Exclude are passed to ptah schema plan.
	ProtectedTables []string `json:"protectedTables,omitempty"`
	Exclude         []string `json:"exclude,omitempty"`
	// ConcurrentIndexes is passed to ptah schema plan (spec.policy.indexes
	// Concurrently).
	ConcurrentIndexes bool `json:"concurrentIndexes,omitempty"`
	// Schemas are passed to ptah schema drift and plan (spec.schemas).
	Schemas []string `json:"schemas,omitempty"`
	// Plan and PlanDigest name the PtahSchemaPlan an Apply reads and the
	// digest it must have.
	Plan       string `json:"plan,omitempty"`
	PlanDigest string `json:"planDigest,omitempty"`
	// AllowDestructive and LockTimeout are passed to ptah schema apply;
	// LockTimeout to ptah migrations up, and to a migration Observe that
	// must read the history with no run in progress.
	AllowDestructive bool   `json:"allowDestructive,omitempty"`
	LockTimeout      string `json:"lockTimeout,omitempty"`
	ConnectTimeout   string `json:"connectTimeout,omitempty"`
	// ExpectSequence is the pending versions a migration Apply may apply,
	// in order, as its plan listed them; any other pending set is refused
	// before anything runs.
	ExpectSequence []int64 `json:"expectSequence,omitempty"`
	// TargetVersion, when above 0, is the last version a migration Apply
	// may apply (ptah migrations up --to).
	TargetVersion int64 `json:"targetVersion,omitempty"`
	// Attempt is the claim's attempt; a legacy result's summary names it.
	Attempt int32 `json:"attempt,omitempty"`
	// ResultTransport is how the result is delivered: TransportDurable
	// (empty) or TransportPodLog. The Job records the same in its
	// AnnotationResultTransport, and the manager reads what the Job says.
	ResultTransport string `json:"resultTransport,omitempty"`
}

// Result transports. Durable: the runner creates a PtahResultRecord with the
// operation-bound credential. Pod log (its wire name "legacy" kept, since
// recorded Jobs and the manager's flag carry it): the runner needs no
// credential and no API; it writes the record's spec as one frame (package resultlog) as the
// last line of its container log, quoting every other line, and a summary
// of it to TerminationLog, the Pod's termination message. Only operations
// that read nothing through the API can run under it: a schema Apply reads
// its plan, so it is refused there.
const (
	TransportDurable = "durable"
	TransportPodLog  = "legacy"
	// AnnotationResultTransport on a Job names its transport; a Job without
	// it (made before the annotation existed) is durable.
	AnnotationResultTransport = "operator.ptah.run/result-transport"
	// TerminationLog is where the kubelet reads a container's termination
	// message (terminationMessagePath's default).
	TerminationLog = "/dev/termination-log"
)

// Result is what the runner reports in the PtahResultRecord's spec.
type Result struct {
	Protocol string `json:"protocol"`
	// OperationID and Digest echo the Operation.
	OperationID string `json:"operationID"`
	Digest      string `json:"digest"`
	Type        string `json:"type"`
	// ChildExitCode is ptah's exit code (-1 when ptah did not run).
	ChildExitCode int `json:"childExitCode"`
	// Report is ptah's --json report of the last command run, verbatim.
	Report []byte `json:"report,omitempty"`
	// Error is set when the operation failed. When ptah exited 2 it is
	// {"child_exit", "ptah exited with code 2"} (the status message a reader
	// sees is "child_exit: ptah exited with code 2"); ptah's own error code and
	// message stay in Report, which the manager records in full on status.
	// Exit 1 (an expected negative such as drift) is a result, not an error.
	Error *Error `json:"error,omitempty"`
	// ChildError is ptah's own error {code, message} from its report when it
	// exited 2; the record carries it as spec.childError, and the manager
	// decides on its code (protected_table, policy_refused, stale_plan, ...).
	ChildError *Error `json:"childError,omitempty"`
}

// Error is a failure a machine can match on by Code.
type Error struct {
	Code    string `json:"code"`
	Message string `json:"message"`
}

// Runner error codes (ptah's own codes pass through unchanged).
const (
	ErrProtocolMismatch = "protocol_mismatch"
	ErrChildExit        = "child_exit"
	ErrCredential       = "credential"
	ErrOperation        = "operation"
)

// Labels the runner puts on the PtahResultRecord, so the manager can find a
// schema's records and an operation's record without reading them all.
const (
	LabelSchema    = "operator.ptah.run/schema"
	LabelOperation = "operator.ptah.run/operation"
	LabelMigration = "operator.ptah.run/migration"
)

// How the runner's process exits. The record, never the Job's condition,
// says how the operation went: a Job that completed delivered its record
// (whatever the operation's outcome); a Job that failed delivered none, and
// the manager need not wait for one.
const (
	ExitDelivered   = 0
	ExitUndelivered = 1
)

// UndeliveredPrefix begins the termination message of a durable runner that
// exits ExitUndelivered; the rest says what failed (the credential wait or
// the record's creation), so the manager can name the failed delivery
// without reading a container log.
const UndeliveredPrefix = "ptah-runner: no PtahResultRecord delivered: "
