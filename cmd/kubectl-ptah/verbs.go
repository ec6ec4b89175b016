package main

import (
	"context"
	"fmt"
	"io"
	"time"

	"github.com/spf13/cobra"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/runtime"

	"ptah.run/operator/operator/describe"
)

// The verbs both kinds have, written once: each kind's file says only
// what reads and writes its own objects.

// eventsVerb makes cmd show the Events on an object: the reader's text,
// or the Events themselves through kubectl's printers.
func (o *options) eventsVerb(cmd *cobra.Command,
	text func(describe.Reader, context.Context, io.Writer, string, time.Time) error,
	list func(describe.Reader, context.Context, string) (*corev1.EventList, error)) *cobra.Command {
	out := addOutput(cmd, describe.FormatText)
	cmd.RunE = func(cmd *cobra.Command, args []string) error {
		return o.do(cmd, func(ctx context.Context, c conn) error {
			if out.view() != "" {
				return text(c.reader(), ctx, cmd.OutOrStdout(), args[0], time.Now())
			}
			evs, err := list(c.reader(), ctx, args[0])
			if err != nil {
				return err
			}
			objs := make([]runtime.Object, len(evs.Items))
			for i := range evs.Items {
				objs[i] = &evs.Items[i]
			}
			return out.printList(cmd.OutOrStdout(), objs)
		})
	}
	return cmd
}

// createVerb makes cmd create an object with create and print it, or, as
// text, the line said returns for it.
func createVerb[T runtime.Object](o *options, cmd *cobra.Command, create func(ctx context.Context, c conn, name string) (T, error), said func(T) string) *cobra.Command {
	out := addOutput(cmd, describe.FormatText)
	cmd.RunE = func(cmd *cobra.Command, args []string) error {
		return o.do(cmd, func(ctx context.Context, c conn) error {
			obj, err := create(ctx, c, args[0])
			if err != nil {
				return err
			}
			if out.view() == "" {
				return out.print(cmd.OutOrStdout(), obj)
			}
			_, err = fmt.Fprintln(cmd.OutOrStdout(), said(obj))
			return err
		})
	}
	return cmd
}
