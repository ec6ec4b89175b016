package testenv

import (
	"context"
	"net/http/httptest"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/distribution/distribution/v3/configuration"
	"github.com/distribution/distribution/v3/registry/handlers"
	"github.com/sirupsen/logrus"
	"golang.org/x/crypto/bcrypt"

	_ "github.com/distribution/distribution/v3/registry/auth/htpasswd"
	_ "github.com/distribution/distribution/v3/registry/storage/driver/inmemory"
)

// Registry is a CNCF distribution registry on a loopback port, speaking plain
// HTTP and asking for basic-auth credentials from an htpasswd file.
type Registry struct {
	// Host is host:port, the form an OCI reference starts with.
	Host     string
	Username string
	Password string
	Started  time.Duration
}

// StartRegistry serves an in-memory registry until t ends.
func StartRegistry(t testing.TB) *Registry {
	t.Helper()
	start := time.Now()
	r := &Registry{Username: "ptah-test", Password: randomHex(12)}
	hash, err := bcrypt.GenerateFromPassword([]byte(r.Password), bcrypt.MinCost)
	if err != nil {
		t.Fatalf("testenv: %v", err)
	}
	htpasswd := filepath.Join(t.TempDir(), "htpasswd")
	if err := os.WriteFile(htpasswd, []byte(r.Username+":"+string(hash)+"\n"), 0o600); err != nil {
		t.Fatalf("testenv: %v", err)
	}
	cfg := &configuration.Configuration{
		Storage: configuration.Storage{
			"inmemory":    configuration.Parameters{},
			"maintenance": configuration.Parameters{"uploadpurging": map[any]any{"enabled": false}},
		},
		Auth: configuration.Auth{"htpasswd": configuration.Parameters{"realm": "ptah-test", "path": htpasswd}},
	}
	cfg.HTTP.Secret = randomHex(16)
	logrus.SetLevel(logrus.ErrorLevel) // the registry logs every request at info
	ctx, cancel := context.WithCancel(context.Background())
	app := handlers.NewApp(ctx, cfg)
	srv := httptest.NewServer(app)
	t.Cleanup(func() {
		srv.Close()
		_ = app.Shutdown()
		cancel()
	})
	r.Host = strings.TrimPrefix(srv.URL, "http://")
	r.Started = time.Since(start)
	t.Logf("testenv: registry on %s up in %s", r.Host, r.Started.Round(time.Millisecond))
	return r
}
