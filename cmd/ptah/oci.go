package main

import (
	"context"
	"flag"
	"fmt"
	"sort"

	"ptah.run/operator/operator/artifact"
	"ptah.run/operator/operator/report"
)

type resolvedText struct{ *artifact.Resolved }

func (r resolvedText) Text() string {
	return fmt.Sprintf("%s\nmediaType %s\nartifactType %s\nsize %d\n", r.Reference, r.MediaType, r.ArtifactType, r.Size)
}

func ociResolve(fs *flag.FlagSet) action {
	client := newOCIClient(fs)
	return func(ctx context.Context, args []string) (any, bool, error) {
		ref, err := oneArg(args, "the reference")
		if err != nil {
			return nil, false, err
		}
		ins, err := client().Inspect(ctx, ref)
		if err != nil {
			return nil, false, err
		}
		return resolvedText{&ins.Resolved}, false, nil
	}
}

func ociInspect(fs *flag.FlagSet) action {
	client := newOCIClient(fs)
	return func(ctx context.Context, args []string) (any, bool, error) {
		ref, err := oneArg(args, "the reference")
		if err != nil {
			return nil, false, err
		}
		ins, err := client().Inspect(ctx, ref)
		if err != nil {
			return nil, false, err
		}
		return ins, false, nil
	}
}

// verification is what oci verify reports, refused or not.
type verification struct {
	artifact.Resolved
	Verified bool               `json:"verified"`
	Findings []artifact.Finding `json:"findings"`
}

func ociVerify(fs *flag.FlagSet) action {
	policyFile := fs.String("policy", "", "verification policy file (YAML or JSON)")
	client := newOCIClient(fs)
	return func(ctx context.Context, args []string) (any, bool, error) {
		ref, err := oneArg(args, "the reference")
		if err != nil {
			return nil, false, err
		}
		if *policyFile == "" {
			return nil, false, report.Errorf(report.Usage, "pass --policy FILE")
		}
		policy, err := artifact.ReadPolicy(*policyFile)
		if err != nil {
			return nil, false, err
		}
		ins, err := client().Inspect(ctx, ref)
		if err != nil {
			return nil, false, err
		}
		v := verification{Resolved: ins.Resolved, Findings: policy.Verify(ins)}
		v.Verified = len(v.Findings) == 0
		if !v.Verified {
			first := v.Findings[0]
			return v, false, report.Errorf(report.PolicyRefused, "%s breaks %d rule(s) of policy %s; first: %s: %s", ins.Reference, len(v.Findings), *policyFile, first.Rule, first.Message)
		}
		return v, false, nil
	}
}

func sortedKeys[V any](m map[string]V) []string {
	keys := make([]string, 0, len(m))
	for k := range m {
		keys = append(keys, k)
	}
	sort.Strings(keys)
	return keys
}
