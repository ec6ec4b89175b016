package runner

import (
	"context"
	"fmt"
	"net"
	"os"
	"time"

	authorizationv1 "k8s.io/api/authorization/v1"
	"k8s.io/apimachinery/pkg/api/meta"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/client-go/rest"
	"sigs.k8s.io/controller-runtime/pkg/client"

	v1alpha1 "ptah.run/operator/operator/api/v1alpha1"
)

// waitForCredential polls until the projected token is there and the API
// server says it may create PtahResultRecords in namespace, and returns a
// client that authenticates with it. The manager issues the credential
// separately from the Job, so the Pod may start first.
func waitForCredential(ctx context.Context, cfg Config, env map[string]string, namespace string) (client.Client, error) {
	host, port := env["KUBERNETES_SERVICE_HOST"], env["KUBERNETES_SERVICE_PORT"]
	if host == "" || port == "" {
		return nil, fmt.Errorf("%s: KUBERNETES_SERVICE_HOST and KUBERNETES_SERVICE_PORT are not set; the runner must run in a Pod", ErrCredential)
	}
	rc := &rest.Config{
		Host:            "https://" + net.JoinHostPort(host, port),
		BearerTokenFile: cfg.TokenPath,
		TLSClientConfig: rest.TLSClientConfig{CAFile: cfg.CAPath},
		Timeout:         15 * time.Second,
		UserAgent:       "ptah-runner/" + ProtocolVersion,
	}
	ctx, cancel := context.WithTimeout(ctx, cfg.CredentialTimeout)
	defer cancel()
	var last error
	for delay := 250 * time.Millisecond; ; delay = min(2*delay, 2*time.Second) {
		c, err := tryCredential(ctx, rc, cfg, namespace)
		if err == nil {
			return c, nil
		}
		last = err
		select {
		case <-ctx.Done():
			return nil, fmt.Errorf("%s: no usable result credential after %s: %v; check that the manager issued the operation's ServiceAccount, Role and RoleBinding", ErrCredential, cfg.CredentialTimeout, last)
		case <-time.After(delay):
		}
	}
}

func tryCredential(ctx context.Context, rc *rest.Config, cfg Config, namespace string) (client.Client, error) {
	for _, f := range []string{cfg.TokenPath, cfg.CAPath} {
		if st, err := os.Stat(f); err != nil || st.Size() == 0 {
			return nil, fmt.Errorf("%s is not there yet", f)
		}
	}
	c, err := client.New(rc, client.Options{Scheme: scheme, Mapper: mapper})
	if err != nil {
		return nil, fmt.Errorf("client for %s: %w", rc.Host, err)
	}
	review := &authorizationv1.SelfSubjectAccessReview{Spec: authorizationv1.SelfSubjectAccessReviewSpec{
		ResourceAttributes: &authorizationv1.ResourceAttributes{
			Namespace: namespace, Verb: "create",
			Group: v1alpha1.GroupVersion.Group, Resource: "ptahresultrecords",
		},
	}}
	if err := c.Create(ctx, review); err != nil {
		return nil, fmt.Errorf("SelfSubjectAccessReview: %w", err)
	}
	if !review.Status.Allowed {
		return nil, fmt.Errorf("the token may not create ptahresultrecords in %s yet (%s)", namespace, review.Status.Reason)
	}
	return c, nil
}

// scheme and mapper know the two kinds the runner writes, so the client
// needs no discovery (which the credential may not be allowed to read).
var scheme, mapper = func() (*runtime.Scheme, meta.RESTMapper) {
	s := runtime.NewScheme()
	if err := authorizationv1.AddToScheme(s); err != nil {
		panic(err)
	}
	if err := v1alpha1.AddToScheme(s); err != nil {
		panic(err)
	}
	m := meta.NewDefaultRESTMapper(nil)
	m.Add(authorizationv1.SchemeGroupVersion.WithKind("SelfSubjectAccessReview"), meta.RESTScopeRoot)
	m.Add(v1alpha1.GroupVersion.WithKind("PtahResultRecord"), meta.RESTScopeNamespace)
	return s, m
}()
