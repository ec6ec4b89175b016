package lab

import (
	"bytes"
	"context"
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"

	"helm.sh/helm/v3/pkg/action"
)

// TestTwoReleasesInOneNamespace runs twoReleasesInOneNamespace on the lab
// that is up (make demo-up), for trying it without a lab of its own;
// TestLabUpAndDown runs it on its own lab.
func TestTwoReleasesInOneNamespace(t *testing.T) {
	twoReleasesInOneNamespace(t, attachedLab(t), context.Background())
}

// attachedLab is the lab that is up (make demo-up), for a check that
// TestLabUpAndDown runs on its own lab; the test is skipped unless
// PTAH_LAB_ATTACH=1.
func attachedLab(t *testing.T) *Lab {
	t.Helper()
	if os.Getenv("PTAH_LAB_ATTACH") != "1" {
		t.Skip("set PTAH_LAB_ATTACH=1 to run on the lab that is up (make demo-up)")
	}
	root, err := filepath.Abs("../..")
	if err != nil {
		t.Fatal(err)
	}
	return New(root, os.Stdout, os.Stderr)
}

// twoReleasesInOneNamespace installs the chart twice in one namespace, as
// two teams would: releases team-a and team-b, each watching the same two
// namespaces with a selector of its own (the CRDs and admission policies
// are the lab release's, so both set crds.install and admission.install
// false). The lab's own manager is stopped meanwhile, so every operation
// is one of theirs. Team a's PtahSchema and team b's PtahMigration each
// converge through real Jobs, every Job of each started by its own
// team's manager (the Events' reporting instance names the Pod), and
// each release holds a leader Lease of its own. Everything it made is
// removed, and the lab's manager started again, when it returns.
func twoReleasesInOneNamespace(t *testing.T, l *Lab, ctx context.Context) {
	t.Helper()
	kubectl := func(stdin string, args ...string) string {
		t.Helper()
		return mustKubectl(t, l, ctx, stdin, args...)
	}
	namespaces, down := scenarioNamespaces(t, l, ctx, 2)
	defer down()
	home := namespaces[0]

	controller := l.controllerName(ctx)
	kubectl("", "-n", OperatorNamespace, "scale", "deployment/"+controller, "--replicas=0")
	kubectl("", "-n", OperatorNamespace, "wait", "pods", "-l", "app.kubernetes.io/name="+controller, "--for=delete", "--timeout=2m")
	defer func() {
		_, _ = l.kubectlCmd(context.Background(), "", "-n", OperatorNamespace, "scale", "deployment/"+controller, "--replicas=1")
		_, _ = l.kubectlCmd(context.Background(), "", "-n", OperatorNamespace, "rollout", "status", "deployment/"+controller, "--timeout=3m")
	}()

	r, err := l.installed(ctx)
	if err != nil {
		t.Fatal(err)
	}
	devImage := kubectl("", "-n", OperatorNamespace, "get", "deployment/"+controller, "-o", `jsonpath={.spec.template.spec.containers[0].args}`)
	var args []string
	if err := json.Unmarshal([]byte(devImage), &args); err != nil {
		t.Fatalf("the lab manager's args %q: %v", devImage, err)
	}
	dev := ""
	for _, a := range args {
		if v, ok := strings.CutPrefix(a, "--dev-database-image="); ok {
			dev = v
		}
	}
	if dev == "" {
		t.Fatalf("the lab manager has no --dev-database-image among %v", args)
	}
	for _, team := range []string{"a", "b"} {
		values := l.releaseValues(dev)
		values["crds"] = map[string]any{"install": false}
		values["admission"] = map[string]any{"install": false}
		values["watchNamespaces"] = []any{namespaces[0], namespaces[1]}
		values["selector"] = "team=" + team
		// From the lab's release in its registry, as a second team installs it.
		if _, err := l.installChart(ctx, r, "team-"+team, home, values, true); err != nil {
			t.Fatal(err)
		}
		cfg, err := l.helmConfig(home, r)
		if err != nil {
			t.Fatal(err)
		}
		defer func() { _, _ = action.NewUninstall(cfg).Run("team-" + team) }()
	}

	digest := strings.TrimSpace(printedBy(t, l, func() error { return l.Publish(ctx, "v1") }))
	schema, err := l.Manifest("storefront", digest, env(map[string]string{"APPLY": "Always", "NAMESPACE": namespaces[0]}))
	if err != nil {
		t.Fatal(err)
	}
	digest = strings.TrimSpace(printedBy(t, l, func() error { return l.PublishMigrations(ctx, "ledger-v1") }))
	migration, err := l.Manifest("ledger", digest, env(map[string]string{"APPLY": "Always", "NAMESPACE": namespaces[1]}))
	if err != nil {
		t.Fatal(err)
	}
	// Labelled in the same request that creates them: no manager ever
	// sees them unlabelled.
	label := func(doc, team string) string {
		return strings.Replace(doc, "\nmetadata:\n", "\nmetadata:\n  labels:\n    team: "+team+"\n", 1)
	}
	kubectl(label(schema, "a"), "apply", "-f", "-")
	kubectl(label(migration, "b"), "apply", "-f", "-")
	kubectl("", "-n", namespaces[0], "wait", "ptahschema/storefront", "--for=condition=InSync=True", "--timeout=5m")
	kubectl("", "-n", namespaces[1], "wait", "ptahmigration/ledger", "--for=condition=InSync=True", "--timeout=5m")

	for _, o := range []struct{ ns, name, team, other string }{
		{namespaces[0], "storefront", "team-a", "team-b"},
		{namespaces[1], "ledger", "team-b", "team-a"},
	} {
		started := kubectl("", "-n", o.ns, "get", "events", "--field-selector", "involvedObject.name="+o.name+",reason=OperationStarted",
			"-o", `jsonpath={range .items[*]}{.reportingInstance}{"\n"}{end}`)
		lines := strings.Fields(started)
		if len(lines) == 0 {
			t.Errorf("%s/%s: no OperationStarted Events", o.ns, o.name)
		}
		for _, by := range lines {
			if !strings.Contains(by, o.team+"-manager-") {
				t.Errorf("%s/%s, labelled for %s: a Job was started by %s", o.ns, o.name, o.team, by)
			}
		}
		holder := kubectl("", "-n", home, "get", "lease", o.team+"-manager.operator.ptah.run", "-o", "jsonpath={.spec.holderIdentity}")
		if !strings.HasPrefix(holder, o.team+"-manager-") {
			t.Errorf("Lease %s-manager.operator.ptah.run in %s is held by %q, want a %s manager Pod", o.team, home, holder, o.team)
		}
		t.Logf("%s/%s, labelled for %s: in sync after %d Jobs", o.ns, o.name, o.team, len(lines))
	}
}

// mustKubectl runs kubectl with stdin on l's cluster and returns its
// output trimmed; an error fails t.
func mustKubectl(t *testing.T, l *Lab, ctx context.Context, stdin string, args ...string) string {
	t.Helper()
	out, err := l.kubectlCmd(ctx, stdin, args...)
	if err != nil {
		t.Fatalf("kubectl %s: %v", strings.Join(args, " "), err)
	}
	return strings.TrimSpace(out)
}

// printedBy is what f printed to l.Stdout; an error of f fails t.
func printedBy(t *testing.T, l *Lab, f func() error) string {
	t.Helper()
	var out bytes.Buffer
	saved := l.Stdout
	l.Stdout = &out
	defer func() { l.Stdout = saved }()
	if err := f(); err != nil {
		t.Fatal(err)
	}
	return out.String()
}

// scenarioNamespaces brings n scenario namespaces up (each with its own
// database); down takes them down again, and runs when t ends if it has
// not (a failure part way leaves none behind).
func scenarioNamespaces(t *testing.T, l *Lab, ctx context.Context, n int) (namespaces []string, down func()) {
	t.Helper()
	var once sync.Once
	down = func() {
		once.Do(func() {
			for _, ns := range namespaces {
				_ = l.ScenarioDown(context.Background(), ns)
			}
		})
	}
	t.Cleanup(down)
	for range n {
		out := printedBy(t, l, func() error { return l.ScenarioUp(ctx) })
		ns, _, _ := strings.Cut(strings.TrimPrefix(out, "NAMESPACE="), "\n")
		namespaces = append(namespaces, ns)
	}
	return namespaces, down
}
