package credential

import (
	"encoding/base64"
	"regexp"
)

// Shape is a credential recognised by how it looks, for the ones no one
// listed: a key the cluster generated, a token issued during a step.
type Shape struct {
	Kind    string
	Pattern *regexp.Regexp
	// InBase64 says the shape is also looked for inside base64 text
	// (a Secret's data, a kubeconfig's *-data fields).
	InBase64 bool
}

// Shapes is the table of credentials found by shape; each has a test.
var Shapes = []Shape{
	{
		Kind:     "a PEM private key (found by its shape)",
		Pattern:  regexp.MustCompile(`(?i)-----BEGIN ([A-Z0-9]+ )*PRIVATE KEY-----`),
		InBase64: true,
	},
	{
		// Header and payload are base64url JSON objects, so both start
		// with eyJ ({"); ServiceAccount and OIDC tokens are signed.
		Kind:     "a JWT, such as a ServiceAccount or OIDC token (found by its shape)",
		Pattern:  regexp.MustCompile(`eyJ[A-Za-z0-9_-]{8,}\.eyJ[A-Za-z0-9_-]{8,}\.[A-Za-z0-9_-]{16,}`),
		InBase64: true,
	},
	{
		// kubectl -v=8 prints "Authorization: Bearer <masked>", which
		// holds no token and is not matched.
		Kind:    "a token in an HTTP Authorization header (found by its shape)",
		Pattern: regexp.MustCompile(`(?i)\b(proxy-)?authorization["']?\s*[:=]\s*["']?(bearer|basic|token)\s+[A-Za-z0-9._~+/-]{8,}`),
	},
	{
		Kind:    "a bearer token (found by its shape)",
		Pattern: regexp.MustCompile(`(?i)\bbearer\s+[A-Za-z0-9._~+/-]{20,}`),
	},
}

// base64Run is text long enough to hide a key or a token when decoded.
var base64Run = regexp.MustCompile(`[A-Za-z0-9+/_-]{40,}`)

// decodedRuns decodes every long base64 run in b at each of its four
// character phases, in both alphabets, for the shapes to be looked for in.
func decodedRuns(b []byte) [][]byte {
	var out [][]byte
	for _, run := range base64Run.FindAll(b, -1) {
		for phase := range 4 {
			r := run[phase:]
			r = r[:len(r)-len(r)%4]
			for _, enc := range []*base64.Encoding{base64.RawStdEncoding, base64.RawURLEncoding} {
				if d, err := enc.DecodeString(string(r)); err == nil {
					out = append(out, d)
				}
			}
		}
	}
	return out
}
