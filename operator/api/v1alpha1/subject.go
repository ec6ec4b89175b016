package v1alpha1

import metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

// The operator runs Jobs for two kinds, PtahSchema and PtahMigration, with
// one machinery: claims, Jobs, credentials, result records, the database
// lease. These accessors are what it reads of either kind.

// SubjectKind is the kind a result record names.
func (s *PtahSchema) SubjectKind() string { return KindPtahSchema }

// SubjectKind is the kind a result record names.
func (s *PtahMigration) SubjectKind() string { return KindPtahMigration }

// SubjectTarget is the database the resource keeps.
func (s *PtahSchema) SubjectTarget() Target { return s.Spec.Target }

// SubjectTarget is the database the resource keeps.
func (s *PtahMigration) SubjectTarget() Target { return s.Spec.Target }

// SubjectExecution shapes the resource's Jobs.
func (s *PtahSchema) SubjectExecution() *Execution { return &s.Spec.Execution }

// SubjectExecution shapes the resource's Jobs.
func (s *PtahMigration) SubjectExecution() *Execution { return &s.Spec.Execution }

// SubjectRegistryAuth is the Secret the artifact is pulled with, if any.
func (s *PtahSchema) SubjectRegistryAuth() *LocalRef { return s.Spec.Desired.RegistryAuthFrom }

// SubjectRegistryAuth is the Secret the artifact is pulled with, if any.
func (s *PtahMigration) SubjectRegistryAuth() *LocalRef { return s.Spec.Migrations.RegistryAuthFrom }

// SubjectConditions are the status conditions.
func (s *PtahSchema) SubjectConditions() *[]metav1.Condition { return &s.Status.Conditions }

// SubjectConditions are the status conditions.
func (s *PtahMigration) SubjectConditions() *[]metav1.Condition { return &s.Status.Conditions }

// Operation is the status both kinds keep of their operations.
func (s *PtahSchema) Operation() *OperationStatus { return &s.Status.OperationStatus }

// Operation is the status both kinds keep of their operations.
func (s *PtahMigration) Operation() *OperationStatus { return &s.Status.OperationStatus }

// SubjectSuspended says whether spec.suspend holds new operations.
func (s *PtahSchema) SubjectSuspended() bool { return s.Spec.Suspend }

// SubjectSuspended says whether spec.suspend holds new operations.
func (s *PtahMigration) SubjectSuspended() bool { return s.Spec.Suspend }

// SubjectSpec is the spec, as a claim's inputs digest it.
func (s *PtahSchema) SubjectSpec() any { return s.Spec }

// SubjectSpec is the spec, as a claim's inputs digest it.
func (s *PtahMigration) SubjectSpec() any { return s.Spec }

// SubjectPlanFingerprint is the fingerprint of the plan an Apply runs, if any.
func (s *PtahSchema) SubjectPlanFingerprint() string {
	if s.Status.Plan == nil {
		return ""
	}
	return s.Status.Plan.Fingerprint
}

// SubjectPlanFingerprint is the fingerprint of the plan an Apply runs, if any.
func (s *PtahMigration) SubjectPlanFingerprint() string {
	if s.Status.Plan == nil {
		return ""
	}
	return s.Status.Plan.Fingerprint
}
