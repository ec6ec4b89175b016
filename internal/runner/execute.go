package runner

import (
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"

	v1alpha1 "ptah.run/operator/operator/api/v1alpha1"
	"ptah.run/operator/operator/artifact"
	"ptah.run/operator/operator/report"
	"ptah.run/operator/operator/schema"
)

// Files the runner writes in its work directory.
const (
	desiredFile = "desired.sql"
	planFile    = "plan.json"
	policyFile  = "policy.json"
	// migrationsDir receives the pulled migration files.
	migrationsDir = "migrations"
)

// document is ptah's --json report with its result kept raw until the
// operation says how to read it.
type document struct {
	APIVersion string          `json:"apiVersion"`
	Command    string          `json:"command"`
	ExitCode   int             `json:"exitCode"`
	Result     json.RawMessage `json:"result,omitempty"`
	Error      *report.Error   `json:"error,omitempty"`
}

// commands are the ptah invocations of op, in order; each runs only if the
// one before it succeeded.
func commands(op *Operation) [][]string {
	oci := func(args ...string) []string {
		if op.PlainHTTP {
			args = append(args, "--plain-http")
		}
		return append(args, "--json")
	}
	db := func(args ...string) []string {
		if op.ConnectTimeout != "" {
			args = append(args, "--connect-timeout", op.ConnectTimeout)
		}
		for _, e := range op.Exclude {
			args = append(args, "--exclude", e)
		}
		return args
	}
	pull := oci("schema", "pull", op.OCIRef, "--out", desiredFile)
	pullMigrations := oci("migrations", "pull", op.OCIRef, "--dir", migrationsDir)
	connect := func(args ...string) []string {
		if op.ConnectTimeout != "" {
			args = append(args, "--connect-timeout", op.ConnectTimeout)
		}
		return append(args, "--json")
	}
	switch op.Type {
	case OpMigrationObserve:
		status := []string{"migrations", "status", "--dir", migrationsDir}
		if op.LockTimeout != "" {
			status = append(status, "--lock-timeout", op.LockTimeout)
		}
		return [][]string{pullMigrations, connect(status...)}
	case OpMigrationApply:
		up := []string{"migrations", "up", "--dir", migrationsDir, "--expect-sequence", sequence(op.ExpectSequence)}
		if op.LockTimeout != "" {
			up = append(up, "--lock-timeout", op.LockTimeout)
		}
		if op.TargetVersion > 0 {
			up = append(up, "--to", strconv.FormatInt(op.TargetVersion, 10))
		}
		return [][]string{pullMigrations, connect(up...)}
	case OpResolve:
		if op.Verify {
			return [][]string{oci("oci", "verify", op.OCIRef, "--policy", policyFile)}
		}
		return [][]string{oci("oci", "resolve", op.OCIRef)}
	case OpVerify:
		return [][]string{oci("oci", "verify", op.OCIRef, "--policy", policyFile)}
	case OpObserve:
		drift := db("schema", "drift", "--schema-file", desiredFile)
		for _, s := range op.Schemas {
			drift = append(drift, "--schema", s)
		}
		return [][]string{pull, append(drift, "--json")}
	case OpPlan, OpProof:
		plan := db("schema", "plan", "--schema-file", desiredFile, "--output", planFile)
		for _, t := range op.ProtectedTables {
			plan = append(plan, "--protected-table", t)
		}
		if op.ConcurrentIndexes {
			plan = append(plan, "--concurrent-indexes")
		}
		for _, s := range op.Schemas {
			plan = append(plan, "--schema", s)
		}
		return [][]string{pull, append(plan, "--json")}
	case OpApply:
		apply := []string{"schema", "apply", "--plan", planFile, "--auto-approve"}
		if op.AllowDestructive {
			apply = append(apply, "--allow-destructive")
		}
		if op.LockTimeout != "" {
			apply = append(apply, "--lock-timeout", op.LockTimeout)
		}
		if op.ConnectTimeout != "" {
			apply = append(apply, "--connect-timeout", op.ConnectTimeout)
		}
		return [][]string{append(apply, "--json")}
	}
	return nil
}

// execute runs op's ptah commands in a fresh work directory and fills out.
// An Apply's plan is read through the API with the operation's credential.
func execute(ctx context.Context, cfg Config, env map[string]string, c *apiClient, op *Operation, out *Outcome) {
	fail := func(format string, args ...any) {
		out.Error = &Error{Code: ErrOperation, Message: fmt.Sprintf(format, args...)}
	}
	ptah := cfg.Ptah
	if ptah == "" {
		p, err := exec.LookPath("ptah")
		if err != nil {
			fail("ptah is not on PATH: %v", err)
			return
		}
		ptah = p
	}
	dir, err := os.MkdirTemp(cfg.WorkDir, "ptah-"+op.Type+"-")
	if err != nil {
		fail("create a work directory: %v", err)
		return
	}
	defer os.RemoveAll(dir)
	inputs := map[string]string{}
	switch {
	case op.Type == OpVerify, op.Type == OpResolve && op.Verify:
		inputs[policyFile] = env[EnvPolicy]
	case op.Type == OpApply:
		doc, err := c.planDocument(ctx, op)
		if err != nil {
			fail("%v", err)
			return
		}
		inputs[planFile] = string(doc)
	}
	for name, content := range inputs {
		if content == "" {
			fail("a %s operation needs its input %s, and the environment has none", op.Type, name)
			return
		}
		if err := os.WriteFile(filepath.Join(dir, name), []byte(content), 0o600); err != nil {
			fail("write %s: %v", name, err)
			return
		}
	}

	doc, ran := runCommands(ctx, cfg, ptah, dir, commands(op), out)
	if !ran {
		return
	}
	if op.Type == OpMigrationObserve || op.Type == OpMigrationApply {
		// A failed run's report still says what it committed.
		fields, err := migrationFields(doc, filepath.Join(dir, migrationsDir))
		if err != nil {
			fail("%v", err)
			return
		}
		out.Fields = fields
		return
	}
	fields, err := readFields(op, out, doc, dir)
	if err != nil {
		fail("%v", err)
		return
	}
	if op.ThenPlan && op.Type == OpResolve && out.Error == nil && fields != nil && fields.ResolvedDigest != "" {
		fields.Plan = planAfter(ctx, cfg, ptah, dir, op, fields.ResolvedDigest)
	}
	out.Fields = fields
}

// runCommands runs cmds in dir, each only if the one before it succeeded,
// and fills out's exit code, report and error. doc is the report of the last
// command when that command ran. ran is false when ptah could not run or a
// command reported nothing, with out.Error saying so.
func runCommands(ctx context.Context, cfg Config, ptah, dir string, cmds [][]string, out *Outcome) (doc *document, ran bool) {
	// last: the operation's own command ran, so doc is its report rather
	// than that of a step before it.
	last := false
	for i, args := range cmds {
		last = i == len(cmds)-1
		fmt.Fprintf(cfg.Log, "runner: ptah %s %s\n", args[0], args[1])
		cmd := exec.CommandContext(ctx, ptah, args...)
		cmd.Dir, cmd.Env, cmd.Stderr = dir, cfg.Environ, cfg.Log
		var stdout bytes.Buffer
		cmd.Stdout = &stdout
		code, err := exitCode(cmd.Run())
		if err != nil {
			out.Error = &Error{Code: ErrOperation, Message: fmt.Sprintf("ptah could not run: %v", err)}
			return nil, false
		}
		out.ChildExitCode = code
		doc = lastDocument(stdout.Bytes())
		if doc != nil {
			out.Report = bytes.TrimSpace(stdout.Bytes())
			out.Report = out.Report[bytes.LastIndexByte(out.Report, '\n')+1:]
		}
		if code == report.ExitError {
			out.Error = &Error{Code: ErrChildExit, Message: fmt.Sprintf("ptah exited with code %d", code)}
			if doc != nil && doc.Error != nil {
				out.ChildError = &Error{Code: string(doc.Error.Code), Message: doc.Error.Message}
			}
			break
		}
		if code != report.ExitOK && code != report.ExitNegative {
			out.Error = &Error{Code: ErrChildExit, Message: fmt.Sprintf("ptah exited with code %d", code)}
			break
		}
		if doc == nil {
			out.Error = &Error{Code: ErrOperation, Message: fmt.Sprintf("ptah %s %s exited %d without a --json report", args[0], args[1], code)}
			return nil, false
		}
	}
	if !last {
		doc = nil
	}
	return doc, true
}

// planAfter is the plan a Plan of digest would make, made in the Resolve's
// Pod from the pinned digest, so nothing is planned from other bytes than
// the ones resolved. It is nil when any step fails, the reason in the log:
// the Resolve's own result stands, and the manager plans in a Pod of its
// own, where a failure is retried and reported as any Plan's.
func planAfter(ctx context.Context, cfg Config, ptah, dir string, op *Operation, digest string) *v1alpha1.PlanResult {
	plan := *op
	plan.Type, plan.OCIRef, plan.Verify, plan.ThenPlan = OpPlan, artifact.Pinned(op.OCIRef, digest), false, false
	out := &Outcome{}
	doc, ran := runCommands(ctx, cfg, ptah, dir, commands(&plan), out)
	why := errorSuffix(out.Error)
	if ran && out.Error == nil {
		fields, err := readFields(&plan, out, doc, dir)
		switch {
		case err != nil:
			why = ", " + err.Error()
		case fields != nil && fields.Plan != nil:
			fmt.Fprintf(cfg.Log, "runner: planned %s after resolving it: %d statements\n", plan.OCIRef, len(fields.Plan.Statements))
			return fields.Plan
		default:
			why = ", ptah reported no plan"
		}
	}
	fmt.Fprintf(cfg.Log, "runner: the plan after the resolve did not complete%s; the result is the resolve's alone, and a Plan follows in a Pod of its own\n", why)
	return nil
}

// lastDocument is the last line of stdout that is a ptah report.
func lastDocument(stdout []byte) *document {
	var last *document
	sc := bufio.NewScanner(bytes.NewReader(stdout))
	sc.Buffer(make([]byte, 64*1024), 64*1024*1024)
	for sc.Scan() {
		var d document
		if json.Unmarshal(sc.Bytes(), &d) == nil && d.APIVersion == report.APIVersion {
			last = &d
		}
	}
	return last
}

// readFields turns the last report (and, for a plan, the plan file) into the
// record's result fields.
func readFields(op *Operation, out *Outcome, doc *document, dir string) (*v1alpha1.OperationResult, error) {
	if doc == nil {
		return nil, nil
	}
	ok := out.Error == nil
	r := &v1alpha1.OperationResult{}
	switch op.Type {
	case OpResolve:
		// A refusal by the policy is a verdict about the digest it names.
		refused := op.Verify && out.ChildError != nil && out.ChildError.Code == string(report.PolicyRefused)
		if !ok && !refused {
			return nil, nil
		}
		var res struct {
			Digest string `json:"digest"`
		}
		if err := json.Unmarshal(doc.Result, &res); err != nil || res.Digest == "" {
			return nil, fmt.Errorf("ptah %s reported no digest (%s)", doc.Command, doc.Result)
		}
		r.ResolvedDigest = res.Digest
		if op.Verify {
			r.Verified = ptr(ok)
		}
	case OpVerify:
		// A refusal by the policy is a verdict; any other failure is none.
		switch {
		case ok:
			r.Verified = ptr(true)
		case out.ChildError != nil && out.ChildError.Code == string(report.PolicyRefused):
			r.Verified = ptr(false)
		default:
			return nil, nil
		}
	case OpObserve:
		if !ok {
			return nil, nil
		}
		var d schema.Drift
		if err := json.Unmarshal(doc.Result, &d); err != nil {
			return nil, fmt.Errorf("ptah schema drift reported no drift verdict: %v", err)
		}
		r.DriftDetected = ptr(d.Drift)
	case OpPlan, OpProof:
		if !ok {
			return nil, nil
		}
		b, err := os.ReadFile(filepath.Join(dir, planFile))
		if err != nil {
			return nil, fmt.Errorf("ptah schema plan exited 0 but wrote no plan: %v", err)
		}
		p, err := schema.ReadPlan(planFile, b)
		if err != nil {
			return nil, err
		}
		r.Plan = PlanResultOf(p)
		r.DriftDetected = ptr(len(p.Statements) > 0)
	case OpApply:
		if !ok {
			return nil, nil
		}
		var a schema.Applied
		if err := json.Unmarshal(doc.Result, &a); err != nil || !a.Applied {
			return nil, fmt.Errorf("ptah schema apply exited 0 but did not report the plan applied (%s)", doc.Result)
		}
		r.AppliedPlanFingerprint = a.PlanDigest
	}
	return r, nil
}

// PlanResultOf is the record's copy of a ptah plan document. The plan's
// content digest is its fingerprint: it identifies the statements and the
// states they lead from and to.
func PlanResultOf(p *schema.Plan) *v1alpha1.PlanResult {
	r := &v1alpha1.PlanResult{
		Fingerprint:        p.Digest,
		BaseFingerprint:    p.BaseFingerprint,
		DesiredFingerprint: p.DesiredFingerprint,
		Digest:             p.Digest,
		Destructive:        p.Destructive,
		Schemas:            p.Schemas,
		Statements:         []v1alpha1.Statement{},
	}
	for _, s := range p.Statements {
		st := v1alpha1.Statement{SQL: s.SQL, Severity: v1alpha1.Severity(s.Severity), Reason: s.Reason, OutsideTransaction: s.OutsideTransaction, Schema: s.Schema}
		for _, h := range s.Hazards {
			st.Hazards = append(st.Hazards, v1alpha1.Hazard(h))
		}
		r.Statements = append(r.Statements, st)
	}
	return r
}

// PlanDocument rebuilds the ptah plan document a PlanResult was copied
// from, for an Apply: the manager stores the statements and the
// runner hands ptah the exact bytes whose digest the plan carries. exclude
// must be the operation's Exclude the plan was computed with.
func PlanDocument(r *v1alpha1.PlanResult, exclude []string) ([]byte, error) {
	p := planOf(r, exclude)
	want, err := p.ComputeDigest()
	if err != nil {
		return nil, err
	}
	if want != r.Digest {
		return nil, fmt.Errorf("plan %s: its statements and fingerprints digest to %s; it was changed after planning and cannot be applied", r.Digest, want)
	}
	return p.Marshal()
}

// PlanDigest is the digest ptah gives the plan document r was copied from.
func PlanDigest(r *v1alpha1.PlanResult, exclude []string) (string, error) {
	return planOf(r, exclude).ComputeDigest()
}

func planOf(r *v1alpha1.PlanResult, exclude []string) *schema.Plan {
	p := &schema.Plan{
		APIVersion:         schema.PlanAPIVersion,
		Schema:             schema.Managed,
		Schemas:            r.Schemas,
		Exclude:            append([]string{}, exclude...),
		BaseFingerprint:    r.BaseFingerprint,
		DesiredFingerprint: r.DesiredFingerprint,
		Destructive:        r.Destructive,
		Statements:         []schema.Statement{},
		Digest:             r.Digest,
	}
	if len(r.Schemas) > 0 {
		p.Schema = r.Schemas[0]
	}
	for _, s := range r.Statements {
		st := schema.Statement{SQL: s.SQL, Severity: schema.Severity(s.Severity), Reason: s.Reason, OutsideTransaction: s.OutsideTransaction, Schema: s.Schema}
		for _, h := range s.Hazards {
			st.Hazards = append(st.Hazards, schema.Hazard(h))
		}
		p.Statements = append(p.Statements, st)
	}
	return p
}

func ptr[T any](v T) *T { return &v }
