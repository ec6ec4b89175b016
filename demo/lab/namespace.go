package lab

import (
	"context"
	"encoding/base64"
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"sort"
	"strings"

	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	discoveryv1 "k8s.io/api/discovery/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/utils/ptr"
	"sigs.k8s.io/yaml"
)

const (
	policyConfigMap = "demo-verification-policy"
	databaseSecret  = "demo-database"
	// brokenSecret points at a database that is not there, for the
	// failure-recovery scenario; its credentials are placeholders, not secrets.
	brokenSecret   = "demo-database-broken"
	registrySecret = "demo-registry"
	psqlDeployment = "demo-psql"
	managedBy      = "lab.ptah.run"
)

// namespaceObjects are what the demo namespace holds: Services and
// EndpointSlices to the registry and database containers, the Secrets, the
// verification policy and the psql client.
func (l *Lab) namespaceObjects(s *state, registryIP, postgresIP string) ([]any, error) {
	return l.demoObjects(demoNamespace{name: Namespace, database: databaseName, appPassword: s.creds.App, registryPassword: s.creds.Registry,
		psqlImage: s.postgresIm.Ref, registryIP: registryIP, postgresIP: postgresIP})
}

// demoNamespace is what one demo namespace's objects are made of: the lab's
// own (ptah-demo) or a scenario's, which has a database of its own.
type demoNamespace struct {
	name, database                string
	appPassword, registryPassword string
	psqlImage                     string
	registryIP, postgresIP        string
	labels                        map[string]string
}

func (l *Lab) demoObjects(d demoNamespace) ([]any, error) {
	labels := map[string]string{"app.kubernetes.io/managed-by": managedBy}
	nsLabels := map[string]string{"app.kubernetes.io/managed-by": managedBy}
	for k, v := range d.labels {
		nsLabels[k] = v
	}
	meta := func(name string) metav1.ObjectMeta {
		return metav1.ObjectMeta{Name: name, Namespace: d.name, Labels: labels}
	}
	registryIP, postgresIP := d.registryIP, d.postgresIP
	external := func(name, ip string, port int32) []any {
		svc := &corev1.Service{
			TypeMeta:   metav1.TypeMeta{APIVersion: "v1", Kind: "Service"},
			ObjectMeta: meta(name),
			Spec:       corev1.ServiceSpec{Ports: []corev1.ServicePort{{Name: name, Port: port, Protocol: corev1.ProtocolTCP}}},
		}
		slice := &discoveryv1.EndpointSlice{
			TypeMeta:    metav1.TypeMeta{APIVersion: "discovery.k8s.io/v1", Kind: "EndpointSlice"},
			ObjectMeta:  meta(name + "-lab"),
			AddressType: discoveryv1.AddressTypeIPv4,
			Endpoints:   []discoveryv1.Endpoint{{Addresses: []string{ip}, Conditions: discoveryv1.EndpointConditions{Ready: ptr.To(true)}}},
			Ports:       []discoveryv1.EndpointPort{{Name: ptr.To(name), Port: ptr.To(port), Protocol: ptr.To(corev1.ProtocolTCP)}},
		}
		slice.Labels = map[string]string{"kubernetes.io/service-name": name, "endpointslice.kubernetes.io/managed-by": managedBy}
		return []any{svc, slice}
	}
	dockerConfig, _ := json.Marshal(map[string]any{"auths": map[string]any{registryInCluster(): map[string]string{
		"username": registryUser, "password": d.registryPassword,
		"auth": base64.StdEncoding.EncodeToString([]byte(registryUser + ":" + d.registryPassword)),
	}}})
	policy, err := l.policyData()
	if err != nil {
		return nil, err
	}
	objs := []any{&corev1.Namespace{TypeMeta: metav1.TypeMeta{APIVersion: "v1", Kind: "Namespace"}, ObjectMeta: metav1.ObjectMeta{Name: d.name, Labels: nsLabels}}}
	objs = append(objs, external(registryService, registryIP, 5000)...)
	objs = append(objs, external(postgresService, postgresIP, 5432)...)
	objs = append(objs,
		&corev1.Secret{
			TypeMeta: metav1.TypeMeta{APIVersion: "v1", Kind: "Secret"}, ObjectMeta: meta(databaseSecret), Type: corev1.SecretTypeOpaque,
			StringData: map[string]string{"url": databaseURL(d.name, d.database, d.appPassword), "password": d.appPassword},
		},
		&corev1.Secret{
			TypeMeta: metav1.TypeMeta{APIVersion: "v1", Kind: "Secret"}, ObjectMeta: meta(brokenSecret), Type: corev1.SecretTypeOpaque,
			StringData: map[string]string{"url": brokenDatabaseURL(d.name, d.database)},
		},
		&corev1.Secret{
			TypeMeta: metav1.TypeMeta{APIVersion: "v1", Kind: "Secret"}, ObjectMeta: meta(registrySecret), Type: corev1.SecretTypeDockerConfigJson,
			StringData: map[string]string{
				corev1.DockerConfigJsonKey: string(dockerConfig),
				"registry":                 registryInCluster(), "username": registryUser, "password": d.registryPassword,
			},
		},
		&corev1.ConfigMap{
			TypeMeta: metav1.TypeMeta{APIVersion: "v1", Kind: "ConfigMap"}, ObjectMeta: meta(policyConfigMap),
			Immutable: ptr.To(true), Data: policy,
		},
		l.psqlDeployment(meta(psqlDeployment), d.psqlImage, d.database),
	)
	return objs, nil
}

func databaseURL(namespace, database, password string) string {
	return fmt.Sprintf("postgres://%s:%s@%s.%s.svc:5432/%s?sslmode=disable", appRole, password, postgresService, namespace, database)
}

// brokenDatabaseURL names a Service that does not exist, so a connection
// fails at once (the name does not resolve) rather than after a timeout.
func brokenDatabaseURL(namespace, database string) string {
	return fmt.Sprintf("postgres://nobody:nobody@%s-absent.%s.svc:5432/%s?sslmode=disable", postgresService, namespace, database)
}

// policyData is demo/policy/*, one key per file, with ${REGISTRY_IN_CLUSTER} filled in.
func (l *Lab) policyData() (map[string]string, error) {
	files, _ := filepath.Glob(filepath.Join(l.Root, "demo", "policy", "*"))
	sort.Strings(files)
	data := map[string]string{}
	for _, f := range files {
		raw, err := os.ReadFile(f)
		if err != nil {
			return nil, err
		}
		data[filepath.Base(f)] = strings.ReplaceAll(string(raw), "${REGISTRY_IN_CLUSTER}", registryInCluster())
	}
	if len(data) == 0 {
		return nil, fmt.Errorf("no verification policy in %s", filepath.Join(l.Root, "demo", "policy"))
	}
	return data, nil
}

// psqlDeployment is a psql client that reads its connection from the Secret.
func (l *Lab) psqlDeployment(meta metav1.ObjectMeta, image, database string) *appsv1.Deployment {
	sel := map[string]string{"app.kubernetes.io/name": psqlDeployment}
	podLabels := map[string]string{"app.kubernetes.io/name": psqlDeployment, "app.kubernetes.io/managed-by": managedBy}
	return &appsv1.Deployment{
		TypeMeta:   metav1.TypeMeta{APIVersion: "apps/v1", Kind: "Deployment"},
		ObjectMeta: meta,
		Spec: appsv1.DeploymentSpec{
			Replicas: ptr.To(int32(1)),
			Selector: &metav1.LabelSelector{MatchLabels: sel},
			Template: corev1.PodTemplateSpec{
				ObjectMeta: metav1.ObjectMeta{Labels: podLabels},
				Spec: corev1.PodSpec{
					AutomountServiceAccountToken:  ptr.To(false),
					TerminationGracePeriodSeconds: ptr.To(int64(1)),
					SecurityContext:               &corev1.PodSecurityContext{RunAsNonRoot: ptr.To(true), RunAsUser: ptr.To(int64(65532)), RunAsGroup: ptr.To(int64(65532))},
					Containers: []corev1.Container{{
						Name:            "psql",
						Image:           image,
						ImagePullPolicy: corev1.PullNever,
						Command:         []string{"sleep", "infinity"},
						// DATABASE_URL for the lab's own psql verb; the PG* names let a
						// reader's plain `kubectl exec deploy/demo-psql -- psql -c ...`
						// connect as the application role too.
						Env: []corev1.EnvVar{
							{Name: "DATABASE_URL", ValueFrom: secretKey(databaseSecret, "url")},
							{Name: "PGHOST", Value: postgresService + "." + meta.Namespace + ".svc"},
							{Name: "PGPORT", Value: "5432"},
							{Name: "PGDATABASE", Value: database},
							{Name: "PGUSER", Value: appRole},
							{Name: "PGSSLMODE", Value: "disable"},
							{Name: "PGPASSWORD", ValueFrom: secretKey(databaseSecret, "password")},
						},
						// Started means the database answers a query through the
						// Service: a Service kube-proxy has not programmed yet is an
						// address nothing routes, and on a machine whose egress
						// answers any TCP connection psql gets an HTTP reply ("expected
						// authentication request from server, but received H"). The
						// registry's Service is applied before the database's, so it is
						// programmed by then too. A startup probe runs only until it
						// passes: no exec a second for the Pod's life.
						StartupProbe: &corev1.Probe{
							ProbeHandler: corev1.ProbeHandler{Exec: &corev1.ExecAction{
								Command: []string{"psql", "-X", "-q", "-tA", "-c", "select 1"},
							}},
							PeriodSeconds: 1, TimeoutSeconds: 5, FailureThreshold: 170,
						},
						SecurityContext: &corev1.SecurityContext{
							AllowPrivilegeEscalation: ptr.To(false), ReadOnlyRootFilesystem: ptr.To(true),
							Capabilities: &corev1.Capabilities{Drop: []corev1.Capability{"ALL"}},
						},
					}},
				},
			},
		},
	}
}

func secretKey(name, key string) *corev1.EnvVarSource {
	return &corev1.EnvVarSource{SecretKeyRef: &corev1.SecretKeySelector{LocalObjectReference: corev1.LocalObjectReference{Name: name}, Key: key}}
}

func toYAML(objs []any) (string, error) {
	var docs []string
	for _, o := range objs {
		b, err := yaml.Marshal(o)
		if err != nil {
			return "", err
		}
		docs = append(docs, string(b))
	}
	return strings.Join(docs, "---\n"), nil
}

func (l *Lab) upNamespace(ctx context.Context, s *state, _ *created) (string, error) {
	registryIP, err := l.d.IP(ctx, s.registry, "kind")
	if err != nil {
		return "", err
	}
	postgresIP, err := l.d.IP(ctx, s.postgres, "kind")
	if err != nil {
		return "", err
	}
	objs, err := l.namespaceObjects(s, registryIP, postgresIP)
	if err != nil {
		return "", err
	}
	if err := l.applyDemo(ctx, Namespace, objs); err != nil {
		return "", err
	}
	return fmt.Sprintf("%d objects applied (registry %s, postgres %s); deployment/%s Available", len(objs), registryIP, postgresIP, psqlDeployment), nil
}

// applyDemo applies a demo namespace's objects and waits for its psql client.
func (l *Lab) applyDemo(ctx context.Context, namespace string, objs []any) error {
	doc, err := toYAML(objs)
	if err != nil {
		return err
	}
	apply := func() error {
		_, err := l.kubectlCmd(ctx, doc, "apply", "--server-side", "--force-conflicts", "--field-manager="+managedBy, "-f", "-")
		return err
	}
	if err := apply(); err != nil {
		if !strings.Contains(err.Error(), "immutable") {
			return err
		}
		// The policy changed: an immutable ConfigMap is replaced, never edited.
		l.r.Printf("  verification policy changed: replacing configmap/%s", policyConfigMap)
		if _, err := l.kubectlCmd(ctx, "", "-n", namespace, "delete", "configmap", policyConfigMap); err != nil {
			return err
		}
		if err := apply(); err != nil {
			return err
		}
	}
	if _, err = l.kubectlCmd(ctx, "", "-n", namespace, "rollout", "status", "deployment/"+psqlDeployment, "--timeout=3m"); err != nil {
		return fmt.Errorf("%w: deployment/%s starts only once it can query %s.%s.svc; see kubectl -n %s describe pod -l app.kubernetes.io/name=%s, and bring the lab's database back with demo/bin/lab up",
			err, psqlDeployment, postgresService, namespace, namespace, psqlDeployment)
	}
	return nil
}
