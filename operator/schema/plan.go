package schema

import (
	"context"
	"crypto/sha256"
	"database/sql"
	"encoding/hex"
	"encoding/json"
	"path"
	"regexp"
	"slices"
	"sort"
	"strings"

	"ariga.io/atlas/sql/migrate"
	"ariga.io/atlas/sql/postgres"
	sqlschema "ariga.io/atlas/sql/schema"

	"ptah.run/operator/operator/catalogproof"
	"ptah.run/operator/operator/catalogread"
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
	// Schema is the managed schema the statements change, the first of
	// Schemas when there are more.
	Schema string `json:"schema"`
	// Schemas are the managed schemas, set unless public alone is.
	Schemas []string `json:"schemas,omitempty"`
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
	SQL string `json:"sql"`
	// Severity is Destructive exactly when Hazards holds HazardDeletesData.
	Severity Severity `json:"severity"`
	Reason   string   `json:"reason"`
	// Hazards are what the statement risks, in the order of Hazards.
	Hazards []Hazard `json:"hazards,omitempty"`
	// OutsideTransaction marks a statement PostgreSQL refuses inside a
	// transaction (CREATE INDEX CONCURRENTLY): apply commits what ran
	// before it and runs it on its own.
	OutsideTransaction bool `json:"outsideTransaction,omitempty"`
	// Schema, in a plan of several schemas, is the one whose objects the
	// statement names unqualified: it runs with that schema first on the
	// search path, as the objects were read.
	Schema string `json:"schema,omitempty"`
}

// schemas is the schemas p keeps.
func (p *Plan) schemas() []string {
	if len(p.Schemas) > 0 {
		return p.Schemas
	}
	return []string{p.Schema}
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
	// ConcurrentIndexes builds and drops the indexes of existing tables
	// with CONCURRENTLY, outside the plan's transaction, so writes go on.
	ConcurrentIndexes bool
	// Schemas are the schemas ptah keeps, [public] when empty; objects of
	// any other schema are neither planned nor dropped.
	Schemas []string
}

// managed is the schemas opts keeps.
func (o Options) managed() []string {
	if len(o.Schemas) == 0 {
		return []string{Managed}
	}
	return o.Schemas
}

// comparison is a diff between the live and the desired state.
type comparison struct {
	live, desired *side
	changes       []sqlschema.Change
	plan          *migrate.Plan
	// objects is, per managed schema, the statements for what atlas does
	// not manage, and objectDiffs the differences they correct.
	objects     []schemaObjects
	objectDiffs []pgcatalog.Difference
	// created creates the managed schemas the database lacks; invalid
	// drops the invalid indexes of those it has; dropped drops, last, the
	// managed schemas the desired SQL does not create.
	created, invalid, dropped []Statement
	// conversions are the columns' changes of type, by schema.table.column
	// (castTrials), for the guard of one that may change a value.
	conversions map[string]conversion
	// liveLines and desiredLines are the two sides as catalogproof
	// renders them, read in the same transactions as the inspection: the
	// proof an empty plan or no drift must pass (prove).
	liveLines, desiredLines []string
}

// compare loads the desired SQL into a fresh database of the dev server,
// inspects it and the managed schema of db the same way and diffs them.
// db is only read, in one read-only transaction; the two sides are read at
// the same time on two connections.
func compare(ctx context.Context, db *database.DB, files []File, opts Options) (*comparison, error) {
	if opts.Dev == nil {
		return nil, report.Errorf(report.Usage, "no dev database to load the desired schema into (it is never loaded into the target): pass --dev-url URL (or set $%s) naming a PostgreSQL server other than the target's, or --dev-throwaway", devdb.URLEnv)
	}
	seen := map[string]bool{}
	for _, s := range opts.managed() {
		if s == "" || seen[s] || strings.HasPrefix(s, "pg_") || s == "information_schema" {
			return nil, report.Errorf(report.Usage, "schema %q cannot be managed: name each schema once, and none of PostgreSQL's own (pg_*, information_schema)", s)
		}
		seen[s] = true
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
	var runsAs string
	if err := tx.QueryRowContext(ctx, catalogread.RunsAs).Scan(&runsAs); err != nil {
		return nil, database.StatementError(db.Target, "read the role ptah runs as", err)
	}
	roles, err := targetRoles(ctx, tx)
	if err != nil {
		return nil, database.StatementError(db.Target, "read the roles", err)
	}
	if err := opts.Dev.MirrorRoles(ctx, roles); err != nil {
		return nil, err
	}
	var desired *side
	var desiredLines []string
	var desiredErr error
	done := make(chan struct{})
	go func() {
		defer close(done)
		role, leakproof, err := loadDesired(ctx, devDB, files)
		if desiredErr = err; err != nil {
			return
		}
		if leakproof > 0 {
			if desiredErr = opts.Dev.MarkLeakproof(ctx, role, leakproofMarker(role), leakproof); desiredErr != nil {
				return
			}
		}
		devTx, err := devDB.BeginTx(ctx, &sql.TxOptions{ReadOnly: true})
		if err != nil {
			desiredErr = database.StatementError(devDB.Target, "begin", err)
			return
		}
		defer devTx.Rollback()
		if _, err := devTx.ExecContext(ctx, catalogread.SetTargetRole, runsAs); err != nil {
			desiredErr = database.StatementError(devDB.Target, "name the target's role", err)
			return
		}
		if desired, desiredErr = inspectSide(ctx, devTx, opts.managed(), opts.Exclude, true); desiredErr != nil {
			return
		}
		desiredLines, desiredErr = catalogproof.Render(ctx, devTx, opts.managed(), opts.Exclude)
	}()
	live, err := inspectSide(ctx, tx, opts.managed(), opts.Exclude, false)
	var liveLines []string
	if err == nil {
		liveLines, err = catalogproof.Render(ctx, tx, opts.managed(), opts.Exclude)
	}
	<-done
	if desiredErr != nil {
		return nil, desiredErr
	}
	if err != nil {
		return nil, err
	}
	cmp, err := diff(ctx, live, desired, devDB, opts)
	if err != nil {
		return nil, err
	}
	cmp.liveLines, cmp.desiredLines = liveLines, desiredLines
	return cmp, nil
}

// targetRoles is the target's roles but PostgreSQL's own.
func targetRoles(ctx context.Context, tx *sql.Tx) ([]string, error) {
	rows, err := tx.QueryContext(ctx, catalogread.Roles)
	if err != nil {
		return nil, err
	}
	defer rows.Close()
	var out []string
	for rows.Next() {
		var n string
		if err := rows.Scan(&n); err != nil {
			return nil, err
		}
		out = append(out, n)
	}
	return out, rows.Err()
}

// prove holds a claim of in sync (an empty plan, no drift) to the
// independent rendering of both sides: when the catalogs differ in a way
// the planner's model does not show, the claim is refused with
// report.UnplannedDifference naming the differing lines.
func (c *comparison) prove(claim string) error {
	d := catalogproof.Compare(c.liveLines, c.desiredLines)
	if d.Empty() {
		return nil
	}
	return report.Errorf(report.UnplannedDifference, "the planner found %s, but the catalogs of the database and of the desired schema differ (PostgreSQL's own rendering of both, which the planner does not share): %s; %s", claim, d.Describe(), claimRefused[claim])
}

var claimRefused = map[string]string{
	"nothing to change": "no plan was written (an empty plan would claim they are in sync)",
	"no drift":          "drift is not reported as none (that would claim they are in sync)",
}

// schemaObjects is the statements pgcatalog planned for one managed
// schema; they run under that schema's search path.
type schemaObjects struct {
	schema string
	// live is the schema as the database holds it: a statement on a table
	// it lacks changes a table the plan creates, empty and unused.
	live    *state
	planned pgcatalog.Planned
}

// diff compares the two sides without the target: atlas's differ and
// planner with a connection would compare column defaults by evaluating
// them (SELECT live = desired), and the desired expression must never run on
// the target. Defaults are compared as each server prints them instead
// (columnDefaults). Only changes of type are tried, on the dev database
// (castTrials).
func diff(ctx context.Context, live, desired *side, dev *database.DB, opts Options) (*comparison, error) {
	drv := struct {
		sqlschema.Differ
		migrate.PlanApplier
	}{postgres.DefaultDiff, postgres.DefaultPlan}
	var changes []sqlschema.Change
	var created, invalid, dropped []Statement
	// Per schema: the identities atlas keeps (see withoutIdentities), and
	// the column defaults set as PostgreSQL prints them (columnDefaults).
	atlasIdentities := make([][]string, len(live.schemas))
	defaults := make([][]pgcatalog.Step, len(live.schemas))
	defaultDiffs := make([][]pgcatalog.Difference, len(live.schemas))
	// Per schema: the time types atlas writes without their precision.
	precisions := make([][]pgcatalog.Step, len(live.schemas))
	retyped := make([][]string, len(live.schemas))
	conversions := map[string]conversion{}
	nDefaults := 0
	for i, l := range live.schemas {
		d := desired.schemas[i]
		if d.missing && l.missing {
			continue
		}
		if d.missing {
			// A managed schema the desired SQL does not create is to be
			// gone: everything in it is dropped like any object the
			// desired SQL lacks, then the empty schema, RESTRICT, so
			// nothing outside the managed schemas goes with it.
			d = &state{name: l.name, schema: sqlschema.New(l.name), fingerprint: d.fingerprint, missing: true}
			for _, o := range l.objects {
				if o.Kind == "comment on schema" || globalKinds[o.Kind] {
					d.objects = append(d.objects, o)
				}
			}
			desired.schemas[i] = d
			dropped = append(dropped, Statement{SQL: "DROP SCHEMA " + pgcatalog.QuoteIdent(l.name), Severity: Safe,
				Reason: "drops schema " + l.name + ", emptied above; refused by PostgreSQL if anything else still uses it"})
		}
		if l.missing {
			// First of all: pgcatalog's objects may be created in it
			// before atlas's tables.
			created = append(created, Statement{SQL: "CREATE SCHEMA " + pgcatalog.QuoteIdent(l.name), Severity: Safe, Reason: "creates schema " + l.name})
			l.objects = []pgcatalog.Object{{Kind: "comment on schema", Name: pgcatalog.QuoteIdent(l.name)}}
		}
		withoutConstraints(l.schema)
		withoutConstraints(d.schema)
		enums, err := enumsRecreated(l, d, live.schemas)
		if err != nil {
			return nil, err
		}
		withoutLostIndexes(l, d, handOver(enums))
		sameSequence(l, d)
		if err := inheritedLeftOut(l, d); err != nil {
			return nil, err
		}
		atlasIdentities[i] = withoutIdentities(l, d)
		if err := partitionKeyChanged(l.name, l.schema, d.schema); err != nil {
			return nil, err
		}
		regen, err := regenerate(l.name, l.schema, d.schema, l.objects)
		if err != nil {
			return nil, err
		}
		c, err := drv.SchemaDiff(l.schema, d.schema)
		if err != nil {
			return nil, atlasRefused(l.name, err)
		}
		c = dropInRegenerated(c, regen)
		c = withRecreatedEnums(c, enums, l.schema, d.schema)
		first, last := enumStatements(l.name, enums)
		created = append(created, first...)
		dropped = append(dropped, last...)
		l.recreate, l.recreatedTypes = recreatedAround(enums, l, d)
		c = userTypeChanges(c, l.schema, d.schema)
		c, defaults[i], defaultDiffs[i] = columnDefaults(c, l, d, namesAny(enums))
		if err := castTrials(ctx, dev, c, l, d, conversions); err != nil {
			return nil, err
		}
		var precisionDiffs []pgcatalog.Difference
		precisions[i], precisionDiffs, retyped[i] = timePrecisions(c, l, d)
		defaultDiffs[i] = append(defaultDiffs[i], precisionDiffs...)
		collations, collationDiffs, recollated := columnCollations(c, l, d)
		precisions[i] = append(precisions[i], collations...)
		defaultDiffs[i] = append(defaultDiffs[i], collationDiffs...)
		retyped[i] = append(retyped[i], recollated...)
		nDefaults += len(defaults[i]) + len(precisions[i])
		changes = append(changes, c...)
		invalid = append(invalid, dropInvalid(l.name, l.invalid, opts.ConcurrentIndexes)...)
	}
	// Types of one schema come before the tables of another that use them,
	// as atlas orders them within a schema.
	sort.SliceStable(changes, func(i, j int) bool {
		_, ai := changes[i].(*sqlschema.AddObject)
		_, aj := changes[j].(*sqlschema.AddObject)
		return ai && !aj
	})
	changes = splitTableChanges(changes)
	if opts.ConcurrentIndexes {
		changes = concurrentIndexes(changes)
	}
	plan, err := drv.PlanChanges(ctx, "ptah", changes)
	if err != nil {
		return nil, atlasRefused(strings.Join(opts.managed(), ", "), err)
	}
	newColumnIdentities(plan, desired, atlasIdentities)
	planned := len(created) + len(invalid) + len(dropped)
	for _, c := range plan.Changes {
		if c.Cmd != "" {
			planned++
		}
	}
	planned += nDefaults
	cmp := &comparison{live: live, desired: desired, changes: changes, plan: plan, created: created, invalid: invalid, dropped: dropped, conversions: conversions}
	for i, l := range live.schemas {
		objects, objectDiffs, err := planObjects(l, desired.schemas[i], changes, planned, atlasIdentities[i], retyped[i])
		if err != nil {
			return nil, err
		}
		// Types before the views that read the columns are made again.
		objects.After = append(append(precisions[i], objects.After...), defaults[i]...)
		cmp.objects = append(cmp.objects, schemaObjects{schema: l.name, live: l, planned: objects})
		cmp.objectDiffs = append(cmp.objectDiffs, objectDiffs...)
		cmp.objectDiffs = append(cmp.objectDiffs, defaultDiffs[i]...)
	}
	return cmp, nil
}

// atlasRefused is a change atlas's differ or planner has no statement for
// (an enum's values reordered, a column's kind it cannot alter): a
// difference ptah cannot plan, named by atlas's message, never an internal
// error.
func atlasRefused(schemas string, err error) error {
	return report.Errorf(report.UnplannedDifference, "schema %s differs from the desired schema in a way ptah cannot plan (%v); no plan was written: make the change in a PtahMigration, or declare what the database has", schemas, err)
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
//
// An empty plan is written only when the independent rendering of both
// sides (package catalogproof) agrees they are in sync; otherwise the plan
// is refused with report.UnplannedDifference naming the lines that differ.
func ComputePlan(ctx context.Context, db *database.DB, files []File, opts Options) (*Plan, error) {
	return computePlan(ctx, db, files, opts, true)
}

// computePlan is ComputePlan; with proof false it writes the planner's own
// answer, an empty plan included, unproven: tests compare the two.
func computePlan(ctx context.Context, db *database.DB, files []File, opts Options, proof bool) (*Plan, error) {
	cmp, err := compare(ctx, db, files, opts)
	if err != nil {
		return nil, err
	}
	if touched := touchedProtected(cmp.changes, cmp.objects, opts.Protected); len(touched) > 0 {
		return nil, report.Errorf(report.ProtectedTable, "the plan would change protected table(s) %s; no plan was written", strings.Join(touched, ", "))
	}
	managed := opts.managed()
	p := &Plan{
		APIVersion:         PlanAPIVersion,
		Schema:             managed[0],
		Exclude:            slices.Clone(opts.Exclude),
		BaseFingerprint:    cmp.live.fingerprint,
		DesiredFingerprint: cmp.desired.fingerprint,
		Statements:         []Statement{},
	}
	if p.Exclude == nil {
		p.Exclude = []string{}
	}
	if len(managed) > 1 || managed[0] != Managed {
		p.Schemas = slices.Clone(managed)
	}
	steps := func(o schemaObjects, ss []pgcatalog.Step) {
		for _, s := range ss {
			newTable := s.Table != "" && !o.live.hasTable(s.Table)
			if s.Identity != nil && !newTable {
				var guard *Statement
				if s, guard = unusedIdentity(ctx, db, o.schema, s); guard != nil {
					if p.Schemas != nil {
						guard.Schema = o.schema
					}
					p.Statements = append(p.Statements, *guard)
				}
			}
			st := stepStatement(s, newTable)
			if opts.ConcurrentIndexes && !newTable && s.Kind() == "index" && !o.live.partitioned(s.Table) {
				st = concurrentStep(st)
			}
			if p.Schemas != nil {
				st.Schema = o.schema
			}
			p.Statements = append(p.Statements, st)
		}
	}
	p.Statements = append(append(p.Statements, cmp.created...), cmp.invalid...)
	// Values added to existing enums before anything else, each committed
	// on its own: PostgreSQL refuses to use a value in the transaction
	// that added it (a default, a check, a converted column).
	for _, c := range cmp.plan.Changes {
		if enum, value, ok := addedEnumValue(c.Cmd); ok {
			p.Statements = append(p.Statements, Statement{SQL: c.Cmd, Severity: Safe, OutsideTransaction: true,
				Reason: "adds value " + value + " to enum " + enum + ", committed before the statements that may use it (PostgreSQL refuses a value in the transaction that added it)"})
		}
	}
	// atlas's new types (enums) first: a domain or routine pgcatalog
	// creates before atlas's statements may use one.
	newType := func(c *migrate.Change) bool { _, ok := c.Source.(*sqlschema.AddObject); return ok }
	ds := cmp.domainSides()
	parents, childOf := cmp.live.parents(), cmp.desired.inherits()
	atlasStatement := func(c *migrate.Change) {
		reason := judge(c.Source)
		if t, ok := c.Source.(*sqlschema.AddTable); ok && strings.HasPrefix(c.Cmd, "CREATE INDEX") {
			// atlas creates a new table's indexes in statements of their own.
			reason = "creates an index of new table " + t.T.Name
		}
		hs := hazardsOf(c.Source, c.Cmd, ds)
		if conv, schema, ok := cmp.conversion(c); ok && slices.Contains(hs, HazardDeletesData) {
			// A value that would change stops the apply instead.
			g := conv.guard(schema)
			if p.Schemas != nil {
				g.Schema = schema
			}
			p.Statements = append(p.Statements, g)
			hs = hazardSet{HazardMayFail: true}.add(slices.DeleteFunc(hs, func(h Hazard) bool { return h == HazardDeletesData })...).list()
			reason = strings.Replace(reason, "which can lose or reject values", "which can reject values: the check before it stops one that would not convert back", 1)
		}
		p.Statements = append(p.Statements, Statement{SQL: withInherits(c, onlyParent(c, parents), childOf), Severity: severityOf(hs), Reason: reason, Hazards: hs, OutsideTransaction: outsideTransaction(c.Source, c.Cmd)})
	}
	for _, c := range cmp.plan.Changes {
		if c.Cmd != "" && newType(c) {
			atlasStatement(c)
		}
	}
	// What goes before atlas's statements: drops, the schemas the live
	// objects of others read last; then what is made, the schemas the
	// desired objects of others read first (a routine whose body calls
	// another schema's).
	order, dropOrder := schemaOrder(cmp, cmp.desired), schemaOrder(cmp, cmp.live)
	slices.Reverse(dropOrder)
	for _, o := range dropOrder {
		steps(o, slices.DeleteFunc(slices.Clone(o.planned.Before), func(s pgcatalog.Step) bool { return !s.Drops }))
	}
	for _, o := range order {
		steps(o, slices.DeleteFunc(slices.Clone(o.planned.Before), func(s pgcatalog.Step) bool { return s.Drops }))
	}
	// A parent's columns dropped ONLY go first, the parents before their
	// children: a child's own drop of a column it inherited fails until
	// its parent's drop leaves the column its own.
	var rest []*migrate.Change
	var onlyDrops []*migrate.Change
	for _, c := range cmp.plan.Changes {
		if _, _, added := addedEnumValue(c.Cmd); c.Cmd == "" || newType(c) || added {
			continue
		}
		if strings.HasPrefix(onlyParent(c, parents), "ALTER TABLE ONLY ") {
			onlyDrops = append(onlyDrops, c)
		} else {
			rest = append(rest, c)
		}
	}
	depth, newDepth := cmp.live.inheritanceDepth(), cmp.desired.inheritanceDepth()
	slices.SortStableFunc(onlyDrops, func(a, b *migrate.Change) int {
		ta, tb := a.Source.(*sqlschema.ModifyTable).T, b.Source.(*sqlschema.ModifyTable).T
		return depth[ta.Schema.Name+"."+ta.Name] - depth[tb.Schema.Name+"."+tb.Name]
	})
	// A new child is created after its new parents, a dropped child
	// before its dropped parents (PostgreSQL refuses to drop a parent
	// under its children).
	generation := func(c *migrate.Change) int {
		switch x := c.Source.(type) {
		case *sqlschema.AddTable:
			return newDepth[qualified(x.T)]
		case *sqlschema.DropTable:
			return -depth[qualified(x.T)]
		}
		return 0
	}
	slices.SortStableFunc(rest, func(a, b *migrate.Change) int { return generation(a) - generation(b) })
	rest = dropsBeforeTheirNames(rest)
	for _, c := range append(onlyDrops, rest...) {
		atlasStatement(c)
	}
	// After them: what each schema makes, the schemas read by others
	// first; then every schema's foreign keys (tables of two schemas may
	// reference each other's); then comments, which may be on such a key;
	// then what is dropped, the schemas read by others last.
	pass := func(s pgcatalog.Step) int {
		switch {
		case s.Drops:
			return 3
		case s.Kind() == "foreign key":
			return 1
		case strings.HasPrefix(s.SQL, "COMMENT ON "):
			return 2
		}
		return 0
	}
	for n := range 4 {
		in := order
		if n == 3 {
			in = dropOrder
		}
		for _, o := range in {
			steps(o, slices.DeleteFunc(slices.Clone(o.planned.After), func(s pgcatalog.Step) bool { return pass(s) != n }))
		}
	}
	p.Statements = append(p.Statements, cmp.dropped...)
	for _, s := range p.Statements {
		p.Destructive = p.Destructive || s.Severity == Destructive
	}
	if proof && len(p.Statements) == 0 {
		if err := cmp.prove("nothing to change"); err != nil {
			return nil, err
		}
	}
	p.Digest, err = p.ComputeDigest()
	return p, err
}

// conversion is the change of a column's type c makes, and its schema,
// if c is that ALTER TABLE.
func (cmp *comparison) conversion(c *migrate.Change) (conversion, string, bool) {
	m, ok := c.Source.(*sqlschema.ModifyTable)
	if !ok || len(m.Changes) != 1 || !strings.HasPrefix(c.Cmd, "ALTER TABLE ") {
		return conversion{}, "", false
	}
	mc, ok := m.Changes[0].(*sqlschema.ModifyColumn)
	if !ok || !mc.Change.Is(sqlschema.ChangeType) || m.T.Schema == nil {
		return conversion{}, "", false
	}
	conv, ok := cmp.conversions[m.T.Schema.Name+"."+m.T.Name+"."+mc.From.Name]
	return conv, m.T.Schema.Name, ok
}

// atlasEnumValue is the statement atlas writes for a value added to an
// enum: ALTER TYPE <enum> ADD VALUE '<value>' [BEFORE|AFTER '<other>'].
var atlasEnumValue = regexp.MustCompile(`^ALTER TYPE (.+?) ADD VALUE ('(?:[^']|'')*')`)

// addedEnumValue says whether cmd adds a value to an enum, and names both.
func addedEnumValue(cmd string) (enum, value string, ok bool) {
	m := atlasEnumValue.FindStringSubmatch(cmd)
	if m == nil {
		return "", "", false
	}
	return m[1], m[2], true
}

// withInherits is cmd, atlas's statement c, but for a new table that
// inherits (childOf, by "schema.table"), created with INHERITS: it has
// the columns it does not declare from its parents (inheritedLeftOut).
func withInherits(c *migrate.Change, cmd string, childOf map[string][]string) string {
	a, ok := c.Source.(*sqlschema.AddTable)
	if !ok || !strings.HasPrefix(cmd, "CREATE TABLE ") || !strings.HasSuffix(cmd, ")") {
		return cmd
	}
	parents := childOf[qualified(a.T)]
	if len(parents) == 0 {
		return cmd
	}
	var names []string
	for _, p := range parents {
		schema, name, _ := strings.Cut(p, ".")
		if a.T.Schema != nil && schema == a.T.Schema.Name {
			names = append(names, pgcatalog.QuoteIdent(name))
		} else {
			names = append(names, pgcatalog.QuoteIdent(schema)+"."+pgcatalog.QuoteIdent(name))
		}
	}
	// atlas writes "(, CONSTRAINT ..." for a table of no columns of its
	// own.
	cmd = strings.Replace(cmd, " (, ", " (", 1)
	return cmd + " INHERITS (" + strings.Join(names, ", ") + ")"
}

// dropsBeforeTheirNames moves a dropped table before the first statement
// creating a relation under a name the table or one of its indexes holds
// (a schema's tables, indexes and sequences share one namespace, and atlas
// drops tables last). Its foreign keys and what reads it are gone by
// then: pgcatalog drops them before atlas's statements.
func dropsBeforeTheirNames(changes []*migrate.Change) []*migrate.Change {
	names := func(t *sqlschema.Table, ixs ...*sqlschema.Index) []string {
		if t.Schema == nil {
			return nil
		}
		var out []string
		for _, ix := range ixs {
			if ix != nil && ix.Name != "" {
				out = append(out, t.Schema.Name+"."+ix.Name)
			}
		}
		return out
	}
	created := func(c *migrate.Change) []string {
		switch x := c.Source.(type) {
		case *sqlschema.AddTable:
			return append(names(x.T, append(slices.Clone(x.T.Indexes), x.T.PrimaryKey)...), qualified(x.T))
		case *sqlschema.ModifyTable:
			var out []string
			for _, sub := range x.Changes {
				switch y := sub.(type) {
				case *sqlschema.AddIndex:
					out = append(out, names(x.T, y.I)...)
				case *sqlschema.AddPrimaryKey:
					out = append(out, names(x.T, y.P)...)
				}
			}
			return out
		}
		return nil
	}
	for i := 0; i < len(changes); i++ {
		d, ok := changes[i].Source.(*sqlschema.DropTable)
		if !ok || d.T.Schema == nil {
			continue
		}
		held := map[string]bool{qualified(d.T): true}
		for _, n := range names(d.T, append(slices.Clone(d.T.Indexes), d.T.PrimaryKey)...) {
			held[n] = true
		}
		for j := range i {
			if slices.ContainsFunc(created(changes[j]), func(n string) bool { return held[n] }) {
				c := changes[i]
				copy(changes[j+1:i+1], changes[j:i])
				changes[j] = c
				break
			}
		}
	}
	return changes
}

// qualified is a table's name as inherits keys it, "schema.table".
func qualified(t *sqlschema.Table) string {
	if t.Schema == nil {
		return t.Name
	}
	return t.Schema.Name + "." + t.Name
}

// onlyParent is c's statement (serialSequence), but for the columns atlas
// drops from a table others inherit from (parents, "schema.table"),
// dropped from it ONLY: the children keep theirs, as their own columns,
// and those the desired schema drops from a child too go in the child's
// own statement (without ONLY, PostgreSQL drops a child's inherited
// column with its parent's, and the child's statement then fails, or a
// child declaring it anew would lose its values).
func onlyParent(c *migrate.Change, parents map[string]bool) string {
	cmd := serialSequence(c)
	m, ok := c.Source.(*sqlschema.ModifyTable)
	if !ok || m.T.Schema == nil || !parents[m.T.Schema.Name+"."+m.T.Name] || !strings.HasPrefix(cmd, "ALTER TABLE ") {
		return cmd
	}
	for _, sub := range m.Changes {
		if _, ok := sub.(*sqlschema.DropColumn); !ok {
			// ONLY refuses a column added to a parent alone.
			return cmd
		}
	}
	return "ALTER TABLE ONLY " + strings.TrimPrefix(cmd, "ALTER TABLE ")
}

// parents are the tables of the side's schemas that others inherit from
// (not partitioned ones), as "schema.table".
func (sd *side) parents() map[string]bool {
	out := map[string]bool{}
	for _, ps := range sd.inherits() {
		for _, p := range ps {
			out[p] = true
		}
	}
	return out
}

// inherits is the parents of each inheriting table of the side's schemas,
// as "schema.table" (the catalog qualifies a parent not first on the
// search path of its child's schema).
func (sd *side) inherits() map[string][]string {
	out := map[string][]string{}
	for _, st := range sd.schemas {
		for _, o := range st.objects {
			if o.Kind != "table property" {
				continue
			}
			for _, p := range pgcatalog.Parents(o.Def) {
				child := st.name + "." + unquoteIdent(strings.TrimPrefix(o.Name, pgcatalog.QuoteIdent(st.name)+"."))
				schema, name := splitQualified(p, st.name)
				out[child] = append(out[child], schema+"."+name)
			}
		}
	}
	return out
}

// inheritanceDepth is how many generations of parents each inheriting
// table has (a cycle, which PostgreSQL refuses, would stop at the count of
// tables).
func (sd *side) inheritanceDepth() map[string]int {
	in := sd.inherits()
	depth := map[string]int{}
	var of func(t string, seen int) int
	of = func(t string, seen int) int {
		if d, ok := depth[t]; ok || seen > len(in) {
			return d
		}
		d := 0
		for _, p := range in[t] {
			d = max(d, of(p, seen+1)+1)
		}
		depth[t] = d
		return d
	}
	for t := range in {
		of(t, 0)
	}
	return depth
}

// serialSequence is c's statement, but for the sequence atlas creates for
// a column become serial: atlas writes no type for it, so it would be a
// bigint sequence where PostgreSQL gives a serial (and smallserial) one of
// the column's type.
func serialSequence(c *migrate.Change) string {
	m, ok := c.Source.(*sqlschema.ModifyColumn)
	if !ok || !strings.HasPrefix(c.Cmd, "CREATE SEQUENCE IF NOT EXISTS ") || !strings.Contains(c.Cmd, " OWNED BY ") {
		return c.Cmd
	}
	st, ok := m.To.Type.Type.(*postgres.SerialType)
	if !ok {
		return c.Cmd
	}
	typ := map[string]string{postgres.TypeSmallSerial: postgres.TypeSmallInt, postgres.TypeSerial: postgres.TypeInteger, postgres.TypeBigSerial: postgres.TypeBigInt}[strings.ToLower(st.T)]
	if typ == "" {
		return c.Cmd
	}
	return strings.Replace(c.Cmd, " OWNED BY ", " AS "+typ+" OWNED BY ", 1)
}

// schemaOrder puts a schema's objects (views, routines, ...) after those
// of the schemas its objects on side read: with the desired side, the
// order to create in (a view reading another schema's view after it);
// reversed, with the live side, the order to drop in.
func schemaOrder(cmp *comparison, side *side) []schemaObjects {
	reads := map[string]map[string]bool{}
	for _, d := range side.schemas {
		reads[d.name] = map[string]bool{}
		for _, o := range d.objects {
			for _, dep := range o.Deps {
				for _, other := range side.schemas {
					_, name, _ := strings.Cut(dep, " ")
					if other.name != d.name && strings.HasPrefix(strings.TrimPrefix(name, "view "), pgcatalog.QuoteIdent(other.name)+".") {
						reads[d.name][other.name] = true
					}
				}
			}
		}
	}
	var out []schemaObjects
	done := map[string]bool{}
	var visit func(o schemaObjects)
	visit = func(o schemaObjects) {
		if done[o.schema] {
			return
		}
		done[o.schema] = true
		for _, other := range cmp.objects {
			if reads[o.schema][other.schema] {
				visit(other)
			}
		}
		out = append(out, o)
	}
	for _, o := range cmp.objects {
		visit(o)
	}
	return out
}

// judge gives the reasons for a planned change, joined.
func judge(c sqlschema.Change) string {
	var reasons []string
	for _, v := range classify(c) {
		reasons = append(reasons, v.reason)
	}
	return strings.Join(reasons, "; ")
}

// touchedProtected lists the protected tables changes and objects would
// create, drop or modify (a constraint, trigger or policy of theirs
// included). A table of a schema other than public is shown qualified.
func touchedProtected(changes []sqlschema.Change, objects []schemaObjects, protected []string) []string {
	if len(protected) == 0 {
		return nil
	}
	seen := map[string]bool{}
	touch := func(schemaName, table string) {
		shown, full := table, schemaName+"."+table
		if schemaName != Managed {
			shown = full
		}
		for _, pat := range protected {
			// An unqualified pattern protects the table in every schema.
			target := full
			if !strings.Contains(pat, ".") {
				target = table
			}
			if ok, _ := path.Match(pat, target); ok || pat == target {
				seen[shown] = true
			}
		}
	}
	for _, c := range changes {
		var t *sqlschema.Table
		switch c := c.(type) {
		case *sqlschema.AddTable:
			t = c.T
		case *sqlschema.DropTable:
			t = c.T
		case *sqlschema.ModifyTable:
			t = c.T
		case *sqlschema.RenameTable:
			t = c.From
		default:
			continue
		}
		schemaName := Managed
		if t.Schema != nil {
			schemaName = t.Schema.Name
		}
		touch(schemaName, t.Name)
	}
	for _, o := range objects {
		for _, s := range append(slices.Clone(o.planned.Before), o.planned.After...) {
			if s.Table != "" {
				touch(o.schema, s.Table)
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

// splitQualified is the schema and name of a relation as regclass prints
// it, "t", "s.t" or quoted parts; in is the schema of an unqualified one.
func splitQualified(printed, in string) (schema, name string) {
	quoted := false
	for i, r := range printed {
		switch {
		case r == '"':
			quoted = !quoted
		case r == '.' && !quoted:
			return unquoteIdent(printed[:i]), unquoteIdent(printed[i+1:])
		}
	}
	return in, unquoteIdent(printed)
}

// unquoteIdent is the name quote_ident printed as q.
func unquoteIdent(q string) string {
	if len(q) >= 2 && q[0] == '"' && q[len(q)-1] == '"' {
		return strings.ReplaceAll(q[1:len(q)-1], `""`, `"`)
	}
	return q
}
