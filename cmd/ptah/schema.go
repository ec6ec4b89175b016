package main

import (
	"context"
	"flag"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"time"

	"ptah.run/operator/operator/artifact"
	"ptah.run/operator/operator/database"
	"ptah.run/operator/operator/devdb"
	"ptah.run/operator/operator/report"
	"ptah.run/operator/operator/schema"
)

func schemaPush(fs *flag.FlagSet) action {
	files := listFlag(fs, "schema-file", "SQL DDL file to pack, repeatable; layers keep this order")
	annotations := listFlag(fs, "annotation", "KEY=VALUE manifest annotation, repeatable")
	client := newOCIClient(fs)
	return func(ctx context.Context, args []string) (any, bool, error) {
		ref, err := oneArg(args, "the reference oci://HOST/REPO:TAG")
		if err != nil {
			return nil, false, err
		}
		if len(*files) == 0 {
			return nil, false, report.Errorf(report.Usage, "pass --schema-file FILE.sql at least once")
		}
		return pushFiles(ctx, client(), ref, artifact.SchemaArtifactType, artifact.SchemaLayerMediaType, *files, *annotations)
	}
}

// pushFiles packs files as the layers of one artifact and pushes it.
func pushFiles(ctx context.Context, c *artifact.Client, ref, artifactType, layerType string, files, annotations []string) (any, bool, error) {
	layers, err := readArtifactFiles(files)
	if err != nil {
		return nil, false, err
	}
	ann, err := parseAnnotations(annotations)
	if err != nil {
		return nil, false, err
	}
	p, err := c.Push(ctx, ref, artifactType, layerType, layers, ann)
	if err != nil {
		return nil, false, err
	}
	return pushedText{p}, false, nil
}

type pushedText struct{ *artifact.Pushed }

func (p pushedText) Text() string { return p.Reference + "\n" }

func readArtifactFiles(paths []string) ([]artifact.File, error) {
	var out []artifact.File
	for _, p := range paths {
		b, err := os.ReadFile(p)
		if err != nil {
			return nil, report.Errorf(report.Usage, "read %s: %v", p, err)
		}
		out = append(out, artifact.File{Name: filepath.Base(p), Data: b})
	}
	return out, nil
}

func parseAnnotations(kvs []string) (map[string]string, error) {
	m := map[string]string{}
	for _, kv := range kvs {
		k, v, ok := strings.Cut(kv, "=")
		if !ok || k == "" {
			return nil, report.Errorf(report.Usage, "--annotation %q: want KEY=VALUE", kv)
		}
		m[k] = v
	}
	return m, nil
}

// pulledSchema is what schema pull reports.
type pulledSchema struct {
	artifact.Resolved
	Files []artifact.File `json:"files"`
	Out   string          `json:"out"`
}

func schemaPull(fs *flag.FlagSet) action {
	out := fs.String("out", "", "write the schema's SQL files, concatenated in order, to this file")
	client := newOCIClient(fs)
	return func(ctx context.Context, args []string) (any, bool, error) {
		ref, err := oneArg(args, "the reference")
		if err != nil {
			return nil, false, err
		}
		if *out == "" {
			return nil, false, report.Errorf(report.Usage, "pass --out FILE")
		}
		p, err := client().Pull(ctx, ref, artifact.SchemaArtifactType)
		if err != nil {
			return nil, false, err
		}
		var sql strings.Builder
		for _, f := range p.Files {
			fmt.Fprintf(&sql, "-- ptah: %s\n%s", f.Name, f.Data)
			if !strings.HasSuffix(string(f.Data), "\n") {
				sql.WriteString("\n")
			}
		}
		if err := os.WriteFile(*out, []byte(sql.String()), 0o644); err != nil {
			return nil, false, report.Errorf(report.Usage, "write %s: %v", *out, err)
		}
		return pulledSchema{Resolved: p.Resolved, Files: p.Files, Out: *out}, false, nil
	}
}

// desiredFlags are the flags of the commands that compare with a desired schema.
type desiredFlags struct {
	files     *stringList
	schemas   *stringList
	exclude   *stringList
	devURL    *string
	throwaway *bool
	db        dbFlags
}

func newDesiredFlags(fs *flag.FlagSet) desiredFlags {
	return desiredFlags{
		files:     listFlag(fs, "schema-file", "desired-state SQL file, repeatable; run in this order"),
		schemas:   listFlag(fs, "schema", "database schema ptah keeps, repeatable (default public alone); the objects of any other schema are neither planned nor dropped"),
		exclude:   listFlag(fs, "exclude", "atlas glob of objects to leave alone (\"t\", \"t.c\", \"audit_*\"), repeatable"),
		devURL:    fs.String("dev-url", "", "dev database: a PostgreSQL server other than the target's, where each run loads the desired SQL into a fresh database and drops it; its role needs CREATEDB and CREATEROLE (the desired SQL runs as a role ptah creates per run, ptah_dev_*, logging in by password to its own database: pg_hba must allow that) (default $"+devdb.URLEnv+")"),
		throwaway: fs.Bool("dev-throwaway", false, "start a throwaway PostgreSQL (initdb and postgres from PATH or /usr/lib/postgresql/*/bin, unix socket only, removed after) as the dev database"),
		db:        newDBFlags(fs),
	}
}

// open connects read-only to the target and to the dev server (started
// first with --dev-throwaway); close releases them.
func (d desiredFlags) open(ctx context.Context) (db *database.DB, opts schema.Options, close func(), err error) {
	opts.Exclude = *d.exclude
	opts.Schemas = *d.schemas
	devURL := *d.devURL
	if devURL == "" && !*d.throwaway {
		devURL = os.Getenv(devdb.URLEnv)
	}
	if devURL != "" && *d.throwaway {
		return nil, opts, nil, report.Errorf(report.Usage, "--dev-url and --dev-throwaway both name a dev database: pass one")
	}
	if devURL == "" && !*d.throwaway {
		return nil, opts, nil, report.Errorf(report.Usage, "no dev database: the desired SQL is loaded into a dev database, never into the target; pass --dev-url URL (or set $%s) or --dev-throwaway", devdb.URLEnv)
	}
	if db, err = d.db.openReadOnly(ctx); err != nil {
		return nil, opts, nil, err
	}
	var local *devdb.Local
	if *d.throwaway {
		if local, err = devdb.StartLocal(ctx); err != nil {
			db.Close()
			return nil, opts, nil, err
		}
		opts.Dev, err = local.Open(ctx, *d.db.connectTimeout)
	} else {
		opts.Dev, err = devdb.Open(ctx, devURL, *d.db.connectTimeout)
	}
	if err != nil {
		db.Close()
		if local != nil {
			local.Stop()
		}
		return nil, opts, nil, err
	}
	return db, opts, func() {
		db.Close()
		opts.Dev.Close()
		if local != nil {
			local.Stop()
		}
	}, nil
}

type planText struct{ *schema.Plan }

func (p planText) Text() string {
	var b strings.Builder
	kind := "safe"
	if p.Destructive {
		kind = "destructive"
	}
	fmt.Fprintf(&b, "-- plan %s: %d statement(s), %s\n-- base %s\n-- desired %s\n", p.Digest, len(p.Statements), kind, p.BaseFingerprint, p.DesiredFingerprint)
	for _, s := range p.Statements {
		fmt.Fprintf(&b, "-- %s: %s\n", s.Severity, s.Reason)
		if h := schema.HazardLine(s); h != "" {
			fmt.Fprintf(&b, "--   %s\n", h)
		}
		fmt.Fprintf(&b, "%s;\n", s.SQL)
	}
	return b.String()
}

func schemaPlan(fs *flag.FlagSet) action {
	d := newDesiredFlags(fs)
	protected := listFlag(fs, "protected-table", "table name or glob the plan may not touch, repeatable")
	output := fs.String("output", "", "write the plan document to this file")
	concurrent := fs.Bool("concurrent-indexes", false, "build and drop the indexes of existing tables with CONCURRENTLY, each outside the plan's transaction, so writes go on")
	return func(ctx context.Context, args []string) (any, bool, error) {
		if err := noArgs(args); err != nil {
			return nil, false, err
		}
		files, err := schema.ReadFiles(*d.files)
		if err != nil {
			return nil, false, err
		}
		db, opts, closeDBs, err := d.open(ctx)
		if err != nil {
			return nil, false, err
		}
		defer closeDBs()
		opts.Protected = *protected
		opts.ConcurrentIndexes = *concurrent
		p, err := schema.ComputePlan(ctx, db, files, opts)
		if err != nil {
			return nil, false, err
		}
		if *output != "" {
			b, err := p.Marshal()
			if err != nil {
				return nil, false, err
			}
			if err := os.WriteFile(*output, b, 0o644); err != nil {
				return nil, false, report.Errorf(report.Usage, "write the plan to %s: %v", *output, err)
			}
		}
		return planText{p}, false, nil
	}
}

type driftText struct{ *schema.Drift }

func (d driftText) Text() string {
	if !d.Drift.Drift {
		return "no drift\n"
	}
	var b strings.Builder
	fmt.Fprintf(&b, "drift: %d change(s), highest severity %s\n", d.Changes, d.HighestSeverity)
	for _, c := range sortedKeys(d.Categories) {
		fmt.Fprintf(&b, "  %s: %d\n", c, d.Categories[c])
	}
	for _, o := range d.Objects {
		fmt.Fprintf(&b, "  %s %s (%s): %s\n", o.Category, o.Object, o.Severity, o.Reason)
	}
	return b.String()
}

func schemaDrift(fs *flag.FlagSet) action {
	d := newDesiredFlags(fs)
	objects := fs.Bool("show-objects", false, "name each differing object in the report")
	return func(ctx context.Context, args []string) (any, bool, error) {
		if err := noArgs(args); err != nil {
			return nil, false, err
		}
		files, err := schema.ReadFiles(*d.files)
		if err != nil {
			return nil, false, err
		}
		db, opts, closeDBs, err := d.open(ctx)
		if err != nil {
			return nil, false, err
		}
		defer closeDBs()
		dr, err := schema.ComputeDrift(ctx, db, files, opts, *objects)
		if err != nil {
			return nil, false, err
		}
		return driftText{dr}, dr.Drift, nil
	}
}

func schemaApply(fs *flag.FlagSet) action {
	planFile := fs.String("plan", "", "the plan document written by schema plan --output")
	autoApprove := fs.Bool("auto-approve", false, "apply without asking; required unless --dry-run")
	allowDestructive := fs.Bool("allow-destructive", false, "apply a plan holding destructive statements")
	dryRun := fs.Bool("dry-run", false, "check the lock, the plan's digest and base state, execute nothing")
	lockTimeout := fs.Duration("lock-timeout", time.Minute, "give up when the ptah writer lock, or any lock a statement needs, is not granted within this")
	dbf := newDBFlags(fs)
	return func(ctx context.Context, args []string) (any, bool, error) {
		if err := noArgs(args); err != nil {
			return nil, false, err
		}
		if *planFile == "" {
			return nil, false, report.Errorf(report.Usage, "pass --plan PLAN.json")
		}
		b, err := os.ReadFile(*planFile)
		if err != nil {
			return nil, false, report.Errorf(report.Usage, "read the plan: %v", err)
		}
		p, err := schema.ReadPlan(*planFile, b)
		if err != nil {
			return nil, false, err
		}
		if !*autoApprove && !*dryRun {
			return nil, false, report.Errorf(report.ApprovalRequired, "apply changes the database: pass --auto-approve (or --dry-run to check only)")
		}
		open := dbf.open
		if *dryRun {
			open = dbf.openReadOnly // it only reads, and takes the lock to check it
		}
		db, err := open(ctx)
		if err != nil {
			return nil, false, err
		}
		defer db.Close()
		res, err := schema.Apply(ctx, db, p, schema.ApplyOptions{AllowDestructive: *allowDestructive, DryRun: *dryRun, LockTimeout: *lockTimeout})
		if err != nil {
			return nil, false, err
		}
		return res, false, nil
	}
}
