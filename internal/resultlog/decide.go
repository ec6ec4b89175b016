package resultlog

import (
	"fmt"
	"strings"

	v1alpha1 "ptah.run/operator/operator/api/v1alpha1"
)

// Claim is what a legacy result must match: the active claim's operation ID,
// coordination digest and attempt, and whether it is an Apply (whose outcome
// must be established; a read-only operation is simply run again).
type Claim struct {
	OperationID string
	Digest      string
	Attempt     int32
	Apply       bool
}

// Verdict is what a legacy read established. Exactly one field is set.
type Verdict struct {
	// Spec is the result to consume, read from the log's frame or, for an
	// Apply whose log held none, from its termination summary (FromSummary).
	Spec        *v1alpha1.PtahResultRecordSpec
	FromSummary bool
	// Unreadable says why a read-only operation's log held no result: the
	// operation is run again.
	Unreadable string
	// Refused says why an Apply's termination summary was not read in place
	// of its log: TerminationSummaryRefused, and the run is unknown.
	Refused string
	// Unknown says why an Apply whose log held no result has no summary to
	// read either: the run is unknown.
	Unknown string
}

// Decide reads a legacy result. log is the container log as read; lost,
// when not empty, says why no log could be read at all (the container and
// its log are gone). summary is the Pod's termination message.
func Decide(log []byte, lost, summary string, c Claim) Verdict {
	why := lost
	var others []string
	if lost == "" {
		s := Read(log, c.OperationID)
		others = s.Others
		switch {
		case len(s.Mine) == 1 && s.Mine[0].Spec.Digest == c.Digest:
			spec := s.Mine[0].Spec
			return Verdict{Spec: &spec}
		case len(s.Mine) == 1:
			why = fmt.Sprintf("its frame for operation %s carries digest %s, not the claim's %s", c.OperationID, s.Mine[0].Spec.Digest, c.Digest)
			others = append(others, c.OperationID+" under digest "+s.Mine[0].Spec.Digest)
		case len(s.Mine) > 1:
			why = fmt.Sprintf("it holds %d frames for operation %s, and one run writes one", len(s.Mine), c.OperationID)
			others = append(others, fmt.Sprintf("%d of operation %s", len(s.Mine), c.OperationID))
		case s.Broken > 0:
			why = fmt.Sprintf("its frame (%d line(s) that begin as one) was cut short or does not digest to what it carries", s.Broken)
		case len(s.Others) > 0:
			why = fmt.Sprintf("it holds no frame of operation %s", c.OperationID)
		default:
			why = "it holds no result frame"
		}
	}
	why = "the log held no readable result: " + why
	if !c.Apply {
		return Verdict{Unreadable: why}
	}
	if len(others) > 0 {
		return Verdict{Refused: fmt.Sprintf("%s; the log holds a different frame (%s), so its Pod's summary is not read in its place", why, strings.Join(others, ", "))}
	}
	if summary == "" {
		return Verdict{Unknown: why + "; its Pod has no termination summary"}
	}
	s, err := ReadSummary(summary)
	switch {
	case err != nil:
		return Verdict{Refused: fmt.Sprintf("%s; %v", why, err)}
	case s.OperationID != c.OperationID || s.Digest != c.Digest || s.Attempt != c.Attempt:
		return Verdict{Refused: fmt.Sprintf("%s; the termination summary belongs to another attempt: it names operation %s attempt %d, and the claim is operation %s attempt %d",
			why, s.OperationID, s.Attempt, c.OperationID, c.Attempt)}
	}
	spec := &v1alpha1.PtahResultRecordSpec{
		OperationID: s.OperationID, Digest: s.Digest, ChildExitCode: ptr(int32(s.ChildExitCode)),
	}
	if s.Migrations != nil {
		spec.Result = &v1alpha1.OperationResult{Migrations: s.Migrations}
	}
	if s.ErrorCode != "" {
		spec.Error = &v1alpha1.OperationError{Code: s.ErrorCode, Message: "read from the termination summary (" + why + ")"}
	}
	if s.ChildErrorCode != "" {
		spec.ChildError = &v1alpha1.OperationError{Code: s.ChildErrorCode, Message: "read from the termination summary"}
	}
	if spec.Result == nil && spec.Error == nil {
		return Verdict{Refused: fmt.Sprintf("%s; the termination summary reports neither a migration run nor an error", why)}
	}
	return Verdict{Spec: spec, FromSummary: true}
}

func ptr[T any](v T) *T { return &v }
