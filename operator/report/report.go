// Package report defines the JSON document every ptah command prints with
// --json, its stable error codes and the exit code each outcome maps to. The
// operator's runner reads this document from the Job's stdout, so its shape is
// an interface: fields are only ever added, never renamed or removed.
//
// The document, one JSON object on one line:
//
//	{
//	  "apiVersion": "ptah.run/report/v1",
//	  "command":    "schema plan",          // the subcommand that ran
//	  "exitCode":   0,                      // 0 ok, 1 expected negative, 2 error
//	  "result":     {...},                  // command-specific, present when known
//	  "error":      {"code": "stale_plan",  // present only when exitCode is 2
//	                 "message": "..."}
//	}
//
// A result is still filled in when it says why the command failed (for
// example the policy findings of "oci verify", or the versions a partial
// "migrations up" committed).
package report

import (
	"encoding/json"
	"errors"
	"fmt"
	"io"
)

// APIVersion names the shape of the document; it changes only if a field
// changes meaning.
const APIVersion = "ptah.run/report/v1"

// Code is a stable, machine-readable error code.
type Code string

// The error codes. Callers match on these, never on messages.
const (
	// Usage: a flag or argument is missing or malformed.
	Usage Code = "usage"
	// Connection: the database or registry could not be reached.
	Connection Code = "connection"
	// ConnectionLost: an established database session stopped answering,
	// or was reset, mid-operation (a partition, a server gone), as opposed
	// to a connection that was refused or never made.
	ConnectionLost Code = "connection_lost"
	// OutcomeUnknown: a write's session ended (lost, or ended by the
	// server) after it sent what commits a change (a COMMIT, or a
	// statement that commits on its own) and before the server answered:
	// the change may or may not have committed, and only a read of the
	// database says which.
	OutcomeUnknown Code = "outcome_unknown"
	// Auth: the database or registry refused the credentials.
	Auth Code = "auth"
	// Permission: the database role may not do what the command needs.
	Permission Code = "permission"
	// Parse: an SQL file, plan file or policy file could not be read.
	Parse Code = "parse"
	// NotFound: the artifact, tag or digest does not exist.
	NotFound Code = "not_found"
	// ArtifactType: the artifact is not of the kind the command reads.
	ArtifactType Code = "artifact_type"
	// PolicyRefused: the artifact breaks the verification policy.
	PolicyRefused Code = "policy_refused"
	// ProtectedTable: the plan would touch a protected table.
	ProtectedTable Code = "protected_table"
	// UnmanagedObject: the database or the desired schema holds an object of
	// a kind ptah does not plan (the message names the kind and the object)
	// that is not the same on both sides.
	UnmanagedObject Code = "unmanaged_object"
	// UnplannedDifference: the two sides differ in a way ptah has no
	// statement for; an empty plan would claim they are in sync.
	UnplannedDifference Code = "unplanned_difference"
	// StalePlan: the database is no longer in the state the plan was computed from.
	StalePlan Code = "stale_plan"
	// PlanInvalid: the plan file does not match its own digest.
	PlanInvalid Code = "plan_invalid"
	// DestructiveRefused: the plan is destructive and --allow-destructive was not given.
	DestructiveRefused Code = "destructive_refused"
	// ApprovalRequired: apply was run without --auto-approve.
	ApprovalRequired Code = "approval_required"
	// LockTimeout: the advisory lock was not granted within --lock-timeout.
	LockTimeout Code = "lock_timeout"
	// Execution: a statement failed while applying; the transaction was rolled back.
	Execution Code = "execution"
	// HistoryModified: an applied migration's file no longer has the checksum it was applied with.
	HistoryModified Code = "history_modified"
	// HistoryMissing: an applied migration has no file in the directory.
	HistoryMissing Code = "history_missing"
	// OutOfOrder: a pending migration is older than the newest applied one.
	OutOfOrder Code = "out_of_order"
	// Dirty: a migration was started and never recorded as finished.
	Dirty Code = "dirty"
	// NotTransactional: a migration file holds transaction control other than
	// one BEGIN ... COMMIT around the whole file, or mixes a statement
	// PostgreSQL runs only outside a transaction block with other statements.
	NotTransactional Code = "not_transactional"
	// PinnedSetting: a migration file changes a setting PostgreSQL reads
	// SQL text under (standard_conforming_strings, backslash_quote,
	// client_encoding: SET, RESET, SET NAMES, RESET ALL, set_config),
	// which ptah pins to the values its parser reads the files with.
	PinnedSetting Code = "pinned_setting"
	// ChecksumMismatch: the migration files do not match the directory's checksum file.
	ChecksumMismatch Code = "checksum_mismatch"
	// SequenceMismatch: the pending migrations differ from --expect-sequence.
	SequenceMismatch Code = "sequence_mismatch"
	// Internal: anything else; the message says what.
	Internal Code = "internal"
)

// Exit codes.
const (
	ExitOK       = 0
	ExitNegative = 1 // an expected negative answer, such as drift found
	ExitError    = 2
)

// Error is an error with a stable code. Its message never holds a credential.
type Error struct {
	Code    Code   `json:"code"`
	Message string `json:"message"`
}

func (e *Error) Error() string { return string(e.Code) + ": " + e.Message }

// Errorf makes an *Error with a formatted message.
func Errorf(code Code, format string, args ...any) *Error {
	return &Error{Code: code, Message: fmt.Sprintf(format, args...)}
}

// Document is what a command prints.
type Document struct {
	APIVersion string `json:"apiVersion"`
	Command    string `json:"command"`
	ExitCode   int    `json:"exitCode"`
	Result     any    `json:"result,omitempty"`
	Error      *Error `json:"error,omitempty"`
}

// New builds the document for a command's outcome. A nil err with negative
// set gives exit 1; any err gives exit 2, coded Internal unless it is or
// wraps an *Error.
func New(command string, result any, negative bool, err error) Document {
	d := Document{APIVersion: APIVersion, Command: command, Result: result}
	switch {
	case err != nil:
		d.ExitCode = ExitError
		d.Error = AsError(err)
	case negative:
		d.ExitCode = ExitNegative
	}
	return d
}

// AsError returns err as an *Error, coding it Internal if it carries no code.
func AsError(err error) *Error {
	var e *Error
	if errors.As(err, &e) {
		return e
	}
	return &Error{Code: Internal, Message: err.Error()}
}

// Write prints d as one line of JSON.
func (d Document) Write(w io.Writer) error {
	b, err := json.Marshal(d)
	if err != nil {
		return err
	}
	_, err = w.Write(append(b, '\n'))
	return err
}
