package site

import (
	"os/exec"
	"path/filepath"
	"runtime"
	"strings"
	"testing"
)

// TestNoClusterClient: the site is built from the recording alone; no
// package it links may talk to a cluster or parse shell: it reads runs.json
// through the leaf package runs.
func TestNoClusterClient(t *testing.T) {
	out, err := exec.Command(filepath.Join(runtime.GOROOT(), "bin", "go"), "list", "-deps", "ptah.run/operator/cmd/site").CombinedOutput()
	if err != nil {
		t.Fatalf("go list: %v\n%s", err, out)
	}
	forbidden := []string{"k8s.io/client-go", "k8s.io/apimachinery", "sigs.k8s.io/controller-runtime", "mvdan.cc/sh",
		"ptah.run/operator/recorder/observe", "ptah.run/operator/recorder/shellenv", "ptah.run/operator/recorder/scenario",
		"ptah.run/operator/recorder/recording", "ptah.run/operator/recorder/session"}
	pkgs := strings.Fields(string(out))
	for _, pkg := range pkgs {
		for _, f := range forbidden {
			if pkg == f || strings.HasPrefix(pkg, f+"/") {
				t.Errorf("cmd/site links %s", pkg)
			}
		}
	}
	if !strings.Contains(string(out), "ptah.run/operator/recorder/runs\n") {
		t.Errorf("cmd/site does not link recorder/runs; the test would pass for the wrong reason:\n%s", out)
	}
}
