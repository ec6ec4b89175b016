package describe

import (
	"context"
	"fmt"
	"io"
	"strings"
	"text/tabwriter"
	"time"

	"sigs.k8s.io/controller-runtime/pkg/client"

	v1alpha1 "ptah.run/operator/operator/api/v1alpha1"
)

// Migration prints a PtahMigration's phase, applied version, current plan
// (the pending versions and the checksums they are pinned to), the
// unresolved run when one is recorded with how to acknowledge it, and its
// conditions.
func (r Reader) Migration(ctx context.Context, w io.Writer, name string, now time.Time) error {
	m := &v1alpha1.PtahMigration{}
	if err := r.Client.Get(ctx, client.ObjectKey{Namespace: r.Namespace, Name: name}, m); err != nil {
		return fmt.Errorf("read ptahmigration %s in namespace %s: %w", name, r.Namespace, err)
	}
	st := m.Status
	tw := tabwriter.NewWriter(w, 0, 4, 2, ' ', 0)
	phase := string(st.Phase)
	if phase == "" {
		phase = "not yet reconciled"
	}
	fmt.Fprintf(tw, "PtahMigration:\t%s/%s\n", m.Namespace, m.Name)
	fmt.Fprintf(tw, "Phase:\t%s (observed generation %d of %d)\n", phase, st.ObservedGeneration, m.Generation)
	fmt.Fprintf(tw, "Migrations:\t%s\n", m.Spec.Migrations.OCIRef)
	fmt.Fprintf(tw, "Target version:\t%s\n", m.Spec.TargetVersion)
	if st.AppliedVersion > 0 {
		fmt.Fprintf(tw, "Applied version:\t%d\n", st.AppliedVersion)
	} else {
		fmt.Fprintf(tw, "Applied version:\tnone read yet\n")
	}
	switch {
	case st.UnresolvedRun != nil:
		fmt.Fprintf(tw, "Pending versions:\tnot known until the unresolved run below is settled\n")
	case st.Plan != nil && len(st.Plan.Versions) > 0:
		fmt.Fprintf(tw, "Pending versions:\t%s (plan %s)\n", versionList(st.Plan.Versions), st.Plan.Name)
	default:
		fmt.Fprintf(tw, "Pending versions:\tnone\n")
	}
	if op := st.ActiveOperation; op != nil {
		fmt.Fprintf(tw, "Active operation:\t%s (attempt %d), Job %s\n", op.Type, op.Attempt, op.JobName)
	}
	if f := st.LastFailure; f != nil {
		fmt.Fprintf(tw, "Last failure:\t%s: %s\n", f.Code, oneLine(f.Message))
	}
	if err := tw.Flush(); err != nil {
		return err
	}
	if err := r.migrationPlan(ctx, w, m); err != nil {
		return err
	}
	if u := st.UnresolvedRun; u != nil {
		writeUnresolved(w, m, u)
	}
	fmt.Fprintln(w, "\nConditions:")
	tw = tabwriter.NewWriter(w, 0, 4, 2, ' ', 0)
	fmt.Fprintln(tw, "  TYPE\tSTATUS\tREASON\tAGE\tMESSAGE")
	for _, c := range st.Conditions {
		stale := ""
		if c.ObservedGeneration != m.Generation {
			stale = fmt.Sprintf(" (generation %d)", c.ObservedGeneration)
		}
		fmt.Fprintf(tw, "  %s\t%s\t%s\t%s\t%s%s\n", c.Type, c.Status, c.Reason, age(now, c.LastTransitionTime), oneLine(c.Message), stale)
	}
	return tw.Flush()
}

// MigrationPlan prints only the plan a PtahMigration's status names: its
// pending versions and the checksums they are pinned to.
func (r Reader) MigrationPlan(ctx context.Context, w io.Writer, name string) error {
	m := &v1alpha1.PtahMigration{}
	if err := r.Client.Get(ctx, client.ObjectKey{Namespace: r.Namespace, Name: name}, m); err != nil {
		return fmt.Errorf("read ptahmigration %s in namespace %s: %w", name, r.Namespace, err)
	}
	return r.migrationPlan(ctx, w, m)
}

func versionList(vs []int64) string {
	s := make([]string, len(vs))
	for i, v := range vs {
		s[i] = fmt.Sprint(v)
	}
	return strings.Join(s, ", ")
}

// CurrentMigrationPlan is the plan MigrationPlan prints, as the object.
func (r Reader) CurrentMigrationPlan(ctx context.Context, name string) (*v1alpha1.PtahMigrationPlan, error) {
	m := &v1alpha1.PtahMigration{}
	if err := r.Client.Get(ctx, client.ObjectKey{Namespace: r.Namespace, Name: name}, m); err != nil {
		return nil, fmt.Errorf("read ptahmigration %s in namespace %s: %w", name, r.Namespace, err)
	}
	p, err := r.checkedMigrationPlan(ctx, m)
	if err == nil && p == nil {
		err = fmt.Errorf("ptahmigration %s has no current plan (phase %s); see kubectl ptah migration status %s", m.Name, m.Status.Phase, m.Name)
	}
	return p, err
}

// checkedMigrationPlan reads the plan status.plan names, nil when none: a
// summary that disagrees with the plan it names is refused.
func (r Reader) checkedMigrationPlan(ctx context.Context, m *v1alpha1.PtahMigration) (*v1alpha1.PtahMigrationPlan, error) {
	s := m.Status.Plan
	if s == nil || s.Name == "" {
		return nil, nil
	}
	p := &v1alpha1.PtahMigrationPlan{}
	if err := r.Client.Get(ctx, client.ObjectKey{Namespace: m.Namespace, Name: s.Name}, p); err != nil {
		return nil, fmt.Errorf("read ptahmigrationplan %s named by ptahmigration %s: %w", s.Name, m.Name, err)
	}
	if p.Spec.MigrationRef.Name != m.Name || p.Spec.Fingerprint != s.Fingerprint {
		return nil, fmt.Errorf("ptahmigrationplan %s is for %s with fingerprint %s, not the %s of ptahmigration %s: refusing to print it",
			p.Name, p.Spec.MigrationRef.Name, p.Spec.Fingerprint, s.Fingerprint, m.Name)
	}
	return p, nil
}

// migrationPlan prints the plan status.plan names, read from its object.
func (r Reader) migrationPlan(ctx context.Context, w io.Writer, m *v1alpha1.PtahMigration) error {
	p, err := r.checkedMigrationPlan(ctx, m)
	if err != nil {
		return err
	}
	if p == nil {
		fmt.Fprintln(w, "\nCurrent plan: none")
		return nil
	}
	fmt.Fprintf(w, "\nCurrent plan: %s (from version %d, artifact %s)\n", p.Name, p.Spec.BaseVersion, p.Spec.ArtifactDigest)
	tw := tabwriter.NewWriter(w, 0, 4, 2, ' ', 0)
	fmt.Fprintln(tw, "  VERSION\tNAME\tCHECKSUM")
	for _, v := range p.Spec.Pending {
		fmt.Fprintf(tw, "  %d\t%s\t%s\n", v.Version, v.Name, v.Checksum)
	}
	return tw.Flush()
}

// writeUnresolved says what is unknown about the run and how a person who
// found out settles it.
func writeUnresolved(w io.Writer, m *v1alpha1.PtahMigration, u *v1alpha1.UnresolvedRun) {
	fmt.Fprintf(w, "\nUnresolved run: operation %s (attempt %d, Job %s)\n", u.Operation, u.Attempt, u.JobName)
	fmt.Fprintf(w, "  It was to apply versions %s after version %d", versionList(u.Versions), u.FromVersion)
	if u.Database != "" {
		fmt.Fprintf(w, " to %s", u.Database)
	}
	fmt.Fprintf(w, ", and ended without establishing what it committed: %s\n", oneLine(u.Reason))
	fmt.Fprintln(w, "  Nothing is planned until a reading settles it or a person acknowledges what it did")
	fmt.Fprintf(w, `  (edit the outcome, Applied, NotApplied or Partial, and the last committed version, then run):

kubectl ptah migration acknowledge %s -n %s --outcome Partial --last-committed-version %d --note 'how this was established'

`, m.Name, m.Namespace, lastOr(u))
	// Flush left: a shell ends the here-document only at an EOF line with
	// nothing before it, so the command works pasted as printed.
	fmt.Fprintf(w, `  or, without the plugin (edit outcome and lastCommittedVersion, then paste):

kubectl apply -n %s -f - <<'EOF'
apiVersion: %s
kind: PtahMigrationRunAcknowledgment
metadata:
  name: %s
spec:
  migrationName: %s
  operation: %s
  outcome: Partial          # Applied, NotApplied or Partial
  lastCommittedVersion: %d  # the last version the run committed; leave out for NotApplied
  note: how this was established
EOF
`, m.Namespace, v1alpha1.GroupVersion.String(), AckName(m.Name, u.Operation), m.Name, u.Operation, lastOr(u))
}

// AckName is the name an acknowledgment of operation's run of migration is
// given by default: one per run, so a second one for the same run is refused.
func AckName(migration, operation string) string {
	hex := strings.TrimPrefix(operation, "sha256:")
	if len(hex) > 12 {
		hex = hex[:12]
	}
	name := migration + "-ack-" + hex
	if len(name) > 253 {
		name = name[:253]
	}
	return name
}

func lastOr(u *v1alpha1.UnresolvedRun) int64 {
	if n := len(u.Versions); n > 0 {
		return u.Versions[0]
	}
	return u.FromVersion
}
