package lab

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"strings"

	"ptah.run/operator/demo/lab/internal/docker"
)

// Down removes exactly what Up recorded creating (cluster, containers with
// their volumes, the kind network when Up created it), checks each is gone,
// and says what remains. Built images stay unless removeImages.
func (l *Lab) Down(ctx context.Context, removeImages bool) error {
	made := loadCreated(l.createdFile())
	env, _ := l.environment()
	if len(made.items) == 0 && env == nil {
		l.r.Printf("down: no lab recorded in %s; nothing to remove", l.Dir)
		return nil
	}
	p := l.provider()
	for _, name := range made.names("cluster") {
		done := l.r.Step("down: delete kind cluster " + name)
		if err := p.Delete(name, l.kubeconfig()); err != nil {
			return fmt.Errorf("down: delete cluster %s: %w", name, err)
		}
		done("deleted")
	}
	if names := made.names("container"); len(names) > 0 {
		done := l.r.Step("down: remove containers " + strings.Join(names, " "))
		for _, n := range names {
			if l.d.Inspect(ctx, n).Exists {
				if err := l.d.Remove(ctx, n); err != nil {
					return err
				}
			}
		}
		done("removed with their volumes")
	}
	for _, n := range made.names("network") {
		if !l.d.NetworkExists(ctx, n) {
			continue
		}
		if users, _ := l.d.NetworkContainers(ctx, n); len(users) > 0 {
			l.r.Printf("down: network %s kept: containers not the lab's still use it (%s)", n, strings.Join(users, " "))
			continue
		}
		if err := l.d.RemoveNetwork(ctx, n); err != nil {
			return err
		}
		l.r.Printf("down: network %s removed", n)
	}
	if err := l.verifyGone(ctx, made, env); err != nil {
		return err
	}
	// Every image under ptah-lab/ was built by the lab.
	out, _ := l.r.Output(ctx, "docker", "image", "ls", "--format", "{{.Repository}}:{{.Tag}}", "ptah-lab/*")
	images := strings.Fields(out)
	for _, f := range []string{l.environmentFile(), l.kubeconfig(), l.credentialsFile(), l.secretsFile(), l.createdFile(), l.provenanceFile(),
		filepath.Join(l.Dir, "postgres.env"), filepath.Join(l.Dir, "registry")} {
		os.RemoveAll(f)
	}
	if removeImages && len(images) > 0 {
		l.d.RemoveImages(ctx, images...)
		l.r.Printf("down: removed the built images %s", strings.Join(images, " "))
		images = nil
	}
	remains := []string{l.binDir() + " (kubectl, kind)", l.Cache + " (build cache)"}
	if len(images) > 0 {
		remains = append(remains, "built images "+strings.Join(images, " ")+" (lab down -images removes them)")
	}
	l.r.Printf("down: the lab is gone; what remains on purpose: %s", strings.Join(remains, "; "))
	return nil
}

// verifyGone checks nothing the lab made still exists.
func (l *Lab) verifyGone(ctx context.Context, made *created, env *environment) error {
	var left []string
	for _, name := range made.names("cluster") {
		if ok, err := l.clusterExists(name); err != nil || ok {
			left = append(left, "cluster "+name)
		}
	}
	for _, n := range made.names("container") {
		if l.d.Inspect(ctx, n).Exists {
			left = append(left, "container "+n)
		}
	}
	if env != nil {
		if names, err := l.d.ContainersWithLabel(ctx, docker.LabelRun, env.get("PTAH_LAB_RUN_ID")); err == nil {
			for _, n := range names {
				left = append(left, "container "+n)
			}
		}
	}
	if len(left) > 0 {
		return fmt.Errorf("down: still there after removal: %s: remove them with docker rm -f / kind delete cluster", strings.Join(left, ", "))
	}
	l.r.Printf("down: verified: no cluster or container of the lab remains")
	return nil
}
