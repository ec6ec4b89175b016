// Package opsource names the operator source a recording demonstrates: a
// digest of the operator's own files (its code, the binaries' mains, its
// manifests and chart, the module's requirements), with one digest per file
// so that a stale recording can say which files changed.
package opsource

import (
	"bytes"
	"crypto/sha256"
	"encoding/hex"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
)

// Paths are what the operator images and the installed release are built
// from, relative to the repository root. Tests and their data are left
// out: they change no byte the lab runs.
var Paths = []string{
	"operator",
	"internal/controller",
	"internal/runner",
	"internal/resultlog",
	"internal/stamp",
	"cmd/manager",
	"cmd/ptah",
	"cmd/ptah-runner",
	"cmd/kubectl-ptah",
	"cmd/internal",
	"go.mod",
	"go.sum",
}

// Source is the operator source at one moment: a sha256 per file and a
// digest over all of them.
type Source struct {
	Digest string
	Files  map[string]string
}

// Read hashes the operator's files in the checkout at root as they are on
// disk: tracked files and untracked ones git does not ignore, so an edit
// not yet committed counts.
func Read(root string) (Source, error) {
	args := append([]string{"ls-files", "-z", "--cached", "--others", "--exclude-standard", "--"}, Paths...)
	cmd := exec.Command("git", args...)
	cmd.Dir = root
	var stderr bytes.Buffer
	cmd.Stderr = &stderr
	out, err := cmd.Output()
	if err != nil {
		return Source{}, fmt.Errorf("opsource: list the operator's files in %s: %v: %s (run inside the checkout)", root, err, strings.TrimSpace(stderr.String()))
	}
	files := map[string]string{}
	for _, name := range strings.Split(string(out), "\x00") {
		if name == "" || !counts(name) {
			continue
		}
		raw, err := os.ReadFile(filepath.Join(root, name))
		if os.IsNotExist(err) {
			continue // deleted in the work tree, not yet in the index
		}
		if err != nil {
			return Source{}, fmt.Errorf("opsource: read %s: %w", name, err)
		}
		sum := sha256.Sum256(raw)
		files[name] = hex.EncodeToString(sum[:])
	}
	if len(files) == 0 {
		return Source{}, fmt.Errorf("opsource: no operator files under %s in %s; run inside the checkout", strings.Join(Paths, ", "), root)
	}
	return Source{Digest: Digest(files), Files: files}, nil
}

func counts(name string) bool {
	return !strings.HasSuffix(name, "_test.go") && !slices.Contains(strings.Split(name, "/"), "testdata")
}

// Digest is sha256 over the sorted lines "<sha256>  <path>" (sha256sum's
// format), so it can be checked with ordinary tools.
func Digest(files map[string]string) string {
	var b strings.Builder
	for _, name := range sorted(files) {
		b.WriteString(files[name] + "  " + name + "\n")
	}
	sum := sha256.Sum256([]byte(b.String()))
	return "sha256:" + hex.EncodeToString(sum[:])
}

// Changes names what differs from was to now, one line per file, sorted:
// "changed internal/controller/x.go", "added ...", "removed ...".
func Changes(was, now map[string]string) []string {
	var out []string
	for _, name := range sorted(now) {
		old, ok := was[name]
		switch {
		case !ok:
			out = append(out, "added "+name)
		case old != now[name]:
			out = append(out, "changed "+name)
		}
	}
	for _, name := range sorted(was) {
		if _, ok := now[name]; !ok {
			out = append(out, "removed "+name)
		}
	}
	slices.SortStableFunc(out, func(a, b string) int {
		return strings.Compare(a[strings.IndexByte(a, ' ')+1:], b[strings.IndexByte(b, ' ')+1:])
	})
	return out
}

func sorted(m map[string]string) []string {
	keys := make([]string, 0, len(m))
	for k := range m {
		keys = append(keys, k)
	}
	slices.Sort(keys)
	return keys
}
