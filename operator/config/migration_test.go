package config_test

import (
	"context"
	"errors"
	"slices"
	"testing"
	"time"

	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"ptah.run/operator/internal/testenv"
	v1alpha1 "ptah.run/operator/operator/api/v1alpha1"
)

const pinned = "oci://127.0.0.1:5000/shop/migrations:v3@" + digest

func validMigration(name string) *unstructured.Unstructured {
	return obj("PtahMigration", name, map[string]any{
		"target":     map[string]any{"urlFrom": map[string]any{"name": "orders-db", "key": "url"}},
		"migrations": map[string]any{"ociRef": pinned},
	})
}

func validMigrationPlan(name string) *unstructured.Unstructured {
	return obj("PtahMigrationPlan", name, map[string]any{
		"migrationRef":   map[string]any{"name": "orders"},
		"fingerprint":    "f1",
		"artifactDigest": digest,
		"baseVersion":    int64(2),
		"historyDigest":  digest,
		"pending": []any{
			map[string]any{"version": int64(3), "name": "add_note", "checksum": digest},
			map[string]any{"version": int64(4), "name": "index_note", "checksum": digest},
		},
	})
}

func validAcknowledgment(name string) *unstructured.Unstructured {
	return obj("PtahMigrationRunAcknowledgment", name, map[string]any{
		"migrationName": "orders", "operation": "op-1", "outcome": "Partial", "lastCommittedVersion": int64(3),
	})
}

// TestMigrationCRDValidation breaks one rule at a time of valid migration
// objects; the API server itself must refuse each, naming the field.
func TestMigrationCRDValidation(t *testing.T) {
	t.Parallel()
	api := testenv.StartAPIServer(t, testenv.WithCRDs("crd/bases"))
	c := newClient(t, api.Config)
	ctx := context.Background()

	t.Run("valid PtahMigration is accepted with the shared execution defaults", func(t *testing.T) {
		u := validMigration("valid")
		if err := c.Create(ctx, u); err != nil {
			t.Fatal(err)
		}
		var got v1alpha1.PtahMigration
		if err := c.Get(ctx, client.ObjectKeyFromObject(u), &got); err != nil {
			t.Fatal(err)
		}
		s := got.Spec
		if s.Target.Engine != v1alpha1.EnginePostgres || s.Policy.Apply != v1alpha1.ApplyOnApproval ||
			s.TargetVersion != v1alpha1.TargetVersionLatest ||
			s.Interval == nil || s.Interval.Duration != 5*time.Minute ||
			s.Execution.Deadline == nil || s.Execution.Deadline.Duration != 10*time.Minute ||
			s.Execution.ConnectTimeout == nil || s.Policy.LockTimeout == nil || s.Execution.FailureRetryInterval == nil {
			t.Errorf("defaults not applied: %+v", s)
		}
	})

	t.Run("a named target version and every field are accepted", func(t *testing.T) {
		u := validMigration("full")
		spec := u.Object["spec"].(map[string]any)
		spec["migrations"] = map[string]any{"ociRef": "oci://registry.example.com/team/migrations@" + digest, "registryAuthFrom": map[string]any{"name": "registry"}}
		spec["policy"] = map[string]any{"apply": "Always", "lockTimeout": "5s"}
		spec["targetVersion"] = "20260101"
		spec["interval"] = "30s"
		spec["execution"] = map[string]any{"deadline": "1h", "connectTimeout": "5m", "serviceAccountName": "ptah-runner"}
		spec["suspend"] = true
		if err := c.Create(ctx, u); err != nil {
			t.Fatal(err)
		}
	})

	refuseEach(t, ctx, c, validMigration, []fieldRefusal{
		// A tag can be moved: a version applied from one artifact must never
		// be read again from another.
		{"migrations by tag alone", []string{"spec", "migrations", "ociRef"}, "oci://127.0.0.1:5000/shop/migrations:v3", []string{"spec.migrations.ociRef", "must be pinned by digest", "a tag alone can be moved"}},
		{"migrations with a short digest", []string{"spec", "migrations", "ociRef"}, "oci://127.0.0.1:5000/shop/migrations@sha256:abc", []string{"spec.migrations.ociRef", "should match"}},
		{"migrations missing", []string{"spec", "migrations"}, nil, []string{"spec.migrations", "Required value"}},
		{"target version that is no number", []string{"spec", "targetVersion"}, "v3", []string{"spec.targetVersion", "should match"}},
		{"target version 0", []string{"spec", "targetVersion"}, "0", []string{"spec.targetVersion", "should match"}},
		{"unknown apply policy", []string{"spec", "policy", "apply"}, "Sometimes", []string{"spec.policy.apply", "Unsupported value"}},
		{"lockTimeout above 10m", []string{"spec", "policy", "lockTimeout"}, "11m", []string{"spec.policy.lockTimeout", "must be between 1s and 10m"}},
		{"connectTimeout not shorter than deadline (shared Execution rules)", []string{"spec", "execution"}, map[string]any{"deadline": "1m", "connectTimeout": "2m"}, []string{"spec.execution.connectTimeout", "connectTimeout must be shorter than deadline"}},
		{"a dev database (PtahSchema's, migrations load no desired SQL)", []string{"spec", "execution"}, map[string]any{"devDatabase": map[string]any{"image": "postgres:17"}}, []string{"spec.execution", "execution.devDatabase is PtahSchema's only"}},
		{"a dev database by URL", []string{"spec", "execution"}, map[string]any{"devDatabase": map[string]any{"urlFrom": map[string]any{"name": "dev", "key": "url"}}}, []string{"spec.execution", "execution.devDatabase is PtahSchema's only"}},
		{"interval below 30s", []string{"spec", "interval"}, "10s", []string{"spec.interval", "must be between 30s and 24h"}},
	})

	t.Run("PtahMigrationPlan spec update is refused", func(t *testing.T) {
		u := validMigrationPlan("orders-f1")
		if err := c.Create(ctx, u); err != nil {
			t.Fatal(err)
		}
		pending, _, _ := unstructured.NestedSlice(u.Object, "spec", "pending")
		pending[0].(map[string]any)["checksum"] = "sha256:" + digest[len(digest)-64:len(digest)-1] + "0"
		if err := unstructured.SetNestedSlice(u.Object, pending, "spec", "pending"); err != nil {
			t.Fatal(err)
		}
		refusal(t, c.Update(ctx, u), "spec", "a plan is immutable")
	})

	planCases := []struct {
		name    string
		pending []any
		want    []string
	}{
		{"versions out of order", []any{
			map[string]any{"version": int64(4), "name": "b", "checksum": digest},
			map[string]any{"version": int64(3), "name": "a", "checksum": digest},
		}, []string{"pending versions must be in ascending order"}},
		{"a version already at or below the base", []any{
			map[string]any{"version": int64(2), "name": "a", "checksum": digest},
		}, []string{"every pending version must be above baseVersion"}},
		{"a version twice", []any{
			map[string]any{"version": int64(3), "name": "a", "checksum": digest},
			map[string]any{"version": int64(3), "name": "b", "checksum": digest},
		}, []string{"spec.pending[1]", "Duplicate value"}},
		{"a checksum that is not sha256", []any{
			map[string]any{"version": int64(3), "name": "a", "checksum": "md5:abc"},
		}, []string{"spec.pending[0].checksum", "should match"}},
	}
	for i, tc := range planCases {
		t.Run("PtahMigrationPlan with "+tc.name+" is refused", func(t *testing.T) {
			u := validMigrationPlan("orders-bad-" + string(rune('a'+i)))
			if err := unstructured.SetNestedSlice(u.Object, tc.pending, "spec", "pending"); err != nil {
				t.Fatal(err)
			}
			refusal(t, c.Create(ctx, u), tc.want...)
		})
	}

	ackCases := []struct {
		name   string
		modify func(spec map[string]any)
		want   []string
	}{
		{"Partial without the last committed version", func(s map[string]any) { delete(s, "lastCommittedVersion") }, []string{"a Partial outcome names lastCommittedVersion"}},
		{"NotApplied with a committed version", func(s map[string]any) { s["outcome"] = "NotApplied" }, []string{"a NotApplied outcome committed nothing"}},
		{"an unknown outcome", func(s map[string]any) { s["outcome"] = "Probably" }, []string{"spec.outcome", "Unsupported value"}},
		{"no operation", func(s map[string]any) { delete(s, "operation") }, []string{"spec.operation", "Required value"}},
	}
	for i, tc := range ackCases {
		t.Run("PtahMigrationRunAcknowledgment with "+tc.name+" is refused", func(t *testing.T) {
			u := validAcknowledgment("ack-bad-" + string(rune('a'+i)))
			tc.modify(u.Object["spec"].(map[string]any))
			refusal(t, c.Create(ctx, u), tc.want...)
		})
	}

	t.Run("PtahMigrationRunAcknowledgment spec update is refused, even by an admin", func(t *testing.T) {
		u := validAcknowledgment("ack-1")
		if err := c.Create(ctx, u); err != nil {
			t.Fatal(err)
		}
		if err := unstructured.SetNestedField(u.Object, "Applied", "spec", "outcome"); err != nil {
			t.Fatal(err)
		}
		refusal(t, c.Update(ctx, u), "spec", "an acknowledgment is immutable")
	})
}

// TestMigrationStamps: the migration approval shares the schema approval's
// policies, the acknowledgment has its own; a forged identity is refused by
// the validating policy alone and overwritten by the mutating one, and the
// stamp never changes afterwards.
func TestMigrationStamps(t *testing.T) {
	t.Parallel()
	api := testenv.StartAPIServer(t, testenv.WithCRDs("crd/bases"))
	admin := newClient(t, api.Config)
	ctx := context.Background()
	alice := impersonated(t, ctx, admin, api.Config, "alice", []string{"dba"},
		[]string{"ptahmigrationapprovals", "ptahmigrationrunacknowledgments"}, []string{"create", "get", "update"})

	migApproval := func(name string, by *v1alpha1.Approver) *v1alpha1.PtahMigrationApproval {
		a := &v1alpha1.PtahMigrationApproval{
			Spec:       v1alpha1.PtahMigrationApprovalSpec{MigrationName: "orders", PlanName: "orders-f1", PlanFingerprint: "f1"},
			ApprovedBy: by,
		}
		a.Name, a.Namespace = name, namespace
		return a
	}
	three := int64(3)
	ack := func(name string, by *v1alpha1.Acknowledger) *v1alpha1.PtahMigrationRunAcknowledgment {
		a := &v1alpha1.PtahMigrationRunAcknowledgment{
			Spec: v1alpha1.PtahMigrationRunAcknowledgmentSpec{
				MigrationName: "orders", Operation: "op-1", Outcome: v1alpha1.RunPartial, LastCommittedVersion: &three,
			},
			AcknowledgedBy: by,
		}
		a.Name, a.Namespace = name, namespace
		return a
	}
	forgedAck := func() *v1alpha1.Acknowledger {
		return &v1alpha1.Acknowledger{Username: "admin", UID: "forged", Groups: []string{"system:masters"}}
	}

	t.Run("forgeries are refused by the validating policies alone", func(t *testing.T) {
		createFile(t, admin, "admission/approval-approver.yaml")
		createFile(t, admin, "admission/acknowledgment-acknowledger.yaml")
		var err error
		eventually(t, "the validating policy refuses a forged migration approver", func() error {
			if err = alice.Create(ctx, migApproval("probe", forgedApprover()), client.DryRunAll); err == nil {
				return errors.New("accepted")
			}
			return nil
		})
		refusal(t, err, "approvedBy", "must be stamped by admission with the requesting user alice")
		eventually(t, "the validating policy refuses a forged acknowledger", func() error {
			if err = alice.Create(ctx, ack("probe", forgedAck()), client.DryRunAll); err == nil {
				return errors.New("accepted")
			}
			return nil
		})
		refusal(t, err, "acknowledgedBy", "must be stamped by admission with the requesting user alice")
	})

	t.Run("forgeries are overwritten with the requesting user", func(t *testing.T) {
		createFile(t, admin, "admission/approval-stamp.yaml")
		createFile(t, admin, "admission/acknowledgment-stamp.yaml")
		eventually(t, "the mutating policies stamp", func() error {
			if err := alice.Create(ctx, migApproval("probe", forgedApprover()), client.DryRunAll); err != nil {
				return err
			}
			return alice.Create(ctx, ack("probe", forgedAck()), client.DryRunAll)
		})
		a := migApproval("orders-f1-alice", forgedApprover())
		if err := alice.Create(ctx, a); err != nil {
			t.Fatal(err)
		}
		if by := a.ApprovedBy; by == nil || by.Username != "alice" || by.UID == "forged" || !slices.Contains(by.Groups, "dba") || slices.Contains(by.Groups, "system:masters") {
			t.Errorf("migration approval approvedBy = %+v, want alice in dba", by)
		}
		k := ack("orders-op-1", forgedAck())
		if err := alice.Create(ctx, k); err != nil {
			t.Fatal(err)
		}
		var got v1alpha1.PtahMigrationRunAcknowledgment
		if err := admin.Get(ctx, client.ObjectKeyFromObject(k), &got); err != nil {
			t.Fatal(err)
		}
		if by := got.AcknowledgedBy; by == nil || by.Username != "alice" || by.UID == "forged" || !slices.Contains(by.Groups, "dba") || slices.Contains(by.Groups, "system:masters") {
			t.Errorf("acknowledgedBy = %+v, want alice in dba", by)
		}
		plain := ack("orders-op-1-plain", nil)
		if err := alice.Create(ctx, plain); err != nil {
			t.Fatal(err)
		}
		if plain.AcknowledgedBy == nil || plain.AcknowledgedBy.Username != "alice" {
			t.Errorf("an acknowledgment sent without acknowledger: acknowledgedBy = %+v, want alice", plain.AcknowledgedBy)
		}
	})

	t.Run("the acknowledger cannot be changed or removed afterwards", func(t *testing.T) {
		for _, forge := range []func(*v1alpha1.PtahMigrationRunAcknowledgment){
			func(a *v1alpha1.PtahMigrationRunAcknowledgment) { a.AcknowledgedBy.Username = "admin" },
			func(a *v1alpha1.PtahMigrationRunAcknowledgment) {
				a.AcknowledgedBy.Groups = append(a.AcknowledgedBy.Groups, "system:masters")
			},
			func(a *v1alpha1.PtahMigrationRunAcknowledgment) { a.AcknowledgedBy = nil },
		} {
			var a v1alpha1.PtahMigrationRunAcknowledgment
			if err := admin.Get(ctx, client.ObjectKey{Namespace: namespace, Name: "orders-op-1"}, &a); err != nil {
				t.Fatal(err)
			}
			forge(&a)
			refusal(t, admin.Update(ctx, &a), "acknowledgedBy")
		}
	})

	t.Run("the migration approver cannot be changed afterwards", func(t *testing.T) {
		var a v1alpha1.PtahMigrationApproval
		if err := alice.Get(ctx, client.ObjectKey{Namespace: namespace, Name: "orders-f1-alice"}, &a); err != nil {
			t.Fatal(err)
		}
		a.ApprovedBy.Username = "admin"
		refusal(t, alice.Update(ctx, &a), "approvedBy", "never changes")
	})
}
