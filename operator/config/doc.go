// Package config holds what installs the operator: generated CRDs and RBAC,
// the admission policies that stamp approvals, and the kustomize base in
// default/. Its tests install them into a real API server and provoke every
// rule they state.
package config
