package config_test

import (
	"bytes"
	"context"
	"errors"
	"io"
	"os"
	"strings"
	"testing"
	"time"

	apiextensionsv1 "k8s.io/apiextensions-apiserver/pkg/apis/apiextensions/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime"
	utilyaml "k8s.io/apimachinery/pkg/util/yaml"
	clientgoscheme "k8s.io/client-go/kubernetes/scheme"
	"k8s.io/client-go/rest"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"ptah.run/operator/internal/testenv"
	v1alpha1 "ptah.run/operator/operator/api/v1alpha1"
)

const namespace = "default"

func newScheme(t *testing.T) *runtime.Scheme {
	t.Helper()
	s := runtime.NewScheme()
	for _, add := range []func(*runtime.Scheme) error{clientgoscheme.AddToScheme, apiextensionsv1.AddToScheme, v1alpha1.AddToScheme} {
		if err := add(s); err != nil {
			t.Fatal(err)
		}
	}
	return s
}

func newClient(t *testing.T, cfg *rest.Config) client.Client {
	t.Helper()
	c, err := client.New(cfg, client.Options{Scheme: newScheme(t)})
	if err != nil {
		t.Fatal(err)
	}
	return c
}

// decodeObjects splits a multi-document YAML stream into objects.
func decodeObjects(t *testing.T, r io.Reader) []*unstructured.Unstructured {
	t.Helper()
	dec := utilyaml.NewYAMLOrJSONDecoder(r, 4096)
	var objs []*unstructured.Unstructured
	for {
		u := &unstructured.Unstructured{}
		if err := dec.Decode(&u.Object); err != nil {
			if errors.Is(err, io.EOF) {
				return objs
			}
			t.Fatal(err)
		}
		if len(u.Object) > 0 {
			objs = append(objs, u)
		}
	}
}

func createFile(t *testing.T, c client.Client, path string) {
	t.Helper()
	data, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	for _, o := range decodeObjects(t, bytes.NewReader(data)) {
		if err := c.Create(context.Background(), o); err != nil {
			t.Fatalf("create %s %s from %s: %v", o.GetKind(), o.GetName(), path, err)
		}
	}
}

func obj(kind, name string, spec map[string]any) *unstructured.Unstructured {
	return &unstructured.Unstructured{Object: map[string]any{
		"apiVersion": v1alpha1.GroupVersion.String(),
		"kind":       kind,
		"metadata":   map[string]any{"name": name, "namespace": namespace},
		"spec":       spec,
	}}
}

func validSchema(name string) *unstructured.Unstructured {
	return obj("PtahSchema", name, map[string]any{
		"target":  map[string]any{"urlFrom": map[string]any{"name": "orders-db", "key": "url"}},
		"desired": map[string]any{"ociRef": "oci://127.0.0.1:5000/schemas/orders:v1"},
	})
}

const digest = "sha256:0123456789abcdef0123456789abcdef0123456789abcdef0123456789abcdef"

func validPlan(name string) *unstructured.Unstructured {
	return obj("PtahSchemaPlan", name, map[string]any{
		"schemaRef":          map[string]any{"name": "orders"},
		"fingerprint":        "f1",
		"baseFingerprint":    "b1",
		"desiredFingerprint": "d1",
		"digest":             digest,
		"destructive":        true,
		"statements": []any{
			map[string]any{"sql": "ALTER TABLE orders ADD COLUMN note text", "severity": "safe"},
			map[string]any{"sql": "ALTER TABLE orders DROP COLUMN legacy", "severity": "destructive", "reason": "drops column legacy"},
		},
	})
}

// refusal asserts err is an Invalid or Forbidden refusal naming every part.
// fieldRefusal is one field set to a value admission must refuse, and the
// parts the refusal must name.
type fieldRefusal struct {
	name  string
	path  []string
	value any // nil removes the field
	want  []string
}

// refuseEach creates, for each case, a valid object with the field changed,
// and checks that the API server refuses it naming what the case wants.
func refuseEach(t *testing.T, ctx context.Context, c client.Client, valid func(string) *unstructured.Unstructured, cases []fieldRefusal) {
	t.Helper()
	for i, tc := range cases {
		t.Run(tc.name+" is refused", func(t *testing.T) {
			u := valid("bad-" + string(rune('a'+i)))
			if tc.value == nil {
				unstructured.RemoveNestedField(u.Object, tc.path...)
			} else if err := unstructured.SetNestedField(u.Object, tc.value, tc.path...); err != nil {
				t.Fatal(err)
			}
			refusal(t, c.Create(ctx, u), tc.want...)
		})
	}
}

func refusal(t *testing.T, err error, parts ...string) {
	t.Helper()
	if err == nil {
		t.Fatalf("accepted; want a refusal naming %q", parts)
	}
	if !apierrors.IsInvalid(err) && !apierrors.IsForbidden(err) {
		t.Fatalf("want Invalid or Forbidden, got %v", err)
	}
	t.Logf("refused: %v", err)
	for _, p := range parts {
		if !strings.Contains(err.Error(), p) {
			t.Errorf("refusal does not name %q: %v", p, err)
		}
	}
}

func TestCRDValidation(t *testing.T) {
	t.Parallel()
	api := testenv.StartAPIServer(t, testenv.WithCRDs("crd/bases"))
	c := newClient(t, api.Config)
	ctx := context.Background()

	t.Run("valid PtahSchema is accepted with defaults", func(t *testing.T) {
		u := validSchema("valid")
		if err := c.Create(ctx, u); err != nil {
			t.Fatal(err)
		}
		var got v1alpha1.PtahSchema
		if err := c.Get(ctx, client.ObjectKeyFromObject(u), &got); err != nil {
			t.Fatal(err)
		}
		s := got.Spec
		if s.Target.Engine != v1alpha1.EnginePostgres || s.Policy.Apply != v1alpha1.ApplyOnApproval ||
			s.Interval == nil || s.Interval.Duration != 5*time.Minute ||
			s.Execution.Deadline == nil || s.Execution.Deadline.Duration != 10*time.Minute ||
			s.Execution.ConnectTimeout == nil || s.Policy.LockTimeout == nil || s.Execution.FailureRetryInterval == nil {
			t.Errorf("defaults not applied: %+v", s)
		}
	})

	t.Run("digest reference and every policy field are accepted", func(t *testing.T) {
		u := validSchema("by-digest")
		spec := u.Object["spec"].(map[string]any)
		spec["desired"] = map[string]any{
			"ociRef":                 "oci://registry.example.com/team/schemas/orders@" + digest,
			"registryAuthFrom":       map[string]any{"name": "registry"},
			"verificationPolicyFrom": map[string]any{"name": "policy"},
		}
		spec["policy"] = map[string]any{"apply": "Always", "allowDestructive": true, "protectedTables": []any{"public.payments", "audit_log"}, "lockTimeout": "5s"}
		spec["interval"] = "30s"
		spec["execution"] = map[string]any{"deadline": "1h", "connectTimeout": "5m", "failureRetryInterval": "10s", "serviceAccountName": "ptah-runner", "runnerImage": "registry.example.com/ptah-executor:dev"}
		spec["suspend"] = true
		if err := c.Create(ctx, u); err != nil {
			t.Fatal(err)
		}
	})

	// Each case breaks one rule of a valid PtahSchema; the refusal must name
	// the field and say what is wrong.
	refuseEach(t, ctx, c, validSchema, []fieldRefusal{
		{"ociRef with another scheme", []string{"spec", "desired", "ociRef"}, "https://127.0.0.1:5000/schemas/orders:v1", []string{"spec.desired.ociRef", "should match"}},
		{"ociRef without tag or digest", []string{"spec", "desired", "ociRef"}, "oci://127.0.0.1:5000/schemas/orders", []string{"spec.desired.ociRef", "should match"}},
		{"ociRef with a short digest", []string{"spec", "desired", "ociRef"}, "oci://127.0.0.1:5000/schemas/orders@sha256:abc", []string{"spec.desired.ociRef", "should match"}},
		{"ociRef missing", []string{"spec", "desired", "ociRef"}, nil, []string{"spec.desired.ociRef", "Required value"}},
		{"target without urlFrom", []string{"spec", "target", "urlFrom"}, nil, []string{"spec.target.urlFrom", "Required value"}},
		{"urlFrom without key", []string{"spec", "target", "urlFrom", "key"}, nil, []string{"spec.target.urlFrom.key", "Required value"}},
		{"urlFrom with a bad Secret name", []string{"spec", "target", "urlFrom", "name"}, "Orders_DB", []string{"spec.target.urlFrom.name", "should match"}},
		{"unknown engine", []string{"spec", "target", "engine"}, "mysql", []string{"spec.target.engine", "Unsupported value"}},
		{"interval below 30s", []string{"spec", "interval"}, "10s", []string{"spec.interval", "must be between 30s and 24h"}},
		{"interval above 24h", []string{"spec", "interval"}, "25h", []string{"spec.interval", "must be between 30s and 24h"}},
		{"interval not a duration", []string{"spec", "interval"}, "soon", []string{"spec.interval", "should match"}},
		{"deadline above 1h", []string{"spec", "execution", "deadline"}, "90m", []string{"spec.execution.deadline", "must be between 30s and 1h"}},
		{"failureRetryInterval below 10s", []string{"spec", "execution", "failureRetryInterval"}, "1s", []string{"spec.execution.failureRetryInterval", "must be between 10s and 1h"}},
		{"connectTimeout not shorter than deadline", []string{"spec", "execution"}, map[string]any{"deadline": "1m", "connectTimeout": "2m"}, []string{"spec.execution.connectTimeout", "connectTimeout must be shorter than deadline"}},
		{"lockTimeout above 10m", []string{"spec", "policy", "lockTimeout"}, "11m", []string{"spec.policy.lockTimeout", "must be between 1s and 10m"}},
		{"unknown apply policy", []string{"spec", "policy", "apply"}, "Sometimes", []string{"spec.policy.apply", "Unsupported value"}},
		{"protected table that is not a name", []string{"spec", "policy", "protectedTables"}, []any{"orders; DROP TABLE x"}, []string{"spec.policy.protectedTables[0]", "should match"}},
		{"runnerImage with a space", []string{"spec", "execution", "runnerImage"}, "ptah executor", []string{"spec.execution.runnerImage", "should match"}},
	})

	t.Run("PtahSchemaPlan spec update is refused", func(t *testing.T) {
		u := validPlan("orders-f1")
		if err := c.Create(ctx, u); err != nil {
			t.Fatal(err)
		}
		stmts, _, _ := unstructured.NestedSlice(u.Object, "spec", "statements")
		stmts[0].(map[string]any)["sql"] = "DROP TABLE orders"
		if err := unstructured.SetNestedSlice(u.Object, stmts, "spec", "statements"); err != nil {
			t.Fatal(err)
		}
		refusal(t, c.Update(ctx, u), "spec", "a plan is immutable")
	})

	t.Run("PtahSchemaPlan labels may still change", func(t *testing.T) {
		var p v1alpha1.PtahSchemaPlan
		if err := c.Get(ctx, client.ObjectKey{Namespace: namespace, Name: "orders-f1"}, &p); err != nil {
			t.Fatal(err)
		}
		p.Labels = map[string]string{"operator.ptah.run/schema": "orders"}
		if err := c.Update(ctx, &p); err != nil {
			t.Fatal(err)
		}
	})

	t.Run("PtahSchemaPlan whose destructive flag contradicts its statements is refused", func(t *testing.T) {
		u := validPlan("orders-f2")
		if err := unstructured.SetNestedField(u.Object, false, "spec", "destructive"); err != nil {
			t.Fatal(err)
		}
		refusal(t, c.Create(ctx, u), "spec", "destructive must be true exactly when a statement is destructive")
	})

	t.Run("PtahSchemaPlan statement with an unknown severity is refused", func(t *testing.T) {
		u := validPlan("orders-f3")
		stmts, _, _ := unstructured.NestedSlice(u.Object, "spec", "statements")
		stmts[0].(map[string]any)["severity"] = "risky"
		if err := unstructured.SetNestedSlice(u.Object, stmts, "spec", "statements"); err != nil {
			t.Fatal(err)
		}
		refusal(t, c.Create(ctx, u), "spec.statements[0].severity", "Unsupported value")
	})

	t.Run("PtahResultRecord with neither result nor error is refused", func(t *testing.T) {
		u := obj("PtahResultRecord", "empty", map[string]any{
			"subject": map[string]any{"kind": "PtahSchema", "name": "orders"}, "operationID": "op-1", "digest": "d",
		})
		refusal(t, c.Create(ctx, u), "spec", "a record carries a result, an error or both")
	})

	t.Run("PtahResultRecord spec update is refused", func(t *testing.T) {
		code := int32(2)
		r := &v1alpha1.PtahResultRecord{}
		r.Name, r.Namespace = "op-2", namespace
		r.Spec = v1alpha1.PtahResultRecordSpec{
			Subject:     v1alpha1.ResultSubject{Kind: v1alpha1.KindPtahSchema, Name: "orders"},
			OperationID: "op-2", Digest: "d2", ChildExitCode: &code,
			Error: &v1alpha1.OperationError{Code: "child_exit", Message: "ptah exited with code 2"},
		}
		if err := c.Create(ctx, r); err != nil {
			t.Fatal(err)
		}
		r.Spec.Error.Message = "all good"
		refusal(t, c.Update(ctx, r), "spec", "a result record is immutable")
	})

	t.Run("PtahSchema printer columns read status", func(t *testing.T) {
		printerColumns(t, api.Config, c)
	})
}
