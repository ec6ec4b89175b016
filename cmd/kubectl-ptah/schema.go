package main

import (
	"context"
	"fmt"
	"time"

	"github.com/spf13/cobra"
	"k8s.io/apimachinery/pkg/runtime"
	"sigs.k8s.io/controller-runtime/pkg/client"

	v1alpha1 "ptah.run/operator/operator/api/v1alpha1"
	"ptah.run/operator/operator/approval"
	"ptah.run/operator/operator/describe"
)

// schemaCmd is a verb on one PtahSchema, its name completed from the cluster.
func (o *options) schemaCmd(use, short string) *cobra.Command {
	return &cobra.Command{
		Use:               use + " SCHEMA",
		Short:             short,
		Args:              oneName("PtahSchema"),
		ValidArgsFunction: o.complete(&v1alpha1.PtahSchemaList{}, true),
	}
}

func (o *options) planCmd() *cobra.Command {
	cmd := o.schemaCmd("plan", "Show a PtahSchema's current plan, checked against its digest")
	out := addOutput(cmd, describe.FormatText, describe.FormatSQL)
	applied := cmd.Flags().Bool("applied", false, "the plan last proved applied instead of the current one")
	cmd.RunE = func(cmd *cobra.Command, args []string) error {
		return o.do(cmd, func(ctx context.Context, c conn) error {
			if v := out.view(); v != "" {
				return c.reader().Plan(ctx, cmd.OutOrStdout(), args[0], *applied, v)
			}
			p, err := c.reader().CheckedPlan(ctx, args[0], *applied)
			if err != nil {
				return err
			}
			return out.print(cmd.OutOrStdout(), p)
		})
	}
	return cmd
}

func (o *options) statusCmd() *cobra.Command {
	cmd := o.schemaCmd("status", "Show a PtahSchema's phase, conditions, plan and schedule")
	out := addOutput(cmd, describe.FormatText)
	cmd.RunE = func(cmd *cobra.Command, args []string) error {
		return o.do(cmd, func(ctx context.Context, c conn) error {
			if out.view() != "" {
				return c.reader().Status(ctx, cmd.OutOrStdout(), args[0], time.Now())
			}
			var s v1alpha1.PtahSchema
			if err := c.Get(ctx, client.ObjectKey{Namespace: c.namespace, Name: args[0]}, &s); err != nil {
				return fmt.Errorf("read ptahschema %s in namespace %s: %w", args[0], c.namespace, err)
			}
			return out.print(cmd.OutOrStdout(), &s)
		})
	}
	return cmd
}

func (o *options) eventsCmd() *cobra.Command {
	return o.eventsVerb(o.schemaCmd("events", "Show the Events on a PtahSchema and its approvals, oldest first"),
		describe.Reader.Events, describe.Reader.EventList)
}

func (o *options) approveCmd() *cobra.Command {
	cmd := o.schemaCmd("approve", "Approve the plan a PtahSchema awaits (creates a PtahSchemaApproval)")
	name := cmd.Flags().String("name", "", "the approval's name (default: SCHEMA-<8 hex of the plan's fingerprint>)")
	return createVerb(o, cmd, func(ctx context.Context, c conn, schema string) (*v1alpha1.PtahSchemaApproval, error) {
		return approval.Approve(ctx, c, c.namespace, schema, *name)
	}, func(a *v1alpha1.PtahSchemaApproval) string {
		return fmt.Sprintf("ptahschemaapproval.operator.ptah.run/%s created: plan %s approved %s", a.Name, a.Spec.PlanName, stamped(a.ApprovedBy))
	})
}

// stamped says who admission stamped as the approver, or that nothing did.
func stamped(by *v1alpha1.Approver) string {
	if by == nil || by.Username == "" {
		return "(not stamped: the approval admission policies are not installed, so the operator will not consume it)"
	}
	return "by " + by.Username
}

func (o *options) revokeCmd() *cobra.Command {
	cmd := o.schemaCmd("revoke", "Withdraw the approval of the plan a PtahSchema awaits (deletes its PtahSchemaApprovals)")
	cmd.Long = `Withdraw the approval of the plan a PtahSchema awaits: every PtahSchemaApproval
naming that plan and its fingerprint is deleted. An Apply whose Job the
manager has not created yet is then not started (Event ApprovalRevoked); one
already running is never stopped, so revoking its approval is refused.`
	out := addOutput(cmd, describe.FormatText)
	cmd.RunE = func(cmd *cobra.Command, args []string) error {
		return o.do(cmd, func(ctx context.Context, c conn) error {
			deleted, err := approval.Revoke(ctx, c, c.namespace, args[0])
			if err != nil {
				return err
			}
			if out.view() == "" {
				objs := make([]runtime.Object, len(deleted))
				for i := range deleted {
					objs[i] = &deleted[i]
				}
				return out.printList(cmd.OutOrStdout(), objs)
			}
			for _, a := range deleted {
				if _, err := fmt.Fprintf(cmd.OutOrStdout(), "ptahschemaapproval.operator.ptah.run/%s deleted: plan %s of ptahschema %s is no longer approved\n",
					a.Name, a.Spec.PlanName, a.Spec.SchemaName); err != nil {
					return err
				}
			}
			return nil
		})
	}
	return cmd
}
