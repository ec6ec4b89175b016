package stamp

import (
	"bytes"
	"context"
	"crypto/ecdsa"
	"crypto/elliptic"
	"crypto/rand"
	"crypto/tls"
	"crypto/x509"
	"crypto/x509/pkix"
	"encoding/pem"
	"errors"
	"fmt"
	"math/big"
	"net/http"
	"sync/atomic"
	"time"

	admissionregistrationv1 "k8s.io/api/admissionregistration/v1"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/client-go/util/retry"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/log"
	"sigs.k8s.io/controller-runtime/pkg/webhook"
)

// The serving certificate is the manager's own, so no cert-manager is
// needed: a CA and a serving certificate it signed live in a Secret of the
// manager's namespace, which every replica serves from; the CA goes into
// the webhook configuration's caBundle. The CA lasts ten years; the
// serving certificate a year and is renewed from the same CA when less
// than a quarter of it is left, so the caBundle does not change.
const (
	caValidity      = 10 * 365 * 24 * time.Hour
	servingValidity = 365 * 24 * time.Hour
	renewBefore     = servingValidity / 4
	// Secret keys: the serving pair under the kubernetes.io/tls names.
	keyCA     = "ca.crt"
	keyCAKey  = "ca.key"
	keyCert   = corev1.TLSCertKey
	keyCertPK = corev1.TLSPrivateKeyKey
)

// Certificates keeps the webhook's serving certificate in Secret
// Namespace/Secret, valid for Service's in-cluster DNS names, and its CA in
// the caBundle of every webhook of MutatingWebhookConfiguration Config.
type Certificates struct {
	Client client.Client
	// Reader reads past the manager's cache, which holds no Secrets.
	Reader                     client.Reader
	Namespace, Secret, Service string
	Config                     string
	// Every is how often the Secret is read again, to renew the certificate
	// or serve one another replica renewed (default an hour).
	Every time.Duration

	serving atomic.Pointer[tls.Certificate]
}

// GetCertificate serves the current certificate (tls.Config.GetCertificate).
func (c *Certificates) GetCertificate(*tls.ClientHelloInfo) (*tls.Certificate, error) {
	if cert := c.serving.Load(); cert != nil {
		return cert, nil
	}
	return nil, fmt.Errorf("the stamp webhook's certificate is not loaded yet from Secret %s/%s", c.Namespace, c.Secret)
}

// Ready fails until a certificate is served (a readiness check).
func (c *Certificates) Ready(*http.Request) error {
	_, err := c.GetCertificate(nil)
	return err
}

// Start loads or makes the certificate, then keeps it current until ctx ends.
// Every replica runs it: each serves the webhook.
func (c *Certificates) Start(ctx context.Context) error {
	every := c.Every
	if every <= 0 {
		every = time.Hour
	}
	l := log.FromContext(ctx).WithValues("secret", c.Namespace+"/"+c.Secret, "mutatingWebhookConfiguration", c.Config)
	retry := time.Second
	for {
		wait := every
		if err := c.Ensure(ctx, time.Now()); err != nil {
			l.Error(err, "keep the stamp webhook's certificate; approvals, acknowledgments and result records are refused until it is served")
			wait, retry = retry, min(2*retry, time.Minute)
		} else {
			retry = time.Second
		}
		select {
		case <-ctx.Done():
			return nil
		case <-time.After(wait):
		}
	}
}

// NeedLeaderElection: every replica serves the webhook.
func (c *Certificates) NeedLeaderElection() bool { return false }

// Ensure makes the Secret hold a CA and a serving certificate good at now,
// serves it, and puts the CA into the webhook configuration.
func (c *Certificates) Ensure(ctx context.Context, now time.Time) error {
	var s corev1.Secret
	key := types.NamespacedName{Namespace: c.Namespace, Name: c.Secret}
	err := c.Reader.Get(ctx, key, &s)
	exists := err == nil
	if err != nil && !apierrors.IsNotFound(err) {
		return fmt.Errorf("read Secret %s: %w (the manager needs get on it: the chart's Role grants it)", key, err)
	}
	pair, changed, err := c.current(s.Data, now)
	if err != nil {
		return err
	}
	if changed {
		s.Name, s.Namespace, s.Type = c.Secret, c.Namespace, corev1.SecretTypeTLS
		s.Data = pair
		if exists {
			err = c.Client.Update(ctx, &s) // optimistic: another replica's write wins
		} else {
			err = c.Client.Create(ctx, &s)
		}
		if apierrors.IsConflict(err) || apierrors.IsAlreadyExists(err) {
			return c.Ensure(ctx, now) // serve what the other replica wrote
		}
		if err != nil {
			return fmt.Errorf("write Secret %s with the stamp webhook's certificate: %w", key, err)
		}
		log.FromContext(ctx).Info("wrote the stamp webhook's certificate", "secret", key.String(), "created", !exists)
	}
	cert, err := tls.X509KeyPair(pair[keyCert], pair[keyCertPK])
	if err != nil {
		return fmt.Errorf("Secret %s: its serving certificate does not load: %w", key, err)
	}
	c.serving.Store(&cert)
	return c.publishCA(ctx, pair[keyCA])
}

// current returns the Secret data to serve from: data itself when it holds
// a CA and a serving certificate good for long enough, else data with a
// new serving certificate (and, when the CA is missing or ending, a new CA).
func (c *Certificates) current(data map[string][]byte, now time.Time) (map[string][]byte, bool, error) {
	ca, caKey, err := parsePair(data[keyCA], data[keyCAKey])
	if err != nil || now.Add(servingValidity).After(ca.NotAfter) {
		ca, caKey, err = newCA(now)
		if err != nil {
			return nil, false, err
		}
	} else if leaf, _, err := parsePair(data[keyCert], data[keyCertPK]); err == nil &&
		now.Add(renewBefore).Before(leaf.NotAfter) && leaf.VerifyHostname(c.dnsNames()[2]) == nil &&
		leaf.CheckSignatureFrom(ca) == nil {
		return data, false, nil
	}
	certPEM, keyPEM, err := c.newServing(ca, caKey, now)
	if err != nil {
		return nil, false, err
	}
	return map[string][]byte{
		keyCA: pemBlock("CERTIFICATE", ca.Raw), keyCAKey: mustKeyPEM(caKey),
		keyCert: certPEM, keyCertPK: keyPEM,
	}, true, nil
}

// dnsNames are the names the API server calls a Service by.
func (c *Certificates) dnsNames() []string {
	return []string{c.Service, c.Service + "." + c.Namespace, c.Service + "." + c.Namespace + ".svc", c.Service + "." + c.Namespace + ".svc.cluster.local"}
}

// publishCA puts caPEM into every webhook of the configuration that lacks
// it; another replica writing the same at once is read again, not fought.
func (c *Certificates) publishCA(ctx context.Context, caPEM []byte) error {
	changed := false
	err := retry.RetryOnConflict(retry.DefaultRetry, func() error {
		var cfg admissionregistrationv1.MutatingWebhookConfiguration
		if err := c.Reader.Get(ctx, types.NamespacedName{Name: c.Config}, &cfg); err != nil {
			return fmt.Errorf("read MutatingWebhookConfiguration %s to put the stamp webhook's CA in it: %w (the chart installs it with admission.api=webhook; the manager needs get and patch on it)", c.Config, err)
		}
		before := cfg.DeepCopy()
		changed = false
		for i := range cfg.Webhooks {
			if !bytes.Equal(cfg.Webhooks[i].ClientConfig.CABundle, caPEM) {
				cfg.Webhooks[i].ClientConfig.CABundle = caPEM
				changed = true
			}
		}
		if !changed {
			return nil
		}
		return c.Client.Patch(ctx, &cfg, client.MergeFromWithOptions(before, client.MergeFromWithOptimisticLock{}))
	})
	if err != nil {
		return fmt.Errorf("put the stamp webhook's CA into MutatingWebhookConfiguration %s: %w", c.Config, err)
	}
	if changed {
		log.FromContext(ctx).Info("put the stamp webhook's CA into its configuration", "mutatingWebhookConfiguration", c.Config)
	}
	return nil
}

func newCA(now time.Time) (*x509.Certificate, *ecdsa.PrivateKey, error) {
	key, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	if err != nil {
		return nil, nil, err
	}
	tmpl := &x509.Certificate{
		SerialNumber:          serial(),
		Subject:               pkix.Name{CommonName: "ptah stamp webhook CA"},
		NotBefore:             now.Add(-time.Hour),
		NotAfter:              now.Add(caValidity),
		KeyUsage:              x509.KeyUsageCertSign | x509.KeyUsageDigitalSignature,
		BasicConstraintsValid: true,
		IsCA:                  true,
	}
	der, err := x509.CreateCertificate(rand.Reader, tmpl, tmpl, &key.PublicKey, key)
	if err != nil {
		return nil, nil, fmt.Errorf("make the stamp webhook's CA: %w", err)
	}
	ca, err := x509.ParseCertificate(der)
	return ca, key, err
}

func (c *Certificates) newServing(ca *x509.Certificate, caKey *ecdsa.PrivateKey, now time.Time) (certPEM, keyPEM []byte, err error) {
	key, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	if err != nil {
		return nil, nil, err
	}
	names := c.dnsNames()
	tmpl := &x509.Certificate{
		SerialNumber: serial(),
		Subject:      pkix.Name{CommonName: names[2]},
		DNSNames:     names,
		NotBefore:    now.Add(-time.Hour),
		NotAfter:     now.Add(servingValidity),
		KeyUsage:     x509.KeyUsageDigitalSignature,
		ExtKeyUsage:  []x509.ExtKeyUsage{x509.ExtKeyUsageServerAuth},
	}
	der, err := x509.CreateCertificate(rand.Reader, tmpl, ca, &key.PublicKey, caKey)
	if err != nil {
		return nil, nil, fmt.Errorf("sign the stamp webhook's serving certificate: %w", err)
	}
	return pemBlock("CERTIFICATE", der), mustKeyPEM(key), nil
}

// parsePair reads a PEM certificate and its ECDSA key.
func parsePair(certPEM, keyPEM []byte) (*x509.Certificate, *ecdsa.PrivateKey, error) {
	cb, _ := pem.Decode(certPEM)
	kb, _ := pem.Decode(keyPEM)
	if cb == nil || kb == nil {
		return nil, nil, errors.New("no PEM certificate or key")
	}
	cert, err := x509.ParseCertificate(cb.Bytes)
	if err != nil {
		return nil, nil, err
	}
	key, err := x509.ParseECPrivateKey(kb.Bytes)
	if err != nil {
		return nil, nil, err
	}
	if !key.PublicKey.Equal(cert.PublicKey) {
		return nil, nil, errors.New("the key is not the certificate's")
	}
	return cert, key, nil
}

func pemBlock(kind string, der []byte) []byte {
	return pem.EncodeToMemory(&pem.Block{Type: kind, Bytes: der})
}

func mustKeyPEM(k *ecdsa.PrivateKey) []byte {
	der, err := x509.MarshalECPrivateKey(k)
	if err != nil {
		panic(err) // a P-256 key always marshals
	}
	return pemBlock("EC PRIVATE KEY", der)
}

func serial() *big.Int {
	n, err := rand.Int(rand.Reader, new(big.Int).Lsh(big.NewInt(1), 127))
	if err != nil {
		panic(err) // crypto/rand does not fail on supported platforms
	}
	return n
}

// Serve adds to mgr the webhook's HTTPS server on host:port, the keeper of
// its certificate, and a readiness check that fails until it is served.
func (c *Certificates) Serve(mgr ctrl.Manager, host string, port int) error {
	srv := webhook.NewServer(webhook.Options{Host: host, Port: port, TLSOpts: []func(*tls.Config){
		func(t *tls.Config) { t.GetCertificate = c.GetCertificate },
	}})
	srv.Register(Path, &webhook.Admission{Handler: Webhook{}})
	if err := mgr.Add(srv); err != nil {
		return err
	}
	if err := mgr.Add(c); err != nil {
		return err
	}
	return mgr.AddReadyzCheck("stamp-webhook", c.Ready)
}
