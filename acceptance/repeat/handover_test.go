package repeat

import (
	"strings"
	"testing"

	"ptah.run/operator/recorder/scenario"
)

func TestRewriteReplacesOnlyTheHandOverCall(t *testing.T) {
	cases := []struct {
		name, run, want string
		calls           []string
		files           []string
	}{
		{
			name: "seed 002 step 1",
			run: "APPLY=Always demo/bin/lab manifest storefront \"$(cat demo/.lab/digest)\" \\\n" +
				"  | sed 's/name: demo-database/name: demo-database-broken/' \\\n  | kubectl apply -f -",
			want:  "cat step1-manifest.yaml \\\n  | sed 's/name: demo-database/name: demo-database-broken/' \\\n  | kubectl apply -f -",
			calls: []string{`APPLY=Always demo/bin/lab manifest storefront "$(cat demo/.lab/digest)"`},
			files: []string{"step1-manifest.yaml"},
		},
		{
			name:  "credentials in a substitution",
			run:   `eval "$(demo/bin/lab credentials)" && echo "$PTAH_OCI_REGISTRY"`,
			want:  `eval "$(cat step1-credentials)" && echo "$PTAH_OCI_REGISTRY"`,
			calls: []string{"demo/bin/lab credentials"},
			files: []string{"step1-credentials"},
		},
		{
			name: "two manifests, ./ spelling",
			run:  "APPLY=Never ./demo/bin/lab manifest storefront \"$(cat demo/.lab/digest)\" | kubectl apply -f -\nAPPLY=Always demo/bin/lab manifest storefront \"$(cat demo/.lab/digest-v2)\" | kubectl diff -f -",
			want: "cat step1-manifest.yaml | kubectl apply -f -\ncat step1-manifest-2.yaml | kubectl diff -f -",
			calls: []string{`APPLY=Never ./demo/bin/lab manifest storefront "$(cat demo/.lab/digest)"`,
				`APPLY=Always demo/bin/lab manifest storefront "$(cat demo/.lab/digest-v2)"`},
			files: []string{"step1-manifest.yaml", "step1-manifest-2.yaml"},
		},
		{
			name: "no lab at all",
			run:  `kubectl -n "$NAMESPACE" get ptahschema storefront`,
			want: `kubectl -n "$NAMESPACE" get ptahschema storefront`,
		},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			r, err := rewrite(1, c.run)
			if err != nil {
				t.Fatal(err)
			}
			if r.Run != c.want {
				t.Errorf("rewritten:\n%s\nwant:\n%s", r.Run, c.want)
			}
			if len(r.HandOvers) != len(c.calls) {
				t.Fatalf("%d hand-overs, want %d: %+v", len(r.HandOvers), len(c.calls), r.HandOvers)
			}
			for i, h := range r.HandOvers {
				if h.Call != c.calls[i] || h.File != c.files[i] {
					t.Errorf("hand-over %d: %q -> %s, want %q -> %s", i, h.Call, h.File, c.calls[i], c.files[i])
				}
			}
		})
	}
}

func TestRewriteRefusesWhatOnlyTheLabCanDo(t *testing.T) {
	cases := map[string]struct{ run, why string }{
		"psql verb":        {`demo/bin/lab psql 'DROP TABLE customers'`, "`demo/bin/lab psql`"},
		"publish verb":     {`demo/bin/lab publish v2 > digest`, "`demo/bin/lab publish`"},
		"lab file outside": {`kubectl apply -f demo/manifests/storefront.yaml`, "outside a hand-over"},
		"digest outside":   {`echo "$(cat demo/.lab/digest)"`, "outside a hand-over"},
		"unparsable":       {`kubectl get (`, "does not parse"},
	}
	for name, c := range cases {
		t.Run(name, func(t *testing.T) {
			_, err := rewrite(3, c.run)
			if err == nil {
				t.Fatalf("rewrite(%q) was accepted", c.run)
			}
			if !strings.Contains(err.Error(), c.why) || !strings.Contains(err.Error(), "step 3") {
				t.Errorf("refusal %q does not name step 3 and %q", err, c.why)
			}
		})
	}
}

// The census must be repeatable by a reader: no step may need the lab
// beyond its two hand-overs.
func TestEveryScenarioCanBeRepeated(t *testing.T) {
	all, err := scenario.LoadDir("../../scenarios")
	if err != nil {
		t.Fatal(err)
	}
	if len(all) < 10 {
		t.Errorf("%d scenarios, want the census of ten", len(all))
	}
	for _, s := range all {
		p, err := planFor(s)
		if err != nil {
			t.Errorf("%v", err)
			continue
		}
		for i, st := range p.Scenario.Steps {
			if strings.Contains(st.Run, labCommand) {
				t.Errorf("%s step %d still calls the lab: %s", s.ID, i+1, st.Run)
			}
		}
		if p.Scenario.Reset != nil || len(p.Reset) != len(s.Reset) {
			t.Errorf("%s: the reset belongs to the preparation, got %d in the steps' scenario and %d prepared", s.ID, len(p.Scenario.Reset), len(p.Reset))
		}
	}
}

// failure-recovery is seed 002's session: the same nine claims in the same
// order.
func TestFailureRecoveryClaimsAreTheSeeds(t *testing.T) {
	s, err := scenario.Load("../../scenarios/failure-recovery.yaml")
	if err != nil {
		t.Fatal(err)
	}
	seed := []Claim{
		{1, `exits 0, prints "created"`},
		{2, "ptahschema/storefront: ReconciliationFailed=True (OperationFailed)"},
		{2, `exits 0, prints "Failed"`},
		{3, `exits 0, prints "storefront"`},
		{4, `exits 0, never prints "nobody:nobody"`},
		{5, `exits 0, prints "patched"`},
		{6, "ptahschema/storefront: InSync=True (ScopedConverged)"},
		{6, `exits 0, prints "customers"`},
		{6, "ptahschema/storefront: ReconciliationFailed=False (Succeeded)"},
	}
	got := claims(s)
	if len(got) != len(seed) {
		t.Fatalf("%d claims, the seed has %d: %v", len(got), len(seed), got)
	}
	for i := range seed {
		if got[i] != seed[i] {
			t.Errorf("claim %d is step %d %q, the seed's is step %d %q", i+1, got[i].Step, got[i].Text, seed[i].Step, seed[i].Text)
		}
	}
	seedCommands := []string{
		"APPLY=Always demo/bin/lab manifest storefront \"$(cat demo/.lab/digest)\" \\\n  | sed 's/name: demo-database/name: demo-database-broken/' \\\n  | kubectl apply -f -",
		"kubectl -n \"$NAMESPACE\" get ptahschema storefront -o json \\\n  | jq -r '.status.phase, (.status.conditions[] | select(.type == \"ReconciliationFailed\") | .message)'",
		`kubectl -n "$NAMESPACE" get events --field-selector involvedObject.name=storefront --sort-by=.lastTimestamp | tail -5`,
		`kubectl -n "$NAMESPACE" get ptahschema storefront -o json | jq -r '.status | tostring' | head -c 400`,
		"kubectl -n \"$NAMESPACE\" patch ptahschema storefront --type=merge \\\n  -p '{\"spec\":{\"target\":{\"urlFrom\":{\"name\":\"demo-database\",\"key\":\"url\"}}}}'",
		`kubectl -n "$NAMESPACE" exec deploy/demo-psql -- psql -c "\dt"`,
	}
	for i, st := range s.Steps {
		if st.Run != seedCommands[i] {
			t.Errorf("step %d runs\n%s\nthe seed's runs\n%s", i+1, st.Run, seedCommands[i])
		}
	}
}

// The published session is compared as the repetition runs it: only the
// steps that call the lab read their hand-over file instead, every other
// command stays as published.
func TestPublishedSessionIsComparedWithItsHandOvers(t *testing.T) {
	pub, err := Load(Options{ID: "failure-recovery", Scenarios: "../../scenarios", Recording: "../../demo/recordings/runs.json"})
	if err != nil {
		t.Fatal(err)
	}
	events := pub.Recorded.Events
	got := handedOver(events, pub.Plan)
	if len(got) != len(events) {
		t.Fatalf("%d events, want the published %d", len(got), len(events))
	}
	for i, e := range got {
		if e.Step == 1 {
			if !strings.HasPrefix(e.Command, "cat step1-manifest.yaml") || strings.Contains(e.Command, labCommand) {
				t.Errorf("step 1 compared as %q, want it reading step1-manifest.yaml", e.Command)
			}
			if !strings.Contains(e.Command, "kubectl apply -f -") {
				t.Errorf("step 1 lost the rest of its command: %q", e.Command)
			}
			if !strings.Contains(events[i].Command, labCommand) {
				t.Errorf("the published events were changed in place: %q", events[i].Command)
			}
			continue
		}
		if e.Command != events[i].Command {
			t.Errorf("step %d, which calls no lab, compared as %q, published %q", e.Step, e.Command, events[i].Command)
		}
	}
}
