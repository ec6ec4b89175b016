// Command kubectl-ptah is the kubectl plugin that shows what the operator
// decided, from the Kubernetes API only: it never connects to a database.
//
//	kubectl ptah plan SCHEMA [--applied] [-o text|sql|json] [-n NAMESPACE]
//	kubectl ptah status SCHEMA [-n NAMESPACE]
//	kubectl ptah migration MIGRATION [-n NAMESPACE]
package main

import (
	"context"
	"flag"
	"fmt"
	"io"
	"os"
	"time"

	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/client-go/tools/clientcmd"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"ptah.run/operator/cmd/internal/flags"
	v1alpha1 "ptah.run/operator/operator/api/v1alpha1"
	"ptah.run/operator/operator/describe"
)

const usage = `usage:
  kubectl ptah plan SCHEMA [--applied] [-o text|sql|json] [-n NAMESPACE]
  kubectl ptah status SCHEMA [-n NAMESPACE]
  kubectl ptah migration MIGRATION [-n NAMESPACE]

The cluster is the one KUBECONFIG (or --kubeconfig) names; the namespace
defaults to its current context's.
`

func main() {
	if err := run(os.Args[1:], os.Stdout); err != nil {
		fmt.Fprintf(os.Stderr, "kubectl ptah: %v\n", err)
		os.Exit(1)
	}
}

func run(args []string, stdout io.Writer) error {
	if len(args) == 0 || (args[0] != "plan" && args[0] != "status" && args[0] != "migration") {
		return fmt.Errorf("want a verb, plan, status or migration\n%s", usage)
	}
	verb := args[0]
	fs := flag.NewFlagSet("kubectl ptah "+verb, flag.ContinueOnError)
	fs.Usage = func() { fmt.Fprint(os.Stderr, usage) }
	var namespace, kubeconfig, output string
	var applied bool
	fs.StringVar(&namespace, "n", "", "namespace (default: the context's)")
	fs.StringVar(&namespace, "namespace", "", "namespace (default: the context's)")
	fs.StringVar(&kubeconfig, "kubeconfig", "", "kubeconfig file (default: $KUBECONFIG, then ~/.kube/config)")
	if verb == "plan" {
		fs.StringVar(&output, "o", describe.FormatText, "output: text, sql or json")
		fs.StringVar(&output, "output", describe.FormatText, "output: text, sql or json")
		fs.BoolVar(&applied, "applied", false, "the plan last proved applied instead of the current one")
	}
	positional, err := flags.ParseInterleaved(fs, args[1:])
	if err != nil {
		return err
	}
	kind := "PtahSchema"
	if verb == "migration" {
		kind = "PtahMigration"
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
	case "migration":
		return r.Migration(ctx, stdout, positional[0], time.Now())
	}
	return r.Status(ctx, stdout, positional[0], time.Now())
}
