package config_test

import (
	"context"
	"os"
	"regexp"
	"strings"
	"testing"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"ptah.run/operator/internal/testenv"
)

// yamlBlocks are the ```yaml blocks of a Markdown text.
var yamlBlocks = regexp.MustCompile("(?s)```yaml\n(.*?)```")

// digestPlaceholder is what the README writes where a reader puts the
// digest `ptah schema push` printed.
var digestPlaceholder = regexp.MustCompile(`sha256:<[^>]*>`)

// TestREADMEManifestsAreAccepted: every object the README's quick start
// tells a newcomer to apply is accepted, as written, by an API server
// holding the CRDs, with strict field validation (a misspelt or misplaced
// field fails), only the digest placeholder filled in. The README going
// stale against the CRDs fails here.
func TestREADMEManifestsAreAccepted(t *testing.T) {
	t.Parallel()
	text, err := os.ReadFile("../../README.md")
	if err != nil {
		t.Fatal(err)
	}
	blocks := yamlBlocks.FindAllStringSubmatch(string(text), -1)
	if len(blocks) < 2 {
		t.Fatalf("README.md has %d yaml blocks, want the PtahSchema and PtahMigration examples", len(blocks))
	}
	api := testenv.StartAPIServer(t, testenv.WithCRDs("crd/bases"))
	c := newClient(t, api.Config)
	ctx := context.Background()
	kinds := map[string]bool{}
	namespaces := map[string]bool{}
	for i, b := range blocks {
		filled := digestPlaceholder.ReplaceAllString(b[1], "sha256:"+strings.Repeat("0", 64))
		for _, obj := range decodeObjects(t, strings.NewReader(filled)) {
			if ns := obj.GetNamespace(); ns != "" && !namespaces[ns] {
				if err := c.Create(ctx, &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: ns}}); err != nil {
					t.Fatalf("create namespace %s: %v", ns, err)
				}
				namespaces[ns] = true
			}
			if err := c.Create(ctx, obj, client.FieldValidation(metav1.FieldValidationStrict)); err != nil {
				t.Errorf("README.md yaml block %d: %s %s/%s is refused: %v", i+1, obj.GetKind(), obj.GetNamespace(), obj.GetName(), err)
			}
			kinds[obj.GetKind()] = true
		}
	}
	for _, k := range []string{"Secret", "PtahSchema", "PtahMigration"} {
		if !kinds[k] {
			t.Errorf("README.md shows no %s", k)
		}
	}
}
