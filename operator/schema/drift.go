package schema

import (
	"context"
	"sort"
	"strings"

	"ptah.run/operator/operator/database"
)

// Drift is what `ptah schema drift` reports: how the managed schema differs
// from the desired one. A category names what the database has compared
// with the desired state ("column_missing": the desired column is absent);
// a severity is that of the change that would correct it.
type Drift struct {
	Drift              bool           `json:"drift"`
	Changes            int            `json:"changes"`
	Categories         map[string]int `json:"categories"`
	HighestSeverity    Severity       `json:"highestSeverity,omitempty"`
	BaseFingerprint    string         `json:"baseFingerprint"`
	DesiredFingerprint string         `json:"desiredFingerprint"`
	// Objects is filled only when asked for, since object names can be
	// more than a caller wants to publish.
	Objects []DriftObject `json:"objects,omitempty"`
}

// DriftObject is one differing object.
type DriftObject struct {
	Category string   `json:"category"`
	Object   string   `json:"object"`
	Severity Severity `json:"severity"`
	Reason   string   `json:"reason"`
}

// ComputeDrift compares the managed schema of db with files; opts.Protected
// plays no part.
//
// No drift is reported only when the independent rendering of both sides
// (package catalogproof) agrees they are in sync; otherwise the comparison
// is refused with report.UnplannedDifference naming the lines that differ.
func ComputeDrift(ctx context.Context, db *database.DB, files []File, opts Options, withObjects bool) (*Drift, error) {
	return computeDrift(ctx, db, files, opts, withObjects, true)
}

// computeDrift is ComputeDrift; with proof false it reports the planner's
// own answer, unproven: tests compare the two.
func computeDrift(ctx context.Context, db *database.DB, files []File, opts Options, withObjects, proof bool) (*Drift, error) {
	cmp, err := compare(ctx, db, files, opts)
	if err != nil {
		return nil, err
	}
	d := &Drift{Categories: map[string]int{}, BaseFingerprint: cmp.live.fingerprint, DesiredFingerprint: cmp.desired.fingerprint}
	ds := cmp.domainSides()
	for _, c := range cmp.changes {
		sev := severityOf(hazardsOf(c, "", ds))
		for _, v := range classify(c) {
			d.Changes++
			d.Categories[v.category]++
			if d.HighestSeverity != Destructive {
				d.HighestSeverity = sev
			}
			if withObjects {
				d.Objects = append(d.Objects, DriftObject{Category: v.category, Object: v.object, Severity: sev, Reason: v.reason})
			}
		}
	}
	for _, st := range cmp.live.schemas {
		if st.missing {
			d.Changes++
			d.Categories["schema_missing"]++
			if d.HighestSeverity == "" {
				d.HighestSeverity = Safe
			}
		}
	}
	for i, ix := range cmp.live.invalidIndexes() {
		d.Changes++
		d.Categories["index_invalid"]++
		if d.HighestSeverity == "" {
			d.HighestSeverity = Safe
		}
		if withObjects {
			d.Objects = append(d.Objects, DriftObject{Category: "index_invalid", Object: ix.name + " on " + ix.table, Severity: Safe, Reason: cmp.invalid[i].Reason})
		}
	}
	for _, od := range cmp.objectDiffs {
		o := od.Object()
		cat := strings.ReplaceAll(o.Kind, " ", "_") + "_changed"
		switch {
		case od.Live == nil:
			cat = strings.ReplaceAll(o.Kind, " ", "_") + "_missing"
		case od.Desired == nil:
			cat = strings.ReplaceAll(o.Kind, " ", "_") + "_unexpected"
		}
		d.Changes++
		d.Categories[cat]++
		if d.HighestSeverity == "" {
			d.HighestSeverity = Safe
		}
		if withObjects {
			d.Objects = append(d.Objects, DriftObject{Category: cat, Object: o.String(), Severity: Safe, Reason: od.Describe()})
		}
	}
	sort.SliceStable(d.Objects, func(i, j int) bool { return d.Objects[i].Object < d.Objects[j].Object })
	d.Drift = d.Changes > 0
	if proof && !d.Drift {
		if err := cmp.prove("no drift"); err != nil {
			return nil, err
		}
	}
	return d, nil
}
