package credential

import (
	"encoding/base64"
	"encoding/hex"
	"encoding/json"
	"fmt"
	"net/url"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

const password = "Hunter2-lab-Pa55"

// encodings are the forms a command can print a value in, each applied to
// the text around the value as a real command would.
var encodings = map[string]func(string) string{
	"raw":                     func(s string) string { return s },
	"base64":                  func(s string) string { return base64.StdEncoding.EncodeToString([]byte(s)) },
	"base64 unpadded":         func(s string) string { return base64.RawStdEncoding.EncodeToString([]byte(s)) },
	"base64url":               func(s string) string { return base64.URLEncoding.EncodeToString([]byte(s)) },
	"base64 after 1 byte":     func(s string) string { return base64.StdEncoding.EncodeToString([]byte("x" + s)) },
	"base64 after 2 bytes":    func(s string) string { return base64.StdEncoding.EncodeToString([]byte("xy" + s + "z")) },
	"base64url after 2 bytes": func(s string) string { return base64.RawURLEncoding.EncodeToString([]byte("ab" + s)) },
	"base64 wrapped at 76": func(s string) string {
		return wrap(base64.StdEncoding.EncodeToString([]byte(strings.Repeat("p", 70)+s)), 76)
	},
	"hex":     func(s string) string { return hex.EncodeToString([]byte(s)) },
	"HEX":     func(s string) string { return strings.ToUpper(hex.EncodeToString([]byte(s))) },
	"percent": url.QueryEscape,
	"percent every byte": func(s string) string {
		var b strings.Builder
		for _, c := range []byte(s) {
			b.WriteString("%" + strings.ToLower(hex.EncodeToString([]byte{c})))
		}
		return b.String()
	},
	"JSON string":              func(s string) string { b, _ := json.Marshal(map[string]string{"k": s}); return string(b) },
	"upper case":               strings.ToUpper,
	"lower case":               strings.ToLower,
	"colour inside":            func(s string) string { return s[:5] + "\x1b[31m" + s[5:] + "\x1b[0m" },
	"overwritten by CR":        func(s string) string { return strings.Repeat("*", len(s)) + "\r" + s },
	"backspaced":               func(s string) string { return s[:4] + "X\b" + s[4:] },
	"inside invalid UTF-8":     func(s string) string { return "\xff\xfe" + s + "\xc3" },
	"base64 of a colour split": func(s string) string { return base64.StdEncoding.EncodeToString([]byte("u:" + s)) },
	// Dumps that print 16 bytes a line after an offset, as xxd does.
	"xxd": func(s string) string {
		var b strings.Builder
		for i := 0; i < len(s); i += 16 {
			line := s[i:min(i+16, len(s))]
			b.WriteString(fmt.Sprintf("%08x: %s  %s\n", i, hex.EncodeToString([]byte(line)), line))
		}
		return b.String()
	},
	"od with offsets": func(s string) string {
		var b strings.Builder
		for i := 0; i < len(s); i += 16 {
			b.WriteString(fmt.Sprintf("%07o", i))
			for _, c := range []byte(s[i:min(i+16, len(s))]) {
				b.WriteString(fmt.Sprintf(" %02x", c))
			}
			b.WriteString("\n")
		}
		return b.String()
	},
	"cut short": func(s string) string { return s[:14] },
}

func wrap(s string, n int) string {
	var b strings.Builder
	for len(s) > n {
		b.WriteString(s[:n] + "\n")
		s = s[n:]
	}
	return b.String() + s
}

func TestEveryFormOfAKnownValueIsFound(t *testing.T) {
	sc := NewScanner([]Credential{{Value: []byte(password), Kind: "the planted password"}})
	for name, enc := range encodings {
		t.Run(name, func(t *testing.T) {
			text := "before " + enc(password) + " after\n"
			f := sc.ScanString(text)
			if f == nil {
				t.Fatalf("not found in %q", text)
			}
			if f.Kind != "the planted password" || strings.Contains(f.String(), password) {
				t.Errorf("finding %q", f)
			}
		})
	}
}

func TestPartsOfAValue(t *testing.T) {
	dockerConfig, _ := json.Marshal(map[string]any{"auths": map[string]any{"registry.local:5000": map[string]string{
		"username": "ptah", "password": "regPa55word-x", "auth": base64.StdEncoding.EncodeToString([]byte("ptah:regPa55word-x")),
	}}})
	set := NewSet("ptah", "registry.local:5000")
	set.AddValue([]byte("postgres://app:dbPa55word-y@db.svc:5432/app?sslmode=disable"), "Secret ns/db key url")
	set.AddValue(dockerConfig, "Secret ns/reg key .dockerconfigjson")
	set.AddValue([]byte("ptah"), "Secret ns/reg key username")
	sc := NewScanner(set.Credentials())
	for _, c := range []struct{ name, text, kind string }{
		{"a URL's password alone", "password is dbPa55word-y", "the password in the URL of Secret ns/db key url"},
		{"a URL's password, base64 at an offset", base64.StdEncoding.EncodeToString([]byte("postgres://app:dbPa55word-y@other")), "the password in the URL"},
		{"the registry password from the docker config", "regPa55word-x", "Secret ns/reg key .dockerconfigjson"},
		{"the decoded user:password pair of an auth", "ptah:regPa55word-x", ""},
		{"an auth as written", base64.StdEncoding.EncodeToString([]byte("ptah:regPa55word-x")), ""},
	} {
		t.Run(c.name, func(t *testing.T) {
			f := sc.ScanString(c.text)
			if f == nil || !strings.Contains(f.Kind, c.kind) {
				t.Errorf("finding = %v, want one naming %q", f, c.kind)
			}
		})
	}
	t.Run("a published value is not a credential", func(t *testing.T) {
		if f := sc.ScanString("user ptah pushed to registry.local:5000"); f != nil {
			t.Errorf("published values refused: %v", f)
		}
	})
}

// TestShapes is the table of credentials found by shape: each is found as
// written, and the keys and tokens also in base64.
func TestShapes(t *testing.T) {
	jwt := "eyJhbGciOiJSUzI1NiIsImtpZCI6IjEyMyJ9.eyJpc3MiOiJodHRwczovL2t1YmVybmV0ZXMuZGVmYXVsdCJ9.c2lnbmF0dXJlLW9mLXRoZS10b2tlbi1ieS10aGUtYXBpc2VydmVy"
	pem := "-----BEGIN RSA PRIVATE KEY-----\nMIIEpAIBAAKCAQEA7\n-----END RSA PRIVATE KEY-----\n"
	sc := NewScanner(nil)
	for _, c := range []struct{ name, text, kind string }{
		{"PEM private key", pem, "PEM private key"},
		{"PKCS#8 private key", "-----BEGIN PRIVATE KEY-----", "PEM private key"},
		{"OpenSSH private key", "-----BEGIN OPENSSH PRIVATE KEY-----", "PEM private key"},
		{"PEM private key in base64 (client-key-data)", "client-key-data: " + base64.StdEncoding.EncodeToString([]byte(pem)), "PEM private key"},
		{"ServiceAccount token", "token: " + jwt, "JWT"},
		{"token in base64 (a Secret's data)", "token: " + base64.StdEncoding.EncodeToString([]byte(jwt)), "JWT"},
		{"bearer header", "> Authorization: Bearer abcdefghijklmnop0123456789", "HTTP Authorization header"},
		{"basic header", `-H "authorization: Basic dXNlcjpwYXNzd29yZA=="`, "HTTP Authorization header"},
		{"bearer alone", "Bearer 0123456789abcdefghijABCDEFGHIJ", "bearer token"},
	} {
		t.Run(c.name, func(t *testing.T) {
			if f := sc.ScanString(c.text); f == nil || !strings.Contains(f.Kind, c.kind) {
				t.Errorf("finding = %v, want %s", f, c.kind)
			}
		})
	}
	for _, clean := range []string{
		"I1201 10:00:00 round_trippers.go:473] Authorization: Bearer <masked>",
		"-----BEGIN CERTIFICATE-----",
		"sha256:0123456789abcdef0123456789abcdef0123456789abcdef0123456789abcdef",
		`curl -H "Authorization: Bearer $TOKEN" https://api`,
		"NAME                 TYPE     DATA   AGE\ndemo-database        Opaque   2      5m",
	} {
		if f := sc.ScanString(clean); f != nil {
			t.Errorf("%q refused as %v", clean, f)
		}
	}
}

func TestKubeconfig(t *testing.T) {
	dir := t.TempDir()
	key := "-----BEGIN EC PRIVATE KEY-----\nMHcCAQEEIKey\n-----END EC PRIVATE KEY-----\n"
	if err := os.WriteFile(filepath.Join(dir, "token"), []byte("file-token-0123456789\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	kc := `apiVersion: v1
kind: Config
users:
- name: admin
  user:
    client-key-data: ` + base64.StdEncoding.EncodeToString([]byte(key)) + `
    client-certificate-data: ` + base64.StdEncoding.EncodeToString([]byte("-----BEGIN CERTIFICATE-----\nMIIBcert\n-----END CERTIFICATE-----\n")) + `
- name: robot
  user:
    token: inline-token-0123456789
    tokenFile: token
- name: human
  user:
    username: me
    password: kube-Pa55word
`
	file := filepath.Join(dir, "kubeconfig")
	if err := os.WriteFile(file, []byte(kc), 0o600); err != nil {
		t.Fatal(err)
	}
	set := NewSet()
	if err := set.AddKubeconfig(file); err != nil {
		t.Fatal(err)
	}
	sc := NewScanner(set.Credentials())
	for _, c := range []struct{ text, kind string }{
		{"client-key-data: " + base64.StdEncoding.EncodeToString([]byte(key)), "client key"},
		{"-----BEGIN CERTIFICATE-----\r\nMIIBcert\r\n-----END CERTIFICATE-----\r\n", "client certificate"},
		{"inline-token-0123456789", "token"},
		{"file-token-0123456789", "token"},
		{"kube-Pa55word", "password"},
	} {
		if f := sc.ScanString(c.text); f == nil || !strings.Contains(f.Kind, c.kind) {
			t.Errorf("%.40q: finding = %v, want the %s", c.text, f, c.kind)
		}
	}
	if err := NewSet().AddKubeconfig(filepath.Join(dir, "absent")); err == nil {
		t.Error("a kubeconfig that cannot be read was accepted")
	}
}

func TestRedact(t *testing.T) {
	sc := NewScanner([]Credential{{Value: []byte(password), Kind: "the planted password"}})
	text := "line one\nurl postgres://u:" + password + "@db\nbase64 " + base64.StdEncoding.EncodeToString([]byte("x"+password)) + "\nUPPER " + strings.ToUpper(password) + "\n"
	got, n := sc.Redact(text)
	if n != 3 {
		t.Errorf("redacted %d lines, want 3:\n%s", n, got)
	}
	if sc.ScanString(got) != nil || strings.Contains(strings.ToLower(got), strings.ToLower(password)) {
		t.Errorf("redacted text still holds the credential:\n%s", got)
	}
	if !strings.Contains(got, "line one") || !strings.Contains(got, "url postgres://u:"+Redacted+"@db") || !strings.Contains(got, "base64 "+Redacted+"\n") {
		t.Errorf("redaction took out more than the credential:\n%s", got)
	}
}

// TestPartsOnlyOfTokens: most of a password published is refused, but the
// parts of a URL or a document (ordinary words) are not credentials.
func TestPartsOnlyOfTokens(t *testing.T) {
	set := NewSet()
	set.AddValue([]byte("postgres://app:"+password+"@demo-postgres.ptah-demo.svc:5432/storefront?sslmode=disable"), "Secret url")
	sc := NewScanner(set.Credentials())
	if f := sc.ScanString("dial tcp: lookup demo-postgres.ptah-demo.svc:5432/storefront?sslmode=disable: no such host"); f != nil {
		t.Errorf("a part of a URL that is not its password was refused: %v", f)
	}
	if f := sc.ScanString("the password starts " + password[:13]); f == nil || !strings.Contains(f.Form, FormPart) {
		t.Errorf("most of the password: finding = %v, want one in part", f)
	}
}
