// Package describe renders a PtahSchema and its plans for people, from the
// Kubernetes API alone: it never connects to a database. A plan is printed
// only after its statements are checked against the digest it carries.
package describe

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"strings"
	"text/tabwriter"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"ptah.run/operator/internal/runner"
	v1alpha1 "ptah.run/operator/operator/api/v1alpha1"
)

// Formats a plan prints in.
const (
	FormatText = "text"
	FormatSQL  = "sql"
	FormatJSON = "json"
)

// Reader reads the objects the views are made of.
type Reader struct {
	Client    client.Reader
	Namespace string
}

func (r Reader) schema(ctx context.Context, name string) (*v1alpha1.PtahSchema, error) {
	s := &v1alpha1.PtahSchema{}
	if err := r.Client.Get(ctx, client.ObjectKey{Namespace: r.Namespace, Name: name}, s); err != nil {
		return nil, fmt.Errorf("read ptahschema %s in namespace %s: %w", name, r.Namespace, err)
	}
	return s, nil
}

// Plan prints the schema's current plan, or with applied the plan last
// proved applied, in format. A plan whose statements do not match its digest
// is refused, not printed.
func (r Reader) Plan(ctx context.Context, w io.Writer, name string, applied bool, format string) error {
	if format != FormatText && format != FormatSQL && format != FormatJSON {
		return fmt.Errorf("output format %q: use text, sql or json", format)
	}
	s, p, err := r.checkedPlan(ctx, name, applied)
	if err != nil {
		return err
	}
	switch format {
	case FormatJSON:
		b, err := json.MarshalIndent(p, "", "  ")
		if err != nil {
			return err
		}
		_, err = fmt.Fprintf(w, "%s\n", b)
		return err
	case FormatSQL:
		return writeSQL(w, p)
	}
	return writeText(w, s, p, applied)
}

// CheckedPlan is the plan Plan prints, as the object: the current one, or
// with applied the one last proved applied, refused unless its statements
// match its digest.
func (r Reader) CheckedPlan(ctx context.Context, name string, applied bool) (*v1alpha1.PtahSchemaPlan, error) {
	_, p, err := r.checkedPlan(ctx, name, applied)
	return p, err
}

func (r Reader) checkedPlan(ctx context.Context, name string, applied bool) (*v1alpha1.PtahSchema, *v1alpha1.PtahSchemaPlan, error) {
	s, err := r.schema(ctx, name)
	if err != nil {
		return nil, nil, err
	}
	p, err := r.findPlan(ctx, s, applied)
	if err != nil {
		return nil, nil, err
	}
	if err := CheckDigest(p); err != nil {
		return nil, nil, err
	}
	return s, p, nil
}

// findPlan is the current plan (status.plan.name) or the applied one (the
// schema's plan whose fingerprint status.applied names).
func (r Reader) findPlan(ctx context.Context, s *v1alpha1.PtahSchema, applied bool) (*v1alpha1.PtahSchemaPlan, error) {
	p := &v1alpha1.PtahSchemaPlan{}
	if !applied {
		if s.Status.Plan == nil || s.Status.Plan.Name == "" {
			return nil, fmt.Errorf("ptahschema %s has no current plan (phase %s); see kubectl ptah status %s", s.Name, phaseOf(s), s.Name)
		}
		if err := r.Client.Get(ctx, client.ObjectKey{Namespace: s.Namespace, Name: s.Status.Plan.Name}, p); err != nil {
			return nil, fmt.Errorf("read ptahschemaplan %s, the current plan of ptahschema %s: %w", s.Status.Plan.Name, s.Name, err)
		}
		if p.Spec.SchemaRef.Name != s.Name {
			return nil, fmt.Errorf("ptahschemaplan %s belongs to ptahschema %s, not %s", p.Name, p.Spec.SchemaRef.Name, s.Name)
		}
		return p, nil
	}
	if s.Status.Applied == nil {
		return nil, fmt.Errorf("ptahschema %s has no applied plan yet (phase %s)", s.Name, phaseOf(s))
	}
	var plans v1alpha1.PtahSchemaPlanList
	if err := r.Client.List(ctx, &plans, client.InNamespace(s.Namespace)); err != nil {
		return nil, fmt.Errorf("list ptahschemaplans in namespace %s: %w", s.Namespace, err)
	}
	for i := range plans.Items {
		if q := &plans.Items[i]; q.Spec.SchemaRef.Name == s.Name && q.Spec.Fingerprint == s.Status.Applied.PlanFingerprint {
			return q, nil
		}
	}
	return nil, fmt.Errorf("ptahschema %s last applied plan %s, and no ptahschemaplan with that fingerprint is left in namespace %s", s.Name, s.Status.Applied.PlanFingerprint, s.Namespace)
}

// CheckDigest rebuilds ptah's plan document from the stored plan and checks
// that it digests to what the plan says.
func CheckDigest(p *v1alpha1.PtahSchemaPlan) error {
	_, err := runner.PlanDocument(&v1alpha1.PlanResult{
		Fingerprint: p.Spec.Fingerprint, BaseFingerprint: p.Spec.BaseFingerprint, DesiredFingerprint: p.Spec.DesiredFingerprint,
		Digest: p.Spec.Digest, Destructive: p.Spec.Destructive, Schemas: p.Spec.Schemas, Statements: p.Spec.Statements,
	}, nil)
	if err != nil {
		return fmt.Errorf("ptahschemaplan %s refused, not printed: %w", p.Name, err)
	}
	return nil
}

func writeSQL(w io.Writer, p *v1alpha1.PtahSchemaPlan) error {
	fmt.Fprintf(w, "-- ptahschemaplan %s, digest %s (verified)\n", p.Name, p.Spec.Digest)
	if len(p.Spec.Statements) == 0 {
		fmt.Fprintln(w, "-- no changes")
	}
	for _, s := range p.Spec.Statements {
		fmt.Fprintf(w, "-- %s: %s\n", s.Severity, s.Reason)
		if h := hazardLine(s); h != "" {
			fmt.Fprintf(w, "--   %s\n", h)
		}
		fmt.Fprintf(w, "%s;\n", strings.TrimSuffix(strings.TrimSpace(s.SQL), ";"))
	}
	return nil
}

// hazardLine says what st risks beyond its severity, as ptah schema plan
// prints it; "" when nothing.
func hazardLine(st v1alpha1.Statement) string {
	var parts []string
	for _, h := range st.Hazards {
		parts = append(parts, string(h))
	}
	line := ""
	if len(parts) > 0 {
		line = "hazards: " + strings.Join(parts, ", ")
	}
	if st.OutsideTransaction {
		if line != "" {
			line += "; "
		}
		line += "runs outside the transaction"
	}
	return line
}

func writeText(w io.Writer, s *v1alpha1.PtahSchema, p *v1alpha1.PtahSchemaPlan, applied bool) error {
	which := "current"
	if applied {
		which = "applied"
	}
	destructive := 0
	for _, st := range p.Spec.Statements {
		if st.Severity == v1alpha1.SeverityDestructive {
			destructive++
		}
	}
	tw := tabwriter.NewWriter(w, 0, 4, 2, ' ', 0)
	fmt.Fprintf(tw, "Plan:\t%s (%s plan of ptahschema/%s)\n", p.Name, which, s.Name)
	fmt.Fprintf(tw, "Fingerprint:\t%s\n", p.Spec.Fingerprint)
	fmt.Fprintf(tw, "Digest:\t%s (verified)\n", p.Spec.Digest)
	fmt.Fprintf(tw, "Computed against:\t%s\n", p.Spec.BaseFingerprint)
	fmt.Fprintf(tw, "Leads to:\t%s\n", p.Spec.DesiredFingerprint)
	if p.Spec.ArtifactDigest != "" {
		fmt.Fprintf(tw, "Artifact:\t%s\n", p.Spec.ArtifactDigest)
	}
	fmt.Fprintf(tw, "Statements:\t%d (%d destructive)\n", len(p.Spec.Statements), destructive)
	if err := tw.Flush(); err != nil {
		return err
	}
	for i, st := range p.Spec.Statements {
		fmt.Fprintf(w, "\n%d. [%s] %s\n", i+1, st.Severity, st.Reason)
		if h := hazardLine(st); h != "" {
			fmt.Fprintf(w, "   %s\n", h)
		}
		for _, line := range strings.Split(strings.TrimSpace(st.SQL), "\n") {
			fmt.Fprintf(w, "   %s\n", line)
		}
	}
	return nil
}

// Status prints the schema's phase, conditions with their reasons, current
// plan, last applied state and next reconciliation, as of now.
func (r Reader) Status(ctx context.Context, w io.Writer, name string, now time.Time) error {
	s, err := r.schema(ctx, name)
	if err != nil {
		return err
	}
	st := s.Status
	tw := tabwriter.NewWriter(w, 0, 4, 2, ' ', 0)
	fmt.Fprintf(tw, "PtahSchema:\t%s/%s\n", s.Namespace, s.Name)
	fmt.Fprintf(tw, "Phase:\t%s (observed generation %d of %d)\n", phaseOf(s), st.ObservedGeneration, s.Generation)
	fmt.Fprintf(tw, "Desired:\t%s\n", s.Spec.Desired.OCIRef)
	if src := st.Source; src != nil && src.ResolvedDigest != "" {
		verified := "not verified"
		if src.Verified {
			verified = "verified"
		}
		fmt.Fprintf(tw, "Resolved:\t%s (%s)\n", src.ResolvedDigest, verified)
	}
	if p := st.Plan; p != nil {
		fmt.Fprintf(tw, "Current plan:\t%s: %d statements%s\n", p.Name, p.Statements, map[bool]string{true: ", destructive"}[p.Destructive])
	} else {
		fmt.Fprintf(tw, "Current plan:\tnone\n")
	}
	if a := st.Applied; a != nil {
		fmt.Fprintf(tw, "Last applied:\tartifact %s, plan %s\n", a.ArtifactDigest, a.PlanFingerprint)
	} else {
		fmt.Fprintf(tw, "Last applied:\tnothing proved applied yet\n")
	}
	if op := st.ActiveOperation; op != nil {
		fmt.Fprintf(tw, "Active operation:\t%s (attempt %d), Job %s\n", op.Type, op.Attempt, op.JobName)
	}
	if f := st.LastFailure; f != nil {
		fmt.Fprintf(tw, "Last failure:\t%s: %s\n", f.Code, f.Message)
	}
	if t := st.LastAttemptTime; t != nil {
		fmt.Fprintf(tw, "Last attempt:\t%s (%s ago)\n", t.UTC().Format(time.RFC3339), now.Sub(t.Time).Round(time.Second))
	}
	switch t := st.NextReconciliationTime; {
	case s.Spec.Suspend:
		fmt.Fprintf(tw, "Next reconciliation:\tnone: spec.suspend is true\n")
	case t == nil:
		fmt.Fprintf(tw, "Next reconciliation:\tnot scheduled\n")
	case t.Time.After(now):
		fmt.Fprintf(tw, "Next reconciliation:\t%s (in %s)\n", t.UTC().Format(time.RFC3339), t.Time.Sub(now).Round(time.Second))
	default:
		fmt.Fprintf(tw, "Next reconciliation:\t%s (due)\n", t.UTC().Format(time.RFC3339))
	}
	if err := tw.Flush(); err != nil {
		return err
	}
	fmt.Fprintln(w, "\nConditions:")
	tw = tabwriter.NewWriter(w, 0, 4, 2, ' ', 0)
	fmt.Fprintln(tw, "  TYPE\tSTATUS\tREASON\tAGE\tMESSAGE")
	for _, c := range st.Conditions {
		stale := ""
		if c.ObservedGeneration != s.Generation {
			stale = fmt.Sprintf(" (generation %d)", c.ObservedGeneration)
		}
		fmt.Fprintf(tw, "  %s\t%s\t%s\t%s\t%s%s\n", c.Type, c.Status, c.Reason, age(now, c.LastTransitionTime), oneLine(c.Message), stale)
	}
	return tw.Flush()
}

func phaseOf(s *v1alpha1.PtahSchema) string {
	if s.Status.Phase == "" {
		return "not yet reconciled"
	}
	return string(s.Status.Phase)
}

func age(now time.Time, t metav1.Time) string {
	if t.IsZero() {
		return "-"
	}
	return now.Sub(t.Time).Round(time.Second).String()
}

func oneLine(s string) string {
	return strings.Join(strings.Fields(s), " ")
}
