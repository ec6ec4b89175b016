package images

import (
	"context"
	_ "embed"
	"encoding/base64"
	"fmt"
	"os"
	"path/filepath"

	"ptah.run/operator/demo/kubebuild"
	"ptah.run/operator/operator/devdb"
)

//go:embed postgres-entrypoint.sh
var postgresEntrypoint string

//go:embed registry-config.yml
var registryConfig string

const (
	distributionModule  = "github.com/distribution/distribution/v3"
	distributionVersion = "v3.1.2"
	// OfficialRegistry and OfficialPostgres are used when present or pullable.
	OfficialRegistry = "registry:3"
	OfficialPostgres = "postgres:15"
)

// Registry returns an image of the CNCF distribution registry: the official
// one when present or pullable, else ours, a static binary of
// distribution's cmd/registry assembled with go-containerregistry.
// Both read the REGISTRY_* environment overrides the lab sets. Ours compiles
// in only what the lab configures (filesystem storage, htpasswd): the stock
// cmd/registry also compiles every cloud storage driver, which took most of
// a cold lab build (about 24 minutes on 2 busy cores).
func (b *Builder) Registry(ctx context.Context) (Provenance, error) {
	if p, ok := b.presentOrPulled(ctx, "registry", OfficialRegistry); ok {
		return p, nil
	}
	dir := filepath.Join(b.Cache, "registry-lean-"+distributionVersion)
	bin := filepath.Join(dir, "bin")
	if err := b.kube().Program(ctx, bin, kubebuild.Program{
		Name: "registry", Module: distributionModule, Version: distributionVersion,
		Doc: "the CNCF distribution registry with filesystem storage and htpasswd auth",
		Imports: []string{
			distributionModule + "/registry",
			"_ " + distributionModule + "/registry/auth/htpasswd",
			"_ " + distributionModule + "/registry/storage/driver/filesystem",
		},
		Main: "registry.RootCmd.Execute()",
	}); err != nil {
		return Provenance{}, err
	}
	cfgDir := filepath.Join(dir, "etc", "distribution")
	if err := os.MkdirAll(cfgDir, 0o755); err != nil {
		return Provenance{}, err
	}
	if err := os.WriteFile(filepath.Join(cfgDir, "config.yml"), []byte(registryConfig), 0o644); err != nil {
		return Provenance{}, err
	}
	key, err := contentKey([]string{dir}, recipe)
	if err != nil {
		return Provenance{}, err
	}
	ref := fmt.Sprintf("ptah-lab/registry:%s-%s", distributionVersion, key)
	if b.D.ImageID(ctx, ref) != "" {
		return Provenance{"registry", ref, "cached"}, nil
	}
	done := b.R.Step("registry: assemble " + ref)
	tmp, err := os.MkdirTemp(b.Cache, "registry-image-")
	if err != nil {
		return Provenance{}, err
	}
	defer os.RemoveAll(tmp)
	tarPath := filepath.Join(tmp, "registry.tar")
	img := dirImage{Ref: ref, Dir: dir, Entrypoint: []string{"/bin/registry"}, Cmd: []string{"serve", "/etc/distribution/config.yml"}}
	if err := writeImages(tarPath, tmp, img); err != nil {
		return Provenance{}, err
	}
	if err := b.D.Load(ctx, tarPath); err != nil {
		return Provenance{}, err
	}
	done("built")
	return Provenance{"registry", ref, "built"}, nil
}

// Postgres returns a PostgreSQL 15 image: the official one when present or
// pullable, else one built from Debian's packages with an entrypoint that
// takes the same settings. It also holds psql, so it serves as the client.
func (b *Builder) Postgres(ctx context.Context) (Provenance, error) {
	if p, ok := b.presentOrPulled(ctx, "postgres", OfficialPostgres); ok {
		return p, nil
	}
	rf := Rootfs{Name: "postgres", Packages: postgresPackages}
	ref := fmt.Sprintf("ptah-lab/postgres:15-%s", mustKey(rf.Key(), postgresEntrypoint, recipe))
	if b.D.ImageID(ctx, ref) != "" {
		return Provenance{"postgres", ref, "cached"}, nil
	}
	root, err := rf.Ensure(ctx, b.R, b.Cache)
	if err != nil {
		return Provenance{}, err
	}
	done := b.R.Step("postgres: build " + ref + " from Debian's packages")
	if err := os.WriteFile(filepath.Join(root, "usr/local/bin/docker-entrypoint.sh"), []byte(postgresEntrypoint), 0o755); err != nil {
		return Provenance{}, err
	}
	if err := b.importDir(ctx, root, ref,
		"ENV PATH=/usr/lib/postgresql/15/bin:/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin",
		"ENV PGDATA=/var/lib/postgresql/data",
		"ENV LANG=C.UTF-8",
		`ENTRYPOINT ["/usr/local/bin/docker-entrypoint.sh"]`,
		"EXPOSE 5432"); err != nil {
		return Provenance{}, err
	}
	done("built")
	return Provenance{"postgres", ref, "built"}, nil
}

func mustKey(extra ...string) string {
	k, _ := contentKey(nil, extra...)
	return k
}

// devPasswd is the account the dev database sidecar runs as: the operator's
// Pods run as UID 65532, and initdb refuses a user the system does not know.
const devPasswd = "ptah:x:65532:65532:ptah dev database:/nonexistent:/usr/sbin/nologin"

// DevDatabase returns the dev database sidecar's image: the PostgreSQL image
// base (as Postgres returned it) with an account for UID 65532, running as
// it. The operator's Pods give it its command (devdb.Script), so it needs
// sh, and initdb, postgres, pg_isready and sleep on PATH; it also holds the
// template cluster the script makes (PTAH_DEV_TEMPLATE), so each start
// copies it instead of running initdb.
func (b *Builder) DevDatabase(ctx context.Context, base string) (Provenance, error) {
	const template = "/var/lib/ptah-dev-template"
	dockerfile := fmt.Sprintf("FROM %s\n"+
		"RUN echo '%s' >> /etc/passwd && echo 'ptah:x:65532:' >> /etc/group && mkdir -p %s && chown 65532:65532 %s\n"+
		"USER 65532:65532\nENV PTAH_DEV_TEMPLATE=%s/data\n"+
		"RUN echo %s | base64 -d | sh -s template\n"+
		"ENTRYPOINT []\nCMD []\n",
		base, devPasswd, template, template, template, base64.StdEncoding.EncodeToString([]byte(devdb.Script)))
	ref := fmt.Sprintf("ptah-lab/dev-database:15-%s", mustKey(b.D.ImageID(ctx, base), dockerfile, recipe))
	if b.D.ImageID(ctx, ref) != "" {
		return Provenance{"dev-database", ref, "cached"}, nil
	}
	done := b.R.Step("dev-database: build " + ref + " from " + base)
	if err := b.D.Build(ctx, ref, dockerfile); err != nil {
		return Provenance{}, err
	}
	done("built")
	return Provenance{"dev-database", ref, "built"}, nil
}
