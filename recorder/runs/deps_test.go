package runs

import (
	"os/exec"
	"path/filepath"
	"runtime"
	"strings"
	"testing"
)

// TestLeaf: runs links the standard library and the JSON Schema validator,
// nothing of this module and no cluster client or shell parser, so whatever
// reads a recording stays small.
func TestLeaf(t *testing.T) {
	out, err := exec.Command(filepath.Join(runtime.GOROOT(), "bin", "go"), "list", "-deps", "-f", "{{if not .Standard}}{{.ImportPath}}{{end}}", "ptah.run/operator/recorder/runs").CombinedOutput()
	if err != nil {
		t.Fatalf("go list: %v\n%s", err, out)
	}
	for _, pkg := range strings.Fields(string(out)) {
		switch {
		case pkg == "ptah.run/operator/recorder/runs":
		case strings.HasPrefix(pkg, "github.com/santhosh-tekuri/jsonschema/"), strings.HasPrefix(pkg, "golang.org/x/text/"):
		default:
			t.Errorf("recorder/runs links %s", pkg)
		}
	}
}
