package main

import (
	"context"
	"fmt"
	"slices"
	"time"

	"github.com/spf13/cobra"
	utilruntime "k8s.io/apimachinery/pkg/util/runtime"
	"sigs.k8s.io/controller-runtime/pkg/client"

	v1alpha1 "ptah.run/operator/operator/api/v1alpha1"
	"ptah.run/operator/operator/approval"
	"ptah.run/operator/operator/describe"
)

// migrationCmd is `migration MIGRATION` (its status) and the verbs on one
// PtahMigration.
func (o *options) migrationCmd() *cobra.Command {
	cmd := &cobra.Command{
		Use:               "migration [status|plan|events|approve|acknowledge] MIGRATION",
		Short:             "Show a PtahMigration, approve its plan or acknowledge its unresolved run",
		ValidArgsFunction: o.complete(&v1alpha1.PtahMigrationList{}, true),
		// Set, so a mistyped verb is not taken for a name: two arguments are
		// a verb this command does not have.
		Args: func(cmd *cobra.Command, args []string) error {
			switch {
			case len(args) == 2:
				return fmt.Errorf("unknown migration verb %q%s; want status, plan, events, approve or acknowledge", args[0], suggest(cmd, args[0]))
			case len(args) != 1:
				return fmt.Errorf("migration takes one PtahMigration name, got %d arguments", len(args))
			}
			return nil
		},
	}
	status := o.migrationStatusCmd()
	cmd.RunE = status.RunE
	cmd.PreRunE = status.PreRunE
	cmd.Flags().AddFlagSet(status.Flags())
	cmd.AddCommand(status, o.migrationPlanCmd(), o.migrationEventsCmd(), o.migrationApproveCmd(), o.migrationAcknowledgeCmd())
	return cmd
}

func (o *options) migrationVerb(use, short string) *cobra.Command {
	return &cobra.Command{
		Use:               use + " MIGRATION",
		Short:             short,
		Args:              oneName("PtahMigration"),
		ValidArgsFunction: o.complete(&v1alpha1.PtahMigrationList{}, true),
	}
}

func (o *options) migrationStatusCmd() *cobra.Command {
	cmd := o.migrationVerb("status", "Show a PtahMigration's versions, plan, unresolved run and conditions (the default)")
	out := addOutput(cmd, describe.FormatText)
	cmd.RunE = func(cmd *cobra.Command, args []string) error {
		return o.do(cmd, func(ctx context.Context, c conn) error {
			if out.view() != "" {
				return c.reader().Migration(ctx, cmd.OutOrStdout(), args[0], time.Now())
			}
			var m v1alpha1.PtahMigration
			if err := c.Get(ctx, client.ObjectKey{Namespace: c.namespace, Name: args[0]}, &m); err != nil {
				return fmt.Errorf("read ptahmigration %s in namespace %s: %w", args[0], c.namespace, err)
			}
			return out.print(cmd.OutOrStdout(), &m)
		})
	}
	return cmd
}

func (o *options) migrationPlanCmd() *cobra.Command {
	cmd := o.migrationVerb("plan", "Show the plan a PtahMigration's status names: its pending versions and checksums")
	out := addOutput(cmd, describe.FormatText)
	cmd.RunE = func(cmd *cobra.Command, args []string) error {
		return o.do(cmd, func(ctx context.Context, c conn) error {
			if out.view() != "" {
				return c.reader().MigrationPlan(ctx, cmd.OutOrStdout(), args[0])
			}
			p, err := c.reader().CurrentMigrationPlan(ctx, args[0])
			if err != nil {
				return err
			}
			return out.print(cmd.OutOrStdout(), p)
		})
	}
	return cmd
}

func (o *options) migrationEventsCmd() *cobra.Command {
	return o.eventsVerb(o.migrationVerb("events", "Show the Events on a PtahMigration, its approvals and acknowledgments, oldest first"),
		describe.Reader.MigrationEvents, describe.Reader.MigrationEventList)
}

func (o *options) migrationApproveCmd() *cobra.Command {
	cmd := o.migrationVerb("approve", "Approve the plan a PtahMigration awaits (creates a PtahMigrationApproval)")
	name := cmd.Flags().String("name", "", "the approval's name (default: MIGRATION-<8 hex of the plan's fingerprint>)")
	return createVerb(o, cmd, func(ctx context.Context, c conn, migration string) (*v1alpha1.PtahMigrationApproval, error) {
		return approval.ApproveMigration(ctx, c, c.namespace, migration, *name)
	}, func(a *v1alpha1.PtahMigrationApproval) string {
		return fmt.Sprintf("ptahmigrationapproval.operator.ptah.run/%s created: plan %s approved %s", a.Name, a.Spec.PlanName, stamped(a.ApprovedBy))
	})
}

var outcomes = []string{string(v1alpha1.RunApplied), string(v1alpha1.RunNotApplied), string(v1alpha1.RunPartial)}

func (o *options) migrationAcknowledgeCmd() *cobra.Command {
	cmd := o.migrationVerb("acknowledge", "Say what a PtahMigration's unresolved run did (creates a PtahMigrationRunAcknowledgment)")
	cmd.Long = `Say what the run a PtahMigration records as unresolved did, once you have
found out: --outcome Applied (every version committed), NotApplied (none) or
Partial (up to --last-committed-version). The acknowledgment names the run's
operation, so it never settles another run; the manager then reads the
history again before anything is planned.`
	outcome := cmd.Flags().String("outcome", "", "what the run did: Applied, NotApplied or Partial (required)")
	last := cmd.Flags().Int64("last-committed-version", 0, "the last version the run committed (required for Partial, refused for NotApplied)")
	note := cmd.Flags().String("note", "", "how this was established")
	name := cmd.Flags().String("name", "", "the acknowledgment's name (default: MIGRATION-ack-<12 hex of the operation>)")
	utilruntime.Must(cmd.RegisterFlagCompletionFunc("outcome", cobra.FixedCompletions(outcomes, cobra.ShellCompDirectiveNoFileComp)))
	cmd = createVerb(o, cmd, func(ctx context.Context, c conn, migration string) (*v1alpha1.PtahMigrationRunAcknowledgment, error) {
		return approval.Acknowledge(ctx, c, c.namespace, migration, *name, v1alpha1.RunOutcome(*outcome), *last, *note)
	}, func(a *v1alpha1.PtahMigrationRunAcknowledgment) string {
		by := "(not stamped: the acknowledgment admission policies are not installed, so the operator will not consume it)"
		if a.AcknowledgedBy != nil && a.AcknowledgedBy.Username != "" {
			by = "by " + a.AcknowledgedBy.Username
		}
		return fmt.Sprintf("ptahmigrationrunacknowledgment.operator.ptah.run/%s created: operation %s %s, acknowledged %s",
			a.Name, a.Spec.Operation, a.Spec.Outcome, by)
	})
	checkOutput := cmd.PreRunE
	// The CRD refuses these too; checked here so that the command line is
	// refused, exit status 2, before anything is read.
	cmd.PreRunE = func(cmd *cobra.Command, args []string) error {
		switch {
		case !slices.Contains(outcomes, *outcome):
			return fmt.Errorf("--outcome %q: say what the run did with Applied, NotApplied or Partial", *outcome)
		case *last < 0:
			return fmt.Errorf("--last-committed-version %d: a version is 1 or more", *last)
		case *outcome == string(v1alpha1.RunPartial) && *last == 0:
			return fmt.Errorf("--outcome Partial needs --last-committed-version, the last version the run committed")
		case *outcome == string(v1alpha1.RunNotApplied) && *last != 0:
			return fmt.Errorf("--outcome NotApplied committed nothing: leave --last-committed-version out")
		}
		return checkOutput(cmd, args)
	}
	return cmd
}
