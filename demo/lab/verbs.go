package lab

import (
	"context"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"time"

	"ptah.run/operator/demo/lab/internal/run"
)

// up loads the environment and checks the cluster answers, else ErrNoLab.
func (l *Lab) up(ctx context.Context) (*environment, error) {
	env, err := l.environment()
	if err != nil {
		return nil, err
	}
	if _, err := os.Stat(l.kubectl()); err != nil {
		return nil, ErrNoLab
	}
	if _, err := l.kubectlCmd(ctx, "", "get", "namespace", Namespace, "-o", "name", "--request-timeout=10s"); err != nil {
		return nil, fmt.Errorf("%w (cluster %s does not answer)", ErrNoLab, env.get("PTAH_LAB_CLUSTER"))
	}
	if creds, err := l.loadCredentials(); err == nil && creds != nil {
		l.r.Secret(creds.values()...)
	}
	return env, nil
}

// Credentials prints the registry credentials as an export line for a reader's shell.
func (l *Lab) Credentials() error {
	env, err := l.environment()
	if err != nil {
		return err
	}
	l.printf("export PTAH_OCI_REGISTRY=%s PTAH_OCI_USERNAME=%s PTAH_OCI_PASSWORD=%s\n",
		env.get("PTAH_OCI_REGISTRY"), env.get("PTAH_OCI_USERNAME"), env.get("PTAH_OCI_PASSWORD"))
	return nil
}

// Psql runs SQL as the application role through the demo-psql Deployment
// and prints what psql prints.
func (l *Lab) Psql(ctx context.Context, sql string) error {
	if strings.TrimSpace(sql) == "" {
		return errors.New("no SQL: pass it as one argument, e.g. lab psql 'select 1'")
	}
	if _, err := l.up(ctx); err != nil {
		return err
	}
	ns := namespace()
	if err := l.checkDemoNamespace(ctx, ns); err != nil {
		return err
	}
	out, err := l.r.Run(ctx, run.Cmd{Name: l.kubectl(), Stdin: strings.NewReader(sql), Brief: true,
		Args: []string{"--kubeconfig", l.kubeconfig(), "-n", ns, "exec", "-i", "deployment/" + psqlDeployment, "--",
			"sh", "-c", `exec psql "$DATABASE_URL" -X -q -v ON_ERROR_STOP=1 -f -`}})
	if err != nil {
		return err
	}
	l.printf("%s\n", out)
	return nil
}

var digestInOutput = regexp.MustCompile(`sha256:[0-9a-f]{64}`)

// Publish pushes demo/schemas/REV.sql to the lab registry under a fresh
// tag and prints only the digest.
func (l *Lab) Publish(ctx context.Context, rev string) error {
	file := filepath.Join(l.Root, "demo", "schemas", rev+".sql")
	if !namePattern.MatchString(rev) {
		return fmt.Errorf("%q is not a schema revision: use v1, v2 or v3 (demo/schemas/REV.sql)", rev)
	}
	if _, err := os.Stat(file); err != nil {
		return fmt.Errorf("no demo/schemas/%s.sql: use one of the files in demo/schemas", rev)
	}
	if _, err := os.Stat(filepath.Join(l.Root, "cmd", "ptah")); err != nil {
		return errors.New("the ptah tool (cmd/ptah) is not in this tree yet: build it first")
	}
	env, err := l.environment()
	if err != nil {
		return err
	}
	if creds, err := l.loadCredentials(); err == nil && creds != nil {
		l.r.Secret(creds.values()...)
	}
	tag := fmt.Sprintf("%s-%s", rev, time.Now().UTC().Format("20060102t150405")+"-"+randomHex(2))
	ref := fmt.Sprintf("oci://%s/storefront:%s", env.get("PTAH_OCI_REGISTRY"), tag)
	out, err := l.r.Run(ctx, run.Cmd{Name: "go", Dir: l.Root,
		Args: []string{"run", "./cmd/ptah", "schema", "push", ref, "--schema-file", file, "--plain-http"},
		Env:  []string{"PTAH_OCI_REGISTRY=" + env.get("PTAH_OCI_REGISTRY"), "PTAH_OCI_USERNAME=" + env.get("PTAH_OCI_USERNAME"), "PTAH_OCI_PASSWORD=" + env.get("PTAH_OCI_PASSWORD")}})
	if err != nil {
		return fmt.Errorf("publish %s: %w", rev, err)
	}
	digest := digestInOutput.FindString(out)
	if digest == "" {
		return fmt.Errorf("publish %s: ptah printed no sha256 digest", rev)
	}
	l.printf("%s\n", digest)
	return nil
}

// PublishMigrations pushes the migration files of demo/migrations/SET to
// the lab registry under a fresh tag of repository ledger, and prints only
// the digest: a PtahMigration pins its artifact by digest.
func (l *Lab) PublishMigrations(ctx context.Context, set string) error {
	dir := filepath.Join(l.Root, "demo", "migrations", set)
	if !namePattern.MatchString(set) {
		return fmt.Errorf("%q is not a migration set: use a folder of demo/migrations", set)
	}
	if _, err := os.Stat(filepath.Join(dir, "ptah.sum")); err != nil {
		return fmt.Errorf("no demo/migrations/%s/ptah.sum: use a folder of demo/migrations (ptah migrations hash writes its ptah.sum)", set)
	}
	env, err := l.environment()
	if err != nil {
		return err
	}
	if creds, err := l.loadCredentials(); err == nil && creds != nil {
		l.r.Secret(creds.values()...)
	}
	tag := fmt.Sprintf("%s-%s", set, time.Now().UTC().Format("20060102t150405")+"-"+randomHex(2))
	ref := fmt.Sprintf("oci://%s/ledger:%s", env.get("PTAH_OCI_REGISTRY"), tag)
	out, err := l.r.Run(ctx, run.Cmd{Name: "go", Dir: l.Root,
		Args: []string{"run", "./cmd/ptah", "migrations", "push", ref, "--dir", dir, "--plain-http"},
		Env:  []string{"PTAH_OCI_REGISTRY=" + env.get("PTAH_OCI_REGISTRY"), "PTAH_OCI_USERNAME=" + env.get("PTAH_OCI_USERNAME"), "PTAH_OCI_PASSWORD=" + env.get("PTAH_OCI_PASSWORD")}})
	if err != nil {
		return fmt.Errorf("publish migrations %s: %w", set, err)
	}
	digest := digestInOutput.FindString(out)
	if digest == "" {
		return fmt.Errorf("publish migrations %s: ptah printed no sha256 digest", set)
	}
	l.printf("%s\n", digest)
	return nil
}

// Reset deletes every Ptah object and Job in the demo namespace (NAMESPACE
// when set, so a scenario's own) and drops the demo tables and the
// migration history, leaving the lab up.
func (l *Lab) Reset(ctx context.Context) error {
	if _, err := l.up(ctx); err != nil {
		return err
	}
	ns := namespace()
	if err := l.checkDemoNamespace(ctx, ns); err != nil {
		return err
	}
	kinds, err := l.kubectlCmd(ctx, "", "api-resources", "--api-group=operator.ptah.run", "--namespaced=true", "-o", "name")
	if err != nil {
		return err
	}
	targets := append(strings.Fields(kinds), "jobs.batch")
	done := l.r.Step("reset: delete " + strings.Join(targets, ", ") + " and events in " + ns)
	if _, err := l.kubectlCmd(ctx, "", "-n", ns, "delete", strings.Join(targets, ","), "--all", "--ignore-not-found", "--wait=true", "--timeout=2m"); err != nil {
		return err
	}
	// Events too, after what emits them: a scenario's event listing must
	// show its own session only. One collection delete, not kubectl's one
	// request per event (seconds per scenario once operations have run).
	if _, err := l.kubectlCmd(ctx, "", "delete", "--raw", "/api/v1/namespaces/"+ns+"/events"); err != nil {
		return err
	}
	done("deleted")
	done = l.r.Step("reset: drop the tables of schema public and the migration history")
	const drop = `DO $$ DECLARE t text; BEGIN
  FOR t IN SELECT tablename FROM pg_tables WHERE schemaname = 'public' LOOP
    EXECUTE format('DROP TABLE IF EXISTS public.%I CASCADE', t);
  END LOOP; END $$;
DROP SCHEMA IF EXISTS ptah CASCADE;`
	if _, err := l.kubectlCmd(ctx, drop, "-n", ns, "exec", "-i", "deployment/"+psqlDeployment, "--",
		"sh", "-c", `exec psql "$DATABASE_URL" -X -q -v ON_ERROR_STOP=1 -f -`); err != nil {
		return err
	}
	done("dropped")
	return nil
}

// Versions prints what the lab runs, one KEY=VALUE a line.
func (l *Lab) Versions(ctx context.Context) error {
	env, err := l.environment()
	if err != nil {
		return err
	}
	for _, k := range []string{"PTAH_LAB_RUN_ID", "PTAH_LAB_KUBERNETES", "PTAH_LAB_KIND", "PTAH_LAB_NODE_IMAGE", "PTAH_LAB_OPERATOR_COMMIT"} {
		l.printf("%s=%s\n", k, env.get(k))
	}
	if raw, err := os.ReadFile(l.provenanceFile()); err == nil {
		for _, line := range strings.Split(strings.TrimSpace(string(raw)), "\n") {
			l.printf("image %s\n", line)
		}
	}
	if r, err := l.installed(ctx); err == nil {
		l.printf("OPERATOR=%s --version %s\n", r.Chart, r.Version)
	}
	if v, err := l.d.Exec(ctx, env.get("PTAH_LAB_CLUSTER")+"-postgres", nil, "psql", "-X", "-tA", "-U", "postgres", "-c", "show server_version"); err == nil {
		l.printf("POSTGRES=%s\n", v)
	}
	return nil
}
