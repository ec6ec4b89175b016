// Package testenv starts the real components the tests run against: a
// kube-apiserver with etcd, a PostgreSQL server and an OCI registry. Each is
// started by the test that needs it and removed when that test ends, pass or
// fail; nothing here is a mock.
package testenv
