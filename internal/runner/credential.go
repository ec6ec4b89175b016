package runner

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"os"
	"time"

	authorizationv1 "k8s.io/api/authorization/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/rest"

	v1alpha1 "ptah.run/operator/operator/api/v1alpha1"
)

// waitForCredential polls until the projected token is there and the API
// server says it may create PtahResultRecords in namespace, and returns a
// client that authenticates with it. The manager issues the credential
// separately from the Job, so the Pod may start first.
func waitForCredential(ctx context.Context, cfg Config, env map[string]string, namespace string) (*apiClient, error) {
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

func tryCredential(ctx context.Context, rc *rest.Config, cfg Config, namespace string) (*apiClient, error) {
	for _, f := range []string{cfg.TokenPath, cfg.CAPath} {
		if st, err := os.Stat(f); err != nil || st.Size() == 0 {
			return nil, fmt.Errorf("%s is not there yet", f)
		}
	}
	hc, err := rest.HTTPClientFor(rc)
	if err != nil {
		return nil, fmt.Errorf("client for %s: %w", rc.Host, err)
	}
	c := &apiClient{host: rc.Host, http: hc}
	review := &authorizationv1.SelfSubjectAccessReview{
		TypeMeta: metav1.TypeMeta{APIVersion: authorizationv1.SchemeGroupVersion.String(), Kind: "SelfSubjectAccessReview"},
		Spec: authorizationv1.SelfSubjectAccessReviewSpec{ResourceAttributes: &authorizationv1.ResourceAttributes{
			Namespace: namespace, Verb: "create",
			Group: v1alpha1.GroupVersion.Group, Resource: "ptahresultrecords",
		}},
	}
	if err := c.post(ctx, "/apis/authorization.k8s.io/v1/selfsubjectaccessreviews", review, review); err != nil {
		return nil, fmt.Errorf("SelfSubjectAccessReview: %w", err)
	}
	if !review.Status.Allowed {
		return nil, fmt.Errorf("the token may not create ptahresultrecords in %s yet (%s)", namespace, review.Status.Reason)
	}
	return c, nil
}

// apiClient speaks to the API server with the result credential. It only
// ever posts the two kinds the runner writes and gets an Apply's plan, so it
// needs no discovery (which the credential may not be allowed) and no
// client-go scheme.
type apiClient struct {
	host string
	http *http.Client
}

// createRecord creates rec in its namespace and fills it with the answer.
func (c *apiClient) createRecord(ctx context.Context, rec *v1alpha1.PtahResultRecord) error {
	rec.TypeMeta = metav1.TypeMeta{APIVersion: v1alpha1.GroupVersion.String(), Kind: "PtahResultRecord"}
	path := fmt.Sprintf("/apis/%s/%s/namespaces/%s/ptahresultrecords", v1alpha1.GroupVersion.Group, v1alpha1.GroupVersion.Version, rec.Namespace)
	return c.post(ctx, path, rec, rec)
}

// planDocument reads the PtahSchemaPlan an Apply names and rebuilds the
// plan document ptah applies, refusing one whose digest is not the claim's.
func (c *apiClient) planDocument(ctx context.Context, op *Operation) ([]byte, error) {
	if op.Plan == "" || op.PlanDigest == "" {
		return nil, fmt.Errorf("the apply operation names no PtahSchemaPlan and digest; the manager must set plan and planDigest")
	}
	var p v1alpha1.PtahSchemaPlan
	path := fmt.Sprintf("/apis/%s/%s/namespaces/%s/ptahschemaplans/%s", v1alpha1.GroupVersion.Group, v1alpha1.GroupVersion.Version, op.Namespace, op.Plan)
	if err := c.do(ctx, http.MethodGet, path, nil, &p); err != nil {
		return nil, fmt.Errorf("read PtahSchemaPlan %s/%s: %w", op.Namespace, op.Plan, err)
	}
	if p.Spec.Digest != op.PlanDigest {
		return nil, fmt.Errorf("PtahSchemaPlan %s/%s has digest %s, the claim applies %s: not applied", op.Namespace, op.Plan, p.Spec.Digest, op.PlanDigest)
	}
	return PlanDocument(&v1alpha1.PlanResult{Fingerprint: p.Spec.Fingerprint, BaseFingerprint: p.Spec.BaseFingerprint,
		DesiredFingerprint: p.Spec.DesiredFingerprint, Digest: p.Spec.Digest, Destructive: p.Spec.Destructive, Schemas: p.Spec.Schemas, Statements: p.Spec.Statements}, op.Exclude)
}

func (c *apiClient) post(ctx context.Context, path string, in, out any) error {
	return c.do(ctx, http.MethodPost, path, in, out)
}

func (c *apiClient) do(ctx context.Context, method, path string, in, out any) error {
	var body io.Reader
	if in != nil {
		b, err := json.Marshal(in)
		if err != nil {
			return err
		}
		body = bytes.NewReader(b)
	}
	req, err := http.NewRequestWithContext(ctx, method, c.host+path, body)
	if err != nil {
		return err
	}
	if in != nil {
		req.Header.Set("Content-Type", "application/json")
	}
	req.Header.Set("Accept", "application/json")
	resp, err := c.http.Do(req)
	if err != nil {
		return err
	}
	defer resp.Body.Close()
	b, err := io.ReadAll(io.LimitReader(resp.Body, 16<<20))
	if err != nil {
		return err
	}
	if resp.StatusCode/100 != 2 {
		e := &statusError{code: resp.StatusCode, message: http.StatusText(resp.StatusCode)}
		var st metav1.Status
		if json.Unmarshal(b, &st) == nil && st.Message != "" {
			e.message = st.Message
		}
		return e
	}
	return json.Unmarshal(b, out)
}

// statusError is the API server's answer to a request it refused.
type statusError struct {
	code    int
	message string
}

func (e *statusError) Error() string { return fmt.Sprintf("%s (HTTP %d)", e.message, e.code) }

// transient reports whether a request that failed with err may succeed
// when sent again: the API server was not reached or answered that it
// cannot serve now (restarting, its custom resources not yet served again,
// overloaded).
func transient(err error) bool {
	var e *statusError
	if !errors.As(err, &e) {
		return true
	}
	switch e.code {
	case http.StatusNotFound, http.StatusTooManyRequests, http.StatusInternalServerError, http.StatusBadGateway,
		http.StatusServiceUnavailable, http.StatusGatewayTimeout:
		return true
	}
	return false
}

// deliver creates the record, sending it again while the API server cannot
// take it, up to cfg.DeliveryTimeout: the operation has run, and a record
// lost here leaves what it did unknown to the manager (for an Apply, a
// person is asked). A conflict after an attempt whose answer was lost is
// that attempt's record; the manager matches every record to its claim.
func deliver(ctx context.Context, cfg Config, c *apiClient, rec *v1alpha1.PtahResultRecord) error {
	ctx, cancel := context.WithTimeout(ctx, cfg.DeliveryTimeout)
	defer cancel()
	sent := false
	for delay := 250 * time.Millisecond; ; delay = min(2*delay, 5*time.Second) {
		err := c.createRecord(ctx, rec)
		var e *statusError
		switch {
		case err == nil:
			return nil
		case sent && errors.As(err, &e) && e.code == http.StatusConflict:
			fmt.Fprintf(cfg.Log, "runner: PtahResultRecord %s/%s exists: an earlier attempt created it and its answer was lost\n", rec.Namespace, rec.Name)
			return nil
		case !transient(err) || ctx.Err() != nil:
			return err
		}
		sent = true
		fmt.Fprintf(cfg.Log, "runner: creating PtahResultRecord %s/%s failed (%v); sending it again in %s\n", rec.Namespace, rec.Name, err, delay)
		select {
		case <-ctx.Done():
			return fmt.Errorf("%w; still not taken after %s", err, cfg.DeliveryTimeout)
		case <-time.After(delay):
		}
	}
}
