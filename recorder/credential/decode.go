package credential

import (
	"bytes"
	"compress/bzip2"
	"compress/gzip"
	"compress/zlib"
	"encoding/base32"
	"encoding/base64"
	"encoding/hex"
	"fmt"
	"io"
	"regexp"
	"strconv"
	"unicode/utf8"
)

// A scan decodes rather than enumerates: every run of text that decodes
// (base64 in either alphabet at each of its four alignments, base32, hex,
// backslash and octal escapes, percent-encoding, and gzip, zlib or bzip2
// inside any of those) is decoded and scanned again, to maxDepth levels, so
// a value is found however a command chose to print it.
const (
	maxDepth = 3
	// maxInflated bounds what one compressed stream may expand to.
	maxInflated = 1 << 20
	// minRun is the shortest encoded run decoded: the base64 of MinLength
	// bytes.
	minRun = 8
)

var (
	base64Alphabet = class("ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789+/_-")
	base32Alphabet = class("ABCDEFGHIJKLMNOPQRSTUVWXYZ234567")
	hexAlphabet    = class("0123456789ABCDEFabcdef")
	escape         = regexp.MustCompile(`\\([0-7]{1,3}|x[0-9A-Fa-f]{2}|u[0-9A-Fa-f]{4}|U[0-9A-Fa-f]{8}|[abfnrtv\\'"])`)
	percent        = regexp.MustCompile(`%[0-9A-Fa-f]{2}`)
)

// decodings returns every decoding of v, one view per decoding and
// alignment, each run decoded separately and the results joined by a NUL
// (which no needle holds), and what is compressed inside them.
// What is decompressed is taken from budget, and nothing is once it is
// spent, so a run of compression bombs costs what the budget allows.
func decodings(v view, budget *int) []view {
	var out []view
	add := func(name string, segs [][]byte) {
		if len(segs) == 0 {
			return
		}
		out = append(out, v.child(name, bytes.Join(segs, []byte{0})))
		for _, c := range compressions {
			var inflated [][]byte
			for _, s := range segs {
				if d := c.inflate(s, budget); len(d) > 0 {
					inflated = append(inflated, d)
				}
			}
			if len(inflated) > 0 {
				out = append(out, v.child(c.name+" inside "+name, bytes.Join(inflated, []byte{0})))
			}
		}
	}
	b64 := runs(base64Alphabet, v.data, minRun)
	for k := range 4 {
		var segs [][]byte
		for _, run := range b64 {
			if d := decodeBase64(run, k); len(d) >= MinLength {
				segs = append(segs, d)
			}
		}
		add(at("base64", k), segs)
	}
	b32 := runs(base32Alphabet, v.data, minRun)
	for k := range 8 {
		var segs [][]byte
		for _, run := range b32 {
			if d := decodeBase32(run, k); len(d) >= MinLength {
				segs = append(segs, d)
			}
		}
		add(at("base32", k), segs)
	}
	hx := runs(hexAlphabet, v.data, 2*MinLength)
	for k := range 2 {
		var segs [][]byte
		for _, run := range hx {
			r := run[k:]
			if d, err := hex.DecodeString(string(r[:len(r)&^1])); err == nil && len(d) >= MinLength {
				segs = append(segs, d)
			}
		}
		add(at("hex", k), segs)
	}
	if d, name := unescape(v.data); d != nil {
		add(name, [][]byte{d})
	}
	if percent.Match(v.data) {
		add("percent-encoding", [][]byte{percent.ReplaceAllFunc(v.data, func(m []byte) []byte {
			b, _ := hex.DecodeString(string(m[1:]))
			return b
		})})
	}
	return out
}

func class(chars string) *[256]bool {
	var c [256]bool
	for i := range len(chars) {
		c[chars[i]] = true
	}
	return &c
}

// runs are the runs of the alphabet's characters in b, at least n long. A
// run goes on over a line break and the indentation after it, as base64
// wrapped at 76 columns does; the break is left out.
func runs(alphabet *[256]bool, b []byte, n int) [][]byte {
	var out [][]byte
	var run []byte
	for i := 0; i < len(b); {
		if alphabet[b[i]] {
			j := i
			for j < len(b) && alphabet[b[j]] {
				j++
			}
			run = append(run, b[i:j]...)
			i = j
			// A line break and indentation, then more of the alphabet.
			k := i
			if k < len(b) && b[k] == '\r' {
				k++
			}
			if k < len(b) && b[k] == '\n' && len(run) >= 4 {
				k++
				for k < len(b) && (b[k] == ' ' || b[k] == '\t') {
					k++
				}
				if k < len(b) && alphabet[b[k]] {
					i = k
					continue
				}
			}
			if len(run) >= n {
				out = append(out, run)
			}
			run = nil
			continue
		}
		i++
	}
	return out
}

// at names a decoding started k characters into its run.
func at(name string, k int) string {
	if k == 0 {
		return name
	}
	return fmt.Sprintf("%s at offset %d", name, k)
}

// decodeBase64 decodes run from its k-th character in either alphabet,
// dropping a last character that completes no byte.
func decodeBase64(run []byte, k int) []byte {
	r := []byte(string(run[k:]))
	for i, c := range r {
		switch c {
		case '-':
			r[i] = '+'
		case '_':
			r[i] = '/'
		}
	}
	if len(r)%4 == 1 {
		r = r[:len(r)-1]
	}
	d, err := base64.RawStdEncoding.DecodeString(string(r))
	if err != nil {
		return nil
	}
	return d
}

// decodeBase32 decodes run from its k-th character, dropping a last
// character that completes no byte.
func decodeBase32(run []byte, k int) []byte {
	r := run[k:]
	switch len(r) % 8 {
	case 1, 3, 6:
		r = r[:len(r)-1]
	}
	d, err := base32.StdEncoding.WithPadding(base32.NoPadding).DecodeString(string(r))
	if err != nil {
		return nil
	}
	return d
}

// unescape decodes the backslash escapes in b (as printf %b, echo -e, a
// JSON or Go string print them), or returns nil when there are none; the
// name says octal when octal escapes were among them.
func unescape(b []byte) ([]byte, string) {
	if bytes.IndexByte(b, '\\') < 0 || !escape.Match(b) {
		return nil, ""
	}
	octal := false
	d := escape.ReplaceAllFunc(b, func(m []byte) []byte {
		e := string(m[1:])
		switch e[0] {
		case 'x':
			n, _ := strconv.ParseUint(e[1:], 16, 8)
			return []byte{byte(n)}
		case 'u', 'U':
			n, _ := strconv.ParseUint(e[1:], 16, 32)
			return utf8.AppendRune(nil, rune(n))
		}
		if e[0] >= '0' && e[0] <= '7' {
			n, _ := strconv.ParseUint(e, 8, 16)
			octal = true
			return []byte{byte(n)}
		}
		s, err := strconv.Unquote(`"\` + e + `"`)
		if err != nil {
			return []byte(e)
		}
		return []byte(s)
	})
	if octal {
		return d, "octal escapes"
	}
	return d, "backslash escapes"
}

type compression struct {
	name string
	// magic starts a stream; valid says whether a stream can start at i.
	magic []byte
	valid func(b []byte) bool
	open  func(io.Reader) (io.Reader, error)
}

var compressions = []compression{
	{"gzip", []byte{0x1f, 0x8b, 0x08}, nil, func(r io.Reader) (io.Reader, error) { return gzip.NewReader(r) }},
	{"zlib", []byte{0x78}, func(b []byte) bool {
		return len(b) > 1 && (uint16(b[0])<<8|uint16(b[1]))%31 == 0 && b[1]&0x20 == 0
	}, func(r io.Reader) (io.Reader, error) { return zlib.NewReader(r) }},
	{"bzip2", []byte("BZh"), func(b []byte) bool {
		return len(b) > 9 && b[3] >= '1' && b[3] <= '9' && string(b[4:10]) == "1AY&SY"
	}, func(r io.Reader) (io.Reader, error) { return bzip2.NewReader(r), nil }},
}

// inflate decompresses the first streams found in b, keeping what a
// truncated stream gives before it ends.
func (c compression) inflate(b []byte, budget *int) []byte {
	var out []byte
	for tries, off := 0, 0; tries < 4 && *budget > 0; tries++ {
		i := bytes.Index(b[off:], c.magic)
		if i < 0 {
			break
		}
		s := b[off+i:]
		off += i + 1
		if c.valid != nil && !c.valid(s) {
			continue
		}
		r, err := c.open(bytes.NewReader(s))
		if err != nil {
			continue
		}
		d, _ := io.ReadAll(io.LimitReader(r, int64(min(maxInflated, *budget))))
		*budget -= len(d)
		out = append(out, d...)
	}
	return out
}

// rearranged are the ways of reading v's characters in another order:
// reversed, and every other character (one separator between each of a
// value's characters) from the first and from the second.
func rearranged(v view) []view {
	rs := []rune(string(v.data))
	rev := make([]rune, len(rs))
	for i, r := range rs {
		rev[len(rs)-1-i] = r
	}
	out := []view{v.child("reversed", []byte(string(rev)))}
	for k := range 2 {
		var b []rune
		for i := k; i < len(rs); i += 2 {
			b = append(b, rs[i])
		}
		out = append(out, v.child(fmt.Sprintf("every other character from the %s", [2]string{"first", "second"}[k]), []byte(string(b))))
	}
	for i := range out {
		out[i].rearranged = true
	}
	return out
}
