package labenv

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
)

func TestLoad(t *testing.T) {
	dir := t.TempDir()
	if err := os.WriteFile(filepath.Join(dir, "secrets"), []byte("s3cret-db-pass\n\nregistry-pw-42\r\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	env := `# lab
export NAMESPACE=demo
KUBECONFIG="/tmp/kc"
PTAH_OCI_PASSWORD=oci-pass-1
PTAH_LAB_SECRETS=secrets
PTAH_LAB_RUN_ID=k7q2x9
PTAH_LAB_KUBERNETES=v1.37.0
PTAH_LAB_EXECUTOR_DIGEST=sha256:91ec
`
	file := filepath.Join(dir, "environment")
	if err := os.WriteFile(file, []byte(env), 0o600); err != nil {
		t.Fatal(err)
	}
	l, err := Load(file)
	if err != nil {
		t.Fatal(err)
	}
	if v, _ := l.Lookup("NAMESPACE"); v != "demo" {
		t.Errorf("NAMESPACE = %q", v)
	}
	if v, _ := l.Lookup("KUBECONFIG"); v != "/tmp/kc" {
		t.Errorf("KUBECONFIG = %q", v)
	}
	if l.RunID != "k7q2x9" || l.Versions.Kubernetes != "v1.37.0" || l.Versions.ExecutorDigest != "sha256:91ec" {
		t.Errorf("run id %q, versions %+v", l.RunID, l.Versions)
	}
	var got []string
	for _, s := range l.Secrets {
		got = append(got, string(s.Value))
	}
	if strings.Join(got, ",") != "oci-pass-1,s3cret-db-pass,registry-pw-42" {
		t.Errorf("secrets = %q", got)
	}
}

func TestRefusals(t *testing.T) {
	dir := t.TempDir()
	short := filepath.Join(dir, "short")
	_ = os.WriteFile(short, []byte("abcde\n"), 0o600)
	cases := map[string]string{
		"not key value":   "JUSTAWORD\n",
		"missing secrets": "PTAH_LAB_SECRETS=/nonexistent/secrets\n",
		"short secret":    "PTAH_LAB_SECRETS=" + short + "\n",
	}
	for name, body := range cases {
		file := filepath.Join(dir, "env")
		_ = os.WriteFile(file, []byte(body), 0o600)
		if _, err := Load(file); err == nil {
			t.Errorf("%s: loaded", name)
		} else if strings.Contains(err.Error(), "abc") {
			t.Errorf("%s: error prints the credential: %v", name, err)
		}
	}
}
