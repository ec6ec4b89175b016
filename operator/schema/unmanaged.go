package schema

import (
	"fmt"
	"strings"

	"ptah.run/operator/operator/pgcatalog"
	"ptah.run/operator/operator/report"
)

// checkCoverage refuses a comparison whose plan would leave a difference
// unseen: an object of a kind ptah does not plan that is not the same on both
// sides (report.UnmanagedObject), or, when the plan is empty, any catalog
// difference atlas did not turn into a statement (report.UnplannedDifference).
// Objects printed the same on both sides are checked and need nothing.
func checkCoverage(live, desired *state, planned int) error {
	var unmanaged, missed []pgcatalog.Difference
	for _, d := range pgcatalog.Diff(live.objects, desired.objects) {
		if d.Object().Managed {
			missed = append(missed, d)
		} else {
			unmanaged = append(unmanaged, d)
		}
	}
	if len(unmanaged) > 0 {
		return report.Errorf(report.UnmanagedObject, "ptah does not plan %s: %s; no plan was written: remove it from the side that has it, or make both sides define it the same way", kinds(unmanaged), listDiffs(unmanaged))
	}
	if planned == 0 && len(missed) > 0 {
		return report.Errorf(report.UnplannedDifference, "the database differs from the desired schema in a way ptah cannot plan: %s; no plan was written (an empty plan would claim they are in sync)", listDiffs(missed))
	}
	return nil
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
