package lab

import (
	"context"
	"fmt"
	"os"
	"regexp"
	"strings"
)

// A scenario namespace is ptah-demo-<6 hex>, labelled so, with a database
// storefront_<the same hex> of its own owned by the application role: the
// recorder runs scenarios side by side in them. Their names stand for the
// published ones (NAMESPACE=ptah-demo, database storefront), which is what
// the recorder's normalization writes back.
const scenarioLabel = "lab.ptah.run/scenario"

// databaseSQL is roleSQL for a database of the role that exists.
const databaseSQL = `\set ON_ERROR_STOP on
CREATE DATABASE :"db";
REVOKE ALL ON DATABASE :"db" FROM PUBLIC;
GRANT CONNECT, CREATE, TEMPORARY ON DATABASE :"db" TO :"role";
\c :"db"
ALTER SCHEMA public OWNER TO :"role";
`

var scenarioNamespace = regexp.MustCompile(`^` + Namespace + `-([0-9a-f]{6})$`)

// ScenarioUp makes a scenario namespace and its database and prints what a
// recorder needs: the namespace's value for NAMESPACE and each name the lab
// made mapped to the published name it stands for.
//
//	NAMESPACE=ptah-demo-3f9a1c
//	name ptah-demo-3f9a1c ptah-demo
//	name storefront_3f9a1c storefront
func (l *Lab) ScenarioUp(ctx context.Context) error {
	env, err := l.up(ctx)
	if err != nil {
		return err
	}
	creds, err := l.loadCredentials()
	if err != nil || creds == nil {
		return fmt.Errorf("the lab's credentials are missing from %s: run make demo-down && make demo-up", l.credentialsFile())
	}
	tag := randomHex(3)
	ns, db := Namespace+"-"+tag, databaseName+"_"+tag
	get := func(kind, name, path string) (string, error) {
		out, err := l.kubectlCmd(ctx, "", "-n", Namespace, "get", kind, name, "-o", "jsonpath="+path)
		if err == nil && out == "" {
			err = fmt.Errorf("%s/%s in %s has no %s: run make demo-up", kind, name, Namespace, path)
		}
		return strings.TrimSpace(out), err
	}
	registryIP, err := get("endpointslice", registryService+"-lab", "{.endpoints[0].addresses[0]}")
	if err != nil {
		return err
	}
	postgresIP, err := get("endpointslice", postgresService+"-lab", "{.endpoints[0].addresses[0]}")
	if err != nil {
		return err
	}
	image, err := get("deployment", psqlDeployment, "{.spec.template.spec.containers[0].image}")
	if err != nil {
		return err
	}
	// The lab's least-privileged role (made by up) owns every database; it
	// is not altered here, as scenarios side by side would race on its row.
	if _, err := l.d.Exec(ctx, env.get("PTAH_LAB_CLUSTER")+"-postgres", strings.NewReader(databaseSQL), "psql", "-X", "-q", "-U", "postgres",
		"-v", "role="+appRole, "-v", "db="+db); err != nil {
		return fmt.Errorf("database %s: %w", db, err)
	}
	objs, err := l.demoObjects(demoNamespace{name: ns, database: db, appPassword: creds.App, registryPassword: creds.Registry,
		psqlImage: image, registryIP: registryIP, postgresIP: postgresIP, labels: map[string]string{scenarioLabel: "true"}})
	if err != nil {
		return err
	}
	if err := l.applyDemo(ctx, ns, objs); err != nil {
		return fmt.Errorf("namespace %s: %w", ns, err)
	}
	l.printf("NAMESPACE=%s\nname %s %s\nname %s %s\n", ns, ns, Namespace, db, databaseName)
	return nil
}

// ScenarioDown removes a scenario namespace (without waiting for it to go)
// and drops its database. It refuses any other namespace.
func (l *Lab) ScenarioDown(ctx context.Context, ns string) error {
	m := scenarioNamespace.FindStringSubmatch(ns)
	if m == nil {
		return fmt.Errorf("%q is not a scenario namespace (%s-<6 hex> that scenario-up printed)", ns, Namespace)
	}
	env, err := l.up(ctx)
	if err != nil {
		return err
	}
	label, err := l.kubectlCmd(ctx, "", "get", "namespace", ns, "--ignore-not-found", "-o", "jsonpath={.metadata.labels.lab\\.ptah\\.run/scenario}")
	if err != nil {
		return err
	}
	if strings.TrimSpace(label) == "true" {
		if _, err := l.kubectlCmd(ctx, "", "delete", "namespace", ns, "--wait=false"); err != nil {
			return err
		}
	}
	// WITH (FORCE) ends what still holds a connection: a Job of the deleted namespace.
	drop := fmt.Sprintf("DROP DATABASE IF EXISTS %s WITH (FORCE);", databaseName+"_"+m[1])
	if _, err := l.d.Exec(ctx, env.get("PTAH_LAB_CLUSTER")+"-postgres", nil, "psql", "-X", "-q", "-U", "postgres", "-v", "ON_ERROR_STOP=1", "-c", drop); err != nil {
		return fmt.Errorf("drop the database of %s: %w", ns, err)
	}
	return nil
}

// namespace is the demo namespace a verb works in: NAMESPACE when the
// caller's environment names one (a scenario runs in its own), else the
// lab's.
func namespace() string {
	if ns := os.Getenv("NAMESPACE"); ns != "" {
		return ns
	}
	return Namespace
}

// checkDemoNamespace refuses a namespace the lab did not make: reset deletes
// everything of a kind in it.
func (l *Lab) checkDemoNamespace(ctx context.Context, ns string) error {
	out, err := l.kubectlCmd(ctx, "", "get", "namespace", ns, "--ignore-not-found", "-o", "jsonpath={.metadata.labels.app\\.kubernetes\\.io/managed-by}")
	if err != nil {
		return err
	}
	if strings.TrimSpace(out) != managedBy {
		return fmt.Errorf("NAMESPACE=%s is not a namespace the lab made (%s or one of scenario-up's): unset NAMESPACE or set it to one", ns, Namespace)
	}
	return nil
}
