package main

import (
	"fmt"
	"io"
	"slices"
	"strings"

	"github.com/spf13/cobra"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime"
	utilruntime "k8s.io/apimachinery/pkg/util/runtime"
	"k8s.io/cli-runtime/pkg/genericclioptions"
	"k8s.io/cli-runtime/pkg/printers"
	"sigs.k8s.io/controller-runtime/pkg/client/apiutil"
)

// kubectlFormats are the -o values of kubectl's printers offered for
// completion and named in errors; the printers take their variants too.
var kubectlFormats = []string{"json", "yaml", "name", "jsonpath=", "go-template="}

// output is a verb's -o: one of its own views (views[0] is the default),
// or one of kubectl's printers, which print the objects the view is of.
type output struct {
	format  string
	views   []string
	printer printers.ResourcePrinter
}

func addOutput(cmd *cobra.Command, views ...string) *output {
	o := &output{views: views}
	cmd.Flags().StringVarP(&o.format, "output", "o", views[0],
		fmt.Sprintf("output format: %s, or json, yaml, name, jsonpath=TEMPLATE, go-template=TEMPLATE", strings.Join(views, ", ")))
	utilruntime.Must(cmd.RegisterFlagCompletionFunc("output",
		cobra.FixedCompletions(append(slices.Clone(views), kubectlFormats...), cobra.ShellCompDirectiveNoFileComp|cobra.ShellCompDirectiveNoSpace)))
	// Checked before anything is read, so a bad -o is a usage error.
	cmd.PreRunE = func(*cobra.Command, []string) error { return o.check() }
	return o
}

func (o *output) check() error {
	if slices.Contains(o.views, o.format) {
		return nil
	}
	pf := genericclioptions.NewPrintFlags("").WithTypeSetter(scheme)
	pf.OutputFormat = &o.format
	p, err := pf.ToPrinter()
	if genericclioptions.IsNoCompatiblePrinterError(err) {
		return fmt.Errorf("output format %q: use %s, json, yaml, name, jsonpath=TEMPLATE or go-template=TEMPLATE", o.format, strings.Join(o.views, ", "))
	}
	if err != nil {
		return fmt.Errorf("output format %q: %w", o.format, err)
	}
	o.printer = p
	return nil
}

// view is the view -o names, "" when it names a printer.
func (o *output) view() string {
	if o.printer != nil {
		return ""
	}
	return o.format
}

// print prints obj with the printer -o names.
func (o *output) print(w io.Writer, obj runtime.Object) error {
	return o.printer.PrintObj(obj, w)
}

// printList prints objs as kubectl get prints several: a v1 List, each
// item typed, so that -o name prints a line for each.
func (o *output) printList(w io.Writer, objs []runtime.Object) error {
	list := &unstructured.UnstructuredList{Object: map[string]any{"apiVersion": "v1", "kind": "List", "metadata": map[string]any{}}}
	for _, obj := range objs {
		gvk, err := apiutil.GVKForObject(obj, scheme)
		if err != nil {
			return err
		}
		u, err := runtime.DefaultUnstructuredConverter.ToUnstructured(obj)
		if err != nil {
			return err
		}
		item := unstructured.Unstructured{Object: u}
		item.SetGroupVersionKind(gvk)
		list.Items = append(list.Items, item)
	}
	return o.printer.PrintObj(list, w)
}
