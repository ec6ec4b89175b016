package lab

import (
	"context"
	"net/url"
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"testing"

	"ptah.run/operator/demo/lab/internal/run"
)

// TestREADMEQuickStart runs readmeQuickStart on the lab that is up (make
// demo-up); TestLabUpAndDown runs it on its own lab.
func TestREADMEQuickStart(t *testing.T) {
	readmeQuickStart(t, attachedLab(t), context.Background())
}

var (
	shBlock      = regexp.MustCompile("(?s)```sh\n(.*?)```")
	yamlBlock    = regexp.MustCompile("(?s)```yaml\n(.*?)```")
	inlineCode   = regexp.MustCompile("`(kubectl ptah approve [^`]+)`")
	pinnedRef    = regexp.MustCompile(`oci://registry\.example\.com/([a-z0-9/_-]+)@sha256:<[^>]*>`)
	postgresURL  = regexp.MustCompile(`postgres://[^\s"']+`)
	registryAuth = regexp.MustCompile(`username: [^,}]+, password: [^,}]+`)
)

// readmeQuickStart follows README.md's quick start on the lab as a
// newcomer would, the lab standing in for what the README leaves to the
// reader: its registry for registry.example.com, its databases and
// passwords for the URLs and CHANGE-ME, a scenario namespace for shop.
// The README's own commands push the artifacts (its ptah lines, with the
// lab's demo/schemas/v1.sql and the .up.sql files of
// demo/migrations/ledger-v1, as a newcomer's directory holds them), its
// YAML blocks are applied as they are otherwise, the plan is approved with the command the README names, and
// its kubectl lines (get, wait for InSync, kubectl ptah status) run and
// succeed. The PtahMigration, on the database the README gives it, must
// reach InSync too. The chart installed is the lab's, from its OCI
// release, as the README's helm line installs it.
func readmeQuickStart(t *testing.T, l *Lab, ctx context.Context) {
	t.Helper()
	text, err := os.ReadFile(filepath.Join(l.Root, "README.md"))
	if err != nil {
		t.Fatal(err)
	}
	readme := string(text)
	env, err := l.environment()
	if err != nil {
		t.Fatal(err)
	}
	creds, err := l.loadCredentials()
	if err != nil || creds == nil {
		t.Fatalf("the lab's credentials: %v", err)
	}
	var out strings.Builder
	saved := l.Stdout
	l.Stdout = &out
	type scenario struct{ ns, db string }
	var made []scenario
	for range 2 {
		out.Reset()
		if err := l.ScenarioUp(ctx); err != nil {
			l.Stdout = saved
			t.Fatal(err)
		}
		var s scenario
		for _, line := range strings.Split(out.String(), "\n") {
			if v, ok := strings.CutPrefix(line, "NAMESPACE="); ok {
				s.ns = v
			}
			if f := strings.Fields(line); len(f) == 3 && f[0] == "name" && f[2] == databaseName {
				s.db = f[1]
			}
		}
		if s.ns == "" || s.db == "" {
			l.Stdout = saved
			t.Fatalf("scenario-up printed %q: no namespace or database", out.String())
		}
		made = append(made, s)
		defer func() { _ = l.ScenarioDown(context.Background(), s.ns) }()
	}
	l.Stdout = saved
	ns := made[0].ns
	databases := map[string]string{"shop": made[0].db, "ledger": made[1].db}

	work := t.TempDir()
	bin := filepath.Join(work, "bin")
	sh := func(dir, line string, extra ...string) string {
		t.Helper()
		o, err := l.r.Run(ctx, run.Cmd{Name: "sh", Args: []string{"-c", line}, Dir: dir,
			Env: append([]string{"PATH=" + bin + ":" + l.binDir() + ":" + os.Getenv("PATH"), "KUBECONFIG=" + l.kubeconfig()}, extra...)})
		if err != nil {
			t.Fatalf("README.md's %q: %v", line, err)
		}
		return o
	}
	sh(l.Root, "go build -o "+bin+"/ ./cmd/ptah ./cmd/kubectl-ptah")
	sh(l.Root, "cp demo/schemas/v1.sql "+work+"/schema.sql && mkdir "+work+"/migrations && cp demo/migrations/ledger-v1/*.up.sql "+work+"/migrations/")

	// The README's shell lines, in order; the pushes run now, the kubectl
	// lines once the objects are applied and approved.
	var ptah, kubectl []string
	for _, b := range shBlock.FindAllStringSubmatch(readme, -1) {
		for _, line := range strings.Split(b[1], "\n") {
			line, _, _ = strings.Cut(line, "#")
			line = strings.TrimSpace(line)
			switch {
			case strings.HasPrefix(line, "ptah "):
				ptah = append(ptah, line)
			case strings.HasPrefix(line, "kubectl "):
				kubectl = append(kubectl, line)
			}
		}
	}
	if len(ptah) < 2 || len(kubectl) == 0 {
		t.Fatalf("README.md has ptah lines %q and kubectl lines %q: want the schema's and the migrations' push and the kubectl lines", ptah, kubectl)
	}
	registry := env.get("PTAH_OCI_REGISTRY")
	digests := map[string]string{} // repository -> digest pushed
	for _, p := range ptah {
		if !strings.Contains(p, " push ") {
			sh(work, p)
			continue
		}
		o := sh(work, strings.ReplaceAll(p, "registry.example.com", registry)+" --plain-http",
			"PTAH_OCI_USERNAME="+env.get("PTAH_OCI_USERNAME"), "PTAH_OCI_PASSWORD="+env.get("PTAH_OCI_PASSWORD"))
		ref := strings.Fields(p)[3]
		repo, _, _ := strings.Cut(strings.TrimPrefix(ref, "oci://registry.example.com/"), ":")
		if digests[repo] = digestInOutput.FindString(o); digests[repo] == "" {
			t.Fatalf("README.md's %q printed no digest: %s", p, o)
		}
	}
	if len(digests) != 2 {
		t.Fatalf("README.md's ptah lines %q push %d artifacts, want the schema and the migrations", ptah, len(digests))
	}

	blocks := yamlBlock.FindAllStringSubmatch(readme, -1)
	if len(blocks) < 2 {
		t.Fatalf("README.md has %d yaml blocks, want the PtahSchema's and the PtahMigration's", len(blocks))
	}
	for i, b := range blocks {
		doc := pinnedRef.ReplaceAllStringFunc(b[1], func(m string) string {
			repo := pinnedRef.FindStringSubmatch(m)[1]
			if digests[repo] == "" {
				t.Fatalf("README.md yaml block %d pins %s, which no push of the README made", i+1, m)
			}
			return "oci://registry.example.com/" + repo + "@" + digests[repo]
		})
		doc = postgresURL.ReplaceAllStringFunc(doc, func(m string) string {
			u, err := url.Parse(m)
			db := strings.TrimPrefix(u.Path, "/")
			if err != nil || databases[db] == "" {
				t.Fatalf("README.md yaml block %d: URL %s names database %q; the quick start uses shop and ledger", i+1, m, db)
			}
			return databaseURL(ns, databases[db], creds.App)
		})
		doc = registryAuth.ReplaceAllString(doc, "username: "+registryUser+", password: "+creds.Registry)
		doc = strings.ReplaceAll(doc, "registry.example.com", registryInCluster())
		doc = strings.ReplaceAll(doc, "namespace: shop}", "namespace: "+ns+"}")
		if _, err := l.kubectlCmd(ctx, doc, "apply", "-f", "-"); err != nil {
			t.Fatalf("README.md yaml block %d applied: %v", i+1, err)
		}
	}

	inNamespace := func(line string) string { return strings.ReplaceAll(line, "-n shop", "-n "+ns) }
	approve := inlineCode.FindStringSubmatch(readme)
	if approve == nil {
		t.Fatal("README.md names no `kubectl ptah approve` command")
	}
	sh(work, "kubectl wait -n "+ns+" ptahschema/shop --for=condition=ApprovalRequired=True --timeout=5m")
	sh(work, inNamespace(approve[1])+" -n "+ns)
	for _, line := range kubectl {
		t.Logf("%s\n%s", line, sh(work, inNamespace(line)))
	}
	sh(work, "kubectl wait -n "+ns+" ptahschema/shop --for=condition=InSync=True --timeout=1s")
	sh(work, "kubectl wait -n "+ns+" ptahmigration/shop-migrations --for=condition=InSync=True --timeout=5m")
}
