package main

import (
	"path/filepath"
	"testing"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"ptah.run/operator/internal/testenv"
	v1alpha1 "ptah.run/operator/operator/api/v1alpha1"
)

// cluster starts a real API server serving the named CRD files of
// operator/config/crd/bases (all of them when none is named), and returns it
// with an admin client and a must that fails the test on an error.
func cluster(t *testing.T, crds ...string) (*testenv.APIServer, client.Client, func(error)) {
	t.Helper()
	dir := filepath.Join("..", "..", "operator", "config", "crd", "bases")
	paths := []string{dir}
	if len(crds) > 0 {
		paths = nil
		for _, f := range crds {
			paths = append(paths, filepath.Join(dir, f))
		}
	}
	api := testenv.StartAPIServer(t, testenv.WithCRDs(paths...))
	scheme := runtime.NewScheme()
	_ = v1alpha1.AddToScheme(scheme)
	_ = corev1.AddToScheme(scheme)
	c, err := client.New(api.Config, client.Options{Scheme: scheme})
	if err != nil {
		t.Fatal(err)
	}
	must := func(err error) {
		t.Helper()
		if err != nil {
			t.Fatal(err)
		}
	}
	return api, c, must
}
