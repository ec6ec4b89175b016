package pgcatalog

import (
	"slices"
	"strings"
)

// A "privileges" object is what is granted on one object that takes
// grants (a table, view, materialized view, sequence, foreign table,
// column, routine or type), named for it ("view v", "column t.c"): Def
// lists grantee:PRIVILEGE entries (PUBLIC or a role; * when grantable)
// as the catalog holds them, the owner's and the session's own role's
// left out; Parts lists those the object has when it is created (a
// routine's EXECUTE and a type's USAGE for PUBLIC); Ident is the
// statement's " ON TABLE t" (" (c) ON TABLE t" for a column).

// privilegeSteps are the GRANT and REVOKE statements taking the
// privileges of the differences privs from live to desired. An object
// created by this plan (new, or dropped and created again) starts from
// its creation's grants, not the live object's; one the desired schema
// drops takes its grants with it. A column's grants are revoked before
// atlas's statements (which may drop the column) and granted after them
// (which may add it); the rest is granted and revoked last, when every
// object exists.
func privilegeSteps(privs []Difference, desiredBy map[string]*Object, recreated map[string]bool) (before, after []Step) {
	seen := map[string]bool{}
	for _, d := range privs {
		o := d.Object()
		seen[o.Key()] = true
		column := strings.HasPrefix(o.Name, "column ")
		switch {
		case d.Desired == nil && !column:
			continue // the object is dropped, its grants with it
		case d.Desired == nil:
			// The column has no grants of its own left, or is dropped.
			before = append(before, grantSteps(*d.Live, entries(d.Live.Def), nil)...)
		case d.Live == nil || recreated[o.Name]:
			after = append(after, grantSteps(*d.Desired, d.Desired.Parts, entries(d.Desired.Def))...)
		case column:
			before = append(before, grantSteps(o, entries(d.Live.Def), nil)...)
			after = append(after, grantSteps(o, nil, entries(d.Desired.Def))...)
		default:
			after = append(after, grantSteps(o, entries(d.Live.Def), entries(d.Desired.Def))...)
		}
	}
	// Created again with grants that did not change: they are granted again.
	for _, name := range sortedSideKeys(recreated) {
		if o := desiredBy["privileges "+name]; o != nil && !seen[o.Key()] {
			after = append(after, grantSteps(*o, o.Parts, entries(o.Def))...)
		}
	}
	return before, after
}

func entries(def string) []string {
	var out []string
	for _, e := range strings.Split(def, ",") {
		if e != "" {
			out = append(out, e)
		}
	}
	return out
}

// grantSteps takes the grants of o from have to want: one REVOKE or
// GRANT per grantee and grant option, privileges in the catalog's order.
func grantSteps(o Object, have, want []string) []Step {
	split := func(es []string) map[string]map[string]string {
		m := map[string]map[string]string{}
		for _, e := range es {
			i := strings.LastIndexByte(e, ':')
			grantee, priv := e[:i], e[i+1:]
			opt := ""
			if strings.HasSuffix(priv, "*") {
				priv, opt = strings.TrimSuffix(priv, "*"), "*"
			}
			if m[grantee] == nil {
				m[grantee] = map[string]string{}
			}
			m[grantee][priv] = opt
		}
		return m
	}
	h, w := split(have), split(want)
	// A column's Ident is " (c) ON TABLE t": the column list follows
	// each privilege.
	on, cols := o.Ident, ""
	if strings.HasPrefix(on, " (") {
		i := strings.Index(on, ") ON ")
		cols, on = on[1:i+1], on[i+1:]
	}
	var steps []Step
	add := func(verb, grantee string, privs []string, what string, option bool) {
		if len(privs) == 0 {
			return
		}
		slices.Sort(privs)
		listed := slices.Clone(privs)
		if cols != "" {
			for i := range listed {
				listed[i] += " " + cols
			}
		}
		q := verb + strings.Join(listed, ", ") + on
		if strings.HasPrefix(verb, "REVOKE") {
			q += " FROM " + grantee
		} else {
			q += " TO " + grantee
			if option {
				q += " WITH GRANT OPTION"
			}
		}
		reason := what + " " + strings.Join(privs, ", ") + " on " + o.Name + " for " + grantee
		steps = append(steps, Step{SQL: q, Reason: reason, kind: "privileges", name: o.Name, Table: o.Table})
	}
	grantees := map[string]bool{}
	for g := range h {
		grantees[g] = true
	}
	for g := range w {
		grantees[g] = true
	}
	for _, g := range sortedSideKeys(grantees) {
		var revoke, revokeOption, grantPlain, grantOption []string
		for priv, opt := range h[g] {
			wopt, ok := w[g][priv]
			switch {
			case !ok:
				revoke = append(revoke, priv)
			case opt == "*" && wopt == "":
				revokeOption = append(revokeOption, priv)
			}
		}
		for priv, opt := range w[g] {
			hopt, ok := h[g][priv]
			switch {
			case opt == "*" && (!ok || hopt == ""):
				grantOption = append(grantOption, priv)
			case opt == "" && !ok:
				grantPlain = append(grantPlain, priv)
			}
		}
		add("REVOKE ", g, revoke, "revokes", false)
		add("REVOKE GRANT OPTION FOR ", g, revokeOption, "revokes the grant option of", false)
		add("GRANT ", g, grantPlain, "grants", false)
		add("GRANT ", g, grantOption, "grants with grant option", true)
	}
	return steps
}
