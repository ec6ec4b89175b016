package lab

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"errors"
	"fmt"
	"net/http"
	"os"
	"path/filepath"
	"strings"
	"time"

	"golang.org/x/crypto/bcrypt"
	"helm.sh/helm/v3/pkg/action"

	"ptah.run/operator/demo/lab/internal/docker"
	"ptah.run/operator/demo/lab/internal/images"
	"ptah.run/operator/demo/lab/internal/run"
)

// credentials are every password the lab generated, kept across Ups.
type credentials struct {
	Registry, Postgres, App string
}

func (c credentials) values() []string { return []string{c.Registry, c.Postgres, c.App} }

// state is what one Up builds on: run id, names, images.
type state struct {
	runID      string
	cluster    string
	registry   string // container names
	postgres   string
	creds      credentials
	node       images.Provenance
	registryIm images.Provenance
	postgresIm images.Provenance
	devIm      images.Provenance
}

func randomHex(n int) string {
	b := make([]byte, n)
	if _, err := rand.Read(b); err != nil {
		panic(err)
	}
	return hex.EncodeToString(b)
}

// Up brings the lab up, or completes and refreshes one that is up; running
// it twice changes nothing the second time.
func (l *Lab) Up(ctx context.Context) error {
	start := time.Now()
	if err := os.MkdirAll(l.Dir, 0o700); err != nil {
		return err
	}
	if err := l.Prepare(ctx); err != nil {
		return err
	}
	s, err := l.loadState()
	if err != nil {
		return err
	}
	l.r.Secret(s.creds.values()...)
	l.r.Printf("lab %s: cluster %s", s.runID, s.cluster)
	made := loadCreated(l.createdFile())
	steps := []struct {
		name string
		fn   func(context.Context, *state, *created) (string, error)
	}{
		{"images", l.upImages},
		{"kubectl " + l.Kubernetes + " and kind " + KindVersion, l.upTools},
		{"kind cluster", l.upCluster},
		{"registry", l.upRegistry},
		{"postgres", l.upPostgres},
		{"load images into the cluster", l.upLoadImages},
		{"operator", l.upOperator},
		{"namespace " + Namespace, l.upNamespace},
		{"environment", l.upEnvironment},
	}
	for _, st := range steps {
		done := l.r.Step(st.name)
		result, err := st.fn(ctx, s, made)
		if err != nil {
			return fmt.Errorf("%s: %w", st.name, err)
		}
		done(result)
	}
	l.r.Printf("lab up in %s: source %s", run.Since(start), l.environmentFile())
	return nil
}

// loadState reuses the run id and credentials of a lab that is up, else makes new ones.
func (l *Lab) loadState() (*state, error) {
	s := &state{}
	if env, err := l.environment(); err == nil {
		s.runID = env.get("PTAH_LAB_RUN_ID")
	}
	creds, err := l.loadCredentials()
	if err != nil {
		return nil, err
	}
	if s.runID == "" || creds == nil {
		s.runID = randomHex(3)
		creds = &credentials{Registry: randomHex(16), Postgres: randomHex(16), App: randomHex(16)}
		if err := l.saveCredentials(*creds); err != nil {
			return nil, err
		}
	}
	s.creds = *creds
	s.cluster = "ptah-lab-" + s.runID
	s.registry = s.cluster + "-registry"
	s.postgres = s.cluster + "-postgres"
	return s, nil
}

func (l *Lab) credentialsFile() string { return filepath.Join(l.Dir, "credentials") }

func (l *Lab) loadCredentials() (*credentials, error) {
	env, err := loadEnvironment(l.credentialsFile())
	if errors.Is(err, ErrNoLab) {
		return nil, nil
	}
	if err != nil {
		return nil, err
	}
	c := &credentials{Registry: env.get("REGISTRY_PASSWORD"), Postgres: env.get("POSTGRES_PASSWORD"), App: env.get("APP_PASSWORD")}
	if c.Registry == "" || c.Postgres == "" || c.App == "" {
		return nil, nil
	}
	return c, nil
}

// saveCredentials writes the credentials file and the secrets file (one
// value per line, what the recorder refuses to publish), both mode 0600.
func (l *Lab) saveCredentials(c credentials) error {
	e := &environment{}
	e.set("REGISTRY_USERNAME", registryUser)
	e.set("REGISTRY_PASSWORD", c.Registry)
	e.set("POSTGRES_PASSWORD", c.Postgres)
	e.set("APP_ROLE", appRole)
	e.set("APP_PASSWORD", c.App)
	if err := writePrivate(l.credentialsFile(), e.bytes()); err != nil {
		return err
	}
	return writePrivate(l.secretsFile(), []byte(strings.Join(c.values(), "\n")+"\n"))
}

func (l *Lab) upImages(ctx context.Context, s *state, _ *created) (string, error) {
	b := l.builder()
	// PostgreSQL's root filesystem is network bound, the node's Go builds CPU
	// bound: they overlap. The registry's Go build waits for the node's.
	pgDone := make(chan error, 1)
	go func() {
		var err error
		s.postgresIm, err = b.Postgres(ctx)
		pgDone <- err
	}()
	var err error
	if s.node, err = b.Node(ctx); err != nil {
		<-pgDone
		return "", err
	}
	if s.registryIm, err = b.Registry(ctx); err != nil {
		<-pgDone
		return "", err
	}
	if err := <-pgDone; err != nil {
		return "", err
	}
	if s.devIm, err = b.DevDatabase(ctx, s.postgresIm.Ref); err != nil {
		return "", err
	}
	psql := s.postgresIm
	psql.Role = "psql"
	var lines []string
	for _, p := range []images.Provenance{s.node, s.registryIm, s.postgresIm, psql, s.devIm} {
		lines = append(lines, p.String())
	}
	if err := os.WriteFile(l.provenanceFile(), []byte(strings.Join(lines, "\n")+"\n"), 0o644); err != nil {
		return "", err
	}
	return strings.Join(lines, "; "), nil
}

// upTools puts kubectl matching the cluster, the kind command line and the
// kubectl-ptah plugin in demo/.lab/bin (PTAH_LAB_BIN), first on PATH for
// everything the lab and the scenarios run.
func (l *Lab) upTools(ctx context.Context, _ *state, _ *created) (string, error) {
	if err := os.MkdirAll(l.binDir(), 0o755); err != nil {
		return "", err
	}
	b := l.builder()
	var done []string
	for _, tool := range []struct {
		build func(context.Context) (string, error)
		dst   string
	}{{b.Kubectl, l.kubectl()}, {b.Kind, filepath.Join(l.binDir(), "kind")}} {
		src, err := tool.build(ctx)
		if err != nil {
			return "", err
		}
		if !same(src, tool.dst) {
			if _, err := l.r.Output(ctx, "install", "-m", "0755", src, tool.dst); err != nil {
				return "", err
			}
		}
		done = append(done, tool.dst)
	}
	// The kubectl plugin from this tree, so a scenario runs `kubectl ptah`
	// as a reader who installed it does.
	plugin := filepath.Join(l.binDir(), "kubectl-ptah")
	if _, err := l.r.Run(ctx, run.Cmd{Name: "go", Args: []string{"build", "-trimpath", "-o", plugin, "./cmd/kubectl-ptah"}, Dir: l.Root, Env: []string{"CGO_ENABLED=0"}}); err != nil {
		return "", err
	}
	done = append(done, plugin)
	return strings.Join(done, ", ") + " (first on PATH for the lab and the scenarios)", nil
}

func same(a, b string) bool {
	fa, err1 := os.Stat(a)
	fb, err2 := os.Stat(b)
	return err1 == nil && err2 == nil && fa.Size() == fb.Size() && !fb.ModTime().Before(fa.ModTime())
}

func (l *Lab) upRegistry(ctx context.Context, s *state, made *created) (string, error) {
	htpasswd := filepath.Join(l.Dir, "registry", "htpasswd")
	if c := l.d.Inspect(ctx, s.registry); !c.Running {
		if c.Exists {
			if err := l.d.Remove(ctx, s.registry); err != nil {
				return "", err
			}
		}
		// The registry checks the hash on every request (a pull is
		// several), and at the default cost each check took 65 ms of CPU
		// here, on the path of every operation Pod's pull. The cost slows
		// the guessing of a weak password from a stolen hash; this
		// password is 32 random hex digits, beyond guessing at any cost.
		hash, err := bcrypt.GenerateFromPassword([]byte(s.creds.Registry), bcrypt.MinCost)
		if err != nil {
			return "", err
		}
		// The registry reads the file as its own user: readable, in a private directory.
		if err := os.MkdirAll(filepath.Dir(htpasswd), 0o700); err != nil {
			return "", err
		}
		if err := os.WriteFile(htpasswd, []byte(registryUser+":"+string(hash)+"\n"), 0o644); err != nil {
			return "", err
		}
		if err := made.add("container", s.registry); err != nil {
			return "", err
		}
		if err := l.d.Run(ctx, "--name", s.registry, "--network", "kind", "--label", docker.LabelRun+"="+s.runID,
			"-p", "127.0.0.1::5000", "-v", htpasswd+":/auth/htpasswd:ro",
			"-e", "REGISTRY_AUTH_HTPASSWD_REALM=ptah-lab", "-e", "REGISTRY_AUTH_HTPASSWD_PATH=/auth/htpasswd",
			s.registryIm.Ref); err != nil {
			return "", err
		}
	}
	port, err := l.d.HostPort(ctx, s.registry, "5000/tcp")
	if err != nil {
		return "", err
	}
	// A registry that asks for credentials answers /v2/ with 401.
	url := "http://127.0.0.1:" + port + "/v2/"
	deadline := time.Now().Add(30 * time.Second)
	for {
		resp, err := http.Get(url)
		if err == nil {
			resp.Body.Close()
			if resp.StatusCode == http.StatusUnauthorized {
				break
			}
			err = fmt.Errorf("%s answered %s, want 401", url, resp.Status)
		}
		if time.Now().After(deadline) {
			return "", fmt.Errorf("registry %s: %w", s.registry, err)
		}
		time.Sleep(300 * time.Millisecond)
	}
	return fmt.Sprintf("%s on 127.0.0.1:%s, asks for credentials", s.registry, port), nil
}

const roleSQL = `\set ON_ERROR_STOP on
SELECT format('CREATE ROLE %I LOGIN NOSUPERUSER NOCREATEDB NOCREATEROLE', :'role')
  WHERE NOT EXISTS (SELECT 1 FROM pg_roles WHERE rolname = :'role') \gexec
ALTER ROLE :"role" PASSWORD :'password';
SELECT format('CREATE DATABASE %I', :'db') WHERE NOT EXISTS (SELECT 1 FROM pg_database WHERE datname = :'db') \gexec
REVOKE ALL ON DATABASE :"db" FROM PUBLIC;
GRANT CONNECT, CREATE, TEMPORARY ON DATABASE :"db" TO :"role";
\c :"db"
ALTER SCHEMA public OWNER TO :"role";
`

func (l *Lab) upPostgres(ctx context.Context, s *state, made *created) (string, error) {
	if c := l.d.Inspect(ctx, s.postgres); !c.Running {
		if c.Exists {
			if err := l.d.Remove(ctx, s.postgres); err != nil {
				return "", err
			}
		}
		// The superuser password goes through an env file, never a command line.
		envFile := filepath.Join(l.Dir, "postgres.env")
		if err := writePrivate(envFile, []byte("POSTGRES_PASSWORD="+s.creds.Postgres+"\n")); err != nil {
			return "", err
		}
		if err := made.add("container", s.postgres); err != nil {
			return "", err
		}
		if err := l.d.Run(ctx, "--name", s.postgres, "--network", "kind", "--label", docker.LabelRun+"="+s.runID,
			"--env-file", envFile, s.postgresIm.Ref); err != nil {
			return "", err
		}
	}
	// TCP, not the socket: the official image's first start serves the socket only while it initialises.
	deadline := time.Now().Add(90 * time.Second)
	for !l.r.Succeeds(ctx, "docker", "exec", s.postgres, "pg_isready", "-q", "-h", "127.0.0.1", "-U", "postgres") {
		if time.Now().After(deadline) {
			return "", fmt.Errorf("postgres %s not ready within 90s: docker logs %s", s.postgres, s.postgres)
		}
		time.Sleep(500 * time.Millisecond)
	}
	// The password travels on stdin, never on a command line; it is hex, so it needs no quoting.
	sql := strings.NewReader(fmt.Sprintf("\\set password '%s'\n", s.creds.App) + roleSQL)
	if _, err := l.d.Exec(ctx, s.postgres, sql, "psql", "-X", "-q", "-U", "postgres",
		"-v", "role="+appRole, "-v", "db="+databaseName); err != nil {
		return "", err
	}
	return fmt.Sprintf("%s, database %s owned in schema public by least-privileged role %s", s.postgres, databaseName, appRole), nil
}

func (l *Lab) kubectlCmd(ctx context.Context, stdin string, args ...string) (string, error) {
	c := run.Cmd{Name: l.kubectl(), Args: append([]string{"--kubeconfig", l.kubeconfig()}, args...)}
	if stdin != "" {
		c.Stdin = strings.NewReader(stdin)
	}
	return l.r.Run(ctx, c)
}

func (l *Lab) upOperator(ctx context.Context, s *state, _ *created) (string, error) {
	if n, _ := filepath.Glob(filepath.Join(l.OperatorImagesDir(), "*.tar")); len(n) == 0 {
		return fmt.Sprintf("skipped: no operator images in %s to release (run make images)", l.OperatorImagesDir()), nil
	}
	port, err := l.d.HostPort(ctx, s.registry, "5000/tcp")
	if err != nil {
		return "", err
	}
	r, err := l.publish(ctx, s, port)
	if err != nil {
		return "", err
	}
	controller, err := l.installChart(ctx, r, ReleaseName, OperatorNamespace, l.releaseValues(s.devIm.Ref), false)
	if err != nil {
		return "", err
	}
	if _, err := l.kubectlCmd(ctx, "", "-n", OperatorNamespace, "rollout", "status", "deployment/"+controller, "--timeout=3m"); err != nil {
		return "", fmt.Errorf("controller deployment/%s not Available: %w", controller, err)
	}
	return fmt.Sprintf("release %s published to the lab registry, installed as Helm release %s in %s from %s; deployment/%s Available", r.Version, ReleaseName, OperatorNamespace, r.Chart, controller), nil
}

// releaseValues are the chart values the lab installs its release with:
// the released chart names its images; the lab adds its dev database
// image and its registry, which speaks plain HTTP.
func (l *Lab) releaseValues(devImage string) map[string]any {
	return map[string]any{
		"devDatabase":         map[string]any{"image": devImage},
		"plainHTTPRegistries": []any{registryInCluster()},
	}
}

// installed is the lab's release as Helm installed it: its version, from
// the lab's registry.
func (l *Lab) installed(ctx context.Context) (*labRelease, error) {
	s, err := l.loadState()
	if err != nil {
		return nil, err
	}
	port, err := l.d.HostPort(ctx, s.registry, "5000/tcp")
	if err != nil {
		return nil, err
	}
	r := &labRelease{Registry: "127.0.0.1:" + port, Password: s.creds.Registry}
	r.Chart = chartRef(r.Registry)
	cfg, err := l.helmConfig(OperatorNamespace, r)
	if err != nil {
		return nil, err
	}
	rel, err := action.NewGet(cfg).Run(ReleaseName)
	if err != nil {
		return nil, fmt.Errorf("helm get %s: %w (run make demo-up)", ReleaseName, err)
	}
	r.Version = rel.Chart.Metadata.Version
	return r, nil
}

// controllerName is the operator's Deployment as installed, else the default.
func (l *Lab) controllerName(ctx context.Context) string {
	out, err := l.kubectlCmd(ctx, "", "-n", OperatorNamespace, "get", "deployments", "-o", "jsonpath={.items[*].metadata.name}")
	if err != nil || out == "" {
		return defaultController
	}
	return strings.Fields(out)[0]
}

func (l *Lab) upEnvironment(ctx context.Context, s *state, _ *created) (string, error) {
	port, err := l.d.HostPort(ctx, s.registry, "5000/tcp")
	if err != nil {
		return "", err
	}
	e := &environment{}
	e.set("KUBECONFIG", l.kubeconfig())
	e.set("NAMESPACE", Namespace)
	e.set("OPERATOR_NAMESPACE", OperatorNamespace)
	e.set("CONTROLLER", l.controllerName(ctx))
	e.set("REGISTRY_IN_CLUSTER", registryInCluster())
	e.set("PTAH_OCI_REGISTRY", "127.0.0.1:"+port)
	e.set("PTAH_OCI_USERNAME", registryUser)
	e.set("PTAH_OCI_PASSWORD", s.creds.Registry)
	e.set("PTAH_LAB_BIN", l.binDir())
	// The recorder runs `$PTAH_LAB_SCENARIOS scenario-up` and `scenario-down NS`
	// to give each scenario a namespace and database of its own.
	e.set("PTAH_LAB_SCENARIOS", filepath.Join(l.Root, "demo", "bin", "lab"))
	e.set("PTAH_LAB_RUN_ID", s.runID)
	e.set("PTAH_LAB_CLUSTER", s.cluster)
	e.set("PTAH_LAB_KUBERNETES", l.Kubernetes)
	e.set("PTAH_LAB_KIND", KindVersion)
	// The images' own record wins: the tree may have moved on since `make images`.
	e.set("PTAH_LAB_OPERATOR_COMMIT", l.commit(ctx))
	build := l.imageBuild()
	for _, k := range build.keys {
		e.set(k, build.get(k))
	}
	e.set("PTAH_LAB_NODE_IMAGE", s.node.Ref)
	e.set("PTAH_LAB_SECRETS", l.secretsFile())
	// The broken database's Secret holds placeholders (nobody:nobody) that
	// a scenario may name; the recorder does not count them as credentials.
	e.set("PTAH_LAB_PLACEHOLDERS", Namespace+"/"+brokenSecret)
	if err := writePrivate(l.environmentFile(), e.bytes()); err != nil {
		return "", err
	}
	return l.environmentFile() + " (0600)", nil
}

func registryInCluster() string { return registryService + "." + Namespace + ".svc:5000" }

func (l *Lab) commit(ctx context.Context) string {
	out, err := l.r.Run(ctx, run.Cmd{Name: "git", Args: []string{"rev-parse", "HEAD"}, Dir: l.Root})
	if err != nil {
		return "unknown"
	}
	return out
}
