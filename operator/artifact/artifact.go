// Package artifact keeps ptah's schema and migration files as OCI artifacts:
// it pushes, pulls, resolves and inspects them with oras-go and checks them
// against a verification policy. Credentials come from the environment and
// are sent only to the registry they name; no error repeats them.
package artifact

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"net"
	"os"
	"strings"

	ocispec "github.com/opencontainers/image-spec/specs-go/v1"
	"oras.land/oras-go/v2"
	"oras.land/oras-go/v2/content"
	"oras.land/oras-go/v2/errdef"
	"oras.land/oras-go/v2/registry"
	"oras.land/oras-go/v2/registry/remote"
	"oras.land/oras-go/v2/registry/remote/auth"
	"oras.land/oras-go/v2/registry/remote/errcode"
	"oras.land/oras-go/v2/registry/remote/retry"

	"ptah.run/operator/operator/report"
)

// Artifact and layer media types. A schema artifact's layers are SQL DDL
// files applied in order; a migrations artifact's layers are the files of a
// migrations directory, checksum file included.
const (
	SchemaArtifactType      = "application/vnd.ptah.schema.v1"
	SchemaLayerMediaType    = "application/vnd.ptah.schema.sql.v1"
	MigrationsArtifactType  = "application/vnd.ptah.migrations.v1"
	MigrationLayerMediaType = "application/vnd.ptah.migrations.file.v1"
)

// createdEpoch is stamped as the manifest's creation time so that the same
// files always give the same digest.
const createdEpoch = "1970-01-01T00:00:00Z"

// Environment variables holding registry credentials.
const (
	EnvRegistry = "PTAH_OCI_REGISTRY"
	EnvUsername = "PTAH_OCI_USERNAME"
	EnvPassword = "PTAH_OCI_PASSWORD"
)

// Credentials are sent only to Registry (host[:port]); an empty Registry
// means any registry the command is pointed at.
type Credentials struct {
	Registry, Username, Password string
}

// CredentialsFromEnv reads the PTAH_OCI_* variables.
func CredentialsFromEnv() Credentials {
	return Credentials{Registry: os.Getenv(EnvRegistry), Username: os.Getenv(EnvUsername), Password: os.Getenv(EnvPassword)}
}

// Client talks to registries.
type Client struct {
	Credentials Credentials
	// PlainHTTP speaks HTTP instead of HTTPS, for a lab registry.
	PlainHTTP bool
}

// File is one layer: its file name (the title annotation) and content.
type File struct {
	Name string `json:"name"`
	Data []byte `json:"-"`
}

// ParseRef reads "oci://HOST/REPO:TAG", "oci://HOST/REPO@sha256:..." or the
// same without the scheme.
func ParseRef(s string) (registry.Reference, error) {
	r, err := registry.ParseReference(strings.TrimPrefix(s, "oci://"))
	if err != nil {
		return r, report.Errorf(report.Usage, "%q is not an OCI reference; expected oci://HOST/REPOSITORY:TAG or oci://HOST/REPOSITORY@sha256:DIGEST", s)
	}
	if r.Reference == "" {
		return r, report.Errorf(report.Usage, "%q names no tag or digest", s)
	}
	return r, nil
}

// Pinned is ociRef addressed by digest alone, oci://HOST/REPO@DIGEST: a tag
// or digest it named is dropped, so what is pulled is what was resolved.
func Pinned(ociRef, digest string) string {
	ref := ociRef
	if i := strings.Index(ref, "@"); i >= 0 {
		ref = ref[:i]
	}
	if slash := strings.LastIndex(ref, "/"); slash >= 0 {
		if colon := strings.LastIndex(ref[slash:], ":"); colon >= 0 {
			ref = ref[:slash+colon]
		}
	}
	return ref + "@" + digest
}

func (c *Client) repository(ref registry.Reference) (*remote.Repository, error) {
	repo, err := remote.NewRepository(ref.Registry + "/" + ref.Repository)
	if err != nil {
		return nil, report.Errorf(report.Usage, "repository %s/%s: %v", ref.Registry, ref.Repository, err)
	}
	repo.PlainHTTP = c.PlainHTTP
	cred := auth.EmptyCredential
	if c.Credentials.Username != "" && (c.Credentials.Registry == "" || c.Credentials.Registry == ref.Registry) {
		cred = auth.Credential{Username: c.Credentials.Username, Password: c.Credentials.Password}
	}
	repo.Client = &auth.Client{
		Client:     retry.DefaultClient,
		Cache:      auth.NewCache(),
		Credential: auth.StaticCredential(ref.Registry, cred),
	}
	return repo, nil
}

// Pushed describes a pushed artifact.
type Pushed struct {
	// Reference is the digest-pinned reference, oci://HOST/REPO@sha256:...
	Reference    string `json:"reference"`
	Tag          string `json:"tag,omitempty"`
	Digest       string `json:"digest"`
	MediaType    string `json:"mediaType"`
	ArtifactType string `json:"artifactType"`
	Size         int64  `json:"size"`
	Files        []File `json:"files"`
}

// Push packs files as one artifact of artifactType with one layer each, in
// order, and tags it with ref's tag.
func (c *Client) Push(ctx context.Context, refString, artifactType, layerType string, files []File, annotations map[string]string) (*Pushed, error) {
	ref, err := ParseRef(refString)
	if err != nil {
		return nil, err
	}
	if err := ref.ValidateReferenceAsTag(); err != nil {
		return nil, report.Errorf(report.Usage, "push needs a tag, not a digest: %s", refString)
	}
	repo, err := c.repository(ref)
	if err != nil {
		return nil, err
	}
	var layers []ocispec.Descriptor
	var size int64
	for _, f := range files {
		d := content.NewDescriptorFromBytes(layerType, f.Data)
		d.Annotations = map[string]string{ocispec.AnnotationTitle: f.Name}
		if err := pushIfMissing(ctx, repo, d, f.Data); err != nil {
			return nil, c.registryError(ref, "push "+f.Name, err)
		}
		layers = append(layers, d)
		size += d.Size
	}
	manifestAnnotations := map[string]string{ocispec.AnnotationCreated: createdEpoch}
	for k, v := range annotations {
		manifestAnnotations[k] = v
	}
	desc, err := oras.PackManifest(ctx, repo, oras.PackManifestVersion1_1, artifactType, oras.PackManifestOptions{
		Layers:              layers,
		ManifestAnnotations: manifestAnnotations,
	})
	if err != nil {
		return nil, c.registryError(ref, "push the manifest", err)
	}
	if err := repo.Tag(ctx, desc, ref.Reference); err != nil {
		return nil, c.registryError(ref, "tag "+ref.Reference, err)
	}
	pinned := ref
	pinned.Reference = desc.Digest.String()
	return &Pushed{Reference: "oci://" + pinned.String(), Tag: ref.Reference, Digest: desc.Digest.String(), MediaType: desc.MediaType,
		ArtifactType: artifactType, Size: desc.Size + ocispec.DescriptorEmptyJSON.Size + size, Files: files}, nil
}

func pushIfMissing(ctx context.Context, repo *remote.Repository, d ocispec.Descriptor, data []byte) error {
	exists, err := repo.Exists(ctx, d)
	if err != nil || exists {
		return err
	}
	err = repo.Push(ctx, d, bytes.NewReader(data))
	if errors.Is(err, errdef.ErrAlreadyExists) {
		return nil
	}
	return err
}

// Resolved is a reference pinned to a digest, with what it points at.
type Resolved struct {
	Reference    string `json:"reference"`
	Digest       string `json:"digest"`
	MediaType    string `json:"mediaType"`
	ArtifactType string `json:"artifactType"`
	// Size is the manifest's size plus that of its config and layers.
	Size int64 `json:"size"`
}

// Layer is one layer of an inspected artifact.
type Layer struct {
	Title     string `json:"title"`
	MediaType string `json:"mediaType"`
	Digest    string `json:"digest"`
	Size      int64  `json:"size"`
}

// Inspection is everything the manifest says.
type Inspection struct {
	Resolved
	Registry    string            `json:"registry"`
	Repository  string            `json:"repository"`
	Annotations map[string]string `json:"annotations"`
	Layers      []Layer           `json:"layers"`
	manifest    ocispec.Manifest
	repo        *remote.Repository
	ref         registry.Reference
}

// Inspect resolves ref and reads its manifest.
func (c *Client) Inspect(ctx context.Context, refString string) (*Inspection, error) {
	ref, err := ParseRef(refString)
	if err != nil {
		return nil, err
	}
	repo, err := c.repository(ref)
	if err != nil {
		return nil, err
	}
	desc, raw, err := oras.FetchBytes(ctx, repo, ref.Reference, oras.DefaultFetchBytesOptions)
	if err != nil {
		return nil, c.registryError(ref, "resolve "+ref.Reference, err)
	}
	var m ocispec.Manifest
	if err := json.Unmarshal(raw, &m); err != nil || desc.MediaType != ocispec.MediaTypeImageManifest {
		return nil, report.Errorf(report.ArtifactType, "%s is a %s, not an OCI image manifest", refString, desc.MediaType)
	}
	if _, err := ref.Digest(); err == nil && desc.Digest.String() != ref.Reference {
		return nil, report.Errorf(report.Internal, "registry %s answered %s for %s", ref.Registry, desc.Digest, ref.Reference)
	}
	pinned := ref
	pinned.Reference = desc.Digest.String()
	ins := &Inspection{
		Resolved: Resolved{Reference: "oci://" + pinned.String(), Digest: desc.Digest.String(), MediaType: desc.MediaType,
			ArtifactType: artifactTypeOf(m), Size: desc.Size + m.Config.Size},
		Registry: ref.Registry, Repository: ref.Repository, Annotations: m.Annotations,
		Layers: []Layer{}, manifest: m, repo: repo, ref: ref,
	}
	if ins.Annotations == nil {
		ins.Annotations = map[string]string{}
	}
	for _, l := range m.Layers {
		ins.Size += l.Size
		ins.Layers = append(ins.Layers, Layer{Title: l.Annotations[ocispec.AnnotationTitle], MediaType: l.MediaType, Digest: l.Digest.String(), Size: l.Size})
	}
	return ins, nil
}

func artifactTypeOf(m ocispec.Manifest) string {
	if m.ArtifactType != "" {
		return m.ArtifactType
	}
	return m.Config.MediaType
}

// Pulled is a fetched artifact.
type Pulled struct {
	Resolved
	Files []File `json:"files"`
}

// Pull fetches the layers of ref, which must be of artifactType, checking
// each against its digest.
func (c *Client) Pull(ctx context.Context, refString, artifactType string) (*Pulled, error) {
	ins, err := c.Inspect(ctx, refString)
	if err != nil {
		return nil, err
	}
	if ins.ArtifactType != artifactType {
		return nil, report.Errorf(report.ArtifactType, "%s is of artifact type %q, not %q", ins.Reference, ins.ArtifactType, artifactType)
	}
	p := &Pulled{Resolved: ins.Resolved}
	for _, l := range ins.manifest.Layers {
		data, err := content.FetchAll(ctx, ins.repo, l)
		if err != nil {
			return nil, c.registryError(ins.ref, "fetch layer "+l.Digest.String(), err)
		}
		p.Files = append(p.Files, File{Name: l.Annotations[ocispec.AnnotationTitle], Data: data})
	}
	return p, nil
}

// registryError codes a registry failure. oras's messages hold the request
// URL but never the credentials; the code is what a caller acts on.
func (c *Client) registryError(ref registry.Reference, doing string, err error) error {
	var resp *errcode.ErrorResponse
	var netErr *net.OpError
	switch {
	case errors.As(err, &resp) && (resp.StatusCode == 401 || resp.StatusCode == 403), errors.Is(err, auth.ErrBasicCredentialNotFound):
		status := "no credentials for this registry"
		if resp != nil {
			status = fmt.Sprintf("HTTP %d", resp.StatusCode)
		}
		hint := "set " + EnvUsername + " and " + EnvPassword
		if c.Credentials.Username != "" && c.Credentials.Registry != "" && c.Credentials.Registry != ref.Registry {
			hint = fmt.Sprintf("the credentials are for %s (%s), not %s", c.Credentials.Registry, EnvRegistry, ref.Registry)
		} else if c.Credentials.Username != "" {
			hint = "check " + EnvUsername + " and " + EnvPassword
		}
		return report.Errorf(report.Auth, "%s on %s/%s: the registry refused access (%s); %s", doing, ref.Registry, ref.Repository, status, hint)
	case errors.As(err, &resp) && resp.StatusCode == 404, errors.Is(err, errdef.ErrNotFound):
		return report.Errorf(report.NotFound, "%s on %s/%s: not found", doing, ref.Registry, ref.Repository)
	case errors.As(err, &netErr):
		return report.Errorf(report.Connection, "%s: cannot reach registry %s: %v", doing, ref.Registry, netErr.Err)
	case errors.As(err, &resp):
		return report.Errorf(report.Internal, "%s on %s/%s: registry answered HTTP %d", doing, ref.Registry, ref.Repository, resp.StatusCode)
	default:
		return report.Errorf(report.Connection, "%s on %s/%s: %v", doing, ref.Registry, ref.Repository, err)
	}
}
