package schema

import (
	"context"
	"crypto/sha256"
	"database/sql"
	"encoding/hex"
	"encoding/json"
	"fmt"
	"path"
	"slices"
	"sort"
	"strings"

	"ariga.io/atlas/sql/migrate"
	"ariga.io/atlas/sql/postgres"
	sqlschema "ariga.io/atlas/sql/schema"

	"ptah.run/operator/operator/database"
	"ptah.run/operator/operator/devdb"
	"ptah.run/operator/operator/pgcatalog"
	"ptah.run/operator/operator/report"
)

// PlanAPIVersion names the shape of a plan document.
const PlanAPIVersion = "ptah.run/plan/v1"

// Plan is the plan document `ptah schema plan` writes and `ptah schema
// apply` executes. It holds no time or host, so planning twice against the
// same state gives the same bytes.
type Plan struct {
	APIVersion string `json:"apiVersion"`
	// Schema is the managed schema the statements change.
	Schema string `json:"schema"`
	// Exclude is the atlas glob patterns left out of both sides; apply
	// inspects with the same ones to check BaseFingerprint.
	Exclude []string `json:"exclude"`
	// BaseFingerprint is the database state the plan was computed from.
	BaseFingerprint string `json:"baseFingerprint"`
	// DesiredFingerprint is the state the desired SQL describes, computed
	// the same way; once applied, the database has this fingerprint.
	DesiredFingerprint string      `json:"desiredFingerprint"`
	Destructive        bool        `json:"destructive"`
	Statements         []Statement `json:"statements"`
	// Digest is "sha256:" and the hex SHA-256 of this document's JSON with
	// Digest empty.
	Digest string `json:"digest"`
}

// Statement is one SQL statement of a plan.
type Statement struct {
	SQL      string   `json:"sql"`
	Severity Severity `json:"severity"`
	Reason   string   `json:"reason"`
}

// Options says what to compare.
type Options struct {
	// Exclude holds atlas glob patterns ("t", "t.c", "*.c") of objects
	// neither inspected nor changed.
	Exclude []string
	// Protected holds table names or path.Match patterns a plan may not touch.
	Protected []string
	// Dev is the dev server the desired SQL is loaded into (a fresh
	// database of its own per comparison); it is never the target's server.
	Dev *devdb.Server
}

// comparison is a diff between the live and the desired state.
type comparison struct {
	live, desired *state
	changes       []sqlschema.Change
	plan          *migrate.Plan
	// objects is the statements for what atlas does not manage, and
	// objectDiffs the differences they correct.
	objects     pgcatalog.Planned
	objectDiffs []pgcatalog.Difference
}

// compare loads the desired SQL into a fresh database of the dev server,
// inspects it and the managed schema of db the same way and diffs them.
// db is only read, in one read-only transaction; the two sides are read at
// the same time on two connections.
func compare(ctx context.Context, db *database.DB, files []File, opts Options) (*comparison, error) {
	if opts.Dev == nil {
		return nil, report.Errorf(report.Usage, "no dev database to load the desired schema into (it is never loaded into the target): pass --dev-url URL (or set $%s) naming a PostgreSQL server other than the target's, or --dev-throwaway", devdb.URLEnv)
	}
	devDB, drop, err := opts.Dev.Fresh(ctx, db)
	if err != nil {
		return nil, err
	}
	defer drop()
	tx, err := db.BeginTx(ctx, &sql.TxOptions{Isolation: sql.LevelRepeatableRead, ReadOnly: true})
	if err != nil {
		return nil, database.StatementError(db.Target, "begin", err)
	}
	defer tx.Rollback()
	var desired *state
	var desiredErr error
	done := make(chan struct{})
	go func() {
		defer close(done)
		if desiredErr = loadDesired(ctx, devDB, files); desiredErr != nil {
			return
		}
		devTx, err := devDB.BeginTx(ctx, &sql.TxOptions{ReadOnly: true})
		if err != nil {
			desiredErr = database.StatementError(devDB.Target, "begin", err)
			return
		}
		defer devTx.Rollback()
		desired, desiredErr = inspect(ctx, devTx, Managed, opts.Exclude, true)
	}()
	live, err := inspect(ctx, tx, Managed, opts.Exclude, false)
	<-done
	if desiredErr != nil {
		return nil, desiredErr
	}
	if err != nil {
		return nil, err
	}
	return diff(ctx, tx, live, desired)
}

func diff(ctx context.Context, q sqlschema.ExecQuerier, live, desired *state) (*comparison, error) {
	drv, err := postgres.Open(q)
	if err != nil {
		return nil, fmt.Errorf("open the atlas driver: %w", err)
	}
	withoutConstraints(live.schema)
	withoutConstraints(desired.schema)
	atlasIdentities := withoutIdentities(live, desired)
	changes, err := drv.SchemaDiff(live.schema, desired.schema)
	if err != nil {
		return nil, fmt.Errorf("diff %s against the desired schema: %w", Managed, err)
	}
	changes, defaults, defaultDiffs := columnDefaults(changes, live, desired)
	changes = splitTableChanges(changes)
	plan, err := drv.PlanChanges(ctx, "ptah", changes)
	if err != nil {
		return nil, fmt.Errorf("plan the changes to %s: %w", Managed, err)
	}
	planned := 0
	for _, c := range plan.Changes {
		if c.Cmd != "" {
			planned++
		}
	}
	objects, objectDiffs, err := planObjects(live, desired, changes, planned+len(defaults), atlasIdentities)
	if err != nil {
		return nil, err
	}
	objects.After = append(objects.After, defaults...)
	objectDiffs = append(objectDiffs, defaultDiffs...)
	return &comparison{live: live, desired: desired, changes: changes, plan: plan, objects: objects, objectDiffs: objectDiffs}, nil
}

// splitTableChanges gives each part of a table modification its own change,
// so each becomes its own statement with its own severity, in the order
// PostgreSQL would run them as one ALTER TABLE (tablePartOrder).
func splitTableChanges(changes []sqlschema.Change) []sqlschema.Change {
	var out []sqlschema.Change
	for _, c := range changes {
		m, ok := c.(*sqlschema.ModifyTable)
		if !ok {
			out = append(out, c)
			continue
		}
		for _, sub := range tablePartOrder(m.Changes) {
			out = append(out, &sqlschema.ModifyTable{T: m.T, Changes: []sqlschema.Change{sub}})
		}
	}
	return out
}

// ComputePlan plans the statements that take the managed schema of db to the
// state files describe. A plan touching a protected table is refused with
// report.ProtectedTable.
func ComputePlan(ctx context.Context, db *database.DB, files []File, opts Options) (*Plan, error) {
	cmp, err := compare(ctx, db, files, opts)
	if err != nil {
		return nil, err
	}
	if touched := touchedProtected(cmp.changes, cmp.objects, opts.Protected); len(touched) > 0 {
		return nil, report.Errorf(report.ProtectedTable, "the plan would change protected table(s) %s; no plan was written", strings.Join(touched, ", "))
	}
	p := &Plan{
		APIVersion:         PlanAPIVersion,
		Schema:             Managed,
		Exclude:            slices.Clone(opts.Exclude),
		BaseFingerprint:    cmp.live.fingerprint,
		DesiredFingerprint: cmp.desired.fingerprint,
		Statements:         []Statement{},
	}
	if p.Exclude == nil {
		p.Exclude = []string{}
	}
	for _, s := range cmp.objects.Before {
		p.Statements = append(p.Statements, Statement{SQL: s.SQL, Severity: Safe, Reason: s.Reason})
	}
	for _, c := range cmp.plan.Changes {
		sev, reason := judge(c.Source)
		if t, ok := c.Source.(*sqlschema.AddTable); ok && strings.HasPrefix(c.Cmd, "CREATE INDEX") {
			// atlas creates a new table's indexes in statements of their own.
			reason = "creates an index of new table " + t.T.Name
		}
		if c.Cmd != "" {
			p.Statements = append(p.Statements, Statement{SQL: c.Cmd, Severity: sev, Reason: reason})
		}
		p.Destructive = p.Destructive || sev == Destructive
	}
	for _, s := range cmp.objects.After {
		p.Statements = append(p.Statements, Statement{SQL: s.SQL, Severity: Safe, Reason: s.Reason})
	}
	p.Digest, err = p.ComputeDigest()
	return p, err
}

// judge gives the severity of a planned change and its reasons, joined.
func judge(c sqlschema.Change) (Severity, string) {
	sev := Safe
	var reasons []string
	for _, v := range classify(c) {
		if v.severity == Destructive {
			sev = Destructive
		}
		reasons = append(reasons, v.reason)
	}
	return sev, strings.Join(reasons, "; ")
}

// touchedProtected lists the protected tables changes and objects would
// create, drop or modify (a constraint, trigger or policy of theirs included).
func touchedProtected(changes []sqlschema.Change, objects pgcatalog.Planned, protected []string) []string {
	if len(protected) == 0 {
		return nil
	}
	var names []string
	for _, c := range changes {
		switch c := c.(type) {
		case *sqlschema.AddTable:
			names = append(names, c.T.Name)
		case *sqlschema.DropTable:
			names = append(names, c.T.Name)
		case *sqlschema.ModifyTable:
			names = append(names, c.T.Name)
		case *sqlschema.RenameTable:
			names = append(names, c.From.Name)
		}
	}
	for _, s := range append(slices.Clone(objects.Before), objects.After...) {
		if s.Table != "" {
			names = append(names, s.Table)
		}
	}
	seen := map[string]bool{}
	for _, name := range names {
		for _, pat := range protected {
			if ok, _ := path.Match(pat, name); ok || pat == name {
				seen[name] = true
			}
		}
	}
	out := make([]string, 0, len(seen))
	for n := range seen {
		out = append(out, n)
	}
	sort.Strings(out)
	return out
}

// ComputeDigest returns the digest p's Digest field should hold.
func (p *Plan) ComputeDigest() (string, error) {
	c := *p
	c.Digest = ""
	b, err := json.Marshal(c)
	if err != nil {
		return "", err
	}
	sum := sha256.Sum256(b)
	return "sha256:" + hex.EncodeToString(sum[:]), nil
}

// Marshal renders p as indented JSON ending in a newline, the plan file's bytes.
func (p *Plan) Marshal() ([]byte, error) {
	b, err := json.MarshalIndent(p, "", "  ")
	if err != nil {
		return nil, err
	}
	return append(b, '\n'), nil
}

// ReadPlan decodes a plan file and checks its digest.
func ReadPlan(name string, b []byte) (*Plan, error) {
	var p Plan
	if err := json.Unmarshal(b, &p); err != nil {
		return nil, report.Errorf(report.Parse, "plan %s is not a plan document: %v", name, err)
	}
	if p.APIVersion != PlanAPIVersion {
		return nil, report.Errorf(report.Parse, "plan %s has apiVersion %q; this ptah reads %q", name, p.APIVersion, PlanAPIVersion)
	}
	want, err := p.ComputeDigest()
	if err != nil {
		return nil, err
	}
	if p.Digest != want {
		return nil, report.Errorf(report.PlanInvalid, "plan %s does not match its digest (says %s, content is %s): it was edited after planning; plan again", name, p.Digest, want)
	}
	return &p, nil
}
