// Command lab runs the local demonstration lab (see package demo/lab) and
// builds the integration tests' API server. main only parses the verb and
// its arguments and calls the lab.
package main

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"os"
	"os/signal"
	"path/filepath"
	"strings"
	"syscall"
	"time"

	"ptah.run/operator/demo/kubebuild"
	"ptah.run/operator/demo/lab"
)

const usage = `usage: lab VERB [ARGS]

  up                    bring the lab up (idempotent): kind cluster, registry, PostgreSQL, operator, demo namespace
  down [-images]        remove what the lab created; -images also removes the images it built
  prepare               prepare the host: Debian packages, dockerd, the OCI runtime wrapper where needed
  reset                 delete every Ptah object and Job in the demo namespace and drop the demo tables
  scenario-up           a namespace ptah-demo-<hex> with a database of its own; prints NAMESPACE=... and the names it stands for
  scenario-down NS      remove a namespace scenario-up made, and its database
  publish REV           push demo/schemas/REV.sql to the lab registry under a fresh tag; prints the digest
  publish-migrations SET  push the migration files of demo/migrations/SET under a fresh tag; prints the digest
  manifest NAME DIGEST  render demo/manifests/NAME.yaml (APPLY required; ALLOW_DESTRUCTIVE, INTERVAL, SUSPEND)
  credentials           print export PTAH_OCI_REGISTRY=... PTAH_OCI_USERNAME=... PTAH_OCI_PASSWORD=...
  psql SQL              run SQL as the application role through the demo-psql Deployment
  versions              print the lab's versions and where its images came from
  images BINDIR         assemble the manager and executor images from the static binaries in BINDIR (make images)
  envtest [-dir DIR] [-kubernetes-version V]
                        build kube-apiserver and etcd (` + lab.KubernetesVersion + ` by default) for the integration tests
`

// arity is how many arguments each verb takes.
var arity = map[string]int{"up": 0, "prepare": 0, "reset": 0, "credentials": 0, "versions": 0, "publish": 1, "publish-migrations": 1, "images": 1, "manifest": 2, "psql": 1, "scenario-up": 0, "scenario-down": 1}

func main() {
	if len(os.Args) < 2 || os.Args[1] == "-h" || os.Args[1] == "--help" || os.Args[1] == "help" {
		fmt.Fprint(os.Stderr, usage)
		os.Exit(2)
	}
	verb, args := os.Args[1], os.Args[2:]
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	defer stop()
	if err := dispatch(ctx, verb, args); err != nil {
		fmt.Fprintf(os.Stderr, "lab %s: %s\n", verb, oneLine(err))
		os.Exit(1)
	}
}

func dispatch(ctx context.Context, verb string, args []string) error {
	if verb == "envtest" {
		return envtest(ctx, args)
	}
	var removeImages bool
	if verb == "down" {
		fs := flag.NewFlagSet("down", flag.ExitOnError)
		fs.BoolVar(&removeImages, "images", false, "also remove the images the lab built")
		fs.Parse(args)
		args = fs.Args()
	} else if n, ok := arity[verb]; !ok {
		return fmt.Errorf("unknown verb %q: run lab help", verb)
	} else if len(args) != n {
		return fmt.Errorf("takes %d argument(s), got %d: run lab help", n, len(args))
	}
	root, err := repoRoot()
	if err != nil {
		return err
	}
	l := lab.New(root, os.Stdout, os.Stderr)
	switch verb {
	case "up":
		return l.Up(ctx)
	case "down":
		return l.Down(ctx, removeImages)
	case "prepare":
		return l.Prepare(ctx)
	case "reset":
		return l.Reset(ctx)
	case "scenario-up":
		return l.ScenarioUp(ctx)
	case "scenario-down":
		return l.ScenarioDown(ctx, args[0])
	case "publish":
		return l.Publish(ctx, args[0])
	case "publish-migrations":
		return l.PublishMigrations(ctx, args[0])
	case "manifest":
		out, err := l.Manifest(args[0], args[1], os.LookupEnv)
		if err != nil {
			return err
		}
		fmt.Print(out)
		return nil
	case "credentials":
		return l.Credentials()
	case "psql":
		return l.Psql(ctx, args[0])
	case "images":
		return l.Images(ctx, args[0])
	case "versions":
		return l.Versions(ctx)
	}
	return nil
}

// oneLine keeps the first line of an error and a short tail: each verb fails
// with a one-line reason naming what to do.
func oneLine(err error) string {
	if errors.Is(err, lab.ErrNoLab) {
		return lab.ErrNoLab.Error()
	}
	return strings.Join(strings.Fields(err.Error()), " ")
}

// repoRoot is the directory holding go.mod, from the working directory up.
func repoRoot() (string, error) {
	dir, err := os.Getwd()
	if err != nil {
		return "", err
	}
	for d := dir; ; d = filepath.Dir(d) {
		if _, err := os.Stat(filepath.Join(d, "go.mod")); err == nil {
			if _, err := os.Stat(filepath.Join(d, "demo")); err == nil {
				return d, nil
			}
		}
		if d == filepath.Dir(d) {
			return "", fmt.Errorf("not inside the repository (no go.mod with demo/ above %s): run lab from the checkout", dir)
		}
	}
}

func envtest(ctx context.Context, args []string) error {
	fs := flag.NewFlagSet("envtest", flag.ExitOnError)
	version := fs.String("kubernetes-version", lab.KubernetesVersion, "the k8s.io/kubernetes release to build (the compatibility tests build the oldest supported one)")
	dir := fs.String("dir", "", "where the binaries go (default: the cache directory of that version)")
	fs.Parse(args)
	if *dir == "" {
		*dir = kubebuild.DefaultCacheDir(*version)
	}
	start := time.Now()
	b := &kubebuild.Builder{
		KubernetesVersion: *version,
		WorkDir:           filepath.Join(filepath.Dir(*dir), "build"),
		Log:               os.Stderr,
	}
	if err := b.Kubernetes(ctx, *dir, "kube-apiserver"); err != nil {
		return err
	}
	if err := b.Etcd(ctx, *dir); err != nil {
		return err
	}
	fmt.Printf("envtest binaries for %s in %s (%s)\n", *version, *dir, time.Since(start).Round(time.Second))
	return nil
}
