// Package migrate runs ptah's versioned migrations: ordered up-migration
// files checked against a checksum file and recorded in a revision table.
// It refuses a history that was edited, lost, reordered or left half-applied,
// and applies each migration in its own transaction under the writer lock.
package migrate

import (
	"crypto/sha256"
	"encoding/hex"
	"fmt"
	"math"
	"os"
	"path/filepath"
	"regexp"
	"sort"
	"strconv"
	"strings"

	"ptah.run/operator/operator/report"
)

// SumFile is the checksum file of a migrations directory, written by
// `ptah migrations hash`. Its lines are "sha256:HEX  FILE" for every SQL file,
// sorted by name, then "total sha256:HEX" over those lines.
const SumFile = "ptah.sum"

var fileName = regexp.MustCompile(`^([0-9]+)_([A-Za-z0-9_.-]+?)\.(up|down)\.sql$`)

// Migration is one up-migration file.
type Migration struct {
	Version  int64  `json:"version"`
	Name     string `json:"name"`
	File     string `json:"file"`
	Checksum string `json:"checksum"`
	path     string // for messages: the directory as given and File
	text     string
}

// Dir is a migrations directory whose files match its checksum file.
type Dir struct {
	Path       string
	Migrations []Migration // ascending by version
}

// sqlFiles reads every .sql file of dir, keyed by name.
func sqlFiles(dir string) (map[string][]byte, error) {
	entries, err := os.ReadDir(dir)
	if err != nil {
		return nil, report.Errorf(report.Usage, "read migrations directory: %v", err)
	}
	files := map[string][]byte{}
	for _, e := range entries {
		if e.IsDir() || !strings.HasSuffix(e.Name(), ".sql") {
			continue
		}
		b, err := os.ReadFile(filepath.Join(dir, e.Name()))
		if err != nil {
			return nil, report.Errorf(report.Usage, "read %s: %v", e.Name(), err)
		}
		files[e.Name()] = b
	}
	return files, nil
}

func checksum(b []byte) string {
	s := sha256.Sum256(b)
	return "sha256:" + hex.EncodeToString(s[:])
}

// sumOf renders the checksum file for files.
func sumOf(files map[string][]byte) []byte {
	names := make([]string, 0, len(files))
	for n := range files {
		names = append(names, n)
	}
	sort.Strings(names)
	var body strings.Builder
	for _, n := range names {
		fmt.Fprintf(&body, "%s  %s\n", checksum(files[n]), n)
	}
	return []byte(body.String() + "total " + checksum([]byte(body.String())) + "\n")
}

// Hash writes dir's checksum file from its current SQL files, once each
// up-migration passes the checks Up makes before running it (prepare).
func Hash(dir string) (*Dir, error) {
	files, err := sqlFiles(dir)
	if err != nil {
		return nil, err
	}
	d, err := parse(dir, files)
	if err != nil {
		return nil, err
	}
	// A file ptah would refuse to run is refused before it can be pushed.
	for _, m := range d.Migrations {
		if _, err := prepare(m); err != nil {
			return nil, err
		}
	}
	if err := os.WriteFile(filepath.Join(dir, SumFile), sumOf(files), 0o644); err != nil {
		return nil, report.Errorf(report.Usage, "write %s: %v", SumFile, err)
	}
	return ReadDir(dir)
}

// ReadDir reads dir and checks its files against the checksum file.
func ReadDir(dir string) (*Dir, error) {
	files, err := sqlFiles(dir)
	if err != nil {
		return nil, err
	}
	sum, err := os.ReadFile(filepath.Join(dir, SumFile))
	if err != nil {
		return nil, report.Errorf(report.ChecksumMismatch, "%s has no readable %s (%v); run ptah migrations hash --dir %s after reviewing the files", dir, SumFile, err, dir)
	}
	if want := sumOf(files); string(sum) != string(want) {
		return nil, report.Errorf(report.ChecksumMismatch, "the files of %s do not match its %s (%s); a file was added, removed or edited after hashing", dir, SumFile, sumDiff(string(sum), string(want)))
	}
	return parse(dir, files)
}

// sumDiff names the first file whose line differs between two checksum files.
func sumDiff(have, want string) string {
	hl := map[string]string{}
	for _, l := range strings.Split(have, "\n") {
		if c, f, ok := strings.Cut(l, "  "); ok {
			hl[f] = c
		}
	}
	for _, l := range strings.Split(want, "\n") {
		if c, f, ok := strings.Cut(l, "  "); ok {
			if old, listed := hl[f]; !listed {
				return f + " is not listed"
			} else if old != c {
				return f + " changed"
			}
			delete(hl, f)
		}
	}
	for f := range hl {
		return f + " is listed but missing"
	}
	return "the file is malformed"
}

func parse(dir string, files map[string][]byte) (*Dir, error) {
	d := &Dir{Path: dir}
	seen := map[int64]string{}
	for name, b := range files {
		m := fileName.FindStringSubmatch(name)
		if m == nil {
			return nil, report.Errorf(report.Parse, "%s: not a migration file name; want NNNNNNNNNN_name.up.sql or .down.sql", name)
		}
		if m[3] == "down" {
			continue
		}
		v, err := strconv.ParseInt(m[1], 10, 64)
		if err != nil || v < 1 { // versions start at 1, as PtahMigrationPlan's do
			return nil, report.Errorf(report.Parse, "%s: version %s is out of range (1 to %d)", name, m[1], int64(math.MaxInt64))
		}
		if other, dup := seen[v]; dup {
			return nil, report.Errorf(report.Parse, "%s and %s have the same version %d", other, name, v)
		}
		seen[v] = name
		d.Migrations = append(d.Migrations, Migration{Version: v, Name: m[2], File: name, Checksum: checksum(b), path: filepath.Join(dir, name), text: string(b)})
	}
	sort.Slice(d.Migrations, func(i, j int) bool { return d.Migrations[i].Version < d.Migrations[j].Version })
	return d, nil
}

// Files lists the directory's SQL files and checksum file in name order,
// the content of a migrations artifact.
func Files(dir string) ([]string, error) {
	if _, err := ReadDir(dir); err != nil {
		return nil, err
	}
	files, err := sqlFiles(dir)
	if err != nil {
		return nil, err
	}
	names := []string{SumFile}
	for n := range files {
		names = append(names, n)
	}
	sort.Strings(names[1:])
	return names, nil
}
