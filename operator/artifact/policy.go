package artifact

import (
	"fmt"
	"os"
	"slices"
	"sort"
	"strings"

	"sigs.k8s.io/yaml"

	"ptah.run/operator/operator/report"
)

// Policy is a verification policy, read from YAML or JSON. An empty rule
// allows anything; every rule given must hold.
type Policy struct {
	// AllowedArtifactTypes lists the artifact types accepted.
	AllowedArtifactTypes []string `json:"allowedArtifactTypes,omitempty"`
	// AllowedRepositoryPrefixes lists prefixes of "HOST/REPOSITORY".
	AllowedRepositoryPrefixes []string `json:"allowedRepositoryPrefixes,omitempty"`
	// MaxSizeBytes bounds the manifest, config and layers together.
	MaxSizeBytes int64 `json:"maxSizeBytes,omitempty"`
	// RequiredAnnotations must be on the manifest; an empty value accepts
	// any value.
	RequiredAnnotations map[string]string `json:"requiredAnnotations,omitempty"`
}

// Finding is one rule an artifact breaks.
type Finding struct {
	Rule    string `json:"rule"`
	Message string `json:"message"`
}

// ReadPolicy reads a policy file, refusing unknown keys so that a misspelt
// rule is not silently ignored.
func ReadPolicy(path string) (*Policy, error) {
	b, err := os.ReadFile(path)
	if err != nil {
		return nil, report.Errorf(report.Usage, "read policy: %v", err)
	}
	var p Policy
	if err := yaml.UnmarshalStrict(b, &p); err != nil {
		return nil, report.Errorf(report.Parse, "policy %s: %v", path, err)
	}
	if p.MaxSizeBytes < 0 {
		return nil, report.Errorf(report.Parse, "policy %s: maxSizeBytes must not be negative", path)
	}
	return &p, nil
}

// Verify lists every rule of p that ins breaks, in the order the rules are
// declared above.
func (p *Policy) Verify(ins *Inspection) []Finding {
	findings := []Finding{}
	if len(p.AllowedArtifactTypes) > 0 && !slices.Contains(p.AllowedArtifactTypes, ins.ArtifactType) {
		findings = append(findings, Finding{"allowedArtifactTypes", fmt.Sprintf("artifact type %q is not one of %s", ins.ArtifactType, strings.Join(p.AllowedArtifactTypes, ", "))})
	}
	repo := ins.Registry + "/" + ins.Repository
	if len(p.AllowedRepositoryPrefixes) > 0 && !slices.ContainsFunc(p.AllowedRepositoryPrefixes, func(prefix string) bool { return strings.HasPrefix(repo, prefix) }) {
		findings = append(findings, Finding{"allowedRepositoryPrefixes", fmt.Sprintf("repository %s is under none of %s", repo, strings.Join(p.AllowedRepositoryPrefixes, ", "))})
	}
	if p.MaxSizeBytes > 0 && ins.Size > p.MaxSizeBytes {
		findings = append(findings, Finding{"maxSizeBytes", fmt.Sprintf("artifact is %d bytes, over the %d allowed", ins.Size, p.MaxSizeBytes)})
	}
	keys := make([]string, 0, len(p.RequiredAnnotations))
	for k := range p.RequiredAnnotations {
		keys = append(keys, k)
	}
	sort.Strings(keys)
	for _, k := range keys {
		want := p.RequiredAnnotations[k]
		got, ok := ins.Annotations[k]
		switch {
		case !ok:
			findings = append(findings, Finding{"requiredAnnotations", fmt.Sprintf("annotation %s is missing", k)})
		case want != "" && got != want:
			findings = append(findings, Finding{"requiredAnnotations", fmt.Sprintf("annotation %s is %q, not %q", k, got, want)})
		}
	}
	return findings
}
