// Package config holds the sources the operator's Helm chart
// (operator/chart) is made from: the generated CRDs and RBAC rules, and the
// admission policies that stamp approvers and result creators. Its tests
// install the chart into a real API server and provoke every rule they state.
package config
