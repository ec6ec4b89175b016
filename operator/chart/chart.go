// Package chart holds the operator's Helm chart, ptah-operator, the one way
// the operator is installed (the lab installs it as a release), and renders
// it for tests and tools. Its CRDs, RBAC rules and admission policies are
// copies make generate writes from operator/config, never edited by hand.
package chart

import (
	"bytes"
	"embed"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"sort"
	"strings"

	helmchart "helm.sh/helm/v3/pkg/chart"
	"helm.sh/helm/v3/pkg/chart/loader"
	"helm.sh/helm/v3/pkg/chartutil"
	"helm.sh/helm/v3/pkg/engine"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	utilyaml "k8s.io/apimachinery/pkg/util/yaml"
)

// Dir is the chart's directory under operator/chart.
const Dir = "ptah-operator"

//go:embed all:ptah-operator
var files embed.FS

// Load reads the chart as Helm does from its directory.
func Load() (*helmchart.Chart, error) {
	var bf []*loader.BufferedFile
	err := fs.WalkDir(files, Dir, func(path string, d fs.DirEntry, err error) error {
		if err != nil || d.IsDir() {
			return err
		}
		b, err := files.ReadFile(path)
		if err != nil {
			return err
		}
		bf = append(bf, &loader.BufferedFile{Name: strings.TrimPrefix(path, Dir+"/"), Data: b})
		return nil
	})
	if err != nil {
		return nil, fmt.Errorf("read the embedded chart: %w", err)
	}
	c, err := loader.LoadFiles(bf)
	if err != nil {
		return nil, fmt.Errorf("load chart %s: %w", Dir, err)
	}
	return c, nil
}

// Render renders the chart as `helm template RELEASE --namespace NAMESPACE`
// would with values over its defaults, and decodes every object, in file
// order then document order.
func Render(release, namespace string, values map[string]any) ([]*unstructured.Unstructured, error) {
	return RenderOn("v1.37.2", nil, release, namespace, values)
}

// RenderOn is Render as `helm install --dry-run` against a cluster of
// Kubernetes version kube ("v1.35.0") would, the cluster's discovery
// listing apiVersions ("group/version/Kind" and "group/version") besides
// the versions Helm knows; nil, as `helm template --kube-version kube`.
func RenderOn(kube string, apiVersions []string, release, namespace string, values map[string]any) ([]*unstructured.Unstructured, error) {
	c, err := Load()
	if err != nil {
		return nil, err
	}
	vals, err := chartutil.CoalesceValues(c, values)
	if err != nil {
		return nil, err
	}
	kv, err := chartutil.ParseKubeVersion(kube)
	if err != nil {
		return nil, err
	}
	caps := chartutil.DefaultCapabilities.Copy()
	caps.KubeVersion = *kv
	caps.APIVersions = append(caps.APIVersions, apiVersions...)
	rv, err := chartutil.ToRenderValues(c, vals, chartutil.ReleaseOptions{Name: release, Namespace: namespace, IsInstall: true, Revision: 1}, caps)
	if err != nil {
		return nil, err
	}
	out, err := engine.Render(c, rv)
	if err != nil {
		return nil, fmt.Errorf("render chart %s: %w", Dir, err)
	}
	names := make([]string, 0, len(out))
	for name := range out {
		if strings.HasSuffix(name, ".yaml") {
			names = append(names, name)
		}
	}
	sort.Strings(names)
	var objs []*unstructured.Unstructured
	for _, name := range names {
		dec := utilyaml.NewYAMLOrJSONDecoder(bytes.NewReader([]byte(out[name])), 4096)
		for {
			u := &unstructured.Unstructured{}
			err := dec.Decode(&u.Object)
			if errors.Is(err, io.EOF) {
				break
			}
			if err != nil {
				return nil, fmt.Errorf("decode %s: %w", name, err)
			}
			if len(u.Object) == 0 {
				continue
			}
			objs = append(objs, u)
		}
	}
	return objs, nil
}
