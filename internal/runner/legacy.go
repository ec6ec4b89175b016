package runner

import (
	"context"
	"fmt"
	"io"
	"os"

	"ptah.run/operator/internal/resultlog"
)

// runLegacy runs op under the legacy result transport: no credential, no
// API, the result framed as the last line of the log and summarized in the
// termination message. Every other line goes through a resultlog.Quote:
// ptah's stderr carries text the migrations' SQL chose (an exception's
// message), and none of it may begin a frame. ptah's stderr must therefore
// never be the container's stderr itself: exec hands a child an *os.File
// as is, and the Quote makes it a pipe the runner copies.
func runLegacy(ctx context.Context, cfg Config, env map[string]string, op *Operation, out *Outcome) (*Outcome, error) {
	raw := cfg.Log
	q := resultlog.NewQuote(raw)
	cfg.Log = q
	if out.Error != nil {
		fmt.Fprintf(cfg.Log, "runner: refusing operation %s: %s: %s\n", op.ID, out.Error.Code, out.Error.Message)
	} else {
		execute(ctx, cfg, env, nil, op, out)
	}
	if ctx.Err() != nil {
		// Stopped (the Pod deleted, the deadline passed): ptah was killed
		// wherever it was, so nothing it reported establishes the run. No
		// frame and no summary, as a durable runner delivers no record:
		// the manager records an Apply's outcome as unknown.
		fmt.Fprintf(cfg.Log, "runner: stopped before operation %s established its outcome (%v); no result is written\n", op.ID, ctx.Err())
		_ = q.Close()
		return out, fmt.Errorf("operation %s was stopped before it established its outcome: %w", op.ID, ctx.Err())
	}
	spec := record(op, out).Spec
	frame, err := resultlog.Encode(&spec)
	if err != nil {
		return out, err
	}
	summary, err := resultlog.EncodeSummary(resultlog.SummaryOf(&spec, op.Attempt))
	if err != nil {
		return out, err
	}
	// The summary first: a runner killed between the two leaves a summary
	// and no frame, which is the case the summary is there for.
	if err := os.WriteFile(cfg.TerminationLog, summary, 0o644); err != nil {
		fmt.Fprintf(cfg.Log, "runner: write the termination summary %s: %v\n", cfg.TerminationLog, err)
	}
	fmt.Fprintf(cfg.Log, "runner: writing the result of operation %s to this log (ptah exit %d%s)\n", op.ID, out.ChildExitCode, errorSuffix(out.Error))
	if err := q.Close(); err != nil {
		return out, fmt.Errorf("write the log: %w", err)
	}
	if _, err := io.WriteString(raw, frame); err != nil {
		return out, fmt.Errorf("write the result frame of operation %s to the log: %w", op.ID, err)
	}
	return out, nil
}
