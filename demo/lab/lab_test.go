package lab

import (
	"bytes"
	"context"
	"errors"
	"os"
	"strings"
	"testing"

	"ptah.run/operator/recorder/labenv"
)

func TestPsqlWithNoLabSaysRunDemoUp(t *testing.T) {
	var out bytes.Buffer
	l := New(t.TempDir(), &out, &out)
	err := l.Psql(context.Background(), "select 1")
	if !errors.Is(err, ErrNoLab) {
		t.Fatalf("psql with no lab: got %v, want %v", err, ErrNoLab)
	}
	if out.Len() != 0 {
		t.Errorf("psql with no lab printed %q, want nothing", out.String())
	}
}

func TestVerbsWithNoLabSayRunDemoUp(t *testing.T) {
	var out bytes.Buffer
	l := New(t.TempDir(), &out, &out)
	ctx := context.Background()
	for verb, err := range map[string]error{
		"credentials": l.Credentials(),
		"reset":       l.Reset(ctx),
		"versions":    l.Versions(ctx),
	} {
		if !errors.Is(err, ErrNoLab) {
			t.Errorf("%s with no lab: got %v, want %v", verb, err, ErrNoLab)
		}
	}
}

func TestDownWithNoLabRemovesNothing(t *testing.T) {
	var out bytes.Buffer
	l := New(t.TempDir(), &out, &out)
	if err := l.Down(context.Background(), false); err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(out.String(), "nothing to remove") {
		t.Errorf("down with no lab said %q, want it to say nothing was removed", out.String())
	}
}

// The recorder reads the files Up writes: every generated password must
// reach it as a secret, and the files must be private.
func TestCredentialFilesAreReadByTheRecorder(t *testing.T) {
	var out bytes.Buffer
	l := New(t.TempDir(), &out, &out)
	creds := credentials{Registry: randomHex(16), Postgres: randomHex(16), App: randomHex(16)}
	if err := l.saveCredentials(creds); err != nil {
		t.Fatal(err)
	}
	e := &environment{}
	e.set("NAMESPACE", Namespace)
	e.set("PTAH_OCI_PASSWORD", creds.Registry)
	e.set("PTAH_LAB_RUN_ID", "abc123")
	e.set("PTAH_LAB_KUBERNETES", KubernetesVersion)
	e.set("PTAH_LAB_SECRETS", l.secretsFile())
	if err := writePrivate(l.environmentFile(), e.bytes()); err != nil {
		t.Fatal(err)
	}
	for _, f := range []string{l.environmentFile(), l.secretsFile(), l.credentialsFile()} {
		fi, err := os.Stat(f)
		if err != nil {
			t.Fatal(err)
		}
		if fi.Mode().Perm() != 0o600 {
			t.Errorf("%s has mode %o, want 600", f, fi.Mode().Perm())
		}
	}
	got, err := labenv.Load(l.environmentFile())
	if err != nil {
		t.Fatal(err)
	}
	if got.RunID != "abc123" || got.Versions.Kubernetes != KubernetesVersion {
		t.Errorf("recorder read run id %q, kubernetes %q", got.RunID, got.Versions.Kubernetes)
	}
	have := map[string]bool{}
	for _, s := range got.Secrets {
		have[string(s.Value)] = true
	}
	for _, v := range creds.values() {
		if !have[v] {
			t.Errorf("a generated password is not among the recorder's secrets")
		}
	}
	back, err := l.loadCredentials()
	if err != nil || back == nil || *back != creds {
		t.Errorf("credentials read back as %+v, %v", back, err)
	}
}

func TestCreatedListSurvivesAReload(t *testing.T) {
	path := t.TempDir() + "/created"
	c := loadCreated(path)
	for _, it := range [][2]string{{"cluster", "ptah-lab-1"}, {"container", "ptah-lab-1-registry"}, {"cluster", "ptah-lab-1"}} {
		if err := c.add(it[0], it[1]); err != nil {
			t.Fatal(err)
		}
	}
	back := loadCreated(path)
	if got := strings.Join(back.names("cluster"), ","); got != "ptah-lab-1" {
		t.Errorf("clusters = %q, want ptah-lab-1 once", got)
	}
	if !back.has("container", "ptah-lab-1-registry") || back.has("network", "kind") {
		t.Errorf("reloaded list = %v", back.items)
	}
}
