package config_test

import (
	"bytes"
	"context"
	"crypto/tls"
	"crypto/x509"
	"encoding/json"
	"encoding/pem"
	"fmt"
	"maps"
	"net"
	"os"
	"path/filepath"
	"reflect"
	"slices"
	"strconv"
	"strings"
	"testing"
	"time"

	jsonpatch "github.com/evanphx/json-patch/v5"
	jsonpatchv2 "gomodules.xyz/jsonpatch/v2"
	admissionv1 "k8s.io/api/admission/v1"
	admissionregistrationv1 "k8s.io/api/admissionregistration/v1"
	appsv1 "k8s.io/api/apps/v1"
	authenticationv1 "k8s.io/api/authentication/v1"
	corev1 "k8s.io/api/core/v1"
	discoveryv1 "k8s.io/api/discovery/v1"
	rbacv1 "k8s.io/api/rbac/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/client-go/discovery"
	"k8s.io/client-go/rest"
	"k8s.io/utils/ptr"
	"pgregory.net/rapid"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/envtest"
	metricsserver "sigs.k8s.io/controller-runtime/pkg/metrics/server"
	"sigs.k8s.io/controller-runtime/pkg/webhook"
	"sigs.k8s.io/controller-runtime/pkg/webhook/admission"

	"ptah.run/operator/internal/controller"
	"ptah.run/operator/internal/stamp"
	"ptah.run/operator/internal/testenv"
	v1alpha1 "ptah.run/operator/operator/api/v1alpha1"
	"ptah.run/operator/operator/chart"
)

// TestStampWebhook: where the cluster serves no MutatingAdmissionPolicy
// (Kubernetes 1.33, the oldest supported), the chart installs the stamps
// as the manager's webhook, chosen from the cluster's own discovery; where
// it does (1.37), admission.api=webhook chooses it. On a real API server
// of each release, with the chart's objects as rendered and the manager
// running under the chart's RBAC (its service account, impersonated):
//
//   - the manager makes its certificate, keeps it in the chart's Secret and
//     puts its CA into the chart's webhook configuration;
//   - the API server, calling the chart's Service, has the webhook stamp a
//     forged approver, acknowledger and record creator with the requester,
//     exactly as SelfSubjectReview names it, and the chart's validating
//     policies admit the stamped objects;
//   - the manager's record admission self-test finds admission enforcing;
//   - with no manager serving, every stamped kind is refused (fail closed)
//     and the self-test says admission is not shown to be enforcing;
//   - a rogue webhook serving the manager's own certificate, stamping a
//     cluster admin, has every object refused: it can refuse, not forge;
//   - a manager started again serves the same certificate, a serving
//     certificate or CA near its end is renewed without a refusal after,
//     and two replicas making it at once serve one certificate.
func TestStampWebhook(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct {
		version string
		values  map[string]any
		auto    string // what admission.api=auto chooses there
	}{
		{testenv.OldestKubernetesVersion, nil, "webhook"},
		{testenv.KubernetesVersion, map[string]any{"admission": map[string]any{"api": "webhook"}}, "v1"},
	} {
		t.Run(tc.version, func(t *testing.T) {
			t.Parallel()
			stampWebhookOn(t, tc.version, tc.values, tc.auto)
		})
	}
}

func stampWebhookOn(t *testing.T, version string, values map[string]any, auto string) {
	ctx := context.Background()
	api := testenv.StartAPIServer(t, testenv.Version(version), func(e *envtest.Environment) {
		// The API server reaches a Service's webhook through its endpoints,
		// here the test's own address (there is no kube-proxy).
		e.ControlPlane.GetAPIServer().Configure().Set("enable-aggregator-routing", "true")
	})
	dc, err := discovery.NewDiscoveryClientForConfig(api.Config)
	must(t, err)
	v, err := dc.ServerVersion()
	must(t, err)
	if v.GitVersion != version {
		t.Fatalf("the API server reports %s, want %s", v.GitVersion, version)
	}

	// The chart, rendered against what this server serves, as helm install does.
	served := servedAPIVersions(t, dc)
	objs, err := chart.RenderOn(version, served, "ptah", "ptah-system", nil)
	must(t, err)
	if got := admissionPath(objs); got != auto {
		t.Fatalf("on %s admission.api=auto installs the stamps as %q, want %q", version, got, auto)
	}
	if values != nil {
		objs, err = chart.RenderOn(version, served, "ptah", "ptah-system", values)
		must(t, err)
	}
	if got := admissionPath(objs); got != "webhook" {
		t.Fatalf("the chart installs the stamps as %q, want the webhook", got)
	}
	admin := newClient(t, api.Config)
	for _, ns := range []string{"ptah-system", "tenant"} {
		must(t, admin.Create(ctx, &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: ns}}))
	}
	var args []string
	for _, o := range objs {
		eventually(t, "create "+o.GetKind()+" "+o.GetName(), func() error { return ignoreExists(admin.Create(ctx, o.DeepCopy())) })
		if o.GetKind() == "Deployment" {
			var d appsv1.Deployment
			must(t, runtimeConvert(o, &d))
			args = d.Spec.Template.Spec.Containers[0].Args
		}
	}
	flag := func(name string) string {
		for _, a := range args {
			if v, ok := strings.CutPrefix(a, "--"+name+"="); ok {
				return v
			}
		}
		t.Fatalf("the chart's manager has no --%s: %v", name, args)
		return ""
	}
	config, service, secret := flag("stamp-webhook-configuration"), flag("stamp-webhook-service"), flag("stamp-webhook-secret")

	// The Service's endpoint is this process, on an address the API
	// server accepts in an endpoint (not loopback).
	host, port := hostAddress(t)
	serveEndpoint(t, admin, "ptah-system", service, host, port)

	// The manager as the chart's service account, with only its RBAC.
	asManager := rest.CopyConfig(api.Config)
	asManager.Impersonate = rest.ImpersonationConfig{UserName: manager, Groups: []string{"system:serviceaccounts", "system:serviceaccounts:ptah-system"}}
	start := func() (*stamp.Certificates, *controller.RecordAdmission, func()) {
		mgr, err := ctrl.NewManager(asManager, ctrl.Options{Scheme: newScheme(t), Metrics: metricsserver.Options{BindAddress: "0"}, HealthProbeBindAddress: "0"})
		must(t, err)
		certs := &stamp.Certificates{Client: mgr.GetClient(), Reader: mgr.GetAPIReader(), Namespace: "ptah-system", Secret: secret, Service: service, Config: config}
		must(t, certs.Serve(mgr, host, port))
		mctx, cancel := context.WithCancel(ctx)
		done := make(chan error, 1)
		go func() { done <- mgr.Start(mctx) }()
		stopped := false
		stop := func() {
			if !stopped {
				stopped = true
				cancel()
				must(t, <-done)
			}
		}
		t.Cleanup(stop)
		return certs, controller.NewRecordAdmission(mgr, time.Minute), stop
	}
	certs, self, stop := start()

	alice := impersonated(t, ctx, admin, api.Config, "alice", []string{"ptah-approvers"},
		[]string{"ptahschemaapprovals", "ptahmigrationapprovals", "ptahmigrationrunacknowledgments"}, []string{"create", "get"})
	op := strings.Repeat("0a", 8)
	runner := recordWriterAs(t, ctx, admin, api.Config, "tenant", "ptah-op-"+op, "ptah-apply-shop-"+op+"-x7k2q")
	stamped := func(what string) {
		t.Helper()
		eventually(t, what, func() error { return stampsHold(ctx, alice, runner, op) })
	}
	stamped("the webhook stamps every kind with the requester")

	var s corev1.Secret
	must(t, admin.Get(ctx, client.ObjectKey{Namespace: "ptah-system", Name: secret}, &s))
	var cfg admissionregistrationv1.MutatingWebhookConfiguration
	must(t, admin.Get(ctx, client.ObjectKey{Name: config}, &cfg))
	if s.Type != corev1.SecretTypeTLS || len(cfg.Webhooks) == 0 || !bytes.Equal(cfg.Webhooks[0].ClientConfig.CABundle, s.Data["ca.crt"]) {
		t.Fatalf("Secret %s (type %s) and the caBundle of %s do not hold the same CA", secret, s.Type, config)
	}
	leaf := parseCert(t, s.Data["tls.crt"])
	if err := leaf.VerifyHostname(service + ".ptah-system.svc"); err != nil {
		t.Errorf("the serving certificate does not name the Service: %v", err)
	}

	if p := self.Verify(ctx, "tenant"); p != "" {
		t.Errorf("the manager's self-test says record admission is not enforcing: %s", p)
	}

	// No manager: nothing is admitted unstamped, and the self-test says so.
	stop()
	eventually(t, "every stamped kind refused while no manager serves", func() error {
		for _, o := range stampable(op) {
			c := alice
			if _, ok := o.(*v1alpha1.PtahResultRecord); ok {
				c = runner
			}
			if err := c.Create(ctx, o, client.DryRunAll); err == nil || !strings.Contains(err.Error(), "stamp.operator.ptah.run") {
				return fmt.Errorf("%T: %v, want a refusal naming the webhook", o, err)
			}
		}
		return nil
	})
	if p := (&controller.RecordAdmission{Client: admin, Reader: admin}).Verify(ctx, "tenant"); p == "" {
		t.Errorf("with no stamp webhook serving, the self-test says record admission is enforcing")
	}

	// Started again: the same certificate, and stamps again.
	certs, self, stop = start()
	stamped("a manager started again stamps")
	var again corev1.Secret
	must(t, admin.Get(ctx, client.ObjectKey{Namespace: "ptah-system", Name: secret}, &again))
	if again.ResourceVersion != s.ResourceVersion {
		t.Errorf("a manager started again rewrote Secret %s; it should serve the certificate there", secret)
	}

	// Renewal: a serving certificate with 65 days left is renewed from the
	// same CA; a CA with half a year left is replaced, caBundle with it.
	now := time.Now()
	for _, tc := range []struct {
		name   string
		made   time.Time
		sameCA bool
	}{
		{"serving certificate near its end", now.Add(-300 * 24 * time.Hour), true},
		{"CA near its end", now.Add(-(10*365 - 180) * 24 * time.Hour), false},
	} {
		must(t, admin.Delete(ctx, &corev1.Secret{ObjectMeta: metav1.ObjectMeta{Namespace: "ptah-system", Name: secret}}))
		must(t, certs.Ensure(ctx, tc.made))
		var old corev1.Secret
		must(t, admin.Get(ctx, client.ObjectKey{Namespace: "ptah-system", Name: secret}, &old))
		must(t, certs.Ensure(ctx, now))
		var renewed corev1.Secret
		must(t, admin.Get(ctx, client.ObjectKey{Namespace: "ptah-system", Name: secret}, &renewed))
		if bytes.Equal(old.Data["tls.crt"], renewed.Data["tls.crt"]) {
			t.Errorf("%s: not renewed", tc.name)
		}
		if got := bytes.Equal(old.Data["ca.crt"], renewed.Data["ca.crt"]); got != tc.sameCA {
			t.Errorf("%s: CA kept %t, want %t", tc.name, got, tc.sameCA)
		}
		if l := parseCert(t, renewed.Data["tls.crt"]); l.NotAfter.Before(now.Add(300 * 24 * time.Hour)) {
			t.Errorf("%s: the renewed certificate ends %s", tc.name, l.NotAfter)
		}
		stamped(tc.name + ": stamps after the renewal")
	}

	// Two replicas starting where there is no Secret: one certificate,
	// served by both.
	must(t, admin.Delete(ctx, &corev1.Secret{ObjectMeta: metav1.ObjectMeta{Namespace: "ptah-system", Name: secret}}))
	replica := newClient(t, asManager)
	other := &stamp.Certificates{Client: replica, Reader: replica, Namespace: "ptah-system", Secret: secret, Service: service, Config: config}
	errs := make(chan error, 2)
	for _, c := range []*stamp.Certificates{certs, other} {
		go func() { errs <- c.Ensure(ctx, now) }()
	}
	must(t, <-errs)
	must(t, <-errs)
	mine, err := certs.GetCertificate(nil)
	must(t, err)
	theirs, err := other.GetCertificate(nil)
	must(t, err)
	if !bytes.Equal(mine.Certificate[0], theirs.Certificate[0]) {
		t.Errorf("two replicas starting together serve different certificates")
	}
	stamped("stamps after two replicas made the certificate at once")

	// Whoever answers for the webhook can refuse, never forge: a rogue
	// server with the manager's own certificate stamps a cluster admin and
	// a forged Pod, and the validating policies refuse every object.
	stop()
	rogue := webhook.NewServer(webhook.Options{Host: host, Port: port, TLSOpts: []func(*tls.Config){
		func(c *tls.Config) { c.GetCertificate = certs.GetCertificate },
	}})
	rogue.Register(stamp.Path, &webhook.Admission{Handler: admission.HandlerFunc(func(_ context.Context, req admission.Request) admission.Response {
		field, _ := stamp.Field(req.Resource.Resource)
		return admission.Patched("", jsonpatchv2.NewOperation("add", "/"+field, map[string]any{
			"username": "kubernetes-admin", "groups": []string{"system:masters"}, "podName": "ptah-apply-shop-" + op + "-x7k2q"}))
	})})
	rctx, stopRogue := context.WithCancel(ctx)
	rogueDone := make(chan error, 1)
	go func() { rogueDone <- rogue.Start(rctx) }()
	eventually(t, "every object the rogue webhook stamps refused by the validating policies", func() error {
		for _, o := range stampable(op) {
			c := alice
			if _, ok := o.(*v1alpha1.PtahResultRecord); ok {
				c = runner
			}
			err := c.Create(ctx, o, client.DryRunAll)
			if err == nil || !strings.Contains(err.Error(), "ValidatingAdmissionPolicy") || !strings.Contains(err.Error(), "must be stamped by admission") {
				return fmt.Errorf("%T stamped by the rogue webhook: %v, want the validating policy's refusal of the stamp", o, err)
			}
		}
		return nil
	})
	stopRogue()
	must(t, <-rogueDone)

	// The webhook's configuration gone: the self-test names what is missing.
	must(t, admin.Delete(ctx, &cfg))
	want := "MutatingAdmissionPolicy ptah-record-stamp does not exist"
	if auto == "webhook" {
		want = "this cluster serves no MutatingAdmissionPolicy v1, and MutatingWebhookConfiguration " + config + ", the stamp webhook"
	}
	eventually(t, "the self-test names the missing stamp", func() error {
		if p := self.Verify(ctx, "tenant"); !strings.Contains(p, want) {
			return fmt.Errorf("the self-test says %q, want it to say %q", p, want)
		}
		return nil
	})
}

// stampable is one object of each stamped kind, each with a forged stamp.
func stampable(op string) []client.Object {
	forged := forgedApprover()
	three := int64(3)
	sa := &v1alpha1.PtahSchemaApproval{Spec: v1alpha1.PtahSchemaApprovalSpec{SchemaName: "shop", PlanName: "shop-f1", PlanFingerprint: "f1"}, ApprovedBy: forged}
	ma := &v1alpha1.PtahMigrationApproval{Spec: v1alpha1.PtahMigrationApprovalSpec{MigrationName: "shop", PlanName: "shop-f1", PlanFingerprint: "f1"}, ApprovedBy: forged}
	ack := &v1alpha1.PtahMigrationRunAcknowledgment{
		Spec:           v1alpha1.PtahMigrationRunAcknowledgmentSpec{MigrationName: "shop", Operation: "op-1", Outcome: v1alpha1.RunPartial, LastCommittedVersion: &three},
		AcknowledgedBy: &v1alpha1.Acknowledger{Username: forged.Username, UID: forged.UID, Groups: forged.Groups},
	}
	rec := &v1alpha1.PtahResultRecord{
		Spec: v1alpha1.PtahResultRecordSpec{
			Subject:     v1alpha1.ResultSubject{Kind: v1alpha1.KindPtahSchema, Name: "shop"},
			OperationID: op, Digest: digest,
			Error: &v1alpha1.OperationError{Code: "probe", Message: "a dry run"},
		},
		CreatedBy: &v1alpha1.Creator{Username: "forged", UID: "forged", PodName: "forged", PodUID: "forged"},
	}
	objs := []client.Object{sa, ma, ack, rec}
	for _, o := range objs {
		o.SetNamespace("tenant")
		o.SetName("shop-stamp-probe")
	}
	rec.Name = "ptah-apply-shop-" + op
	return objs
}

// stampsHold creates each stampable kind (dry run) as its writer and
// checks the stamp is exactly the writer as the API server knows it.
func stampsHold(ctx context.Context, alice, runner client.Client, op string) error {
	who := func(c client.Client) (authenticationv1.UserInfo, error) {
		r := &authenticationv1.SelfSubjectReview{}
		err := c.Create(ctx, r)
		return r.Status.UserInfo, err
	}
	person, err := who(alice)
	if err != nil {
		return err
	}
	pod, err := who(runner)
	if err != nil {
		return err
	}
	for _, o := range stampable(op) {
		c := alice
		if _, ok := o.(*v1alpha1.PtahResultRecord); ok {
			c = runner
		}
		if err := c.Create(ctx, o, client.DryRunAll); err != nil {
			return fmt.Errorf("%T: %w", o, err)
		}
		var got, want any
		switch o := o.(type) {
		case *v1alpha1.PtahSchemaApproval:
			got, want = *o.ApprovedBy, v1alpha1.Approver{Username: person.Username, UID: person.UID, Groups: person.Groups}
		case *v1alpha1.PtahMigrationApproval:
			got, want = *o.ApprovedBy, v1alpha1.Approver{Username: person.Username, UID: person.UID, Groups: person.Groups}
		case *v1alpha1.PtahMigrationRunAcknowledgment:
			got, want = *o.AcknowledgedBy, v1alpha1.Acknowledger{Username: person.Username, UID: person.UID, Groups: person.Groups}
		case *v1alpha1.PtahResultRecord:
			got, want = *o.CreatedBy, v1alpha1.Creator{Username: pod.Username, UID: pod.UID,
				PodName: one(pod.Extra["authentication.kubernetes.io/pod-name"]), PodUID: one(pod.Extra["authentication.kubernetes.io/pod-uid"])}
		}
		if fmt.Sprint(got) != fmt.Sprint(want) {
			return fmt.Errorf("%T stamped %+v, want %+v", o, got, want)
		}
	}
	return nil
}

func one(v authenticationv1.ExtraValue) string {
	if len(v) == 1 {
		return v[0]
	}
	return ""
}

// recordWriterAs is a client acting as service account account of ns from
// Pod pod (the extra fields a token bound to that Pod carries), allowed to
// create result records and ask who it is.
func recordWriterAs(t *testing.T, ctx context.Context, admin client.Client, cfg *rest.Config, ns, account, pod string) client.Client {
	t.Helper()
	user := "system:serviceaccount:" + ns + ":" + account
	role := &rbacv1.ClusterRole{Rules: []rbacv1.PolicyRule{{APIGroups: []string{v1alpha1.GroupVersion.Group}, Resources: []string{"ptahresultrecords"}, Verbs: []string{"create"}}}}
	role.Name = "record-writer-" + account
	binding := &rbacv1.ClusterRoleBinding{
		RoleRef:  rbacv1.RoleRef{APIGroup: rbacv1.GroupName, Kind: "ClusterRole", Name: role.Name},
		Subjects: []rbacv1.Subject{{Kind: rbacv1.ServiceAccountKind, Name: account, Namespace: ns}},
	}
	binding.Name = role.Name
	must(t, admin.Create(ctx, role))
	must(t, admin.Create(ctx, binding))
	as := rest.CopyConfig(cfg)
	as.Impersonate = rest.ImpersonationConfig{UserName: user, UID: "uid-" + account,
		Groups: []string{"system:serviceaccounts", "system:serviceaccounts:" + ns},
		Extra: map[string][]string{
			"authentication.kubernetes.io/pod-name": {pod},
			"authentication.kubernetes.io/pod-uid":  {"uid-" + pod},
		}}
	return newClient(t, as)
}

// admissionPath says how rendered objects install the stamps.
func admissionPath(objs []*unstructured.Unstructured) string {
	for _, o := range objs {
		switch {
		case o.GetKind() == "MutatingWebhookConfiguration":
			return "webhook"
		case o.GetKind() == "MutatingAdmissionPolicy":
			return strings.TrimPrefix(o.GetAPIVersion(), "admissionregistration.k8s.io/")
		}
	}
	return "none"
}

// servedAPIVersions lists what discovery serves as Helm's capabilities do:
// "group/version" and "group/version/Kind".
func servedAPIVersions(t *testing.T, dc discovery.DiscoveryInterface) []string {
	t.Helper()
	_, lists, err := dc.ServerGroupsAndResources()
	must(t, err)
	var out []string
	for _, l := range lists {
		out = append(out, l.GroupVersion)
		for _, r := range l.APIResources {
			if !strings.Contains(r.Name, "/") {
				out = append(out, l.GroupVersion+"/"+r.Kind)
			}
		}
	}
	return out
}

// hostAddress is a non-loopback address of this machine and a free port on it.
func hostAddress(t *testing.T) (string, int) {
	t.Helper()
	addrs, err := net.InterfaceAddrs()
	must(t, err)
	for _, a := range addrs {
		ip, ok := a.(*net.IPNet)
		if !ok || ip.IP.To4() == nil || ip.IP.IsLoopback() || ip.IP.IsLinkLocalUnicast() {
			continue
		}
		l, err := net.Listen("tcp", net.JoinHostPort(ip.IP.String(), "0"))
		if err != nil {
			continue
		}
		port := l.Addr().(*net.TCPAddr).Port
		must(t, l.Close())
		return ip.IP.String(), port
	}
	t.Fatal("no non-loopback IPv4 address to serve the webhook on")
	return "", 0
}

// serveEndpoint points Service name at host:port, as the endpoint
// controllers would for a ready Pod (both kinds: 1.33 resolves a webhook
// Service through Endpoints, 1.37 through EndpointSlices).
func serveEndpoint(t *testing.T, c client.Client, ns, name, host string, port int) {
	t.Helper()
	ctx := context.Background()
	var svc corev1.Service
	must(t, c.Get(ctx, client.ObjectKey{Namespace: ns, Name: name}, &svc))
	portName := svc.Spec.Ports[0].Name
	must(t, c.Create(ctx, &corev1.Endpoints{ // what 1.33 resolves a Service by
		ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: name},
		Subsets: []corev1.EndpointSubset{{
			Addresses: []corev1.EndpointAddress{{IP: host}},
			Ports:     []corev1.EndpointPort{{Name: portName, Port: int32(port)}},
		}},
	}))
	must(t, c.Create(ctx, &discoveryv1.EndpointSlice{
		ObjectMeta:  metav1.ObjectMeta{Namespace: ns, Name: name + "-" + strconv.Itoa(port), Labels: map[string]string{discoveryv1.LabelServiceName: name}},
		AddressType: discoveryv1.AddressTypeIPv4,
		Endpoints:   []discoveryv1.Endpoint{{Addresses: []string{host}, Conditions: discoveryv1.EndpointConditions{Ready: ptr.To(true)}}},
		Ports:       []discoveryv1.EndpointPort{{Name: ptr.To(portName), Port: ptr.To(int32(port))}},
	}))
}

func parseCert(t *testing.T, data []byte) *x509.Certificate {
	t.Helper()
	b, _ := pem.Decode(data)
	if b == nil {
		t.Fatal("no PEM certificate")
	}
	c, err := x509.ParseCertificate(b.Bytes)
	must(t, err)
	return c
}

func ignoreExists(err error) error {
	if apierrors.IsAlreadyExists(err) {
		return nil
	}
	return err
}

func runtimeConvert(u *unstructured.Unstructured, into any) error {
	return runtime.DefaultUnstructuredConverter.FromUnstructured(u.Object, into)
}

func must(t *testing.T, err error) {
	t.Helper()
	if err != nil {
		t.Fatal(err)
	}
}

// TestStampWebhookAgreesWithThePolicies: for generated identities (users,
// UIDs, groups, and service accounts whose tokens name no Pod, one or two),
// the webhook's stamp, applied to a forged object, is what the shipped
// MutatingAdmissionPolicies stamp on a real API server: the policies are
// the oracle, the requester as SelfSubjectReview names it the input.
// TestStampWebhook shows the validating policies admit what it stamps.
func TestStampWebhookAgreesWithThePolicies(t *testing.T) {
	t.Parallel()
	testenv.RapidChecks(t, 40)
	api := testenv.StartAPIServer(t, testenv.WithCRDs("crd/bases"))
	admin := newClient(t, api.Config)
	ctx := context.Background()
	must(t, admin.Create(ctx, &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: "tenant"}}))
	// The stamps only: the validating policies would refuse the records of
	// identities no operation has (no Pod, or two), whose stamps must agree too.
	for _, f := range []string{"approval-stamp", "acknowledgment-stamp", "record-stamp"} {
		createFile(t, admin, "admission/"+f+".yaml")
	}
	role := &rbacv1.ClusterRole{Rules: []rbacv1.PolicyRule{{APIGroups: []string{v1alpha1.GroupVersion.Group}, Resources: stamp.Resources(), Verbs: []string{"create"}}}}
	role.Name = "stampers"
	binding := &rbacv1.ClusterRoleBinding{
		RoleRef:  rbacv1.RoleRef{APIGroup: rbacv1.GroupName, Kind: "ClusterRole", Name: role.Name},
		Subjects: []rbacv1.Subject{{APIGroup: rbacv1.GroupName, Kind: rbacv1.GroupKind, Name: "stampers"}},
	}
	binding.Name = role.Name
	must(t, admin.Create(ctx, role))
	must(t, admin.Create(ctx, binding))
	op := strings.Repeat("0b", 8)
	record := "ptah-apply-shop-" + op
	admitted := map[string]int{}
	eventually(t, "the policies stamp", func() error {
		a := stampable(op)[0]
		if err := admin.Create(ctx, a, client.DryRunAll); err != nil {
			return err
		}
		return nil
	})

	rapid.Check(t, func(rt *rapid.T) {
		imp := rest.ImpersonationConfig{
			UID:    rapid.SampledFrom([]string{"", "uid-" + rapid.StringMatching(`[a-z0-9]{1,12}`).Draw(rt, "uid")}).Draw(rt, "uidOrNone"),
			Groups: append(rapid.SliceOfN(rapid.StringMatching(`[a-z][a-z0-9:-]{0,15}`), 0, 3).Draw(rt, "groups"), "stampers"),
		}
		if rapid.Bool().Draw(rt, "serviceAccount") {
			imp.UserName = "system:serviceaccount:tenant:" + rapid.SampledFrom([]string{"ptah-op-" + op, "runner", "ptah-op-" + strings.Repeat("0c", 8)}).Draw(rt, "account")
			imp.Extra = map[string][]string{}
			for _, key := range []string{"authentication.kubernetes.io/pod-name", "authentication.kubernetes.io/pod-uid"} {
				n := rapid.SampledFrom([]int{1, 1, 1, 0, 2}).Draw(rt, "values of "+key)
				for i := range n {
					imp.Extra[key] = append(imp.Extra[key], record+"-"+rapid.StringMatching(`[a-z0-9]{5}`).Draw(rt, fmt.Sprintf("%s %d", key, i)))
				}
			}
		} else {
			imp.UserName = rapid.StringMatching(`[a-z][a-z0-9@._-]{0,20}`).Draw(rt, "user")
		}
		if imp.UID != "" && imp.UserName == "" {
			return
		}
		cfg := rest.CopyConfig(api.Config)
		cfg.Impersonate = imp
		c := newClient(t, cfg)
		review := &authenticationv1.SelfSubjectReview{}
		if err := c.Create(ctx, review); err != nil {
			rt.Fatalf("who is %+v: %v", imp, err)
		}
		for _, o := range stampable(op) {
			o.SetName(strings.Replace(o.GetName(), "shop-stamp-probe", "shop-agree", 1))
			forged, err := runtime.DefaultUnstructuredConverter.ToUnstructured(o)
			must(t, err)
			err = c.Create(ctx, o, client.DryRunAll)
			field := stampField(o)
			if err != nil {
				rt.Fatalf("%T as %+v: %v", o, imp, err)
			}
			admitted[field]++
			got := webhookStamp(rt, o, forged, review.Status.UserInfo)
			fromPolicy, err := runtime.DefaultUnstructuredConverter.ToUnstructured(o)
			must(t, err)
			if want := fromPolicy[field]; fmt.Sprint(got) != fmt.Sprint(want) {
				rt.Fatalf("%T as %+v: the webhook stamps %v, the policy %v", o, review.Status.UserInfo, got, want)
			}
		}
	})
	for _, f := range []string{"approvedBy", "acknowledgedBy", "createdBy"} {
		if admitted[f] == 0 {
			t.Errorf("no generated %s stamp was admitted, so none was compared", f)
		}
	}
	t.Logf("stamps compared: %v", admitted)
}

func stampField(o client.Object) string {
	switch o.(type) {
	case *v1alpha1.PtahResultRecord:
		return "createdBy"
	case *v1alpha1.PtahMigrationRunAcknowledgment:
		return "acknowledgedBy"
	}
	return "approvedBy"
}

// webhookStamp asks the webhook, in process, to stamp forged (the object o
// as its client wrote it) for user, applies its patch, and returns the field.
func webhookStamp(rt *rapid.T, o client.Object, forged map[string]any, user authenticationv1.UserInfo) any {
	raw, err := json.Marshal(forged)
	if err != nil {
		rt.Fatal(err)
	}
	req := admission.Request{AdmissionRequest: admissionv1.AdmissionRequest{
		UID: "agree", Operation: admissionv1.Create, UserInfo: user,
		Resource: metav1.GroupVersionResource{Group: v1alpha1.GroupVersion.Group, Version: v1alpha1.GroupVersion.Version,
			Resource: strings.ToLower(reflect.TypeOf(o).Elem().Name()) + "s"},
		Object: runtime.RawExtension{Raw: raw},
	}}
	resp := stamp.Webhook{}.Handle(context.Background(), req)
	if !resp.Allowed {
		rt.Fatalf("the webhook refused %s: %v", req.Resource.Resource, resp.Result)
	}
	ops, err := json.Marshal(resp.Patches)
	if err != nil {
		rt.Fatal(err)
	}
	patch, err := jsonpatch.DecodePatch(ops)
	if err != nil {
		rt.Fatal(err)
	}
	patched, err := patch.Apply(raw)
	if err != nil {
		rt.Fatalf("the webhook's patch %s does not apply: %v", ops, err)
	}
	var out map[string]any
	if err := json.Unmarshal(patched, &out); err != nil {
		rt.Fatal(err)
	}
	return out[stampField(o)]
}

// TestStampWebhookCoversWhatThePoliciesStamp: the kinds the webhook stamps,
// the kinds the chart's webhook configuration sends it, and the kinds the
// shipped stamp policies match are one set, with CREATE the one operation:
// a stamped kind added to the policies and not to the webhook (or the
// reverse) would leave it unstamped on 1.33, refused by the validating
// policies as forged.
func TestStampWebhookCoversWhatThePoliciesStamp(t *testing.T) {
	t.Parallel()
	fromPolicies := map[string]bool{}
	files, err := filepath.Glob(filepath.Join("admission", "*-stamp.yaml"))
	must(t, err)
	for _, f := range files {
		data, err := os.ReadFile(f)
		must(t, err)
		for _, o := range decodeObjects(t, bytes.NewReader(data)) {
			if o.GetKind() != "MutatingAdmissionPolicy" {
				continue
			}
			var p admissionregistrationv1.MutatingAdmissionPolicy
			must(t, runtimeConvert(o, &p))
			for _, r := range p.Spec.MatchConstraints.ResourceRules {
				if !slices.Equal(r.Operations, []admissionregistrationv1.OperationType{admissionregistrationv1.Create}) {
					t.Errorf("%s stamps on %v, the webhook on CREATE", f, r.Operations)
				}
				for _, res := range r.Resources {
					fromPolicies[res] = true
				}
			}
		}
	}
	objs, err := chart.Render("ptah", "ptah-system", map[string]any{"admission": map[string]any{"api": "webhook"}})
	must(t, err)
	var sent []string
	for _, o := range objs {
		if o.GetKind() != "MutatingWebhookConfiguration" {
			continue
		}
		var cfg admissionregistrationv1.MutatingWebhookConfiguration
		must(t, runtimeConvert(o, &cfg))
		for _, w := range cfg.Webhooks {
			if w.ClientConfig.Service == nil || ptr.Deref(w.ClientConfig.Service.Path, "") != stamp.Path {
				t.Errorf("webhook %s does not call %s", w.Name, stamp.Path)
			}
			for _, r := range w.Rules {
				if !slices.Equal(r.Operations, []admissionregistrationv1.OperationType{admissionregistrationv1.Create}) {
					t.Errorf("webhook %s is sent %v, the policies stamp on CREATE", w.Name, r.Operations)
				}
				sent = append(sent, r.Resources...)
			}
		}
	}
	slices.Sort(sent)
	policies := slices.Sorted(maps.Keys(fromPolicies))
	if !slices.Equal(policies, stamp.Resources()) || !slices.Equal(sent, stamp.Resources()) {
		t.Errorf("the stamp policies match %v, the chart sends the webhook %v, the webhook stamps %v: want one set", policies, sent, stamp.Resources())
	}
}
