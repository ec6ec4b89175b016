package images

import (
	"context"
	"os"
	"testing"
	"time"

	"ptah.run/operator/demo/lab/internal/docker"
	"ptah.run/operator/demo/lab/internal/run"
)

func TestTryServices(t *testing.T) {
	if os.Getenv("TRY") == "" {
		t.Skip()
	}
	r := &run.Runner{Log: os.Stdout}
	home, _ := os.UserHomeDir()
	b := &Builder{R: r, D: docker.Docker{R: r}, Cache: home + "/.cache/ptah/lab", RepoRoot: "/work/main", KubernetesVersion: "v1.37.2", KindVersion: "v0.33.0", PullTimeout: 20 * time.Second}
	p, err := b.Postgres(context.Background())
	t.Log(p, err)
	if os.Getenv("TRY") == "2" {
		p, err = b.Registry(context.Background())
		t.Log(p, err)
	}
}
