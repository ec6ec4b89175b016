package main

import (
	"context"
	"errors"
	"fmt"
	"io"
	"runtime/debug"
	"strings"

	"github.com/spf13/cobra"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/meta"
	"k8s.io/apimachinery/pkg/runtime"
	utilruntime "k8s.io/apimachinery/pkg/util/runtime"
	"k8s.io/cli-runtime/pkg/genericclioptions"
	"sigs.k8s.io/controller-runtime/pkg/client"

	v1alpha1 "ptah.run/operator/operator/api/v1alpha1"
	"ptah.run/operator/operator/describe"
)

// scheme holds the kinds the plugin reads, writes and prints.
var scheme = func() *runtime.Scheme {
	s := runtime.NewScheme()
	utilruntime.Must(v1alpha1.AddToScheme(s))
	utilruntime.Must(corev1.AddToScheme(s))
	return s
}()

// version is set with -ldflags "-X main.version=...", as cmd/ptah's is; a
// build without it reports the module version Go recorded.
var version string

// failure is an error from the cluster or its objects, once the command
// line was understood: exit status 1. Any other error, cobra's included, is
// the command line's: exit status 2.
type failure struct{ error }

func (f failure) Unwrap() error { return f.error }

// run executes the command line args and returns the exit status.
func run(args []string, stdout, stderr io.Writer) int {
	root := newRoot(stdout, stderr)
	// Never nil: cobra reads os.Args when it is.
	root.SetArgs(append([]string{}, args...))
	cmd, err := root.ExecuteC()
	if err == nil {
		return 0
	}
	fmt.Fprintf(stderr, "kubectl ptah: %v\n", err)
	if errors.As(err, new(failure)) {
		return 1
	}
	fmt.Fprintf(stderr, "See '%s --help'.\n", cmd.CommandPath())
	return 2
}

// options are the cluster flags every verb shares.
type options struct {
	kube *genericclioptions.ConfigFlags
}

// verbs is what the root takes, for its usage errors.
const verbs = "plan, status, events, approve, revoke, migration, version or completion"

func newRoot(stdout, stderr io.Writer) *cobra.Command {
	// Only the flags this plugin honours: the rest of kubectl's (TLS files,
	// tokens, cache dir) would be accepted and do nothing useful here.
	o := &options{kube: &genericclioptions.ConfigFlags{
		KubeConfig:  new(""),
		Context:     new(""),
		Namespace:   new(""),
		Impersonate: new(""),
		Timeout:     new("30s"),
	}}
	root := &cobra.Command{
		Use:   "kubectl-ptah",
		Short: "Read, approve and follow what the Ptah operator decided",
		Long: `kubectl ptah shows what the Ptah operator decided for PtahSchemas and
PtahMigrations, from the Kubernetes API alone (it never connects to a
database), and writes a person's approvals and acknowledgments.

The cluster is the one --kubeconfig (or KUBECONFIG) names; the namespace
defaults to its current context's. Exit status: 0 done, 1 refused by the
cluster or by what its objects say, 2 a command line that cannot run.`,
		Annotations:   map[string]string{cobra.CommandDisplayNameAnnotation: "kubectl ptah"},
		SilenceErrors: true,
		SilenceUsage:  true,
		// Set, so cobra leaves the verb to us: an unknown one is a usage
		// error that lists the verbs.
		Args: func(cmd *cobra.Command, args []string) error {
			if len(args) > 0 {
				return fmt.Errorf("unknown verb %q%s; want a verb: %s", args[0], suggest(cmd, args[0]), verbs)
			}
			return nil
		},
		RunE: func(cmd *cobra.Command, args []string) error {
			return fmt.Errorf("want a verb: %s", verbs)
		},
	}
	root.SetOut(stdout)
	root.SetErr(stderr)
	o.kube.AddFlags(root.PersistentFlags())
	root.PersistentFlags().Lookup("request-timeout").Usage = "how long one request to the API server may take (0: no limit)"
	utilruntime.Must(root.RegisterFlagCompletionFunc("namespace", o.complete(&corev1.NamespaceList{}, false)))
	utilruntime.Must(root.RegisterFlagCompletionFunc("context", o.contexts))
	root.AddCommand(o.planCmd(), o.statusCmd(), o.eventsCmd(), o.approveCmd(), o.revokeCmd(), o.migrationCmd(), versionCmd())
	return root
}

// suggest is cobra's "did you mean" for a mistyped verb.
func suggest(cmd *cobra.Command, verb string) string {
	if cmd.SuggestionsMinimumDistance <= 0 {
		cmd.SuggestionsMinimumDistance = 2 // cobra's own default, which only its own errors set
	}
	if s := cmd.SuggestionsFor(verb); len(s) > 0 {
		return fmt.Sprintf(" (did you mean %s?)", strings.Join(s, " or "))
	}
	return ""
}

// oneName takes exactly one name of kind.
func oneName(kind string) cobra.PositionalArgs {
	return func(cmd *cobra.Command, args []string) error {
		if len(args) != 1 {
			return fmt.Errorf("%s takes one %s name, got %d arguments", cmd.Name(), kind, len(args))
		}
		return nil
	}
}

// conn is a client of the cluster the flags name, and the namespace.
type conn struct {
	client.Client
	namespace string
}

func (o *options) cluster() (conn, error) {
	loader := o.kube.ToRawKubeConfigLoader()
	// Without a kubeconfig, client-go would fall back to localhost:8080,
	// which is never the cluster meant.
	if raw, err := loader.RawConfig(); err == nil && len(raw.Clusters) == 0 {
		return conn{}, fmt.Errorf("no kubeconfig names a cluster: set KUBECONFIG or pass --kubeconfig")
	}
	cfg, err := loader.ClientConfig()
	if err != nil {
		return conn{}, fmt.Errorf("load the kubeconfig (set KUBECONFIG or pass --kubeconfig): %w", err)
	}
	ns, _, err := loader.Namespace()
	if err != nil {
		return conn{}, fmt.Errorf("read the namespace of the kubeconfig's context: %w", err)
	}
	c, err := client.New(cfg, client.Options{Scheme: scheme})
	if err != nil {
		return conn{}, fmt.Errorf("connect to %s: %w", cfg.Host, err)
	}
	return conn{Client: c, namespace: ns}, nil
}

// do runs a verb's work against the cluster; what it returns is a failure
// (exit status 1), the command line having been understood.
func (o *options) do(cmd *cobra.Command, work func(ctx context.Context, c conn) error) error {
	c, err := o.cluster()
	if err == nil {
		err = work(cmd.Context(), c)
	}
	if err == nil {
		return nil
	}
	if meta.IsNoMatchError(err) {
		err = fmt.Errorf("%w: the cluster does not serve %s; install the operator's CRDs (the chart operator/chart/ptah-operator)", err, v1alpha1.GroupVersion)
	}
	return failure{err}
}

func (c conn) reader() describe.Reader {
	return describe.Reader{Client: c.Client, Namespace: c.namespace}
}

func versionCmd() *cobra.Command {
	return &cobra.Command{
		Use:   "version",
		Short: "Print the plugin's version",
		Args:  cobra.NoArgs,
		RunE: func(cmd *cobra.Command, args []string) error {
			_, err := fmt.Fprintf(cmd.OutOrStdout(), "kubectl-ptah %s\n", buildVersion())
			return err
		},
	}
}

// buildVersion is the -ldflags version, else the main module's version Go
// recorded ("(devel)" for a build from a working tree).
func buildVersion() string {
	if version != "" {
		return version
	}
	if bi, ok := debug.ReadBuildInfo(); ok && bi.Main.Version != "" {
		return bi.Main.Version
	}
	return "(unknown)"
}
