package artifact

import (
	"context"
	"errors"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"ptah.run/operator/internal/testenv"
	"ptah.run/operator/operator/report"
)

func client(r *testenv.Registry) *Client {
	return &Client{PlainHTTP: true, Credentials: Credentials{Registry: r.Host, Username: r.Username, Password: r.Password}}
}

func wantCode(t *testing.T, err error, code report.Code, secret string) *report.Error {
	t.Helper()
	var e *report.Error
	if !errors.As(err, &e) || e.Code != code {
		t.Fatalf("want error code %s, got %v", code, err)
	}
	if secret != "" && strings.Contains(e.Message, secret) {
		t.Fatalf("error repeats the password: %s", e.Message)
	}
	return e
}

var schemaFiles = []File{
	{Name: "01_customers.sql", Data: []byte("CREATE TABLE customers (id bigserial PRIMARY KEY);\n")},
	{Name: "02_orders.sql", Data: []byte("CREATE TABLE orders (id bigserial PRIMARY KEY, customer_id bigint REFERENCES customers(id));\n")},
}

func TestArtifacts(t *testing.T) {
	r := testenv.StartRegistry(t)
	ctx := context.Background()
	c := client(r)
	ref := "oci://" + r.Host + "/schemas/shop:v1"

	pushed, err := c.Push(ctx, ref, SchemaArtifactType, SchemaLayerMediaType, schemaFiles, map[string]string{"org.opencontainers.image.source": "https://example.com/shop"})
	if err != nil {
		t.Fatalf("push: %v", err)
	}
	if !strings.HasPrefix(pushed.Digest, "sha256:") || pushed.Reference != "oci://"+r.Host+"/schemas/shop@"+pushed.Digest {
		t.Fatalf("pushed: %+v", pushed)
	}

	t.Run("the same files push to the same digest", func(t *testing.T) {
		again, err := c.Push(ctx, "oci://"+r.Host+"/schemas/shop:v1-again", SchemaArtifactType, SchemaLayerMediaType, schemaFiles, map[string]string{"org.opencontainers.image.source": "https://example.com/shop"})
		if err != nil || again.Digest != pushed.Digest {
			t.Fatalf("second push: %+v %v (first %s)", again, err, pushed.Digest)
		}
	})

	t.Run("resolve a tag to the pushed digest", func(t *testing.T) {
		ins, err := c.Inspect(ctx, ref)
		if err != nil {
			t.Fatal(err)
		}
		if ins.Digest != pushed.Digest || ins.ArtifactType != SchemaArtifactType || ins.Reference != pushed.Reference || ins.Size != pushed.Size {
			t.Fatalf("resolved %+v, pushed %+v", ins.Resolved, pushed)
		}
		if len(ins.Layers) != 2 || ins.Layers[0].Title != "01_customers.sql" || ins.Annotations["org.opencontainers.image.source"] != "https://example.com/shop" {
			t.Fatalf("inspection: %+v", ins)
		}
	})

	t.Run("pull by digest returns the files", func(t *testing.T) {
		p, err := c.Pull(ctx, pushed.Reference, SchemaArtifactType)
		if err != nil {
			t.Fatal(err)
		}
		if len(p.Files) != 2 || p.Files[1].Name != "02_orders.sql" || string(p.Files[1].Data) != string(schemaFiles[1].Data) {
			t.Fatalf("pulled %+v", p.Files)
		}
		_, err = c.Pull(ctx, pushed.Reference, MigrationsArtifactType)
		wantCode(t, err, report.ArtifactType, "")
	})

	t.Run("a wrong password is refused and not repeated", func(t *testing.T) {
		bad := client(r)
		bad.Credentials.Password = "wrong-" + r.Password
		_, err := bad.Inspect(ctx, ref)
		wantCode(t, err, report.Auth, bad.Credentials.Password)
		_, err = bad.Push(ctx, ref, SchemaArtifactType, SchemaLayerMediaType, schemaFiles, nil)
		wantCode(t, err, report.Auth, bad.Credentials.Password)
	})

	t.Run("credentials are not sent to another registry", func(t *testing.T) {
		other := client(r)
		other.Credentials.Registry = "registry.example.com"
		_, err := other.Inspect(ctx, ref)
		if e := wantCode(t, err, report.Auth, r.Password); !strings.Contains(e.Message, "registry.example.com") {
			t.Fatalf("message does not say whose credentials these are: %s", e.Message)
		}
	})

	t.Run("a digest that does not exist", func(t *testing.T) {
		missing := "oci://" + r.Host + "/schemas/shop@sha256:" + strings.Repeat("0", 64)
		_, err := c.Inspect(ctx, missing)
		wantCode(t, err, report.NotFound, "")
		_, err = c.Inspect(ctx, "oci://"+r.Host+"/schemas/shop:nope")
		wantCode(t, err, report.NotFound, "")
	})

	t.Run("verify refuses each policy rule", func(t *testing.T) {
		ins, err := c.Inspect(ctx, pushed.Reference)
		if err != nil {
			t.Fatal(err)
		}
		pass := Policy{
			AllowedArtifactTypes:      []string{SchemaArtifactType},
			AllowedRepositoryPrefixes: []string{r.Host + "/schemas/"},
			MaxSizeBytes:              ins.Size,
			RequiredAnnotations:       map[string]string{"org.opencontainers.image.source": "https://example.com/shop", "org.opencontainers.image.created": ""},
		}
		if f := pass.Verify(ins); len(f) != 0 {
			t.Fatalf("a conforming artifact was refused: %+v", f)
		}
		cases := map[string]func(p *Policy){
			"allowedArtifactTypes":      func(p *Policy) { p.AllowedArtifactTypes = []string{MigrationsArtifactType} },
			"allowedRepositoryPrefixes": func(p *Policy) { p.AllowedRepositoryPrefixes = []string{r.Host + "/trusted/"} },
			"maxSizeBytes":              func(p *Policy) { p.MaxSizeBytes = ins.Size - 1 },
			"requiredAnnotations":       func(p *Policy) { p.RequiredAnnotations["org.opencontainers.image.revision"] = "" },
		}
		for rule, breakIt := range cases {
			p := pass
			p.RequiredAnnotations = map[string]string{"org.opencontainers.image.source": "https://example.com/shop"}
			breakIt(&p)
			f := p.Verify(ins)
			if len(f) != 1 || f[0].Rule != rule {
				t.Errorf("%s: findings %+v", rule, f)
			}
		}
		p := pass
		p.RequiredAnnotations = map[string]string{"org.opencontainers.image.source": "https://example.com/other"}
		if f := p.Verify(ins); len(f) != 1 || !strings.Contains(f[0].Message, "example.com/other") {
			t.Errorf("annotation value: findings %+v", f)
		}
	})
}

func TestReadPolicyRefusesUnknownKeys(t *testing.T) {
	path := filepath.Join(t.TempDir(), "policy.yaml")
	os.WriteFile(path, []byte("allowedArtifactType: [x]\n"), 0o600)
	_, err := ReadPolicy(path)
	wantCode(t, err, report.Parse, "")
	os.WriteFile(path, []byte("allowedArtifactTypes: [x]\nmaxSizeBytes: 10\n"), 0o600)
	p, err := ReadPolicy(path)
	if err != nil || p.MaxSizeBytes != 10 || p.AllowedArtifactTypes[0] != "x" {
		t.Fatalf("%+v %v", p, err)
	}
}
