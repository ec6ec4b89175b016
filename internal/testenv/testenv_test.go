package testenv

import (
	"bytes"
	"context"
	"errors"
	"net/http"
	"os"
	"os/exec"
	"testing"
	"time"

	"github.com/jackc/pgx/v5"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/kubernetes"
	"oras.land/oras-go/v2/content"
	"oras.land/oras-go/v2/registry/remote"
	"oras.land/oras-go/v2/registry/remote/auth"
	"oras.land/oras-go/v2/registry/remote/errcode"
	"oras.land/oras-go/v2/registry/remote/retry"
)

func TestAPIServerStoresAndServesObjects(t *testing.T) {
	s := StartAPIServer(t)
	cs, err := kubernetes.NewForConfig(s.Config)
	if err != nil {
		t.Fatal(err)
	}
	ctx := context.Background()
	want := map[string]string{"schema": "storefront"}
	cm := &corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Name: "probe", Namespace: "default"}, Data: want}
	if _, err := cs.CoreV1().ConfigMaps("default").Create(ctx, cm, metav1.CreateOptions{}); err != nil {
		t.Fatalf("create ConfigMap: %v", err)
	}
	got, err := cs.CoreV1().ConfigMaps("default").Get(ctx, "probe", metav1.GetOptions{})
	if err != nil {
		t.Fatalf("read ConfigMap back: %v", err)
	}
	if got.Data["schema"] != "storefront" || got.UID == "" {
		t.Fatalf("read back %v (uid %q), want %v with a server-assigned uid", got.Data, got.UID, want)
	}
	v, err := cs.Discovery().ServerVersion()
	if err != nil {
		t.Fatal(err)
	}
	if v.GitVersion != KubernetesVersion {
		t.Errorf("server reports %s, want %s", v.GitVersion, KubernetesVersion)
	}

	// kubectl on the machine reaches the same server through the kubeconfig.
	kubectl, err := exec.LookPath("kubectl")
	if err != nil {
		t.Skip("kubectl not installed")
	}
	cmd := exec.Command(kubectl, "--kubeconfig", s.Kubeconfig, "get", "configmap", "probe", "-o", "jsonpath={.data.schema}")
	out, err := cmd.CombinedOutput()
	if err != nil || string(out) != "storefront" {
		t.Fatalf("kubectl get configmap: %v: %q", err, out)
	}
}

func TestPostgresCreatesAndReadsBackTable(t *testing.T) {
	pg := StartPostgres(t)
	dbURL := pg.CreateDatabase(t, "shop")
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	conn, err := pgx.Connect(ctx, dbURL)
	if err != nil {
		t.Fatalf("connect as the created role: %v", err)
	}
	defer conn.Close(ctx)
	if _, err := conn.Exec(ctx, `CREATE TABLE customers (id bigint PRIMARY KEY, name text NOT NULL)`); err != nil {
		t.Fatal(err)
	}
	if _, err := conn.Exec(ctx, `INSERT INTO customers VALUES (1, 'Ada')`); err != nil {
		t.Fatal(err)
	}
	var name, owner string
	if err := conn.QueryRow(ctx, `SELECT c.name, t.tableowner FROM customers c, pg_tables t WHERE t.tablename = 'customers'`).Scan(&name, &owner); err != nil {
		t.Fatal(err)
	}
	if name != "Ada" || owner != "shop" {
		t.Fatalf("read back name=%q owner=%q, want Ada owned by shop", name, owner)
	}
	// The server asks for passwords: a wrong one is refused.
	if c, err := pgx.Connect(ctx, pg.URL("shop", "wrong", "shop")); err == nil {
		c.Close(ctx)
		t.Fatal("connected with a wrong password")
	}
}

// TestPostgresSettingsAndLog: extra server settings apply, and the server's
// log (here every statement, log_statement=all) is in LogFile.
func TestPostgresSettingsAndLog(t *testing.T) {
	pg := StartPostgres(t, Settings("log_statement=all", "standard_conforming_strings=off"))
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	conn, err := pgx.Connect(ctx, pg.SuperURL("postgres"))
	if err != nil {
		t.Fatal(err)
	}
	defer conn.Close(ctx)
	var scs string
	if err := conn.QueryRow(ctx, `SELECT current_setting('standard_conforming_strings') /* logged */`).Scan(&scs); err != nil || scs != "off" {
		t.Fatalf("standard_conforming_strings %q (%v), want off", scs, err)
	}
	b, err := os.ReadFile(pg.LogFile)
	if err != nil || !bytes.Contains(b, []byte(": SELECT current_setting('standard_conforming_strings') /* logged */")) {
		t.Fatalf("the statement is not in %s (%v):\n%s", pg.LogFile, err, b)
	}
}

func TestRegistryPushPullNeedsCredentials(t *testing.T) {
	reg := StartRegistry(t)
	ctx := context.Background()
	repo := func(username, password string) *remote.Repository {
		r, err := remote.NewRepository(reg.Host + "/probe/schema")
		if err != nil {
			t.Fatal(err)
		}
		r.PlainHTTP = true
		r.Client = &auth.Client{Client: retry.DefaultClient, Credential: auth.StaticCredential(reg.Host,
			auth.Credential{Username: username, Password: password})}
		return r
	}
	blob := []byte("CREATE TABLE customers (id bigint PRIMARY KEY);\n")
	desc := content.NewDescriptorFromBytes("application/vnd.ptah.test.sql", blob)

	wrong := repo(reg.Username, "not-"+reg.Password)
	err := wrong.Push(ctx, desc, bytes.NewReader(blob))
	var resp *errcode.ErrorResponse
	if !errors.As(err, &resp) || resp.StatusCode != http.StatusUnauthorized {
		t.Fatalf("push with a wrong password: got %v, want 401 Unauthorized", err)
	}

	good := repo(reg.Username, reg.Password)
	if err := good.Push(ctx, desc, bytes.NewReader(blob)); err != nil {
		t.Fatalf("push with valid credentials: %v", err)
	}
	got, err := content.FetchAll(ctx, good, desc)
	if err != nil {
		t.Fatalf("pull: %v", err)
	}
	if !bytes.Equal(got, blob) {
		t.Fatalf("pulled %q, want %q", got, blob)
	}
	if _, err := content.FetchAll(ctx, wrong, desc); err == nil {
		t.Fatal("pull with a wrong password succeeded")
	}
	anon, _ := remote.NewRepository(reg.Host + "/probe/schema")
	anon.PlainHTTP = true
	// The registry answers an anonymous read with a basic-auth challenge.
	if _, err := anon.Exists(ctx, desc); !errors.Is(err, auth.ErrBasicCredentialNotFound) {
		t.Fatalf("anonymous read: got %v, want a basic-auth challenge", err)
	}
}
