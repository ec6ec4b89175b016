package lab

import (
	"context"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	v1 "github.com/google/go-containerregistry/pkg/v1"
	"helm.sh/helm/v3/pkg/action"
	"helm.sh/helm/v3/pkg/chart/loader"

	ptahrelease "ptah.run/operator/internal/release"
)

// upgradeFrom is release N of the upgrade check: a commit of main that CI
// passed, older than the tree (its manager, executor and chart differ from
// this tree's). Move it forward when the release a user could have
// installed moves.
const upgradeFrom = "4696717d841354c8dfffbfecb00cc0d763026b31"

// TestUpgrade runs upgradeFromRelease on the lab that is up (make demo-up);
// TestLabUpAndDown runs it on its own lab.
func TestUpgrade(t *testing.T) {
	upgradeFromRelease(t, attachedLab(t), context.Background())
}

// upgradeFromRelease: the lab's release is replaced by release N, built
// from commit upgradeFrom (its binaries, images and chart, published to
// the lab's registry as a user's release is), installed with helm; a
// PtahSchema and a PtahMigration converge under it through real Jobs. Then
// `helm upgrade` to this tree's release, as a user upgrades. Nothing
// applies again (no Apply Job is started after the upgrade, the applied
// state is the same), no plan is lost, InSync stays True through the
// upgrade, and an operation the new manager started on each (an Observe)
// ends with InSync still True.
func upgradeFromRelease(t *testing.T, l *Lab, ctx context.Context) {
	t.Helper()
	kubectl := func(args ...string) string {
		t.Helper()
		return mustKubectl(t, l, ctx, "", args...)
	}
	current, err := l.installed(ctx)
	if err != nil {
		t.Fatal(err)
	}
	old := buildRelease(t, l, ctx, upgradeFrom)
	cfg, err := l.helmConfig(OperatorNamespace, current)
	if err != nil {
		t.Fatal(err)
	}
	values, err := action.NewGetValues(cfg).Run(ReleaseName)
	if err != nil {
		t.Fatal(err)
	}
	controller := l.controllerName(ctx)
	// The cluster of a user of release N: the tree's release uninstalled
	// (its CRDs stay, helm.sh/resource-policy keep), N installed.
	if _, err := action.NewUninstall(cfg).Run(ReleaseName); err != nil {
		t.Fatalf("helm uninstall %s: %v", ReleaseName, err)
	}
	kubectl("-n", OperatorNamespace, "wait", "pods", "-l", "app.kubernetes.io/name="+controller, "--for=delete", "--timeout=2m")
	reinstalled := false
	defer func() {
		if !reinstalled {
			if _, err := l.installChart(context.Background(), current, ReleaseName, OperatorNamespace, values, true); err != nil {
				t.Errorf("put the lab's release back: %v", err)
			}
		}
	}()
	if _, err := l.installChart(ctx, old, ReleaseName, OperatorNamespace, values, true); err != nil {
		t.Fatalf("install release N: %v", err)
	}
	kubectl("-n", OperatorNamespace, "rollout", "status", "deployment/"+controller, "--timeout=3m")
	if img := kubectl("-n", OperatorNamespace, "get", "deployment", controller, "-o", "jsonpath={.spec.template.spec.containers[0].image}"); !strings.HasSuffix(img, ":"+old.Version) {
		t.Fatalf("release N runs image %s, want its own (%s)", img, old.Version)
	}

	namespaces, down := scenarioNamespaces(t, l, ctx, 2)
	defer down()
	schemaNS, migrationNS := namespaces[0], namespaces[1]
	published := func(f func() error) string {
		t.Helper()
		return strings.TrimSpace(printedBy(t, l, f))
	}
	apply := func(name, digest, ns string) {
		t.Helper()
		doc, err := l.Manifest(name, digest, env(map[string]string{"APPLY": "Always", "NAMESPACE": ns, "INTERVAL": "30s"}))
		if err != nil {
			t.Fatal(err)
		}
		if _, err := l.kubectlCmd(ctx, doc, "apply", "-f", "-"); err != nil {
			t.Fatal(err)
		}
	}
	apply("storefront", published(func() error { return l.Publish(ctx, "v1") }), schemaNS)
	apply("ledger", published(func() error { return l.PublishMigrations(ctx, "ledger-v1") }), migrationNS)
	subjects := []struct{ ns, kind, name, applied string }{
		{schemaNS, "ptahschema", "storefront", "{.status.applied}"},
		{migrationNS, "ptahmigration", "ledger", "{.status.appliedVersion}"},
	}
	for _, s := range subjects {
		kubectl("-n", s.ns, "wait", s.kind+"/"+s.name, "--for=condition=InSync", "--timeout=5m")
	}
	type state struct{ applied, plans, applyJobs string }
	snapshot := func() map[string]state {
		got := map[string]state{}
		for _, s := range subjects {
			got[s.kind] = state{
				applied:   kubectl("-n", s.ns, "get", s.kind, s.name, "-o", "jsonpath="+s.applied),
				plans:     kubectl("-n", s.ns, "get", s.kind+"plans", "-o", "name"),
				applyJobs: kubectl("-n", s.ns, "get", "jobs", "-l", "operator.ptah.run/op=apply", "-o", "name"),
			}
		}
		return got
	}
	before := snapshot()
	for kind, s := range before {
		if s.applied == "" || s.applyJobs == "" {
			t.Fatalf("%s under release N: applied %q by Jobs %q: nothing was applied to upgrade from", kind, s.applied, s.applyJobs)
		}
	}

	// InSync is watched through the upgrade: every second, both subjects.
	var mu sync.Mutex
	var lapses []string
	watch, stopWatch := context.WithCancel(ctx)
	var watched sync.WaitGroup
	watched.Add(1)
	go func() {
		defer watched.Done()
		for watch.Err() == nil {
			for _, s := range subjects {
				out, err := l.kubectlCmd(watch, "", "-n", s.ns, "get", s.kind, s.name, "-o", `jsonpath={.status.conditions[?(@.type=="InSync")].status}`)
				if err == nil && strings.TrimSpace(out) != "True" {
					mu.Lock()
					lapses = append(lapses, fmt.Sprintf("%s %s InSync=%q at %s", s.kind, s.name, strings.TrimSpace(out), time.Now().Format(time.TimeOnly)))
					mu.Unlock()
				}
			}
			time.Sleep(time.Second)
		}
	}()

	start := time.Now()
	if _, err := l.installChart(ctx, current, ReleaseName, OperatorNamespace, values, true); err != nil {
		t.Fatalf("helm upgrade to this tree's release: %v", err)
	}
	reinstalled = true
	kubectl("-n", OperatorNamespace, "rollout", "status", "deployment/"+controller, "--timeout=3m")
	upgraded := time.Now()
	t.Logf("helm upgrade %s from %s to %s: %s", ReleaseName, old.Version, current.Version, upgraded.Sub(start).Round(time.Second))
	// The new manager proves both again: an operation it started (its Event
	// reported by the new Pod; an Observe at the 30 s interval) has ended.
	pod := kubectl("-n", OperatorNamespace, "get", "pods", "-l", "app.kubernetes.io/name="+controller, "--field-selector=status.phase=Running", "-o", "jsonpath={.items[0].metadata.name}")
	for _, s := range subjects {
		deadline := time.Now().Add(3 * time.Minute)
		for {
			events := kubectl("-n", s.ns, "get", "events", "--field-selector", "involvedObject.name="+s.name, "-o", "jsonpath={range .items[*]}{.reportingInstance} {.reason}{\"\\n\"}{end}")
			started := slices.ContainsFunc(strings.Split(events, "\n"), func(e string) bool { return strings.Contains(e, pod+" ") && strings.HasSuffix(e, " OperationStarted") })
			if started && kubectl("-n", s.ns, "get", s.kind, s.name, "-o", "jsonpath={.status.activeOperation}") == "" {
				break
			}
			if time.Now().After(deadline) {
				t.Fatalf("%s %s: no operation the upgraded manager (%s) started had ended within 3m; events:\n%s", s.kind, s.name, pod, events)
			}
			time.Sleep(2 * time.Second)
		}
	}
	stopWatch()
	watched.Wait()
	after := snapshot()
	for kind, b := range before {
		a := after[kind]
		if a.applied != b.applied {
			t.Errorf("%s: applied changed across the upgrade:\nbefore %s\nafter  %s", kind, b.applied, a.applied)
		}
		if a.applyJobs != b.applyJobs {
			t.Errorf("%s: Apply Jobs before the upgrade %q, after %q: something applied again", kind, b.applyJobs, a.applyJobs)
		}
		for _, p := range strings.Fields(b.plans) {
			if !strings.Contains(a.plans, p) {
				t.Errorf("%s: plan %s lost across the upgrade", kind, p)
			}
		}
	}
	if len(lapses) > 0 {
		t.Errorf("InSync was not True during the upgrade: %v", lapses)
	}
	t.Logf("release N %s (commit %.12s) -> %s: nothing applied again, InSync held, proved again by %s in %s", old.Version, upgradeFrom, current.Version, pod, time.Since(upgraded).Round(time.Second))
}

// buildRelease publishes release 0.0.0-lab.<commit> to the lab's registry
// from commit's tree: its manager, runner and ptah built as make binaries
// builds them, assembled into images, and its chart.
func buildRelease(t *testing.T, l *Lab, ctx context.Context, commit string) *labRelease {
	t.Helper()
	tree := filepath.Join(t.TempDir(), "tree")
	git := func(args ...string) {
		t.Helper()
		cmd := exec.CommandContext(ctx, "git", args...)
		cmd.Dir = l.Root
		if out, err := cmd.CombinedOutput(); err != nil {
			t.Fatalf("git %s: %v\n%s", strings.Join(args, " "), err, out)
		}
	}
	git("worktree", "add", "--detach", tree, commit)
	t.Cleanup(func() { git("worktree", "remove", "--force", tree) })
	bin := filepath.Join(tree, "bin")
	build := exec.CommandContext(ctx, "go", "build", "-trimpath", "-ldflags", "-s -w -X main.version="+commit[:7], "-o", bin+"/", "./cmd/ptah", "./cmd/ptah-runner", "./cmd/manager")
	build.Dir = tree
	build.Env = append(os.Environ(), "CGO_ENABLED=0")
	if out, err := build.CombinedOutput(); err != nil {
		t.Fatalf("build release N's binaries at %s: %v\n%s", commit, err, out)
	}
	imgs, err := ptahrelease.FromBinaries(bin)
	if err != nil {
		t.Fatal(err)
	}
	c, err := loader.Load(filepath.Join(tree, "operator", "chart", "ptah-operator"))
	if err != nil {
		t.Fatal(err)
	}
	s, err := l.loadState()
	if err != nil {
		t.Fatal(err)
	}
	port, err := l.d.HostPort(ctx, s.registry, "5000/tcp")
	if err != nil {
		t.Fatal(err)
	}
	r, err := l.publishRelease(ctx, s, port, "0.0.0-lab."+commit[:12], map[string]v1.Image{"ptah-manager": imgs.Manager, "ptah-executor": imgs.Executor}, c)
	if err != nil {
		t.Fatalf("publish release N: %v", err)
	}
	return r
}
