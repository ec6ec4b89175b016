package controller

import (
	"encoding/json"
	"os"
	"os/exec"
	"strings"
	"testing"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"pgregory.net/rapid"

	v1alpha1 "ptah.run/operator/operator/api/v1alpha1"
	"ptah.run/operator/operator/report"
)

// resolveWithPtah resolves ref with the real ptah against the test
// registry: the digest, or "" and the error code when it refuses.
func resolveWithPtah(t interface{ Fatalf(string, ...any) }, ref string) (digest, code string) {
	cmd := exec.Command(shared.ptah, "oci", "resolve", ref, "--plain-http", "--json")
	cmd.Env = append(os.Environ(), "PTAH_OCI_REGISTRY="+shared.reg.Host, "PTAH_OCI_USERNAME="+shared.reg.Username, "PTAH_OCI_PASSWORD="+shared.reg.Password)
	out, _ := cmd.Output()
	var doc struct {
		Result struct {
			Digest string `json:"digest"`
		} `json:"result"`
		Error *struct {
			Code string `json:"code"`
		} `json:"error"`
	}
	if err := json.Unmarshal(out, &doc); err != nil {
		t.Fatalf("ptah oci resolve %s printed no document: %v\n%s", ref, err, out)
	}
	if doc.Error != nil {
		return "", doc.Error.Code
	}
	return doc.Result.Digest, ""
}

// TestAPinnedDigestIsWhatAResolveFinds: the Resolve is left out only for a
// reference whose digest a Resolve would have reported, whatever the tag
// beside it names now; a tag alone, a policy, or a reference ptah would
// refuse keeps the Resolve. The oracle is ptah itself against a real
// registry, over generated references.
func TestAPinnedDigestIsWhatAResolveFinds(t *testing.T) {
	// A repository nothing was pushed to: its tags resolve to nothing.
	empty := "oci://" + shared.reg.Host + "/shop/pinned"
	a := push(t, "pinned-a", schemaV1)
	b := push(t, "pinned-b", schemaV1+"\nCREATE TABLE pinned_b (id int);\n")
	da, _ := resolveWithPtah(t, a)
	db, _ := resolveWithPtah(t, b)
	if da == "" || db == "" || da == db {
		t.Fatalf("pushed artifacts resolve to %q and %q, want two digests", da, db)
	}
	// push writes to shop/schema; pinned references name that repository.
	repo := "oci://" + shared.reg.Host + "/shop/schema"
	var skipped, kept int
	rapid.Check(t, func(t *rapid.T) {
		digest := rapid.SampledFrom([]string{da, db, "sha256:" + strings.Repeat("e", 64)}).Draw(t, "digest")
		tag := rapid.SampledFrom([]string{"", "pinned-a", "pinned-b", "moved"}).Draw(t, "tag")
		ref := rapid.SampledFrom([]string{
			repo + "@" + digest,
			repo + ":" + tag + "@" + digest,
			repo + ":" + tag,
			empty + ":" + tag,
			empty + "@" + digest,
			strings.TrimPrefix(repo, "oci://") + "@" + digest,
			repo + "@" + strings.ToUpper(digest),
			repo + "@sha256:" + digest[len("sha256:"):len("sha256:")+10],
		}).Draw(t, "ref")
		withPolicy := rapid.Bool().Draw(t, "policy")

		s := &v1alpha1.PtahSchema{Spec: v1alpha1.PtahSchemaSpec{Desired: v1alpha1.Desired{OCIRef: ref}}}
		s.Generation = 1
		if withPolicy {
			s.Spec.Desired.VerificationPolicyFrom = &v1alpha1.LocalRef{Name: "policy"}
		}
		next := (&SchemaReconciler{}).first(s)
		if next == v1alpha1.OperationResolve {
			kept++
			if s.Status.Source != nil {
				t.Fatalf("first(%s) claims a Resolve but recorded a source %+v", ref, s.Status.Source)
			}
			return
		}
		skipped++
		if withPolicy {
			t.Fatalf("first(%s) left the Resolve out under a verification policy", ref)
		}
		got, code := resolveWithPtah(t, ref)
		if code != "" && code != string(report.NotFound) {
			t.Fatalf("first(%s) left the Resolve out, but ptah refuses the reference itself (%s): its Resolve would have said so", ref, code)
		}
		if code == "" && got != s.Status.Source.ResolvedDigest {
			t.Fatalf("first(%s) recorded %s, a Resolve finds %s", ref, s.Status.Source.ResolvedDigest, got)
		}
		if code != "" && s.Status.Source.ResolvedDigest != digest {
			t.Fatalf("first(%s) recorded %s for a digest the registry does not hold, want the pinned %s", ref, s.Status.Source.ResolvedDigest, digest)
		}
		if next != v1alpha1.OperationPlan {
			t.Fatalf("first(%s) on a never-proved schema = %s, want a Plan", ref, next)
		}
		if !conditionIs(s, v1alpha1.ConditionArtifactResolved, metav1.ConditionTrue, v1alpha1.ReasonResolved) ||
			!conditionIs(s, v1alpha1.ConditionArtifactVerified, metav1.ConditionTrue, v1alpha1.ReasonNoPolicy) {
			t.Fatalf("first(%s) left conditions %s", ref, conditions(s))
		}
	})
	if skipped == 0 || kept == 0 {
		t.Errorf("generated %d references whose Resolve is left out and %d that keep it; both must occur", skipped, kept)
	}
}

// TestPinnedDigestIsNotResolved: a schema whose spec pins a digest and names
// no policy runs no Resolve Pod, neither at its first apply nor at its
// re-check; its re-check is the Observe alone. One that names a policy is
// resolved (and verified) all the same, and a pinned digest the registry
// does not hold fails at the pull and is never applied.
func TestPinnedDigestIsNotResolved(t *testing.T) {
	t.Parallel()
	digest, _ := resolveWithPtah(t, shared.refV1)
	pinned := "oci://" + shared.reg.Host + "/shop/schema@" + digest

	t.Run("first apply and re-check", func(t *testing.T) {
		t.Parallel()
		e := newEnv(t)
		e.schema(func(s *v1alpha1.PtahSchema) {
			s.Spec.Desired.OCIRef = pinned
			s.Spec.Interval = &metav1.Duration{Duration: 30 * time.Second}
		})
		s := inSync(e)
		if n := len(e.jobs("ptah-resolve-")); n != 0 {
			t.Errorf("%d Resolve Jobs for a pinned digest, want none", n)
		}
		if src := s.Status.Source; src == nil || src.ResolvedDigest != digest || s.Status.Applied == nil || s.Status.Applied.ArtifactDigest != digest {
			t.Errorf("status.source %+v, status.applied %+v; want the pinned %s", s.Status.Source, s.Status.Applied, digest)
		}
		if c := findCondition(s, v1alpha1.ConditionArtifactResolved); c.Status != metav1.ConditionTrue || !strings.Contains(c.Message, "nothing to resolve") {
			t.Errorf("ArtifactResolved %+v, want True saying the digest is pinned", c)
		}
		shared.pg.Exec(t, e.db, "ALTER TABLE orders DROP COLUMN note")
		e.await("shop", "DriftDetected=True after spec.interval", 30*time.Second+converge,
			condition(v1alpha1.ConditionDriftDetected, metav1.ConditionTrue, v1alpha1.ReasonDriftFound))
		inSync(e)
		shared.pg.Exec(t, e.db, "SELECT note FROM orders")
		if n := len(e.jobs("ptah-resolve-")); n != 0 {
			t.Errorf("%d Resolve Jobs after the re-check, want none", n)
		}
		if n := len(e.jobs("ptah-observe-")); n == 0 {
			t.Errorf("the drift was found with no Observe Job")
		}
	})

	t.Run("under a policy", func(t *testing.T) {
		t.Parallel()
		e := newEnv(t)
		policy(e, "policy", shared.reg.Host+"/shop/")
		e.schema(verifiedBy("policy"), func(s *v1alpha1.PtahSchema) { s.Spec.Desired.OCIRef = pinned })
		s := inSync(e)
		if n := len(e.jobs("ptah-resolve-")); n == 0 {
			t.Errorf("no Resolve Job for a pinned digest under a policy: nothing verified it")
		}
		if !conditionIs(s, v1alpha1.ConditionArtifactVerified, metav1.ConditionTrue, v1alpha1.ReasonVerified) {
			t.Errorf("ArtifactVerified is not True (Verified): %s", conditions(s))
		}
	})

	t.Run("a digest the registry does not hold", func(t *testing.T) {
		t.Parallel()
		e := newEnv(t)
		absent := "sha256:" + strings.Repeat("e", 64)
		e.schema(func(s *v1alpha1.PtahSchema) {
			s.Spec.Desired.OCIRef = "oci://" + shared.reg.Host + "/shop/schema@" + absent
		})
		s := e.await("shop", "ReconciliationFailed=True", converge, condition(v1alpha1.ConditionReconciliationFailed, metav1.ConditionTrue, v1alpha1.ReasonOperationFailed))
		c := findCondition(s, v1alpha1.ConditionReconciliationFailed)
		if !strings.Contains(c.Message, absent) || !strings.Contains(c.Message, "not found") {
			t.Errorf("ReconciliationFailed says %q; want it to name the missing artifact and say it is not found", c.Message)
		}
		if n := len(e.jobs("ptah-apply-")); n != 0 {
			t.Errorf("%d Apply Jobs for an artifact that does not exist", n)
		}
		if conditionIs(s, v1alpha1.ConditionInSync, metav1.ConditionTrue, v1alpha1.ReasonScopedConverged) {
			t.Errorf("InSync True for an artifact that does not exist: %s", conditions(s))
		}
		e.assertNoPassword()
	})
}
