package runner

import (
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"fmt"
	"strconv"
	"strings"

	v1alpha1 "ptah.run/operator/operator/api/v1alpha1"
	"ptah.run/operator/operator/migrate"
)

// sequence is --expect-sequence's form of versions.
func sequence(vs []int64) string {
	if len(vs) == 0 {
		return "none"
	}
	s := make([]string, len(vs))
	for i, v := range vs {
		s[i] = strconv.FormatInt(v, 10)
	}
	return strings.Join(s, ",")
}

// HistoryDigest identifies a migration history: its versions and the
// checksums they were applied with, in order. A plan computed against one
// history is stale against any other.
func HistoryDigest(history []migrate.Revision) string {
	h := sha256.New()
	for _, r := range history {
		fmt.Fprintf(h, "%d %s %t\n", r.Version, r.Checksum, r.Dirty)
	}
	return "sha256:" + hex.EncodeToString(h.Sum(nil))
}

// migrationFields reads ptah migrations status or up's report. A run that
// failed still reports what it committed, so the report is read whatever
// ptah's exit; no report (ptah never reached the database) is no result.
// Pending versions carry the checksums of the pulled files, which the plan
// pins.
func migrationFields(doc *document, dir string) (*v1alpha1.OperationResult, error) {
	if doc == nil || len(doc.Result) == 0 || string(doc.Result) == "null" {
		return nil, nil
	}
	var rep migrate.Report
	if err := json.Unmarshal(doc.Result, &rep); err != nil || rep.Status == "" {
		return nil, fmt.Errorf("ptah %s reported no migration status (%s)", doc.Command, doc.Result)
	}
	m := &v1alpha1.MigrationResult{
		Status:        v1alpha1.MigrationStatus(rep.Status),
		Current:       rep.Current,
		HistoryDigest: HistoryDigest(rep.History),
	}
	for _, v := range rep.AppliedNow {
		m.AppliedNow = append(m.AppliedNow, v.Version)
	}
	if rep.FailedVersion != nil {
		m.FailedVersion = ptr(rep.FailedVersion.Version)
	}
	if len(rep.Pending) > 0 {
		d, err := migrate.ReadDir(dir)
		if err != nil {
			return nil, fmt.Errorf("read the pulled migrations to pin the pending ones' checksums: %v", err)
		}
		sums := map[int64]migrate.Migration{}
		for _, f := range d.Migrations {
			sums[f.Version] = f
		}
		for _, p := range rep.Pending {
			f, ok := sums[p.Version]
			if !ok {
				return nil, fmt.Errorf("ptah reports migration %d pending, and the pulled artifact has no file for it", p.Version)
			}
			m.Pending = append(m.Pending, v1alpha1.PendingMigration{Version: p.Version, Name: p.Name, Checksum: f.Checksum})
		}
	}
	return &v1alpha1.OperationResult{Migrations: m}, nil
}
