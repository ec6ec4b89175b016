package credential

import (
	"bytes"
	"compress/gzip"
	"compress/zlib"
	"encoding/base32"
	"encoding/base64"
	"encoding/hex"
	"fmt"
	"os"
	"os/exec"
	"runtime"
	"strings"
	"testing"
	"time"
)

func gzipped(s string) []byte {
	var b bytes.Buffer
	w := gzip.NewWriter(&b)
	_, _ = w.Write([]byte(s))
	_ = w.Close()
	return b.Bytes()
}

func zlibbed(s string) []byte {
	var b bytes.Buffer
	w := zlib.NewWriter(&b)
	_, _ = w.Write([]byte(s))
	_ = w.Close()
	return b.Bytes()
}

func octal(s string) string {
	var b strings.Builder
	for _, c := range []byte(s) {
		fmt.Fprintf(&b, "\\%03o", c)
	}
	return b.String()
}

func reverse(s string) string {
	r := []rune(s)
	for i, j := 0, len(r)-1; i < j; i, j = i+1, j-1 {
		r[i], r[j] = r[j], r[i]
	}
	return string(r)
}

// TestDecodedFormsAreNamed: each way of printing the value is decoded (not
// looked up among precomputed encodings) and the finding names how, never
// the value.
func TestDecodedFormsAreNamed(t *testing.T) {
	sc := NewScanner([]Credential{{Value: []byte(password), Kind: "the planted password"}})
	b64 := base64.StdEncoding.EncodeToString
	for _, c := range []struct{ name, text, form string }{
		{"base64", b64([]byte(password)), "base64"},
		{"base64 at offset 1", "a" + b64([]byte(password)), "base64 at offset 1"},
		{"base64 at offset 2", "ab" + b64([]byte(password)), "base64 at offset 2"},
		{"base64 at offset 3", "abc" + b64([]byte(password)), "base64 at offset 3"},
		{"base64url unpadded, inside a longer value", base64.RawURLEncoding.EncodeToString([]byte("u:" + password + "?x")), "base64"},
		{"base64 wrapped and indented", "data:\n  " + strings.ReplaceAll(wrap(b64([]byte(strings.Repeat("p", 70)+password)), 60), "\n", "\n  "), "base64"},
		{"gzip inside base64", b64(gzipped("log line\npassword=" + password + "\n")), "gzip inside base64"},
		{"gzip inside base64 at offset 1", "x" + b64(gzipped(password)), "gzip inside base64 at offset 1"},
		{"zlib inside hex", hex.EncodeToString(zlibbed(password)), "zlib inside hex"},
		{"base64 inside base64 (a Secret's data of a base64 value)", b64([]byte(b64([]byte("k=" + password)))), "base64 inside base64"},
		{"gzip inside base64 inside base64 (a Helm release)", b64([]byte(b64(gzipped(`{"values":{"password":"` + password + `"}}`)))), "gzip inside base64 inside base64"},
		{"base32", base32.StdEncoding.EncodeToString([]byte(password)), "base32"},
		{"hex", "0x" + hex.EncodeToString([]byte(password)), "hex"},
		{"hex at offset 1", "f" + hex.EncodeToString([]byte(password)), "hex at offset 1"},
		{"upper-case hex", strings.ToUpper(hex.EncodeToString([]byte(password))), "hex"},
		{"octal escapes", "printf '" + octal(password) + "'", "octal escapes"},
		{"backslash escapes", `"\x48\u0075nter2-lab-Pa55"`, "backslash escapes"},
		{"percent-encoding of every byte", "%48%75%6e%74%65%72%32%2d%6c%61%62%2d%50%61%35%35", "percent-encoding"},
		{"reversed", "rev says " + reverse(password), "reversed"},
		{"a dash between each character", strings.Join(strings.Split(password, ""), "-"), "every other character from the second"},
		{"a character per line", "\n" + strings.Join(strings.Split(password, ""), "\n"), "as written"},
		{"spaced out", strings.Join(strings.Split(password, ""), " "), "as written"},
	} {
		t.Run(c.name, func(t *testing.T) {
			f := sc.ScanString("before " + c.text + " after\n")
			if f == nil {
				t.Fatalf("not found in %q", c.text)
			}
			if f.Form != c.form || f.Kind != "the planted password" {
				t.Errorf("finding %q, want the planted password (%s)", f, c.form)
			}
			if strings.Contains(f.String(), password) {
				t.Errorf("the finding shows the value: %q", f)
			}
		})
	}
}

// TestBzip2IsDecoded runs the system's bzip2, which Go can read but not
// write.
func TestBzip2IsDecoded(t *testing.T) {
	if _, err := exec.LookPath("bzip2"); err != nil {
		t.Skip("bzip2 is not installed")
	}
	cmd := exec.Command("bzip2", "-c")
	cmd.Stdin = strings.NewReader(password)
	out, err := cmd.Output()
	if err != nil {
		t.Fatal(err)
	}
	sc := NewScanner([]Credential{{Value: []byte(password), Kind: "the planted password"}})
	if f := sc.ScanString(base64.StdEncoding.EncodeToString(out)); f == nil || f.Form != "bzip2 inside base64" {
		t.Errorf("finding %v, want bzip2 inside base64", f)
	}
}

// TestDecodingIsBounded: three levels are decoded, not four, and hostile
// input of nested encodings ends.
func TestDecodingIsBounded(t *testing.T) {
	sc := NewScanner([]Credential{{Value: []byte(password), Kind: "the planted password"}})
	v := password
	for range 3 {
		v = base64.StdEncoding.EncodeToString([]byte(v))
	}
	if f := sc.ScanString(v); f == nil || f.Form != "base64 inside base64 inside base64" {
		t.Errorf("three levels: finding %v", f)
	}
	if f := sc.ScanString(base64.StdEncoding.EncodeToString([]byte(v))); f != nil {
		t.Errorf("four levels decoded: %v", f)
	}
	// Compression bombs, each a MiB of zeros in a kilobyte of base64.
	bomb := base64.StdEncoding.EncodeToString(gzipped(strings.Repeat("\x00", 1<<20)))
	text := strings.Repeat(bomb+"\n", 60) + base64.StdEncoding.EncodeToString([]byte(password))
	var before, after runtime.MemStats
	runtime.ReadMemStats(&before)
	start := time.Now()
	if f := sc.ScanString(text); f == nil || f.Form != "base64" {
		t.Errorf("after the bombs: finding %v, want the value in base64", f)
	}
	runtime.ReadMemStats(&after)
	if d, mb := time.Since(start), (after.TotalAlloc-before.TotalAlloc)>>20; d > 10*time.Second || mb > 128 {
		t.Errorf("60 compression bombs took %s and %d MiB", d, mb)
	}
	big := bytes.Repeat([]byte(base64.StdEncoding.EncodeToString([]byte(strings.Repeat("QUJD", 3000)))+"\n"), 8)
	if f := sc.Scan(big); f != nil {
		t.Errorf("nested base64 without the value refused: %v", f)
	}
}

// TestCommittedRecordingsAreNotRefused: the published casts and runs.json
// hold no credential of a lab's shapes and no base64 decoding of ordinary
// output looks like one.
func TestCommittedRecordingsAreNotRefused(t *testing.T) {
	files, err := os.ReadDir("../../demo/recordings")
	if err != nil {
		t.Fatal(err)
	}
	sc := NewScanner([]Credential{{Value: []byte(password), Kind: "the planted password"}})
	n := 0
	for _, e := range files {
		data, err := os.ReadFile("../../demo/recordings/" + e.Name())
		if err != nil {
			t.Fatal(err)
		}
		n++
		if f := sc.Scan(data); f != nil {
			t.Errorf("%s refused: %v", e.Name(), f)
		}
	}
	if n < 10 {
		t.Fatalf("only %d committed recordings", n)
	}
}
