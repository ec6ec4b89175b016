package artifact

import (
	"strings"
	"testing"

	"pgregory.net/rapid"
)

// TestPinnedNamesTheDigestAlone: whatever tag or digest a reference named,
// Pinned addresses the same repository on the same registry by the digest
// given and nothing else, so a pull of it fetches what was resolved even
// after the tag moved. References are generated with ports, nested
// repositories, tags, digests, both, and no scheme.
func TestPinnedNamesTheDigestAlone(t *testing.T) {
	hex := func(t *rapid.T, label string) string {
		return "sha256:" + rapid.StringMatching(`[0-9a-f]{64}`).Draw(t, label)
	}
	rapid.Check(t, func(t *rapid.T) {
		host := rapid.SampledFrom([]string{"registry.example", "localhost", "127.0.0.1", "registry.ptah-demo.svc"}).Draw(t, "host")
		if rapid.Bool().Draw(t, "port") {
			host += ":" + rapid.StringMatching(`[1-9][0-9]{1,4}`).Draw(t, "portNumber")
		}
		repo := strings.Join(rapid.SliceOfN(rapid.StringMatching(`[a-z0-9]+([._-][a-z0-9]+)?`), 1, 3).Draw(t, "path"), "/")
		ref := host + "/" + repo
		if rapid.Bool().Draw(t, "tagged") {
			ref += ":" + rapid.StringMatching(`[A-Za-z0-9_][A-Za-z0-9_.-]{0,20}`).Draw(t, "tag")
		}
		if rapid.Bool().Draw(t, "digested") {
			ref += "@" + hex(t, "oldDigest")
		}
		if rapid.Bool().Draw(t, "scheme") {
			ref = "oci://" + ref
		}
		digest := hex(t, "digest")
		got := Pinned(ref, digest)
		r, err := ParseRef(got)
		if err != nil {
			t.Fatalf("Pinned(%q) = %q, which does not parse: %v", ref, got, err)
		}
		if r.Registry != host || r.Repository != repo || r.Reference != digest {
			t.Fatalf("Pinned(%q) = %q: registry %q, repository %q, reference %q; want %q, %q, %q", ref, got, r.Registry, r.Repository, r.Reference, host, repo, digest)
		}
	})
}
