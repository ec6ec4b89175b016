package main

import (
	"bytes"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"ptah.run/operator/internal/testenv"
	"ptah.run/operator/recorder/opsource"
	"ptah.run/operator/recorder/runs"
)

// scenarioLab is a lab program as the recorder calls it: scenario-up makes
// a namespace of its own on the real API server and prints what it stands
// for; scenario-down removes it and leaves a mark, so the test sees it ran.
const scenarioLab = `#!/bin/sh
set -e
case "$1" in
scenario-up)
  ns=own-$(od -An -N3 -tx1 /dev/urandom | tr -d ' \n')
  kubectl --kubeconfig "$TEST_KUBECONFIG" create namespace "$ns" >/dev/null
  echo "NAMESPACE=$ns"
  echo "name $ns default" ;;
scenario-down)
  kubectl --kubeconfig "$TEST_KUBECONFIG" delete namespace "$2" --wait=false >/dev/null
  echo "$2" >> "$TEST_DOWN" ;;
*) exit 2 ;;
esac
`

// own is a scenario that writes a file in its working directory, reads it
// back and prints its namespace in a padded table and as a name.
func ownScenario(id, colour string) string {
	return `id: ` + id + `
title: Its own namespace
tagline: Each scenario in a namespace and directory of its own.
learn: What isolation publishes.
tags: [Test]
reset:
  - echo ` + colour + ` > demo/.lab/digest
steps:
  - note: Make it in its own namespace.
    run: kubectl -n "$NAMESPACE" create configmap paint --from-literal=colour="$(cat demo/.lab/digest)"
    expect:
      exit: 0
      stdout_contains: [created]
      resource:
        kind: cm
        name: paint
        fields:
          - path: data.colour
            equals: ` + colour + `
  - note: Its namespace, as a reader's lab names it.
    run: kubectl get namespace "$NAMESPACE" -o custom-columns=NAME:.metadata.name,STATUS:.status.phase
    expect:
      exit: 0
      stdout_contains: [Active]
`
}

func TestRecordParallel(t *testing.T) {
	api := testenv.StartAPIServer(t)
	lab := t.TempDir()
	if err := os.WriteFile(filepath.Join(lab, "secrets"), []byte("s3cret-lab-value\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	prog := filepath.Join(lab, "scenario-lab")
	if err := os.WriteFile(prog, []byte(scenarioLab), 0o755); err != nil {
		t.Fatal(err)
	}
	downs := filepath.Join(lab, "downs")
	t.Setenv("TEST_KUBECONFIG", api.Kubeconfig)
	t.Setenv("TEST_DOWN", downs)
	r := repo{t, t.TempDir()}
	r.git("init", "-q")
	r.write("scenarios/a-blue.yaml", ownScenario("a-blue", "blue"))
	r.write("scenarios/b-green.yaml", ownScenario("b-green", "green"))
	r.write("scenarios/c-red.yaml", ownScenario("c-red", "red"))
	r.write("operator/controller/reconcile.go", operatorGo)
	r.write("demo/.gitkeep", "")
	r.git("add", ".")
	r.git("commit", "-qm", "scenarios")
	src, err := opsource.Read(r.dir)
	if err != nil {
		t.Fatal(err)
	}
	envFile := filepath.Join(lab, "environment")
	env := "KUBECONFIG=" + api.Kubeconfig + "\nNAMESPACE=default\nPTAH_LAB_RUN_ID=k7q2x9\nPTAH_LAB_SECRETS=secrets\nPTAH_LAB_KUBERNETES=v1.37.2" +
		"\nPTAH_LAB_OPERATOR_SOURCE=" + src.Digest + "\nPTAH_LAB_SCENARIOS=" + prog + "\n"
	if err := os.WriteFile(envFile, []byte(env), 0o600); err != nil {
		t.Fatal(err)
	}
	t.Chdir(r.dir)
	out := filepath.Join(r.dir, "demo/recordings/runs.json")
	args := []string{"-scenarios", "scenarios", "-output", out, "-environment", envFile, "-parallel", "3"}

	code, stdout, stderr := runRecord(t, args...)
	if code != 0 {
		t.Fatalf("record -parallel 3 exited %d\nstdout: %s\nstderr: %s", code, stdout, stderr)
	}
	rec, err := runs.Read(out)
	if err != nil {
		t.Fatal(err)
	}
	var ids []string
	for _, s := range rec.Scenarios {
		ids = append(ids, s.ID)
		table := s.Events[1].Output
		// The header is as kubectl printed it for the longer own name; the
		// published name is padded so STATUS stays over its column.
		if len(table) != 2 || !strings.HasPrefix(table[1].Text, "default ") ||
			strings.Index(table[0].Text, "STATUS") != strings.Index(table[1].Text, "Active") {
			t.Errorf("%s: namespace table %+v, want the published namespace with its columns kept", s.ID, table)
		}
	}
	if strings.Join(ids, ",") != "a-blue,b-green,c-red" {
		t.Errorf("scenarios in the recording: %v, want scenario order", ids)
	}
	for _, id := range ids {
		if !strings.Contains(stderr, id+" step 2/2") {
			t.Errorf("no progress line of %s step 2: %s", id, stderr)
		}
	}
	if raw, _ := os.ReadFile(downs); len(strings.Fields(string(raw))) != 3 {
		t.Errorf("scenario-down ran for %q, want each of the 3 namespaces", raw)
	}
	if _, err := os.Stat(filepath.Join(r.dir, "demo/.lab/digest")); err == nil {
		t.Errorf("a scenario wrote the shared demo/.lab/digest, not its own")
	}
	r.git("add", ".")
	r.git("commit", "-qm", "recording")

	t.Run("a failing scenario stops none of the others and nothing is written", func(t *testing.T) {
		before, _ := os.ReadFile(out)
		r.write("scenarios/b-green.yaml", strings.Replace(ownScenario("b-green", "green"), "equals: green", "equals: mauve", 1))
		r.git("commit", "-qam", "break the middle one")
		defer func() {
			r.write("scenarios/b-green.yaml", ownScenario("b-green", "green"))
			r.git("commit", "-qam", "mend it")
		}()
		code, _, stderr := runRecord(t, args...)
		if code != 1 || !strings.Contains(stderr, "1 of 3 scenarios failed or flaked (b-green); nothing was written") ||
			!strings.Contains(stderr, "a-blue step 2/2") || !strings.Contains(stderr, "c-red step 2/2") {
			t.Errorf("record with a failing scenario exited %d: %s", code, stderr)
		}
		if after, _ := os.ReadFile(out); !bytes.Equal(before, after) {
			t.Errorf("a run with a failed scenario changed %s", out)
		}
	})

	t.Run("a scenario's own name left in the output is refused", func(t *testing.T) {
		before, _ := os.ReadFile(out)
		r.write("scenarios/c-red.yaml", ownScenario("c-red", "red")+`  - note: Glue the name to a word.
    run: echo "x$NAMESPACE"
    expect:
      exit: 0
`)
		r.git("commit", "-qam", "glue")
		defer func() {
			r.write("scenarios/c-red.yaml", ownScenario("c-red", "red"))
			r.git("commit", "-qam", "unglue")
		}()
		code, _, stderr := runRecord(t, args...)
		if code != 1 || !strings.Contains(stderr, "a name the lab made for this scenario alone") || !strings.Contains(stderr, "(c-red); nothing was written") {
			t.Errorf("a leftover scenario name exited %d: %s", code, stderr)
		}
		if after, _ := os.ReadFile(out); !bytes.Equal(before, after) {
			t.Errorf("a refused run changed %s", out)
		}
	})

	t.Run("parallel without a lab that gives namespaces is a usage error", func(t *testing.T) {
		plain := strings.Replace(env, "PTAH_LAB_SCENARIOS="+prog+"\n", "", 1)
		f := filepath.Join(lab, "plain")
		os.WriteFile(f, []byte(plain), 0o600)
		code, _, stderr := runRecord(t, "-scenarios", "scenarios", "-output", out, "-environment", f, "-parallel", "2")
		if code != 2 || !strings.Contains(stderr, "PTAH_LAB_SCENARIOS") {
			t.Errorf("-parallel 2 on a lab without namespaces exited %d: %s", code, stderr)
		}
	})
}
