package credential

import (
	"bytes"
	"encoding/hex"
	"fmt"
	"strings"

	"ptah.run/operator/recorder/terminal"
)

// Finding is what a scan found: which credential and in which form, never
// the value.
type Finding struct {
	Kind string
	Form string
}

func (f Finding) String() string {
	return f.Kind + " (" + f.Form + ")"
}

// Scanner looks for a set of credentials in text.
type Scanner struct {
	needles []needle
	// parts maps each folded partLength window of a token-like value, and
	// the hex of each, to what the value is: looked up at every offset of
	// the text rather than searched one by one.
	parts map[string]string
}

type needle struct {
	kind     string
	form     string
	data     []byte // folded when the form is
	stripped []byte // data without whitespace, for text wrapped over lines
	folded   bool
}

// NewScanner prepares every form of every credential; the shapes are
// always looked for.
func NewScanner(creds []Credential) *Scanner {
	s := &Scanner{parts: map[string]string{}}
	for _, c := range creds {
		for _, f := range forms(c.Value) {
			n := needle{kind: c.Kind, form: f.name, data: f.data, folded: f.folded}
			if f.folded {
				n.data = lower(f.data)
			}
			if st := stripSpace(n.data); len(st) >= MinLength {
				n.stripped = st
			}
			s.needles = append(s.needles, n)
		}
		for _, p := range parts(c.Value) {
			for _, w := range []string{string(lower(p)), hex.EncodeToString(p)} {
				if _, ok := s.parts[w]; !ok {
					s.parts[w] = c.Kind
				}
			}
		}
	}
	return s
}

// view is one way of reading the text: as written or as a terminal shows
// it (where), and through which decodings (chain, the last first).
type view struct {
	where, chain string
	data         []byte
	// the same with ASCII case folded, with whitespace removed, and both
	folded, stripped, foldedStripped []byte
	// rearranged views are read in another order and not decoded again.
	rearranged bool
}

// asShown names the view of text as a terminal shows it.
const asShown = "as a terminal shows it"

// form names a form as read in this view: "as written", "gzip inside
// base64 at offset 1", "JSON-escaped inside hex, as a terminal shows it".
func (v view) form(f string) string {
	name := f
	switch {
	case v.chain != "" && f == FormRaw:
		name = v.chain
	case v.chain != "":
		name = f + " inside " + v.chain
	}
	switch {
	case v.where == "":
		return name
	case name == FormRaw:
		return v.where
	}
	return name + ", " + v.where
}

func newView(where string, data []byte) view {
	st := stripSpace(data)
	return view{where: where, data: data, folded: lower(data), stripped: st, foldedStripped: lower(st)}
}

// child is data read through one more decoding, name, of v.
func (v view) child(name string, data []byte) view {
	c := newView(v.where, data)
	c.chain = name
	if v.chain != "" {
		c.chain = name + " inside " + v.chain
	}
	return c
}

// shown says whether a terminal would show data differently from its bytes.
func shown(data []byte) bool {
	for _, c := range data {
		if c == '\r' || c == '\b' || c == 0x1b || c >= 0x80 || (c < 0x20 && c != '\n' && c != '\t') || c == 0x7f {
			return true
		}
	}
	return false
}

// Scan returns the first credential found in data, or nil: in the bytes as
// written and as a terminal shows them, each also reversed and one
// character in two, then in everything they decode to, to maxDepth levels.
// What decodings may produce is bounded by the input's size, so hostile
// text cannot make a scan run away; beyond the bound nothing more is
// decoded.
func (s *Scanner) Scan(data []byte) *Finding {
	roots := []view{newView("", data)}
	if shown(data) {
		roots = append(roots, newView(asShown, []byte(terminal.Text(string(data)))))
	}
	return s.scan(roots, len(data))
}

// scan looks in roots and what they decode to; size bounds the decoding.
func (s *Scanner) scan(roots []view, size int) *Finding {
	level := roots
	for _, r := range roots {
		level = append(level, rearranged(r)...)
	}
	budget := 64*size + 1<<20
	var all []view
	for depth := 0; len(level) > 0; depth++ {
		var next []view
		for _, v := range level {
			if f := s.match(v); f != nil {
				return f
			}
			if depth < maxDepth && !v.rearranged && budget > 0 {
				for _, d := range decodings(v, &budget) {
					budget -= len(d.data)
					next = append(next, d)
				}
			}
		}
		// Parts are of dumps and cuts of the text or of one decoding of
		// it; deeper, a part would be a dump of a decoding of a decoding.
		if depth <= 1 {
			all = append(all, level...)
		}
		level = next
	}
	// A whole value found anywhere names it better than a part of one.
	for _, v := range all {
		if f := s.part(v); f != nil {
			return f
		}
	}
	return nil
}

// match looks for every needle and shape in one view.
func (s *Scanner) match(v view) *Finding {
	for _, n := range s.needles {
		in, inStripped := v.data, v.stripped
		if n.folded {
			in, inStripped = v.folded, v.foldedStripped
		}
		if bytes.Contains(in, n.data) || (n.stripped != nil && bytes.Contains(inStripped, n.stripped)) {
			return &Finding{Kind: n.kind, Form: v.form(n.form)}
		}
	}
	for _, sh := range Shapes {
		if !bytes.Contains(v.foldedStripped, stripSpace([]byte(sh.Hint))) {
			continue
		}
		if sh.Pattern.Match(v.data) || sh.Pattern.Match(v.stripped) {
			return &Finding{Kind: sh.Kind, Form: v.form(FormRaw)}
		}
	}
	return nil
}

// part looks up every window of the folded view, with and without
// whitespace, among the parts of token-like values.
func (s *Scanner) part(v view) *Finding {
	if len(s.parts) == 0 {
		return nil
	}
	for _, text := range [][]byte{v.folded, v.foldedStripped} {
		for _, n := range []int{partLength, 2 * partLength} {
			for i := 0; i+n <= len(text); i++ {
				if kind, ok := s.parts[string(text[i:i+n])]; ok {
					form := FormPart + FormRaw
					if n != partLength {
						form = FormPart + FormHex
					}
					return &Finding{Kind: kind, Form: v.form(form)}
				}
			}
		}
	}
	return nil
}

// ScanString is Scan on text.
func (s *Scanner) ScanString(text string) *Finding {
	return s.Scan([]byte(text))
}

// Redacted is the placeholder a credential's text is replaced with.
const Redacted = "[redacted]"

// Redact returns text with every credential taken out, and how many lines
// were changed: a value in any form is replaced where it stands, and a line
// still holding one (as a terminal shows it, or by shape) is withheld whole.
func (s *Scanner) Redact(text string) (string, int) {
	lines := strings.Split(text, "\n")
	changed := 0
	for i, l := range lines {
		if s.ScanString(l) == nil {
			continue
		}
		changed++
		for _, n := range s.needles {
			if n.folded {
				l = replaceFold(l, string(n.data), Redacted)
			} else {
				l = strings.ReplaceAll(l, string(n.data), Redacted)
			}
		}
		l = s.redactEncoded(l)
		if f := s.ScanString(l); f != nil {
			l = "[line withheld: it holds " + f.String() + "]"
		}
		lines[i] = l
	}
	return strings.Join(lines, "\n"), changed
}

// redactEncoded replaces each run of base64 characters (which hex and
// base32 are too) that holds a credential once decoded.
func (s *Scanner) redactEncoded(l string) string {
	var b strings.Builder
	for i := 0; i < len(l); {
		j := i
		for j < len(l) && base64Alphabet[l[j]] {
			j++
		}
		for j < len(l) && l[j] == '=' {
			j++
		}
		switch {
		case j == i:
			b.WriteByte(l[i])
			i++
			continue
		case j-i >= minRun && s.ScanString(l[i:j]) != nil:
			b.WriteString(Redacted)
		default:
			b.WriteString(l[i:j])
		}
		i = j
	}
	return b.String()
}

// replaceFold replaces every ASCII-case-insensitive occurrence of the
// folded old in s.
func replaceFold(s, old, with string) string {
	if old == "" {
		return s
	}
	folded := string(lower([]byte(s)))
	var b strings.Builder
	for {
		i := strings.Index(folded, old)
		if i < 0 {
			b.WriteString(s)
			return b.String()
		}
		b.WriteString(s[:i])
		b.WriteString(with)
		s, folded = s[i+len(old):], folded[i+len(old):]
	}
}

// Refusal is a refusal to publish: where the credential was found and what
// it is, never the value.
type Refusal struct {
	Where string
	Found Finding
}

func (e *Refusal) Error() string {
	return fmt.Sprintf("refused: %s holds %s; nothing was written (change the step so it does not print it)", e.Where, e.Found)
}

// Refuse returns a *Refusal naming where when data holds a credential.
func (s *Scanner) Refuse(where string, data []byte) error {
	if f := s.Scan(data); f != nil {
		return &Refusal{Where: where, Found: *f}
	}
	return nil
}
