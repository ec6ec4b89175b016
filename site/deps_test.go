package site

import (
	"os/exec"
	"path/filepath"
	"runtime"
	"strings"
	"testing"
)

// TestNoClusterClient: the site is built from the recording alone; no
// package it links may talk to a cluster.
func TestNoClusterClient(t *testing.T) {
	out, err := exec.Command(filepath.Join(runtime.GOROOT(), "bin", "go"), "list", "-deps", "ptah.run/operator/cmd/site").CombinedOutput()
	if err != nil {
		t.Fatalf("go list: %v\n%s", err, out)
	}
	for _, pkg := range strings.Fields(string(out)) {
		if strings.HasPrefix(pkg, "k8s.io/client-go") || strings.HasPrefix(pkg, "sigs.k8s.io/controller-runtime") || pkg == "ptah.run/operator/recorder/observe" {
			t.Errorf("cmd/site links %s", pkg)
		}
	}
}
