package schema

import (
	"fmt"
	"strings"

	sqlschema "ariga.io/atlas/sql/schema"

	"ptah.run/operator/operator/pgcatalog"
	"ptah.run/operator/operator/report"
)

// planObjects plans the objects atlas does not manage (pgcatalog) around
// atlas's changes, and refuses a comparison whose plan would leave a
// difference unseen: an object of a kind ptah does not plan that is not the
// same on both sides (report.UnmanagedObject), or, when the plan is empty,
// any catalog difference atlas did not turn into a statement
// (report.UnplannedDifference). Objects printed the same on both sides are
// checked and need nothing.
func planObjects(live, desired *state, changes []sqlschema.Change, atlasPlanned int, atlasObjects, retyped []string) (pgcatalog.Planned, []pgcatalog.Difference, error) {
	var unmanaged, missed []pgcatalog.Difference
	for _, d := range pgcatalog.Diff(live.objects, desired.objects) {
		if d.Object().Managed {
			missed = append(missed, d)
		} else {
			unmanaged = append(unmanaged, d)
		}
	}
	unmanaged = append(unmanaged, remade(live, desired, unmanaged, missed)...)
	renames, named, renamed, missed := pgcatalog.RenamePrimaryKeys(missed)
	a := around(live.name, changes)
	a.Atlas = atlasObjects
	a.Recreated = live.recreatedTypes
	a.Rewritten = append(a.Rewritten, retyped...)
	p := pgcatalog.Plan(unmanaged, live.objects, desired.objects, a)
	p.Before = append(renames, p.Before...)
	p.After = append(p.After, named...)
	if len(p.Refused) > 0 {
		return p, nil, report.Errorf(report.UnmanagedObject, "ptah does not plan %s: %s; no plan was written: remove it from the side that has it, or make both sides define it the same way%s", kinds(p.Refused), listDiffs(p.Refused), partitionHint(p.Refused))
	}
	if atlasPlanned+p.Len() == 0 && len(missed) > 0 {
		return p, nil, report.Errorf(report.UnplannedDifference, "the database differs from the desired schema in a way ptah cannot plan: %s; no plan was written (an empty plan would claim they are in sync)", listDiffs(missed))
	}
	return p, append(unmanaged, renamed...), nil
}

func kinds(ds []pgcatalog.Difference) string {
	seen := map[string]bool{}
	var ks []string
	for _, d := range ds {
		if k := d.Object().Kind; !seen[k] {
			seen[k] = true
			ks = append(ks, k)
		}
	}
	return strings.Join(ks, ", ")
}

func listDiffs(ds []pgcatalog.Difference) string {
	const most = 5
	var parts []string
	for i, d := range ds {
		if i == most {
			parts = append(parts, fmt.Sprintf("and %d more", len(ds)-most))
			break
		}
		parts = append(parts, d.Describe())
	}
	return strings.Join(parts, "; ")
}

// partitionHint says what to do about what a partition has of its own.
func partitionHint(ds []pgcatalog.Difference) string {
	for _, d := range ds {
		if strings.HasPrefix(d.Object().Kind, "partition ") {
			return " (declare a partition's column defaults, NOT NULL, comments and storage parameters on its partitioned table, which gives them to every partition)"
		}
	}
	return ""
}

// remade is a difference, each side as it is, for every object live.recreate
// names that does not differ already: pgcatalog drops it before and creates
// it again after atlas's statements.
func remade(live, desired *state, diffs ...[]pgcatalog.Difference) []pgcatalog.Difference {
	if len(live.recreate) == 0 {
		return nil
	}
	differs := map[string]bool{}
	for _, ds := range diffs {
		for _, d := range ds {
			differs[d.Object().Key()] = true
		}
	}
	by := func(st *state) map[string]*pgcatalog.Object {
		m := map[string]*pgcatalog.Object{}
		for i := range st.objects {
			m[st.objects[i].Key()] = &st.objects[i]
		}
		return m
	}
	liveBy, desiredBy := by(live), by(desired)
	var out []pgcatalog.Difference
	for _, k := range live.recreate {
		if !differs[k] && liveBy[k] != nil && desiredBy[k] != nil {
			out = append(out, pgcatalog.Difference{Live: liveBy[k], Desired: desiredBy[k]})
			differs[k] = true
		}
	}
	return out
}
