package controller

import (
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"strings"
	"time"

	"ptah.run/operator/internal/runner"
	v1alpha1 "ptah.run/operator/operator/api/v1alpha1"
)

// ControllerStateVersion names the shape of the state this controller keeps
// in status; a change retires evidence produced under the old shape.
const ControllerStateVersion = "v1"

// Binding is what a manager executes operations under: the executor image,
// the ptah version it holds, the runner protocol and the controller-state
// version. Evidence produced under one binding is not trusted under another.
type Binding struct {
	ExecutorImage string
	PtahVersion   string
	Protocol      string
}

// of is the binding a schema's operations run under (its runnerImage wins).
func (b Binding) of(s subject) v1alpha1.ExecutionBinding {
	img := b.ExecutorImage
	if ri := s.SubjectExecution().RunnerImage; ri != "" {
		img = ri
	}
	return v1alpha1.ExecutionBinding{
		ExecutorImage:          img,
		PtahVersion:            b.PtahVersion,
		RunnerProtocol:         b.Protocol,
		ControllerStateVersion: ControllerStateVersion,
	}
}

// bindingID is a short stable name for a binding, as a claim records it.
func bindingID(b v1alpha1.ExecutionBinding) string {
	return ControllerStateVersion + "-" + hexDigest(b)[:32]
}

// claimInputs are what an operation is computed from; a change of any gives a
// different claim, hence a different Job.
type claimInputs struct {
	UID        string `json:"uid"`
	Generation int64  `json:"generation"`
	// Spec is the subject's spec; it hashes as its JSON, whatever the kind.
	Spec           any    `json:"spec"`
	ResolvedDigest string `json:"resolvedDigest,omitempty"`
	Plan           string `json:"plan,omitempty"`
	// Claimed makes each claim new: an operation repeated with the same
	// inputs (a retry, the next interval's read) must not find the last
	// one's Job and record.
	Claimed int64 `json:"claimed"`
}

// subjectClaim is the claim of attempt attempt of operation typ on s, of
// either kind: spec is s's spec and plan the fingerprint of the plan an
// Apply runs; every operation after Resolve is bound to the digest it
// resolved.
func subjectClaim(s subject, spec any, plan string, typ v1alpha1.OperationType, attempt int32, binding v1alpha1.ExecutionBinding, claimed time.Time) *v1alpha1.ActiveOperation {
	in := claimInputs{UID: string(s.GetUID()), Generation: s.GetGeneration(), Spec: spec, Claimed: claimed.UnixNano()}
	if src := s.Operation().Source; src != nil && typ != v1alpha1.OperationResolve {
		in.ResolvedDigest = src.ResolvedDigest
	}
	if typ == v1alpha1.OperationApply {
		in.Plan = plan
	}
	input := "sha256:" + hexDigest(in)
	bid := bindingID(binding)
	coord := hexDigest(struct {
		UID     string                 `json:"uid"`
		Type    v1alpha1.OperationType `json:"type"`
		Input   string                 `json:"input"`
		Attempt int32                  `json:"attempt"`
		Binding string                 `json:"binding"`
	}{string(s.GetUID()), typ, input, attempt, bid})
	return &v1alpha1.ActiveOperation{
		Type:               typ,
		ID:                 "sha256:" + hexDigest("operation\x00"+coord),
		InputFingerprint:   input,
		Attempt:            attempt,
		JobName:            jobName(typ, s.GetName(), coord[:16]),
		CoordinationDigest: "sha256:" + coord,
		ExecutionBindingID: bid,
	}
}

// claimHex is the 16 hex digits that name a claim's Job and credential.
func claimHex(c *v1alpha1.ActiveOperation) string {
	return strings.TrimPrefix(c.CoordinationDigest, "sha256:")[:16]
}

// jobName is ptah-<op>-<schema>-<16 hex>, the schema name shortened so the
// whole fits a label value (the Job controller labels Pods with it).
func jobName(typ v1alpha1.OperationType, schema, hex16 string) string {
	prefix := "ptah-" + runnerOp(typ) + "-"
	room := 63 - len(prefix) - 1 - len(hex16)
	if len(schema) > room {
		schema = strings.TrimRight(schema[:room], "-.")
	}
	return prefix + schema + "-" + hex16
}

// operations maps each operation type to the protocol's name for it and the
// phase a dispatched operation of that type shows.
var operations = map[v1alpha1.OperationType]struct {
	op    string
	phase v1alpha1.Phase
}{
	v1alpha1.OperationResolve: {runner.OpResolve, v1alpha1.PhaseResolving},
	v1alpha1.OperationVerify:  {runner.OpVerify, v1alpha1.PhaseVerifying},
	v1alpha1.OperationObserve: {runner.OpObserve, v1alpha1.PhaseObserving},
	v1alpha1.OperationPlan:    {runner.OpPlan, v1alpha1.PhasePlanning},
	v1alpha1.OperationApply:   {runner.OpApply, v1alpha1.PhaseApplying},
	v1alpha1.OperationProof:   {runner.OpProof, v1alpha1.PhaseVerifyingConvergence},
}

// runnerOp is the protocol's name for an operation type.
func runnerOp(typ v1alpha1.OperationType) string {
	if o, ok := operations[typ]; ok {
		return o.op
	}
	return strings.ToLower(string(typ))
}

// phaseOf is the phase a dispatched operation shows.
func phaseOf(typ v1alpha1.OperationType) v1alpha1.Phase {
	if o, ok := operations[typ]; ok {
		return o.phase
	}
	return v1alpha1.PhasePending
}

// readOnly operations never change the database; a failure of one is simply
// tried again.
func readOnly(typ v1alpha1.OperationType) bool { return typ != v1alpha1.OperationApply }

func hexDigest(v any) string {
	var b []byte
	if s, ok := v.(string); ok {
		b = []byte(s)
	} else {
		var err error
		if b, err = json.Marshal(v); err != nil {
			panic(err) // only plain structs are hashed
		}
	}
	sum := sha256.Sum256(b)
	return hex.EncodeToString(sum[:])
}

// registryHost is the host[:port] of an oci:// reference.
func registryHost(ociRef string) string {
	h := strings.TrimPrefix(ociRef, "oci://")
	if i := strings.Index(h, "/"); i >= 0 {
		h = h[:i]
	}
	return h
}

// planName is the PtahSchemaPlan's name, derived from its fingerprint.
func planName(schema, fingerprint string) string {
	hex16 := hexDigest(fingerprint)[:16]
	if h := strings.TrimPrefix(fingerprint, "sha256:"); h != fingerprint && len(h) >= 16 {
		hex16 = h[:16]
	}
	room := 253 - 1 - len(hex16)
	if len(schema) > room {
		schema = schema[:room]
	}
	return schema + "-" + hex16
}
