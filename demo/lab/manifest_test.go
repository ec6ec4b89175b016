package lab

import (
	"bytes"
	"errors"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"sigs.k8s.io/yaml"
)

const testDigest = "sha256:0123456789abcdef0123456789abcdef0123456789abcdef0123456789abcdef"

// testLab is a lab whose root holds the real demo/manifests and an environment file.
func testLab(t *testing.T, withEnvironment bool) *Lab {
	t.Helper()
	root := t.TempDir()
	manifests := filepath.Join(root, "demo", "manifests")
	if err := os.MkdirAll(manifests, 0o755); err != nil {
		t.Fatal(err)
	}
	raw, err := os.ReadFile("../manifests/storefront.yaml")
	if err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(manifests, "storefront.yaml"), raw, 0o644); err != nil {
		t.Fatal(err)
	}
	var out bytes.Buffer
	l := New(root, &out, &out)
	if withEnvironment {
		e := &environment{}
		e.set("NAMESPACE", Namespace)
		e.set("REGISTRY_IN_CLUSTER", registryInCluster())
		if err := writePrivate(l.environmentFile(), e.bytes()); err != nil {
			t.Fatal(err)
		}
	}
	return l
}

func env(values map[string]string) func(string) (string, bool) {
	return func(k string) (string, bool) { v, ok := values[k]; return v, ok }
}

func TestManifestRefusesMissingApply(t *testing.T) {
	l := testLab(t, true)
	_, err := l.Manifest("storefront", testDigest, env(map[string]string{"ALLOW_DESTRUCTIVE": "true"}))
	if err == nil || !strings.Contains(err.Error(), "APPLY is not set") {
		t.Fatalf("manifest without APPLY: got %v, want a refusal naming APPLY", err)
	}
}

func TestManifestRefusesUnknownValues(t *testing.T) {
	l := testLab(t, true)
	for name, values := range map[string]map[string]string{
		"APPLY":             {"APPLY": "Sometimes"},
		"ALLOW_DESTRUCTIVE": {"APPLY": "Always", "ALLOW_DESTRUCTIVE": "yes"},
		"INTERVAL":          {"APPLY": "Always", "INTERVAL": "1s"},
		"SUSPEND":           {"APPLY": "Always", "SUSPEND": "maybe"},
	} {
		_, err := l.Manifest("storefront", testDigest, env(values))
		if err == nil || !strings.Contains(err.Error(), name) {
			t.Errorf("%s=%q: got %v, want a refusal naming %s", name, values[name], err, name)
		}
	}
}

func TestManifestRefusesUnknownTemplateName(t *testing.T) {
	l := testLab(t, true)
	if err := os.WriteFile(filepath.Join(l.Root, "demo", "manifests", "odd.yaml"), []byte("x: ${RETRIES}\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	_, err := l.Manifest("odd", testDigest, env(map[string]string{"RETRIES": "3"}))
	if err == nil || !strings.Contains(err.Error(), "${RETRIES}") {
		t.Fatalf("got %v, want a refusal naming ${RETRIES}", err)
	}
}

func TestManifestRefusesBadDigestAndName(t *testing.T) {
	l := testLab(t, true)
	if _, err := l.Manifest("storefront", "latest", env(map[string]string{"APPLY": "Always"})); err == nil || !strings.Contains(err.Error(), "digest") {
		t.Errorf("digest latest: got %v, want a refusal naming the digest", err)
	}
	if _, err := l.Manifest("nope", testDigest, env(map[string]string{"APPLY": "Always"})); err == nil || !strings.Contains(err.Error(), "storefront") {
		t.Errorf("unknown manifest: got %v, want a refusal listing storefront", err)
	}
}

func TestManifestWithoutLabSaysRunDemoUp(t *testing.T) {
	l := testLab(t, false)
	_, err := l.Manifest("storefront", testDigest, env(map[string]string{"APPLY": "Always"}))
	if !errors.Is(err, ErrNoLab) || err.Error() != "no lab: run make demo-up" {
		t.Fatalf("got %v, want %v", err, ErrNoLab)
	}
}

func TestManifestRendersAPtahSchema(t *testing.T) {
	l := testLab(t, true)
	out, err := l.Manifest("storefront", testDigest, env(map[string]string{"APPLY": "OnApproval", "ALLOW_DESTRUCTIVE": "true"}))
	if err != nil {
		t.Fatal(err)
	}
	var obj struct {
		APIVersion string `json:"apiVersion"`
		Kind       string `json:"kind"`
		Metadata   struct{ Name, Namespace string }
		Spec       struct {
			Target struct {
				Engine  string
				URLFrom struct{ Name, Key string } `json:"urlFrom"`
			}
			Desired struct {
				OCIRef                 string                `json:"ociRef"`
				RegistryAuthFrom       struct{ Name string } `json:"registryAuthFrom"`
				VerificationPolicyFrom struct{ Name string } `json:"verificationPolicyFrom"`
			}
			Policy struct {
				Apply            string
				AllowDestructive bool `json:"allowDestructive"`
			}
			Interval string
			Suspend  bool
		}
	}
	if err := yaml.UnmarshalStrict([]byte(out), &obj); err != nil {
		t.Fatalf("rendered manifest is not YAML: %v\n%s", err, out)
	}
	checks := map[string][2]string{
		"apiVersion":          {obj.APIVersion, "operator.ptah.run/v1alpha1"},
		"kind":                {obj.Kind, "PtahSchema"},
		"namespace":           {obj.Metadata.Namespace, Namespace},
		"engine":              {obj.Spec.Target.Engine, "postgres"},
		"urlFrom":             {obj.Spec.Target.URLFrom.Name + "/" + obj.Spec.Target.URLFrom.Key, "demo-database/url"},
		"ociRef":              {obj.Spec.Desired.OCIRef, "oci://" + registryInCluster() + "/storefront@" + testDigest},
		"policy.apply":        {obj.Spec.Policy.Apply, "OnApproval"},
		"registryAuthFrom":    {obj.Spec.Desired.RegistryAuthFrom.Name, registrySecret},
		"verificationPolicy":  {obj.Spec.Desired.VerificationPolicyFrom.Name, policyConfigMap},
		"interval (fallback)": {obj.Spec.Interval, "5m"},
	}
	for what, c := range checks {
		if c[0] != c[1] {
			t.Errorf("%s = %q, want %q", what, c[0], c[1])
		}
	}
	if !obj.Spec.Policy.AllowDestructive || obj.Spec.Suspend {
		t.Errorf("allowDestructive=%v suspend=%v, want true false", obj.Spec.Policy.AllowDestructive, obj.Spec.Suspend)
	}
}
