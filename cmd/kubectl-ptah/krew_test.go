package main

import (
	"archive/tar"
	"compress/gzip"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"runtime"
	"slices"
	"strings"
	"testing"

	"sigs.k8s.io/yaml"
)

// krewVersion is the krew whose own code validates and installs the
// manifest: its validate-krew-manifest (the check krew-index runs on every
// plugin submitted) and `kubectl krew install`.
const krewVersion = "v0.4.3"

// krewTools builds krew's two commands from the Go module proxy into a
// cache kept across runs.
func krewTools(t *testing.T) (krew, validate string) {
	t.Helper()
	cache, err := os.UserCacheDir()
	if err != nil {
		t.Fatal(err)
	}
	bin := filepath.Join(cache, "ptah", "bin", "krew-"+krewVersion)
	krew, validate = filepath.Join(bin, "krew"), filepath.Join(bin, "validate-krew-manifest")
	if _, err := os.Stat(validate); err == nil {
		if _, err := os.Stat(krew); err == nil {
			return krew, validate
		}
	}
	cmd := exec.Command("go", "install", "sigs.k8s.io/krew/cmd/krew@"+krewVersion, "sigs.k8s.io/krew/cmd/validate-krew-manifest@"+krewVersion)
	cmd.Env = append(os.Environ(), "GOBIN="+bin, "GOFLAGS=-mod=mod")
	if out, err := cmd.CombinedOutput(); err != nil {
		t.Fatalf("build krew %s from the module proxy: %v\n%s", krewVersion, err, out)
	}
	return krew, validate
}

// manifest is the krew manifest as YAML reads it: what is asserted here is
// only what this project chooses (its platforms); what makes a manifest
// valid is krew's to say.
type manifest = map[string]any

func readManifest(t *testing.T, path string) manifest {
	t.Helper()
	b, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	var m manifest
	if err := yaml.Unmarshal(b, &m); err != nil {
		t.Fatalf("%s: %v", path, err)
	}
	return m
}

func platforms(m manifest) []map[string]any {
	var out []map[string]any
	spec, _ := m["spec"].(map[string]any)
	list, _ := spec["platforms"].([]any)
	for _, p := range list {
		if pm, ok := p.(map[string]any); ok {
			out = append(out, pm)
		}
	}
	return out
}

func platformOf(p map[string]any) string {
	sel, _ := p["selector"].(map[string]any)
	labels, _ := sel["matchLabels"].(map[string]any)
	return fmt.Sprintf("%v/%v", labels["os"], labels["arch"])
}

// TestKrewManifest builds this machine's archive with the make target
// that builds every platform's and writes the manifest with each archive's
// sha256, then has krew's own code judge it: validate-krew-manifest (the
// structural validation krew-index runs) on the manifest of the platform
// built here, and `kubectl krew install --manifest --archive`, which checks
// the archive's sha256 against the manifest, installs the files it names,
// requires the licence and links the binary, which then runs. An archive
// whose sha256 is not the manifest's is refused by krew. `make release`
// validates the manifest of all four platforms the same way.
func TestKrewManifest(t *testing.T) {
	committed := readManifest(t, filepath.Join("krew", "ptah.yaml"))
	var seen []string
	for _, p := range platforms(committed) {
		seen = append(seen, platformOf(p))
	}
	if want := []string{"linux/amd64", "linux/arm64", "darwin/amd64", "darwin/arm64"}; !slices.Equal(seen, want) {
		t.Errorf("platforms %v, want %v", seen, want)
	}
	host := runtime.GOOS + "/" + runtime.GOARCH
	if !slices.Contains(seen, host) {
		t.Skipf("no archive for this machine's platform %s", host)
	}
	krew, validate := krewTools(t)
	dist := t.TempDir()
	mk := exec.Command("make", "--no-print-directory", "plugin-archives", "PLATFORMS="+host, "DIST="+dist, "VERSION=0.1.0")
	mk.Dir = filepath.Join("..", "..")
	if out, err := mk.CombinedOutput(); err != nil {
		t.Fatalf("make plugin-archives: %v\n%s", err, out)
	}
	archive := filepath.Join(dist, fmt.Sprintf("kubectl-ptah_%s_%s.tar.gz", runtime.GOOS, runtime.GOARCH))
	written := readManifest(t, filepath.Join(dist, "ptah.yaml"))
	built := slices.DeleteFunc(platforms(written), func(p map[string]any) bool { return platformOf(p) != host })
	written["spec"].(map[string]any)["platforms"] = built
	// validate-krew-manifest names the plugin after the file: ptah.yaml.
	hostManifest := filepath.Join(t.TempDir(), "ptah.yaml")
	write := func(path string, m manifest) {
		b, err := yaml.Marshal(m)
		if err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(path, b, 0o644); err != nil {
			t.Fatal(err)
		}
	}
	write(hostManifest, written)
	if out, err := exec.Command(validate, "-manifest", hostManifest, "-skip-install").CombinedOutput(); err != nil {
		t.Fatalf("krew's validate-krew-manifest refuses the manifest: %v\n%s", err, out)
	}
	install := func(manifest string) (string, string, error) {
		root := t.TempDir()
		cmd := exec.Command(krew, "install", "--manifest="+manifest, "--archive="+archive)
		cmd.Env = append(os.Environ(), "KREW_ROOT="+root)
		out, err := cmd.CombinedOutput()
		return root, string(out), err
	}
	root, out, err := install(hostManifest)
	if err != nil {
		t.Fatalf("kubectl krew install --manifest --archive: %v\n%s", err, out)
	}
	store := filepath.Join(root, "store", "ptah", "v0.1.0")
	for _, f := range []string{"kubectl-ptah", "kubectl_complete-ptah", "LICENSE"} {
		if _, err := os.Stat(filepath.Join(store, f)); err != nil {
			t.Errorf("krew installed no %s: %v", f, err)
		}
	}
	if out, err := exec.Command(filepath.Join(root, "bin", "kubectl-ptah"), "--help").CombinedOutput(); err != nil || !strings.Contains(string(out), "kubectl ptah") {
		t.Errorf("the plugin krew linked does not run: %v\n%s", err, out)
	}
	// kubectl runs the completion script it finds beside the plugin.
	f, err := os.Open(archive)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	zr, err := gzip.NewReader(f)
	if err != nil {
		t.Fatal(err)
	}
	tr := tar.NewReader(zr)
	for {
		h, err := tr.Next()
		if err != nil {
			t.Fatalf("the archive holds no kubectl_complete-ptah (%v)", err)
		}
		if h.Name == "kubectl_complete-ptah" {
			if h.Mode&0o111 == 0 {
				t.Errorf("kubectl_complete-ptah is not executable in the archive (mode %o)", h.Mode)
			}
			break
		}
	}

	// Hostile: the manifest names a sum the archive does not have.
	built[0]["sha256"] = strings.Repeat("0", 64)
	forged := filepath.Join(t.TempDir(), "ptah.yaml")
	write(forged, written)
	if _, out, err := install(forged); err == nil || !strings.Contains(strings.ToLower(out), "checksum") && !strings.Contains(strings.ToLower(out), "sha256") {
		t.Errorf("krew installed an archive whose sha256 is not the manifest's: %v\n%s", err, out)
	}
}
