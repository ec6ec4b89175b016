// Package pgcatalog reads every object of a PostgreSQL schema as the server
// itself prints it (pg_get_viewdef, pg_get_functiondef, pg_get_triggerdef,
// pg_get_constraintdef, pg_get_indexdef, ...), so two databases can be
// compared object by object whatever SQL created them. It is the part of the
// schema engine atlas lacks: atlas plans tables, columns, indexes,
// constraints, enums and sequences; everything else is read here, and the
// whole catalog is the check that a plan leaves nothing unseen.
package pgcatalog

import (
	"context"
	"database/sql"
	"fmt"
	"path"
	"sort"
	"strings"

	"ptah.run/operator/operator/catalogread"
)

// Object is one catalog object as PostgreSQL prints it.
type Object struct {
	// Kind names what the object is: "view", "function", "trigger", ...
	Kind string
	// Name is the object's name within the schema, with its table for
	// objects that belong to one ("trigger t_audit on t").
	Name string
	// Def is the definition PostgreSQL prints, with names it generates
	// (t_pkey, t_c_check) written <auto> so they compare equal.
	Def string
	// Managed is true for what atlas inspects and plans; the rest is
	// planned by this package or refused.
	Managed bool
	// Table is the table the object belongs to, "" if none; exclusion
	// patterns match it.
	Table string
	// Ident is the object's name as DDL writes it ("t_pkey" ON t), where
	// it differs from Name.
	Ident string
	// Deps are the keys of the objects of the schema it depends on, from
	// pg_depend (views: the relations they read).
	Deps []string
	// Parts are a domain's properties, one a line ("base=integer",
	// "default=0", "notnull=", "check=name CHECK (...)"), for ALTER DOMAIN;
	// for privileges, the grants the object has when it is created.
	Parts []string
}

// Key identifies an object on both sides.
func (o Object) Key() string { return o.Kind + " " + o.Name }

// String names the object for messages.
func (o Object) String() string { return o.Kind + " " + o.Name }

// Querier is what Read needs: a transaction or a database.
type Querier interface {
	QueryContext(ctx context.Context, query string, args ...any) (*sql.Rows, error)
}

// Read returns the objects of schema, sorted by kind and name. The caller
// sets search_path to schema first, so definitions print unqualified the
// same way on both sides. exclude holds atlas-style glob patterns of tables
// ("t", "t.c", "*") whose objects are left out. Objects belonging to an
// extension are left out; the extension itself is listed. withSchemas also
// lists the other user schemas of the database, which ptah does not manage.
func Read(ctx context.Context, q Querier, schema string, exclude []string, withSchemas bool) ([]Object, error) {
	rows, err := q.QueryContext(ctx, catalogread.Objects, schema, withSchemas)
	if err != nil {
		return nil, fmt.Errorf("read the catalog of schema %q: %w", schema, err)
	}
	defer rows.Close()
	var out []Object
	for rows.Next() {
		var o Object
		var def, ident, deps sql.NullString
		if err := rows.Scan(&o.Kind, &o.Name, &def, &o.Managed, &o.Table, &ident, &deps); err != nil {
			return nil, fmt.Errorf("read the catalog of schema %q: %w", schema, err)
		}
		o.Def, o.Ident = def.String, ident.String
		if o.Ident == "" {
			o.Ident = o.Name
		}
		if deps.String != "" {
			if o.Kind == "domain" || o.Kind == "privileges" {
				o.Parts = strings.Split(deps.String, "\n")
			} else {
				o.Deps = strings.Split(deps.String, "\n")
			}
		}
		if excluded(o, exclude) {
			continue
		}
		out = append(out, o)
	}
	if err := rows.Err(); err != nil {
		return nil, fmt.Errorf("read the catalog of schema %q: %w", schema, err)
	}
	sort.Slice(out, func(i, j int) bool {
		if out[i].Kind != out[j].Kind {
			return out[i].Kind < out[j].Kind
		}
		return out[i].Name < out[j].Name
	})
	return out, nil
}

func excluded(o Object, exclude []string) bool {
	name := o.Table
	if name == "" {
		return false
	}
	for _, pat := range exclude {
		first, _, _ := strings.Cut(pat, ".")
		if strings.Contains(pat, ".") && first != "*" {
			// "t.c" leaves out a part of t, not t's other objects.
			continue
		}
		if ok, _ := path.Match(first, name); ok && !strings.Contains(pat, ".") {
			return true
		}
	}
	return false
}

// Difference is one object that is not the same on both sides.
type Difference struct {
	// Live is the object in the database, nil if it is only desired.
	Live *Object
	// Desired is the object in the desired schema, nil if the database
	// holds it and the desired schema does not.
	Desired *Object
}

// Object is whichever side exists, the desired one first.
func (d Difference) Object() Object {
	if d.Desired != nil {
		return *d.Desired
	}
	return *d.Live
}

// Describe says which side holds what, for messages.
func (d Difference) Describe() string {
	switch {
	case d.Live == nil:
		return d.Desired.String() + " (declared in the desired schema, absent from the database)"
	case d.Desired == nil:
		return d.Live.String() + " (in the database, not in the desired schema)"
	}
	return d.Live.String() + " (defined differently: database has " + clip(d.Live.Def) + "; desired is " + clip(d.Desired.Def) + ")"
}

func clip(s string) string {
	s = strings.Join(strings.Fields(s), " ")
	if len(s) > 160 {
		return s[:160] + "..."
	}
	return s
}

// Diff lists the objects that differ between live and desired, in key order.
// Objects of the same key on one side (two unnamed checks alike) are
// counted: the second is "KEY #2", so one side holding more is a difference.
func Diff(live, desired []Object) []Difference {
	byKey := func(objs []Object) map[string]*Object {
		m := map[string]*Object{}
		for i := range objs {
			k := objs[i].Key()
			for n := 2; m[k] != nil; n++ {
				k = fmt.Sprintf("%s #%d", objs[i].Key(), n)
			}
			m[k] = &objs[i]
		}
		return m
	}
	l, d := byKey(live), byKey(desired)
	keys := map[string]bool{}
	for k := range l {
		keys[k] = true
	}
	for k := range d {
		keys[k] = true
	}
	sorted := make([]string, 0, len(keys))
	for k := range keys {
		sorted = append(sorted, k)
	}
	sort.Strings(sorted)
	var out []Difference
	for _, k := range sorted {
		lo, do := l[k], d[k]
		if lo != nil && do != nil && lo.Def == do.Def {
			continue
		}
		out = append(out, Difference{Live: lo, Desired: do})
	}
	return out
}
