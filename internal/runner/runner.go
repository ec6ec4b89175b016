package runner

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"os"
	"os/exec"
	"strings"
	"time"

	v1alpha1 "ptah.run/operator/operator/api/v1alpha1"
)

// Config is what the runner reads besides the operation itself. The
// executor's main fills it from the container; a simulated kubelet fills it
// with a Pod's environment and the paths it wrote the credential to.
type Config struct {
	// Environ is the container's environment, KEY=VALUE. ptah runs with
	// exactly this environment, so the database URL reaches it only there.
	Environ []string
	// Ptah is the ptah binary; empty means "ptah" on the PATH of Environ's
	// process (exec.LookPath).
	Ptah string
	// TokenPath and CAPath default to the protocol's paths.
	TokenPath, CAPath string
	// WorkDir holds the operation's files (desired SQL, plan, policy);
	// empty means os.TempDir, the writable emptyDir of a read-only Pod.
	WorkDir string
	// CredentialTimeout bounds the wait for the result credential (default 2m).
	CredentialTimeout time.Duration
	// DeliveryTimeout bounds how long the record is sent again while the
	// API server cannot take it (default 3m): a kube-apiserver restart
	// must not lose what an operation did.
	DeliveryTimeout time.Duration
	// Log receives the runner's own lines and ptah's stderr. Neither ever
	// holds the environment's values. Under the legacy transport it is the
	// result channel too: the frame is written to it as is, everything
	// else through a resultlog.Quote.
	Log io.Writer
	// TerminationLog is the termination message file a legacy result's
	// summary is written to (default TerminationLog).
	TerminationLog string
}

// Outcome is what one run produced: the protocol's Result and the fields
// the record carries, read from ptah's report and files.
type Outcome struct {
	Result
	Fields *v1alpha1.OperationResult
	// Record is the PtahResultRecord that was created (nil if none was).
	Record *v1alpha1.PtahResultRecord
}

// Run runs the operation the environment describes and delivers its record.
// The error is non-nil only when no record was delivered; the operation's own
// failure is in the Outcome (and the record).
func Run(ctx context.Context, cfg Config) (*Outcome, error) {
	cfg = cfg.withDefaults()
	env := environment(cfg.Environ)
	out := &Outcome{Result: Result{Protocol: ProtocolVersion, ChildExitCode: -1}}

	op, opErr := parseOperation(env[EnvOperation])
	if op != nil {
		out.OperationID, out.Digest, out.Type = op.ID, op.Digest, op.Type
	}
	// The protocol is checked before anything else the manager sent is
	// trusted, and long before ptah could start.
	switch got := env[EnvProtocol]; {
	case got != ProtocolVersion:
		out.Error = &Error{Code: ErrProtocolMismatch, Message: fmt.Sprintf("the manager speaks runner protocol %q; this runner speaks %q and refused the Job before starting ptah", got, ProtocolVersion)}
	case opErr != nil:
		out.Error = &Error{Code: ErrOperation, Message: opErr.Error()}
	}
	if op != nil && op.ResultTransport == TransportPodLog {
		return runLegacy(ctx, cfg, env, op, out)
	}
	if op == nil || op.RecordName == "" || op.Namespace == "" {
		return out, undelivered(cfg, fmt.Errorf("no record can be delivered: %s names no record and namespace (%v); the manager must set them", EnvOperation, out.Error))
	}
	if out.Error != nil {
		fmt.Fprintf(cfg.Log, "runner: refusing operation %s: %s: %s\n", op.ID, out.Error.Code, out.Error.Message)
	}

	c, err := waitForCredential(ctx, cfg, env, op.Namespace)
	if err != nil {
		return out, undelivered(cfg, err)
	}
	fmt.Fprintf(cfg.Log, "runner: credential ready for %s/%s\n", op.Namespace, op.RecordName)

	if out.Error == nil {
		execute(ctx, cfg, env, c, op, out)
	}
	rec := record(op, out)
	if err := deliver(ctx, cfg, c, rec); err != nil {
		return out, undelivered(cfg, fmt.Errorf("create PtahResultRecord %s/%s: %w", op.Namespace, op.RecordName, err))
	}
	out.Record = rec
	fmt.Fprintf(cfg.Log, "runner: delivered PtahResultRecord %s/%s (ptah exit %d%s)\n", op.Namespace, op.RecordName, out.ChildExitCode, errorSuffix(out.Error))
	return out, nil
}

// undelivered writes why no record was delivered to the termination
// message, where the manager reads it in the Pod's status, and returns err.
func undelivered(cfg Config, err error) error {
	msg := UndeliveredPrefix + err.Error()
	if len(msg) > maxUndelivered {
		msg = msg[:maxUndelivered]
	}
	if werr := os.WriteFile(cfg.TerminationLog, []byte(msg), 0o644); werr != nil {
		fmt.Fprintf(cfg.Log, "runner: write the termination message %s: %v\n", cfg.TerminationLog, werr)
	}
	return err
}

// maxUndelivered bounds the message well under the kubelet's 4096 bytes.
const maxUndelivered = 1024

func (c Config) withDefaults() Config {
	if c.TokenPath == "" {
		c.TokenPath = TokenPath
	}
	if c.CAPath == "" {
		c.CAPath = CAPath
	}
	if c.TerminationLog == "" {
		c.TerminationLog = TerminationLog
	}
	if c.CredentialTimeout == 0 {
		c.CredentialTimeout = 2 * time.Minute
	}
	if c.DeliveryTimeout == 0 {
		c.DeliveryTimeout = 3 * time.Minute
	}
	if c.Log == nil {
		c.Log = io.Discard
	}
	return c
}

func environment(environ []string) map[string]string {
	env := make(map[string]string, len(environ))
	for _, kv := range environ {
		if k, v, ok := strings.Cut(kv, "="); ok {
			env[k] = v
		}
	}
	return env
}

var knownOps = map[string]bool{OpResolve: true, OpVerify: true, OpObserve: true, OpPlan: true, OpApply: true, OpProof: true, OpMigrationObserve: true, OpMigrationApply: true}

// parseOperation returns the operation even when it is unusable, so that a
// refusal can still be delivered to the record it names.
func parseOperation(s string) (*Operation, error) {
	if s == "" {
		return nil, fmt.Errorf("%s is empty", EnvOperation)
	}
	var op Operation
	if err := json.Unmarshal([]byte(s), &op); err != nil {
		return nil, fmt.Errorf("%s is not an operation: %v", EnvOperation, err)
	}
	switch {
	case !knownOps[op.Type]:
		return &op, fmt.Errorf("operation type %q is not one this runner knows", op.Type)
	case op.ID == "" || op.Digest == "" || op.Schema == "":
		return &op, errors.New("the operation has no id, digest or schema")
	case op.Type != OpApply && op.OCIRef == "":
		return &op, fmt.Errorf("a %s operation needs an ociRef", op.Type)
	case op.Kind != "" && op.Kind != v1alpha1.KindPtahSchema && op.Kind != v1alpha1.KindPtahMigration:
		return &op, fmt.Errorf("the operation's subject kind %q is neither %s nor %s", op.Kind, v1alpha1.KindPtahSchema, v1alpha1.KindPtahMigration)
	case op.ThenPlan && op.Type != OpResolve:
		return &op, fmt.Errorf("a %s operation cannot plan after it; only a resolve can", op.Type)
	case op.Type == OpMigrationApply && len(op.ExpectSequence) == 0:
		return &op, errors.New("a migration-apply operation names no versions in expectSequence; an Apply applies exactly what its plan listed")
	case op.ResultTransport != "" && op.ResultTransport != TransportDurable && op.ResultTransport != TransportPodLog:
		return &op, fmt.Errorf("result transport %q is neither %s nor %s", op.ResultTransport, TransportDurable, TransportPodLog)
	case op.ResultTransport == TransportPodLog && op.Type == OpApply:
		return &op, errors.New("a schema Apply reads its plan through the API with the operation's credential, which the legacy result transport does not have; run it with the durable transport")
	}
	return &op, nil
}

func errorSuffix(e *Error) string {
	if e == nil {
		return ""
	}
	return ", " + e.Code + ": " + e.Message
}

// exitCode is the child's exit status, or an error when it did not run.
func exitCode(err error) (int, error) {
	var ee *exec.ExitError
	switch {
	case err == nil:
		return 0, nil
	case errors.As(err, &ee) && ee.Exited():
		return ee.ExitCode(), nil
	default:
		return -1, err
	}
}
