package lab

import (
	"context"
	"os"
	"strings"
	"testing"
	"time"

	"ptah.run/operator/internal/testenv"
)

// TestLabCompat (make compat): a lab whose node runs the oldest supported
// Kubernetes release, the operator installed from the lab's OCI chart as a
// user installs it (helm chooses the admission path from the cluster: no
// MutatingAdmissionPolicy is served there, so the manager's stamp
// webhook), the storefront converged through real Jobs, the README's quick
// start followed (its approval stamped by the webhook), and the lab down.
func TestLabCompat(t *testing.T) {
	if os.Getenv("PTAH_LAB_COMPAT") != "1" {
		t.Skip("set PTAH_LAB_COMPAT=1 (make compat) to bring a lab up on Kubernetes " + testenv.OldestKubernetesVersion)
	}
	l, stdout, _ := ownLab(t)
	l.WithKubernetes(testenv.OldestKubernetesVersion)
	ctx := context.Background()
	start := time.Now()
	if err := l.Up(ctx); err != nil {
		t.Fatalf("lab up on %s: %v", l.Kubernetes, err)
	}
	t.Logf("lab up on Kubernetes %s: %s", l.Kubernetes, time.Since(start).Round(time.Second))
	kubectl := func(args ...string) string {
		t.Helper()
		return mustKubectl(t, l, ctx, "", args...)
	}
	if got := kubectl("get", "nodes", "-o", "jsonpath={.items[*].status.nodeInfo.kubeletVersion}"); got != l.Kubernetes {
		t.Fatalf("the node's kubelet is %q, want %s", got, l.Kubernetes)
	}
	if got := kubectl("api-resources", "--api-group", "admissionregistration.k8s.io", "-o", "name"); strings.Contains(got, "mutatingadmissionpolicies") {
		t.Errorf("Kubernetes %s serves MutatingAdmissionPolicy (%s): this lab does not show the webhook path", l.Kubernetes, got)
	}
	if got := kubectl("get", "mutatingwebhookconfiguration", "ptah-stamp", "-o", "jsonpath={.webhooks[0].clientConfig.caBundle}"); got == "" {
		t.Errorf("the chart's stamp webhook has no caBundle: the manager did not put its CA there")
	}

	stdout.Reset()
	if err := l.Publish(ctx, "v1"); err != nil {
		t.Fatalf("lab publish v1: %v", err)
	}
	doc, err := l.Manifest("storefront", strings.TrimSpace(stdout.String()), env(map[string]string{"APPLY": "Always"}))
	if err != nil {
		t.Fatal(err)
	}
	if _, err := l.kubectlCmd(ctx, doc, "apply", "-f", "-"); err != nil {
		t.Fatalf("the API server refuses the rendered manifest: %v", err)
	}
	convergesThroughRealJobs(t, l, ctx)
	start = time.Now()
	readmeQuickStart(t, l, ctx)
	t.Logf("README.md's quick start on %s: %s", l.Kubernetes, time.Since(start).Round(time.Second))

	start = time.Now()
	if err := l.Down(ctx, false); err != nil {
		t.Fatalf("lab down: %v", err)
	}
	t.Logf("lab down: %s", time.Since(start).Round(time.Second))
}
