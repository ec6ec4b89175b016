package main

import (
	"archive/tar"
	"compress/gzip"
	"crypto/sha256"
	"encoding/hex"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"runtime"
	"slices"
	"strings"
	"testing"

	"sigs.k8s.io/yaml"
)

// plugin is the part of krew's Plugin manifest (v1alpha2) krew checks.
type plugin struct {
	APIVersion string `json:"apiVersion"`
	Kind       string `json:"kind"`
	Metadata   struct {
		Name string `json:"name"`
	} `json:"metadata"`
	Spec struct {
		Version          string `json:"version"`
		Homepage         string `json:"homepage"`
		ShortDescription string `json:"shortDescription"`
		Description      string `json:"description"`
		Platforms        []struct {
			Selector struct {
				MatchLabels map[string]string `json:"matchLabels"`
			} `json:"selector"`
			URI    string `json:"uri"`
			SHA256 string `json:"sha256"`
			Bin    string `json:"bin"`
			Files  []struct {
				From string `json:"from"`
				To   string `json:"to"`
			} `json:"files"`
		} `json:"platforms"`
	} `json:"spec"`
}

func readPlugin(t *testing.T, path string) plugin {
	t.Helper()
	b, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	var p plugin
	if err := yaml.UnmarshalStrict(b, &p); err != nil {
		t.Fatalf("%s: %v", path, err)
	}
	return p
}

// TestKrewManifest checks the krew manifest is well formed, builds the
// archive of this machine's platform with the make target it names, and
// finds the archive holds the plugin binary under the name krew links and
// that the manifest the target writes carries the archive's sha256.
func TestKrewManifest(t *testing.T) {
	p := readPlugin(t, filepath.Join("krew", "ptah.yaml"))
	if p.APIVersion != "krew.googlecontainertools.github.com/v1alpha2" || p.Kind != "Plugin" || p.Metadata.Name != "ptah" {
		t.Errorf("manifest head %s %s %s", p.APIVersion, p.Kind, p.Metadata.Name)
	}
	if !regexp.MustCompile(`^v\d+\.\d+\.\d+$`).MatchString(p.Spec.Version) || p.Spec.Homepage == "" || p.Spec.ShortDescription == "" || len(p.Spec.ShortDescription) > 60 || p.Spec.Description == "" {
		t.Errorf("version %q, homepage %q, shortDescription %q (at most 60 characters), description set %v", p.Spec.Version, p.Spec.Homepage, p.Spec.ShortDescription, p.Spec.Description != "")
	}
	var seen []string
	for _, pl := range p.Spec.Platforms {
		goos, arch := pl.Selector.MatchLabels["os"], pl.Selector.MatchLabels["arch"]
		name := fmt.Sprintf("kubectl-ptah_%s_%s.tar.gz", goos, arch)
		seen = append(seen, goos+"/"+arch)
		switch {
		case !slices.Contains([]string{"linux", "darwin"}, goos) || !slices.Contains([]string{"amd64", "arm64"}, arch):
			t.Errorf("platform %s/%s is not one the make target builds", goos, arch)
		case !strings.HasSuffix(pl.URI, "/"+p.Spec.Version+"/"+name):
			t.Errorf("%s/%s: uri %s does not name %s of version %s", goos, arch, pl.URI, name, p.Spec.Version)
		case pl.SHA256 != "SHA256_"+goos+"_"+arch:
			t.Errorf("%s/%s: sha256 %q is not the placeholder the make target fills", goos, arch, pl.SHA256)
		case pl.Bin != "kubectl-ptah" || len(pl.Files) == 0 || pl.Files[0].From != "kubectl-ptah":
			t.Errorf("%s/%s: bin %q, files %+v", goos, arch, pl.Bin, pl.Files)
		}
	}
	if want := []string{"linux/amd64", "linux/arm64", "darwin/amd64", "darwin/arm64"}; !slices.Equal(seen, want) {
		t.Errorf("platforms %v, want %v", seen, want)
	}

	host := runtime.GOOS + "/" + runtime.GOARCH
	if !slices.Contains(seen, host) {
		t.Skipf("no archive for this machine's platform %s", host)
	}
	dist := t.TempDir()
	mk := exec.Command("make", "--no-print-directory", "plugin-archives", "PLATFORMS="+host, "DIST="+dist)
	mk.Dir = filepath.Join("..", "..")
	if out, err := mk.CombinedOutput(); err != nil {
		t.Fatalf("make plugin-archives: %v\n%s", err, out)
	}
	archive := filepath.Join(dist, fmt.Sprintf("kubectl-ptah_%s_%s.tar.gz", runtime.GOOS, runtime.GOARCH))
	data, err := os.ReadFile(archive)
	if err != nil {
		t.Fatal(err)
	}
	sum := sha256.Sum256(data)
	written := readPlugin(t, filepath.Join(dist, "ptah.yaml"))
	for _, pl := range written.Spec.Platforms {
		if pl.Selector.MatchLabels["os"]+"/"+pl.Selector.MatchLabels["arch"] == host && pl.SHA256 != hex.EncodeToString(sum[:]) {
			t.Errorf("the written manifest says sha256 %s for %s, the archive's is %x", pl.SHA256, host, sum)
		}
	}
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
	h, err := tr.Next()
	if err != nil || h.Name != "kubectl-ptah" || h.Mode&0o111 == 0 {
		t.Fatalf("the archive's first entry %+v (%v), want the executable kubectl-ptah", h, err)
	}
	// What the manifest installs from the archive is in it: the
	// completion script (executable, as kubectl runs it) and the licence.
	held := map[string]int64{h.Name: h.Mode}
	for {
		h, err := tr.Next()
		if err != nil {
			break
		}
		held[h.Name] = h.Mode
	}
	for _, pl := range written.Spec.Platforms {
		if pl.Selector.MatchLabels["os"]+"/"+pl.Selector.MatchLabels["arch"] != host {
			continue
		}
		for _, f := range pl.Files {
			if _, ok := held[f.From]; !ok {
				t.Errorf("the manifest installs %s from the archive, which holds %v", f.From, held)
			}
		}
	}
	if mode, ok := held["kubectl_complete-ptah"]; !ok || mode&0o111 == 0 {
		t.Errorf("kubectl_complete-ptah is not an executable of the archive: %v", held)
	}
}
