// Package normalize rewrites the identifiers a lab generates in published
// output, so two recordings of one scenario differ only where the system
// behaved differently. Every rule is in this file; nothing else (digests,
// fingerprints, plan text, reasons, order) is ever touched.
package normalize

import (
	"regexp"
	"sort"
	"strings"
)

// Placeholders written in place of generated identifiers.
const (
	UID       = "00000000-0000-0000-0000-000000000000"
	Timestamp = "2000-01-01T00:00:00Z"
	RunID     = "run"
)

// rule is one rewrite: every match of re becomes with.
type rule struct {
	name string
	re   *regexp.Regexp
	with string
}

// The rules, in the order they apply. Word boundaries keep a rule from
// matching inside a longer token: a hex digest never contains a UID-shaped
// or run-id-shaped word, because its hex has no boundary inside it.
var fixed = []rule{
	// Kubernetes UIDs (RFC 4122 text form, lower case as the API writes).
	{"uid", regexp.MustCompile(`\b[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}\b`), UID},
	// RFC 3339 timestamps, with optional fraction, in Z or with an offset.
	{"timestamp", regexp.MustCompile(`\b\d{4}-\d{2}-\d{2}[Tt]\d{2}:\d{2}:\d{2}(\.\d+)?([Zz]|[+-]\d{2}:\d{2})`), Timestamp},
}

// Normalizer applies the rules; RunID is the lab's run id (names built
// from it are rewritten), empty when the lab has none.
type Normalizer struct {
	RunID string
	// Names maps the names a lab made for one scenario (its namespace,
	// database, role) to the published names they stand for, so a scenario
	// run in isolation publishes what a serial one would.
	Names []Name
}

// Name is one scenario's own name and the published name it stands for.
type Name struct {
	Own, Published string
}

func (n Normalizer) rules() []rule {
	rs := fixed[:len(fixed):len(fixed)]
	// The longest first, so a name that holds another (storefront_app_x
	// holds storefront_x's prefix) is rewritten whole.
	names := append([]Name(nil), n.Names...)
	sort.SliceStable(names, func(i, j int) bool { return len(names[i].Own) > len(names[j].Own) })
	for _, nm := range names {
		rs = append(rs, rule{"scenario name", regexp.MustCompile(`\b` + regexp.QuoteMeta(nm.Own) + `\b`), nm.Published})
	}
	if n.RunID != "" {
		rs = append(rs, rule{"run id", regexp.MustCompile(`\b` + regexp.QuoteMeta(n.RunID) + `\b`), RunID})
	}
	return rs
}

// Leftover is the first of the scenario's own names still in s after
// normalization (glued to a longer word, so no rule rewrote it), or "".
// Such a line is refused, never published: it would show a reader a name
// their lab does not have.
func (n Normalizer) Leftover(s string) string {
	for _, nm := range n.Names {
		if strings.Contains(s, nm.Own) {
			return nm.Own
		}
	}
	return ""
}

// Line rewrites one line of output. A replacement followed by the padding of
// a column (two or more spaces) is padded back to the width it replaced, or
// takes the difference from that padding, keeping at least one space, so the
// columns after it stay where they were.
func (n Normalizer) Line(s string) string {
	for _, r := range n.rules() {
		s = replace(s, r)
	}
	return s
}

// Text rewrites each line of a multi-line text.
func (n Normalizer) Text(s string) string {
	lines := strings.SplitAfter(s, "\n")
	for i, l := range lines {
		lines[i] = n.Line(l)
	}
	return strings.Join(lines, "")
}

func replace(s string, r rule) string {
	locs := r.re.FindAllStringIndex(s, -1)
	if locs == nil {
		return s
	}
	var b strings.Builder
	last := 0
	for _, loc := range locs {
		start, end := loc[0], loc[1]
		if start < last {
			continue
		}
		b.WriteString(s[last:start])
		b.WriteString(r.with)
		last = end
		pad := spacesAt(s, end)
		if pad < 2 {
			continue
		}
		// In a padded column: keep the next column's position.
		diff := (end - start) - len(r.with)
		switch {
		case diff > 0:
			b.WriteString(strings.Repeat(" ", diff))
		case diff < 0:
			keep := max(pad+diff, 1)
			b.WriteString(strings.Repeat(" ", keep))
			last = end + pad
		}
	}
	b.WriteString(s[last:])
	return b.String()
}

func spacesAt(s string, i int) int {
	n := 0
	for i+n < len(s) && s[i+n] == ' ' {
		n++
	}
	return n
}
