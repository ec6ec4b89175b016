// Command manager runs the Ptah operator: it reconciles PtahSchemas by
// running each database operation in a Job. It only wires flags, the scheme
// and the controller; the behaviour lives in internal/controller.
package main

import (
	"flag"
	"fmt"
	"os"
	"strings"
	"time"

	"k8s.io/apimachinery/pkg/labels"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/client-go/kubernetes"
	clientgoscheme "k8s.io/client-go/kubernetes/scheme"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/config"
	"sigs.k8s.io/controller-runtime/pkg/healthz"
	"sigs.k8s.io/controller-runtime/pkg/log/zap"
	metricsserver "sigs.k8s.io/controller-runtime/pkg/metrics/server"

	"ptah.run/operator/internal/controller"
	"ptah.run/operator/internal/runner"
	"ptah.run/operator/internal/stamp"
	v1alpha1 "ptah.run/operator/operator/api/v1alpha1"
)

func main() {
	var (
		image, devImage, ptahVersion, metricsAddr, probeAddr, plainHTTP string
		watchNamespaces, selector, transport, leaderElectionID          string
		stampConfig, stampService, stampSecret                          string
		stampPort                                                       int
		leaderElect                                                     bool
		planHistory, concurrency                                        int
		resultTimeout, leaseDuration, retention, admissionInterval      time.Duration
	)
	flag.StringVar(&image, "executor-image", "ptah-executor:dev", "image of the Jobs' runner and ptah")
	flag.StringVar(&devImage, "dev-database-image", controller.DefaultDevDatabaseImage, "image of the throwaway PostgreSQL sidecar Observe, Plan and Proof load the desired SQL into (sh, initdb, postgres, pg_isready and sleep on PATH; a passwd entry for UID 65532)")
	flag.StringVar(&ptahVersion, "ptah-version", "dev", "ptah version the executor image holds (part of the execution binding)")
	flag.StringVar(&plainHTTP, "plain-http-registries", "", "comma-separated registry hosts reached over plain HTTP")
	flag.DurationVar(&resultTimeout, "result-read-timeout", 15*time.Second, "time bound of a result record read, and of its arrival after the Job completed")
	flag.DurationVar(&leaseDuration, "database-lease-duration", time.Minute, "how long the per-database Lease guarding Plan and Apply holds unrenewed")
	flag.DurationVar(&retention, "history-retention", time.Hour, "how long finished Jobs and result records are kept before they are deleted")
	flag.DurationVar(&admissionInterval, "record-admission-check-interval", controller.DefaultAdmissionCheckInterval, "how often the manager proves again, by a dry-run create of a forged PtahResultRecord, that record admission is enforcing in each namespace it reconciles (it also proves it at start and before consuming any record); while it is not, nothing there starts")
	flag.IntVar(&planHistory, "plan-history", 10, "how many plans nothing names any more are kept per schema past the retention (at least 1)")
	flag.StringVar(&transport, "migration-result-transport", runner.TransportDurable, "how new PtahMigration Jobs deliver their result: durable (a PtahResultRecord through the API, with an operation-bound credential) or legacy (a framed result in the container log, summarized in the termination message); a Job is read the way it records")
	flag.BoolVar(&leaderElect, "leader-elect", false, "elect a leader so only one manager reconciles")
	flag.StringVar(&leaderElectionID, "leader-election-id", "ptah-operator.operator.ptah.run", "name of the Lease the managers of one install elect their leader by, in their namespace (the chart names it after the release, so two releases in one namespace each have a leader)")
	flag.StringVar(&watchNamespaces, "watch-namespaces", "", "comma-separated namespaces to reconcile (default: all)")
	flag.StringVar(&selector, "selector", "", "label selector of the PtahSchemas and PtahMigrations to reconcile (default: all)")
	flag.IntVar(&concurrency, "max-concurrent-reconciles", 4, "how many PtahSchemas, and how many PtahMigrations, are reconciled at once (at least 1); operations on one database are still serialised by its Lease")
	flag.StringVar(&metricsAddr, "metrics-bind-address", "127.0.0.1:8080", "metrics endpoint address, plain HTTP, so bound to localhost by default (0 disables it)")
	flag.StringVar(&probeAddr, "health-probe-bind-address", ":8081", "health and readiness probe address")
	flag.StringVar(&stampConfig, "stamp-webhook-configuration", "", "serve the approval, acknowledgment and record stamps as a mutating webhook, for clusters that serve no MutatingAdmissionPolicy: the name of its MutatingWebhookConfiguration, whose caBundle the manager keeps (default: no webhook; the chart sets it with admission.api=webhook)")
	flag.StringVar(&stampService, "stamp-webhook-service", "", "the Service in the manager's namespace that reaches the stamp webhook (its serving certificate names it)")
	flag.StringVar(&stampSecret, "stamp-webhook-secret", "", "the Secret in the manager's namespace that holds the stamp webhook's CA and serving certificate (the manager writes it)")
	flag.IntVar(&stampPort, "stamp-webhook-port", 9443, "port the stamp webhook listens on")
	opts := zap.Options{}
	opts.BindFlags(flag.CommandLine)
	flag.Parse()
	if admissionInterval <= 0 {
		fmt.Fprintf(os.Stderr, "manager: --record-admission-check-interval=%s: must be positive (the default is %s)\n", admissionInterval, controller.DefaultAdmissionCheckInterval)
		os.Exit(2)
	}
	if planHistory < 1 {
		fmt.Fprintf(os.Stderr, "manager: --plan-history=%d: must be at least 1 (the default is 10)\n", planHistory)
		os.Exit(2)
	}
	if concurrency < 1 {
		fmt.Fprintf(os.Stderr, "manager: --max-concurrent-reconciles=%d: must be at least 1 (the default is 4)\n", concurrency)
		os.Exit(2)
	}
	if transport != runner.TransportDurable && transport != runner.TransportPodLog {
		fmt.Fprintf(os.Stderr, "manager: --migration-result-transport=%q: want %s or %s\n", transport, runner.TransportDurable, runner.TransportPodLog)
		os.Exit(2)
	}
	operatorNamespace := os.Getenv("OPERATOR_NAMESPACE")
	if stampConfig != "" && (stampService == "" || stampSecret == "" || operatorNamespace == "") {
		fmt.Fprintf(os.Stderr, "manager: --stamp-webhook-configuration=%s needs --stamp-webhook-service, --stamp-webhook-secret and OPERATOR_NAMESPACE (the chart sets all three)\n", stampConfig)
		os.Exit(2)
	}
	ctrl.SetLogger(zap.New(zap.UseFlagOptions(&opts)))
	log := ctrl.Log.WithName("manager")

	selected, err := labels.Parse(selector)
	if err != nil {
		fmt.Fprintf(os.Stderr, "manager: --selector=%q: %v\n", selector, err)
		os.Exit(2)
	}
	var namespaces []string
	if watchNamespaces != "" {
		namespaces = strings.Split(watchNamespaces, ",")
	}

	scheme := runtime.NewScheme()
	must(clientgoscheme.AddToScheme(scheme))
	must(v1alpha1.AddToScheme(scheme))

	mgr, err := ctrl.NewManager(ctrl.GetConfigOrDie(), ctrl.Options{
		Scheme:                 scheme,
		Metrics:                metricsserver.Options{BindAddress: metricsAddr},
		HealthProbeBindAddress: probeAddr,
		LeaderElection:         leaderElect,
		LeaderElectionID:       leaderElectionID,
		Cache:                  controller.CacheOptions(namespaces, selected),
		Controller:             config.Controller{MaxConcurrentReconciles: concurrency},
	})
	if err != nil {
		log.Error(err, "create the manager")
		os.Exit(1)
	}
	var hosts []string
	if plainHTTP != "" {
		hosts = strings.Split(plainHTTP, ",")
	}
	b := controller.Binding{ExecutorImage: image, PtahVersion: ptahVersion, Protocol: runner.ProtocolVersion}
	// One record admission check, which both reconcilers consult.
	admission := controller.NewRecordAdmission(mgr, admissionInterval)
	must(mgr.Add(admission))
	r := controller.New(mgr, b, hosts)
	r.Admission = admission
	r.ResultTimeout, r.LeaseDuration, r.Retention, r.PlanHistory = resultTimeout, leaseDuration, retention, planHistory
	r.DevDatabaseImage = devImage
	if err := r.SetupWithManager(mgr); err != nil {
		log.Error(err, "set up the PtahSchema controller")
		os.Exit(1)
	}
	mr := controller.NewMigration(mgr, b, hosts)
	mr.ResultTimeout, mr.Retention, mr.ResultTransport = resultTimeout, retention, transport
	mr.Admission = admission
	// Every manager reads logs, whatever its own setting: a Job dispatched
	// under legacy by an earlier setting is still read from its Pod's log.
	cs, err := kubernetes.NewForConfigAndClient(mgr.GetConfig(), mgr.GetHTTPClient())
	if err != nil {
		log.Error(err, "create the client that reads Pod logs")
		os.Exit(1)
	}
	mr.Logs = controller.ClientsetLogs{Clientset: cs}
	if err := mr.SetupWithManager(mgr); err != nil {
		log.Error(err, "set up the PtahMigration controller")
		os.Exit(1)
	}
	if stampConfig != "" {
		certs := &stamp.Certificates{Client: mgr.GetClient(), Reader: mgr.GetAPIReader(),
			Namespace: operatorNamespace, Secret: stampSecret, Service: stampService, Config: stampConfig}
		must(certs.Serve(mgr, "", stampPort))
	}
	must(mgr.AddHealthzCheck("healthz", healthz.Ping))
	must(mgr.AddReadyzCheck("readyz", healthz.Ping))
	if err := mgr.Start(ctrl.SetupSignalHandler()); err != nil {
		log.Error(err, "run the manager")
		os.Exit(1)
	}
}

func must(err error) {
	if err != nil {
		ctrl.Log.Error(err, "start")
		os.Exit(1)
	}
}
