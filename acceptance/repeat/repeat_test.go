package repeat

import (
	"bytes"
	"context"
	"encoding/base64"
	"encoding/json"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"ptah.run/operator/internal/testenv"
	"ptah.run/operator/recorder/check"
	"ptah.run/operator/recorder/recording"
	"ptah.run/operator/recorder/scenario"
)

const fixtureScenario = `id: account-fixture
title: The account's reach
tagline: What the reproducing account may and may not do.
learn: That a repetition runs as an account without the right to create a Job.
tags: [Testing]
reset:
  - demo/bin/lab reset
steps:
  - note: The manifest the lab handed over is applied by the account.
    run: APPLY=Always demo/bin/lab manifest storefront "$(cat demo/.lab/digest)" | kubectl apply -f -
    expect:
      exit: 0
      stdout_contains: [created]
  - note: The account may patch it.
    run: kubectl -n "$NAMESPACE" patch ptahschema storefront --type=merge -p '{"spec":{"suspend":true}}'
    expect:
      exit: 0
      stdout_contains: [patched]
      resource:
        kind: ptahschema
        name: storefront
        fields:
          - {path: spec.suspend, equals: "true"}
  - note: It may not create a Job.
    run: kubectl -n "$NAMESPACE" create job probe --image=registry.invalid/probe
    expect:
      exit: 1
      stdout_contains: [forbidden]
`

const fixtureManifest = `apiVersion: operator.ptah.run/v1alpha1
kind: PtahSchema
metadata:
  name: storefront
  namespace: ptah-demo
spec:
  target:
    engine: postgres
    urlFrom: {name: demo-database, key: url}
  desired:
    ociRef: oci://registry.ptah-demo.svc:5000/storefront@sha256:` + "0123456789abcdef0123456789abcdef0123456789abcdef0123456789abcdef" + `
  policy:
    apply: Always
`

// The repetition against a real API server: the account from
// acceptance/account.yaml may apply and patch a PtahSchema but not create a
// Job, the steps run in a directory holding only the hand-over and the
// kubeconfig, each claim is checked on the live object, and the transcript
// is diffed against the published one.
func TestRepeatAsAnAccountThatCannotCreateJobs(t *testing.T) {
	kubectlPath, err := exec.LookPath("kubectl")
	if err != nil {
		t.Fatal("kubectl is not on PATH; the repetition's commands need it")
	}
	api := testenv.StartAPIServer(t, testenv.WithCRDs("../../operator/config/crd/bases"))
	admin := func(stdin string, args ...string) string {
		t.Helper()
		cmd := exec.Command(kubectlPath, append([]string{"--kubeconfig", api.Kubeconfig}, args...)...)
		cmd.Stdin = strings.NewReader(stdin)
		out, err := cmd.CombinedOutput()
		if err != nil {
			t.Fatalf("kubectl %s: %v\n%s", strings.Join(args, " "), err, out)
		}
		return strings.TrimSpace(string(out))
	}
	admin("", "create", "namespace", "ptah-demo")
	admin("", "create", "namespace", "ptah-system")
	account, err := os.ReadFile("../account.yaml")
	if err != nil {
		t.Fatal(err)
	}
	rendered := strings.NewReplacer("${NAMESPACE}", "ptah-demo", "${OPERATOR_NAMESPACE}", "ptah-system").Replace(string(account))
	admin(rendered, "apply", "-f", "-")
	token := admin("", "-n", "ptah-demo", "create", "token", "ptah-reproduce")

	work := t.TempDir()
	kubeconfig := filepath.Join(work, "kubeconfig")
	if err := os.WriteFile(kubeconfig, []byte(fmt.Sprintf(`apiVersion: v1
kind: Config
clusters: [{name: t, cluster: {server: %q, certificate-authority-data: %q}}]
users: [{name: a, user: {token: %q}}]
contexts: [{name: a, context: {cluster: t, user: a, namespace: ptah-demo}}]
current-context: a
`, api.Config.Host, base64.StdEncoding.EncodeToString(api.Config.CAData), token)), 0o600); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(work, "step1-manifest.yaml"), []byte(fixtureManifest), 0o600); err != nil {
		t.Fatal(err)
	}
	environ := []string{"PATH=" + filepath.Dir(kubectlPath) + ":/usr/bin:/bin", "HOME=" + t.TempDir(), "TERM=xterm-256color", "LANG=C.UTF-8",
		"KUBECONFIG=" + kubeconfig, "NAMESPACE=ptah-demo"}
	canI := func(args ...string) string {
		cmd := exec.Command(kubectlPath, append([]string{"auth", "can-i", "-n", "ptah-demo"}, args...)...)
		cmd.Env = environ
		out, _ := cmd.Output()
		return strings.TrimSpace(string(out))
	}
	if got := canI("create", "jobs"); got != "no" {
		t.Fatalf("kubectl auth can-i create jobs printed %q as the account, want no", got)
	}
	for _, need := range [][]string{
		{"create", "ptahschemas.operator.ptah.run"}, {"patch", "ptahschemas.operator.ptah.run"},
		{"create", "ptahschemaapprovals.operator.ptah.run"}, {"list", "events"},
		{"create", "pods", "--subresource=exec"}, {"get", "deployments", "-n", "ptah-system"},
		{"get", "customresourcedefinitions.apiextensions.k8s.io"},
		{"create", "ptahmigrations.operator.ptah.run"}, {"create", "ptahmigrationrunacknowledgments.operator.ptah.run"},
		{"delete", "pods"},
	} {
		if got := canI(need...); got != "yes" {
			t.Errorf("kubectl auth can-i %s printed %q as the account; the scenarios need it", strings.Join(need, " "), got)
		}
	}

	scenarios := t.TempDir()
	file := filepath.Join(scenarios, "account-fixture.yaml")
	if err := os.WriteFile(file, []byte(fixtureScenario), 0o644); err != nil {
		t.Fatal(err)
	}
	def, err := scenario.Load(file)
	if err != nil {
		t.Fatal(err)
	}
	plan, err := planFor(def)
	if err != nil {
		t.Fatal(err)
	}
	var pubChecks []check.Check
	for _, c := range claims(def) {
		pubChecks = append(pubChecks, check.Check{Step: c.Step, Claim: c.Text, Held: true})
	}
	pub := recording.Scenario{ID: def.ID, DefinitionDigest: recording.DefinitionDigest(def), Checks: pubChecks, Events: []recording.Event{
		{Step: 1, Note: def.Steps[0].Note, Command: def.Steps[0].Run, Output: []recording.Line{{Text: "ptahschema.operator.ptah.run/storefront created"}}},
		{Step: 2, Note: def.Steps[1].Note, Command: def.Steps[1].Run, Output: []recording.Line{{Text: "ptahschema.operator.ptah.run/storefront patched"}}},
		{Step: 3, Note: def.Steps[2].Note, Command: def.Steps[2].Run, Output: []recording.Line{{Text: "published line the repetition will not print"}}},
	}}
	rec, _ := json.Marshal(recording.Recording{Scenarios: []recording.Scenario{pub}})
	runs := filepath.Join(t.TempDir(), "runs.json")
	if err := os.WriteFile(runs, rec, 0o644); err != nil {
		t.Fatal(err)
	}

	o := Options{ID: def.ID, Scenarios: scenarios, Recording: runs, Environment: filepath.Join(t.TempDir(), "none")}
	loaded, err := Load(o)
	if err != nil {
		t.Fatalf("the fixture is not a published scenario: %v", err)
	}
	if len(loaded.Plan.HandOvers) != 1 || loaded.Plan.HandOvers[0].File != "step1-manifest.yaml" {
		t.Fatalf("hand-overs %+v, want step 1's manifest", loaded.Plan.HandOvers)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	var stdout, stderr bytes.Buffer
	if err := Run(ctx, o, Published{Recorded: pub, Plan: plan}, work, environ, &stdout, &stderr); err != nil {
		t.Fatalf("repeat: %v\nstdout:\n%s\nstderr:\n%s", err, stdout.String(), stderr.String())
	}
	out := stdout.String()
	t.Logf("the repetition's report:\n%s", out)
	for _, want := range []string{
		"1     held       held        exits 0, prints \"created\"",
		"2     held       held        ptahschema/storefront: spec.suspend = \"true\"",
		"3     held       held        exits 1, prints \"forbidden\"",
		"(step 1: the published APPLY=Always demo/bin/lab manifest storefront \"$(cat demo/.lab/digest)\" is compared as the file the lab handed over, step1-manifest.yaml)",
		" $ cat step1-manifest.yaml | kubectl apply -f -",
		" ptahschema.operator.ptah.run/storefront created",
		"-published line the repetition will not print",
		"system:serviceaccount:ptah-demo:ptah-reproduce",
		"4 claims held; the recording published 4",
	} {
		if !strings.Contains(out, want) {
			t.Errorf("the repetition's report lacks %q:\n%s", want, out)
		}
	}
	if got := admin("", "-n", "ptah-demo", "get", "ptahschema", "storefront", "-o", "jsonpath={.spec.suspend}"); got != "true" {
		t.Errorf("spec.suspend is %q on the live object after the repetition, want true", got)
	}
	if got := admin("", "-n", "ptah-demo", "get", "jobs", "-o", "name"); got != "" && !strings.Contains(got, "No resources") {
		t.Errorf("the account created a Job: %s", got)
	}
	if got := canI("create", "jobs"); got != "no" {
		t.Errorf("kubectl auth can-i create jobs printed %q after the repetition, want no", got)
	}
}
