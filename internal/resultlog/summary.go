package resultlog

import (
	"bytes"
	"encoding/json"
	"fmt"

	v1alpha1 "ptah.run/operator/operator/api/v1alpha1"
)

// MaxSummary is the kubelet's bound on a container's termination message:
// it keeps the first 4096 bytes of /dev/termination-log and drops the rest.
const MaxSummary = 4096

// Summary is what the runner writes to its Pod's termination message: which
// attempt of which operation it was and what a migration run reported. The
// manager reads it only when the log holds no readable frame, and only for
// an Apply, whose outcome must be established one way or another.
type Summary struct {
	OperationID string `json:"operationID"`
	Digest      string `json:"digest"`
	Attempt     int32  `json:"attempt"`
	// ChildExitCode is ptah's exit code (-1 when it did not run).
	ChildExitCode int `json:"childExitCode"`
	// ErrorCode is the runner's error code, ChildErrorCode ptah's; the
	// messages stay in the frame.
	ErrorCode      string `json:"errorCode,omitempty"`
	ChildErrorCode string `json:"childErrorCode,omitempty"`
	// Migrations is the run's report without its pending list.
	Migrations *v1alpha1.MigrationResult `json:"migrations,omitempty"`
}

// EncodeSummary is the termination message of s: its JSON on one line, then
// the digest of that line, so a message cut short reads as cut short.
func EncodeSummary(s *Summary) ([]byte, error) {
	b, err := json.Marshal(s)
	if err != nil {
		return nil, fmt.Errorf("encode the termination summary of operation %s: %w", s.OperationID, err)
	}
	return append(append(b, '\n'), digest(b)+"\n"...), nil
}

// ErrCutShort is a termination message that is not a whole summary.
type ErrCutShort struct{ Why string }

func (e ErrCutShort) Error() string { return "the termination summary was cut short: " + e.Why }

// ReadSummary reads a termination message EncodeSummary wrote. A message
// whose digest line is missing or does not match is cut short (the kubelet
// truncates at MaxSummary bytes).
func ReadSummary(msg string) (*Summary, error) {
	body, rest, ok := bytes.Cut([]byte(msg), []byte("\n"))
	if !ok {
		return nil, ErrCutShort{fmt.Sprintf("%d bytes and no digest line", len(msg))}
	}
	if got := string(bytes.TrimRight(rest, "\n")); got != digest(body) {
		return nil, ErrCutShort{fmt.Sprintf("%d bytes whose digest line does not match them", len(msg))}
	}
	var s Summary
	dec := json.NewDecoder(bytes.NewReader(body))
	dec.DisallowUnknownFields()
	if err := dec.Decode(&s); err != nil {
		return nil, fmt.Errorf("the termination summary is not one the runner writes: %v", err)
	}
	return &s, nil
}

// SummaryOf is the summary of a record spec the runner produced for the
// given attempt.
func SummaryOf(spec *v1alpha1.PtahResultRecordSpec, attempt int32) *Summary {
	s := &Summary{OperationID: spec.OperationID, Digest: spec.Digest, Attempt: attempt, ChildExitCode: -1}
	if spec.ChildExitCode != nil {
		s.ChildExitCode = int(*spec.ChildExitCode)
	}
	if spec.Error != nil {
		s.ErrorCode = spec.Error.Code
	}
	if spec.ChildError != nil {
		s.ChildErrorCode = spec.ChildError.Code
	}
	if spec.Result != nil && spec.Result.Migrations != nil {
		m := *spec.Result.Migrations
		m.Pending = nil
		s.Migrations = &m
	}
	return s
}
