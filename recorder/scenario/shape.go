package scenario

import (
	"encoding/json"
	"fmt"
	"reflect"
	"sort"
	"strconv"
	"strings"
)

// pathElem is one step into the decoded YAML: a key, or a list index.
type pathElem struct {
	key   string
	index int
}

type keyPath []pathElem

func (p keyPath) key(k string) keyPath {
	return append(append(keyPath(nil), p...), pathElem{key: k, index: -1})
}

func (p keyPath) index(i int) keyPath {
	return append(append(keyPath(nil), p...), pathElem{index: i})
}

// locate turns a path into the step a reader counts (1-based, 0 for the
// file) and the key within it, with list items counted from 1.
func (p keyPath) locate() (int, string) {
	step := 0
	if len(p) >= 2 && p[0].key == "steps" && p[1].index >= 0 {
		step = p[1].index + 1
		p = p[2:]
	}
	var b strings.Builder
	for _, e := range p {
		if e.index >= 0 {
			fmt.Fprintf(&b, "[%d]", e.index+1)
			continue
		}
		if b.Len() > 0 {
			b.WriteByte('.')
		}
		b.WriteString(e.key)
	}
	return step, b.String()
}

func (p keyPath) last() string {
	for i := len(p) - 1; i >= 0; i-- {
		if p[i].index < 0 {
			return p[i].key
		}
	}
	return ""
}

// shape checks the decoded YAML against the Go types, key by key, so that
// every unknown key and every value of the wrong type is refused at once
// rather than the first one only. It drops what it refuses, so that the
// rules that follow see only values of the right type.
type shape struct {
	rs *refusals
}

func (c shape) refuse(p keyPath, problem, fix string) {
	step, key := p.locate()
	c.rs.add(step, key, problem, fix)
}

// check returns the value, possibly converted, and false when it was
// refused and must be dropped.
func (c shape) check(v any, t reflect.Type, p keyPath) (any, bool) {
	if t.Kind() == reflect.Pointer {
		t = t.Elem()
	}
	k := p.last()
	switch t.Kind() {
	case reflect.Struct:
		return c.mapping(v, t, p)
	case reflect.Slice:
		return c.list(v, t, p)
	case reflect.String:
		return c.text(v, p)
	case reflect.Int:
		n, ok := v.(json.Number)
		if !ok {
			c.refuse(p, "is "+describe(v)+", not a whole number", fmt.Sprintf("write %s: 0 without quotes", k))
			return nil, false
		}
		i, err := strconv.ParseInt(n.String(), 10, 64)
		if err != nil || i < 0 || i > 255 {
			c.refuse(p, fmt.Sprintf("is %s, not an exit code from 0 to 255", n), fmt.Sprintf("write %s: 0 (or the code the command must return)", k))
			return nil, false
		}
		return v, true
	case reflect.Bool:
		if _, ok := v.(bool); !ok {
			c.refuse(p, "is "+describe(v)+", not true or false", fmt.Sprintf("write %s: true", k))
			return nil, false
		}
		return v, true
	}
	return v, true
}

func (c shape) mapping(v any, t reflect.Type, p keyPath) (any, bool) {
	fields := jsonFields(t)
	m, ok := v.(map[string]any)
	if !ok {
		if len(p) == 0 {
			c.refuse(p, "is "+describe(v)+", not a scenario", "write a mapping with the keys "+strings.Join(fieldNames(t), ", "))
		} else {
			c.refuse(p, "is "+describe(v)+", not a mapping", "write the keys "+strings.Join(fieldNames(t), ", ")+" under it")
		}
		return nil, false
	}
	keys := make([]string, 0, len(m))
	for k := range m {
		keys = append(keys, k)
	}
	sort.Strings(keys)
	for _, k := range keys {
		f, known := fields[k]
		kp := p.key(k)
		if !known {
			if s := suggest(k, fieldNames(t)); s != "" {
				c.refuse(kp, "is not a known key", "write "+s+" instead")
			} else {
				c.refuse(kp, "is not a known key", "remove it; the keys here are "+strings.Join(fieldNames(t), ", "))
			}
			delete(m, k)
			continue
		}
		if m[k] == nil {
			c.refuse(kp, "has no value", "write a value after "+k+": or remove the key")
			delete(m, k)
			continue
		}
		nv, ok := c.check(m[k], f, kp)
		if !ok {
			delete(m, k)
			continue
		}
		m[k] = nv
	}
	return m, true
}

func (c shape) list(v any, t reflect.Type, p keyPath) (any, bool) {
	k := p.last()
	items, ok := v.([]any)
	if !ok {
		if s, isText := v.(string); isText && t.Elem().Kind() == reflect.String {
			c.refuse(p, "is text, not a list", fmt.Sprintf("write %s: [%s]", k, s))
		} else {
			c.refuse(p, "is "+describe(v)+", not a list", fmt.Sprintf("write %s as a list, one item per line starting with \"- \"", k))
		}
		return nil, false
	}
	kept := make([]any, 0, len(items))
	for i, item := range items {
		ip := p.index(i)
		if item == nil {
			c.refuse(ip, "is empty", "write a value after the \"- \" or remove the line")
			kept = append(kept, emptyOf(t.Elem()))
			continue
		}
		nv, ok := c.check(item, t.Elem(), ip)
		if !ok {
			// Keep the position so that later steps keep their numbers.
			kept = append(kept, emptyOf(t.Elem()))
			continue
		}
		kept = append(kept, nv)
	}
	return kept, true
}

// emptyOf stands in for a refused list item.
func emptyOf(t reflect.Type) any {
	if t.Kind() == reflect.Struct || (t.Kind() == reflect.Pointer && t.Elem().Kind() == reflect.Struct) {
		return map[string]any{}
	}
	return ""
}

// durationKeys hold durations such as 30s or 6m.
var durationKeys = map[string]bool{"retry": true, "timeout": true}

func (c shape) text(v any, p keyPath) (any, bool) {
	k := p.last()
	switch x := v.(type) {
	case string:
		return x, true
	case json.Number:
		switch {
		case k == "equals":
			// A field's value is compared as text: 3 means "3".
			return x.String(), true
		case durationKeys[k]:
			c.refuse(p, "is the number "+x.String()+", not a duration", fmt.Sprintf("write %s: %ss (or 6m, 1h)", k, x))
			return nil, false
		}
	case bool:
		switch k {
		case "equals":
			return strconv.FormatBool(x), true
		case "status":
			// YAML reads an unquoted True as a boolean.
			if x {
				return "True", true
			}
			return "False", true
		}
	}
	if b, ok := v.(bool); ok {
		c.refuse(p, fmt.Sprintf("is read as the boolean %t, not text (YAML reads unquoted y, yes, on, n, no, off as booleans)", b),
			fmt.Sprintf("write %s: \"...\" with the text in quotes", k))
		return nil, false
	}
	c.refuse(p, "is "+describe(v)+", not text", fmt.Sprintf("write %s: \"...\" with the text in quotes", k))
	return nil, false
}

func describe(v any) string {
	switch x := v.(type) {
	case nil:
		return "empty"
	case string:
		return "text"
	case json.Number:
		return "the number " + x.String()
	case bool:
		return "the boolean " + strconv.FormatBool(x)
	case []any:
		return "a list"
	case map[string]any:
		return "a mapping"
	}
	return fmt.Sprintf("%T", v)
}

// jsonFields maps each key a struct accepts to the field's type.
func jsonFields(t reflect.Type) map[string]reflect.Type {
	out := map[string]reflect.Type{}
	for i := 0; i < t.NumField(); i++ {
		if name := jsonName(t.Field(i)); name != "" {
			out[name] = t.Field(i).Type
		}
	}
	return out
}

func fieldNames(t reflect.Type) []string {
	var out []string
	for i := 0; i < t.NumField(); i++ {
		if name := jsonName(t.Field(i)); name != "" {
			out = append(out, name)
		}
	}
	return out
}

func jsonName(f reflect.StructField) string {
	tag := f.Tag.Get("json")
	name, _, _ := strings.Cut(tag, ",")
	if name == "-" || !f.IsExported() {
		return ""
	}
	if name == "" {
		return f.Name
	}
	return name
}

// suggest finds the key a misspelt one most likely meant: the same letters
// in another case or with other separators, or at most two edits away.
func suggest(k string, known []string) string {
	norm := func(s string) string {
		return strings.NewReplacer("_", "", "-", "", " ", "").Replace(strings.ToLower(s))
	}
	for _, c := range known {
		if norm(c) == norm(k) {
			return c
		}
	}
	best, bestD := "", 3
	for _, c := range known {
		if d := distance(strings.ToLower(k), strings.ToLower(c)); d < bestD {
			best, bestD = c, d
		}
	}
	return best
}

// distance is the Levenshtein distance, bounded for long keys.
func distance(a, b string) int {
	if len(a) > 64 || len(b) > 64 {
		return 99
	}
	prev := make([]int, len(b)+1)
	cur := make([]int, len(b)+1)
	for j := range prev {
		prev[j] = j
	}
	for i := 1; i <= len(a); i++ {
		cur[0] = i
		for j := 1; j <= len(b); j++ {
			cost := 1
			if a[i-1] == b[j-1] {
				cost = 0
			}
			cur[j] = min(prev[j]+1, cur[j-1]+1, prev[j-1]+cost)
		}
		prev, cur = cur, prev
	}
	return prev[len(b)]
}
