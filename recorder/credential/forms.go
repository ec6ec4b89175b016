package credential

import (
	"bytes"
	"encoding/json"
	"strings"
)

// Forms a known value is looked for in, besides what the scan decodes
// (decode.go): escapings that are not a decoding. A value is also looked
// for with whitespace removed from both the value and the text (text
// wrapped over lines), and with ASCII case folded (an upper-cased password).
const (
	FormRaw  = "as written"
	FormHex  = "hex-encoded"
	FormJSON = "JSON-escaped"
	FormYAML = "YAML-escaped"
	// FormPart prefixes a form in which most of a value was found.
	FormPart = "in part, "
)

// form is one encoding of a value; folded forms are compared with ASCII
// case folded.
type form struct {
	name   string
	data   []byte
	folded bool
}

// forms returns every form of v a scan looks for.
func forms(v []byte) []form {
	out := []form{{FormRaw, v, true}}
	for _, html := range []bool{true, false} {
		var b bytes.Buffer
		enc := json.NewEncoder(&b)
		enc.SetEscapeHTML(html)
		_ = enc.Encode(string(v))
		js := bytes.TrimSpace(b.Bytes())
		out = append(out, form{FormJSON, js[1 : len(js)-1], true})
	}
	out = append(out, form{FormYAML, []byte(strings.ReplaceAll(string(v), "'", "''")), true})

	// Keep each distinct form once, and only forms long enough to mean
	// something.
	var keep []form
	seen := map[string]bool{}
	for _, f := range out {
		key := "fold:" + string(lower(f.data))
		if len(f.data) < MinLength || seen[key] {
			continue
		}
		seen[key] = true
		keep = append(keep, f)
	}
	return keep
}

// lower folds ASCII letters, byte for byte, so offsets stay put.
func lower(b []byte) []byte {
	out := make([]byte, len(b))
	for i, c := range b {
		if 'A' <= c && c <= 'Z' {
			c += 'a' - 'A'
		}
		out[i] = c
	}
	return out
}

// stripSpace removes ASCII whitespace, so text wrapped over lines reads
// as one string.
func stripSpace(b []byte) []byte {
	out := make([]byte, 0, len(b))
	for _, c := range b {
		switch c {
		case ' ', '\t', '\n', '\r', '\v', '\f':
		default:
			out = append(out, c)
		}
	}
	return out
}

// Parts of a token-like value are looked for too: a dump that breaks the
// value over lines (xxd, od, hexdump print 16 bytes a line, each after an
// offset) or a command that cuts it (cut -c1-16) still publishes most of
// it. Only values of the token alphabet are cut, so a URL or a JSON
// document, whose parts are ordinary text, is not.
const (
	partLength = 12
	partMin    = 16  // values shorter than this are looked for whole only
	partMax    = 128 // longer ones are keys and documents, not tokens
)

// parts returns every partLength window of a token-like v, or nothing.
func parts(v []byte) [][]byte {
	if len(v) < partMin || len(v) > partMax {
		return nil
	}
	for _, c := range v {
		if !('a' <= c && c <= 'z' || 'A' <= c && c <= 'Z' || '0' <= c && c <= '9' || c == '+' || c == '/' || c == '=' || c == '_' || c == '-') {
			return nil
		}
	}
	out := make([][]byte, 0, len(v)-partLength+1)
	for i := 0; i+partLength <= len(v); i++ {
		out = append(out, v[i:i+partLength])
	}
	return out
}
