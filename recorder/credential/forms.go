package credential

import (
	"bytes"
	"encoding/base64"
	"encoding/hex"
	"encoding/json"
	"net/url"
	"strings"
)

// Forms a known value is looked for in. A value is also looked for in each
// form with whitespace removed from both the value and the text (base64 or
// hex wrapped over lines), and, where the form keeps letters as letters,
// with ASCII case folded (an upper-cased password, upper-case hex).
const (
	FormRaw     = "as written"
	FormBase64  = "base64-encoded"
	FormHex     = "hex-encoded"
	FormPercent = "percent-encoded"
	FormJSON    = "JSON-escaped"
	FormYAML    = "YAML-escaped"
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
	out := []form{{FormRaw, v, true}, {FormHex, []byte(hex.EncodeToString(v)), true}}
	// base64 of a value inside a longer string depends on the value's offset
	// modulo 3: each alignment gives the characters that encode only the
	// value's bytes, so `kubectl get secret -o jsonpath='{.data.url}'` shows
	// the password of the URL it encodes.
	for _, enc := range []*base64.Encoding{base64.RawStdEncoding, base64.RawURLEncoding} {
		for k := range 3 {
			out = append(out, form{FormBase64, aligned(enc, v, k), false})
		}
	}
	pct := make([]byte, 0, 3*len(v))
	for _, c := range v {
		pct = append(pct, '%', "0123456789ABCDEF"[c>>4], "0123456789ABCDEF"[c&15])
	}
	out = append(out,
		form{FormPercent, []byte(url.QueryEscape(string(v))), true},
		form{FormPercent, []byte(url.PathEscape(string(v))), true},
		form{FormPercent, pct, true},
	)
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
	// something (an alignment of a short value keeps few characters).
	var keep []form
	seen := map[string]bool{}
	for _, f := range out {
		key := string(f.data)
		if f.folded {
			key = "fold:" + string(lower(f.data))
		}
		if len(f.data) < MinLength || seen[key] || (f.name != FormRaw && bytes.Equal(f.data, v)) {
			continue
		}
		seen[key] = true
		keep = append(keep, f)
	}
	return keep
}

// aligned is the base64 of v as it reads when v starts k bytes into a
// longer string, without the characters its neighbours also change.
func aligned(enc *base64.Encoding, v []byte, k int) []byte {
	buf := make([]byte, k+len(v))
	copy(buf[k:], v)
	s := enc.EncodeToString(buf)
	// Character i carries bits [6i, 6i+6) of buf; keep those inside v.
	first := (8*k + 5) / 6
	last := 8 * (k + len(v)) / 6 // exclusive
	if last <= first || last > len(s) {
		return nil
	}
	return []byte(s[first:last])
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
