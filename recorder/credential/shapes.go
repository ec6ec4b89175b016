package credential

import "regexp"

// Shape is a credential recognised by how it looks, for the ones no one
// listed: a key the cluster generated, a token issued during a step.
type Shape struct {
	Kind    string
	Pattern *regexp.Regexp
	// Hint is folded text every match holds, looked for first: most
	// views hold none of it and skip the pattern.
	Hint string
}

// Shapes is the table of credentials found by shape; each has a test.
var Shapes = []Shape{
	{
		Kind:    "a PEM private key (found by its shape)",
		Pattern: regexp.MustCompile(`(?i)-----BEGIN ([A-Z0-9]+ )*PRIVATE KEY-----`),
		Hint:    "private key-----",
	},
	{
		// Header and payload are base64url JSON objects, so both start
		// with eyJ ({"); ServiceAccount and OIDC tokens are signed.
		Kind:    "a JWT, such as a ServiceAccount or OIDC token (found by its shape)",
		Pattern: regexp.MustCompile(`eyJ[A-Za-z0-9_-]{8,}\.eyJ[A-Za-z0-9_-]{8,}\.[A-Za-z0-9_-]{16,}`),
		Hint:    "eyj",
	},
	{
		// kubectl -v=8 prints "Authorization: Bearer <masked>", which
		// holds no token and is not matched.
		Kind:    "a token in an HTTP Authorization header (found by its shape)",
		Pattern: regexp.MustCompile(`(?i)\b(proxy-)?authorization["']?\s*[:=]\s*["']?(bearer|basic|token)\s+[A-Za-z0-9._~+/-]{8,}`),
		Hint:    "authorization",
	},
	{
		Kind:    "a bearer token (found by its shape)",
		Pattern: regexp.MustCompile(`(?i)\bbearer\s+[A-Za-z0-9._~+/-]{20,}`),
		Hint:    "bearer",
	},
}
