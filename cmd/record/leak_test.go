package main

import (
	"context"
	"encoding/base64"
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"

	authv1 "k8s.io/api/authentication/v1"
	corev1 "k8s.io/api/core/v1"
	rbacv1 "k8s.io/api/rbac/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/tools/clientcmd"
	clientcmdapi "k8s.io/client-go/tools/clientcmd/api"

	"ptah.run/operator/internal/testenv"
	"ptah.run/operator/recorder/opsource"
	"ptah.run/operator/recorder/runs"
)

// The values of the lab these tests record against. The application's
// database password is only in the cluster (a Secret), never in a lab file:
// the recorder must read it from there.
const (
	ociPassword = "oci-Pa55word-lab7"
	labGen      = "lab-Gen3rated-pw9"
	appPassword = "clusterOnly-Pw-771"
	// Values of Secrets outside the lab's namespaces: a bootstrap token in
	// kube-system, a service-account token elsewhere, and one a step
	// creates and deletes (its command builds it from two halves, so the
	// command itself does not hold it).
	bootstrapSecret = "k7bq2x9mw3ts8v4z"
	saToken         = "saTok-Elsewhere-5523"
	fleeting        = "Fleeting-Val-8821"
)

type leakLab struct {
	api     *testenv.APIServer
	env     string
	repo    repo
	counter int
}

func startLeakLab(t *testing.T) *leakLab {
	api := testenv.StartAPIServer(t)
	cs := kubernetes.NewForConfigOrDie(api.Config)
	ctx := context.Background()
	for _, ns := range []string{"ptah-demo", "ptah-system", "elsewhere", "ptah-demo-beside"} {
		if _, err := cs.CoreV1().Namespaces().Create(ctx, &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: ns}}, metav1.CreateOptions{}); err != nil {
			t.Fatal(err)
		}
	}
	dockerConfig, _ := json.Marshal(map[string]any{"auths": map[string]any{"registry.ptah-demo.svc:5000": map[string]string{
		"username": "ptah", "password": ociPassword, "auth": base64.StdEncoding.EncodeToString([]byte("ptah:" + ociPassword)),
	}}})
	for _, s := range []*corev1.Secret{
		{ObjectMeta: metav1.ObjectMeta{Name: "demo-database", Namespace: "ptah-demo"}, StringData: map[string]string{
			"url": "postgres://ptah_app:" + appPassword + "@demo-postgres.ptah-demo.svc:5432/storefront?sslmode=disable", "password": appPassword}},
		{ObjectMeta: metav1.ObjectMeta{Name: "demo-registry", Namespace: "ptah-demo"}, Type: corev1.SecretTypeDockerConfigJson, StringData: map[string]string{
			corev1.DockerConfigJsonKey: string(dockerConfig), "username": "ptah", "registry": "registry.ptah-demo.svc:5000"}},
		{ObjectMeta: metav1.ObjectMeta{Name: "webhook-token", Namespace: "ptah-system"}, StringData: map[string]string{"token": "sys-Token-0451-xyz"}},
		{ObjectMeta: metav1.ObjectMeta{Name: "demo-database-broken", Namespace: "ptah-demo"}, StringData: map[string]string{
			"url": "postgres://nobody:nobody@demo-postgres-absent.ptah-demo.svc:5432/storefront?sslmode=disable"}},
		{ObjectMeta: metav1.ObjectMeta{Name: "spare", Namespace: "ptah-demo"}, StringData: map[string]string{"x": "placeholder-x"}},
		// The placeholder as a scenario running beside this one has it, in
		// a namespace of its own no placeholder names.
		{ObjectMeta: metav1.ObjectMeta{Name: "demo-database-broken", Namespace: "ptah-demo-beside"}, StringData: map[string]string{
			"url": "postgres://nobody:nobody@demo-postgres-absent.ptah-demo-beside.svc:5432/storefront_beside?sslmode=disable"}},
		{ObjectMeta: metav1.ObjectMeta{Name: "bootstrap-token-k7bq2x", Namespace: "kube-system"}, Type: corev1.SecretTypeBootstrapToken,
			StringData: map[string]string{"token-id": "k7bq2x", "token-secret": bootstrapSecret, "usage-bootstrap-authentication": "true"}},
		{ObjectMeta: metav1.ObjectMeta{Name: "builder-token", Namespace: "elsewhere", Annotations: map[string]string{corev1.ServiceAccountNameKey: "builder"}},
			Type: corev1.SecretTypeServiceAccountToken, StringData: map[string]string{"token": saToken}},
		{ObjectMeta: metav1.ObjectMeta{Name: "public-note", Namespace: "elsewhere"}, StringData: map[string]string{"note": "nothing-secret-here"}},
	} {
		if _, err := cs.CoreV1().Secrets(s.Namespace).Create(ctx, s, metav1.CreateOptions{}); err != nil {
			t.Fatal(err)
		}
	}
	lab := t.TempDir()
	if err := os.WriteFile(filepath.Join(lab, "secrets"), []byte(labGen+"\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	r := repo{t, t.TempDir()}
	r.git("init", "-q")
	r.write("README", "leaks\n")
	r.write("operator/controller/reconcile.go", operatorGo)
	r.git("add", ".")
	r.git("commit", "-qm", "init")
	src, err := opsource.Read(r.dir)
	if err != nil {
		t.Fatal(err)
	}
	env := filepath.Join(lab, "environment")
	if err := os.WriteFile(env, []byte("KUBECONFIG="+api.Kubeconfig+"\nNAMESPACE=ptah-demo\nOPERATOR_NAMESPACE=ptah-system\n"+
		"REGISTRY_IN_CLUSTER=registry.ptah-demo.svc:5000\nPTAH_OCI_USERNAME=ptah\nPTAH_OCI_PASSWORD="+ociPassword+
		"\nPTAH_LAB_RUN_ID=k7q2x9\nPTAH_LAB_SECRETS=secrets\nPTAH_LAB_PLACEHOLDERS=ptah-demo/demo-database-broken,ptah-demo/spare,elsewhere/public-note\n"+
		"PTAH_LAB_OPERATOR_SOURCE="+src.Digest+"\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	t.Chdir(r.dir)
	return &leakLab{api: api, env: env, repo: r}
}

// record commits a one-scenario folder whose steps are the YAML given and
// records it into a fresh folder, returning the exit code, stderr and that
// folder.
func (l *leakLab) record(t *testing.T, steps string) (int, string, string) {
	l.counter++
	id := fmt.Sprintf("case-%d", l.counter)
	dir := "scenarios/" + id
	l.repo.write(dir+"/"+id+".yaml", "id: "+id+"\ntitle: T\ntagline: t\nlearn: l\ntags: [Test]\nsteps:\n"+steps)
	l.repo.git("add", ".")
	l.repo.git("commit", "-qm", id)
	tmp := t.TempDir()
	out := filepath.Join(tmp, "recordings")
	junit := filepath.Join(tmp, "junit.xml")
	code, _, stderr := runRecord(t, "-scenarios", dir, "-output", filepath.Join(out, "runs.json"), "-environment", l.env, "-junit", junit)
	return code, stderr, out
}

func step(run string) string {
	return "  - note: Print it.\n    run: " + quote(run) + "\n    expect:\n      exit: 0\n"
}

func quote(s string) string {
	b, _ := json.Marshal(s)
	return string(b)
}

// TestLeaksAreRefused is the table of leak cases: each form a value can be
// printed in, each kind of credential, each published surface, recorded
// against a real API server. Every one is refused, names where and what,
// never prints the value, and writes nothing.
func TestLeaksAreRefused(t *testing.T) {
	l := startLeakLab(t)
	cases := []struct {
		name  string
		steps string
		where string // "step 1 terminal", "step 1 check evidence"...
		kind  string
	}{
		// The registry password, a published name whose value is a secret, in every form.
		{"raw", step(`echo "$PTAH_OCI_PASSWORD"`), "step 1 terminal", "PTAH_OCI_PASSWORD"},
		{"on stderr", step(`echo "$PTAH_OCI_PASSWORD" >&2`), "step 1 terminal", "PTAH_OCI_PASSWORD"},
		{"base64", step(`printf %s "$PTAH_OCI_PASSWORD" | base64`), "step 1 terminal", "PTAH_OCI_PASSWORD"},
		{"base64 after one byte", step(`printf 'x%s' "$PTAH_OCI_PASSWORD" | base64`), "step 1 terminal", "PTAH_OCI_PASSWORD"},
		{"base64 after two bytes", step(`printf 'xy%s' "$PTAH_OCI_PASSWORD" | base64`), "step 1 terminal", "PTAH_OCI_PASSWORD"},
		{"base64url unpadded", step(`printf 'ab%s' "$PTAH_OCI_PASSWORD" | base64 | tr '+/' '-_' | tr -d =`), "step 1 terminal", "PTAH_OCI_PASSWORD"},
		{"basic-auth pair", step(`printf '%s:%s' "$PTAH_OCI_USERNAME" "$PTAH_OCI_PASSWORD" | base64`), "step 1 terminal", ""},
		{"hex", step(`printf %s "$PTAH_OCI_PASSWORD" | od -An -tx1 | tr -d ' \n'`), "step 1 terminal", "PTAH_OCI_PASSWORD"},
		{"HEX", step(`printf %s "$PTAH_OCI_PASSWORD" | od -An -tx1 | tr -d ' \n' | tr a-f A-F`), "step 1 terminal", "PTAH_OCI_PASSWORD"},
		{"upper case", step(`echo "$PTAH_OCI_PASSWORD" | tr a-z A-Z`), "step 1 terminal", "PTAH_OCI_PASSWORD"},
		{"percent-encoded", step(`jq -rn --arg p "$PTAH_OCI_PASSWORD" '$p|@uri'`), "step 1 terminal", "PTAH_OCI_PASSWORD"},
		{"JSON", step(`jq -cn --arg p "$PTAH_OCI_PASSWORD" '{p: $p}'`), "step 1 terminal", "PTAH_OCI_PASSWORD"},
		{"split by a colour change", step(`printf '%.4s\033[31m%s\033[0m\n' "$PTAH_OCI_PASSWORD" "${PTAH_OCI_PASSWORD#????}"`), "step 1 terminal", "PTAH_OCI_PASSWORD"},
		{"split by a backspace", step(`printf '%.3sX\b%s\n' "$PTAH_OCI_PASSWORD" "${PTAH_OCI_PASSWORD#???}"`), "step 1 terminal", "PTAH_OCI_PASSWORD"},
		// A value of a lab credential file, printed through the file.
		{"a lab file's value", step(`cat demo-lab-secrets 2>/dev/null; echo ` + labGen), "step 1 command", "lab generated"},
		// Values only the cluster holds.
		{"a Secret's URL, base64 (the password at an offset)", step(`kubectl -n "$NAMESPACE" get secret demo-database -o jsonpath='{.data.url}'`), "step 1 terminal", "demo-database"},
		{"a Secret's URL decoded", step(`kubectl -n "$NAMESPACE" get secret demo-database -o jsonpath='{.data.url}' | base64 -d`), "step 1 terminal", "demo-database"},
		{"a Secret as YAML", step(`kubectl -n "$NAMESPACE" get secret demo-database -o yaml`), "step 1 terminal", "demo-database"},
		{"a docker config's auth", step(`kubectl -n "$NAMESPACE" get secret demo-registry -o jsonpath='{.data.\.dockerconfigjson}' | base64 -d`), "step 1 terminal", ""},
		{"a Secret in the operator's namespace", step(`kubectl -n "$OPERATOR_NAMESPACE" get secret webhook-token -o jsonpath='{.data.token}' | base64 -d | tr a-z A-Z`), "step 1 terminal", "ptah-system/webhook-token"},
		{"a Secret's value as evidence", "  - note: Read it.\n    run: \"true\"\n    expect:\n      exit: 0\n      resource:\n        kind: secret\n        name: demo-database\n        fields:\n          - {path: data.url, notEmpty: true}\n", "step 1 check evidence", "Secret ptah-demo/demo-database"},
		{"a Secret's value in a claim", "  - note: Look for it.\n    run: \"true\"\n    expect:\n      exit: 0\n      stdout_absent: [" + appPassword + "]\n", "step 1 check claim", "demo-database"},
		{"a Secret's value in a note", "  - note: The password is " + appPassword + ".\n    run: \"true\"\n    expect:\n      exit: 0\n", "step 1 note", "demo-database"},
		{"a real value copied into a placeholder Secret", step(`kubectl -n "$NAMESPACE" get secret demo-database -o json | jq '.metadata = {name: "spare"}' | kubectl -n "$NAMESPACE" apply -f - >/dev/null && kubectl -n "$NAMESPACE" get secret spare -o jsonpath='{.data.url}'`), "step 1 terminal", "demo-database"},
		// Secrets anywhere in the cluster, of every type.
		{"a bootstrap token in kube-system", step(`kubectl -n kube-system get secret bootstrap-token-k7bq2x -o jsonpath='{.data.token-secret}' | base64 -d`), "step 1 terminal", "kube-system/bootstrap-token-k7bq2x"},
		{"a service-account token Secret", step(`kubectl -n elsewhere get secret builder-token -o jsonpath='{.data.token}' | base64 -d`), "step 1 terminal", "elsewhere/builder-token"},
		{"a value hidden in a look-alike of a placeholder", step(`v="Hidden"; v="$v-Pw-7731"; kubectl -n elsewhere create secret generic demo-database-broken --from-literal=url="postgres://nobody:$v@demo-postgres-absent.elsewhere.svc:5432/storefront" >/dev/null && echo "$v"`), "step 1 terminal", "elsewhere/demo-database-broken"},
		{"a value hidden in a placeholder look-alike carrying the placeholder's credentials", step(`v="Tucked"; v="$v-Pw-5150"; kubectl create namespace ptah-demo-other >/dev/null 2>&1; kubectl -n ptah-demo-other create secret generic demo-database-broken --from-literal=url="postgres://nobody:nobody@demo-postgres-absent.ptah-demo-other.svc:5432/storefront_other?sslmode=disable&token=$v" >/dev/null && echo "$v"; kubectl -n ptah-demo-other delete secret demo-database-broken >/dev/null`), "step 1", "ptah-demo-other/demo-database-broken"},
		{"a Secret that existed only during the step", step(`v="Fleeting"; v="$v-Val-8821"; kubectl -n elsewhere create secret generic fleeting --from-literal=k="$v" >/dev/null && echo "$v" && kubectl -n elsewhere delete secret fleeting >/dev/null`), "step 1 terminal", "elsewhere/fleeting"},
		// The kubeconfig the steps run with.
		{"the kubeconfig", step(`cat "$KUBECONFIG"`), "step 1 terminal", "kubeconfig"},
		{"the kubeconfig through kubectl", step(`kubectl config view --raw`), "step 1 terminal", "kubeconfig"},
		{"the client key decoded", step(`kubectl config view --raw -o jsonpath='{.users[0].user.client-key-data}' | base64 -d`), "step 1 terminal", ""},
		// By shape: what no one listed.
		{"a fresh ServiceAccount token", step(`kubectl -n "$NAMESPACE" create serviceaccount leaker >/dev/null && kubectl -n "$NAMESPACE" create token leaker`), "step 1 terminal", "JWT"},
		{"a private key", step(`openssl genpkey -algorithm ed25519 2>/dev/null || printf -- '-----%s PRIVATE KEY-----\n' BEGIN`), "step 1 terminal", "PEM private key"},
		{"a bearer header", step(`printf 'Authorization: Bearer %s\n' abcdefghijklmnopqrstuvwxyz012345`), "step 1 terminal", "Authorization header"},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			code, stderr, out := l.record(t, c.steps)
			if code != 1 || !strings.Contains(stderr, "refused") || !strings.Contains(stderr, c.where) || !strings.Contains(stderr, c.kind) {
				t.Errorf("record exited %d; want a refusal naming %q and %q:\n%s", code, c.where, c.kind, stderr)
			}
			for _, v := range []string{ociPassword, labGen, appPassword, "sys-Token-0451-xyz", bootstrapSecret, saToken, fleeting} {
				if strings.Contains(strings.ToLower(stderr), strings.ToLower(v)) || strings.Contains(stderr, base64.StdEncoding.EncodeToString([]byte(v))) {
					t.Errorf("the refusal prints a credential:\n%s", stderr)
				}
			}
			if entries, _ := os.ReadDir(filepath.Dir(out)); len(entries) != 0 {
				t.Errorf("a refused recording wrote %d files (recording or JUnit report) into %s", len(entries), filepath.Dir(out))
			}
		})
	}

	t.Run("a failed check on a Secret: the report is redacted, the JUnit report not written", func(t *testing.T) {
		code, stderr, out := l.record(t, "  - note: Read it.\n    run: \"true\"\n    expect:\n      exit: 0\n      resource:\n        kind: secret\n        name: demo-database\n        fields:\n          - {path: data.password, equals: nope}\n")
		b64 := base64.StdEncoding.EncodeToString([]byte(appPassword))
		if code != 1 || strings.Contains(stderr, b64) || !strings.Contains(stderr, "[redacted]") || !strings.Contains(stderr, "were redacted") {
			t.Errorf("record exited %d; want a failure report with the value redacted:\n%s", code, stderr)
		}
		if !strings.Contains(stderr, "JUnit report") {
			t.Errorf("no word of the JUnit report that was not written:\n%s", stderr)
		}
		if _, err := os.Stat(filepath.Join(filepath.Dir(out), "junit.xml")); err == nil {
			t.Error("the JUnit report holding the Secret's value was written")
		}
	})

	t.Run("what is published on purpose is recorded", func(t *testing.T) {
		code, stderr, out := l.record(t, step(`echo "user $PTAH_OCI_USERNAME at $REGISTRY_IN_CLUSTER in $NAMESPACE"; kubectl -n "$NAMESPACE" get secrets`)+
			step(`kubectl -n "$NAMESPACE" get secret demo-registry -o jsonpath='{.data.username}{"\n"}'`)+
			"  - note: The placeholders are not credentials.\n    run: kubectl -n \"$NAMESPACE\" get secret demo-database-broken -o jsonpath='{.data.url}' | base64 -d\n    expect:\n      exit: 0\n      stdout_contains: [\"nobody:nobody\"]\n"+
			"  - note: Nor one in another namespace.\n    run: kubectl -n elsewhere get secret public-note -o jsonpath='{.data.note}' | base64 -d\n    expect:\n      exit: 0\n      stdout_contains: [\"nothing-secret-here\"]\n")
		if code != 0 {
			t.Fatalf("record exited %d:\n%s", code, stderr)
		}
		raw, err := os.ReadFile(filepath.Join(out, "runs.json"))
		if err != nil {
			t.Fatal(err)
		}
		if err := runs.Validate(raw); err != nil {
			t.Error(err)
		}
	})
}

// TestHeavyStepsEndInsideTheirBounds: commands that print a lot, read
// standard input, leave children or ignore SIGTERM end with a recording or
// a clear refusal, and nothing is written on a refusal.
func TestHeavyStepsEndInsideTheirBounds(t *testing.T) {
	l := startLeakLab(t)
	cases := []struct {
		name  string
		steps string
		want  string // "" for recorded, else text of the refusal
	}{
		{"large output", step("seq 1 200000"), "more than 64 KiB"},
		{"a 2 MB line", step(`head -c 2000000 /dev/zero | tr '\0' x`), "| tail"},
		{"many lines under the byte bound", step("seq 1 600"), "printed 600 lines, more than the 500"},
		{"20,000 small writes", step(`i=0; while [ $i -lt 20000 ]; do printf .; i=$((i+1)); done`), ""},
		{"binary output", step("head -c 3000 /dev/urandom; echo"), ""},
		{"a stdin reader", step("cat; echo done"), ""},
		{"a background child", step("sleep 600 & echo started"), ""},
		{"a process ignoring SIGTERM past its timeout", "  - note: Wait.\n    run: trap '' TERM; sleep 600\n    timeout: 2s\n    expect:\n      exit: 0\n", "did not finish within 2s"},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			code, stderr, out := l.record(t, c.steps)
			if c.want == "" {
				if code != 0 {
					t.Fatalf("record exited %d:\n%s", code, stderr)
				}
				raw, err := os.ReadFile(filepath.Join(out, "runs.json"))
				if err != nil {
					t.Fatal(err)
				}
				if err := runs.Validate(raw); err != nil {
					t.Errorf("runs.json is not a valid recording: %v", err)
				}
				return
			}
			if code != 1 || !strings.Contains(stderr, c.want) || !strings.Contains(stderr, "step 1") {
				t.Errorf("record exited %d; want a refusal saying %q:\n%s", code, c.want, stderr)
			}
			if entries, _ := os.ReadDir(out); len(entries) != 0 {
				t.Errorf("a refused recording wrote %d files", len(entries))
			}
		})
	}
}

// TestAccountThatCannotListSecretsClusterWideIsRefused: an account that may
// read Secrets only in the lab's namespace cannot know the others, so the
// recorder refuses before anything runs and says which permission it lacks.
func TestAccountThatCannotListSecretsClusterWideIsRefused(t *testing.T) {
	l := startLeakLab(t)
	ctx := context.Background()
	cs := kubernetes.NewForConfigOrDie(l.api.Config)
	if _, err := cs.CoreV1().ServiceAccounts("ptah-demo").Create(ctx, &corev1.ServiceAccount{ObjectMeta: metav1.ObjectMeta{Name: "narrow"}}, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	if _, err := cs.RbacV1().Roles("ptah-demo").Create(ctx, &rbacv1.Role{ObjectMeta: metav1.ObjectMeta{Name: "narrow"},
		Rules: []rbacv1.PolicyRule{{APIGroups: []string{"*"}, Resources: []string{"*"}, Verbs: []string{"*"}}}}, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	if _, err := cs.RbacV1().RoleBindings("ptah-demo").Create(ctx, &rbacv1.RoleBinding{ObjectMeta: metav1.ObjectMeta{Name: "narrow"},
		RoleRef:  rbacv1.RoleRef{APIGroup: rbacv1.GroupName, Kind: "Role", Name: "narrow"},
		Subjects: []rbacv1.Subject{{Kind: rbacv1.ServiceAccountKind, Name: "narrow", Namespace: "ptah-demo"}}}, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	tok, err := cs.CoreV1().ServiceAccounts("ptah-demo").CreateToken(ctx, "narrow", &authv1.TokenRequest{}, metav1.CreateOptions{})
	if err != nil {
		t.Fatal(err)
	}
	kc := clientcmdapi.NewConfig()
	kc.Clusters["lab"] = &clientcmdapi.Cluster{Server: l.api.Config.Host, CertificateAuthorityData: l.api.Config.CAData}
	kc.AuthInfos["narrow"] = &clientcmdapi.AuthInfo{Token: tok.Status.Token}
	kc.Contexts["lab"] = &clientcmdapi.Context{Cluster: "lab", AuthInfo: "narrow", Namespace: "ptah-demo"}
	kc.CurrentContext = "lab"
	file := filepath.Join(t.TempDir(), "kubeconfig")
	if err := clientcmd.WriteToFile(*kc, file); err != nil {
		t.Fatal(err)
	}
	env, err := os.ReadFile(l.env)
	if err != nil {
		t.Fatal(err)
	}
	narrowEnv := strings.Replace(string(env), "KUBECONFIG="+l.api.Kubeconfig, "KUBECONFIG="+file, 1)
	if err := os.WriteFile(l.env, []byte(narrowEnv), 0o600); err != nil {
		t.Fatal(err)
	}
	code, stderr, out := l.record(t, step(`echo hello`))
	if code != 1 || !strings.Contains(stderr, "may not list Secrets at cluster scope") || !strings.Contains(stderr, "list and watch on secrets in all namespaces") || !strings.Contains(stderr, "nothing was written") {
		t.Errorf("record exited %d; want a refusal naming the missing permission:\n%s", code, stderr)
	}
	for _, v := range []string{appPassword, bootstrapSecret, saToken, tok.Status.Token} {
		if strings.Contains(stderr, v) {
			t.Errorf("the refusal prints a credential:\n%s", stderr)
		}
	}
	if entries, _ := os.ReadDir(filepath.Dir(out)); len(entries) != 0 {
		t.Errorf("a refused recording wrote %d files (recording or JUnit report) into %s", len(entries), filepath.Dir(out))
	}
}
