package lab

import (
	"context"
	"fmt"
	"strings"

	"helm.sh/helm/v3/pkg/action"
	"helm.sh/helm/v3/pkg/release"
	"helm.sh/helm/v3/pkg/storage/driver"
	"k8s.io/cli-runtime/pkg/genericclioptions"

	"ptah.run/operator/operator/chart"
)

// ReleaseName is the Helm release the lab installs the operator as; the
// chart names the manager's Deployment after it (ReleaseName-manager).
const ReleaseName = "ptah"

// installRelease installs (or upgrades) the operator's chart as the lab
// runs it: the locally built images, the lab's registry over plain HTTP, and
// the manager image's digest on its Pod template, so a rebuilt image (same
// tag) rolls the manager. It returns the release's Deployment name.
func (l *Lab) installRelease(ctx context.Context, values map[string]any) (string, error) {
	c, err := chart.Load()
	if err != nil {
		return "", err
	}
	kubeconfig, namespace := l.kubeconfig(), OperatorNamespace
	flags := &genericclioptions.ConfigFlags{KubeConfig: &kubeconfig, Namespace: &namespace}
	cfg := new(action.Configuration)
	if err := cfg.Init(flags, namespace, "secret", func(string, ...any) {}); err != nil {
		return "", fmt.Errorf("helm: reach the lab's cluster: %w", err)
	}
	var rel *release.Release
	if _, err := action.NewHistory(cfg).Run(ReleaseName); err == driver.ErrReleaseNotFound {
		in := action.NewInstall(cfg)
		in.ReleaseName, in.Namespace, in.CreateNamespace = ReleaseName, namespace, true
		rel, err = in.RunWithContext(ctx, c, values)
		if err != nil {
			return "", fmt.Errorf("helm install %s: %w", ReleaseName, err)
		}
	} else if err != nil {
		return "", fmt.Errorf("helm history %s: %w", ReleaseName, err)
	} else {
		up := action.NewUpgrade(cfg)
		up.Namespace = namespace
		rel, err = up.RunWithContext(ctx, ReleaseName, c, values)
		if err != nil {
			return "", fmt.Errorf("helm upgrade %s: %w", ReleaseName, err)
		}
	}
	return releaseDeployment(rel.Manifest)
}

// releaseDeployment is the name of the one Deployment a release's manifest holds.
func releaseDeployment(manifest string) (string, error) {
	for _, doc := range strings.Split(manifest, "\n---") {
		if !strings.Contains(doc, "\nkind: Deployment\n") {
			continue
		}
		_, rest, ok := strings.Cut(doc, "\nmetadata:\n  name: ")
		if ok {
			name, _, _ := strings.Cut(rest, "\n")
			return strings.TrimSpace(name), nil
		}
	}
	return "", fmt.Errorf("the release %s installs no Deployment", ReleaseName)
}
