// Command kubectl-ptah is the kubectl plugin that shows what the operator
// decided, from the Kubernetes API only: it never connects to a database.
//
//	kubectl ptah plan SCHEMA [--applied] [-o text|sql|json] [-n NAMESPACE]
//	kubectl ptah status SCHEMA [-n NAMESPACE]
//	kubectl ptah events SCHEMA [-n NAMESPACE]
//	kubectl ptah approve SCHEMA [--name APPROVAL] [-n NAMESPACE]
//	kubectl ptah migration [status|plan|events] MIGRATION [-n NAMESPACE]
//
// approve is its one write: a PtahSchemaApproval of the plan the schema
// awaits, checked against its digest first; admission stamps the approver.
package main

import (
	"context"
	"flag"
	"fmt"
	"io"
	"os"
	"slices"
	"strings"
	"time"

	corev1 "k8s.io/api/core/v1"

	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/client-go/tools/clientcmd"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"ptah.run/operator/cmd/internal/flags"
	v1alpha1 "ptah.run/operator/operator/api/v1alpha1"
	"ptah.run/operator/operator/approval"
	"ptah.run/operator/operator/describe"
)

const usage = `usage:
  kubectl ptah plan SCHEMA [--applied] [-o text|sql|json] [-n NAMESPACE]
  kubectl ptah status SCHEMA [-n NAMESPACE]
  kubectl ptah events SCHEMA [-n NAMESPACE]
  kubectl ptah approve SCHEMA [--name APPROVAL] [-n NAMESPACE]
  kubectl ptah migration [status|plan|events] MIGRATION [-n NAMESPACE]

The cluster is the one KUBECONFIG (or --kubeconfig) names; the namespace
defaults to its current context's.
`

func main() {
	if err := run(os.Args[1:], os.Stdout); err != nil {
		fmt.Fprintf(os.Stderr, "kubectl ptah: %v\n", err)
		os.Exit(1)
	}
}

var verbs = []string{"plan", "status", "events", "approve", "migration"}

// valueFlags are the flags that take a value as the next argument.
var valueFlags = []string{"-n", "--n", "-namespace", "--namespace", "-kubeconfig", "--kubeconfig", "-o", "--o", "-output", "--output", "-name", "--name"}

// verbFirst moves the verb to the front, so flags may come before it as
// kubectl users write them (kubectl ptah -n team status orders).
func verbFirst(args []string) []string {
	for i := 0; i < len(args); i++ {
		a := args[i]
		switch {
		case a == "--":
			return args
		case slices.Contains(verbs, a):
			return append(append([]string{a}, args[:i]...), args[i+1:]...)
		case slices.Contains(valueFlags, a):
			i++ // its value, which may spell a verb
		case !strings.HasPrefix(a, "-"):
			return args
		}
	}
	return args
}

func run(args []string, stdout io.Writer) error {
	args = verbFirst(args)
	if len(args) == 0 || !slices.Contains(verbs, args[0]) {
		return fmt.Errorf("want a verb: plan, status, events, approve or migration\n%s", usage)
	}
	verb := args[0]
	fs := flag.NewFlagSet("kubectl ptah "+verb, flag.ContinueOnError)
	fs.Usage = func() { fmt.Fprint(os.Stderr, usage) }
	var namespace, kubeconfig, output, name string
	var applied bool
	fs.StringVar(&namespace, "n", "", "namespace (default: the context's)")
	fs.StringVar(&namespace, "namespace", "", "namespace (default: the context's)")
	fs.StringVar(&kubeconfig, "kubeconfig", "", "kubeconfig file (default: $KUBECONFIG, then ~/.kube/config)")
	if verb == "plan" {
		fs.StringVar(&output, "o", describe.FormatText, "output: text, sql or json")
		fs.StringVar(&output, "output", describe.FormatText, "output: text, sql or json")
		fs.BoolVar(&applied, "applied", false, "the plan last proved applied instead of the current one")
	}
	if verb == "approve" {
		fs.StringVar(&name, "name", "", "the approval's name (default: SCHEMA-<8 hex of the plan's fingerprint>)")
	}
	positional, err := flags.ParseInterleaved(fs, args[1:])
	if err != nil {
		return err
	}
	kind := "PtahSchema"
	view := "status"
	if verb == "migration" {
		kind = "PtahMigration"
		// migration NAME is its status; migration VIEW NAME one view of it.
		if len(positional) == 2 && slices.Contains([]string{"status", "plan", "events"}, positional[0]) {
			view, positional = positional[0], positional[1:]
		}
	}
	if len(positional) != 1 {
		return fmt.Errorf("%s takes one %s name, got %d arguments", verb, kind, len(positional))
	}

	rules := clientcmd.NewDefaultClientConfigLoadingRules()
	rules.ExplicitPath = kubeconfig
	cc := clientcmd.NewNonInteractiveDeferredLoadingClientConfig(rules, &clientcmd.ConfigOverrides{})
	cfg, err := cc.ClientConfig()
	if err != nil {
		return fmt.Errorf("load the kubeconfig: %w", err)
	}
	if namespace == "" {
		if namespace, _, err = cc.Namespace(); err != nil {
			return err
		}
	}
	scheme := runtime.NewScheme()
	if err := v1alpha1.AddToScheme(scheme); err != nil {
		return err
	}
	if err := corev1.AddToScheme(scheme); err != nil {
		return err
	}
	c, err := client.New(cfg, client.Options{Scheme: scheme})
	if err != nil {
		return fmt.Errorf("connect to %s: %w", cfg.Host, err)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	r := describe.Reader{Client: c, Namespace: namespace}
	switch verb {
	case "plan":
		return r.Plan(ctx, stdout, positional[0], applied, output)
	case "events":
		return r.Events(ctx, stdout, positional[0], time.Now())
	case "approve":
		a, err := approval.Approve(ctx, c, namespace, positional[0], name)
		if err != nil {
			return err
		}
		by := "(not stamped: the approval admission policies are not installed, so the operator will not consume it)"
		if a.ApprovedBy != nil && a.ApprovedBy.Username != "" {
			by = "by " + a.ApprovedBy.Username
		}
		_, err = fmt.Fprintf(stdout, "ptahschemaapproval.operator.ptah.run/%s created: plan %s approved %s\n", a.Name, a.Spec.PlanName, by)
		return err
	case "migration":
		switch view {
		case "plan":
			return r.MigrationPlan(ctx, stdout, positional[0])
		case "events":
			return r.MigrationEvents(ctx, stdout, positional[0], time.Now())
		}
		return r.Migration(ctx, stdout, positional[0], time.Now())
	}
	return r.Status(ctx, stdout, positional[0], time.Now())
}
