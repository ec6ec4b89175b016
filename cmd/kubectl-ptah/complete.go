package main

import (
	"context"
	"slices"
	"strings"
	"time"

	"github.com/spf13/cobra"
	"k8s.io/apimachinery/pkg/api/meta"
	"k8s.io/apimachinery/pkg/runtime"
	"sigs.k8s.io/controller-runtime/pkg/client"
)

// complete completes the names of the objects of list's kind, in the
// namespace the flags name when namespaced, from the cluster. A cluster
// that cannot be read completes nothing rather than file names.
func (o *options) complete(list client.ObjectList, namespaced bool) cobra.CompletionFunc {
	return func(cmd *cobra.Command, args []string, toComplete string) ([]cobra.Completion, cobra.ShellCompDirective) {
		if len(args) > 0 {
			return nil, cobra.ShellCompDirectiveNoFileComp
		}
		c, err := o.cluster()
		if err != nil {
			cobra.CompDebugln(err.Error(), true)
			return nil, cobra.ShellCompDirectiveNoFileComp
		}
		ctx := cmd.Context()
		if ctx == nil {
			ctx = context.Background()
		}
		// A shell waiting on a Tab is a person waiting.
		ctx, cancel := context.WithTimeout(ctx, 5*time.Second)
		defer cancel()
		l := list.DeepCopyObject().(client.ObjectList)
		var opts []client.ListOption
		if namespaced {
			opts = append(opts, client.InNamespace(c.namespace))
		}
		if err := c.List(ctx, l, opts...); err != nil {
			cobra.CompDebugln(err.Error(), true)
			return nil, cobra.ShellCompDirectiveNoFileComp
		}
		var names []cobra.Completion
		_ = meta.EachListItem(l, func(obj runtime.Object) error {
			if name := obj.(client.Object).GetName(); strings.HasPrefix(name, toComplete) {
				names = append(names, name)
			}
			return nil
		})
		slices.Sort(names)
		return names, cobra.ShellCompDirectiveNoFileComp
	}
}

// contexts completes --context from the kubeconfig.
func (o *options) contexts(cmd *cobra.Command, args []string, toComplete string) ([]cobra.Completion, cobra.ShellCompDirective) {
	cfg, err := o.kube.ToRawKubeConfigLoader().RawConfig()
	if err != nil {
		return nil, cobra.ShellCompDirectiveNoFileComp
	}
	var names []cobra.Completion
	for name := range cfg.Contexts {
		if strings.HasPrefix(name, toComplete) {
			names = append(names, name)
		}
	}
	slices.Sort(names)
	return names, cobra.ShellCompDirectiveNoFileComp
}
