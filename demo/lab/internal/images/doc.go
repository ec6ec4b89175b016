// Package images provides the lab's container images: the kind node image and
// the registry, PostgreSQL and psql images. Each is used when present, pulled
// when a registry answers, and otherwise built offline from Debian packages and
// Go modules, cached by content.
package images
