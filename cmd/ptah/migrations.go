package main

import (
	"context"
	"flag"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"time"

	"ptah.run/operator/operator/artifact"
	"ptah.run/operator/operator/migrate"
	"ptah.run/operator/operator/report"
)

func dirFlag(fs *flag.FlagSet) *string {
	return fs.String("dir", "", "migrations directory: NNNNNNNNNN_name.up.sql files and "+migrate.SumFile)
}

func needDir(dir string) error {
	if dir == "" {
		return report.Errorf(report.Usage, "pass --dir DIR")
	}
	return nil
}

type hashed struct {
	Dir        string              `json:"dir"`
	SumFile    string              `json:"sumFile"`
	Migrations []migrate.Migration `json:"migrations"`
}

func migrationsHash(fs *flag.FlagSet) action {
	dir := dirFlag(fs)
	return func(ctx context.Context, args []string) (any, bool, error) {
		if err := noArgs(args); err != nil {
			return nil, false, err
		}
		if err := needDir(*dir); err != nil {
			return nil, false, err
		}
		d, err := migrate.Hash(*dir)
		if err != nil {
			return nil, false, err
		}
		return hashed{Dir: *dir, SumFile: filepath.Join(*dir, migrate.SumFile), Migrations: d.Migrations}, false, nil
	}
}

func migrationsStatus(fs *flag.FlagSet) action {
	dir := dirFlag(fs)
	lockTimeout := fs.Duration("lock-timeout", 0, "read under the ptah writer lock, granted within this, so no run is in progress while the history is read (0: take no lock)")
	dbf := newDBFlags(fs)
	return func(ctx context.Context, args []string) (any, bool, error) {
		if err := noArgs(args); err != nil {
			return nil, false, err
		}
		if err := needDir(*dir); err != nil {
			return nil, false, err
		}
		d, err := migrate.ReadDir(*dir)
		if err != nil {
			return nil, false, err
		}
		db, err := dbf.openReadOnly(ctx)
		if err != nil {
			return nil, false, err
		}
		defer db.Close()
		if *lockTimeout < 0 {
			return nil, false, report.Errorf(report.Usage, "--lock-timeout %s: must not be negative", *lockTimeout)
		}
		r, err := migrate.StatusLocked(ctx, db, d, *lockTimeout)
		return reportOrNil(r), false, err
	}
}

// reportOrNil keeps a nil *Report from printing as "null".
func reportOrNil(r *migrate.Report) any {
	if r == nil {
		return nil
	}
	return r
}

func migrationsUp(fs *flag.FlagSet) action {
	dir := dirFlag(fs)
	expect := fs.String("expect-sequence", "", "comma-separated pending versions that were approved (\"none\" for none); refuse to run any other set")
	lockTimeout := fs.Duration("lock-timeout", time.Minute, "give up when the ptah writer lock, or any lock a migration needs, is not granted within this")
	to := fs.Int64("to", 0, "the last version to apply; versions above it stay pending (0: every version)")
	dbf := newDBFlags(fs)
	return func(ctx context.Context, args []string) (any, bool, error) {
		if err := noArgs(args); err != nil {
			return nil, false, err
		}
		if err := needDir(*dir); err != nil {
			return nil, false, err
		}
		if *to < 0 {
			return nil, false, report.Errorf(report.Usage, "--to %d: a version is 1 or more, or 0 for every version", *to)
		}
		seq, err := parseSequence(*expect)
		if err != nil {
			return nil, false, err
		}
		d, err := migrate.ReadDir(*dir)
		if err != nil {
			return nil, false, err
		}
		db, err := dbf.open(ctx)
		if err != nil {
			return nil, false, err
		}
		defer db.Close()
		r, err := migrate.Up(ctx, db, d, migrate.UpOptions{LockTimeout: *lockTimeout, ExpectSequence: seq, To: *to})
		return reportOrNil(r), false, err
	}
}

func parseSequence(s string) ([]int64, error) {
	switch s {
	case "":
		return nil, nil
	case "none":
		return []int64{}, nil
	}
	var seq []int64
	for _, part := range strings.Split(s, ",") {
		v, err := strconv.ParseInt(strings.TrimSpace(part), 10, 64)
		if err != nil {
			return nil, report.Errorf(report.Usage, "--expect-sequence %q: %q is not a version", s, part)
		}
		seq = append(seq, v)
	}
	return seq, nil
}

func migrationsPush(fs *flag.FlagSet) action {
	dir := dirFlag(fs)
	annotations := listFlag(fs, "annotation", "KEY=VALUE manifest annotation, repeatable")
	client := newOCIClient(fs)
	return func(ctx context.Context, args []string) (any, bool, error) {
		ref, err := oneArg(args, "the reference oci://HOST/REPO:TAG")
		if err != nil {
			return nil, false, err
		}
		if err := needDir(*dir); err != nil {
			return nil, false, err
		}
		names, err := migrate.Files(*dir)
		if err != nil {
			return nil, false, err
		}
		paths := make([]string, len(names))
		for i, n := range names {
			paths[i] = filepath.Join(*dir, n)
		}
		return pushFiles(ctx, client(), ref, artifact.MigrationsArtifactType, artifact.MigrationLayerMediaType, paths, *annotations)
	}
}

type pulledMigrations struct {
	artifact.Resolved
	Dir        string              `json:"dir"`
	Migrations []migrate.Migration `json:"migrations"`
}

func migrationsPull(fs *flag.FlagSet) action {
	dir := fs.String("dir", "", "directory to write the migration files into (created if absent)")
	client := newOCIClient(fs)
	return func(ctx context.Context, args []string) (any, bool, error) {
		ref, err := oneArg(args, "the reference")
		if err != nil {
			return nil, false, err
		}
		if err := needDir(*dir); err != nil {
			return nil, false, err
		}
		p, err := client().Pull(ctx, ref, artifact.MigrationsArtifactType)
		if err != nil {
			return nil, false, err
		}
		if err := os.MkdirAll(*dir, 0o755); err != nil {
			return nil, false, report.Errorf(report.Usage, "create %s: %v", *dir, err)
		}
		for _, f := range p.Files {
			// A layer title is a bare file name; anything else could write outside dir.
			if f.Name == "" || f.Name != filepath.Base(f.Name) || strings.HasPrefix(f.Name, ".") {
				return nil, false, report.Errorf(report.ArtifactType, "%s holds a layer titled %q, not a plain file name", p.Reference, f.Name)
			}
			if err := os.WriteFile(filepath.Join(*dir, f.Name), f.Data, 0o644); err != nil {
				return nil, false, report.Errorf(report.Usage, "write %s: %v", f.Name, err)
			}
		}
		d, err := migrate.ReadDir(*dir)
		if err != nil {
			return nil, false, err
		}
		return pulledMigrations{Resolved: p.Resolved, Dir: *dir, Migrations: d.Migrations}, false, nil
	}
}
